//! Images the model can see: `read` of an image file attaches it, in each wire API's own form.

use ferrite_test_support::fake_provider::Script;
use ferrite_test_support::updates;
use serde_json::json;

use super::turns::{ALL, Api, rig};

/// A whole 1×1 red PNG.
const PNG: &[u8] = b"\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\x0d\x49\x44\x41\x54\x78\x9c\x63\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99\x3d\x1d\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";

#[tokio::test]
async fn read_of_an_image_reaches_the_model_in_each_api_s_form() {
    let b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
    for api in ALL {
        let mut r = rig(api).await;
        std::fs::write(r.world.ws().join("shot.png"), PNG).unwrap();
        r.fake
            .push(Script::new().tool_call("r1", "read", json!({"path": "shot.png"}).to_string()));
        r.fake.push(Script::new().text("a red dot"));
        let (before, answer) = r.prompt("what is in shot.png?").await;
        assert_eq!(answer["stopReason"], "end_turn", "{api:?}");
        let done = updates(&before)
            .into_iter()
            .rev()
            .find(|(k, u)| k == "tool_call_update" && u["toolCallId"] == "r1")
            .unwrap()
            .1;
        assert_eq!(
            done["content"][0]["content"]["type"], "image",
            "{api:?}: {done}"
        );
        assert_eq!(done["content"][0]["content"]["data"], b64, "{api:?}");

        let body = r.requests().last().unwrap().body.clone();
        let text = body.to_string();
        assert!(
            text.contains(b64),
            "{api:?}: the image data reaches the model"
        );
        let marker = match api {
            Api::Anthropic => r#""type":"image""#,
            Api::Responses => r#""type":"input_image""#,
            Api::Chat => r#""type":"image_url""#,
        };
        assert!(text.contains(marker), "{api:?}: {text}");
        assert!(text.contains("image/png"), "{api:?}");
    }
}

#[tokio::test]
async fn a_file_named_like_an_image_that_is_not_one_is_refused() {
    let mut r = rig(Api::Anthropic).await;
    std::fs::write(r.world.ws().join("fake.png"), "just text").unwrap();
    r.fake
        .push(Script::new().tool_call("r1", "read", json!({"path": "fake.png"}).to_string()));
    r.fake.push(Script::new().text("ok"));
    r.prompt("read it").await;
    let text = r.requests().last().unwrap().body.to_string();
    assert!(text.contains("its content is not one"), "{text}");
}

#[tokio::test]
async fn a_model_that_takes_no_images_gets_a_clear_text_instead() {
    use super::common::*;
    use ferrite_test_support::fake_provider::FakeProvider;
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    world.write_config(&format!(
        "[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\nmodels = [{{ id = \"textonly\" }}]\n",
        fake.base_url()
    ));
    let mut client = world.spawn_acp(vec![("FERRITE_MODEL".into(), "local/textonly".into())]);
    client.initialize().await;
    let sid = sid(&client.new_session(&world.ws()).await);
    std::fs::write(world.ws().join("shot.png"), PNG).unwrap();
    fake.push(Script::new().tool_call("r1", "read", json!({"path": "shot.png"}).to_string()));
    fake.push(Script::new().text("I cannot see it"));
    let id = client
        .send_request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [
                {"type": "text", "text": "what is in these?"},
                {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="}
            ]}),
        )
        .await;
    let (shown, answer) = client.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    // The user is told too, not only the model (issue 23).
    let told = ferrite_test_support::agent_text(&shown);
    assert!(
        told.contains("local/textonly does not take images"),
        "{told}"
    );
    let text = fake.requests().last().unwrap().body.to_string();
    assert!(!text.contains("image_url"), "no image is sent: {text}");
    assert!(text.contains("does not take images"), "{text}");
    assert!(
        text.contains("was left out"),
        "the prompt's image became a note: {text}"
    );
}

