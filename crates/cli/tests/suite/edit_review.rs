//! Edits through the editor (`fs/write_text_file`, docs/acp.md): the default where the client
//! writes files, and never a way to write outside what the policy decided. The editor here is
//! the worst kind: it writes a path in place, following a link (`std::fs::write`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

async fn editor(
    world: &World,
    fake: &FakeProvider,
    writes: bool,
    mode: &str,
) -> (AcpClient, String) {
    let mut c = world.spawn_acp(provider_env(fake, Api::Anthropic));
    let caps = json!({"fs": {"readTextFile": true, "writeTextFile": writes}});
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": caps}),
    )
    .await
    .ok();
    let s = sid(&c.new_session(&world.ws()).await);
    c.request("session/set_mode", json!({"sessionId": s, "modeId": mode}))
        .await
        .ok();
    (c, s)
}

/// What the editor does with one `fs/write_text_file`, given its path and content.
type OnWrite<'a> = &'a dyn Fn(&Path, &str);

/// Runs a prompt to its end as an editor that answers reads from disk and applies every write
/// with `on_write`; the writes it was asked for.
async fn run(c: &mut AcpClient, s: &str, on_write: OnWrite<'_>) -> Vec<(PathBuf, String)> {
    let id = c.send_request("session/prompt", text_prompt(s, "go")).await;
    let mut writes = vec![];
    loop {
        let m = c
            .next_message(Duration::from_secs(60))
            .await
            .expect("a message");
        match m.get("method").and_then(Value::as_str) {
            Some("fs/write_text_file") => {
                let path = PathBuf::from(m["params"]["path"].as_str().unwrap());
                let content = m["params"]["content"].as_str().unwrap().to_owned();
                on_write(&path, &content);
                c.respond(&m["id"], json!({})).await;
                writes.push((path, content));
            }
            Some("fs/read_text_file") => {
                let path = m["params"]["path"].as_str().unwrap();
                let content = std::fs::read_to_string(path).unwrap_or_default();
                c.respond(&m["id"], json!({"content": content})).await;
            }
            _ if m.get("id") == Some(&id) && m.get("method").is_none() => {
                assert_eq!(m["result"]["stopReason"], "end_turn", "{m}");
                return writes;
            }
            _ => {}
        }
    }
}

fn write_in_place(path: &Path, content: &str) {
    std::fs::write(path, content).unwrap();
}

/// Waits (bounded) until `path` exists: a step of the background command below.
fn wait_for_file(path: &Path) {
    for _ in 0..600 {
        if path.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} never appeared", path.display());
}

/// The issue's attack: with `fs_delegation = "review"`, a background command of the session
/// swaps `race.txt` for a link to a file outside the workspace while the model writes it. The
/// editor was asked to write a path a command could change, and followed the link.
#[tokio::test]
async fn a_running_command_cannot_redirect_a_write_through_the_editor() {
    let world = World::new();
    world.write_config("fs_delegation = \"review\"\n");
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "ORIGINAL\n").unwrap();
    let ws = world.ws();
    std::fs::write(ws.join("race.txt"), "old\n").unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let (mut c, s) = editor(&world, &fake, true, "full").await;
    // Swaps the file for a link once the editor is asked to write (`go`), then says so.
    let swap = format!(
        "while [ ! -e go ]; do sleep 0.05; done; rm -f race.txt; ln -s '{}' race.txt; \
         touch swapped; sleep 300",
        secret.display()
    );
    fake.push(Script::new().tool_call(
        "b1",
        "bash",
        json!({"command": swap, "background": true}).to_string(),
    ));
    fake.push(Script::new().tool_call(
        "w1",
        "write",
        json!({"path": "race.txt", "content": "PWNED-1\n"}).to_string(),
    ));
    fake.push(Script::new().text("done"));
    let (go, swapped) = (ws.join("go"), ws.join("swapped"));
    let writes = run(&mut c, &s, &|path, content| {
        std::fs::write(&go, "").unwrap();
        wait_for_file(&swapped);
        write_in_place(path, content);
    })
    .await;
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "ORIGINAL\n");
    assert!(
        writes.is_empty(),
        "no write goes through the editor while a command of the session runs: {writes:?}"
    );
    // The agent wrote the file itself, without following links.
    let race = ws.join("race.txt");
    assert!(!race.symlink_metadata().unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&race).unwrap(), "PWNED-1\n");
    stop(c).await;
}

/// Something outside the session swaps the file for a link while the editor writes it: the
/// write is checked after the editor's answer, the file put back and the model told where the
/// text may have gone.
#[tokio::test]
async fn a_write_that_did_not_land_in_the_file_is_undone_and_reported() {
    let world = World::new();
    let outside = tempfile::tempdir().unwrap();
    let elsewhere = outside.path().join("elsewhere.txt");
    std::fs::write(&elsewhere, "ORIGINAL\n").unwrap();
    let ws = world.ws();
    let race = ws.join("race.txt");
    std::fs::write(&race, "old\n").unwrap();
    world.write_config("fs_delegation = \"review\"\n");
    let fake = FakeProvider::start().await.unwrap();
    let (mut c, s) = editor(&world, &fake, true, "auto").await;
    fake.push(Script::new().tool_call(
        "w1",
        "write",
        json!({"path": "race.txt", "content": "new\n"}).to_string(),
    ));
    fake.push(Script::new().text("done"));
    let writes = run(&mut c, &s, &|path, content| {
        std::fs::remove_file(path).unwrap();
        std::os::unix::fs::symlink(&elsewhere, path).unwrap();
        write_in_place(path, content);
    })
    .await;
    assert_eq!(writes.len(), 1, "`review` hands the write to the editor");
    let (result, is_error) = tool_results(&fake.requests()[1].body).remove(0);
    assert!(is_error, "{result}");
    assert!(
        result.contains("could not be verified")
            && result.contains(&elsewhere.display().to_string()),
        "{result}"
    );
    assert!(result.contains("restored"), "{result}");
    assert!(!race.symlink_metadata().unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&race).unwrap(), "old\n");
    stop(c).await;
}

/// Zed's review sees only edits sent as `fs/write_text_file`: `fs_delegation = "review"` sends
/// them there where the client writes files. The default (`unsaved_only`, product.md §7) and a
/// client that does not write files keep every write on disk.
#[tokio::test]
async fn edits_go_through_the_editor_with_review_and_to_disk_by_default() {
    for (config, writes_files, through_editor) in [
        (Some("fs_delegation = \"review\"\n"), true, true),
        (None, true, false),
        (Some("fs_delegation = \"review\"\n"), false, false),
    ] {
        let world = World::new();
        if let Some(config) = config {
            world.write_config(config);
        }
        let file = world.ws().join("main.rs");
        std::fs::write(&file, "fn a() {}\n").unwrap();
        let fake = FakeProvider::start().await.unwrap();
        let (mut c, s) = editor(&world, &fake, writes_files, "auto").await;
        fake.push(Script::new().tool_call(
            "e1",
            "edit",
            r#"{"path":"main.rs","old_string":"fn a","new_string":"fn b"}"#,
        ));
        fake.push(Script::new().text("done"));
        let writes = run(&mut c, &s, &write_in_place).await;
        let case = format!("{config:?}, client writes files: {writes_files}");
        assert_eq!(
            writes.len(),
            usize::from(through_editor),
            "{case}: {writes:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "fn b() {}\n",
            "{case}"
        );
        stop(c).await;
    }
}
