//! `/compact` is part of the replay: `session/load` shows the `/compact` prompt and a marker
//! that the conversation was compacted; a failed `/compact` replays with its prompt.

use std::path::Path;

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Reply, Script};
use serde_json::{Value, json};

use super::common::*;

async fn start(world: &World) -> (FakeProvider, AcpClient, String) {
    let fake = FakeProvider::start().await.unwrap();
    world.write_config(&format!(
        "model = \"local/small\"\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\nmodels = [{{ id = \"small\", context_window = 100000 }}]\n",
        fake.base_url()
    ));
    let mut c = AcpClient::spawn(
        Path::new(BIN),
        world.home(),
        &[("FERRITE_MAX_RETRIES", "0")],
    );
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    (fake, c, s)
}

/// The replay of `s` in a fresh process, as `(kind, text)` pairs; notices are marked `notice`.
async fn replay(world: &World, s: &str) -> Vec<(String, String)> {
    let mut c = AcpClient::spawn(Path::new(BIN), world.home(), &[]);
    c.initialize().await;
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    let (messages, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    ferrite_test_support::updates(&messages)
        .into_iter()
        .filter(|(k, _)| k.ends_with("_chunk"))
        .map(|(k, u): (String, Value)| {
            let kind = if u["_meta"]["ferrite"]["notice"] == true {
                "notice".to_owned()
            } else {
                k
            };
            (
                kind,
                u["content"]["text"].as_str().unwrap().trim().to_owned(),
            )
        })
        .collect()
}

fn pair(kind: &str, text: &str) -> (String, String) {
    (kind.to_owned(), text.to_owned())
}

#[tokio::test]
async fn a_compaction_replays_with_its_prompt_and_a_marker() {
    let world = World::new();
    let (fake, mut c, s) = start(&world).await;
    fake.push(Script::new().text("It is in src/lib.rs."));
    c.request("session/prompt", text_prompt(&s, "where is the parser?"))
        .await
        .ok();
    fake.push(Script::new().text("SUMMARY: parser in src/lib.rs"));
    c.request("session/prompt", text_prompt(&s, "/compact"))
        .await
        .ok();
    c.close_stdin().await;
    c.wait_exit(std::time::Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(
        replay(&world, &s).await,
        [
            pair("user_message_chunk", "where is the parser?"),
            pair("agent_message_chunk", "It is in src/lib.rs."),
            pair("user_message_chunk", "/compact"),
            pair(
                "notice",
                "Compacted the conversation: the model continues from a summary of what came before."
            ),
        ]
    );
    // The `/compact` prompt is never sent to the model.
    fake.push(Script::new().text("ok"));
    let mut c = AcpClient::spawn(Path::new(BIN), world.home(), &[]);
    c.initialize().await;
    c.request(
        "session/resume",
        json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
    )
    .await
    .ok();
    c.request("session/prompt", text_prompt(&s, "go on"))
        .await
        .ok();
    let sent = fake.requests().last().unwrap().body["messages"].to_string();
    assert!(
        sent.contains("SUMMARY: parser") && !sent.contains("/compact"),
        "{sent}"
    );
}

#[tokio::test]
async fn a_failed_compaction_replays_with_its_prompt() {
    let world = World::new();
    let (fake, mut c, s) = start(&world).await;
    fake.push(Script::new().text("Hi."));
    c.request("session/prompt", text_prompt(&s, "hello"))
        .await
        .ok();
    fake.push(Reply::error(400, r#"{"error":{"message":"bad request"}}"#));
    let answer = c
        .request("session/prompt", text_prompt(&s, "/compact focus on tests"))
        .await
        .ok();
    assert!(
        answer["_meta"]["ferrite"]["turnFailure"].is_object(),
        "{answer}"
    );
    c.close_stdin().await;
    c.wait_exit(std::time::Duration::from_secs(5))
        .await
        .unwrap();
    let got = replay(&world, &s).await;
    assert_eq!(
        got[..3],
        [
            pair("user_message_chunk", "hello"),
            pair("agent_message_chunk", "Hi."),
            pair("user_message_chunk", "/compact focus on tests"),
        ]
    );
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[3].0, "agent_message_chunk");
    assert!(
        got[3].1.contains("HTTP 400"),
        "the failure follows: {got:?}"
    );
}