/// Regression (issue 28): one `read` of a crafted image took the agent to 821 MB. Files whose
/// header claims more pixels than Ferrite decodes are refused before decoding, with a reason the
/// model can pass on, and the agent's memory stays where it was.
#[tokio::test]
async fn an_image_too_large_to_decode_is_refused_from_its_header() {
    use ferrite_test_support::hostile_images::{
        gif_with_screen, png_claiming, png_of_zeros, webp_claiming,
    };
    let mut r = rig(Api::Anthropic).await;
    let files: [(&str, Vec<u8>); 4] = [
        ("claims.png", png_claiming(30_000, 30_000)),
        ("bomb.png", png_of_zeros(10_000, 10_000)),
        ("screen.gif", gif_with_screen(11_000, 11_000)),
        ("canvas.webp", webp_claiming(30_000, 30_000)),
    ];
    let mut calls = Vec::new();
    for (i, (name, bytes)) in files.iter().enumerate() {
        std::fs::write(r.world.ws().join(name), bytes).unwrap();
        calls.push((format!("r{i}"), json!({ "path": name }).to_string()));
    }
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "read", args.as_str()))
        .collect();
    r.fake.push(Script::new().parallel_tool_calls(&calls));
    r.fake.push(Script::new().text("too big"));
    let (_, answer) = r.prompt("look at these").await;
    assert_eq!(answer["stopReason"], "end_turn");
    let body = r.requests().last().unwrap().body.clone();
    let results: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].to_string())
        .collect();
    assert_eq!(results.len(), 4, "{results:?}");
    for (text, (name, _)) in results.iter().zip(&files) {
        assert!(
            text.contains("megapixels") && text.contains("not attached"),
            "{name}: {text}"
        );
    }
    let peak = super::common::peak_rss_kb(r.client.pid().unwrap());
    assert!(peak < 150 * 1024, "peak RSS {peak} kB");
}

/// Regression (issue 28): four reads at once took the agent to 2.5 GB. Images within the limits
/// are decoded one at a time across the process: four sessions reading a 2000×2000 image
/// (16 MB decoded, about 70 MB at the peak of scaling it down) at once stay near one decode's
/// memory.
#[tokio::test]
async fn image_decodes_take_turns_across_sessions() {
    use super::common::*;
    use ferrite_test_support::fake_provider::FakeProvider;
    use ferrite_test_support::hostile_images::png_of_zeros;
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut client = world.spawn_acp(super::turns::provider_env(&fake, Api::Anthropic));
    client.initialize().await;
    std::fs::write(world.ws().join("big.png"), png_of_zeros(2_000, 2_000)).unwrap();
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(sid(&client.new_session(&world.ws()).await));
    }
    for i in 0..4 {
        fake.push(Script::new().tool_call(
            format!("r{i}"),
            "read",
            json!({"path": "big.png"}).to_string(),
        ));
    }
    for _ in 0..4 {
        fake.push(Script::new().text("seen"));
    }
    let mut prompts = Vec::new();
    for s in &sessions {
        prompts.push(
            client
                .send_request("session/prompt", text_prompt(s, "look"))
                .await,
        );
    }
    for p in &prompts {
        // One after another, each decode takes a few seconds in a debug build.
        let answer = client
            .wait_for(std::time::Duration::from_secs(120), |m| m["id"] == *p)
            .await
            .expect("an answer");
        assert_eq!(answer["result"]["stopReason"], "end_turn");
    }
    let scaled = fake
        .requests()
        .iter()
        .filter(|r| {
            r.body
                .to_string()
                .contains("2000×2000, scaled down to 1568×1568")
        })
        .count();
    assert_eq!(scaled, 4, "every read attached the scaled image");
    let peak = peak_rss_kb(client.pid().unwrap());
    // One decode at a time: about 110 MB; four at once: about 330 MB.
    assert!(peak < 200 * 1024, "peak RSS {peak} kB");
}

