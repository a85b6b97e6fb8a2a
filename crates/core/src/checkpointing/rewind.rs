//! `/rewind [N]`: the session's live user messages, numbered with their first line; `/rewind N`
//! cuts the history just before message N (a `rewind` entry: the log stays append-only) and
//! brings back the files the cut turns changed, through `/undo`'s path (a file changed by
//! someone else since is overwritten only after the user says so).

use super::command::Undo;
use crate::content::UserContent;
use crate::events::{CommandAnswer, Event, RewindTo, TurnOutcome};
use crate::log::{EntryKind, StopReason, StoreError};

/// `Some` when the prompt is `/rewind` (`Ok(None)`) or `/rewind N`; `Err`: an argument that is
/// no message number.
pub(super) fn requested(text: &str) -> Option<Result<Option<usize>, String>> {
    let rest = text.strip_prefix("/rewind")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let arg = rest.trim();
    if arg.is_empty() {
        return Some(Ok(None));
    }
    Some(match arg.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        Ok(_) | Err(_) => Err(arg.to_owned()),
    })
}

/// A live user message: its id, its first line, and the checkpoints recorded from it on.
struct Message {
    id: String,
    first_line: String,
    checkpoints: Vec<u64>,
}

fn messages(history: &[EntryKind]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for kind in history {
        match kind {
            EntryKind::UserMessage {
                id: Some(id),
                content,
            } => out.push(Message {
                id: id.clone(),
                first_line: first_line(content),
                checkpoints: vec![],
            }),
            EntryKind::Checkpoint { id, .. } => {
                for m in &mut out {
                    m.checkpoints.push(*id);
                }
            }
            _ => {}
        }
    }
    out
}

fn first_line(content: &[UserContent]) -> String {
    let text = content.iter().find_map(|c| match c {
        UserContent::Text { text } => text.lines().find(|l| !l.trim().is_empty()),
        _ => None,
    });
    let line: String = text
        .unwrap_or("(no text)")
        .trim()
        .chars()
        .take(80)
        .collect();
    line
}

fn list_text(all: &[Message]) -> String {
    if all.is_empty() {
        return "There is no message to rewind to yet.".into();
    }
    let mut out =
        String::from("Your messages (`/rewind N` goes back to before message N, files too):\n\n");
    for (i, m) in all.iter().enumerate() {
        out.push_str(&format!("{}. {}\n", i + 1, m.first_line));
    }
    out
}

/// Answers `/rewind [N]`.
pub(super) async fn run(
    ctx: Undo<'_>,
    arg: Result<Option<usize>, String>,
) -> Result<(StopReason, String), StoreError> {
    let rec = ctx.rec;
    let all = rec.read(|s| messages(&s.history));
    let n = match arg {
        Err(arg) => {
            let text = format!(
                "`/rewind` takes a message number from the list `/rewind` shows (e.g. \
                 `/rewind 2`), not `{arg}`."
            );
            return Ok((StopReason::EndTurn, text));
        }
        Ok(None) => return Ok((StopReason::EndTurn, list_text(&all))),
        Ok(Some(n)) => n,
    };
    let Some(m) = all.get(n - 1) else {
        let text = format!("There is no message {n}: the session has {}.", all.len());
        return Ok((StopReason::EndTurn, text));
    };
    let (stop, files) = cut(&ctx, &all[n - 1..], true).await?;
    if stop == StopReason::Cancelled {
        return Ok((stop, files));
    }
    let text = format!(
        "Rewound to before message {n} ({}).\n\n{files}",
        m.first_line
    );
    Ok((StopReason::EndTurn, text))
}

/// `_session/rewind`: like `/rewind N`, the message named by its id.
pub(super) async fn run_to(ctx: Undo<'_>, to: &RewindTo) -> Result<TurnOutcome, StoreError> {
    let all = ctx.rec.read(|s| messages(&s.history));
    let answer = |stop, done, text: String| TurnOutcome {
        answer: Some(Box::new(CommandAnswer { done, text })),
        ..TurnOutcome::ended(stop)
    };
    let Some((n, m)) = all.iter().enumerate().find(|(_, m)| m.id == to.message_id) else {
        let text = format!(
            "no live user message has the id `{}` (rewound away already, or not of this session)",
            to.message_id
        );
        return Ok(answer(StopReason::EndTurn, false, text));
    };
    let (stop, files) = cut(&ctx, &all[n..], to.restore_files).await?;
    let text = match stop {
        StopReason::Cancelled => files,
        _ if to.restore_files => format!(
            "Rewound to before message {} ({}).\n\n{files}",
            n + 1,
            m.first_line
        ),
        _ => format!(
            "Rewound to before message {} ({}); files were left as they are.",
            n + 1,
            m.first_line
        ),
    };
    Ok(answer(stop, true, text))
}

/// Brings back the files the turns from `cut[0]` on changed (when `restore`), then cuts the
/// history before it. A cancel at a question about someone else's change leaves everything as
/// it was.
async fn cut(
    ctx: &Undo<'_>,
    cut: &[Message],
    restore: bool,
) -> Result<(StopReason, String), StoreError> {
    let m = &cut[0];
    let mut files = String::from("No file had changed since.");
    if restore && !m.checkpoints.is_empty() {
        let (stop, text) = ctx.run(m.checkpoints.len(), Some(&m.checkpoints)).await?;
        if stop == StopReason::Cancelled {
            return Ok((stop, "Rewind cancelled; nothing was changed.".into()));
        }
        files = text;
    }
    ctx.rec.record(EntryKind::Rewind {
        message_id: m.id.clone(),
    })?;
    ctx.rec.sync()?;
    let message_ids = cut.iter().map(|m| m.id.clone()).collect();
    ctx.rec.emit(Event::MessagesCut { message_ids }).await;
    Ok((StopReason::EndTurn, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_and_its_argument() {
        assert_eq!(requested("/rewind"), Some(Ok(None)));
        assert_eq!(requested("/rewind 2"), Some(Ok(Some(2))));
        assert_eq!(requested("/rewind 0"), Some(Err("0".into())));
        assert_eq!(requested("/rewind x"), Some(Err("x".into())));
        assert_eq!(requested("/rewinder"), None);
    }
}
