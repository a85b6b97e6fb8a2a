//! Attacks on the command sandbox through the real binary (issue 8): each test plays what a
//! hostile model (or a hostile repository) makes a command do, and checks that no harm is done.
//! Where this kernel cannot sandbox, auto mode refuses commands: the tests then check that the
//! attack did not run either.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferrite_test_support::AcpClient;
use ferrite_test_support::acp_client::Spawn;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

pub(super) struct Rig {
    home: PathBuf,
    pub(super) ws: PathBuf,
    fake: FakeProvider,
    client: AcpClient,
    sid: String,
    _dirs: Vec<tempfile::TempDir>,
}

/// An agent in `mode` whose FERRITE_HOME is `home` and whose workspace is `ws`.
pub(super) async fn rig_at(
    home: PathBuf,
    ws: PathBuf,
    mode: &str,
    dirs: Vec<tempfile::TempDir>,
) -> Rig {
    rig_with_servers(home, ws, mode, dirs, json!([]), vec![]).await
}

async fn rig_with_servers(
    home: PathBuf,
    ws: PathBuf,
    mode: &str,
    dirs: Vec<tempfile::TempDir>,
    servers: Value,
    extra_env: Vec<(String, String)>,
) -> Rig {
    let fake = FakeProvider::start().await.unwrap();
    let mut env = provider_env(&fake, Api::Anthropic);
    env.extend(extra_env);
    let mut client = AcpClient::spawn_with(Spawn {
        bin: Path::new(BIN),
        home: &home,
        args: &["acp"],
        env,
    });
    client.initialize().await;
    let sid = sid(&client
        .request("session/new", json!({"cwd": ws, "mcpServers": servers}))
        .await
        .ok());
    client
        .request(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": mode}),
        )
        .await
        .ok();
    Rig {
        home,
        ws,
        fake,
        client,
        sid,
        _dirs: dirs,
    }
}

async fn rig(mode: &str) -> Rig {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (h, w) = (canon(home.path()), canon(ws.path()));
    rig_at(h, w, mode, vec![home, ws]).await
}

pub(super) fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap()
}

impl Rig {
    /// Runs one turn in which the model calls `bash` with each command in turn, and returns the
    /// text of every tool result.
    pub(super) async fn run_commands(&mut self, commands: &[&str]) -> Vec<String> {
        for (i, command) in commands.iter().enumerate() {
            self.fake.push(Script::new().tool_call(
                format!("c{i}"),
                "bash",
                json!({"command": command}).to_string(),
            ));
        }
        self.fake.push(Script::new().text("done"));
        let prompt = self
            .client
            .send_request("session/prompt", text_prompt(&self.sid, "go"))
            .await;
        self.client.wait_answer(&prompt).await.ok();
        self.tool_results()
    }

    /// Every tool result the model received, in order.
    fn tool_results(&self) -> Vec<String> {
        let reqs = self.fake.requests();
        let msgs = reqs.last().unwrap().body["messages"]
            .as_array()
            .unwrap()
            .clone();
        msgs.iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| b["content"].to_string())
            .collect()
    }

    fn spill_dir(&self) -> PathBuf {
        self.home
            .join("sessions")
            .join(&self.sid)
            .join("tool-output")
    }
}

fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

async fn wait_for_pid(path: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn assert_gone_within(pid: u32, limit: Duration, what: &str) {
    let deadline = Instant::now() + limit;
    while pid_alive(pid) {
        assert!(Instant::now() < deadline, "{what}: process {pid} survived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A command plants a symlink where the agent will write the next command's output: the agent
/// must not follow it (and the command must not be able to plant it at all).
#[tokio::test]
async fn the_spill_directory_is_no_way_out() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "original\n").unwrap();
    let mut r = rig("auto").await;
    let spill = r.spill_dir();
    std::fs::create_dir_all(&spill).unwrap();
    let plant = format!(
        "for n in c1 c_1 call_1 1; do ln -s {v} {d}/$n.out; ln -s {v} {d}/$n.txt; done; ls {d}",
        v = victim.display(),
        d = spill.display()
    );
    let results = r.run_commands(&[&plant, "echo attacker-chosen-text"]).await;
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "original\n",
        "{results:?}"
    );
    let planted = std::fs::read_dir(&spill)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_symlink())
        .count();
    assert_eq!(planted, 0, "the sandbox cannot write the spill directory");
}

