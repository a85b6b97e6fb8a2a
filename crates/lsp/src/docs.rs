//! What one server knows of the documents it was sent: the version and text last sent, and the
//! diagnostics it reported (pushed or pulled), each stamped with the version it is for (when the
//! server says) and the order it arrived in, so a waiter can tell a report on the new content
//! from one on the old.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use lsp_types::{Diagnostic, DiagnosticSeverity, Url};
use tokio::sync::watch;

/// One report of a document's errors.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Report {
    pub version: Option<i32>,
    /// When it arrived, in the order of [`Docs::tick`].
    pub seq: u64,
    /// Severity error only, in the server's order.
    pub errors: Vec<Diagnostic>,
}

#[derive(Debug, Default)]
pub(crate) struct Doc {
    /// The version last sent (0: never opened).
    pub version: i32,
    pub text: String,
    /// When the last change was sent, in the order of [`Docs::tick`].
    pub sent_seq: u64,
    /// The latest reports, newest last (a few are kept).
    pub reports: Vec<Report>,
}

impl Doc {
    /// The newest report on the content last sent: its version says so, or (a server that
    /// does not say) it came after the content was sent.
    pub fn current(&self) -> Option<&Report> {
        self.reports.iter().rev().find(|r| match r.version {
            Some(v) => v == self.version,
            None => r.seq > self.sent_seq,
        })
    }
}

const KEPT_REPORTS: usize = 4;

/// The documents of one server, and a signal that fires on every report.
pub(crate) struct Docs {
    inner: Mutex<(u64, HashMap<Url, Doc>)>,
    reported: watch::Sender<u64>,
    /// Reports are pulled: pushes without a version are not for the content last sent.
    pulled: AtomicBool,
}

impl Default for Docs {
    fn default() -> Self {
        Docs {
            inner: Mutex::new((0, HashMap::new())),
            reported: watch::channel(0).0,
            pulled: AtomicBool::new(false),
        }
    }
}

impl Docs {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, HashMap<Url, Doc>)> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Works on `uri`'s document (created empty), with the next tick.
    pub fn with<R>(&self, uri: &Url, f: impl FnOnce(&mut Doc, u64) -> R) -> R {
        let mut inner = self.lock();
        inner.0 += 1;
        let tick = inner.0;
        f(inner.1.entry(uri.clone()).or_default(), tick)
    }

    /// Reads `uri`'s document, if it was ever sent.
    pub fn read<R>(&self, uri: &Url, f: impl FnOnce(&Doc) -> R) -> Option<R> {
        self.lock().1.get(uri).map(f)
    }

    /// Every document with its newest report.
    pub fn latest(&self) -> Vec<(Url, Report)> {
        let mut all: Vec<(Url, Report)> = self
            .lock()
            .1
            .iter()
            .filter_map(|(u, d)| d.reports.last().map(|r| (u.clone(), r.clone())))
            .collect();
        all.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        all
    }

    /// The server reported `diagnostics` for `uri` (on `version`, when it says).
    pub fn report(&self, uri: &Url, version: Option<i32>, diagnostics: Vec<Diagnostic>) {
        let errors = diagnostics
            .into_iter()
            .filter(|d| d.severity.is_none_or(|s| s == DiagnosticSeverity::ERROR))
            .collect();
        self.with(uri, |doc, seq| {
            doc.reports.push(Report {
                version,
                seq,
                errors,
            });
            if doc.reports.len() > KEPT_REPORTS {
                doc.reports.remove(0);
            }
        });
        self.reported.send_modify(|n| *n += 1);
    }

    pub fn set_pulled(&self, pulled: bool) {
        self.pulled.store(pulled, Ordering::Relaxed);
    }

    pub fn pulled(&self) -> bool {
        self.pulled.load(Ordering::Relaxed)
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.reported.subscribe()
    }
}
