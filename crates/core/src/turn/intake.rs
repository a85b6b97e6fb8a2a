//! Stage: the prompt, taken in. Links to workspace files are read in, a `/command` gets its
//! prompt file, the prompt is recorded, and the session's first prompt names it. A prompt that
//! is a command to ferrite itself (`/compact`, `/undo`, `/checkpoints`) is told apart here.

use crate::checkpointing::command::Command as CheckpointCommand;
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
    /// `/title TEXT`: the user's title for the session.
    pub title: Option<String>,
    /// The id the prompt was recorded under, when it is a message to the model.
    pub message_id: Option<String>,
}

/// `Some(TEXT)` when the prompt is `/title TEXT` (an empty TEXT is `Some("")`).
fn title_command(content: &[UserContent]) -> Option<String> {
    let [UserContent::Text { text }] = content else {
        return None;
    };
    let rest = text.trim().strip_prefix("/title")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim().to_owned())
}

/// Answers `/title TEXT`: the user's title, kept for good (a generated one never replaces it).
pub(super) async fn retitle(rec: &Recorder, text: &str) -> Result<(), StoreError> {
    let title = title_from(&[UserContent::Text { text: text.into() }]);
    let reply = match &title {
        Some(t) => format!("Renamed the session: {t}"),
        None => "Give the new title after `/title`, e.g. `/title Fix the login bug`.".to_owned(),
    };
    if let Some(title) = title {
        rec.record(EntryKind::Title {
            title: title.clone(),
            by: Some(crate::log::TitleBy::User),
        })?;
        rec.emit(Event::TitleChanged { title }).await;
    }
    rec.record(EntryKind::Reply {
        text: reply.clone(),
    })?;
    rec.emit(Event::AgentMessageChunk { text: reply }).await;
    Ok(())
}

/// Expands and records the prompt (a command to ferrite itself, `/compact`, `/undo`,
/// `/checkpoints`, is replayed but never sent to the model).
pub(super) fn record_prompt(
    (invoked, skills): (&crate::commands::Invoked, &[crate::skills::Skill]),
    rec: &Recorder,
    content: &[UserContent],
    start: &TurnStart,
) -> Result<Intake, StoreError> {
    let expanded = crate::attachments::expand_links(content.to_vec(), &start.roots);
    let expanded = invoked.expand(expanded, skills);
    let mut intake = Intake {
        compact: compact::requested(content),
        checkpoint_command: crate::checkpointing::command::requested(content),
        title: title_command(content),
        message_id: None,
    };
    let own_command =
        intake.compact.is_some() || intake.checkpoint_command.is_some() || intake.title.is_some();
    if own_command {
        rec.record(EntryKind::Command { content: expanded })?;
        return Ok(intake);
    }
    let id = ferrite_store::ids::new_message_id();
    rec.record(EntryKind::UserMessage {
        id: Some(id.clone()),
        content: expanded,
    })?;
    intake.message_id = Some(id);
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
        && intake.title.is_none()
        && let Some(title) = title_from(content)
    {
        rec.record(EntryKind::Title {
            title: title.clone(),
            by: None,
        })?;
        rec.emit(Event::TitleChanged { title }).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::session::testing::TestSession;

    fn text(t: &str) -> Vec<UserContent> {
        vec![UserContent::Text { text: t.into() }]
    }

    /// The prompts the log holds, by entry type.
    fn kinds(s: &TestSession) -> Vec<&'static str> {
        s.recorder.read(|state| {
            state
                .history
                .iter()
                .filter_map(|k| {
                    if matches!(k, EntryKind::UserMessage { .. }) {
                        Some("user_message")
                    } else if matches!(k, EntryKind::Command { .. }) {
                        Some("command")
                    } else {
                        None
                    }
                })
                .collect()
        })
    }

    /// Records `prompt` as the turn's intake does, having read what it invokes.
    fn record(s: &TestSession, prompt: &str, start: &TurnStart) -> Intake {
        let own = crate::own_files::OwnFiles::new(s.home.path(), &[], Ok(Default::default()));
        let content = text(prompt);
        let invoked = crate::commands::Invoked::read(&content, &own, &start.cwd, &[]);
        record_prompt((&invoked, &[]), &s.recorder, &content, start).unwrap()
    }

    #[tokio::test]
    async fn a_prompt_is_recorded_and_names_the_session_once() {
        let mut s = TestSession::new(std::env::temp_dir());
        for prompt in ["fix the   bug", "and the tests"] {
            let start = s.recorder.start();
            let intake = record(&s, prompt, &start);
            name_session(&s.recorder, &text(prompt), &start, &intake)
                .await
                .unwrap();
        }
        assert_eq!(kinds(&s), ["user_message", "user_message"]);
        let title = s.recorder.read(|state| state.title.clone());
        assert_eq!(title.as_deref(), Some("fix the bug"));
        assert_eq!(
            s.drain_events(),
            [Event::TitleChanged {
                title: "fix the bug".into()
            }]
        );
    }

    #[tokio::test]
    async fn commands_to_ferrite_are_told_apart() {
        let s = TestSession::new(std::env::temp_dir());
        let start = s.recorder.start();
        let compact = record(&s, "/compact short", &start);
        assert_eq!(compact.compact.as_deref(), Some("short"));
        let undo = record(&s, "/undo 2", &start);
        assert!(undo.checkpoint_command.is_some());
        // Both are replayed (`command` entries) and never sent to the model.
        assert_eq!(kinds(&s), ["command", "command"]);
    }
}
