//! Starting, failing, dying and stopping: one server's trouble never takes the others down,
//! and no server process outlives its session.

use std::time::{Duration, Instant};

use ferrite_core::env::Env;
use ferrite_core::mcp::{McpLauncher, McpServerSpec, McpTransport, ToolProvider};
use ferrite_core::tools::{Tool, ToolError};
use ferrite_mcp::Launcher;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

fn names(tools: &[std::sync::Arc<dyn Tool>]) -> Vec<String> {
    tools.iter().map(|t| t.name().to_owned()).collect()
}

#[tokio::test]
async fn a_missing_command_is_noticed_and_the_other_server_works() {
    let missing = McpServerSpec {
        name: "ghost".into(),
        transport: McpTransport::Stdio {
            command: "/nonexistent/ferrite-no-such-server".into(),
            args: vec![],
            env: Default::default(),
        },
        cwd: None,
        env_remove: vec![],
    };
    let (servers, notices) = start(launcher(), vec![missing, stdio("good", &[])]).await;
    let echo = tool(&servers, "mcp__good__echo").await;
    assert_eq!(
        call(&echo, json!({"text": "hi"})).await,
        Ok(text_output("hi"))
    );
    assert!(
        names(&servers.tools().await)
            .iter()
            .all(|n| n.starts_with("mcp__good__"))
    );
    assert_eq!(
        notices.all(),
        [
            "MCP server `ghost` failed to start: cannot run `/nonexistent/ferrite-no-such-server`: \
          No such file or directory (os error 2)"
        ]
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn a_server_exiting_at_start_is_noticed_with_its_stderr() {
    let (servers, notices) = start(launcher(), vec![stdio("quitter", &["--exit-at-start"])]).await;
    assert_eq!(servers.tools().await.len(), 0);
    let notices = notices.all();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("MCP server `quitter` failed to start: "),
        "{notices:?}"
    );
    assert!(notices[0].contains("no config, giving up"), "{notices:?}");
}

/// `launch` returns at once, whatever the servers do: here one would keep it for ten minutes.
#[tokio::test]
async fn launch_does_not_wait_for_a_server_that_never_initializes() {
    let launcher = Launcher::new(Duration::from_secs(600), Duration::from_secs(20));
    let started = Instant::now();
    let (servers, notices) = start(launcher, vec![stdio("mute", &["--never-initialize"])]).await;
    assert!(started.elapsed() < HANG_GUARD);
    assert_eq!(notices.all(), Vec::<String>::new(), "still starting");
    servers.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_initializes_times_out_and_is_killed() {
    let launcher = Launcher::new(Duration::from_millis(700), Duration::from_secs(20));
    let started = Instant::now();
    let (servers, notices) = start(
        launcher,
        vec![stdio("mute", &["--never-initialize"]), stdio("good", &[])],
    )
    .await;
    let tools = servers.tools().await;
    // Without the startup timeout, the tools would wait for `mute` forever.
    assert!(started.elapsed() < HANG_GUARD);
    assert!(!tools.is_empty());
    assert!(names(&tools).iter().all(|n| n.starts_with("mcp__good__")));
    assert_eq!(
        notices.all(),
        [
            "MCP server `mute` failed to start: it did not finish starting (initialize, tools/list) \
          within 0.7 s"
        ]
    );
    let mute = tag("mute");
    eventually("the mute server is killed", || {
        processes_with(&mute).is_empty()
    })
    .await;
    servers.shutdown().await;
}

#[tokio::test]
async fn a_server_crashing_mid_call_is_noticed_once_and_the_other_works() {
    let (servers, notices) = start(launcher(), vec![stdio("a", &[]), stdio("b", &[])]).await;
    let crash = tool(&servers, "mcp__a__crash").await;
    let a_echo = tool(&servers, "mcp__a__echo").await;
    let b_echo = tool(&servers, "mcp__b__echo").await;

    let Err(ToolError::RespondToModel(err)) = call(&crash, json!({})).await else {
        panic!("the crash call succeeded");
    };
    assert!(err.starts_with("MCP server `a` is not running: "), "{err}");
    assert!(
        err.contains("crashing on purpose"),
        "stderr explains it: {err}"
    );
    // Later calls say the same, without a second notice.
    let Err(ToolError::RespondToModel(again)) = call(&a_echo, json!({"text": "x"})).await else {
        panic!("a call to a dead server succeeded");
    };
    assert_eq!(again, err);
    let notices = notices.all();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("MCP server `a` stopped: "),
        "{notices:?}"
    );

    assert_eq!(
        call(&b_echo, json!({"text": "ok"})).await,
        Ok(text_output("ok"))
    );
    // The dead server's tools are no longer offered.
    assert!(
        names(&servers.tools().await)
            .iter()
            .all(|n| n.starts_with("mcp__b__"))
    );
    servers.shutdown().await;
}

async fn server_pids(servers: &ferrite_mcp::McpServers, name: &str) -> (u32, u32) {
    let pid = tool(servers, &format!("mcp__{name}__pid")).await;
    let out = call(&pid, json!({})).await.unwrap();
    let v: Value = serde_json::from_str(&out.text).unwrap();
    (
        v["pid"].as_u64().unwrap() as u32,
        v["grandchild"].as_u64().unwrap() as u32,
    )
}

#[tokio::test]
async fn shutdown_leaves_no_process_behind() {
    let (servers, notices) = start(launcher(), vec![stdio("tree", &["--grandchild"])]).await;
    let (pid, grandchild) = server_pids(&servers, "tree").await;
    assert!(!is_gone(pid) && !is_gone(grandchild));
    servers.shutdown().await;
    eventually("the server and its child are gone", || {
        is_gone(pid) && is_gone(grandchild)
    })
    .await;
    // Idempotent, and calls after it fail without a notice.
    servers.shutdown().await;
    assert_eq!(notices.all(), Vec::<String>::new());
}

#[tokio::test]
async fn dropping_the_provider_kills_the_servers() {
    let (servers, _) = start(launcher(), vec![stdio("tree", &["--grandchild"])]).await;
    let (pid, grandchild) = server_pids(&servers, "tree").await;
    // A tool still held elsewhere (a registry) does not keep the process alive.
    let held = tool(&servers, "mcp__tree__echo").await;
    drop(servers);
    eventually("the server and its child are gone", || {
        is_gone(pid) && is_gone(grandchild)
    })
    .await;
    assert!(matches!(
        call(&held, json!({"text": "x"})).await,
        Err(ToolError::RespondToModel(_))
    ));
}

#[tokio::test]
async fn shutdown_while_starting_kills_the_server() {
    let (servers, notices) =
        start(launcher(), vec![stdio("slowpoke", &["--never-initialize"])]).await;
    let marker = tag("slowpoke");
    eventually("the server runs", || !processes_with(&marker).is_empty()).await;
    servers.shutdown().await;
    eventually("the server is gone", || processes_with(&marker).is_empty()).await;
    assert_eq!(servers.tools().await.len(), 0);
    assert_eq!(notices.all(), Vec::<String>::new());
}

#[tokio::test]
async fn the_launcher_works_through_the_core_trait() {
    let launcher: std::sync::Arc<dyn McpLauncher> = std::sync::Arc::new(Launcher::default());
    let notices = Notices::default();
    let provider = launcher.launch(vec![stdio("fake", &[])], notices.sink(), None);
    assert!(names(&provider.tools().await).contains(&"mcp__fake__echo".to_owned()));
    provider.shutdown().await;
}

#[test]
fn timeouts_come_from_the_environment() {
    let env = Env::from_pairs([
        ("FERRITE_MCP_STARTUP_TIMEOUT_MS", "1500"),
        ("FERRITE_MCP_CALL_TIMEOUT_MS", "250"),
    ]);
    assert_eq!(
        Launcher::from_env(&env, None),
        Launcher::new(Duration::from_millis(1500), Duration::from_millis(250))
    );
    assert_eq!(
        Launcher::from_env(
            &Env::from_pairs([("FERRITE_MCP_CALL_TIMEOUT_MS", "x")]),
            None
        ),
        Launcher::default()
    );
}
