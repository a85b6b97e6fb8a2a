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
    // Discovery would wait for minutes: answering within the hang guard is not waiting.
    let mut c = w.spawn_env(&[("FERRITE_DISCOVERY_TIMEOUT_MS", "600000")]);
    c.initialize().await;
    for _ in 0..3 {
        let started = Instant::now();
        c.new_session(&w.ws()).await;
        assert!(
            started.elapsed() < HANG_GUARD,
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

/// `session/new` `n` times; the largest answer line. (How long they take is measured by
/// `bench/startup.py`, not asserted here.)
async fn session_news(
    c: &mut ferrite_test_support::AcpClient,
    cwd: &std::path::Path,
    n: usize,
) -> usize {
    let mut largest = 0;
    for _ in 0..n {
        let id = c
            .send_request("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        let answer = c
            .wait_for(Duration::from_secs(60), |m| m["id"] == id)
            .await
            .expect("an answer to session/new");
        assert!(answer["result"]["sessionId"].is_string(), "{answer:.300}");
        largest = largest.max(answer.to_string().len());
    }
    largest
}

/// Regression (issue 28): a provider listing 40,000 models made every later `session/new` take
/// 8.9 s (a quadratic merge) and answer 10 MB, and the cache kept it so. A listing is cut to
/// `MAX_LISTED` models and merged in linear time.
#[tokio::test]
async fn a_listing_of_40000_models_leaves_session_new_fast_and_small() {
    let w = World::new();
    let vllm = FakeProvider::start().await.unwrap();
    let names: Vec<String> = (0..40_000)
        .map(|i| format!("served/model-{i:05}"))
        .collect();
    let models: Vec<(&str, Option<u64>)> =
        names.iter().map(|n| (n.as_str(), Some(32_768))).collect();
    vllm.set_openai_models(&models);
    w.write_config(&format!(
        "[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\n",
        vllm.base_url()
    ));
    let env = [("FERRITE_MODEL", "local/served/model-00000")];
    let mut c = w.spawn_env(&env);
    c.initialize().await;
    c.new_session(&w.ws()).await;
    let update = c
        .wait_for(HANG_GUARD, |m| {
            m["method"] == "session/update"
                && m["params"]["update"]["sessionUpdate"] == "config_option_update"
        })
        .await
        .expect("config_option_update after discovery");
    let ids = model_ids(&update["params"]["update"]["configOptions"]);
    assert!(
        ids.len() <= ferrite_core::catalog::MAX_LISTED + 1,
        "{} models offered",
        ids.len()
    );
    assert!(ids.contains(&"local/served/model-00999".to_owned()));
    assert!(!ids.contains(&"local/served/model-01000".to_owned()));
    let largest = session_news(&mut c, &w.ws(), 5).await;
    assert!(largest < 256 * 1024, "an answer of {largest} bytes");

    // A new agent starts from the cache the first one wrote.
    let mut c = w.spawn_env(&[("FERRITE_DISCOVERY", "off"), env[0]]);
    c.initialize().await;
    let largest = session_news(&mut c, &w.ws(), 5).await;
    assert!(largest < 256 * 1024, "an answer of {largest} bytes");
}

/// A model cache written by hand with `entries` models after some invalid ids.
fn hostile_cache(w: &World, base: &str, entries: usize) {
    let mut models: Vec<Value> = ["../../../../etc/passwd", "/abs", "bidi\u{202e}txt", "a b"]
        .iter()
        .map(|id| json!({ "id": id }))
        .collect();
    models.extend((0..entries).map(|i| json!({ "id": format!("m{i}"), "context_window": 8192 })));
    let cache =
        json!({"providers": {"local": {"base_url": base, "fetched_at": 1, "models": models}}});
    std::fs::create_dir_all(w.home().join("cache")).unwrap();
    std::fs::write(w.home().join("cache/models.json"), cache.to_string()).unwrap();
}

/// The cache is read like a listing: one written by hand with 40,000 entries and invalid ids
/// is cut and checked; one of 200,000 (5 MB) is not read at all. `session/new` stays fast.
#[tokio::test]
async fn a_hostile_model_cache_is_cut_and_checked() {
    let w = World::new();
    let base = "http://127.0.0.1:9/v1";
    w.write_config(&format!(
        "[providers.local]\napi = \"openai-chat\"\nbase_url = \"{base}\"\n"
    ));
    hostile_cache(&w, base, 40_000);
    let mut c = w.spawn_env(&[("FERRITE_DISCOVERY", "off")]);
    c.initialize().await;
    let r = c.new_session(&w.ws()).await;
    let ids = model_ids(&r["configOptions"]);
    assert!(ids.contains(&"local/m0".to_owned()), "{ids:?}");
    assert!(
        ids.len() <= ferrite_core::catalog::MAX_LISTED + 1,
        "{}",
        ids.len()
    );
    for bad in ["passwd", "/abs", "\u{202e}", "a b"] {
        assert!(
            !ids.iter().any(|id| id.contains(bad)),
            "{bad} in the options"
        );
    }
    let largest = session_news(&mut c, &w.ws(), 5).await;
    assert!(largest < 256 * 1024, "an answer of {largest} bytes");

    hostile_cache(&w, base, 200_000);
    let largest = session_news(&mut c, &w.ws(), 5).await;
    assert!(largest < 16 * 1024, "an answer of {largest} bytes");
}

/// Regression (issue 28): with no key and no `model`, the first model a local server listed
/// becomes the default, so a listed `../../../../etc/passwd` did. Listed ids are checked: no
/// path segments, control or invisible characters, whitespace, or more than 256 bytes.
#[tokio::test]
async fn a_listed_id_that_is_a_path_never_becomes_a_model() {
    let w = World::new();
    let ollama = FakeProvider::start().await.unwrap();
    ollama.set_ollama_models(&[
        ("../../../../etc/passwd", 4096),
        ("evil\u{202e}gpj.exe", 4096),
        ("llama3.2:latest", 131_072),
    ]);
    let env = [("OLLAMA_HOST", ollama.base_url())];
    let (ok, out) = run_command(&w, "models", &env).await;
    assert!(ok, "{out}");
    assert!(out.contains("ollama/llama3.2:latest"), "{out}");
    assert!(
        !out.contains("passwd") && !out.contains('\u{202e}'),
        "{out}"
    );

    let host = ollama.base_url();
    let mut c = w.spawn_bare(&[("OLLAMA_HOST", host.as_str()), ("FERRITE_DISCOVERY", "off")]);
    c.initialize().await;
    let r = c.new_session(&w.ws()).await;
    assert_eq!(
        option_value(&r["configOptions"], "model"),
        "ollama/llama3.2:latest"
    );
    let ids = model_ids(&r["configOptions"]);
    assert!(
        !ids.iter()
            .any(|id| id.contains("passwd") || id.contains('\u{202e}')),
        "{ids:?}"
    );
}

/// Model ids from config are the user's own and are accepted as they are, but what shows them
/// (the `model` picker's names, `ferrite models`) escapes display-changing characters.
#[tokio::test]
async fn model_ids_are_shown_with_display_changing_characters_escaped() {
    let w = World::new();
    w.write_config(
        "[providers.local]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         models = [{ id = \"evil\u{202e}gpj.exe\" }, { id = \"plain\" }]\n",
    );
    let env = [
        ("FERRITE_DISCOVERY", "off".to_owned()),
        ("FERRITE_MODEL", "local/plain".to_owned()),
    ];
    let (ok, out) = run_command(&w, "models", &env).await;
    assert!(ok, "{out}");
    assert!(out.contains("local/evil\\u{202e}gpj.exe "), "{out}");
    assert!(!out.contains('\u{202e}'), "{out}");

    let mut c = w.spawn_env(&[
        ("FERRITE_DISCOVERY", "off"),
        ("FERRITE_MODEL", "local/plain"),
    ]);
    c.initialize().await;
    let r = c.new_session(&w.ws()).await;
    let model = r["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "model")
        .unwrap()
        .clone();
    let evil = model["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["value"] == "local/evil\u{202e}gpj.exe")
        .expect("the id itself is the value the editor sends back");
    let name = evil["name"].as_str().unwrap();
    assert!(
        name.contains("evil\\u{202e}gpj.exe") && !name.contains('\u{202e}'),
        "{name}"
    );
}
