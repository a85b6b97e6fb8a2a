//! Attacks on the file tools through the real binary (issue: paths that stay inside). Each test
//! plants what a hostile repository or a prompt-injected model would, and checks that nothing
//! outside was touched and nothing secret reached the model.

use std::time::Duration;

use ferrite_test_support::fake_provider::Script;
use serde_json::json;

use std::os::unix::process::CommandExt;

use super::common::*;
use super::permissions::{Rig, start, write_call};

fn read_call(id: &str, path: &str) -> Script {
    Script::new().tool_call(id, "read", json!({ "path": path }).to_string())
}

/// Runs one prompt whose model makes `call`, then says "done"; a permission request, if any, is
/// answered `reject_once`. Returns whether one was asked.
async fn run_call(r: &mut Rig, call: Script) -> bool {
    r.fake.push(call);
    r.fake.push(Script::new().text("done"));
    let prompt = r.send_prompt_id().await;
    let mut asked = false;
    loop {
        let msg = r
            .client
            .wait_for(Duration::from_secs(20), |m| {
                m["method"] == "session/request_permission" || m["id"] == prompt
            })
            .await
            .expect("a permission request or the answer");
        if msg["method"] == "session/request_permission" {
            asked = true;
            r.answer(&msg, "reject_once").await;
        } else {
            assert_eq!(msg["result"]["stopReason"], "end_turn", "{msg}");
            return asked;
        }
    }
}

#[tokio::test]
async fn a_dangling_link_in_the_workspace_does_not_write_outside_it() {
    let mut r = start(World::new(), None, &[]).await;
    r.set_mode("auto").await;
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    // A cloned repository can ship a link to a file that does not exist yet.
    std::os::unix::fs::symlink(&victim, r.world.ws().join("innocent.txt")).unwrap();
    let asked = run_call(&mut r, write_call("innocent.txt", "pwned")).await;
    assert!(
        asked,
        "a write that lands outside the workspace asks, even in auto"
    );
    assert!(
        !victim.exists(),
        "nothing was written outside the workspace"
    );
}

#[tokio::test]
async fn tools_cannot_change_ferrite_home_even_inside_the_workspace() {
    let mut r = start(World::home_in_workspace(), None, &[]).await;
    r.set_mode("auto").await;
    let config = r.world.home().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let rel = config
        .strip_prefix(r.world.ws.path())
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let payload = "[mcp_servers.evil]\ncommand = \"sh\"\n";
    let asked = run_call(&mut r, write_call(&rel, payload)).await;
    assert!(!asked, "refused outright, not put to the user");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "");
    let results = r.last_tool_results();
    assert!(
        results[0].1 && results[0].0.contains("Ferrite's own directory"),
        "{results:?}"
    );
}

#[tokio::test]
async fn reading_ferrite_credentials_asks_even_inside_the_workspace() {
    let mut r = start(World::home_in_workspace(), None, &[]).await;
    r.set_mode("auto").await;
    let creds = r.world.home().join("credentials.json");
    std::fs::write(&creds, r#"{"anthropic":"sk-ant-SECRET"}"#).unwrap();
    let asked = run_call(&mut r, read_call("r1", &creds.to_string_lossy())).await;
    assert!(asked);
    let sent = r.fake.requests().last().unwrap().body.to_string();
    assert!(
        !sent.contains("sk-ant-SECRET"),
        "the key never reached the model"
    );
}

#[tokio::test]
async fn secrets_outside_the_workspace_ask_in_auto_mode() {
    let mut r = start(World::new(), None, &[]).await;
    r.set_mode("auto").await;
    let outside = tempfile::tempdir().unwrap();
    let key = outside.path().join("id_ed25519");
    std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE KEY-----").unwrap();
    let asked = run_call(&mut r, read_call("r1", &key.to_string_lossy())).await;
    assert!(asked);
    let sent = r.fake.requests().last().unwrap().body.to_string();
    assert!(!sent.contains("OPENSSH PRIVATE KEY"));
}

#[tokio::test]
async fn special_files_are_refused_and_the_agent_keeps_serving() {
    let mut r = start(World::new(), None, &[]).await;
    r.set_mode("full").await;
    let fifo = r.world.ws().join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // A writer that never stops and never sends a newline, in a process group of its own so
    // that the whole pipeline is killed afterwards (killing `sh` alone leaves `yes` and `tr`).
    let mut feeder = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("yes x | tr -d '\\n' > {}", fifo.display()))
        .process_group(0)
        .spawn()
        .unwrap();
    run_call(&mut r, read_call("r1", "pipe")).await;
    let results = r.last_tool_results();
    assert!(results[0].1 && results[0].0.contains("FIFO"), "{results:?}");
    let group = format!("-{}", feeder.id());
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &group])
        .status();
    let _ = feeder.wait();

    // `/dev/stdin` is the editor's message stream: never consumed by a tool.
    run_call(&mut r, read_call("r2", "/dev/stdin")).await;
    let results = r.last_tool_results();
    assert!(results[0].1, "{results:?}");
    let listed = r.client.request("session/list", json!({})).await;
    assert!(
        listed.result.is_some(),
        "the agent still reads its messages"
    );
}

