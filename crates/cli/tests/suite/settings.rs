//! Modes and config options: ceilings, refusals that change nothing, and the updates clients
//! rely on.

use std::time::Duration;

use ferrite_test_support::{AcpClient, updates};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;

async fn mode_update(c: &mut AcpClient) -> String {
    let m = c
        .wait_for(Duration::from_secs(5), |m| {
            m["params"]["update"]["sessionUpdate"] == "current_mode_update"
        })
        .await
        .expect("current_mode_update");
    m["params"]["update"]["currentModeId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `session/set_config_option` of `id` to `value` in session `s`.
async fn set_option(
    c: &mut AcpClient,
    s: &str,
    id: &str,
    value: &str,
) -> ferrite_test_support::Answer {
    let params = json!({"sessionId": s, "configId": id, "value": value});
    c.request("session/set_config_option", params).await
}

#[tokio::test]
async fn set_mode_within_the_ceiling_sends_updates() {
    let w = World::new();
    let mut c = w.client().await;
    let s = sid(&c.new_session(&w.ws()).await);
    assert_eq!(
        c.request(
            "session/set_mode",
            json!({"sessionId": s, "modeId": "plan"})
        )
        .await
        .ok(),
        json!({})
    );
    assert_eq!(mode_update(&mut c).await, "plan");
    let cfg = c
        .wait_for(Duration::from_secs(5), |m| {
            m["params"]["update"]["sessionUpdate"] == "config_option_update"
        })
        .await
        .expect("config_option_update");
    assert_eq!(
        option_value(&cfg["params"]["update"]["configOptions"], "mode"),
        "plan"
    );
    assert_eq!(
        c.request(
            "session/set_mode",
            json!({"sessionId": s, "modeId": "warp"})
        )
        .await
        .code(),
        -32602
    );
}

#[tokio::test]
async fn modes_above_a_ceiling_are_refused_and_nothing_changes() {
    let w = World::new();
    w.write_config("max_mode = \"auto\"\n");
    let mut c = w.client().await;
    let r = c.new_session(&w.ws()).await;
    let s = sid(&r);
    let modes: Vec<&str> = r["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["plan", "ask", "auto"]);
    let a = c
        .request(
            "session/set_mode",
            json!({"sessionId": s, "modeId": "full"}),
        )
        .await;
    assert_eq!(a.code(), -32602);
    let a = c
        .request(
            "session/set_config_option",
            json!({"sessionId": s, "configId": "mode", "value": "full"}),
        )
        .await;
    assert_eq!(a.code(), -32602);
    let stray = c.drain(QUIET).await;
    assert!(
        updates(&stray)
            .iter()
            .all(|(k, _)| k != "current_mode_update"),
        "{stray:?}"
    );
    // The planner harness caps at plan whatever the config says.
    let p = c
        .request(
            "session/new",
            json!({"cwd": w.ws(), "mcpServers": [], "_meta": {"harness": "planner"}}),
        )
        .await
        .ok();
    let a = c
        .request(
            "session/set_mode",
            json!({"sessionId": sid(&p), "modeId": "ask"}),
        )
        .await;
    assert_eq!(a.code(), -32602);
    // Still `ask` after the refusals, as a reload shows.
    c.request("session/close", json!({"sessionId": s}))
        .await
        .ok();
    let r = c
        .request("session/resume", json!({"sessionId": s, "cwd": w.ws()}))
        .await
        .ok();
    assert_eq!(r["modes"]["currentModeId"], "ask");
}

#[tokio::test]
async fn set_config_option_answers_the_full_list() {
    let w = World::new();
    let mut c = w.client().await;
    let s = sid(&c.new_session(&w.ws()).await);
    let r = set_option(&mut c, &s, "mode", "auto").await.ok();
    let ids: Vec<&str> = r["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mode", "model", "reasoning_effort", "web_search"]);
    assert_eq!(option_value(&r["configOptions"], "mode"), "auto");
    assert_eq!(mode_update(&mut c).await, "auto");

    let r = set_option(&mut c, &s, "model", "openai/gpt-5").await.ok();
    assert_eq!(option_value(&r["configOptions"], "model"), "openai/gpt-5");
    let r = set_option(&mut c, &s, "reasoning_effort", "high")
        .await
        .ok();
    assert_eq!(
        option_value(&r["configOptions"], "reasoning_effort"),
        "high"
    );
    let r = set_option(&mut c, &s, "web_search", "on").await.ok();
    assert_eq!(option_value(&r["configOptions"], "web_search"), "on");

    // A model without reasoning or web search: switching to it drops those choices...
    let r = set_option(&mut c, &s, "model", "openai-chat/gpt-4o")
        .await
        .ok();
    assert_eq!(
        option_value(&r["configOptions"], "reasoning_effort"),
        "default"
    );
    assert_eq!(option_value(&r["configOptions"], "web_search"), "off");
    // ...and asking for them again is refused with nothing changed.
    let a = set_option(&mut c, &s, "reasoning_effort", "low").await;
    assert_eq!(a.code(), -32602);
    let a = set_option(&mut c, &s, "web_search", "on").await;
    assert_eq!(a.code(), -32602);
    let a = set_option(&mut c, &s, "model", "nope/none").await;
    assert_eq!(a.code(), -32602);
    let a = set_option(&mut c, &s, "colour", "red").await;
    assert_eq!(a.code(), -32602);

    // The legacy set_model still works.
    let r = c
        .request(
            "session/set_model",
            json!({"sessionId": s, "modelId": "anthropic/claude-opus-4-1"}),
        )
        .await
        .ok();
    assert_eq!(
        option_value(&r["configOptions"], "model"),
        "anthropic/claude-opus-4-1"
    );
}

#[tokio::test]
async fn a_model_added_to_config_appears_in_new_sessions_without_restart() {
    let w = World::new();
    let mut c = w.client().await;
    let r = c.new_session(&w.ws()).await;
    assert!(
        !r["configOptions"][1]["options"]
            .to_string()
            .contains("local/qwen")
    );
    w.write_config("[providers.local]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodels = [{ id = \"qwen\", context_window = 1000 }]\n");
    let r = c.new_session(&w.ws()).await;
    assert!(
        r["configOptions"][1]["options"]
            .to_string()
            .contains("local/qwen")
    );
}

#[tokio::test]
async fn a_broken_config_is_reported_not_half_used() {
    let w = World::new();
    w.write_config("max_mode = \"ultra\"\n");
    let mut c = w.spawn();
    let a = c
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let msg = a.message();
    assert!(msg.contains("max_mode") || msg.contains("ultra"), "{msg}");
    assert!(msg.contains("config.toml"), "{msg}");
}
