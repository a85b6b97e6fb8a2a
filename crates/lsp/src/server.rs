//! One running server: a task that owns the process (under its supervisor, in its sandbox),
//! initializes it, sends it the documents in order, answers its requests, keeps what it reports
//! (`docs`), and stops it when the handle is dropped or the session shuts it down.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ferrite_core::exec::Sandbox;
use ferrite_exec::{ExecRunner, ServiceSpec};
use lsp_types::{PublishDiagnosticsParams, Url};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use crate::docs::Docs;
use crate::registry::{Launch, section};
use crate::rpc::{Connection, Incoming};

/// How long `initialize` may take before the server counts as failed to start.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server gets to answer `shutdown` and exit before its tree is stopped.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    Starting,
    Ready,
    /// It exited or could not start; the sentence says which.
    Exited(String),
}

enum Cmd {
    Open {
        uri: Url,
        language: String,
        text: String,
        version: i32,
    },
    Change {
        uri: Url,
        text: String,
        version: i32,
    },
    Shutdown(oneshot::Sender<()>),
}

/// What starts a server.
pub(crate) struct Start<'a> {
    pub name: &'a str,
    pub program: &'a Path,
    pub args: &'a [String],
    pub root: &'a Path,
    pub sandbox: Sandbox,
    pub env_remove: Vec<String>,
    pub launch: Launch,
}

/// The handle on a running server. Dropping it stops the server.
/// How the errors of a document are had after a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pull {
    /// `textDocument/diagnostic`.
    Lsp,
    /// tsserver's `semanticDiagnosticsSync` and `syntacticDiagnosticsSync`.
    TsServer,
    /// The server pushes them.
    Push,
}

pub(crate) struct Server {
    pub name: String,
    cmds: mpsc::UnboundedSender<Cmd>,
    pub docs: Arc<Docs>,
    phase: watch::Receiver<Phase>,
}

impl Server {
    pub(crate) fn start(runner: Arc<ExecRunner>, start: Start<'_>) -> Server {
        let (cmds, cmd_rx) = mpsc::unbounded_channel();
        let (phase_tx, phase) = watch::channel(Phase::Starting);
        let docs = Arc::new(Docs::default());
        // Made here, outside the sandbox: where a protected path lies in the temp directory
        // (FERRITE_HOME under /tmp), the sandbox grants the temp directory's existing children
        // but nothing new directly in it (`ferrite-exec`'s `sandbox/carve.rs`), and servers
        // make their temp and cache directories at start (typescript-language-server fails
        // `initialize` without one).
        let cache = std::env::temp_dir().join("ferrite-lsp-cache");
        let tmp = std::env::temp_dir().join("ferrite-lsp-tmp");
        for dir in [&cache, &tmp] {
            if let Err(e) = std::fs::create_dir_all(dir) {
                tracing::debug!(dir = %dir.display(), "cannot make a language server directory: {e}");
            }
        }
        let spec = ServiceSpec {
            program: start.program.to_owned(),
            args: start.args.to_vec(),
            cwd: start.root.to_owned(),
            sandbox: start.sandbox,
            env_remove: start.env_remove,
            env: vec![
                ("TMPDIR".into(), tmp.to_string_lossy().into_owned()),
                (
                    "XDG_CACHE_HOME".into(),
                    cache.to_string_lossy().into_owned(),
                ),
                (
                    "GOCACHE".into(),
                    cache.join("go-build").to_string_lossy().into_owned(),
                ),
            ],
        };
        let actor = Actor {
            name: start.name.to_owned(),
            root: start.root.to_owned(),
            launch: start.launch,
            docs: docs.clone(),
            phase: phase_tx,
        };
        tokio::spawn(actor.run(runner, spec, cmd_rx));
        Server {
            name: start.name.to_owned(),
            cmds,
            docs,
            phase,
        }
    }

    pub(crate) fn phase(&self) -> Phase {
        self.phase.borrow().clone()
    }

    pub(crate) fn watch_phase(&self) -> watch::Receiver<Phase> {
        self.phase.clone()
    }