/// An editor opened on a directory that contains FERRITE_HOME: commands still cannot touch the
/// agent's own config, credentials or sessions.
#[tokio::test]
async fn commands_cannot_modify_ferrite_home_inside_the_workspace() {
    let ws_dir = tempfile::tempdir().unwrap();
    let ws = canon(ws_dir.path());
    let home = ws.join("dot-ferrite");
    std::fs::create_dir_all(&home).unwrap();
    // New entries cannot be created right next to FERRITE_HOME (docs/sandbox.md): the test
    // writes in a sibling directory.
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(home.join("config.toml"), "# mine\n").unwrap();
    let mut r = rig_at(home.clone(), ws.clone(), "auto", vec![ws_dir]).await;
    let config = home.join("config.toml");
    let results = r
        .run_commands(&[
            &format!(
                "printf '[mcp_servers.evil]\\ncommand = \"sh\"\\n' >> {c}; echo in-ws > {w}/src/ok.txt",
                c = config.display(),
                w = ws.display()
            ),
            &format!("mkdir -p {h}/permissions; touch {h}/sessions/x.jsonl", h = home.display()),
            &format!("rm -f {c}; mv {h} {w}/moved", c = config.display(), h = home.display(), w = ws.display()),
        ])
        .await;
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "# mine\n",
        "{results:?}"
    );
    assert!(!home.join("sessions/x.jsonl").exists(), "{results:?}");
    assert!(!ws.join("moved").exists(), "{results:?}");
    if !results[0].contains("was not run") {
        // Sandboxed: the rest of the workspace stays writable.
        assert!(ws.join("src/ok.txt").exists(), "{results:?}");
    }
}

/// Secrets: FERRITE_HOME's credentials and MCP tokens and the `sandbox.deny_read` paths are unreadable; the
/// provider keys are not in a command's environment nor readable from the agent's /proc entry.
#[tokio::test]
async fn commands_cannot_read_secrets_or_keys() {
    let secrets = tempfile::tempdir().unwrap();
    let ssh = canon(secrets.path()).join("ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "PRIVATE-KEY-MATERIAL\n").unwrap();
    let home_dir = tempfile::tempdir().unwrap();
    let ws_dir = tempfile::tempdir().unwrap();
    let home = canon(home_dir.path());
    std::fs::write(
        home.join("config.toml"),
        format!("[sandbox]\ndeny_read = [\"{}\"]\n", ssh.display()),
    )
    .unwrap();
    std::fs::write(home.join("credentials.json"), "{\"x\":\"STORED-CRED\"}").unwrap();
    std::fs::create_dir_all(home.join("mcp-auth")).unwrap();
    std::fs::write(home.join("mcp-auth/t.json"), "{\"x\":\"STORED-MCP-TOKEN\"}").unwrap();
    let ws = canon(ws_dir.path());
    let mut r = rig_at(home.clone(), ws, "auto", vec![home_dir, ws_dir]).await;
    let agent = r.client.pid().unwrap();
    let results = r
        .run_commands(&[
            &format!(
                "cat {h}/credentials.json {h}/mcp-auth/t.json; echo read-done",
                h = home.display()
            ),
            &format!("cat {}/id_rsa; ls {}", ssh.display(), ssh.display()),
            "env",
            &format!("tr '\\0' '\\n' < /proc/{agent}/environ; echo environ-done"),
            &format!("head -c 100 /proc/{agent}/mem | od | head -3; echo mem-done"),
        ])
        .await;
    let all = results.join("\n");
    assert!(!all.contains("STORED-CRED"), "{all}");
    assert!(!all.contains("STORED-MCP-TOKEN"), "{all}");
    assert!(!all.contains("PRIVATE-KEY-MATERIAL"), "{all}");
    assert!(!all.contains("test-anthropic-key"), "{all}");
    assert!(!all.contains("test-openai-key"), "{all}");
    assert!(!results[2].contains("FERRITE_HOME="), "{all}");
}

/// The keys are not in the environment in `full` mode either.
#[tokio::test]
async fn full_mode_commands_get_no_keys() {
    let mut r = rig("full").await;
    let results = r.run_commands(&["env; echo env-done"]).await;
    assert!(results[0].contains("env-done"), "{results:?}");
    assert!(results[0].contains("PATH="), "{results:?}");
    assert!(!results[0].contains("test-anthropic-key"), "{results:?}");
    assert!(!results[0].contains("FERRITE_"), "{results:?}");
}

/// `setsid` and double forks leave nothing behind: not after the call, not after a `kill -9` of
/// the agent (within 1 s).
#[tokio::test]
async fn escaped_processes_die_with_the_call_and_with_the_agent() {
    for mode in ["auto", "full"] {
        let mut r = rig(mode).await;
        let after_call = r.ws.join("after-call.pid");
        let results = r
            .run_commands(&[&format!(
                "setsid sh -c 'echo $$ > {p}; exec sleep 300' > /dev/null 2>&1 & \
                 (sh -c 'sleep 301 & echo started' &) ; sleep 0.3; echo left",
                p = after_call.display()
            )])
            .await;
        if results[0].contains("was not run") {
            return;
        }
        let pid = wait_for_pid(&after_call).await;
        assert_gone_within(
            pid,
            Duration::from_secs(1),
            &format!("{mode}: after the call"),
        )
        .await;

        let on_kill = r.ws.join("on-kill.pid");
        r.fake.push(
            Script::new().tool_call(
                "k",
                "bash",
                json!({"command": format!(
                    "setsid sh -c 'echo $$ > {p}; exec sleep 300' > /dev/null 2>&1 & sleep 300",
                    p = on_kill.display()
                )})
                .to_string(),
            ),
        );
        let _prompt = r
            .client
            .send_request("session/prompt", text_prompt(&r.sid, "go"))
            .await;
        let pid = wait_for_pid(&on_kill).await;
        assert!(pid_alive(pid));
        let agent = r.client.pid().unwrap();
        let killed_at = Instant::now();
        std::process::Command::new("kill")
            .args(["-9", &agent.to_string()])
            .status()
            .unwrap();
        // Within 1 s of the kill, not of the agent being reaped.
        assert_gone_within(
            pid,
            Duration::from_secs(1),
            &format!("{mode}: agent killed"),
        )
        .await;
        eprintln!(
            "{mode}: gone {:?} after kill -9 of the agent",
            killed_at.elapsed()
        );
        let _ = r.client.wait_exit(Duration::from_secs(5)).await;
    }
}

/// Cancel sends TERM first (a command may clean up), then KILL after 2 s; the `cancelled` answer
/// does not wait for those 2 s.
#[tokio::test]
async fn cancel_sends_term_then_kill() {
    let mut r = rig("auto").await;
    let marker = r.ws.join("term.marker");
    let stubborn = r.ws.join("stubborn.pid");
    r.fake.push(Script::new().tool_call(
        "cancel-me",
        "bash",
        json!({"command": format!(
            "sh -c 'trap \"echo got-term > {m}; exit 0\" TERM; echo $$ > {m}.pid; while :; do sleep 0.05; done' & \
             trap '' TERM; echo $$ > {p}; while :; do sleep 0.05; done",
            m = marker.display(),
            p = stubborn.display()
        )})
        .to_string(),
    ));
    let prompt = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, "go"))
        .await;
    let pid = wait_for_pid(&stubborn).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(pid_alive(pid), "the command runs until cancelled");
    let polite = wait_for_pid(&r.ws.join("term.marker.pid")).await;
    assert!(pid_alive(polite), "polite runs until cancelled");
    let t = Instant::now();
    r.client
        .notify("session/cancel", json!({"sessionId": r.sid}))
        .await;
    let answer: Value = r.client.wait_answer(&prompt).await.ok();
    assert_eq!(answer["stopReason"], "cancelled");
    // Both loop forever: the answer at all is the cancel.
    assert!(t.elapsed() < HANG_GUARD, "{:?}", t.elapsed());
    // TERM first (the polite one's trap wrote its marker), then KILL for the one that ignores
    // it: gone, though it never ends by itself.
    assert_gone_within(pid, HANG_GUARD, "KILL after the grace period").await;
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default(),
        "got-term\n",
        "the command got TERM"
    );
}

