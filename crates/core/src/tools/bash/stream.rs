//! A foreground command's output as it comes: the recent output streamed to the editor at most
//! ten times a second, a terminal view's raw delta, and at the end how the command ended.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::content::{ToolCallUpdateView, ToolContent};
use crate::exec::{CommandOutput, CommandRunner, CommandSpec, ExecError, Exit};
use crate::tools::ToolContext;
use crate::tools::markdown;
use crate::tools::output::lock;

/// At most this many streaming updates per second: editors re-render on each one.
const STREAM_INTERVAL: Duration = Duration::from_millis(100);
/// Streaming updates replace the call's content, so each carries only the recent output.
pub(super) const STREAM_TAIL_BYTES: usize = 64 * 1024;
/// A terminal view gets what was written since the last update; past this much in one update
/// (a flood) only the newest part goes, after a line saying how much was left out.
pub(super) const TERMINAL_DELTA_BYTES: usize = 64 * 1024;

/// Runs `spec`, streaming its output into `tail` and to the editor, and tells a terminal view
/// how it ended.
pub(super) async fn follow(
    ctx: &ToolContext<'_>,
    runner: Arc<dyn CommandRunner>,
    spec: CommandSpec,
    tail: &Arc<Mutex<Tail>>,
) -> Result<CommandOutput, ExecError> {
    let on_output = {
        let tail = tail.clone();
        move |chunk: &str| lock(&tail).push(chunk)
    };
    ctx.recorder.command_started();
    let mut running = runner.run(spec, ctx.cancel.clone(), &on_output);
    let mut tick = tokio::time::interval(STREAM_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let result = loop {
        tokio::select! {
            biased;
            r = &mut running => break r,
            _ = tick.tick() => progress(ctx, tail).await,
        }
    };
    if let Ok(out) = &result {
        report_exit(ctx, out, tail).await;
    }
    result
}

/// The output since the last update, if any.
async fn progress(ctx: &ToolContext<'_>, tail: &Mutex<Tail>) {
    let snapshot = {
        let mut tail = lock(tail);
        tail.take_if_changed().map(|text| (text, tail.take_delta()))
    };
    if let Some((text, delta)) = snapshot {
        ctx.recorder
            .progress(ToolCallUpdateView {
                id: ctx.call_id.clone(),
                content: Some(vec![ToolContent::Text { text: text.into() }]),
                terminal_output: Some(delta.into()),
                ..Default::default()
            })
            .await;
    }
}

/// A terminal view gets the rest of the output and how the command ended.
async fn report_exit(ctx: &ToolContext<'_>, out: &CommandOutput, tail: &Mutex<Tail>) {
    let rest = lock(tail).take_delta();
    let (exit_code, signal) = match out.exit {
        Exit::Code(c) => (Some(c), None),
        Exit::Signal(s) => {
            let name = super::signal_name(s).trim().trim_matches(['(', ')']);
            (
                None,
                Some(if name.is_empty() {
                    format!("signal {s}")
                } else {
                    name.to_owned()
                }),
            )
        }
        Exit::TimedOut | Exit::Cancelled => (None, Some("SIGKILL".to_owned())),
    };
    ctx.recorder
        .progress(ToolCallUpdateView {
            id: ctx.call_id.clone(),
            terminal_output: (!rest.is_empty()).then(|| rest.into()),
            terminal_exit: Some(crate::content::TerminalExit { exit_code, signal }),
            ..Default::default()
        })
        .await;
}

/// The recent output for streaming, with a flag so unchanged output isn't sent again.
pub(super) struct Tail {
    pub(super) text: String,
    changed: bool,
    dropped: bool,
    /// Written since the last update, for terminal views (bounded by [`TERMINAL_DELTA_BYTES`]),
    /// without the sequences that act beyond the drawn text (`crate::ansi`).
    delta: String,
    terminal: crate::ansi::Filter,
    /// Bytes of output left out of `delta` since the last update.
    delta_dropped: u64,
}

impl Default for Tail {
    fn default() -> Self {
        Self {
            text: String::new(),
            changed: false,
            dropped: false,
            delta: String::new(),
            delta_dropped: 0,
            terminal: crate::ansi::Filter::terminal(),
        }
    }
}

impl Tail {
    pub(super) fn push(&mut self, chunk: &str) {
        self.text.push_str(chunk);
        self.changed = true;
        self.terminal.push(chunk, &mut self.delta);
        if self.delta.len() > 2 * TERMINAL_DELTA_BYTES {
            let mut cut = self.delta.len() - TERMINAL_DELTA_BYTES;
            while !self.delta.is_char_boundary(cut) {
                cut += 1;
            }
            self.delta.drain(..cut);
            self.delta_dropped += cut as u64;
        }
        // Trim only once twice the cap is reached, so a chatty command costs amortized O(1).
        if self.text.len() > 2 * STREAM_TAIL_BYTES {
            let mut cut = self.text.len() - STREAM_TAIL_BYTES;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
            self.dropped = true;
        }
    }

    /// What a terminal view has not been sent yet.
    pub(super) fn take_delta(&mut self) -> String {
        let mut delta = std::mem::take(&mut self.delta);
        if self.delta_dropped > 0 {
            let mut start = delta.len().saturating_sub(TERMINAL_DELTA_BYTES);
            while !delta.is_char_boundary(start) {
                start += 1;
            }
            let left_out = self.delta_dropped + start as u64;
            delta = format!(
                "\r\n[{left_out} bytes of output not shown]\r\n{}",
                &delta[start..]
            );
            self.delta_dropped = 0;
        }
        delta
    }

    pub(super) fn take_if_changed(&mut self) -> Option<String> {
        if !self.changed {
            return None;
        }
        self.changed = false;
        let mut start = self.text.len().saturating_sub(STREAM_TAIL_BYTES);
        while !self.text.is_char_boundary(start) {
            start += 1;
        }
        let body = &self.text[start..];
        Some(markdown::command_progress(body, self.dropped || start > 0))
    }
}
