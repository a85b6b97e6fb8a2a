//! Sessions that follow git worktrees (issue 38): a folder's sessions listed from every
//! worktree of its repository, a clear answer for a session whose folder is gone, and `task`
//! subagents in a worktree of their own.

use std::path::{Path, PathBuf};
use std::process::Command;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use ferrite_test_support::updates;
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// `dir` as a repository with one commit.
fn repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/keep.txt"), "x\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

async fn prompted_session(
    c: &mut ferrite_test_support::AcpClient,
    cwd: &Path,
    text: &str,
) -> String {
    let s = sid(&c.new_session(cwd).await);
    c.request("session/prompt", text_prompt(&s, text))
        .await
        .ok();
    s
}

fn listed(list: &Value) -> Vec<(String, Value)> {
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["sessionId"].as_str().unwrap().to_owned(), s.clone()))
        .collect()
}

#[tokio::test]
async fn a_folder_lists_its_sessions_from_every_worktree_and_a_gone_one_is_named() {
    let w = World::new();
    let ws = w.ws();
    repo(&ws);
    let other = ws.with_file_name(format!(
        "{}-feature",
        ws.file_name().unwrap().to_string_lossy()
    ));
    git(
        &ws,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            other.to_str().unwrap(),
        ],
    );
    let mut c = w.client().await;
    let here = prompted_session(&mut c, &ws.join("sub"), "in the main worktree").await;
    let there = prompted_session(&mut c, &other.join("sub"), "in the feature worktree").await;
    let top = prompted_session(&mut c, &ws, "at the top").await;

    let list = c
        .request("session/list", json!({"cwd": ws.join("sub")}))
        .await
        .ok();
    let got = listed(&list);
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, [there.as_str(), here.as_str()], "{list}");
    let mark = &got[0].1["_meta"]["ferrite"]["worktree"];
    assert_eq!(mark["path"], json!(other), "{list}");
    assert_eq!(mark["branch"], "feature");
    assert_eq!(mark["exists"], true);
    assert_eq!(got[1].1["_meta"]["ferrite"]["worktree"]["path"], json!(ws));
    assert!(
        !ids.contains(&top.as_str()),
        "another folder of the repository"
    );

    // The same from the other worktree, and from the command line.
    let list = c
        .request("session/list", json!({"cwd": other.join("sub")}))
        .await
        .ok();
    assert_eq!(listed(&list).len(), 2, "{list}");
    let out = Command::new(BIN)
        .args(["sessions", "list", "--cwd"])
        .arg(ws.join("sub"))
        .env("FERRITE_HOME", w.home())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.starts_with(&there)).expect(&text);
    assert!(
        line.ends_with(&format!("[worktree {} (feature)]", other.display())),
        "{text}"
    );
    assert!(text.contains(&here), "{text}");
    stop(c).await;

    a_gone_worktree_s_session_is_listed_and_named(&w, &other, &there).await;
}

/// The worktree goes away: its session is still listed, and opening it names the folder.
async fn a_gone_worktree_s_session_is_listed_and_named(w: &World, other: &Path, there: &str) {
    let ws = w.ws();
    std::fs::remove_dir_all(other).unwrap();
    let mut c = w.client().await;
    let list = c
        .request("session/list", json!({"cwd": ws.join("sub")}))
        .await
        .ok();
    let got = listed(&list);
    assert_eq!(got[0].0, there);
    assert_eq!(got[0].1["_meta"]["ferrite"]["worktree"]["exists"], false);
    for method in ["session/load", "session/resume"] {
        let a = c
            .request(
                method,
                json!({"sessionId": there, "cwd": ws.join("sub"), "mcpServers": []}),
            )
            .await;
        assert_eq!(a.code(), -32602, "{method}");
        let msg = a.message();
        assert!(
            msg.contains("no longer exists")
                && msg.contains(&other.join("sub").display().to_string()),
            "{method}: {msg}"
        );
        assert!(!msg.contains("ferrite"), "{msg}");
    }
    stop(c).await;
}

/// A client that shows subagents, with a session in the workspace in `auto` mode.
async fn auto_session_showing_subagents(
    world: &World,
    fake: &FakeProvider,
) -> (ferrite_test_support::AcpClient, String) {
    let mut c = world.spawn_acp(provider_env(fake, Api::Anthropic));
    let caps = json!({"subagents": {}});
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": caps}),
    )
    .await
    .ok();
    let parent = sid(&c.new_session(&world.ws()).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": parent, "modeId": "auto"}),
    )
    .await
    .ok();
    (c, parent)
}

fn task(id: &str, prompt: &str, tools: &[&str]) -> Script {
    Script::new().tool_call(
        id,
        "task",
        json!({"description": "try it", "prompt": prompt, "tools": tools, "isolation": "worktree"})
            .to_string(),
    )
}

