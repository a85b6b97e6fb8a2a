//! A session's servers: one per (project root, server), started the first time a file of its
//! language is edited, restarted with backoff after a crash (the user is told once), replaced
//! when the session's mode or the workspace's trust changes what it may do, all stopped with the
//! session.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrite_core::config::{LspConfig, MAX_BACKOFF_MS};
use ferrite_core::exec::Sandbox;
use ferrite_core::lsp::{
    Before, Diagnostic, FileReport, FileState, LanguageServers, LspScope, NoticeSink,
};
use ferrite_exec::ExecRunner;
use futures::future::BoxFuture;
use lsp_types::Url;

use crate::docs::Report;
use crate::registry::{self, ServerDef};
use crate::server::{Phase, Server, Start};

/// What a server was started with: another scope needs another server.
#[derive(Debug, Clone, PartialEq)]
struct Terms {
    command: Vec<String>,
    sandbox: Sandbox,
    trusted: bool,
}

struct Slot {
    server: Arc<Server>,
    terms: Terms,
    /// Restarts so far; the next one waits `restart_ms * 2^(crashes-1)` (the first restart is
    /// at once).
    crashes: u32,
    not_before: Instant,
    told: bool,
}

pub(crate) struct Servers {
    runner: Arc<ExecRunner>,
    notices: NoticeSink,
    slots: Mutex<HashMap<(PathBuf, String), Slot>>,
    /// The root markers the workspace's roots hold, asked before every model request.
    markers: crate::markers::Markers,
}

