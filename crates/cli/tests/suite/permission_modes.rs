//! What each mode and harness lets through, through the real binary: plan mode refuses writes
//! and `exit_plan` switches modes, `unattended` never asks, a prompt may ask for one turn, and
//! the planner and assistant harnesses offer only their tools.

use std::path::Path;

use ferrite_test_support::fake_provider::Script;
use ferrite_test_support::updates;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;
use super::permissions::{rig, start, write_call};

/// The last mode and config updates among `before` both say `mode`.
fn the_client_is_told_the_mode_is(before: &[serde_json::Value], mode: &str) {
    let ups = updates(before);
    let last = |kind: &str| {
        ups.iter()
            .rev()
            .find(|(k, _)| k == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
            .1
            .clone()
    };
    assert_eq!(last("current_mode_update")["currentModeId"], mode);
    let cfg = last("config_option_update");
    assert_eq!(option_value(&cfg["configOptions"], "mode"), mode);
}

#[tokio::test]
async fn plan_mode_refuses_writes_and_exit_plan_switches_modes() {
    let mut r = rig().await;
    r.set_mode("plan").await;
    r.fake.push(write_call("plan.txt", "x"));
    r.fake.push(Script::new().tool_call(
        "p1",
        "exit_plan",
        json!({"plan": "1. write plan.txt"}).to_string(),
    ));
    r.fake.push(write_call("plan.txt", "done"));
    r.fake.push(Script::new().text("all done"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    assert_eq!(req["params"]["toolCall"]["kind"], "switch_mode");
    let names: Vec<&str> = req["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Yes, and auto-accept edits",
            "Yes, ask before edits",
            "No, keep planning"
        ]
    );
    assert!(
        r.fake.requests()[0].body["tools"]
            .to_string()
            .contains("exit_plan"),
        "offered in plan mode"
    );
    r.answer(&req, "allow_always").await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    the_client_is_told_the_mode_is(&before, "auto");
    assert!(
        before
            .iter()
            .filter(|m| m["method"] == "session/request_permission")
            .count()
            == 0,
        "auto writes without asking"
    );
    assert_eq!(
        std::fs::read_to_string(r.world.ws().join("plan.txt")).unwrap(),
        "done"
    );
    // The first write (in plan mode) was refused without a question.
    let first_results = r.fake.requests()[1].body["messages"].to_string();
    assert!(first_results.contains("plan mode does not write files"));
    let r2 = r
        .client
        .request(
            "session/resume",
            json!({"sessionId": r.sid, "cwd": r.world.ws()}),
        )
        .await
        .ok();
    assert_eq!(
        r2["modes"]["currentModeId"], "auto",
        "the switch is in the log"
    );
}

#[tokio::test]
async fn unattended_never_asks() {
    let mut r = start(World::new(), Some("unattended"), &[]).await;
    r.fake.push(Script::new().parallel_tool_calls(&[
        (
            "c1",
            "write",
            &json!({"path": "in.txt", "content": "inside"}).to_string(),
        ),
        (
            "c2",
            "write",
            &json!({"path": "/tmp/ferrite-unattended-outside.txt", "content": "x"}).to_string(),
        ),
        ("c3", "exit_plan", &json!({"plan": "x"}).to_string()),
    ]));
    r.fake.push(Script::new().text("done"));
    let prompt = r.send_prompt_id().await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    answer.ok();
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission")
    );
    assert_eq!(
        std::fs::read_to_string(r.world.ws().join("in.txt")).unwrap(),
        "inside"
    );
    assert!(!Path::new("/tmp/ferrite-unattended-outside.txt").exists());
    let res = r.last_tool_results();
    assert!(!res[0].1);
    assert!(res[1].1 && res[1].0.contains("unattended"), "{res:?}");
}

#[tokio::test]
async fn per_turn_ask_and_the_planner_harness() {
    let mut r = rig().await;
    r.set_mode("auto").await;
    r.fake.push(write_call("a.txt", "a"));
    r.fake.push(Script::new().text("ok"));
    let prompt = r
        .client
        .send_request("session/prompt", json!({"sessionId": r.sid, "prompt": [{"type": "text", "text": "x"}], "_meta": {"permission_mode": "ask"}}))
        .await;
    let req = r.permission_request().await;
    r.answer(&req, "allow_once").await;
    r.client.wait_answer(&prompt).await.ok();

    let mut p = start(World::new(), Some("planner"), &[]).await;
    p.fake.push(Script::new().text("looking"));
    let prompt = p.send_prompt_id().await;
    p.client.wait_answer(&prompt).await.ok();
    let tools = p.fake.requests()[0].body["tools"].to_string();
    for t in ["\"read\"", "\"grep\"", "\"find\"", "\"ls\"", "update_plan"] {
        assert!(tools.contains(t), "{t} offered");
    }
    for t in ["\"write\"", "\"edit\"", "\"bash\"", "exit_plan"] {
        assert!(!tools.contains(t), "{t} not offered to the planner");
    }

    let mut a = start(World::new(), Some("assistant"), &[]).await;
    a.fake.push(Script::new().text("hello"));
    let prompt = a.send_prompt_id().await;
    a.client.wait_answer(&prompt).await.ok();
    let names: Vec<String> = a.fake.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        ["update_plan", "web_fetch"],
        "the assistant has no file or shell tools"
    );
}
