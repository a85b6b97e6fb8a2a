//! Streamable HTTP servers.

use ferrite_core::mcp::ToolProvider;
use ferrite_test_support::mcp_server::{start_http, start_http_with_auth};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;

#[tokio::test]
async fn an_http_server_gets_the_configured_headers() {
    let (url, _server) = start_http_with_auth(Some("Bearer s3cret")).await;
    let (servers, notices) = start(
        launcher(),
        vec![http("remote", &url, &[("Authorization", "Bearer s3cret")])],
    )
    .await;
    let echo = tool(&servers, "mcp__remote__echo").await;
    assert_eq!(
        call(&echo, json!({"text": "over http"})).await,
        Ok(text_output("over http"))
    );
    let fail = tool(&servers, "mcp__remote__fail").await;
    assert!(call(&fail, json!({})).await.is_err());
    assert_eq!(notices.all(), Vec::<String>::new());
    servers.shutdown().await;
}

#[tokio::test]
async fn wrong_credentials_are_noticed_and_other_servers_work() {
    let (url, _server) = start_http_with_auth(Some("Bearer s3cret")).await;
    let (open_url, _open) = start_http().await;
    let (servers, notices) = start(
        launcher(),
        vec![
            http("locked", &url, &[("Authorization", "Bearer wrong")]),
            http("open", &open_url, &[]),
        ],
    )
    .await;
    let names: Vec<String> = servers
        .tools()
        .await
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert!(
        names.iter().all(|n| n.starts_with("mcp__open__")),
        "{names:?}"
    );
    let notices = notices.all();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("MCP server `locked` failed to start: "),
        "{notices:?}"
    );
    servers.shutdown().await;
}
