//! What a cloned repository's `.ferrite/config.toml` may choose: a model only among those the
//! user config allows, and never without the user being told.

use std::time::Duration;

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

const USER_CONFIG: &str = "model = \"anthropic/claude-sonnet-4-5\"\n\
                           workspace_models = [\"anthropic/claude-haiku-4-5\"]\n";

/// The agent with the fake provider's keys and no FERRITE_MODEL: the config chooses.
fn spawn(world: &World, fake: &FakeProvider) -> AcpClient {
    let env = provider_env(fake, Api::Anthropic)
        .into_iter()
        .filter(|(k, _)| k != "FERRITE_MODEL")
        .collect();
    world.spawn_acp(env)
}

fn workspace_config(world: &World, text: &str) {
    let dir = world.ws().join(".ferrite");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

/// The notice (a `session/update`) whose text contains `needle`.
async fn notice(c: &mut AcpClient, needle: &str) -> String {
    let msg = c
        .wait_for(Duration::from_secs(5), |m| {
            m["method"] == "session/update" && m["params"].to_string().contains(needle)
        })
        .await
        .unwrap_or_else(|| panic!("no notice with {needle}"));
    msg["params"].to_string()
}

#[tokio::test]
async fn a_workspace_cannot_choose_a_model_the_user_config_does_not_allow() {
    let world = World::new();
    world.write_config("model = \"anthropic/claude-sonnet-4-5\"\n");
    workspace_config(
        &world,
        "model = \"anthropic/claude-opus-4-1\"\n[subagent]\nmodel = \"anthropic/claude-opus-4-1\"\n",
    );
    let fake = FakeProvider::start().await.unwrap();
    let mut c = spawn(&world, &fake);
    c.initialize().await;
    let res = c.new_session(&world.ws()).await;
    assert_eq!(
        option_value(&res["configOptions"], "model"),
        "anthropic/claude-sonnet-4-5",
        "the user's model"
    );
    let text = notice(&mut c, "claude-opus-4-1").await;
    assert!(text.contains("ignored"), "{text}");

    // Neither the turn nor its subagent goes to the model the workspace named.
    let task = json!({"description": "look", "prompt": "Say hi."}).to_string();
    fake.push(Script::new().tool_call("t1", "task", task));
    fake.push(Script::new().text("hi"));
    fake.push(Script::new().text("done"));
    let s = sid(&res);
    let id = c
        .send_request("session/prompt", text_prompt(&s, "delegate"))
        .await;
    assert_eq!(c.wait_answer(&id).await.ok()["stopReason"], "end_turn");
    let models: Vec<Value> = fake
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(
        models,
        [
            "claude-sonnet-4-5",
            "claude-sonnet-4-5",
            "claude-sonnet-4-5"
        ]
    );
}

#[tokio::test]
async fn a_workspace_may_choose_an_allowed_model_and_the_user_is_told() {
    let world = World::new();
    world.write_config(USER_CONFIG);
    workspace_config(
        &world,
        "model = \"anthropic/claude-haiku-4-5\"\nworkspace_models = [\"anthropic/*\"]\n",
    );
    let fake = FakeProvider::start().await.unwrap();
    let mut c = spawn(&world, &fake);
    c.initialize().await;
    let res = c.new_session(&world.ws()).await;
    assert_eq!(
        option_value(&res["configOptions"], "model"),
        "anthropic/claude-haiku-4-5"
    );
    let text = notice(&mut c, "chosen by this workspace").await;
    assert!(text.contains("claude-haiku-4-5"), "{text}");
    // Only the user config says which models a workspace may choose.
    let text = notice(&mut c, "workspace_models").await;
    assert!(text.contains("ignored"), "{text}");
}