/// Plan mode is read-only: not even `/dev/shm`, file modes or times outside.
#[tokio::test]
async fn plan_mode_writes_nothing() {
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("f.txt");
    std::fs::write(&file, "x").unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let shm = format!("/dev/shm/ferrite-plan-{}", std::process::id());
    let mut r = rig("plan").await;
    let results = r
        .run_commands(&[&format!(
            "echo x > {shm}; chmod 600 {f}; touch -d 2001-01-01 {f}; echo tried",
            f = file.display()
        )])
        .await;
    assert!(!Path::new(&shm).exists(), "{results:?}");
    let meta = std::fs::metadata(&file).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o644, "{results:?}");
    let year_2001 = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    assert!(meta.modified().unwrap() > year_2001, "{results:?}");
}

/// `ferrite doctor` says what the sandbox does not guarantee on this machine.
#[test]
fn doctor_lists_the_residual_risks_that_apply_here() {
    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(BIN)
        .arg("doctor")
        .env_clear()
        .env("FERRITE_HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not guaranteed here (see docs/sandbox.md):"),
        "{text}"
    );
    assert!(text.contains("`full` mode has no sandbox"), "{text}");
    // What this machine enforces for UNIX sockets (issue 34).
    assert!(text.contains("\nunix sockets: "), "{text}");
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    assert_eq!(text.contains("running as root"), root, "{text}");
}

