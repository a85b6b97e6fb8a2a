//! Issue 27: the `session/update`s of schema 1.20 that a client must advertise (`plan_update` /
//! `plan_removed`, `compaction_update` / `compaction_summary_chunk`, `notice`) go to clients that
//! advertised them; every other client gets what it got before they existed.

use std::path::Path;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use ferrite_test_support::{AcpClient, agent_text, updates};
use serde_json::{Value, json};

use super::common::*;

/// An agent on a local fake provider, initialized with `caps`, with one session.
async fn agent(world: &World, caps: Value) -> (FakeProvider, AcpClient, String) {
    let fake = FakeProvider::start().await.unwrap();
    world.write_config(&format!(
        "model = \"local/small\"\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\nmodels = [{{ id = \"small\", context_window = 100000 }}]\n",
        fake.base_url()
    ));
    let mut c = AcpClient::spawn(Path::new(BIN), world.home(), &[]);
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": caps}),
    )
    .await
    .ok();
    let s = sid(&c.new_session(&world.ws()).await);
    (fake, c, s)
}

/// The kinds of `session/update` in `messages`, in order, among `of`.
fn kinds(messages: &[Value], of: &[&str]) -> Vec<String> {
    updates(messages)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| of.contains(&k.as_str()))
        .collect()
}

fn update<'a>(messages: &'a [(String, Value)], kind: &str) -> &'a Value {
    &messages.iter().find(|(k, _)| k == kind).unwrap().1
}

