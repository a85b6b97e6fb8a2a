//! What an editor shows is what happened (issue 35): a card's `rawOutput` summarises its result
//! instead of repeating it, a hidden subagent's card stays the task's (not the child's current
//! file), and a fork is listed under a title of its own.

use std::time::Duration;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use ferrite_test_support::updates;
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

/// The updates about tool call `id`, in order.
fn card_updates(messages: &[Value], id: &str) -> Vec<Value> {
    updates(messages)
        .into_iter()
        .filter(|(_, u)| u["toolCallId"] == id)
        .map(|(_, u)| u)
        .collect()
}

/// A client that reads files for the agent and does not show subagents: the model calls
/// `task`, whose subagent reads hello.txt and answers; every update of the parent's card.
#[tokio::test]
async fn a_hidden_subagent_s_card_is_the_task_and_sums_up_its_answer() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    std::fs::write(world.ws().join("hello.txt"), "hello\n").unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": false}}}),
    )
    .await
    .ok();
    let parent = sid(&c.new_session(&world.ws()).await);
    fake.push(Script::new().tool_call(
        "t1",
        "task",
        json!({"description": "Summarise the greeting", "prompt": "Read hello.txt."}).to_string(),
    ));
    fake.push(Script::new().tool_call("s1", "read", json!({"path": "hello.txt"}).to_string()));
    let answer = "THE-CHILD-ANSWER: the file says hello";
    fake.push(Script::new().text(answer));
    fake.push(Script::new().text("done"));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "go"))
        .await;
    let read = c
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "fs/read_text_file"
        })
        .await
        .expect("the read goes through the editor");
    c.respond(&read["id"], json!({"content": "hello\n"})).await;
    let (messages, done) = c.collect_until_answer(&id).await;
    assert_eq!(done.ok()["stopReason"], "end_turn");
    let card = card_updates(&messages, "t1");
    assert!(card.len() >= 2, "{card:?}");
    for u in &card {
        // Regression: the card took the child's `locations` ("Other: hello.txt").
        let locations = u.get("locations").and_then(Value::as_array);
        assert!(locations.is_none_or(Vec::is_empty), "{u}");
    }
    assert!(
        card.iter()
            .any(|u| u["content"].to_string().contains("Read hello.txt")
                || u["content"].to_string().contains("hello.txt")),
        "the card lists the child's steps: {card:?}"
    );
    let last = card.last().unwrap();
    assert_eq!(last["status"], "completed");
    // Regression: acpx showed the answer twice, from `content` and from `rawOutput`.
    assert!(last["content"].to_string().contains("THE-CHILD-ANSWER"));
    assert!(!last["rawOutput"].to_string().contains("THE-CHILD-ANSWER"));
    assert!(last["rawOutput"]["bytes"].as_u64().unwrap() >= answer.len() as u64);
    assert!(c.violations().is_empty(), "{:?}", c.violations());
}

/// A command's card sums up its ending: the exit code, lines and bytes, not the output again.
#[tokio::test]
async fn a_command_s_raw_output_is_its_exit_code_and_size() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    c.request(
        "session/set_config_option",
        json!({"sessionId": s, "configId": "mode", "value": "full"}),
    )
    .await
    .ok();
    fake.push(Script::new().tool_call(
        "b1",
        "bash",
        json!({"command": "echo COMMAND-OUTPUT; exit 3"}).to_string(),
    ));
    fake.push(Script::new().text("ok"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "run"))
        .await;
    let (messages, done) = c.collect_until_answer(&id).await;
    done.ok();
    let last = card_updates(&messages, "b1")
        .into_iter()
        .rfind(|u| u["status"].is_string())
        .unwrap();
    assert_eq!(last["rawOutput"]["exitCode"], 3, "{last}");
    assert!(last["rawOutput"]["lines"].as_u64().unwrap() >= 2, "{last}");
    assert!(!last["rawOutput"].to_string().contains("COMMAND-OUTPUT"));
}

/// Regression: a fork was listed with its parent's title (two identical rows in Zed's history).
#[tokio::test]
async fn a_fork_is_listed_under_its_own_title() {
    let w = World::new();
    let mut c = w.client().await;
    let s = sid(&c.new_session(&w.ws()).await);
    c.request("session/prompt", text_prompt(&s, "Plan the release"))
        .await
        .ok();
    let by_ferrite = c
        .request("_ferrite/session/fork", json!({"sessionId": s}))
        .await
        .ok();
    let by_ferrite = by_ferrite["sessionId"].as_str().unwrap().to_owned();
    let standard = c
        .request(
            "session/fork",
            json!({"sessionId": s, "cwd": w.ws(), "mcpServers": []}),
        )
        .await
        .ok();
    let standard = standard["sessionId"].as_str().unwrap().to_owned();
    let listed = c.request("session/list", json!({"cwd": w.ws()})).await.ok();
    let title_of = |id: &str| {
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["sessionId"] == id)
            .map(|x| x["title"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(title_of(&s), "Plan the release");
    assert_eq!(title_of(&by_ferrite), "Fork of Plan the release");
    assert_eq!(title_of(&standard), "Fork of Plan the release");
    // A prompt in the fork does not rename it; the parent keeps its own title.
    c.request("session/prompt", text_prompt(&standard, "another question"))
        .await
        .ok();
    let listed = c.request("session/list", json!({"cwd": w.ws()})).await.ok();
    let titles: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["title"].as_str())
        .collect();
    assert_eq!(
        titles.iter().filter(|t| **t == "Plan the release").count(),
        1,
        "{titles:?}"
    );
}