/// Which server handles a file, and where.
enum Pick {
    None,
    /// Not allowed in this workspace (its trust): the server's name, and why.
    Refused(String, String),
    /// The server stopped and waits out its restart delay: the server's name, and why.
    Waiting(String, String),
    Server(Arc<Server>, &'static str),
}

impl Servers {
    pub(crate) fn new(runner: Arc<ExecRunner>, notices: NoticeSink) -> Self {
        Servers {
            runner,
            notices,
            slots: Mutex::default(),
            markers: Default::default(),
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<(PathBuf, String), Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The running server for `path`, started (or restarted) if need be.
    fn pick(&self, scope: &LspScope, path: &Path) -> Pick {
        let Some(language) = registry::language_of(path) else {
            return Pick::None;
        };
        let defs = registry::servers(&scope.config);
        // The first server of the language whose program is there.
        let Some((def, program)) = defs
            .iter()
            .filter(|d| d.languages.iter().any(|l| l == language))
            .find_map(|d| Some((d, registry::find_program(d.command.first()?)?)))
        else {
            return Pick::None;
        };
        let Some(root) = registry::root_for(path, &def.root_markers, &scope.roots) else {
            return Pick::None;
        };
        let launch = match registry::launch(def, &program, scope.trusted) {
            Ok(l) => l,
            Err(why) => return Pick::Refused(def.name.clone(), why),
        };
        let terms = Terms {
            command: def.command.clone(),
            sandbox: scope.sandbox.clone(),
            trusted: scope.trusted,
        };
        let mut slots = self.slots();
        let key = (root.clone(), def.name.clone());
        if let Some(slot) = slots.get_mut(&key)
            && slot.terms == terms
        {
            match slot.server.phase() {
                Phase::Starting | Phase::Ready => {
                    return Pick::Server(slot.server.clone(), language);
                }
                Phase::Exited(why) => {
                    if !slot.told {
                        slot.told = true;
                        (self.notices)(format!(
                            "The language server {why}. Ferrite restarts it (with a growing \
                             delay if it keeps stopping); edits go on without its diagnostics \
                             meanwhile."
                        ));
                    }
                    let now = Instant::now();
                    if now < slot.not_before {
                        let secs = (slot.not_before - now).as_secs() + 1;
                        return Pick::Waiting(
                            def.name.clone(),
                            format!("{why}; it restarts in {secs} s"),
                        );
                    }
                    slot.crashes += 1;
                    slot.not_before = now + backoff(&scope.config, slot.crashes);
                    slot.server = Arc::new(self.start(def, &program, &root, scope, launch));
                    return Pick::Server(slot.server.clone(), language);
                }
            }
        }
        let server = Arc::new(self.start(def, &program, &root, scope, launch));
        slots.insert(
            key,
            Slot {
                server: server.clone(),
                terms,
                crashes: 0,
                not_before: Instant::now(),
                told: false,
            },
        );
        Pick::Server(server, language)
    }

    fn start(
        &self,
        def: &ServerDef,
        program: &Path,
        root: &Path,
        scope: &LspScope,
        launch: registry::Launch,
    ) -> Server {
        tracing::debug!(server = %def.name, root = %root.display(), "starting a language server");
        Server::start(
            self.runner.clone(),
            Start {
                name: &def.name,
                program,
                args: def.command.get(1..).unwrap_or_default(),
                root,
                sandbox: scope.sandbox.clone(),
                env_remove: scope.env_remove.clone(),
                launch,
            },
        )
    }

    async fn changed_inner(
        &self,
        scope: &LspScope,
        path: &Path,
        before: Before<'_>,
        text: &str,
    ) -> Option<FileReport> {
        let deadline = tokio::time::Instant::now() + scope.wait();
        let (server, language) = match self.pick(scope, path) {
            // A server this workspace's trust does not allow says nothing after each edit: the
            // same sentence on every edit of the file would only cost the model tokens (the
            // `diagnostics` tool, offered where a server can run, says why).
            Pick::None | Pick::Refused(..) => return None,
            Pick::Waiting(server, why) => return Some(unavailable(path, server, why)),
            Pick::Server(s, l) => (s, l),
        };
        let uri = Url::from_file_path(path).ok()?;
        let opened = server.docs.read(&uri, |d| d.version > 0).unwrap_or(false);
        let baseline = if opened {
            server
                .docs
                .read(&uri, |d| d.current().map(|r| r.errors.clone()))
                .flatten()
        } else {
            match before {
                Before::New => Some(vec![]),
                Before::Unknown => None,
                Before::Text(old) => {
                    // The errors of the old content first: those the edit did not bring.
                    send(&server, &uri, language, old);
                    wait_current(&server, &uri, deadline)
                        .await
                        .map(|r| r.errors)
                }
            }
        };
        send(&server, &uri, language, text);
        let state = match wait_current(&server, &uri, deadline).await {
            Some(report) => FileState::Ready(diagnostics(&report, baseline.as_deref())),
            None => match server.phase() {
                Phase::Exited(why) => FileState::Unavailable(why),
                Phase::Starting | Phase::Ready => FileState::NotReady,
            },
        };
        Some(FileReport {
            path: path.to_owned(),
            server: server.name.clone(),
            state,
        })
    }

    async fn diagnostics_inner(&self, scope: &LspScope, path: Option<&Path>) -> Vec<FileReport> {
        let Some(path) = path else {
            return self.everything();
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            return vec![];
        };
        let deadline = tokio::time::Instant::now() + scope.wait();
        let (server, language) = match self.pick(scope, path) {
            Pick::None => return vec![],
            Pick::Refused(server, why) | Pick::Waiting(server, why) => {
                return vec![unavailable(path, server, why)];
            }
            Pick::Server(s, l) => (s, l),
        };
        let Ok(uri) = Url::from_file_path(path) else {
            return vec![];
        };
        let same = server
            .docs
            .read(&uri, |d| d.version > 0 && d.text == text)
            .unwrap_or(false);
        if !same {
            send(&server, &uri, language, &text);
        }
        let state = match wait_current(&server, &uri, deadline).await {
            Some(report) => FileState::Ready(diagnostics(&report, None)),
            None => FileState::NotReady,
        };
        vec![FileReport {
            path: path.to_owned(),
            server: server.name.clone(),
            state,
        }]
    }

    /// The newest report of every document of every server, the ones with errors.
    fn everything(&self) -> Vec<FileReport> {
        let servers: Vec<Arc<Server>> = self.slots().values().map(|s| s.server.clone()).collect();
        let mut all = vec![];
        for server in servers {
            for (uri, report) in server.docs.latest() {
                if report.errors.is_empty() {
                    continue;
                }
                let Ok(path) = uri.to_file_path() else {
                    continue;
                };
                all.push(FileReport {
                    path,
                    server: server.name.clone(),
                    state: FileState::Ready(diagnostics(&report, None)),
                });
            }
        }
        all
    }
}

/// The wait before the restart after `restarts` of them: `restart_ms`, doubled each time, up to
/// a minute (or `restart_ms`, if longer).
fn backoff(config: &LspConfig, restarts: u32) -> Duration {
    let base = config.restart_ms;
    let grown = base.saturating_mul(1 << restarts.saturating_sub(1).min(16));
    Duration::from_millis(grown.min(MAX_BACKOFF_MS.max(base)))
}

fn unavailable(path: &Path, server: String, why: String) -> FileReport {
    FileReport {
        path: path.to_owned(),
        server,
        state: FileState::Unavailable(why),
    }
}

/// Sends `text` as the document's next version (opening it the first time).
fn send(server: &Server, uri: &Url, language: &str, text: &str) {
    server.docs.with(uri, |doc, tick| {
        doc.version += 1;
        doc.text = text.to_owned();
        doc.sent_seq = tick;
        if doc.version == 1 {
            server.open(uri, language, text, doc.version);
        } else {
            server.change(uri, text, doc.version);
        }
    });
}

/// Waits until the server reported on the content last sent (or exited, or the deadline).
async fn wait_current(
    server: &Server,
    uri: &Url,
    deadline: tokio::time::Instant,
) -> Option<Report> {
    let mut reported = server.docs.subscribe();
    let mut phase = server.watch_phase();
    loop {
        if let Some(r) = server.docs.read(uri, |d| d.current().cloned()).flatten() {
            return Some(r);
        }
        if matches!(*phase.borrow(), Phase::Exited(_)) {
            return None;
        }
        tokio::select! {
            _ = reported.changed() => {}
            _ = phase.changed() => {}
            () = tokio::time::sleep_until(deadline) => return None,
        }
    }
}

/// A report's errors in core's terms, those not in `baseline` marked as introduced (compared
/// by message, as many times as the baseline has each: lines move with an edit, messages
/// don't). Without a baseline none is marked.
fn diagnostics(report: &Report, baseline: Option<&[lsp_types::Diagnostic]>) -> Vec<Diagnostic> {
    let mut old: Vec<&str> = baseline
        .unwrap_or_default()
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    report
        .errors
        .iter()
        .map(|d| {
            let seen = old.iter().position(|m| *m == d.message);
            if let Some(i) = seen {
                old.swap_remove(i);
            }
            Diagnostic {
                line: d.range.start.line + 1,
                column: d.range.start.character + 1,
                message: d.message.clone(),
                introduced: baseline.is_some() && seen.is_none(),
            }
        })
        .collect()
}

impl LanguageServers for Servers {
    fn changed<'a>(
        &'a self,
        scope: &'a LspScope,
        path: &'a Path,
        before: Before<'a>,
        text: &'a str,
    ) -> BoxFuture<'a, Option<FileReport>> {
        Box::pin(self.changed_inner(scope, path, before, text))
    }