    pub(crate) fn open(&self, uri: &Url, language: &str, text: &str, version: i32) {
        let _ = self.cmds.send(Cmd::Open {
            uri: uri.clone(),
            language: language.to_owned(),
            text: text.to_owned(),
            version,
        });
    }

    pub(crate) fn change(&self, uri: &Url, text: &str, version: i32) {
        let _ = self.cmds.send(Cmd::Change {
            uri: uri.clone(),
            text: text.to_owned(),
            version,
        });
    }

    /// Asks the server to shut down and waits until its tree is gone (or the grace passed).
    pub(crate) async fn shutdown(&self) {
        let (tx, rx) = oneshot::channel();
        if self.cmds.send(Cmd::Shutdown(tx)).is_ok() {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE * 2, rx).await;
        }
    }
}

struct Actor {
    name: String,
    root: PathBuf,
    launch: Launch,
    docs: Arc<Docs>,
    phase: watch::Sender<Phase>,
}

impl Actor {
    async fn run(
        self,
        runner: Arc<ExecRunner>,
        spec: ServiceSpec,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
    ) {
        let mut service = match runner.spawn_service(&spec) {
            Ok(s) => s,
            Err(e) => {
                let _ = self
                    .phase
                    .send(Phase::Exited(format!("{} could not start: {e}", self.name)));
                return;
            }
        };
        tracing::debug!(server = %self.name, supervisor = ?service.id(), "language server started");
        let (Some(stdin), Some(stdout)) = (service.stdin.take(), service.stdout.take()) else {
            let _ = self
                .phase
                .send(Phase::Exited(format!("{} has no pipes", self.name)));
            return;
        };
        if let Some(stderr) = service.stderr.take() {
            let name = self.name.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(server = %name, "{line}");
                }
            });
        }
        let (conn, incoming) = Connection::start(BufReader::new(stdout), stdin);
        tokio::spawn(answer(
            conn.clone(),
            incoming,
            self.docs.clone(),
            self.launch.settings.clone(),
        ));
        let initialized = tokio::select! {
            r = tokio::time::timeout(INITIALIZE_TIMEOUT, self.initialize(&conn)) => r.ok().flatten(),
            _ = service.wait() => None,
        };
        let Some(lsp_pull) = initialized else {
            let _ = self.phase.send(Phase::Exited(format!(
                "{} did not start (it exited or did not answer `initialize`)",
                self.name
            )));
            return;
        };
        let pull = self.pull(lsp_pull);
        let _ = self.phase.send(Phase::Ready);
        loop {
            tokio::select! {
                cmd = cmds.recv() => match cmd {
                    Some(Cmd::Shutdown(done)) => {
                        stop(&conn, &mut service).await;
                        let _ = done.send(());
                        return;
                    }
                    None => {
                        stop(&conn, &mut service).await;
                        return;
                    }
                    Some(cmd) => self.send(&conn, cmd, pull),
                },
                status = service.wait() => {
                    let how = match status {
                        Ok(s) => s.to_string(),
                        Err(e) => e.to_string(),
                    };
                    let _ = self.phase.send(Phase::Exited(format!("{} stopped unexpectedly ({how})", self.name)));
                    return;
                }
            }
        }
    }

    /// How its diagnostics are had (`lsp_pull`: it offers `textDocument/diagnostic`).
    fn pull(&self, lsp_pull: bool) -> Pull {
        let pull = if self.launch.tsserver_pull {
            Pull::TsServer
        } else if lsp_pull {
            Pull::Lsp
        } else {
            Pull::Push
        };
        // A pulled report says which version it is for; a push that does not would be taken
        // for one on the content last sent (typescript-language-server's first push after a
        // change holds the syntax errors only).
        self.docs.set_pulled(pull != Pull::Push);
        pull
    }

    /// `initialize` and `initialized`; `Some(pull)`: whether it takes pull diagnostics.
    async fn initialize(&self, conn: &Connection) -> Option<bool> {
        let root = Url::from_directory_path(&self.root).ok()?;
        let name = self
            .root
            .file_name()
            .map_or_else(|| "root".into(), |n| n.to_string_lossy().into_owned());
        let params = json!({
            // Not our pid: servers poll it with `kill(pid, 0)` and exit when that fails, which
            // it always does from inside the sandbox (Landlock scopes signals). The supervisor
            // stops them when the agent dies.
            "processId": null,
            "clientInfo": {"name": "ferrite", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root,
            "rootPath": self.root,
            "workspaceFolders": [{"uri": root, "name": name}],
            "initializationOptions": self.launch.init_options,
            "capabilities": {
                "workspace": {"configuration": true, "workspaceFolders": true},
                "textDocument": {
                    "synchronization": {"dynamicRegistration": false, "didSave": false},
                    "publishDiagnostics": {"versionSupport": true},
                    "diagnostic": {"dynamicRegistration": false},
                },
                "window": {"workDoneProgress": false},
                "general": {"positionEncodings": ["utf-16"]},
            },
        });
        let result = conn.request("initialize", params).await.ok()?;
        let pull = result
            .pointer("/capabilities/diagnosticProvider")
            .is_some_and(|v| !v.is_null() && *v != Value::Bool(false));
        conn.notify("initialized", json!({}));
        conn.notify(
            "workspace/didChangeConfiguration",
            json!({"settings": self.launch.settings}),
        );
        Some(pull)
    }

    fn send(&self, conn: &Connection, cmd: Cmd, pull: Pull) {
        let (uri, version) = match cmd {
            Cmd::Open {
                uri,
                language,
                text,
                version,
            } => {
                conn.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}}),
                );
                (uri, version)
            }
            Cmd::Change { uri, text, version } => {
                conn.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
                );
                (uri, version)
            }
            Cmd::Shutdown(_) => return,
        };
        if pull == Pull::TsServer {
            crate::tsserver::pull(conn, self.docs.clone(), uri, version);
            return;
        }
        if pull == Pull::Lsp {
            let answer = conn.request(
                "textDocument/diagnostic",
                json!({"textDocument": {"uri": uri}}),
            );
            let docs = self.docs.clone();
            tokio::spawn(async move {
                if let Ok(report) = answer.await
                    && report.get("kind").and_then(Value::as_str) == Some("full")
                    && let Some(items) = report.get("items")
                    && let Ok(items) = serde_json::from_value(items.clone())
                {
                    docs.report(&uri, Some(version), items);
                }
            });
        }
    }
}

