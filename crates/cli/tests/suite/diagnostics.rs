//! Diagnostics a user can act on (issue 36): `ferrite doctor` fails when the default model's
//! provider is down or refuses the key and says why in words; a config parse error keeps
//! toml's caret diagram; `ferrite login` checks the key.

use ferrite_test_support::fake_provider::FakeProvider;
use serde_json::Value;

use super::common::*;
use super::headless::{Invocation, text};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

/// A base URL where nothing listens.
fn dead_url() -> String {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", dead.local_addr().unwrap())
}

fn anthropic_at(base: &str) -> Vec<(String, String)> {
    vec![
        ("OLLAMA_HOST".into(), dead_url()),
        ("ANTHROPIC_BASE_URL".into(), base.to_owned()),
        ("ANTHROPIC_API_KEY".into(), "sk-test".into()),
        ("FERRITE_MODEL".into(), MODEL.into()),
    ]
}

#[test]
fn doctor_fails_when_the_default_models_provider_is_down_and_says_why() {
    let world = World::new();
    let env = anthropic_at(&dead_url());
    let out = Invocation::new(&world, &["doctor"], &env).run_blocking();
    let report = text(&out.stdout);
    assert!(!out.status.success(), "{report}");
    assert!(!report.contains("All good"), "{report}");
    let line = report
        .lines()
        .find(|l| l.starts_with("default model:"))
        .unwrap_or_default();
    assert!(
        line.contains("NOT USABLE") && line.contains("connection refused"),
        "{report}"
    );
}

#[tokio::test]
async fn doctor_fails_when_the_key_is_rejected_and_not_for_providers_never_set_up() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    fake.refuse_listings(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    );
    let env = anthropic_at(&fake.base_url());
    let out = Invocation::new(&world, &["doctor"], &env).run().await;
    let report = text(&out.stdout);
    assert!(!out.status.success(), "{report}");
    assert!(
        report.contains("default model: anthropic/claude-sonnet-4-5 — NOT USABLE")
            && report.contains("the key was rejected (HTTP 401)"),
        "{report}"
    );
    assert!(report.contains("1 problem(s) found."), "{report}");

    // The provider answers: all good, though openai was never set up.
    fake.set_openai_models(&[("claude-sonnet-4-5", None)]);
    let out = Invocation::new(&world, &["doctor"], &env).run().await;
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("All good."), "{report}");
    assert!(
        report.contains("openai ") && report.contains("not set up"),
        "{report}"
    );
}

#[test]
fn a_config_parse_error_keeps_the_caret_diagram_on_its_lines() {
    let world = World::new();
    world.write_config("model = \"a/b\"\nmax_mode = \n");
    let out = Invocation::new(&world, &["doctor"], &[]).run_blocking();
    let report = text(&out.stdout);
    assert!(report.contains("config: ERROR"), "{report}");
    let lines: Vec<&str> = report.lines().collect();
    let quoted = lines
        .iter()
        .position(|l| l.starts_with("2 | max_mode ="))
        .unwrap_or_else(|| panic!("the faulty line on its own: {report}"));
    assert!(lines[quoted + 1].trim_end().ends_with('^'), "{report}");
    let out = Invocation::new(&world, &["run", "hi"], &[]).run_blocking();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.lines().any(|l| l.starts_with("2 | max_mode =")),
        "{stderr}"
    );
}

fn stored_key(world: &World) -> Option<String> {
    let file = std::fs::read(world.home().join("credentials.json")).ok()?;
    let creds: Value = serde_json::from_slice(&file).ok()?;
    creds["providers"]["openai"]["api_key"]
        .as_str()
        .map(str::to_owned)
}

#[tokio::test]
async fn login_checks_the_key_when_it_can_and_stores_it_when_offline() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let at = |base: String| vec![("OPENAI_BASE_URL".to_owned(), format!("{base}/v1"))];
    let login = |env: Vec<(String, String)>, key: &str| {
        Invocation::new(&world, &["login", "openai"], &env).stdin(&format!("{key}\n"))
    };

    fake.set_openai_models(&[("gpt-5", None)]);
    let out = login(at(fake.base_url()), "sk-good").run().await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("accepted"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(stored_key(&world).as_deref(), Some("sk-good"));
    let listing = &fake.listing_requests()[0];
    assert_eq!(listing.header("authorization"), Some("Bearer sk-good"));

    fake.refuse_listings(
        401,
        r#"{"error":{"message":"Incorrect API key","code":"invalid_api_key"}}"#,
    );
    let out = login(at(fake.base_url()), "sk-bad").run().await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("rejected the key") && stderr.contains("HTTP 401"),
        "{stderr}"
    );
    assert_eq!(
        stored_key(&world).as_deref(),
        Some("sk-good"),
        "not replaced"
    );

    let out = login(at(dead_url()), "sk-offline").run().await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Could not check the key") && stderr.contains("connection refused"),
        "{stderr}"
    );
    assert_eq!(stored_key(&world).as_deref(), Some("sk-offline"));
}
