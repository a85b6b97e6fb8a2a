//! The prompts `/undo [N]` and `/checkpoints`, answered without the model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use ferrite_store::checkpoints::{
    Dropped, FileChange, FileState, Manifest, Reach, Skipped, Step, Store, shown, undo_message,
};

use super::TurnCheckpoint;
use crate::config::Config;
use crate::content::{
    Location, ToolCallUpdateView, ToolCallView, ToolContent, ToolKind, ToolStatus, UserContent,
};
use crate::events::Event;
use crate::log::{EntryKind, StopReason, StoreError};
use crate::permissions::{OptionKind, PermissionAnswer, PermissionOption, PermissionRequest};
use crate::services::Services;
use crate::session::Recorder;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    Undo(usize),
    List,
    /// `/undo` with an argument that is not a count.
    BadUndo(String),
    /// `/rewind` (`None`: list the messages) or `/rewind N`; `Err`: an argument that is no
    /// message number.
    Rewind(Result<Option<usize>, String>),
}

/// `Some` when the prompt is `/undo`, `/undo N` or `/checkpoints`.
pub(crate) fn requested(content: &[UserContent]) -> Option<Command> {
    let text = match content {
        [UserContent::Text { text }] => text.trim(),
        _ => return None,
    };
    if text == "/checkpoints" {
        return Some(Command::List);
    }
    if let Some(rewind) = super::rewind::requested(text) {
        return Some(Command::Rewind(rewind));
    }
    let rest = text.strip_prefix("/undo")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let arg = rest.trim();
    if arg.is_empty() {
        return Some(Command::Undo(1));
    }
    Some(match arg.parse::<usize>() {
        Ok(n) if n >= 1 => Command::Undo(n),
        Ok(_) | Err(_) => Command::BadUndo(arg.to_owned()),
    })
}

pub(crate) async fn run(
    services: &Services,
    rec: &Recorder,
    config: &Config,
    roots: Vec<PathBuf>,
    command: Command,
    cancel: &CancellationToken,
) -> Result<StopReason, StoreError> {
    let root = roots.first().cloned().unwrap_or_default();
    let ctx = Undo::new(services, rec, config, roots, cancel);
    let (stop, text) = match command {
        Command::BadUndo(arg) => (
            StopReason::EndTurn,
            format!("`/undo` takes a number of turns to undo (e.g. `/undo 2`), not `{arg}`."),
        ),
        Command::List => {
            let store = ctx.store.clone();
            let all = blocking(move || Ok(store.list())).await.unwrap_or_default();
            (StopReason::EndTurn, list_text(&all, &root))
        }
        Command::Undo(n) => ctx.run(n, None).await?,
        Command::Rewind(arg) => super::rewind::run(ctx, arg).await?,
    };
    // Logged, so `session/load` replays the answer after the command, as it was shown.
    rec.record(EntryKind::Reply { text: text.clone() })?;
    rec.emit(Event::AgentMessageChunk { text }).await;
    Ok(stop)
}

fn list_text(all: &[Manifest], root: &Path) -> String {
    if all.is_empty() {
        return "No checkpoints: no turn of this session has changed the workspace yet.".into();
    }
    let mut out = String::from("Checkpoints, newest first (`/undo N` reverts the newest N):\n\n");
    for (i, m) in all.iter().rev().enumerate() {
        let what = match &m.after {
            None => "interrupted turn; changes not recorded".to_owned(),
            Some(_) => {
                let files: Vec<String> = m
                    .changes()
                    .iter()
                    .map(|c| format!("{} ({})", shown(&c.path, root), c.change.as_str()))
                    .collect();
                format!("{} file(s): {}", files.len(), files.join(", "))
            }
        };
        let kind = if m.undid.is_empty() {
            format!("turn {}", m.turn)
        } else {
            format!("undo of turn(s) before it, at turn {}", m.turn)
        };
        out.push_str(&format!("{}. {kind}, {}: {what}\n", i + 1, m.created_at));
    }
    out
}

