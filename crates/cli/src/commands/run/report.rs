//! What a person (or a script) sees of a `ferrite run` turn. Text: the answer on stdout; each
//! call's outcome (done, failed, refused, and why, on one line), failures and the usage line on
//! stderr. `--json`: every event as a JSON line on stdout, a failure as its own `run_failed`
//! event (never as the model's words), and a last `run_ended` event.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use ferrite_core::events::{Event, SessionEvent, TurnOutcome};
use ferrite_core::permissions::NO_ONE_TO_ASK;
use ferrite_store::content::{ToolCallUpdateView, ToolContent, ToolKind, ToolStatus};
use ferrite_store::failure::TurnFailure;
use ferrite_store::ids::SessionId;
use ferrite_store::log::StopReason;
use serde_json::{Value, json};
use tokio::sync::mpsc::Receiver;

use super::Stop;
use super::progress::Progress;

/// How the turn ended, as the exit status and the summary need it.
pub(super) struct Ended {
    pub failure: Option<TurnFailure>,
    /// The calls refused because they needed the user's approval.
    pub refused_for_approval: usize,
    /// The agent's text after its last call (`-o`).
    pub last_message: String,
    /// File changes of the session's own calls that failed (a read-only mount, a wrong
    /// `old_string`) and were not made by a later call: what the user asked for did not happen,
    /// so the run does not report success. Keyed by what the call was about (its files, else
    /// its title), with the first line of why.
    pub unwritten: BTreeMap<String, String>,
}

/// The tokens and cost of the turn's model calls.
#[derive(Default)]
pub(super) struct TurnUsage {
    calls: u64,
    input: u64,
    cached: u64,
    output: u64,
    /// `None` when a call's model had no known price.
    cost: Option<f64>,
}

impl TurnUsage {
    pub fn add(&mut self, usage: &ferrite_store::usage::Usage, cost: Option<f64>) {
        self.cost = match (self.calls, self.cost, cost) {
            (0, _, c) => c,
            (_, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.calls += 1;
        self.input += usage.input_tokens;
        self.cached += usage.cached_input_tokens;
        self.output += usage.output_tokens;
    }

    fn line(&self) -> String {
        let cost = match self.cost {
            Some(c) => format!("cost ${c:.4}"),
            None if self.calls == 0 => "cost $0".to_owned(),
            None => "cost unknown (no price for the model)".to_owned(),
        };
        format!(
            "usage: {} model call(s), {} tokens in ({} cached), {} out; {cost}",
            self.calls, self.input, self.cached, self.output
        )
    }

    fn json(&self) -> Value {
        json!({"model_calls": self.calls, "input_tokens": self.input,
               "cached_input_tokens": self.cached, "output_tokens": self.output,
               "cost_usd": self.cost})
    }
}

/// A line on stdout; a closed stdout ends nothing (the turn's work is done either way).
fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(line.as_bytes());
    let _ = stdout.flush();
}

fn err(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A run that stopped before (or outside) its turn: the reason on stderr, and with `--json` a
/// `run_failed` and a `run_ended` event on stdout.
pub(super) fn stopped(
    json: bool,
    session: Option<&SessionId>,
    code: u8,
    error: &anyhow::Error,
) -> std::process::ExitCode {
    err(&format!("ferrite: {error:#}"));
    if json {
        let failed = json!({"session": session, "turn": null,
            "event": {"type": "run_failed", "message": format!("{error:#}")}});
        out(&format!("{failed}\n"));
        let ended = json!({"session": session, "turn": null,
            "event": {"type": "run_ended", "exit_code": code}});
        out(&format!("{ended}\n"));
    }
    if let Some(id) = session {
        err(&format!("session: {id}"));
    }
    std::process::ExitCode::from(code)
}

/// The end of a run whose turn ended: the session and usage lines (stderr), or `run_ended`.
pub(super) fn summary(
    json: bool,
    session: Option<&SessionId>,
    ended: &Ended,
    usage: Option<&TurnUsage>,
    code: u8,
) {
    if json {
        let event = json!({"session": session, "turn": null, "event": {
            "type": "run_ended", "exit_code": code,
            "refused_for_approval": ended.refused_for_approval,
            "unwritten": ended.unwritten.keys().collect::<Vec<_>>(),
            "usage": usage.map(TurnUsage::json)}});
        out(&format!("{event}\n"));
        return;
    }
    for (what, why) in &ended.unwritten {
        err(&format!("ferrite: not changed: {what}: {why}"));
    }
    if ended.refused_for_approval > 0 {
        err(&format!(
            "{} call(s) were refused because they needed approval and no one is there to give \
             it; `--mode auto` lets the agent edit the workspace and run sandboxed commands",
            ended.refused_for_approval
        ));
    }
    if let Some(id) = session {
        err(&format!("session: {id}"));
    }
    if let Some(usage) = usage {
        err(&usage.line());
    }
}

/// Follows one turn's events until it ends.
pub(super) struct Report {
    json: bool,
    session: SessionId,
    /// Titles of the calls seen, by id.
    titles: HashMap<String, String>,
    /// The last message chunk (or its JSON line), held back one event: when the turn fails,
    /// the failure's text comes as a chunk just before the end, and is not the model's.
    held: Option<(String, String)>,
    last_message: String,
    /// Whether stdout's last character was not a newline.
    mid_line: bool,
    refused_for_approval: usize,
    /// What each file-changing call of this session is about (its paths, else its title).
    changes: HashMap<String, Vec<String>>,
    unwritten: BTreeMap<String, String>,
    progress: Option<Progress>,
}

impl Report {
    pub fn new(json: bool, session: SessionId) -> Self {
        Self {
            json,
            session,
            titles: HashMap::new(),
            held: None,
            last_message: String::new(),
            mid_line: false,
            refused_for_approval: 0,
            changes: HashMap::new(),
            unwritten: BTreeMap::new(),
            progress: Progress::on_terminal(),
        }
    }

    pub async fn follow(&mut self, events: &mut Receiver<SessionEvent>) -> Result<Ended, Stop> {
        let mut tick = tokio::time::interval(super::progress::TICK);
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                _ = tick.tick(), if self.progress.is_some() => {
                    if let Some(p) = self.progress.as_mut() {
                        p.draw(self.mid_line);
                    }
                    continue;
                }
            };
            let Some(event) = event else {
                return Err(Stop::failed(anyhow::anyhow!(
                    "the session stopped before its turn ended"
                )));
            };
            if let Some(ended) = self.on_event(event) {
                return Ok(ended);
            }
        }
    }

