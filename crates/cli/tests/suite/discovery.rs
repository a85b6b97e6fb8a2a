//! Model discovery (issue 10): Ollama-style and OpenAI-style listings reach the `model`
//! option in the background; `session/new` never waits for them; `ferrite models` and
//! `ferrite doctor` ask the providers themselves.

use std::process::Command;
use std::time::{Duration, Instant};

use ferrite_test_support::fake_provider::FakeProvider;
use ferrite_test_support::updates;
use serde_json::{Value, json};

use super::common::*;

fn model_ids(options: &Value) -> Vec<String> {
    options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "model")
        .unwrap()["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap().to_owned())
        .collect()
}

/// An Ollama server and an OpenAI-compatible (vLLM-style) server, configured as `local`.
async fn two_servers(w: &World) -> (FakeProvider, FakeProvider) {
    let ollama = FakeProvider::start().await.unwrap();
    ollama.set_ollama_models(&[("llama3.2:latest", 131_072), ("qwen3-coder:30b", 262_144)]);
    let vllm = FakeProvider::start().await.unwrap();
    vllm.set_openai_models(&[("served/coder", Some(32_768))]);
    w.write_config(&format!(
        "[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\n",
        vllm.base_url()
    ));
    (ollama, vllm)
}

fn env_for(ollama: &FakeProvider) -> Vec<(&'static str, String)> {
    vec![
        ("OLLAMA_HOST", ollama.base_url()),
        ("FERRITE_MODEL", "ollama/llama3.2:latest".to_owned()),
    ]
}

#[tokio::test]
async fn listed_models_reach_the_model_option_after_discovery() {
    let w = World::new();
    let (ollama, vllm) = two_servers(&w).await;
    let env = env_for(&ollama);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut c = w.spawn_env(&env);
    c.initialize().await;
    let r = c.new_session(&w.ws()).await;
    let s = sid(&r);
    // Nothing cached yet: only the current model is offered at first.
    assert!(!model_ids(&r["configOptions"]).contains(&"local/served/coder".to_owned()));
    let update = c
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "session/update"
                && m["params"]["update"]["sessionUpdate"] == "config_option_update"
        })
        .await
        .expect("config_option_update after discovery");
    assert_eq!(update["params"]["sessionId"], s);
    let ids = model_ids(&update["params"]["update"]["configOptions"]);
    for id in [
        "ollama/llama3.2:latest",
        "ollama/qwen3-coder:30b",
        "local/served/coder",
    ] {
        assert!(ids.contains(&id.to_owned()), "{id} in {ids:?}");
    }
    let asked: Vec<(String, String)> = ollama
        .listing_requests()
        .iter()
        .map(|r| (r.method.clone(), r.path.clone()))
        .collect();
    assert!(
        asked.contains(&("GET".into(), "/api/tags".into())),
        "{asked:?}"
    );
    assert!(
        asked.contains(&("POST".into(), "/api/show".into())),
        "{asked:?}"
    );
    assert_eq!(vllm.listing_requests()[0].path, "/v1/models");

    // A later agent starts from the cache: the models and their windows are known at once.
    let mut c = w.spawn_env(&env);
    let init = c.initialize().await;
    let listed: Vec<&Value> = init["_meta"]["ferrite"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["source"] == "listing")
        .collect();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(listed.iter().all(|m| m["available"] == true));
    let id = c
        .send_request("session/new", json!({"cwd": w.ws(), "mcpServers": []}))
        .await;
    let (_, answer) = c.collect_until_answer(&id).await;
    let r = answer.ok();
    assert!(model_ids(&r["configOptions"]).contains(&"local/served/coder".to_owned()));
    let after = c.drain(QUIET).await;
    let usage = updates(&after)
        .into_iter()
        .find(|(k, _)| k == "usage_update")
        .expect("usage_update after session/new")
        .1;
    assert_eq!(usage["size"], 131_072, "the window Ollama reported");
}

#[tokio::test]
async fn session_new_does_not_wait_for_a_provider_that_does_not_answer() {
    let w = World::new();
    // Accepts connections (the kernel does) but never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    w.write_config(&format!(
        "[providers.silent]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
    ));
    let mut c = w.spawn_env(&[("FERRITE_DISCOVERY_TIMEOUT_MS", "5000")]);
    c.initialize().await;
    for _ in 0..3 {
        let started = Instant::now();
        c.new_session(&w.ws()).await;
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "session/new waited {:?}",
            started.elapsed()
        );
    }
    drop(silent);
}

#[tokio::test]
async fn ferrite_models_lists_usable_models_with_window_and_source() {
    let w = World::new();
    let (ollama, _vllm) = two_servers(&w).await;
    let mut env = env_for(&ollama);
    env.push(("ANTHROPIC_API_KEY", "k".to_owned()));
    let (ok, out) = run_command(&w, "models", &env).await;
    assert!(ok, "{out}");
    let line = |id: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no {id} in {out}"))
            .to_owned()
    };
    let l = line("ollama/qwen3-coder:30b");
    assert!(l.contains("262144") && l.ends_with("listing"), "{l}");
    let l = line("local/served/coder");
    assert!(l.contains("32768") && l.ends_with("listing"), "{l}");
    let l = line("anthropic/claude-sonnet-4-5");
    assert!(l.contains("200000") && l.ends_with("catalog"), "{l}");
    assert!(!out.contains("openai/gpt-5 "), "no key for openai: {out}");
    assert!(out.contains("openai: no key"), "{out}");
}

#[tokio::test]
async fn doctor_contacts_each_provider_and_says_what_happened() {
    let w = World::new();
    let vllm = FakeProvider::start().await.unwrap();
    vllm.set_openai_models(&[("served/coder", None)]);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    w.write_config(&format!(
        "[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\napi_key_env = \"LOCAL_KEY\"\n[providers.gone]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:{dead_port}/v1\"\n",
        vllm.base_url()
    ));
    let env = [
        ("LOCAL_KEY", "local-secret".to_owned()),
        ("OLLAMA_HOST", format!("127.0.0.1:{dead_port}")),
    ];
    let (_, out) = run_command(&w, "doctor", &env).await;
    let line = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {out}"))
            .to_owned()
    };
    let l = line("local");
    assert!(
        l.contains("reachable, key accepted, 1 models listed"),
        "{l}"
    );
    assert!(line("gone").contains("UNREACHABLE"), "{out}");
    assert!(line("anthropic").contains("no key"), "{out}");
    assert_eq!(
        vllm.listing_requests()[0].header("authorization"),
        Some("Bearer local-secret")
    );
}

/// `ferrite <command>` in the world's workspace with only `env` (and its FERRITE_HOME), run off
/// the async runtime so the fake servers keep answering: whether it succeeded, and its stdout.
async fn run_command(w: &World, command: &'static str, env: &[(&str, String)]) -> (bool, String) {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let (home, ws) = (w.home().to_owned(), w.ws());
    tokio::task::spawn_blocking(move || {
        let out = Command::new(BIN)
            .arg(command)
            .current_dir(ws)
            .env_clear()
            .env("FERRITE_HOME", home)
            .envs(env)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    })
    .await
    .unwrap()
}