#[tokio::test]
async fn denied_files_do_not_come_back_through_a_search() {
    let world = World::new();
    world.write_config("[permissions]\ndeny = [\"read(**/.env)\", \"read(secrets/**)\"]\n");
    std::fs::write(world.ws().join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::create_dir_all(world.ws().join("secrets")).unwrap();
    std::fs::write(world.ws().join("secrets/prod"), "TOKEN=hunter3\n").unwrap();
    std::fs::write(world.ws().join("app.rs"), "TOKEN=visible\n").unwrap();
    let mut r = start(world, None, &[]).await;
    r.set_mode("auto").await;
    let grep = Script::new().tool_call(
        "g1",
        "grep",
        json!({"pattern": "TOKEN", "glob": "{.env,**}"}).to_string(),
    );
    run_call(&mut r, grep).await;
    let sent = r.fake.requests().last().unwrap().body.to_string();
    assert!(sent.contains("visible"), "the search ran: {sent}");
    assert!(!sent.contains("hunter"), "{sent}");
}

#[tokio::test]
async fn a_file_swapped_for_a_link_after_approval_is_not_followed() {
    let mut r = start(World::new(), None, &[]).await;
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    r.fake.push(write_call("victim.txt", "pwned"));
    r.fake.push(Script::new().text("done"));
    let prompt = r.send_prompt_id().await;
    let req = r.permission_request().await;
    // While the user looks at "Write victim.txt", something plants a link in its place.
    std::os::unix::fs::symlink(&victim, r.world.ws().join("victim.txt")).unwrap();
    r.answer(&req, "allow_once").await;
    r.client.wait_answer(&prompt).await.ok();
    assert!(!victim.exists(), "the approved write did not land outside");
    let results = r.last_tool_results();
    assert!(
        results[0].1 && results[0].0.contains("symlink"),
        "{results:?}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn ferrite_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let r = start(World::new(), None, &[]).await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&r.world.home().join("sessions")), 0o700);
    assert_eq!(mode(&r.world.session_file(&r.sid)), 0o600);
}

#[tokio::test]
async fn errors_never_echo_a_huge_client_string() {
    let mut r = start(World::new(), None, &[]).await;
    let big = "m".repeat(4 << 20);
    for (method, params) in [
        (
            "session/set_mode",
            json!({"sessionId": r.sid, "modeId": big}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": r.sid, "configId": big, "value": "x"}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": r.sid, "configId": "mode", "value": big}),
        ),
    ] {
        let res = r.client.request(method, params).await;
        let err = res.error.expect("an error");
        let text = err.to_string();
        assert!(text.len() < 2_000, "{method}: {} bytes", text.len());
        assert!(
            text.contains("mmmm"),
            "{method}: still names what was wrong: {text}"
        );
    }
}

#[tokio::test]
async fn a_search_does_not_walk_into_ferrite_home_inside_the_workspace() {
    let mut r = start(World::home_in_workspace(), None, &[]).await;
    r.set_mode("auto").await;
    std::fs::write(
        r.world.home().join("credentials.json"),
        r#"{"anthropic":"sk-ant-SECRET"}"#,
    )
    .unwrap();
    std::fs::write(r.world.ws().join("app.rs"), "// sk-ant-visible\n").unwrap();
    // A glob that names hidden files, over the whole workspace: the search root is not under
    // FERRITE_HOME, so only the walk can keep it out.
    let grep = Script::new().tool_call(
        "g1",
        "grep",
        json!({"pattern": "sk-ant", "glob": "**/*"}).to_string(),
    );
    run_call(&mut r, grep).await;
    let sent = r.fake.requests().last().unwrap().body.to_string();
    assert!(sent.contains("sk-ant-visible"), "the search ran: {sent}");
    assert!(!sent.contains("sk-ant-SECRET"), "{sent}");
}
