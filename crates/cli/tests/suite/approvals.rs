//! Approvals a user can judge (`docs/acp.md`): a permission request shows what the call will do,
//! and an edit's card ends with the same diff the user approved.

use std::time::Duration;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use ferrite_test_support::mcp_server::stdio_server_bin;
use ferrite_test_support::{AcpClient, updates};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

struct Rig {
    world: World,
    fake: FakeProvider,
    client: AcpClient,
    sid: String,
}

async fn rig(mcp_servers: Value) -> Rig {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut client = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    client.initialize().await;
    let params = json!({"cwd": world.ws(), "mcpServers": mcp_servers});
    let sid = sid(&client.request("session/new", params).await.ok());
    Rig {
        world,
        fake,
        client,
        sid,
    }
}

impl Rig {
    /// Runs a prompt whose one tool call asks; answers `allow_once`. Returns the permission
    /// request's `toolCall` and every message of the turn.
    async fn approve(&mut self, call: Script) -> (Value, Vec<Value>) {
        self.fake.push(call);
        self.fake.push(Script::new().text("done"));
        let id = self
            .client
            .send_request("session/prompt", text_prompt(&self.sid, "go"))
            .await;
        let req = self
            .client
            .wait_for(Duration::from_secs(10), |m| {
                m["method"] == "session/request_permission"
            })
            .await
            .expect("a permission request");
        self.client
            .respond(
                &req["id"],
                json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}),
            )
            .await;
        let (turn, answer) = self.client.collect_until_answer(&id).await;
        assert_eq!(answer.ok()["stopReason"], "end_turn");
        (req["params"]["toolCall"].clone(), turn)
    }
}

/// The content of the last `tool_call_update` of `call`.
fn final_content(turn: &[Value], call: &str) -> Value {
    updates(turn)
        .into_iter()
        .rev()
        .find(|(k, u)| {
            k == "tool_call_update" && u["toolCallId"] == call && u["status"].is_string()
        })
        .map(|(_, u)| u["content"].clone())
        .expect("a final update")
}

#[tokio::test]
async fn an_edit_asks_with_the_diff_it_will_apply_and_ends_with_it() {
    let mut r = rig(json!([])).await;
    let file = r.world.ws().join("src/lib.rs");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "fn a() {}\nfn b() {}\n").unwrap();
    let args =
        json!({"path": "src/lib.rs", "old_string": "fn b() {}", "new_string": "fn b() { a() }"});
    let (asked, turn) = r
        .approve(Script::new().tool_call("e1", "edit", args.to_string()))
        .await;
    let diff = json!({
        "type": "diff",
        "path": file,
        "oldText": "fn a() {}\nfn b() {}\n",
        "newText": "fn a() {}\nfn b() { a() }\n",
    });
    assert_eq!(asked["content"], json!([diff.clone()]));
    assert_eq!(asked["locations"][0]["path"], json!(file));
    assert_eq!(final_content(&turn, "e1"), json!([diff]));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "fn a() {}\nfn b() { a() }\n"
    );
}

#[tokio::test]
async fn a_new_file_asks_with_a_diff_from_nothing() {
    let mut r = rig(json!([])).await;
    let args = json!({"path": "notes/todo.md", "content": "# Todo\n- ship\n"});
    let (asked, turn) = r
        .approve(Script::new().tool_call("w1", "write", args.to_string()))
        .await;
    let content = &asked["content"][0];
    assert_eq!(content["type"], "diff");
    assert_eq!(content["path"], json!(r.world.ws().join("notes/todo.md")));
    // The schema's "omitted or null for new files": ferrite omits it.
    assert!(content["oldText"].is_null(), "{content}");
    assert_eq!(content["newText"], "# Todo\n- ship\n");
    assert_eq!(final_content(&turn, "w1"), asked["content"]);
}

#[tokio::test]
async fn an_overwrite_asks_with_the_file_as_it_is_now() {
    let mut r = rig(json!([])).await;
    std::fs::write(r.world.ws().join("a.txt"), "before\n").unwrap();
    let args = json!({"path": "a.txt", "content": "after\n"});
    let (asked, _) = r
        .approve(Script::new().tool_call("w1", "write", args.to_string()))
        .await;
    assert_eq!(asked["content"][0]["oldText"], "before\n");
    assert_eq!(asked["content"][0]["newText"], "after\n");
}

#[tokio::test]
async fn a_command_asks_with_the_command_and_where_it_runs() {
    let mut r = rig(json!([])).await;
    let command = "echo ```fence``` && ls";
    let (asked, _) = r
        .approve(Script::new().tool_call("b1", "bash", json!({"command": command}).to_string()))
        .await;
    let text = asked["content"][0]["content"]["text"].as_str().unwrap();
    assert_eq!(
        text,
        format!("````sh\n{command}\n````\n\nin `{}`", r.world.ws().display())
    );
}

#[tokio::test]
async fn an_mcp_call_asks_with_its_arguments() {
    let server = json!({"name": "s", "command": stdio_server_bin(), "args": [], "env": []});
    let mut r = rig(json!([server])).await;
    let (asked, _) = r
        .approve(Script::new().tool_call("m1", "mcp__s__echo", r#"{"text":"hello there"}"#))
        .await;
    let text = asked["content"][0]["content"]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "Arguments:\n\n```json\n{\n  \"text\": \"hello there\"\n}\n```"
    );
}

#[tokio::test]
async fn a_big_file_asks_with_the_changed_lines_only() {
    let mut r = rig(json!([])).await;
    let text: String = (0..40_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(r.world.ws().join("big.txt"), &text).unwrap();
    let args = json!({"path": "big.txt", "old_string": "line 20000\n", "new_string": "changed\n"});
    let (asked, turn) = r
        .approve(Script::new().tool_call("e1", "edit", args.to_string()))
        .await;
    let diff = &asked["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(
        diff["oldText"],
        "line 19997\nline 19998\nline 19999\nline 20000\nline 20001\nline 20002\nline 20003\n"
    );
    assert_eq!(
        diff["newText"],
        "line 19997\nline 19998\nline 19999\nchanged\nline 20001\nline 20002\nline 20003\n"
    );
    assert_eq!(final_content(&turn, "e1"), asked["content"]);
}
