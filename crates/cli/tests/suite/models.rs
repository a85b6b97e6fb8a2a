//! Open model ids, per-model output limits, model-not-found, cost (issue 10), against the fake
//! provider through the real binary.

use std::time::Duration;

use ferrite_test_support::fake_provider::{Reply, Script};
use ferrite_test_support::updates;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, rig_with};

/// The `usage_update`s among `messages`, in order.
fn usage_updates(messages: &[Value]) -> Vec<Value> {
    updates(messages)
        .into_iter()
        .filter(|(k, _)| k == "usage_update")
        .map(|(_, u)| u)
        .collect()
}

#[tokio::test]
async fn an_uncatalogued_model_works_on_each_wire_api() {
    // Names no catalog knows, with the `/` and `:` real names have: they go out verbatim, and
    // with no known limit the OpenAI APIs get no output limit at all.
    let cases = [
        (
            Api::Anthropic,
            "anthropic/claude-future-9",
            "claude-future-9",
        ),
        (Api::Responses, "openai/gpt-future", "gpt-future"),
        (
            Api::Chat,
            "openai-chat/vendor/coder:30b-q4",
            "vendor/coder:30b-q4",
        ),
    ];
    for (api, id, name) in cases {
        let mut r = rig_with(api, &[("FERRITE_MODEL", id)]).await;
        r.fake.push(Script::new().text("fine").usage(10, 2, 0));
        let (before, answer) = r.prompt("hi").await;
        assert_eq!(answer["stopReason"], "end_turn", "{id}");
        assert_eq!(answer["usage"]["totalTokens"], 12, "{id}");
        assert_eq!(agent_text_of(&before), "fine", "{id}");
        let body = &r.requests()[0].body;
        assert_eq!(body["model"], name, "{id}");
        match api {
            // The Messages API requires max_tokens: the documented default.
            Api::Anthropic => assert_eq!(body["max_tokens"], 8192),
            Api::Responses => assert!(body.get("max_output_tokens").is_none(), "{body}"),
            Api::Chat => assert!(body.get("max_tokens").is_none(), "{body}"),
        }
        // Unknown models default to a 128K window (Anthropic: 200K).
        let size = usage_updates(&before).last().unwrap()["size"].clone();
        let window = if api == Api::Anthropic {
            200_000
        } else {
            128_000
        };
        assert_eq!(size, window, "{id}");
    }
}

fn agent_text_of(messages: &[Value]) -> String {
    ferrite_test_support::agent_text(messages)
}

#[tokio::test]
async fn max_tokens_never_exceeds_the_models_limit() {
    // Catalog: gpt-4o takes at most 16,384 output tokens.
    let mut r = rig_with(Api::Chat, &[]).await;
    r.fake.push(Script::new().text("a"));
    r.prompt("x").await;
    assert_eq!(r.requests()[0].body["max_tokens"], 16_384);

    // Config: a local model with a small window and output limit; then one the context has
    // almost filled, which gets only what the window leaves.
    let w = World::new();
    let fake = ferrite_test_support::fake_provider::FakeProvider::start()
        .await
        .unwrap();
    w.write_config(&format!(
        "[compaction]\nthreshold = 0.99\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\nmodels = [{{ id = \"small\", context_window = 5000, max_output_tokens = 1000 }}]\n",
        fake.base_url()
    ));
    let mut c = w.spawn_env(&[("FERRITE_MODEL", "local/small")]);
    c.initialize().await;
    let s = sid(&c.new_session(&w.ws()).await);
    fake.push(Script::new().text("a").usage(4500, 10, 0));
    fake.push(Script::new().text("b").usage(4600, 10, 0));
    c.request("session/prompt", text_prompt(&s, "one"))
        .await
        .ok();
    c.request("session/prompt", text_prompt(&s, "two"))
        .await
        .ok();
    let reqs = fake.requests();
    assert_eq!(reqs[0].body["max_tokens"], 1000);
    assert_eq!(reqs[1].body["max_tokens"], 5000 - 4510);
}

#[tokio::test]
async fn a_model_the_provider_does_not_know_is_a_configuration_error() {
    let mut r = rig_with(Api::Responses, &[("FERRITE_MODEL", "openai/gpt-typo")]).await;
    r.fake.push(Reply::error(
        404,
        r#"{"error":{"message":"The model `gpt-typo` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
    ));
    let (before, answer) = r.prompt("hi").await;
    assert_eq!(
        answer["_meta"]["ferrite"]["turnFailure"],
        json!({"terminalStatus": "configuration_error", "errorKind": "model_not_found"})
    );
    let text = agent_text_of(&before);
    assert!(
        text.contains("gpt-typo") && text.contains("FERRITE_MODEL"),
        "names the model and where it was set: {text}"
    );
    assert_eq!(r.requests().len(), 1, "not retried");
}

