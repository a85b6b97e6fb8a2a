//! Tools, permissions and the sandbox through the real binary: the model (fake provider) calls
//! tools, the editor (test client) answers permission requests.

use std::time::Duration;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use ferrite_test_support::{AcpClient, updates};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

pub(super) struct Rig {
    pub world: World,
    pub fake: FakeProvider,
    pub client: AcpClient,
    pub sid: String,
}

pub(super) async fn start(world: World, harness: Option<&str>, extra_env: &[(&str, &str)]) -> Rig {
    let fake = FakeProvider::start().await.unwrap();
    let mut env = provider_env(&fake, Api::Anthropic);
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let mut client = world.spawn_acp(env);
    client.initialize().await;
    let mut params = json!({"cwd": world.ws(), "mcpServers": []});
    if let Some(h) = harness {
        params["_meta"] = json!({"harness": h});
    }
    let sid = sid(&client.request("session/new", params).await.ok());
    Rig {
        world,
        fake,
        client,
        sid,
    }
}

pub(super) async fn rig() -> Rig {
    start(World::new(), None, &[]).await
}

impl Rig {
    pub(super) async fn set_mode(&mut self, mode: &str) {
        self.client
            .request(
                "session/set_mode",
                json!({"sessionId": self.sid, "modeId": mode}),
            )
            .await
            .ok();
    }

    pub(super) fn send_prompt_id(&mut self) -> impl std::future::Future<Output = Value> + '_ {
        let sid = self.sid.clone();
        async move {
            self.client
                .send_request("session/prompt", text_prompt(&sid, "do it"))
                .await
        }
    }

    /// Waits for the next permission request and returns it whole.
    pub(super) async fn permission_request(&mut self) -> Value {
        self.client
            .wait_for(Duration::from_secs(10), |m| {
                m["method"] == "session/request_permission"
            })
            .await
            .expect("a permission request")
    }

    pub(super) async fn answer(&mut self, req: &Value, option: &str) {
        let id = req["id"].clone();
        self.client
            .respond(
                &id,
                json!({"outcome": {"outcome": "selected", "optionId": option}}),
            )
            .await;
    }

    /// Results the model got back in the last request (Anthropic tool_result blocks).
    pub(super) fn last_tool_results(&self) -> Vec<(String, bool)> {
        let reqs = self.fake.requests();
        let msgs = reqs.last().unwrap().body["messages"]
            .as_array()
            .unwrap()
            .clone();
        let last = msgs.last().unwrap();
        last["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| {
                (
                    b["content"].to_string(),
                    b["is_error"].as_bool().unwrap_or(false),
                )
            })
            .collect()
    }
}

pub(super) fn write_call(path: &str, content: &str) -> Script {
    Script::new().tool_call(
        "w1",
        "write",
        json!({"path": path, "content": content}).to_string(),
    )
}

pub(super) fn bash_call(id: &str, command: &str) -> Script {
    Script::new().tool_call(id, "bash", json!({"command": command}).to_string())
}