#[tokio::test]
async fn a_task_in_a_worktree_works_there_and_its_worktree_is_kept_only_with_changes() {
    let world = World::new();
    let ws = world.ws();
    repo(&ws);
    let fake = FakeProvider::start().await.unwrap();
    let (mut c, parent) = auto_session_showing_subagents(&world, &fake).await;
    let trees: PathBuf = ws.with_file_name(format!(
        "{}.worktrees",
        ws.file_name().unwrap().to_string_lossy()
    ));
    let wt = trees.join("task-t1");

    // A subagent that writes: its worktree is kept and named.
    fake.push(task("t1", "Write new.txt.", &["write"]));
    fake.push(Script::new().tool_call(
        "s1",
        "write",
        json!({"path": "new.txt", "content": "made in a worktree\n"}).to_string(),
    ));
    fake.push(Script::new().text("Wrote it."));
    fake.push(Script::new().text("Done."));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "do it"))
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    // The child is announced working in its worktree before its first tool call.
    let ups = updates(&before);
    let announced = ups
        .iter()
        .position(|(k, u)| k == "subagent_update" && u["cwd"] == json!(wt))
        .unwrap_or_else(|| panic!("announced in {}: {ups:?}", wt.display()));
    let first_call = ups
        .iter()
        .position(|(k, u)| k == "tool_call" && u["toolCallId"] == "s1")
        .expect("the child's call");
    assert!(announced < first_call);
    assert_eq!(
        std::fs::read_to_string(wt.join("new.txt")).unwrap(),
        "made in a worktree\n"
    );
    assert!(
        !ws.join("new.txt").exists(),
        "the session's own files stay as they are"
    );
    let reqs = fake.requests();
    let back = reqs[3].body.to_string();
    assert!(
        back.contains("Wrote it.")
            && back.contains(&wt.display().to_string())
            && back.contains("kept"),
        "{back}"
    );
    let sub_system = reqs[1].body.to_string();
    assert!(
        sub_system.contains(&wt.display().to_string()),
        "{sub_system}"
    );
    let card_end = updates(&before)
        .into_iter()
        .rev()
        .find(|(k, u)| k == "tool_call_update" && u["toolCallId"] == "t1")
        .unwrap()
        .1;
    assert!(
        card_end["content"].to_string().contains("kept"),
        "{card_end}"
    );

    a_task_that_only_looks_leaves_no_worktree(&mut c, &fake, &parent, &trees).await;
    std::fs::remove_dir_all(&trees).unwrap();
    stop(c).await;
}

/// One that only looks: its worktree is removed when it ends.
async fn a_task_that_only_looks_leaves_no_worktree(
    c: &mut ferrite_test_support::AcpClient,
    fake: &FakeProvider,
    parent: &str,
    trees: &Path,
) {
    let wt = trees.join("task-t1");
    fake.push(task("t2", "Look around.", &["ls"]));
    fake.push(Script::new().tool_call("s2", "ls", json!({}).to_string()));
    fake.push(Script::new().text("Nothing to do."));
    fake.push(Script::new().text("Fine."));
    let id = c
        .send_request("session/prompt", text_prompt(parent, "look"))
        .await;
    let (_, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let reqs = fake.requests();
    let listing = reqs[6].body.to_string();
    assert!(
        !listing.contains("new.txt") && listing.contains("README.md"),
        "it ran in a fresh worktree: {listing}"
    );
    let back = reqs[7].body.to_string();
    assert!(back.contains("no changes and was removed"), "{back}");
    assert!(!trees.join("task-t2").exists());
    assert!(wt.exists());
}

/// The model can write the repository's `.git` (a hook, a config) in auto mode: what git runs
/// while Ferrite makes and removes a subagent's worktree is confined like a command (found in
/// review: `git worktree add` ran unsandboxed, so a `post-checkout` hook escaped the sandbox).
#[tokio::test]
async fn a_repository_hook_runs_confined_when_a_worktree_is_made() {
    let world = World::new();
    let ws = world.ws();
    repo(&ws);
    // Outside the workspace and outside the temporary folder (which commands may write).
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let escaped = outside.path().join("escaped");
    let hook = ws.join(".git/hooks/post-checkout");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\necho ran > hook-ran\necho out > '{}'\nexit 0\n",
            escaped.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let parent = sid(&c.new_session(&ws).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": parent, "modeId": "auto"}),
    )
    .await
    .ok();
    fake.push(task("t1", "Look around.", &["ls"]));
    fake.push(Script::new().text("Nothing to do."));
    fake.push(Script::new().text("Fine."));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "look"))
        .await;
    let (_, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let wt = ws
        .with_file_name(format!(
            "{}.worktrees",
            ws.file_name().unwrap().to_string_lossy()
        ))
        .join("task-t1");
    // The hook ran (its mark makes the worktree one with changes, so it is kept) ...
    assert_eq!(
        std::fs::read_to_string(wt.join("hook-ran")).unwrap(),
        "ran\n"
    );
    // ... and could not write outside what a sandboxed command may.
    assert!(!escaped.exists(), "the hook wrote outside the sandbox");
}
