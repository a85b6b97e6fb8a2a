//! Tools of a stdio server: names, schemas, calls, results.

use std::time::{Duration, Instant};

use ferrite_core::mcp::ToolProvider;
use ferrite_core::model::ToolSpec;
use ferrite_core::tools::{Access, OutputLimits, Tool, ToolError};
use ferrite_mcp::Launcher;
use ferrite_mcp::names::MAX_TOOL_NAME_LEN;
use ferrite_store::content::ToolKind;
use ferrite_test_support::mcp_server::LONG_TOOL_NAME;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::common::*;

#[tokio::test]
async fn tools_are_listed_with_mcp_names_and_schemas() {
    let (servers, notices) = start(launcher(), vec![stdio("fake", &[])]).await;
    let tools = servers.tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    let long = names.last().unwrap().to_string();
    assert_eq!(
        names,
        [
            "mcp__fake__echo",
            "mcp__fake__add",
            "mcp__fake__fail",
            "mcp__fake__crash",
            "mcp__fake__slow",
            "mcp__fake__stats",
            "mcp__fake__env",
            "mcp__fake__pid",
            "mcp__fake__image",
            "mcp__fake__resource",
            "mcp__fake__dotted_name",
            long.as_str(),
        ]
    );
    assert_eq!(long.len(), MAX_TOOL_NAME_LEN);
    assert!(
        long.starts_with("mcp__fake__a_tool_with_a_name_so_long"),
        "{long}"
    );

    let echo = &tools[0];
    assert_eq!(
        echo.spec(),
        ToolSpec {
            name: "mcp__fake__echo".into(),
            description: "Returns its text.".into(),
            input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}},
                "required": ["text"]})
            .into(),
        }
    );
    // A server's schema without `type`/`properties` is made an object schema.
    assert_eq!(
        *tools[10].spec().input_schema,
        json!({"type": "object", "properties": {}})
    );

    let cwd = std::path::Path::new("/");
    assert_eq!(echo.kind(), ToolKind::Other);
    assert_eq!(echo.access(&json!({}), cwd), Access::Mcp);
    assert_eq!(echo.describe(&json!({}), cwd).title, "fake: echo");
    // The tool's own title, where it has one.
    assert_eq!(
        tools[1].describe(&json!({}), cwd).title,
        "fake: Add numbers"
    );
    assert_eq!(notices.all(), Vec::<String>::new());
    servers.shutdown().await;
}