/// What the client sees of prompt `text` live, then of the whole session on load.
async fn live_then_replay(
    world: &World,
    c: &mut AcpClient,
    s: &str,
    text: &str,
) -> (Vec<Value>, Vec<Value>) {
    let id = c.send_request("session/prompt", text_prompt(s, text)).await;
    let (live, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    c.request("session/close", json!({"sessionId": s}))
        .await
        .ok();
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    let (replay, _) = c.collect_until_answer(&id).await;
    assert!(c.violations().is_empty(), "{:?}", c.violations());
    (live, replay)
}

/// A checklist, then the checklist emptied, in one turn; what the client saw live and on load.
async fn plan_turn(caps: Value) -> (Vec<Value>, Vec<Value>) {
    let world = World::new();
    let (fake, mut c, s) = agent(&world, caps).await;
    let plan = json!({"entries": [{"content": "read the code", "status": "in_progress"}]});
    fake.push(Script::new().tool_call("p1", "update_plan", plan.to_string()));
    fake.push(Script::new().tool_call("p2", "update_plan", json!({"entries": []}).to_string()));
    fake.push(Script::new().text("done"));
    live_then_replay(&world, &mut c, &s, "go").await
}

const PLAN_KINDS: [&str; 3] = ["plan", "plan_update", "plan_removed"];

#[tokio::test]
async fn clients_that_advertise_plan_get_the_checklist_by_id() {
    let (live, replay) = plan_turn(json!({"plan": {}})).await;
    for messages in [&live, &replay] {
        assert_eq!(
            kinds(messages, &PLAN_KINDS),
            ["plan_update", "plan_removed"]
        );
        let all = updates(messages);
        assert_eq!(
            update(&all, "plan_update")["plan"],
            json!({"type": "items", "planId": "checklist", "entries": [
                {"content": "read the code", "status": "in_progress", "priority": "medium"}
            ]})
        );
        assert_eq!(update(&all, "plan_removed")["planId"], "checklist");
    }
}

#[tokio::test]
async fn other_clients_get_the_whole_plan_as_before() {
    let (live, replay) = plan_turn(json!({})).await;
    for messages in [&live, &replay] {
        assert_eq!(kinds(messages, &PLAN_KINDS), ["plan", "plan"]);
        let all = updates(messages);
        assert_eq!(
            update(&all, "plan")["entries"][0]["content"],
            "read the code"
        );
    }
}

/// `/compact` after one exchange; what the client saw live and on load.
async fn compaction_turn(caps: Value) -> (Vec<Value>, Vec<Value>) {
    let world = World::new();
    let (fake, mut c, s) = agent(&world, caps).await;
    fake.push(Script::new().text("The parser is in src/lib.rs."));
    c.request("session/prompt", text_prompt(&s, "where is the parser?"))
        .await
        .ok();
    fake.push(
        Script::new()
            .text("SUMMARY: parser in src/lib.rs")
            .usage(50, 12, 0),
    );
    live_then_replay(&world, &mut c, &s, "/compact").await
}

const COMPACTION_KINDS: [&str; 2] = ["compaction_update", "compaction_summary_chunk"];

#[tokio::test]
async fn clients_that_advertise_compaction_follow_it_by_id() {
    let (live, replay) = compaction_turn(json!({"session": {"compaction": {}}})).await;
    assert_eq!(
        kinds(&live, &COMPACTION_KINDS),
        [
            "compaction_update",
            "compaction_summary_chunk",
            "compaction_update"
        ]
    );
    let all = updates(&live);
    let stages: Vec<(&Value, &Value)> = all
        .iter()
        .filter(|(k, _)| k == "compaction_update")
        .map(|(_, u)| (&u["compactionId"], &u["status"]))
        .collect();
    assert_eq!(
        stages,
        [
            (&json!("compaction-1"), &json!("in_progress")),
            (&json!("compaction-1"), &json!("completed"))
        ]
    );
    let chunk = update(&all, "compaction_summary_chunk");
    assert_eq!(chunk["compactionId"], "compaction-1");
    assert_eq!(chunk["content"]["text"], "SUMMARY: parser in src/lib.rs");
    assert!(
        !agent_text(&live).contains("Compacted"),
        "{}",
        agent_text(&live)
    );
    // The replay shows the finished compaction where it happened, under the same id.
    assert_eq!(
        kinds(&replay, &COMPACTION_KINDS),
        ["compaction_summary_chunk", "compaction_update"]
    );
    let replayed = updates(&replay);
    assert_eq!(
        update(&replayed, "compaction_update")["compactionId"],
        "compaction-1"
    );
    assert!(!agent_text(&replay).contains("Compacted"));
}

#[tokio::test]
async fn other_clients_are_told_of_a_compaction_as_before() {
    let (live, replay) = compaction_turn(json!({})).await;
    for messages in [&live, &replay] {
        assert!(kinds(messages, &COMPACTION_KINDS).is_empty());
        assert!(agent_text(messages).contains("Compacted the conversation"));
    }
}

/// A notice's first line is its title; a client that did not advertise notices gets the same
/// text as a marked agent message.
#[tokio::test]
async fn notices_go_as_notices_only_to_clients_that_advertise_them() {
    for (caps, takes) in [
        (json!({"session": {"notices": {}}}), true),
        (json!({}), false),
    ] {
        let world = World::new();
        let (_fake, mut c, _s) = agent(&world, caps).await;
        let servers =
            json!([{"name": "ghost", "command": "/no/such/server", "args": [], "env": []}]);
        c.request(
            "session/new",
            json!({"cwd": world.ws(), "mcpServers": servers}),
        )
        .await
        .ok();
        let shown = c
            .wait_for(std::time::Duration::from_secs(10), |m| {
                m["params"]["update"].to_string().contains("ghost")
            })
            .await
            .expect("the failed server is told");
        let u = &shown["params"]["update"];
        if takes {
            assert_eq!(u["sessionUpdate"], "notice");
            assert_eq!(u["severity"], "warning");
            assert!(u["title"].as_str().unwrap().contains("ghost"), "{u}");
        } else {
            assert_eq!(u["sessionUpdate"], "agent_message_chunk");
            assert_eq!(u["_meta"]["ferrite"]["notice"], true);
        }
        assert!(c.violations().is_empty(), "{:?}", c.violations());
    }
}

/// The plan `exit_plan` proposes goes to a plan-capable client as a Markdown plan of its own id,
/// before the question; other clients read it on the call's card only, as before.
async fn proposal_turn(caps: Value) -> Vec<Value> {
    let world = World::new();
    let (fake, mut c, s) = agent(&world, caps).await;
    c.request(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "plan"}),
    )
    .await
    .ok();
    let plan = json!({"plan": "1. Read `main.rs`\n2. Fix the bug"});
    fake.push(Script::new().tool_call("x1", "exit_plan", plan.to_string()));
    fake.push(Script::new().text("planning on"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "plan it"))
        .await;
    let mut seen = vec![];
    loop {
        let m = c
            .next_message(std::time::Duration::from_secs(20))
            .await
            .expect("the turn ends");
        if m["method"] == "session/request_permission" {
            let reject = m["params"]["options"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["kind"] == "reject_once")
                .unwrap()["optionId"]
                .clone();
            c.respond(
                &m["id"],
                json!({"outcome": {"outcome": "selected", "optionId": reject}}),
            )
            .await;
        }
        let done = m["id"] == id && m.get("method").is_none();
        seen.push(m);
        if done {
            break;
        }
    }
    assert!(c.violations().is_empty(), "{:?}", c.violations());
    seen
}

#[tokio::test]
async fn an_exit_plan_proposal_is_a_markdown_plan_for_clients_that_take_plans() {
    let seen = proposal_turn(json!({"plan": {}})).await;
    let all = updates(&seen);
    let proposal = update(&all, "plan_update");
    assert_eq!(proposal["plan"]["type"], "markdown", "{proposal}");
    assert_eq!(proposal["plan"]["planId"], "proposal", "{proposal}");
    assert_eq!(
        proposal["plan"]["content"], "1. Read `main.rs`\n2. Fix the bug",
        "{proposal}"
    );
    let asked = seen
        .iter()
        .position(|m| m["method"] == "session/request_permission")
        .unwrap();
    let shown = seen
        .iter()
        .position(|m| m["params"]["update"]["sessionUpdate"] == "plan_update")
        .unwrap();
    assert!(shown < asked, "the plan is shown before the question");

    let old = proposal_turn(json!({})).await;
    assert!(kinds(&old, &PLAN_KINDS).is_empty());
}
