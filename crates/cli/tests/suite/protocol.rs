//! The transport and the JSON-RPC surface: every kind of bad input gets its error, and the agent
//! keeps serving.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

#[tokio::test]
async fn initialize_advertises_the_contract() {
    let w = World::new();
    let mut c = w.spawn();
    let r = c.initialize().await;
    assert_eq!(r["protocolVersion"], 1);
    let caps = &r["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    for cap in ["list", "resume", "close", "delete", "additionalDirectories"] {
        assert_eq!(caps["sessionCapabilities"][cap], json!({}), "{cap}");
    }
    assert_eq!(caps["auth"]["logout"], json!({}));
    let methods: Vec<(&str, Option<&str>)> = r["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["type"].as_str()))
        .collect();
    // No terminal method: this client did not enable terminal auth (see first_run.rs).
    assert_eq!(methods, vec![("api-key", None)]);
    assert_eq!(r["agentInfo"]["name"], "ferrite");
    assert_eq!(r["agentInfo"]["title"], "Ferrite");
    let f = &r["_meta"]["ferrite"];
    let harnesses: Vec<&str> = f["harnesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(harnesses, ["code", "planner", "assistant", "unattended"]);
    assert_eq!(f["auth"], json!({"configured": false, "providers": []}));
    let models: Vec<&str> = f["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        models.contains(&"anthropic/claude-sonnet-4-5") && models.contains(&"openai/gpt-5"),
        "{models:?}"
    );
}

#[tokio::test]
async fn a_draft_protocol_version_is_answered_with_1() {
    let w = World::new();
    let mut c = w.spawn();
    let r = c
        .request(
            "initialize",
            json!({"protocolVersion": 2, "clientCapabilities": {}}),
        )
        .await
        .ok();
    assert_eq!(r["protocolVersion"], 1);
}

#[tokio::test]
async fn requests_before_initialize_are_refused() {
    let w = World::new();
    let mut c = w.spawn();
    let a = c.request("session/list", json!({})).await;
    assert_eq!(a.code(), -32600);
    c.initialize().await;
    assert!(c.request("session/list", json!({})).await.result.is_some());
}

async fn raw_error(c: &mut ferrite_test_support::AcpClient, line: &[u8]) -> Value {
    c.send_raw(line).await;
    c.wait_for(Duration::from_secs(10), |m| m.get("error").is_some())
        .await
        .expect("an error answer")
}

#[tokio::test]
async fn bad_input_gets_the_right_error_and_the_agent_keeps_serving() {
    let w = World::new();
    let mut c = w.client().await;

    let e = raw_error(&mut c, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\n").await;
    assert_eq!(
        (e["id"].clone(), e["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );

    for line in [
        &b"42\n"[..],
        b"\"hello\"\n",
        b"[]\n",
        b"[{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/list\"}]\n",
    ] {
        let e = raw_error(&mut c, line).await;
        assert_eq!(
            e["error"]["code"],
            -32600,
            "{}",
            String::from_utf8_lossy(line)
        );
        assert_eq!(e["id"], Value::Null);
    }
    let e = raw_error(&mut c, b"{\"jsonrpc\":\"2.0\",\"id\":77}\n").await;
    assert_eq!(
        (e["id"].clone(), e["error"]["code"].clone()),
        (json!(77), json!(-32600))
    );

    let e = raw_error(
        &mut c,
        b"{\"jsonrpc\":\"2.0\",\"id\":78,\"method\":\"session/frobnicate\",\"params\":{}}\n",
    )
    .await;
    assert_eq!(
        (e["id"].clone(), e["error"]["code"].clone()),
        (json!(78), json!(-32601))
    );
    let e = raw_error(
        &mut c,
        b"{\"jsonrpc\":\"2.0\",\"id\":79,\"method\":\"_vendor/thing\",\"params\":{}}\n",
    )
    .await;
    assert_eq!(e["error"]["code"], -32601);

    // Invalid UTF-8 is an error, not a crash.
    let e = raw_error(
        &mut c,
        b"{\"jsonrpc\":\"2.0\",\"id\":80,\"method\":\"x\xff\xfe\"}\n",
    )
    .await;
    assert_eq!(e["error"]["code"], -32700);

    // Unknown `_` notifications and unknown notifications are ignored: no answer at all.
    c.notify("_vendor/ping", json!({})).await;
    c.notify("session/unknown_thing", json!({})).await;
    c.notify("session/cancel", json!({"sessionId": "no-such-session"}))
        .await;
    let r = c.request("session/list", json!({})).await;
    assert!(r.result.is_some());
    let stray = c.drain(QUIET).await;
    assert!(
        stray.is_empty(),
        "notifications must not be answered: {stray:?}"
    );
}

#[tokio::test]
async fn params_of_the_wrong_shape_are_invalid_params() {
    let w = World::new();
    let mut c = w.client().await;
    let a = c.request("session/new", json!({"cwd": 5})).await;
    assert_eq!(a.code(), -32602);
    let a = c
        .request("session/prompt", json!({"sessionId": "abc"}))
        .await;
    assert_eq!(a.code(), -32602);
}

#[tokio::test]
async fn an_over_long_line_is_refused_without_killing_the_agent() {
    let w = World::new();
    let mut c = w.client().await;
    // 65 MiB (the cap is 64 MiB) in one line, addressed to request id 4242.
    let mut line =
        b"{\"jsonrpc\":\"2.0\",\"id\":4242,\"method\":\"session/prompt\",\"params\":{\"x\":\""
            .to_vec();
    line.resize(line.len() + 65 * 1024 * 1024, b'a');
    line.extend_from_slice(b"\"}}\n");
    c.send_raw(&line).await;
    drop(line);
    let e = c
        .wait_for(Duration::from_secs(30), |m| m.get("error").is_some())
        .await
        .expect("an answer");
    assert_eq!(e["id"], 4242);
    assert_eq!(e["error"]["code"], -32600);
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than")
    );
    assert!(
        c.request("session/list", json!({})).await.result.is_some(),
        "still serving"
    );
}

#[tokio::test]
async fn eof_exits_cleanly_and_quickly() {
    let w = World::new();
    let mut c = w.client().await;
    let s = c.new_session(&w.ws()).await;
    let id = sid(&s);
    c.close_stdin().await;
    let status = c.wait_exit(Duration::from_secs(5)).await.expect("exited");
    assert!(status.success(), "{status:?}");
    assert!(w.session_file(&id).exists());
}

#[tokio::test]
async fn nothing_but_json_rpc_reaches_stdout_even_with_debug_logs() {
    let w = World::new();
    let mut c = w.spawn_env(&[("FERRITE_LOG", "trace")]);
    c.initialize().await;
    let s = c.new_session(&w.ws()).await;
    let a = c
        .request("session/prompt", text_prompt(&sid(&s), "hi"))
        .await;
    assert!(a.result.is_some());
    c.close_stdin().await;
    c.wait_exit(Duration::from_secs(5)).await.expect("exited");
    // The client records any non-JSON line on stdout as a violation (checked on drop).
    assert!(c.violations().is_empty(), "{:?}", c.violations());
}

#[tokio::test]
async fn authenticate_stores_a_private_key_and_logout_removes_it() {
    let w = World::new();
    let mut c = w.client().await;
    let a = c.request("authenticate", json!({"methodId": "api-key", "_meta": {"provider": "anthropic", "token": "sk-test-123"}})).await;
    assert_eq!(a.ok(), json!({}));
    let path = w.home().join("credentials.json");
    let stored: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(stored["providers"]["anthropic"]["api_key"], "sk-test-123");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let init = c.initialize().await;
    assert_eq!(
        init["_meta"]["ferrite"]["auth"],
        json!({"configured": true, "providers": ["anthropic"]})
    );

    let a = c
        .request(
            "authenticate",
            json!({"methodId": "api-key", "_meta": {"provider": "nope", "token": "x"}}),
        )
        .await;
    assert_eq!(a.code(), -32602);
    // No token: a re-check, which succeeds (this agent's default model is keyless).
    let a = c
        .request(
            "authenticate",
            json!({"methodId": "api-key", "_meta": {"provider": "openai"}}),
        )
        .await;
    assert_eq!(a.ok(), json!({}));
    let a = c
        .request("authenticate", json!({"methodId": "other"}))
        .await;
    assert_eq!(a.code(), -32602);

    assert_eq!(c.request("logout", json!({})).await.ok(), json!({}));
    let stored: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(stored["providers"], json!({}));
}