#[tokio::test]
async fn open_ids_everywhere_a_model_is_chosen_and_unknown_providers_are_refused() {
    let mut r = rig_with(Api::Chat, &[]).await;
    let sid = r.sid.clone();
    let set = |model: &str| json!({"sessionId": sid, "configId": "model", "value": model});
    let a = r
        .client
        .request("session/set_config_option", set("openai-chat/org/model:7b"))
        .await
        .ok();
    assert_eq!(
        option_value(&a["configOptions"], "model"),
        "openai-chat/org/model:7b"
    );
    let a = r
        .client
        .request("session/set_config_option", set("nowhere/model"))
        .await;
    assert_eq!(a.code(), -32602);
    assert!(
        a.message().contains("nowhere") && a.message().contains("anthropic, openai"),
        "lists the known providers: {}",
        a.message()
    );
    let a = r
        .client
        .request(
            "session/set_model",
            json!({"sessionId": sid, "modelId": "openai-chat/other:1b"}),
        )
        .await
        .ok();
    assert_eq!(
        option_value(&a["configOptions"], "model"),
        "openai-chat/other:1b"
    );
    r.fake.push(Script::new().text("ok"));
    let (_, answer) = r
        .prompt_with(json!({"sessionId": sid, "prompt": [{"type": "text", "text": "x"}], "_meta": {"model": "openai-chat/per/turn:q8"}}))
        .await;
    assert_eq!(answer["stopReason"], "end_turn");
    assert_eq!(r.requests()[0].body["model"], "per/turn:q8");
    let a = r
        .client
        .request("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": "x"}], "_meta": {"model": "nowhere/x"}}))
        .await;
    assert_eq!(a.code(), -32602);
}

#[tokio::test]
async fn cost_is_reported_and_survives_a_reload() {
    let mut r = rig_with(Api::Anthropic, &[]).await;
    // Claude Sonnet 4.5: $3 in, $15 out per million; the cached part at $0.30.
    r.fake
        .push(Script::new().text("a").usage(1_000_000, 100_000, 500_000));
    let (before, _) = r.prompt("spend").await;
    let all = usage_updates(&before);
    // The first comes right after session/new: nothing used, nothing spent yet.
    assert_eq!(all[0]["used"], 0);
    assert_eq!(all[0]["cost"], json!({"amount": 0.0, "currency": "USD"}));
    let last = all.last().unwrap();
    let expected = 0.5 * 3.0 + 0.5 * 0.3 + 0.1 * 15.0;
    let amount = last["cost"]["amount"].as_f64().unwrap();
    assert!((amount - expected).abs() < 1e-9, "{amount} vs {expected}");
    assert_eq!(last["cost"]["currency"], "USD");

    // Another process loads the session: the meter is rebuilt from the log.
    r.client.close_stdin().await;
    r.client.wait_exit(Duration::from_secs(5)).await.unwrap();
    let env: Vec<(String, String)> = super::turns::provider_env(&r.fake, Api::Anthropic);
    let mut c = r.world.spawn_acp(env.clone());
    c.initialize().await;
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": r.sid, "cwd": r.world.ws(), "mcpServers": []}),
        )
        .await;
    let (_, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    let after = c.drain(QUIET).await;
    let usage = usage_updates(&after);
    assert_eq!(usage.len(), 1, "{after:?}");
    assert_eq!(usage[0]["used"], 1_100_000);
    let amount = usage[0]["cost"]["amount"].as_f64().unwrap();
    // Plus the generated title's request, a few hundred tokens (`titles.rs` checks its cost),
    // when it was written before the first process ended.
    assert!(
        amount >= expected - 1e-9 && amount - expected < 0.01,
        "{amount}"
    );

    let out = std::process::Command::new(BIN)
        .args(["sessions", "show", &r.sid])
        .env_clear()
        .env("FERRITE_HOME", r.world.home())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("cost ${expected:.4}")), "{text}");
}

#[tokio::test]
async fn an_effort_the_model_refuses_is_reported_as_such() {
    // Nothing is known about this model, so the effort is passed through; the server refuses.
    let mut r = rig_with(Api::Chat, &[("FERRITE_MODEL", "openai-chat/plain-model")]).await;
    r.client
        .request(
            "session/set_config_option",
            json!({"sessionId": r.sid, "configId": "reasoning_effort", "value": "high"}),
        )
        .await
        .ok();
    r.fake.push(Reply::error(
        400,
        r#"{"error":{"message":"Unrecognized request argument supplied: reasoning_effort","type":"invalid_request_error"}}"#,
    ));
    let (before, answer) = r.prompt("hi").await;
    assert_eq!(r.requests()[0].body["reasoning_effort"], "high");
    assert_eq!(
        answer["_meta"]["ferrite"]["turnFailure"]["terminalStatus"],
        "provider_error"
    );
    let text = agent_text_of(&before);
    assert!(
        text.contains("reasoning effort `high`") && text.contains("default"),
        "{text}"
    );
}

#[tokio::test]
async fn ferrite_run_takes_an_open_model_id() {
    let w = World::new();
    let fake = ferrite_test_support::fake_provider::FakeProvider::start()
        .await
        .unwrap();
    fake.push(Script::new().text("from an unlisted model"));
    let env = super::turns::provider_env(&fake, Api::Chat);
    let (home, ws) = (w.home().to_owned(), w.ws());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(BIN)
            .args(["run", "--model", "openai-chat/lab/unlisted:2b", "hi"])
            .current_dir(ws)
            .env_clear()
            .env("FERRITE_HOME", home)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("from an unlisted model"));
    assert_eq!(fake.requests()[0].body["model"], "lab/unlisted:2b");
}