pub(super) struct Undo<'a> {
    services: &'a Services,
    pub(super) rec: &'a Recorder,
    store: Store,
    home: PathBuf,
    roots: Vec<PathBuf>,
    config: &'a Config,
    cancel: &'a CancellationToken,
}

impl<'a> Undo<'a> {
    fn new(
        services: &'a Services,
        rec: &'a Recorder,
        config: &'a Config,
        roots: Vec<PathBuf>,
        cancel: &'a CancellationToken,
    ) -> Self {
        let home = std::fs::canonicalize(&services.home).unwrap_or_else(|_| services.home.clone());
        Self {
            services,
            rec,
            store: Store::new(&home, rec.session_id()),
            home,
            roots,
            config,
            cancel,
        }
    }
}

/// `_session/rewind`: the session cut back to before `to.message_id`, with its files when asked.
/// Nothing is recorded or shown as an agent message: the outcome's `answer` says what was done,
/// for the caller's response.
pub(crate) async fn rewind_to(
    services: &Services,
    rec: &Recorder,
    config: &Config,
    roots: Vec<PathBuf>,
    to: &crate::events::RewindTo,
    cancel: &CancellationToken,
) -> Result<crate::events::TurnOutcome, StoreError> {
    let ctx = Undo::new(services, rec, config, roots, cancel);
    super::rewind::run_to(ctx, to).await
}

enum Answer {
    Revert,
    Keep(String),
    Cancelled,
}

/// The steps an undo will take, after the questions about conflicting ones.
struct Decided {
    approved: Vec<Step>,
    skipped: Vec<Skipped>,
    stop: StopReason,
}

