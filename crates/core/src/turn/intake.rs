//! Stage: the prompt, taken in. Links to workspace files are read in, a `/command` gets its
//! prompt file, the prompt is recorded, and the session's first prompt names it. A prompt that
//! is a command to ferrite itself (`/compact`, `/undo`, `/checkpoints`) is told apart here.

use crate::checkpoints::command::Command as CheckpointCommand;
use crate::content::UserContent;
use crate::events::Event;
use crate::log::{EntryKind, StoreError, title_from};
use crate::session::{Recorder, TurnStart};

use super::compact;

/// What the prompt asks of the turn.
pub(super) struct Intake {
    /// `/compact [instructions]`: the extra instructions.
    pub compact: Option<String>,
    /// `/undo [N]` or `/checkpoints`: answered without the model.
    pub checkpoint_command: Option<CheckpointCommand>,
}

/// Expands and records the prompt (a checkpoint command is not part of the conversation; a
/// `/compact` is replayed but never sent to the model).
pub(super) fn record_prompt(
    home: &std::path::Path,
    rec: &Recorder,
    content: &[UserContent],
    start: &TurnStart,
) -> Result<Intake, StoreError> {
    let expanded = crate::attachments::expand_links(content.to_vec(), &start.roots);
    let expanded = match start.roots.first() {
        Some(cwd) => crate::commands::expand(expanded, home, cwd),
        None => expanded,
    };
    let intake = Intake {
        compact: compact::requested(content),
        checkpoint_command: crate::checkpoints::command::requested(content),
    };
    if intake.checkpoint_command.is_none() {
        rec.record(match intake.compact {
            None => EntryKind::UserMessage { content: expanded },
            Some(_) => EntryKind::Command { content: expanded },
        })?;
    }
    Ok(intake)
}

/// The session's first prompt (one for the model) names it.
pub(super) async fn name_session(
    rec: &Recorder,
    content: &[UserContent],
    start: &TurnStart,
    intake: &Intake,
) -> Result<(), StoreError> {
    if start.first_prompt
        && intake.compact.is_none()
        && intake.checkpoint_command.is_none()
        && let Some(title) = title_from(content)
    {
        rec.record(EntryKind::Title {
            title: title.clone(),
        })?;
        rec.emit(Event::TitleChanged { title }).await;
    }
    Ok(())
}
