//! Tool output that renders in Markdown clients (`docs/tools.md`): what the editor shows is fenced,
//! what the model receives is unchanged.

use ferrite_test_support::fake_provider::{FakeProvider, Script};
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

async fn rig() -> Rig {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut client = world.spawn_acp(provider_env(&fake, Api::Chat));
    client.initialize().await;
    let sid = sid(&client.new_session(&world.ws()).await);
    client
        .request(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "full"}),
        )
        .await
        .ok();
    Rig {
        world,
        fake,
        client,
        sid,
    }
}

impl Rig {
    /// Runs one tool call; returns the text of its final card and what the model got back.
    async fn run(&mut self, tool: &str, args: Value) -> (String, String) {
        self.fake
            .push(Script::new().tool_call("t1", tool, args.to_string()));
        self.fake.push(Script::new().text("ok"));
        let id = self
            .client
            .send_request("session/prompt", text_prompt(&self.sid, "go"))
            .await;
        let (turn, answer) = self.client.collect_until_answer(&id).await;
        answer.ok();
        let shown = updates(&turn)
            .into_iter()
            .rev()
            .find(|(k, u)| k == "tool_call_update" && u["status"] == "completed")
            .map(|(_, u)| {
                u["content"][0]["content"]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .expect("a completed call");
        let reqs = self.fake.requests();
        let model = reqs.last().unwrap().body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .unwrap();
        (shown, model)
    }
}

#[tokio::test]
async fn command_output_is_fenced_with_the_exit_code_on_its_own_line() {
    let mut r = rig().await;
    let command = "printf '# not a heading\\n```\\n'; exit 3";
    let (shown, model) = r.run("bash", json!({"command": command})).await;
    assert_eq!(shown, "````\n# not a heading\n```\n````\n\nExit code 3");
    assert_eq!(
        model, "Exit code 3\n# not a heading\n```\n",
        "the model's text is unchanged"
    );
}

#[tokio::test]
async fn long_output_shows_head_and_tail_and_names_the_spill_file() {
    let mut r = rig().await;
    let (shown, model) = r.run("bash", json!({"command": "seq 1 5000"})).await;
    let head: String = (1..=40).map(|i| format!("{i}\n")).collect();
    let tail: String = (4961..=5000).map(|i| format!("{i}\n")).collect();
    assert!(
        shown.starts_with(&format!(
            "```\n{head}```\n\n… 4920 more lines; the full output (5000 lines, "
        )),
        "{shown:.300}"
    );
    assert!(
        shown.ends_with(&format!("```\n{tail}```\n\nExit code 0")),
        "{shown}"
    );
    let spill = shown
        .split('`')
        .find(|s| s.contains("tool-output"))
        .expect("the spill file is named");
    assert_eq!(
        std::fs::read_to_string(spill).unwrap().lines().count(),
        5000
    );
    assert!(model.starts_with("Exit code 0\n1\n2\n"), "{model:.100}");
    assert!(
        model.contains("[Output truncated"),
        "the model's text is unchanged"
    );
}

#[tokio::test]
async fn reads_show_the_file_in_its_language_without_line_numbers() {
    let mut r = rig().await;
    std::fs::write(r.world.ws().join("build.py"), "# setup\nprint('```')\n").unwrap();
    let (shown, model) = r.run("read", json!({"path": "build.py"})).await;
    assert_eq!(shown, "````python\n# setup\nprint('```')\n````");
    assert_eq!(model, "     1\t# setup\n     2\tprint('```')\n");
}

#[tokio::test]
async fn search_results_are_fenced() {
    let mut r = rig().await;
    std::fs::write(r.world.ws().join("notes.md"), "# title\n* item\n").unwrap();
    let (shown, model) = r.run("grep", json!({"pattern": "title"})).await;
    assert_eq!(model, "notes.md:1:# title\n");
    assert_eq!(shown, "```\nnotes.md:1:# title\n```");
}

/// Issue 23: `update_plan` shows no card, so two responses' texts would run together in the
/// editor ("Plan first.Done."): the second starts a new paragraph, live and in the replay. The
/// model's own text is kept as it wrote it.
#[tokio::test]
async fn consecutive_responses_are_separate_paragraphs_live_and_replayed() {
    let mut r = rig().await;
    let plan = json!({"entries": [{"content": "do it", "status": "in_progress"}]}).to_string();
    r.fake.push(
        Script::new()
            .text("Plan first.")
            .tool_call("p1", "update_plan", plan),
    );
    r.fake.push(Script::new().text("Done."));
    let id = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, "go"))
        .await;
    let (live, answer) = r.client.collect_until_answer(&id).await;
    answer.ok();
    assert_eq!(
        ferrite_test_support::agent_text(&live),
        "Plan first.\n\nDone."
    );
    let requests = r.fake.requests();
    let sent = requests[1].body.to_string();
    assert!(
        sent.contains("\"Plan first.\"") && !sent.contains("\\n\\nDone"),
        "{sent}"
    );
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
    assert_eq!(
        ferrite_test_support::agent_text(&replayed),
        "Plan first.\n\nDone."
    );
}