impl Undo<'_> {
    /// Reverts the newest `n` checkpoints (`/undo N`), or exactly those of `only` (a rewind).
    pub(super) async fn run(
        &self,
        n: usize,
        only: Option<&[u64]>,
    ) -> Result<(StopReason, String), StoreError> {
        let store = self.store.clone();
        let (all, dropped) = blocking(move || Ok((store.list(), store.dropped())))
            .await
            .unwrap_or_default();
        if all.is_empty() {
            let text = match gone_text(&dropped, n) {
                Some(gone) => format!("There is nothing to undo: {gone}"),
                None => "There is nothing to undo: no turn of this session has changed the \
                         workspace."
                    .into(),
            };
            return Ok((StopReason::EndTurn, text));
        }
        let undone: Vec<Manifest> = match only {
            Some(ids) => all
                .iter()
                .filter(|m| ids.contains(&m.id))
                .cloned()
                .collect(),
            None => all[all.len().saturating_sub(n)..].to_vec(),
        };
        let ids: Vec<u64> = undone.iter().map(|m| m.id).collect();
        let reach = Reach {
            roots: self.roots.clone(),
            home: self.home.clone(),
        };
        let (store, max, plan_reach) = (
            self.store.clone(),
            self.config.checkpoints.max_file_bytes,
            reach.clone(),
        );
        let plan = match blocking(move || store.plan_undo(&undone, &plan_reach, max)).await {
            Ok(p) => p,
            Err(e) => return Ok((StopReason::EndTurn, format!("Could not undo: {e}."))),
        };
        // The undo is itself a checkpoint, durable before anything is touched.
        let cp = TurnCheckpoint::new(&self.services.home, self.rec.session_id());
        cp.configure(self.rec, self.roots.clone(), self.config.checkpoints);
        let paths: Vec<PathBuf> = plan.steps.iter().map(|s| s.path.clone()).collect();
        let (cp2, ids2) = (cp.clone(), ids.clone());
        if let Err(e) = blocking(move || cp2.open_for_undo(paths, &ids2)).await {
            return Ok((
                StopReason::EndTurn,
                format!("Could not undo: the current state could not be kept first ({e})."),
            ));
        }
        let mut decided = self.decide(plan.steps, plan.skipped).await;
        let (store, approved) = (self.store.clone(), std::mem::take(&mut decided.approved));
        let failed = blocking(move || Ok(store.restore(&approved, &reach)))
            .await
            .unwrap_or_default();
        decided.skipped.extend(failed);
        let files = self.record(cp, &ids, &decided.skipped).await?;
        if decided.stop == StopReason::Cancelled {
            return Ok((decided.stop, "Undo cancelled; nothing was changed.".into()));
        }
        let text = self.answer(&ids, &files, &decided.skipped, (n, all.len()), &dropped);
        Ok((decided.stop, text))
    }

    /// Asks about each step that would overwrite someone else's change; a cancel drops them all.
    async fn decide(&self, steps: Vec<Step>, mut skipped: Vec<Skipped>) -> Decided {
        let mut approved: Vec<Step> = Vec::new();
        for step in steps {
            if !step.conflict {
                approved.push(step);
                continue;
            }
            match self.ask(&step).await {
                Answer::Revert => approved.push(step),
                Answer::Keep(reason) => skipped.push(Skipped {
                    path: step.path,
                    reason,
                }),
                Answer::Cancelled => {
                    return Decided {
                        approved: vec![],
                        skipped,
                        stop: StopReason::Cancelled,
                    };
                }
            }
        }
        Decided {
            approved,
            skipped,
            stop: StopReason::EndTurn,
        }
    }

    /// Finishes the undo's own checkpoint and records it: what the undo changed.
    async fn record(
        &self,
        cp: TurnCheckpoint,
        ids: &[u64],
        skipped: &[Skipped],
    ) -> Result<Vec<FileChange>, StoreError> {
        match blocking(move || cp.finish_now()).await {
            Ok(Some(f)) => {
                if let Some(text) = f.notice.clone() {
                    self.rec.emit(Event::Notice { text }).await;
                }
                self.rec.record(EntryKind::Checkpoint {
                    id: f.id,
                    turn: f.turn,
                    files: f.files.clone(),
                    undid: ids.to_vec(),
                    skipped: skipped.to_vec(),
                })?;
                self.rec.sync()?;
                Ok(f.files)
            }
            Ok(None) => Ok(vec![]),
            Err(e) => {
                tracing::warn!(error = %e, "could not finish the undo's checkpoint");
                Ok(vec![])
            }
        }
    }

    /// The undo's answer; `(wanted, existed)`: the turns asked for and the checkpoints there were.
    fn answer(
        &self,
        ids: &[u64],
        files: &[FileChange],
        skipped: &[Skipped],
        (wanted, existed): (usize, usize),
        dropped: &[Dropped],
    ) -> String {
        let root = self.roots.first().cloned().unwrap_or_default();
        let undone = wanted.min(existed);
        let mut text = undo_message(ids, files, skipped, &root);
        if wanted > undone {
            match gone_text(dropped, wanted - undone) {
                Some(gone) => text.push_str(&format!("\n({gone})")),
                None => text.push_str(&format!(
                    "\n(Only {undone} checkpoint(s) existed, so only they were undone.)"
                )),
            }
        }
        text
    }

    /// Asks before overwriting a file someone changed since the agent's turn, showing the diff
    /// from its current content to the one undo would restore.
    async fn ask(&self, step: &Step) -> Answer {
        let harness = self.rec.read(|state| state.harness);
        let Some(approver) = self.services.approver.get().cloned() else {
            return Answer::Keep(
                "it changed since the agent's turn and no one could be asked".into(),
            );
        };
        if !harness.may_ask() {
            return Answer::Keep(
                "it changed since the agent's turn and this session runs unattended".into(),
            );
        }
        let view = self.card(step).await;
        self.rec.emit(Event::ToolCall(view.clone())).await;
        let req = PermissionRequest {
            call: view.clone(),
            options: vec![
                PermissionOption {
                    id: "allow_once".into(),
                    name: "Revert it".into(),
                    kind: OptionKind::AllowOnce,
                },
                PermissionOption {
                    id: "reject_once".into(),
                    name: "Keep the current file".into(),
                    kind: OptionKind::RejectOnce,
                },
            ],
        };
        let timeout = Duration::from_secs(self.config.permissions.timeout_secs);
        let answer = tokio::select! {
            biased;
            () = self.cancel.cancelled() => None,
            a = tokio::time::timeout(timeout, approver.request(self.rec.session_id(), req)) => Some(a),
        };
        let answer = answer_of(answer);
        let (status, outcome) = match &answer {
            Answer::Revert => (ToolStatus::Completed, "Reverted."),
            Answer::Keep(why) => (ToolStatus::Failed, why.as_str()),
            Answer::Cancelled => (ToolStatus::Failed, "Cancelled."),
        };
        self.rec
            .emit(Event::ToolCallUpdate(ToolCallUpdateView {
                id: view.id,
                status: Some(status),
                raw_output: Some(crate::content::raw_output(outcome)),
                ..Default::default()
            }))
            .await;
        answer
    }

    /// The card the question is about: the step's diff, or what it would replace.
    async fn card(&self, step: &Step) -> ToolCallView {
        let root = self.roots.first().cloned().unwrap_or_default();
        let shown = shown(&step.path, &root);
        let (store, s) = (self.store.clone(), step.clone());
        let (old, new) = blocking(move || Ok(store.texts(&s)))
            .await
            .unwrap_or((None, None));
        let content = match (old, new) {
            (Some(old), Some(new)) => ToolContent::Diff {
                path: step.path.clone(),
                old_text: Some(old),
                new_text: new,
            },
            _ => ToolContent::Text {
                text: format!("{shown} is not text (or too large to show); undo would replace it.")
                    .into(),
            },
        };
        let deleting = step.target == FileState::Absent;
        ToolCallView {
            id: format!("undo-{}", uuid::Uuid::now_v7().simple()),
            title: format!(
                "Undo: {} {shown}, which changed since the agent's turn?",
                if deleting { "delete" } else { "overwrite" }
            ),
            kind: if deleting {
                ToolKind::Delete
            } else {
                ToolKind::Edit
            },
            status: ToolStatus::Pending,
            locations: vec![Location {
                path: step.path.clone(),
                line: None,
            }],
            content: vec![content],
            raw_input: None,
        }
    }
}