/// Issue 23: a model of the built-in `openai-chat` provider (OpenAI's Chat Completions API) has
/// the facts of the same OpenAI model whatever declares or lists it: window, price and images.
/// Declaring it under `[providers.openai-chat]` made `openai-chat/gpt-4o` "unknown", with no
/// cost, and dropped its images.
#[tokio::test]
async fn listed_openai_models_keep_known_facts_and_take_images() {
    use super::common::*;
    use super::turns::{Api, provider_env};
    use ferrite_test_support::fake_provider::FakeProvider;
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    // Declared for `openai-chat`, as a user does to have it listed; nothing said of them.
    world.write_config(
        "[providers.openai-chat]\nmodels = [{ id = \"gpt-4o\" }, { id = \"gpt-4o-2024-08-06\" }]\n",
    );
    let mut env = provider_env(&fake, Api::Chat);
    env.retain(|(k, _)| k != "ANTHROPIC_API_KEY");
    // `ferrite models` asks the servers and caches what they said, as the editor's discovery.
    let out = ferrite_models(&world, &env).await;
    for id in ["openai-chat/gpt-4o ", "openai-chat/gpt-4o-2024-08-06 "] {
        let line = out
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no {id} in {out}"));
        assert!(
            line.contains("128000") && !line.ends_with("default"),
            "{line}"
        );
    }
    let mut client = world.spawn_acp(env);
    let init = client.initialize().await;
    let gpt = init["_meta"]["ferrite"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "openai-chat/gpt-4o")
        .expect("listed")
        .clone();
    assert!(gpt["price"].is_object(), "{gpt}");
    let session = sid(&client.new_session(&world.ws()).await);
    fake.push(Script::new().text("a red dot"));
    let id = client
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="}
            ]}),
        )
        .await;
    let (_, answer) = client.collect_until_answer(&id).await;
    answer.ok();
    let body = fake.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("image_url"),
        "the image reaches gpt-4o: {body}"
    );
}

/// An Ollama model whose `/api/show` says `vision` takes images; one that does not is told so.
#[tokio::test]
async fn an_ollama_model_takes_images_only_when_its_listing_says_vision() {
    use super::common::*;
    use ferrite_test_support::fake_provider::FakeProvider;
    let ollama = FakeProvider::start().await.unwrap();
    ollama.set_ollama_models(&[("llava:7b", 4096), ("qwen3:8b", 4096)]);
    ollama.set_vision_models(&["llava:7b"]);
    let world = World::new();
    let env = vec![
        ("OLLAMA_HOST".to_owned(), ollama.base_url()),
        ("FERRITE_MODEL".to_owned(), "ollama/llava:7b".to_owned()),
    ];
    let out = ferrite_models(&world, &env).await;
    for id in ["ollama/llava:7b ", "ollama/qwen3:8b "] {
        let line = out.lines().find(|l| l.starts_with(id));
        assert!(
            line.is_some_and(|l| l.contains("4096")),
            "{id} listed: {out}"
        );
    }
    let mut client = world.spawn_acp(env);
    client.initialize().await;
    let sid = sid(&client.new_session(&world.ws()).await);
    for (model, sees) in [("ollama/llava:7b", true), ("ollama/qwen3:8b", false)] {
        ollama.push(Script::new().text("ok"));
        let id = client
            .send_request(
                "session/prompt",
                json!({"sessionId": sid, "_meta": {"model": model}, "prompt": [
                    {"type": "text", "text": "look"},
                    {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="}
                ]}),
            )
            .await;
        let (shown, answer) = client.collect_until_answer(&id).await;
        answer.ok();
        let body = ollama.requests().last().unwrap().body.to_string();
        assert_eq!(body.contains("image_url"), sees, "{model}: {body}");
        let told = ferrite_test_support::agent_text(&shown);
        assert_eq!(
            told.contains("does not take images"),
            !sees,
            "{model}: {told}"
        );
    }
}

/// `ferrite models` in the world's workspace, off the test's runtime so that the fake servers on
/// it can answer the discovery it makes.
async fn ferrite_models(world: &super::common::World, env: &[(String, String)]) -> String {
    let mut cmd = std::process::Command::new(super::common::BIN);
    cmd.arg("models")
        .current_dir(world.ws())
        .env_clear()
        .env("FERRITE_HOME", world.home())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