#[tokio::test]
async fn calls_round_trip() {
    let (servers, _) = start(launcher(), vec![stdio("fake", &[])]).await;
    let echo = tool(&servers, "mcp__fake__echo").await;
    assert_eq!(
        call(&echo, json!({"text": "hello"})).await,
        Ok(text_output("hello"))
    );
    let add = tool(&servers, "mcp__fake__add").await;
    assert_eq!(
        call(&add, json!({"a": 2, "b": 3.5})).await,
        Ok(text_output("5.5"))
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn an_error_result_goes_back_to_the_model() {
    let (servers, _) = start(launcher(), vec![stdio("fake", &[])]).await;
    let fail = tool(&servers, "mcp__fake__fail").await;
    assert_eq!(
        call(&fail, json!({})).await,
        Err(ToolError::RespondToModel("this tool always fails".into()))
    );
    // Arguments that are not an object never reach the server.
    assert!(matches!(
        call(&fail, json!([1])).await,
        Err(ToolError::RespondToModel(_))
    ));
    servers.shutdown().await;
}

#[tokio::test]
async fn images_and_resources_are_described_in_text() {
    let (servers, _) = start(launcher(), vec![stdio("fake", &[])]).await;
    let image = tool(&servers, "mcp__fake__image").await;
    let out = call(&image, json!({})).await.unwrap();
    assert_eq!(
        out.text, "a picture:\n[image: image/png, 11 bytes]",
        "the model reads a description"
    );
    match &out.content[..] {
        [
            ferrite_store::content::ToolContent::Text { .. },
            ferrite_store::content::ToolContent::Image { mime_type, data },
        ] => {
            assert_eq!(
                (mime_type.as_str(), data.is_empty()),
                ("image/png", false),
                "the editor gets the image"
            );
        }
        other => panic!("{other:?}"),
    }
    let resource = tool(&servers, "mcp__fake__resource").await;
    assert_eq!(
        call(&resource, json!({})).await,
        Ok(text_output(
            "[resource: file:///notes.txt]\nthe resource's text"
        ))
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn sanitized_and_shortened_names_call_the_real_tool() {
    let (servers, _) = start(launcher(), vec![stdio("fake", &[])]).await;
    let dotted = tool(&servers, "mcp__fake__dotted_name").await;
    assert_eq!(dotted.mcp_name(), "dotted.name");
    assert_eq!(call(&dotted, json!({})).await, Ok(text_output("dotted")));

    let tools = servers.mcp_tools().await;
    let long = tools
        .iter()
        .find(|t| t.mcp_name() == LONG_TOOL_NAME)
        .unwrap();
    assert_eq!(long.name().len(), MAX_TOOL_NAME_LEN);
    assert_eq!(call(long, json!({})).await, Ok(text_output("long")));
    servers.shutdown().await;
}

#[tokio::test]
async fn long_output_is_cut_to_the_limits() {
    let (servers, _) = start(launcher(), vec![stdio("fake", &[])]).await;
    let echo = tool(&servers, "mcp__fake__echo").await;
    let limits = OutputLimits {
        max_bytes: 1_000,
        max_lines: 3,
    };
    let out = echo
        .invoke(
            json!({"text": "1\n2\n3\n4\n5"}),
            &CancellationToken::new(),
            limits,
        )
        .await
        .unwrap();
    assert_eq!(
        out.text,
        "1\n2\n3\n[output truncated: showing 6 of 9 bytes, 5 lines in all]"
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_call_cancels_the_request_on_the_server() {
    let (servers, _) = start(launcher(), vec![stdio("fake", &[])]).await;
    let slow = tool(&servers, "mcp__fake__slow").await;
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let (result, ()) = tokio::join!(
        slow.invoke(json!({"ms": 600_000}), &cancel, LIMITS),
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        }
    );
    assert!(started.elapsed() < HANG_GUARD);
    assert_eq!(
        result,
        Err(ToolError::RespondToModel(
            "the call to `slow` on MCP server `fake` was cancelled".into()
        ))
    );
    // The server was told (`notifications/cancelled`) and stopped working on it.
    let stats = tool(&servers, "mcp__fake__stats").await;
    for _ in 0..50 {
        if call(&stats, json!({})).await == Ok(text_output(r#"{"cancelled":1}"#)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        call(&stats, json!({})).await,
        Ok(text_output(r#"{"cancelled":1}"#))
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn a_call_past_its_timeout_is_cancelled() {
    let launcher = Launcher::new(Duration::from_secs(20), Duration::from_millis(300));
    let (servers, notices) = start(launcher, vec![stdio("fake", &[])]).await;
    let slow = tool(&servers, "mcp__fake__slow").await;
    assert_eq!(
        call(&slow, json!({"ms": 30_000})).await,
        Err(ToolError::RespondToModel(
            "MCP server `fake` did not answer `slow` within 0.3 s; the call was cancelled".into()
        ))
    );
    // The server is still fine.
    let echo = tool(&servers, "mcp__fake__echo").await;
    assert_eq!(
        call(&echo, json!({"text": "still here"})).await,
        Ok(text_output("still here"))
    );
    assert_eq!(notices.all(), Vec::<String>::new());
    servers.shutdown().await;
}

#[tokio::test]
async fn the_server_gets_the_agents_environment_plus_its_own() {
    let mut spec = stdio("fake", &[]);
    if let ferrite_core::mcp::McpTransport::Stdio { env, .. } = &mut spec.transport {
        env.insert("FERRITE_MCP_TEST_GREETING".into(), "bonjour".into());
    }
    let (servers, _) = start(launcher(), vec![spec]).await;
    let env = tool(&servers, "mcp__fake__env").await;
    assert_eq!(
        call(&env, json!({"name": "FERRITE_MCP_TEST_GREETING"})).await,
        Ok(text_output("bonjour"))
    );
    // Inherited from the agent (cargo sets it for the test process).
    let path = std::env::var("PATH").unwrap();
    assert_eq!(
        call(&env, json!({"name": "PATH"})).await,
        Ok(text_output(&path))
    );
    servers.shutdown().await;
}
