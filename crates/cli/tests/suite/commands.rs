//! Commands through the real binary: the sandbox in `auto` mode, a cancel or EOF killing the
//! whole process tree, a huge output spilled and capped.

use std::path::Path;
use std::time::{Duration, Instant};

use ferrite_test_support::fake_provider::Script;
use ferrite_test_support::updates;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;
use super::permissions::{bash_call, rig, start};

#[tokio::test]
async fn the_sandbox_confines_commands_in_auto_mode() {
    // The sandbox lets commands write to the temp directory, so the agent gets a private one
    // and "outside" is a directory anywhere else (wherever the checkout or /tmp is).
    let world = World::new();
    let private_tmp = world.home().join("tmp");
    std::fs::create_dir_all(&private_tmp).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escape.txt");
    let mut r = start(world, None, &[("TMPDIR", private_tmp.to_str().unwrap())]).await;
    r.set_mode("auto").await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    r.fake.push(Script::new().parallel_tool_calls(&[
        ("s1", "bash", &json!({"command": "echo inside > inside.txt && cat inside.txt"}).to_string()),
        ("s2", "bash", &json!({"command": format!("echo x > {}", target.display())}).to_string()),
        ("s3", "bash", &json!({"command": format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\"")}).to_string()),
    ]));
    r.fake.push(Script::new().text("done"));
    let prompt = r.send_prompt_id().await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    answer.ok();
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission"),
        "auto does not ask"
    );
    let res = r.last_tool_results();
    assert!(res[0].0.contains("inside"), "{res:?}");
    assert!(r.world.ws().join("inside.txt").exists());
    assert!(!target.exists(), "a write outside the workspace fails");
    assert!(
        res[1].0.contains("ermission denied") || res[1].0.contains("Read-only"),
        "{}",
        res[1].0
    );
    assert!(
        res[2].0.contains("PermissionError") || res[2].0.contains("Operation not permitted"),
        "network is off in auto: {}",
        res[2].0
    );
    let exec = updates(&before)
        .into_iter()
        .find(|(k, u)| k == "tool_call" && u["toolCallId"] == "s1")
        .unwrap()
        .1;
    assert_eq!(exec["kind"], "execute");
    assert_eq!(exec["title"], "echo inside > inside.txt && cat inside.txt");
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[tokio::test]
async fn cancel_and_eof_kill_the_whole_process_tree() {
    for ending in ["cancel", "eof"] {
        let mut r = rig().await;
        r.set_mode("auto").await;
        let pidfile = r.world.ws().join("grandchild.pid");
        r.fake.push(bash_call(
            "long",
            &format!("sleep 300 & echo $! > {} ; sleep 300", pidfile.display()),
        ));
        let prompt = r.send_prompt_id().await;
        let deadline = Instant::now() + HANG_GUARD;
        while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
            assert!(Instant::now() < deadline, "the command never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let grandchild: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(pid_alive(grandchild));
        let t = Instant::now();
        if ending == "cancel" {
            r.client
                .notify("session/cancel", json!({"sessionId": r.sid}))
                .await;
            let answer = r.client.wait_answer(&prompt).await.ok();
            assert_eq!(answer["stopReason"], "cancelled");
            assert!(t.elapsed() < HANG_GUARD, "{:?}", t.elapsed());
        } else {
            r.client.close_stdin().await;
            let status = r
                .client
                .wait_exit(Duration::from_secs(10))
                .await
                .expect("exit");
            assert!(status.success());
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while pid_alive(grandchild) {
            assert!(
                Instant::now() < deadline,
                "{ending}: grandchild {grandchild} survived"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn a_huge_output_is_spilled_and_capped() {
    let mut r = rig().await;
    r.set_mode("auto").await;
    r.fake.push(bash_call(
        "big",
        "head -c 100000000 /dev/zero | tr '\\0' 'a' | fold -w 100",
    ));
    r.fake.push(Script::new().text("that was big"));
    let pid = r.client.pid().unwrap();
    let prompt = r.send_prompt_id().await;
    r.client.wait_answer(&prompt).await.ok();
    let hwm_kb = peak_rss_kb(pid);
    assert!(hwm_kb < 64 * 1024, "peak RSS {hwm_kb} kB");
    let res = &r.last_tool_results()[0].0;
    assert!(
        res.len() < 80_000,
        "capped excerpt sent to the model: {} bytes",
        res.len()
    );
    let spill_dir = r
        .world
        .home()
        .join("sessions")
        .join(&r.sid)
        .join("tool-output");
    let spilled: u64 = std::fs::read_dir(&spill_dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .max()
        .unwrap();
    // 100 M characters folded into lines of 100: 999,999 newlines between them.
    assert_eq!(
        spilled,
        100_000_000 + 999_999,
        "every byte is in the spill file"
    );
    assert!(
        res.contains(&spill_dir.display().to_string()),
        "the excerpt names the spill file"
    );
}

/// Issue 34: with an empty (or relative) entry in the agent's `PATH`, an allowed `ls` ran the
/// repository's own `./ls`. Commands search only the absolute entries.
#[tokio::test]
async fn an_empty_path_entry_never_runs_the_repositorys_programs() {
    let world = World::new();
    let planted = world.ws().join("ls");
    std::fs::write(&planted, "#!/bin/sh\necho PLANTED-LS-RAN\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(world.ws().join("visible.txt"), "x").unwrap();
    let mut r = start(world, None, &[("PATH", ":/usr/bin:/bin:.")]).await;
    r.set_mode("auto").await;
    r.fake.push(bash_call("p1", "ls"));
    r.fake.push(Script::new().text("done"));
    let prompt = r.send_prompt_id().await;
    r.client.wait_answer(&prompt).await.ok();
    let res = r.last_tool_results();
    assert!(!res[0].0.contains("PLANTED-LS-RAN"), "{res:?}");
    if !res[0].0.contains("was not run") {
        assert!(res[0].0.contains("visible.txt"), "{res:?}");
    }
}
