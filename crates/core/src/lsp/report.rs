//! What the model reads of a server's diagnostics, and what the user sees on the card: errors
//! only, at most [`MAX_PER_FILE`] per file, `line:col message`, the ones an edit brought marked
//! `[new]`; within a budget per turn so that diagnostics never crowd the context.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{FileReport, FileState};
use ferrite_extensions::display::fenced;

/// Errors listed per file; the rest are counted.
pub const MAX_PER_FILE: usize = 20;

/// Characters of diagnostics one turn appends to edits, at most (`docs/lsp.md`).
pub const TURN_BUDGET_CHARS: usize = 8_000;

/// What is left of a turn's diagnostics budget (shared by the turn's calls and subagents).
#[derive(Debug, Clone)]
pub struct Budget(Arc<AtomicUsize>);

impl Budget {
    pub fn per_turn() -> Self {
        Self::of(TURN_BUDGET_CHARS)
    }

    pub fn of(chars: usize) -> Self {
        Budget(Arc::new(AtomicUsize::new(chars)))
    }

    /// Takes `n` characters if that many are left.
    pub(crate) fn take(&self, n: usize) -> bool {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(n)
            })
            .is_ok()
    }
}

/// The `diagnostics` tool's text: each file's report, or a sentence when there are none.
pub fn diagnostics_text(reports: &[FileReport], cwd: &Path, wait_ms: u64) -> String {
    if reports.is_empty() {
        return "No language server has reported errors in this session. Give a path to have \
                its server check that file."
            .to_owned();
    }
    reports
        .iter()
        .map(|r| file_text(r, &crate::paths::display(&r.path, cwd), wait_ms))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The card's view of a report: the prose line, then the errors in a block.
pub fn card(text: &str) -> String {
    let (head, errors) = text.split_once('\n').unwrap_or((text, ""));
    if errors.is_empty() {
        return head.to_owned();
    }
    format!("{head}\n\n{}", fenced(errors, ""))
}

/// One file: a sentence, then its errors a line each.
pub(crate) fn file_text(report: &FileReport, shown: &str, wait_ms: u64) -> String {
    let server = &report.server;
    let errors = match &report.state {
        FileState::Unavailable(why) => return format!("No diagnostics for {shown}: {why}"),
        FileState::NotReady => {
            return format!(
                "Diagnostics not ready: {server} had not reported on {shown} within {wait_ms} \
                 ms; call `diagnostics` with this path to see its errors."
            );
        }
        FileState::Ready(errors) => errors,
    };
    if errors.is_empty() {
        return format!("{server} reports no errors in {shown}.");
    }
    let new = errors.iter().filter(|e| e.introduced).count();
    let mut text = format!(
        "{server} reports {} in {shown}{}:",
        plural(errors.len(), "error"),
        if new > 0 {
            format!(" ({new} new with this edit, marked [new])")
        } else {
            String::new()
        }
    );
    for e in errors.iter().take(MAX_PER_FILE) {
        let mark = if e.introduced { "[new] " } else { "" };
        let message = e.message.lines().next().unwrap_or_default();
        text.push_str(&format!("\n{}:{} {mark}{message}", e.line, e.column));
    }
    if errors.len() > MAX_PER_FILE {
        let more = errors.len() - MAX_PER_FILE;
        let noun = if more == 1 { "error" } else { "errors" };
        text.push_str(&format!("\n… and {more} more {noun}"));
    }
    text
}

/// `n word` or `n words`.
fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::Diagnostic;
    use std::path::PathBuf;

    fn report(state: FileState) -> FileReport {
        FileReport {
            path: PathBuf::from("/w/a.py"),
            server: "pyright".into(),
            state,
        }
    }

    fn error(line: u32, message: &str, introduced: bool) -> Diagnostic {
        Diagnostic {
            line,
            column: 5,
            message: message.into(),
            introduced,
        }
    }

    #[test]
    fn errors_are_listed_with_the_new_ones_marked_and_capped_per_file() {
        let errors = (1..=25)
            .map(|n| error(n, &format!("bad {n}\nsecond line"), n == 2))
            .collect();
        let text = file_text(&report(FileState::Ready(errors)), "a.py", 1500);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "pyright reports 25 errors in a.py (1 new with this edit, marked [new]):"
        );
        assert_eq!(lines[1], "1:5 bad 1");
        assert_eq!(lines[2], "2:5 [new] bad 2");
        assert_eq!(lines.len(), 1 + MAX_PER_FILE + 1);
        assert_eq!(lines[21], "… and 5 more errors");
    }

    #[test]
    fn clean_slow_and_missing_servers_each_say_so() {
        let clean = file_text(&report(FileState::Ready(vec![])), "a.py", 1500);
        assert_eq!(clean, "pyright reports no errors in a.py.");
        let slow = file_text(&report(FileState::NotReady), "a.py", 700);
        assert!(
            slow.starts_with(
                "Diagnostics not ready: pyright had not reported on a.py within 700 ms"
            )
        );
        let gone = file_text(
            &report(FileState::Unavailable("it crashed".into())),
            "a.py",
            1,
        );
        assert_eq!(gone, "No diagnostics for a.py: it crashed");
    }

    #[test]
    fn the_budget_is_spent_once() {
        let budget = Budget::of(10);
        assert!(budget.take(6));
        assert!(!budget.take(6));
        assert!(budget.take(4));
        assert!(!budget.take(1));
    }

    #[test]
    fn the_card_puts_errors_in_a_block() {
        let shown = card("x reports 1 error in a.py:\n3:1 *bad*");
        assert_eq!(
            shown,
            format!("x reports 1 error in a.py:\n\n{}", fenced("3:1 *bad*", ""))
        );
        assert_eq!(card("clean."), "clean.");
    }
}
