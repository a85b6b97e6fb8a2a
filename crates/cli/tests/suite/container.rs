//! The container's entrypoint (`docker/entrypoint.sh`), run on the host: a checkout owned by
//! another uid (what `-v "$PWD:/work"` hands the image) is edited as that uid, git trusts it, and
//! the run's exit status says whether the work happened. Run as root (CI is), the test drops to a
//! uid that owns the checkout, as the image does; run as anyone else, it checks the `--user`
//! path (an uid whose HOME is not writable).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ferrite_test_support::fake_provider::{FakeProvider, Script};

use super::common::*;
use super::turns::{Api, provider_env};

/// The uid:gid a host user's checkout belongs to in the test (any uid without a passwd entry).
const OWNER: u32 = 12345;

fn entrypoint() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docker/entrypoint.sh")
}

/// This process's uid (the owner of its /proc directory).
fn own_uid() -> u32 {
    std::fs::metadata("/proc/self").unwrap().uid()
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

fn chown_tree(path: &Path, uid: u32) {
    let ok = Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}"), &path.to_string_lossy()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn run_entrypoint(ws: &Path, env: &[(String, String)], args: &[&str]) -> Output {
    Command::new("sh")
        .arg(entrypoint())
        .arg("run")
        .args(args)
        .current_dir(ws)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_BIN", BIN)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[tokio::test]
async fn the_entrypoint_edits_a_checkout_owned_by_another_uid() {
    let tmp = tempfile::tempdir().unwrap();
    // The dropped uid must reach the checkout through the temporary directory.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ws = tmp.path().join("work");
    std::fs::create_dir(&ws).unwrap();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("README"), "a repository\n").unwrap();
    // Where a fresh HOME may be made (the uid has none it can write).
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let owner = if own_uid() == 0 {
        chown_tree(&ws, OWNER);
        OWNER
    } else {
        own_uid()
    };

    let fake = FakeProvider::start().await.unwrap();
    fake.push(Script::new().tool_call(
        "w1",
        "write",
        r#"{"path":"hello.txt","content":"hello\n"}"#,
    ));
    fake.push(Script::new().tool_call("b1", "bash", r#"{"command":"git status --porcelain"}"#));
    fake.push(Script::new().text("done"));
    let mut env = provider_env(&fake, Api::Anthropic);
    env.extend([
        // Neither is writable by the checkout's owner: the entrypoint makes its own.
        ("HOME".into(), "/".into()),
        ("FERRITE_HOME".into(), "/proc/ferrite-home".into()),
        ("TMPDIR".into(), scratch.to_string_lossy().into_owned()),
    ]);
    let out = tokio::task::spawn_blocking({
        let ws = ws.clone();
        // No --mode: `ferrite run`'s default (`auto`) is what the container runs.
        move || run_entrypoint(&ws, &env, &["create hello.txt"])
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");

    let hello = ws.join("hello.txt");
    assert_eq!(std::fs::read_to_string(&hello).unwrap(), "hello\n");
    assert_eq!(
        std::fs::metadata(&hello).unwrap().uid(),
        owner,
        "written as the checkout's owner"
    );
    // git ran in the sandbox as that uid and trusted the checkout.
    let requests = fake.requests();
    let git_result = requests[2].body.to_string();
    assert!(!git_result.contains("dubious ownership"), "{git_result}");
    assert!(git_result.contains("?? hello.txt"), "{git_result}");
    // The session went to a FERRITE_HOME the uid could write, under the HOME it was given.
    let homes: Vec<_> = std::fs::read_dir(&scratch).unwrap().flatten().collect();
    assert_eq!(homes.len(), 1, "one HOME made");
    let sessions = homes[0].path().join(".ferrite/sessions");
    assert!(
        std::fs::read_dir(&sessions).unwrap().next().is_some(),
        "{stderr}"
    );
}

/// A file change the run cannot make (a directory the uid cannot write, as a read-only or
/// foreign-owned mount is) makes the run fail, naming the file: never exit 0 for work that did
/// not happen.
#[tokio::test]
async fn a_write_that_fails_fails_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ws = tmp.path().join("work");
    let locked = ws.join("locked");
    std::fs::create_dir_all(&locked).unwrap();
    if own_uid() == 0 {
        chown_tree(&ws, OWNER);
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let fake = FakeProvider::start().await.unwrap();
    fake.push(Script::new().tool_call("w1", "write", r#"{"path":"locked/new.txt","content":"x"}"#));
    fake.push(Script::new().text("I could not write it."));
    let mut env = provider_env(&fake, Api::Anthropic);
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    if own_uid() == 0 {
        chown_tree(&home, OWNER);
    }
    env.push(("HOME".into(), home.to_string_lossy().into_owned()));
    let out = tokio::task::spawn_blocking({
        let ws = ws.clone();
        move || run_entrypoint(&ws, &env, &["write locked/new.txt"])
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("[failed]"), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("ferrite: not changed:") && l.contains("new.txt")),
        "{stderr}"
    );
    assert!(!locked.join("new.txt").exists());
}