/// `shutdown`, `exit`, and the tree stopped if it is still there after the grace.
async fn stop(conn: &Connection, service: &mut ferrite_exec::Service) {
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn.request("shutdown", Value::Null)).await;
    conn.notify("exit", Value::Null);
    if tokio::time::timeout(SHUTDOWN_GRACE, service.wait())
        .await
        .is_err()
    {
        service.terminate();
    }
}

/// What the server sends on its own: diagnostics are kept; its requests are answered (its
/// settings for `workspace/configuration`, an empty answer for the rest: progress tokens,
/// registrations).
async fn answer(
    conn: Connection,
    mut incoming: mpsc::UnboundedReceiver<Incoming>,
    docs: Arc<Docs>,
    settings: Value,
) {
    while let Some(message) = incoming.recv().await {
        match message {
            Incoming::Notification { method, params }
                if method == "textDocument/publishDiagnostics" =>
            {
                if let Ok(p) = serde_json::from_value::<PublishDiagnosticsParams>(params)
                    && (p.version.is_some() || !docs.pulled())
                {
                    docs.report(&p.uri, p.version, p.diagnostics);
                }
            }
            Incoming::Notification { .. } => {}
            Incoming::Request { id, method, params } => {
                let result = match method.as_str() {
                    "workspace/configuration" => Value::Array(
                        params
                            .get("items")
                            .and_then(Value::as_array)
                            .map(|items| {
                                items
                                    .iter()
                                    .map(|i| {
                                        section(&settings, i.get("section").and_then(Value::as_str))
                                            .clone()
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    ),
                    "workspace/workspaceFolders" => Value::Null,
                    _ => Value::Null,
                };
                conn.respond(id, result);
            }
        }
    }
}
