//! Prompts and resources of real servers, over both transports: listed once the server is up,
//! run and read through it, and a server's failure given back as words for the user.

use ferrite_core::mcp::{McpContent, McpResourcePart, McpRole, ToolProvider};
use ferrite_test_support::mcp_server::catalog::GREETING;
use ferrite_test_support::mcp_server::start_http;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;

fn args(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[tokio::test]
async fn prompts_and_resources_work_over_http_and_stdio() {
    let (url, _server) = start_http().await;
    let (servers, notices) = start(
        launcher(),
        vec![http("web", &url, &[]), stdio("local", &[])],
    )
    .await;
    servers.started().await;
    let commands: Vec<String> = servers.prompts().into_iter().map(|p| p.command).collect();
    for server in ["web", "local"] {
        assert!(
            commands.contains(&format!("mcp__{server}__greet")),
            "{commands:?}"
        );
    }
    let messages = servers
        .get_prompt("mcp__web__greet", args(&[("name", "Ada")]))
        .await
        .unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].role, McpRole::User);
    assert_eq!(
        messages[0].content,
        McpContent::Text("Please greet Ada.".into())
    );
    // The server's own refusal is given back, with the server's name.
    let refused = servers
        .get_prompt("mcp__local__greet", vec![])
        .await
        .unwrap_err();
    assert!(
        refused.contains("`local`") && refused.contains("argument `name` is required"),
        "{refused}"
    );
    assert_eq!(
        servers.read_resource("test://greeting").await,
        Some(Ok(vec![McpResourcePart::Text {
            uri: "test://greeting".into(),
            text: GREETING.into(),
        }]))
    );
    let missing = servers.read_resource("test://nothing-here").await.unwrap();
    assert!(missing.unwrap_err().contains("no resource"));
    assert_eq!(servers.read_resource("other://x").await, None);
    assert_eq!(servers.read_resource("https://example.com/").await, None);
    assert_eq!(notices.all(), Vec::<String>::new());
    servers.shutdown().await;
}

#[tokio::test]
async fn a_dead_servers_prompts_are_withdrawn() {
    let (servers, _notices) = start(launcher(), vec![stdio("flaky", &[])]).await;
    let crash = tool(&servers, "mcp__flaky__crash").await;
    assert!(!servers.prompts().is_empty());
    let _ = call(&crash, json!({})).await;
    assert_eq!(servers.prompts(), vec![]);
    let gone = servers
        .get_prompt("mcp__flaky__greet", args(&[("name", "x")]))
        .await
        .unwrap_err();
    assert!(gone.contains("no running MCP server"), "{gone}");
    servers.shutdown().await;
}
