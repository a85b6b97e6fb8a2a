//! Language servers after edits through the real binary (`docs/lsp.md`): the fake server of
//! test-support for the protocol's edge cases (a server that never answers, one that crashes
//! mid-turn, the agent killed with -9), and the real pyright and typescript-language-server that
//! `.ci/run` installs (`FERRITE_LSP_SERVERS`, default `target/lsp-servers`) for what a user sees,
//! including a repository whose own TypeScript would run at server start.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ferrite_test_support::fake_provider::Script;
use serde_json::{Value, json};

use super::common::*;
use super::permissions::{Rig, start};

fn call(id: &str, tool: &str, input: Value) -> Script {
    Script::new().tool_call(id, tool, input.to_string())
}

/// The `fake-lsp-server` binary built beside the test binary.
fn fake_server() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("fake-lsp-server");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p ferrite-test-support --bins`",
        bin.display()
    );
    bin
}

/// Where the pinned npm servers are: `FERRITE_LSP_SERVERS` (set by `.ci/run`) or
/// `target/lsp-servers`. Missing is a failure, never a skip: the install line is in `.ci/run`.
pub(super) fn npm_servers() -> PathBuf {
    let dir = std::env::var_os("FERRITE_LSP_SERVERS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/lsp-servers"),
        PathBuf::from,
    );
    let bin = dir.join("node_modules/.bin");
    assert!(
        bin.join("pyright-langserver").exists() && bin.join("typescript-language-server").exists(),
        "the language servers are not installed in {}: run the `npm install --prefix \
         target/lsp-servers ...` line of .ci/run",
        dir.display()
    );
    std::fs::canonicalize(bin).unwrap()
}

/// `PATH` with the npm servers first.
pub(super) fn path_with_servers() -> String {
    format!(
        "{}:{}",
        npm_servers().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Marks the world's workspace trusted, as the user's answer to the trust question does.
pub(super) fn trust(world: &World) {
    let record = json!({"workspaces": [world.ws()]});
    std::fs::write(
        world.home().join("trusted-workspaces.json"),
        record.to_string(),
    )
    .unwrap();
}

/// A rig in `auto` mode whose config is `config` (written before the agent starts).
pub(super) async fn lsp_rig(config: &str, trusted: bool, env: &[(&str, &str)]) -> Rig {
    let world = World::new();
    world.write_config(config);
    if trusted {
        trust(&world);
    }
    let mut r = start(world, None, env).await;
    r.set_mode("auto").await;
    r
}

/// The config of the fake server for Python files, logging its pids to `pids`.
fn fake_config(args: &[&str], pids: &Path, wait_ms: u64) -> String {
    let mut command = vec![fake_server().display().to_string()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    command.extend(["--pid-file".to_owned(), pids.display().to_string()]);
    format!(
        "[lsp]\nwait_ms = {wait_ms}\n[lsp.servers.fake]\ncommand = {}\nlanguages = [\"python\"]\n",
        serde_json::to_string(&command).unwrap()
    )
}

/// Runs one turn of `calls` (then a closing text) and returns what came before the answer.
pub(super) async fn turn(r: &mut Rig, calls: Vec<(&str, &str, Value)>) -> Vec<Value> {
    for (id, tool, input) in calls {
        r.fake.push(call(id, tool, input));
    }
    r.fake.push(Script::new().text("done"));
    let id = r.send_prompt_id().await;
    let (seen, answer) = r.client.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    seen
}

/// The tool results the model got in request `n` (0-based), text only.
pub(super) fn result_of(r: &Rig, n: usize) -> String {
    let (text, is_error) = tool_results(&r.fake.requests()[n].body).remove(0);
    assert!(!is_error, "{text}");
    serde_json::from_str::<String>(&text).unwrap_or(text)
}

/// The text of the final `tool_call_update` of `call` the editor was sent.
pub(super) fn card_text(seen: &[Value], call: &str) -> String {
    seen.iter()
        .filter(|m| {
            m["params"]["update"]["sessionUpdate"] == "tool_call_update"
                && m["params"]["update"]["toolCallId"] == call
        })
        .filter_map(|m| m["params"]["update"]["content"].as_array())
        .flatten()
        .filter_map(|c| c["content"]["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.split(' ').nth(2).is_none_or(|state| state != "Z"))
}

async fn gone(pid: u32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn an_edit_gets_the_errors_it_brought_and_the_fix_clears_them() {
    let pid_dir = tempfile::tempdir().unwrap();
    let pid_file = pid_dir.path().join("pids");
    let mut r = lsp_rig(&fake_config(&[], &pid_file, 5000), true, &[]).await;
    let file = r.world.ws().join("a.py");
    std::fs::write(&file, "x = ERROR old\n").unwrap();
    let seen = turn(
        &mut r,
        vec![(
            "c1",
            "edit",
            json!({"path": "a.py", "old_string": "x = ERROR old\n", "new_string": "x = ERROR old\ny = 1\n  z = ERROR brought here\n"}),
        )],
    )
    .await;
    let text = result_of(&r, 1);
    assert!(text.starts_with("Edited a.py"), "{text}");
    assert!(
        text.contains(
            "\n\nThe edit was applied. fake reports 2 errors in a.py (1 new with this edit, \
             marked [new]):\n1:5 found ERROR: old\n3:7 [new] found ERROR: brought here"
        ),
        "{text}"
    );
    let card = card_text(&seen, "c1");
    assert!(
        card.contains("3:7 [new] found ERROR: brought here"),
        "{card}"
    );

    turn(
        &mut r,
        vec![("c2", "write", json!({"path": "a.py", "content": "x = 1\n"}))],
    )
    .await;
    let text = result_of(&r, 3);
    assert!(
        text.ends_with("The edit was applied. fake reports no errors in a.py."),
        "{text}"
    );
    // The model may ask on its own.
    std::fs::write(&file, "ERROR from a command\n").unwrap();
    let seen = turn(&mut r, vec![("c3", "diagnostics", json!({"path": "a.py"}))]).await;
    let text = result_of(&r, 5);
    assert_eq!(
        text,
        "fake reports 1 error in a.py:\n1:1 found ERROR: from a command"
    );
    assert!(card_text(&seen, "c3").contains("1:1 found ERROR: from a command"));
    let server = pids(&pid_file);
    assert_eq!(server.len(), 1, "one server for the root, started once");
    stop(r.client).await;
    assert!(gone(server[0]).await, "the server stops with the session");
}

#[tokio::test]
async fn a_server_that_never_answers_delays_an_edit_no_more_than_the_bound() {
    let pid_dir = tempfile::tempdir().unwrap();
    let pid_file = pid_dir.path().join("pids");
    let mut r = lsp_rig(&fake_config(&["--hang"], &pid_file, 300), true, &[]).await;
    turn(
        &mut r,
        vec![
            (
                "c1",
                "write",
                json!({"path": "a.py", "content": "x = ERROR\n"}),
            ),
            (
                "c2",
                "edit",
                json!({"path": "a.py", "old_string": "x", "new_string": "y"}),
            ),
        ],
    )
    .await;
    for n in [1, 2] {
        let text = result_of(&r, n);
        assert!(
            text.contains(
                "The edit was applied. Diagnostics not ready: fake had not reported on a.py \
                 within 300 ms"
            ),
            "{text}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(r.world.ws().join("a.py")).unwrap(),
        "y = ERROR\n"
    );
    let server = pids(&pid_file);
    r.client.kill().await;
    assert!(
        gone(server[0]).await,
        "kill -9 of the agent leaves no server behind"
    );
}

#[tokio::test]
async fn a_server_killed_mid_turn_is_restarted_and_the_user_told_once() {
    let pid_dir = tempfile::tempdir().unwrap();
    let pid_file = pid_dir.path().join("pids");
    let mut r = lsp_rig(&fake_config(&[], &pid_file, 5000), true, &[]).await;
    let seen = turn(
        &mut r,
        vec![
            ("c1", "write", json!({"path": "a.py", "content": "x = 1\n"})),
            ("c2", "write", json!({"path": "a.py", "content": "CRASH\n"})),
            (
                "c3",
                "write",
                json!({"path": "a.py", "content": "x = ERROR again\n"}),
            ),
            (
                "c4",
                "write",
                json!({"path": "a.py", "content": "CRASH again\n"}),
            ),
            ("c5", "write", json!({"path": "a.py", "content": "x = 2\n"})),
        ],
    )
    .await;
    assert!(result_of(&r, 1).ends_with("fake reports no errors in a.py."));
    let crashed = result_of(&r, 2);
    assert!(
        crashed
            .contains("The edit was applied. No diagnostics for a.py: fake stopped unexpectedly"),
        "{crashed}"
    );
    let again = result_of(&r, 3);
    assert!(
        again.contains("1:5 [new] found ERROR: again"),
        "restarted at once: {again}"
    );
    assert!(result_of(&r, 4).contains("fake stopped unexpectedly"));
    let backoff = result_of(&r, 5);
    assert!(
        backoff.contains("it restarts in"),
        "the second restart waits: {backoff}"
    );
    let told: Vec<&Value> = seen
        .iter()
        .filter(|m| {
            m.to_string()
                .contains("The language server fake stopped unexpectedly")
        })
        .collect();
    assert_eq!(told.len(), 1, "told once: {told:?}");
    assert_eq!(
        std::fs::read_to_string(r.world.ws().join("a.py")).unwrap(),
        "x = 2\n"
    );
    assert_eq!(pids(&pid_file).len(), 2);
    stop(r.client).await;
    for pid in pids(&pid_file) {
        assert!(gone(pid).await);
    }
}