    fn diagnostics<'a>(
        &'a self,
        scope: &'a LspScope,
        path: Option<&'a Path>,
    ) -> BoxFuture<'a, Vec<FileReport>> {
        Box::pin(self.diagnostics_inner(scope, path))
    }

    fn can_run(&self, config: &LspConfig, trusted: bool, roots: &[PathBuf]) -> bool {
        config.enabled
            && registry::servers(config).iter().any(|def| {
                let marked = def.root_markers.is_empty()
                    || roots
                        .iter()
                        .any(|r| def.root_markers.iter().any(|m| self.markers.has(r, m)));
                marked
                    && def
                        .command
                        .first()
                        .and_then(|p| registry::find_program(p))
                        .is_some_and(|program| registry::launch(def, &program, trusted).is_ok())
            })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let servers: Vec<Arc<Server>> = self.slots().drain().map(|(_, s)| s.server).collect();
            futures::future::join_all(servers.iter().map(|s| s.shutdown())).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_wait_longer_each_time_up_to_a_minute_or_restart_ms() {
        let mut config = LspConfig::default();
        let secs = |c: &LspConfig, n| backoff(c, n).as_secs();
        assert_eq!([1, 2, 3].map(|n| secs(&config, n)), [2, 4, 8]);
        assert_eq!(secs(&config, 40), 60);
        config.restart_ms = 3_600_000;
        assert_eq!(secs(&config, 1), 3600);
        assert_eq!(secs(&config, 5), 3600);
    }
}