    fn on_event(&mut self, ev: SessionEvent) -> Option<Ended> {
        if let Some(p) = self.progress.as_mut() {
            p.clear();
        }
        let ours = ev.session == self.session;
        let line = self
            .json
            .then(|| serde_json::to_string(&ev).unwrap_or_default());
        match ev.event {
            Event::AgentMessageChunk { text } if ours => {
                self.release();
                let shown = line.unwrap_or_else(|| text.clone());
                self.held = Some((text, shown));
                return None;
            }
            Event::TurnEnded(outcome) if ours => return Some(self.end(outcome, line)),
            Event::ToolCall(c) => {
                let title = ferrite_core::display::visible(&c.title).into_owned();
                if let Some(p) = self.progress.as_mut() {
                    p.working_on(&title);
                }
                if ours && matches!(c.kind, ToolKind::Edit | ToolKind::Delete | ToolKind::Move) {
                    let mut about: Vec<String> = (c.locations.iter())
                        .map(|l| l.path.display().to_string())
                        .collect();
                    if about.is_empty() {
                        about.push(title.clone());
                    }
                    self.changes.insert(c.id.clone(), about);
                }
                self.titles.insert(c.id, title);
                if ours {
                    self.release();
                    self.last_message.clear();
                }
            }
            Event::ToolCallUpdate(u) => {
                self.release();
                self.outcome(&u, ours);
            }
            _ => self.release(),
        }
        if let Some(line) = line {
            out(&format!("{line}\n"));
        }
        None
    }

    /// Prints the held-back chunk.
    fn release(&mut self) {
        let Some((text, shown)) = self.held.take() else {
            return;
        };
        self.last_message.push_str(&text);
        if self.json {
            out(&format!("{shown}\n"));
        } else {
            out(&shown);
            self.mid_line = !shown.ends_with('\n');
        }
    }