#[tokio::test]
async fn ask_mode_asks_and_allow_once_runs_the_tool() {
    let mut r = rig().await;
    r.fake.push(write_call("notes/todo.txt", "buy milk\n"));
    r.fake.push(Script::new().text("written"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    let p = &req["params"];
    assert_eq!(p["sessionId"], r.sid.as_str());
    assert_eq!(p["toolCall"]["toolCallId"], "w1");
    let kinds: Vec<&str> = p["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert_eq!(
        p["options"][1]["name"],
        "Always allow edits to files under notes/ in this workspace"
    );
    assert!(
        !r.world.ws().join("notes/todo.txt").exists(),
        "nothing written before the answer"
    );
    r.answer(&req, "allow_once").await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    assert_eq!(
        std::fs::read_to_string(r.world.ws().join("notes/todo.txt")).unwrap(),
        "buy milk\n"
    );
    let done = updates(&before)
        .into_iter()
        .rev()
        .find(|(k, u)| k == "tool_call_update" && u["toolCallId"] == "w1")
        .unwrap()
        .1;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["content"][0]["type"], "diff");
    assert_eq!(done["content"][0]["newText"], "buy milk\n");
    let call = updates(&before)
        .into_iter()
        .find(|(k, _)| k == "tool_call")
        .unwrap()
        .1;
    assert_eq!(call["kind"], "edit");
    assert_eq!(
        call["locations"][0]["path"],
        json!(r.world.ws().join("notes/todo.txt"))
    );
    let results = r.last_tool_results();
    assert_eq!(results.len(), 1);
    assert!(!results[0].1);
}

#[tokio::test]
async fn reject_once_refuses_and_tells_the_model() {
    let mut r = rig().await;
    r.fake.push(write_call("x.txt", "x"));
    r.fake.push(Script::new().text("ok, I won't"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    r.answer(&req, "reject_once").await;
    let answer = r.client.wait_answer(&prompt).await.ok();
    assert_eq!(answer["stopReason"], "end_turn");
    assert!(!r.world.ws().join("x.txt").exists());
    let results = r.last_tool_results();
    assert!(
        results[0].1 && results[0].0.contains("declined"),
        "{results:?}"
    );
}

/// Issue 23: a client without permission support answers `method_not_found`, and one may fail;
/// either refuses that call (the model is told) and the turn goes on: only the `cancelled`
/// outcome cancels it. An unreadable answer is a refusal too.
#[tokio::test]
async fn an_error_answer_to_a_permission_request_refuses_the_call_and_the_turn_goes_on() {
    let mut r = rig().await;
    r.fake.push(write_call("x.txt", "x"));
    r.fake.push(write_call("y.txt", "y"));
    r.fake.push(write_call("z.txt", "z"));
    r.fake.push(Script::new().text("I could not write them"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    r.client
        .respond_error(&req["id"], -32601, "Method not found")
        .await;
    let req = r.permission_request().await;
    r.client
        .respond_error(&req["id"], -32603, "Internal error")
        .await;
    let req = r.permission_request().await;
    r.client
        .respond(&req["id"], json!({"outcome": "not an outcome"}))
        .await;
    let answer = r.client.wait_answer(&prompt).await.ok();
    assert_eq!(answer["stopReason"], "end_turn");
    assert!(
        answer.pointer("/_meta/ferrite/turnFailure").is_none(),
        "{answer}"
    );
    for f in ["x.txt", "y.txt", "z.txt"] {
        assert!(!r.world.ws().join(f).exists(), "{f} was written");
    }
    // Every call got its refusal, and the model was asked again after each.
    let requests = r.fake.requests();
    assert_eq!(requests.len(), 4);
    let results: Vec<String> = requests[1..]
        .iter()
        .map(|req| {
            let msgs = req.body["messages"].as_array().unwrap();
            msgs.last().unwrap()["content"][0]["content"].to_string()
        })
        .collect();
    assert!(
        results[0].contains("could not ask the user")
            && results[0].contains("does not support permission requests"),
        "{results:?}"
    );
    assert!(results[1].contains("error -32603"), "{results:?}");
    assert!(results[2].contains("could not be read"), "{results:?}");
}

/// Issue 23: an edit that changes nothing (old text = new text, or no old text) is not put to
/// the user: the model is told at once and the turn goes on.
#[tokio::test]
async fn an_edit_that_changes_nothing_fails_without_asking() {
    let mut r = rig().await;
    std::fs::write(r.world.ws().join("a.txt"), "same\n").unwrap();
    for (id, old, new) in [("e0", "same", "same"), ("e1", "", "x")] {
        r.fake.push(Script::new().tool_call(
            id,
            "edit",
            json!({"path": "a.txt", "old_string": old, "new_string": new}).to_string(),
        ));
    }
    r.fake.push(Script::new().text("nothing to do"));
    let prompt = r.send_prompt_id().await;
    let (messages, answer) = r.client.collect_until_answer(&prompt).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    assert!(
        !messages
            .iter()
            .any(|m| m["method"] == "session/request_permission"),
        "asked about an edit that changes nothing"
    );
    let requests = r.fake.requests();
    let result = |i: usize| {
        let msgs = requests[i].body["messages"].as_array().unwrap();
        msgs.last().unwrap()["content"][0].clone()
    };
    assert_eq!(result(1)["is_error"], true);
    assert!(
        result(1)["content"].to_string().contains("the same"),
        "{}",
        result(1)
    );
    assert!(
        result(2)["content"]
            .to_string()
            .contains("old_string is empty"),
        "{}",
        result(2)
    );
    assert_eq!(
        std::fs::read_to_string(r.world.ws().join("a.txt")).unwrap(),
        "same\n"
    );
}

/// Issue 23: every finished tool call carries `rawOutput`, live and in `session/load`'s replay,
/// refused calls included: Zed takes a `refusal` stop after cards without it as a refused prompt
/// and deletes the turn, though files changed. Issue 35: it is a summary (lines, bytes), not the
/// content again (a read card showed the numbered lines and then the fenced block).
#[tokio::test]
async fn every_finished_tool_call_has_its_raw_output_live_and_replayed() {
    let mut r = rig().await;
    r.set_mode("auto").await;
    std::fs::write(r.world.ws().join("a.txt"), "alpha\n").unwrap();
    r.fake.push(Script::new().parallel_tool_calls(&[
        ("c0", "read", &json!({"path": "a.txt"}).to_string()),
        (
            "c1",
            "write",
            &json!({"path": "b.txt", "content": "beta"}).to_string(),
        ),
        ("c2", "read", &json!({"path": "missing.txt"}).to_string()),
    ]));
    r.fake.push(Script::new().text("done"));
    let prompt = r.send_prompt_id().await;
    let (live, answer) = r.client.collect_until_answer(&prompt).await;
    answer.ok();
    let finished = |messages: &[Value]| -> Vec<Value> {
        updates(messages)
            .into_iter()
            .filter(|(kind, u)| {
                kind == "tool_call_update"
                    && matches!(u["status"].as_str(), Some("completed" | "failed"))
            })
            .map(|(_, u)| u)
            .collect()
    };
    let live = finished(&live);
    assert_eq!(live.len(), 3, "{live:?}");
    for u in &live {
        assert!(u["rawOutput"]["bytes"].is_u64(), "no rawOutput: {u}");
        assert!(!u["rawOutput"].to_string().contains("alpha"), "{u}");
    }
    assert_eq!(live[0]["rawOutput"], json!({"lines": 1, "bytes": 13}));
    r.client
        .request("session/close", json!({"sessionId": r.sid}))
        .await
        .ok();
    let load = r
        .client
        .send_request(
            "session/load",
            json!({"sessionId": r.sid, "cwd": r.world.ws(), "mcpServers": []}),
        )
        .await;
    let (replayed, _) = r.client.collect_until_answer(&load).await;
    let replayed = finished(&replayed);
    assert_eq!(
        replayed.iter().map(|u| &u["rawOutput"]).collect::<Vec<_>>(),
        live.iter().map(|u| &u["rawOutput"]).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn always_answers_become_rules_for_later_sessions() {
    let mut r = rig().await;
    r.fake.push(bash_call("b1", "echo first"));
    r.fake.push(Script::new().text("ran"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    assert_eq!(
        req["params"]["options"][1]["name"],
        "Always allow \"echo …\" commands in this workspace"
    );
    r.answer(&req, "allow_always").await;
    r.client.wait_answer(&prompt).await.ok();
    assert!(r.last_tool_results()[0].0.contains("first"));

    // A new session in the same workspace, a new process: no question asked.
    r.client.close_stdin().await;
    r.client.wait_exit(Duration::from_secs(5)).await.unwrap();
    let mut r = start(r.world, None, &[]).await;
    r.fake.push(bash_call("b2", "echo second"));
    r.fake.push(Script::new().text("ran again"));
    let prompt = r.send_prompt_id().await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    answer.ok();
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission"),
        "no question: {before:?}"
    );
    assert!(r.last_tool_results()[0].0.contains("second"));
    let stored = std::fs::read_dir(r.world.home().join("permissions"))
        .unwrap()
        .count();
    assert_eq!(stored, 1);

    // reject_always stores a deny rule that wins afterwards, even in full mode.
    r.fake.push(write_call("secret.txt", "x"));
    r.fake.push(Script::new().text("no"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    r.answer(&req, "reject_always").await;
    r.client.wait_answer(&prompt).await.ok();
    r.set_mode("full").await;
    r.fake.push(write_call("secret.txt", "x"));
    r.fake.push(Script::new().text("denied"));
    let prompt = r.send_prompt_id().await;
    let (before, _) = r.client.collect_until_answer(&prompt).await;
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission")
    );
    let res = r.last_tool_results();
    assert!(
        res[0].1 && res[0].0.contains("denied by the rule"),
        "{res:?}"
    );
    assert!(!r.world.ws().join("secret.txt").exists());
}

#[tokio::test]
async fn an_unanswered_request_times_out_into_a_refusal() {
    let world = World::new();
    world.write_config("[permissions]\ntimeout_secs = 1\n");
    let mut r = start(world, None, &[]).await;
    r.fake.push(write_call("late.txt", "x"));
    r.fake.push(Script::new().text("timed out"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let withdrawn = before
        .iter()
        .find(|m| m["method"] == "$/cancel_request")
        .expect("the request is withdrawn");
    assert_eq!(withdrawn["params"]["requestId"], req["id"]);
    assert!(r.last_tool_results()[0].0.contains("did not answer"));
    assert!(!r.world.ws().join("late.txt").exists());
    // A late answer is harmless.
    r.answer(&req, "allow_once").await;
    assert!(
        r.client
            .request("session/list", json!({}))
            .await
            .result
            .is_some()
    );
}

#[tokio::test]
async fn cancel_while_asking_answers_cancelled() {
    let mut r = rig().await;
    r.fake.push(write_call("never.txt", "x"));
    let prompt = r.send_prompt_id().await;
    r.permission_request().await;
    r.client
        .notify("session/cancel", json!({"sessionId": r.sid}))
        .await;
    let answer = r.client.wait_answer(&prompt).await.ok();
    assert_eq!(answer["stopReason"], "cancelled", "{answer}");
    assert!(!r.world.ws().join("never.txt").exists());
    // The next turn's history answers the cancelled call.
    r.fake.push(Script::new().text("fine"));
    let p2 = r.send_prompt_id().await;
    r.client.wait_answer(&p2).await.ok();
    let text = r.fake.requests().last().unwrap().body.to_string();
    assert!(text.contains("tool_result") && text.contains("w1"));
}

/// Regression (issue 28): permission requests passed display-changing characters to the editor
/// as they were, so what the user approved could look unlike what ran: a bidi override
/// reorders the rest of the line, an ESC sequence or a CR rewrites what a terminal-style view
/// already showed. Everything shown (the card, the request's title, content and option names)
/// has them escaped; the command that runs and the model's own view of its call are the
/// original.
#[tokio::test]
async fn display_changing_characters_are_shown_escaped_and_run_as_they_are() {
    let mut r = rig().await;
    let name = "notes\u{202e}hs.txt";
    let command = format!("touch '{name}' # \r\u{1b}[2K\u{1b}]0;t\u{7}all good\u{200b}");
    r.fake.push(bash_call("b1", &command));
    r.fake.push(Script::new().text("done"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    let raw = |v: &Value| {
        // serde_json writes controls as \u00XX or \r; U+202E and U+200B as themselves.
        let text = v.to_string();
        ["\u{202e}", "\u{200b}", "\\u001b", "\\u0007", "\\r"]
            .into_iter()
            .filter(|c| text.contains(c))
            .collect::<Vec<_>>()
    };
    assert_eq!(raw(&req), Vec::<&str>::new(), "{req}");
    let call = &req["params"]["toolCall"];
    let title = call["title"].as_str().unwrap();
    assert!(title.contains("notes\\u{202e}hs.txt"), "{title}");
    let content = call["content"].to_string();
    for escape in ["\\\\u{d}", "\\\\u{1b}[2K", "\\\\u{7}", "\\\\u{200b}"] {
        assert!(content.contains(escape), "{escape} in {content}");
    }
    r.answer(&req, "allow_once").await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    for m in before
        .iter()
        .filter(|m| m["params"]["update"]["toolCallId"] == "b1")
    {
        assert_eq!(raw(m), Vec::<&str>::new(), "{m}");
    }
    // What ran is the command as the model wrote it.
    assert!(
        r.world.ws().join(name).exists(),
        "the file with the bidi name"
    );
    // And the model's history holds its call unchanged.
    let body = r.fake.requests().last().unwrap().body.clone();
    let sent = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    assert_eq!(sent["input"]["command"], command.as_str());
}