/// Stdio MCP servers do not inherit the provider keys either; what their entry sets is kept.
#[tokio::test]
async fn mcp_servers_get_no_keys() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let servers = json!([{
        "name": "probe",
        "command": ferrite_test_support::mcp_server::stdio_server_bin(),
        "args": [],
        "env": [{"name": "MINE", "value": "kept"}],
    }]);
    // A configured provider's key variable, whatever its name, is not inherited either.
    std::fs::write(
        home.path().join("config.toml"),
        "[providers.local]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"LOCAL_TOKEN\"\n",
    )
    .unwrap();
    let (h, w) = (canon(home.path()), canon(ws.path()));
    let extra = vec![("LOCAL_TOKEN".to_owned(), "secret-local".to_owned())];
    let mut r = rig_with_servers(h, w, "auto", vec![home, ws], servers, extra).await;
    r.fake.push(Script::new().parallel_tool_calls(&[
        ("e1", "mcp__probe__env", r#"{"name":"ANTHROPIC_API_KEY"}"#),
        ("e2", "mcp__probe__env", r#"{"name":"FERRITE_HOME"}"#),
        ("e3", "mcp__probe__env", r#"{"name":"MINE"}"#),
        ("e4", "mcp__probe__env", r#"{"name":"LOCAL_TOKEN"}"#),
    ]));
    r.fake.push(Script::new().text("done"));
    let prompt = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, "go"))
        .await;
    r.client.wait_answer(&prompt).await.ok();
    let results = r.tool_results();
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(results[0].contains("<unset>"), "{results:?}");
    assert!(results[1].contains("<unset>"), "{results:?}");
    assert!(results[2].contains("kept"), "{results:?}");
    assert!(results[3].contains("<unset>"), "{results:?}");
}

/// `session/close` and EOF reach a process that called `setsid` too, and send TERM first.
#[tokio::test]
async fn close_and_eof_reach_processes_that_left_the_group() {
    for ending in ["close", "eof"] {
        let mut r = rig("auto").await;
        let pid_file = r.ws.join("escaped.pid");
        let marker = r.ws.join("term.marker");
        r.fake.push(
            Script::new().tool_call(
                "long",
                "bash",
                json!({"command": format!(
                    "setsid sh -c 'trap \"echo term > {m}; exit 0\" TERM; echo $$ > {p}; \
                     while :; do sleep 0.05; done' > /dev/null 2>&1 & sleep 300",
                    m = marker.display(),
                    p = pid_file.display()
                )})
                .to_string(),
            ),
        );
        let _prompt = r
            .client
            .send_request("session/prompt", text_prompt(&r.sid, "go"))
            .await;
        let pid = wait_for_pid(&pid_file).await;
        assert!(pid_alive(pid));
        let t = Instant::now();
        if ending == "close" {
            let close = r
                .client
                .send_request("session/close", json!({"sessionId": r.sid}))
                .await;
            r.client.wait_answer(&close).await;
        } else {
            r.client.close_stdin().await;
            let _ = r.client.wait_exit(Duration::from_secs(10)).await;
        }
        assert_gone_within(pid, Duration::from_secs(3), ending).await;
        eprintln!("{ending}: escaped process gone {:?} after", t.elapsed());
        assert_eq!(
            std::fs::read_to_string(&marker).unwrap_or_default(),
            "term\n",
            "{ending}: TERM first"
        );
    }
}

/// The default `sandbox.deny_read` hides the usual credential places under the user's home,
/// while the rest of the home stays readable and listable.
#[tokio::test]
async fn default_deny_read_hides_credentials_under_home() {
    let user_home = tempfile::tempdir().unwrap();
    let uh = canon(user_home.path());
    for (path, text) in [
        (".ssh/id_ed25519", "SSH-PRIVATE"),
        (".aws/credentials", "AWS-SECRET"),
        (".git-credentials", "GIT-TOKEN"),
        (".docker/config.json", "DOCKER-AUTH"),
        ("notes.txt", "plain notes"),
    ] {
        let file = uh.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (h, w) = (canon(home.path()), canon(ws.path()));
    let env = vec![("HOME".to_owned(), uh.display().to_string())];
    let mut r = rig_with_servers(h, w, "auto", vec![home, ws, user_home], json!([]), env).await;
    let results = r
        .run_commands(&[
            "cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.git-credentials ~/.docker/config.json; \
             cat ~/notes.txt; echo; ls -A ~ | tr '\\n' ' '",
        ])
        .await;
    let all = results.join("\n");
    if all.contains("was not run") {
        return;
    }
    for secret in ["SSH-PRIVATE", "AWS-SECRET", "GIT-TOKEN", "DOCKER-AUTH"] {
        assert!(!all.contains(secret), "{all}");
    }
    assert!(all.contains("plain notes"), "{all}");
    assert!(all.contains(".ssh"), "names stay listable: {all}");
}