/// What the user's answer (`None`: the turn was cancelled) means for the step.
fn answer_of(answer: Option<Result<PermissionAnswer, tokio::time::error::Elapsed>>) -> Answer {
    match answer {
        None => Answer::Cancelled,
        Some(Ok(PermissionAnswer::Selected(id))) if id == "allow_once" => Answer::Revert,
        Some(Ok(PermissionAnswer::Selected(_) | PermissionAnswer::Cancelled)) => {
            Answer::Keep("it changed since the agent's turn and you chose to keep it".into())
        }
        Some(Ok(PermissionAnswer::Unanswered(_))) => Answer::Keep(
            "it changed since the agent's turn and the editor could not ask you".into(),
        ),
        Some(Err(_)) => Answer::Keep(
            "it changed since the agent's turn and the question was not answered in time".into(),
        ),
    }
}

/// What `/undo` says of the newest `wanted` checkpoints that were dropped (`None`: none were).
fn gone_text(dropped: &[Dropped], wanted: usize) -> Option<String> {
    let newest: Vec<&Dropped> = dropped.iter().rev().take(wanted).collect();
    let first = newest.first()?;
    let mut turns: Vec<String> = newest.iter().map(|d| d.turn.to_string()).collect();
    turns.dedup();
    Some(format!(
        "the checkpoint(s) of turn(s) {} were dropped to keep the checkpoint store within \
         `{}`; those turns can no longer be undone.",
        turns.join(", "),
        first.why.key()
    ))
}

/// Runs disk work on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(std::io::Error::other)?
}
