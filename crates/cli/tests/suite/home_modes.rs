//! FERRITE_HOME holds conversations, keys, rules and copies of the workspace: everything Ferrite
//! creates there is its owner's alone (directories 0700, files 0600), whatever the umask the
//! editor started it with.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::json;

use super::common::*;
use super::permissions::{bash_call, write_call};
use super::turns::{Api, provider_env};

/// A script that starts the agent under `umask 022`, as a desktop session commonly has it.
fn umask_wrapper(dir: &Path) -> PathBuf {
    let path = dir.join("ferrite-umask-022");
    std::fs::write(&path, format!("#!/bin/sh\numask 022\nexec {BIN} \"$@\"\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Every entry under `dir` with its mode, skipping what the test itself put there.
fn modes(dir: &Path, skip: &[PathBuf]) -> Vec<(PathBuf, bool, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if skip.contains(&p) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            out.push((p.clone(), meta.is_dir(), meta.permissions().mode() & 0o7777));
            if meta.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

/// Answers the prompt's questions (`w1` always, the others once) until prompt `id` ends well.
async fn allow_w1_always_and_the_rest_once(client: &mut AcpClient, id: &serde_json::Value) {
    loop {
        let msg = client
            .wait_for(Duration::from_secs(20), |m| {
                m["method"] == "session/request_permission" || m["id"] == *id
            })
            .await
            .expect("a permission request or the answer");
        if msg["method"] != "session/request_permission" {
            assert_eq!(msg["result"]["stopReason"], "end_turn", "{msg}");
            break;
        }
        let option = if msg["params"]["toolCall"]["toolCallId"] == "w1" {
            "allow_always"
        } else {
            "allow_once"
        };
        client
            .respond(
                &msg["id"],
                json!({"outcome": {"outcome": "selected", "optionId": option}}),
            )
            .await;
    }
}

#[tokio::test]
async fn everything_ferrite_creates_under_its_home_is_private_under_umask_022() {
    let world = World::new();
    let bin_dir = tempfile::tempdir().unwrap();
    let wrapper = umask_wrapper(bin_dir.path());
    let fake = FakeProvider::start().await.unwrap();
    // A local Ollama whose listing discovery caches under FERRITE_HOME/cache/.
    let ollama = FakeProvider::start().await.unwrap();
    ollama.set_ollama_models(&[("qwen3-coder:30b", 262_144)]);
    let mut env = provider_env(&fake, Api::Anthropic);
    env.push(("OLLAMA_HOST".into(), ollama.base_url()));
    let mut client = AcpClient::spawn_with(ferrite_test_support::acp_client::Spawn {
        bin: &wrapper,
        home: world.home(),
        args: &["acp"],
        env,
    });
    client.initialize().await;
    let sid = sid(&client.new_session(&world.ws()).await);
    std::fs::write(world.ws().join("a.txt"), "one\n").unwrap();

    // An "always" answer (a stored rule), a checkpoint, and a command (its spill directory).
    fake.push(write_call("a.txt", "two\n"));
    fake.push(bash_call("b1", "echo hi"));
    fake.push(Script::new().text("done"));
    let id = client
        .send_request("session/prompt", text_prompt(&sid, "change it"))
        .await;
    allow_w1_always_and_the_rest_once(&mut client, &id).await;
    assert_eq!(
        std::fs::read_to_string(world.ws().join("a.txt")).unwrap(),
        "two\n"
    );
    let cache = world.home().join("cache/models.json");
    let deadline = Instant::now() + HANG_GUARD;
    while !cache.exists() {
        assert!(
            Instant::now() < deadline,
            "discovery never cached a listing"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.close_stdin().await;
    client.wait_exit(Duration::from_secs(10)).await;

    let home = world.home();
    let all = modes(home, &[home.join("home")]);
    for want in [
        home.join("permissions"),
        home.join("cache"),
        home.join("checkpoints"),
        home.join("sessions").join(&sid).join("tool-output"),
    ] {
        assert!(
            all.iter().any(|(p, _, _)| p == &want),
            "{} was not created: {all:?}",
            want.display()
        );
    }
    let loose: Vec<String> = all
        .iter()
        .filter(|(_, dir, mode)| *mode != if *dir { 0o700 } else { 0o600 })
        .map(|(p, _, mode)| format!("{} {mode:o}", p.display()))
        .collect();
    assert!(loose.is_empty(), "not private: {loose:#?}");
}
