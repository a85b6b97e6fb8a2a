use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrite_core::mcp::{McpServerSpec, McpTransport, NoticeSink};
use ferrite_core::tools::{OutputLimits, ToolError, ToolOutput};
use ferrite_mcp::{Launcher, McpServers, McpTool};
use ferrite_test_support::mcp_server::stdio_server_bin;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Generous timeouts: tests that need short ones build their own launcher.
pub fn launcher() -> Launcher {
    Launcher::new(Duration::from_secs(20), Duration::from_secs(20))
}

/// The fake server over stdio, with `flags`. A unique `--tag` lets a test find its processes.
pub fn stdio(name: &str, flags: &[&str]) -> McpServerSpec {
    let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    args.push(format!("--tag={}", tag(name)));
    McpServerSpec {
        name: name.into(),
        transport: McpTransport::Stdio {
            command: stdio_server_bin().display().to_string(),
            args,
            env: BTreeMap::new(),
        },
        cwd: None,
        env_remove: vec![],
    }
}

pub fn http(name: &str, url: &str, headers: &[(&str, &str)]) -> McpServerSpec {
    McpServerSpec {
        name: name.into(),
        transport: McpTransport::Http {
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
        cwd: None,
        env_remove: vec![],
    }
}

/// A marker unique to this test process and server name, put on the server's command line.
pub fn tag(name: &str) -> String {
    format!("ferrite-mcp-test-{}-{name}", std::process::id())
}

/// The notices a session received.
#[derive(Clone, Default)]
pub struct Notices(Arc<Mutex<Vec<String>>>);

impl Notices {
    pub fn sink(&self) -> NoticeSink {
        let all = self.0.clone();
        Arc::new(move |n| all.lock().unwrap().push(n))
    }

    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

pub async fn start(launcher: Launcher, servers: Vec<McpServerSpec>) -> (Arc<McpServers>, Notices) {
    let notices = Notices::default();
    let servers = launcher.start(servers, notices.sink());
    (servers, notices)
}

pub async fn tool(servers: &McpServers, name: &str) -> Arc<McpTool> {
    let tools = servers.mcp_tools().await;
    let names: Vec<String> = tools
        .iter()
        .map(|t| ferrite_core::tools::Tool::name(&**t).to_owned())
        .collect();
    tools
        .into_iter()
        .find(|t| ferrite_core::tools::Tool::name(&**t) == name)
        .unwrap_or_else(|| panic!("no tool {name} in {names:?}"))
}

/// How long a test waits before it calls a server or call hung: a guard, not a claim about
/// speed. Where a test checks that something ends early, the way it should not end takes longer
/// than this (a call of minutes, a startup timeout never reached).
pub const HANG_GUARD: Duration = Duration::from_secs(60);

pub const LIMITS: OutputLimits = OutputLimits {
    max_bytes: 100_000,
    max_lines: 2_000,
};

pub async fn call(tool: &McpTool, input: Value) -> Result<ToolOutput, ToolError> {
    tool.invoke(input, &CancellationToken::new(), LIMITS).await
}

pub fn text_output(text: &str) -> ToolOutput {
    ToolOutput {
        text: text.into(),
        content: vec![ferrite_store::content::ToolContent::Text { text: text.into() }],
    }
}

/// Pids of live processes whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(marker) && !is_gone(pid) {
            pids.push(pid);
        }
    }
    pids
}

/// Gone, or a zombie waiting to be reaped (dead all the same).
pub fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the parenthesized command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits up to 5 s for `check`.
pub async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..100 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {what}");
}
