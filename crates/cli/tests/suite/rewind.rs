//! Rewind (`docs/sessions.md`): every user message has a stable id, sent as `messageId` on its
//! `user_message_chunk`s and the same on every load.

use std::path::Path;

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;

async fn start(world: &World) -> (FakeProvider, AcpClient, String) {
    let fake = FakeProvider::start().await.unwrap();
    world.write_config(&format!(
        "model = \"local/small\"\ntitles = false\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\nmodels = [{{ id = \"small\", context_window = 100000 }}]\n",
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

/// The user messages a load of `s` in a fresh process replays: `(text, messageId)`.
async fn user_messages(world: &World, s: &str) -> Vec<(String, Value)> {
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
    stop(c).await;
    ferrite_test_support::updates(&messages)
        .into_iter()
        .filter(|(k, _)| k == "user_message_chunk")
        .map(|(_, u)| {
            let text = u["content"]["text"].as_str().unwrap().to_owned();
            (text, u["messageId"].clone())
        })
        .collect()
}

#[tokio::test]
async fn user_messages_keep_their_ids_on_every_load() {
    let world = World::new();
    let (fake, mut c, s) = start(&world).await;
    for (prompt, answer) in [("first", "one"), ("second", "two")] {
        fake.push(Script::new().text(answer));
        prompt_to_end(&mut c, &s, prompt).await;
    }
    stop(c).await;
    let once = user_messages(&world, &s).await;
    let texts: Vec<&str> = once.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(texts, ["first", "second"]);
    let ids: Vec<&str> = once.iter().map(|(_, id)| id.as_str().unwrap()).collect();
    assert!(ids.iter().all(|id| !id.is_empty()), "{once:?}");
    assert_ne!(ids[0], ids[1]);
    assert_eq!(user_messages(&world, &s).await, once, "the same ids again");
}