    fn end(&mut self, outcome: TurnOutcome, line: Option<String>) -> Ended {
        let failure = outcome.failure.clone().or_else(|| unanswered(outcome.stop));
        match (&failure, &self.held) {
            (Some(f), Some((text, _))) if *text == f.message => self.held = None,
            _ => self.release(),
        }
        if self.mid_line && !self.json {
            out("\n");
        }
        if let Some(f) = &failure {
            err(&format!("ferrite: the turn failed: {}", f.message));
            if self.json {
                let event = json!({"session": self.session, "turn": null, "event": {
                    "type": "run_failed", "message": f.message,
                    "terminal_status": f.terminal_status, "error_kind": f.error_kind}});
                out(&format!("{event}\n"));
            }
        }
        if let Some(line) = line {
            out(&format!("{line}\n"));
        }
        Ended {
            failure,
            refused_for_approval: self.refused_for_approval,
            last_message: std::mem::take(&mut self.last_message),
            unwritten: std::mem::take(&mut self.unwritten),
        }
    }

    /// A call's final state: one line on stderr (`--json` has the event itself).
    fn outcome(&mut self, u: &ToolCallUpdateView, ours: bool) {
        if let Some(title) = &u.title {
            let title = ferrite_core::display::visible(title).into_owned();
            self.titles.insert(u.id.clone(), title);
        }
        let reason = first_line(u);
        let word = match u.status {
            Some(ToolStatus::Completed) => "done",
            Some(ToolStatus::Failed) if reason.starts_with(NO_ONE_TO_ASK) => {
                self.refused_for_approval += 1;
                "refused"
            }
            Some(ToolStatus::Failed) if refusal(&reason) => "refused",
            Some(ToolStatus::Failed) => "failed",
            _ => return,
        };
        if let Some(p) = self.progress.as_mut() {
            p.working_on("");
        }
        if let Some(about) = self.changes.get(&u.id).filter(|_| ours) {
            for what in about {
                if word == "failed" {
                    self.unwritten.insert(what.clone(), reason.clone());
                } else if word == "done" {
                    self.unwritten.remove(what);
                }
            }
        }
        if self.json {
            return;
        }
        let title = self.titles.get(&u.id).map_or("(call)", String::as_str);
        let indent = if ours { "" } else { "  " };
        let line = match word {
            "done" => format!("{indent}[done] {title}"),
            _ => format!("{indent}[{word}] {title}: {reason}"),
        };
        err(&line);
    }
}

/// A turn that stopped without failing but without an answer either (the provider refused, or
/// the turn was cancelled): a failed run all the same.
fn unanswered(stop: StopReason) -> Option<TurnFailure> {
    use ferrite_store::failure::TerminalStatus;
    let (status, kind, message) = match stop {
        StopReason::Refusal => (
            TerminalStatus::ProviderError,
            "refusal",
            "the model refused to answer",
        ),
        StopReason::Cancelled => (
            TerminalStatus::Interrupted,
            "cancelled",
            "the turn was cancelled",
        ),
        _ => return None,
    };
    Some(TurnFailure {
        terminal_status: status,
        error_kind: kind.to_owned(),
        message: message.to_owned(),
    })
}

/// Whether a failed call's text says the policy refused it (a deny rule, a hook, a protected
/// path) rather than that it ran and failed.
fn refusal(reason: &str) -> bool {
    [
        "Permission denied",
        "Blocked by a PreToolUse hook",
        "Refused:",
    ]
    .iter()
    .any(|p| reason.starts_with(p))
}

/// The first line of text a call's final update shows (code fences skipped), made visible and
/// cut to a line's length.
fn first_line(u: &ToolCallUpdateView) -> String {
    const MAX_CHARS: usize = 200;
    let texts = (u.content.iter().flatten()).filter_map(|c| match c {
        ToolContent::Text { text } => Some(text.as_ref()),
        _ => None,
    });
    let raw = u.raw_output.as_ref().and_then(Value::as_str);
    let line = (texts.chain(raw))
        .flat_map(str::lines)
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("```"))
        .unwrap_or("");
    let line = ferrite_core::display::visible(line);
    let mut cut: String = line.chars().take(MAX_CHARS).collect();
    if line.chars().count() > MAX_CHARS {
        cut.push('…');
    }
    cut
}
