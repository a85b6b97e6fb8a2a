//! Stage before intake: the prompt's MCP parts. `/mcp__<server>__<prompt> args` gets the
//! prompt's messages from its server (after the line that ran it, as a prompt file's body is);
//! a `resource_link` to a server's resource gets its text. Only the user's own blocks are looked
//! at: what a server returns is never read as a command or followed as a link, so it cannot
//! run `/undo`, narrow or widen the tools, or pull a denied file into the prompt.
//!
//! A prompt that cannot be run (an argument missing, a server that failed) ends the turn with
//! a message to the user; nothing reaches the model. A session without MCP servers is not
//! touched.

use tokio_util::sync::CancellationToken;

use crate::content::UserContent;
use crate::events::{Event, TurnOutcome};
use crate::log::{EntryKind, StopReason, StoreError};
use crate::mcp::{ToolProvider, prompts, resources};
use crate::session::{Recorder, TurnStart};

use super::Stage;

/// Names MCP prompts are offered under start with this.
const COMMAND_PREFIX: &str = "mcp__";

/// The prompt with its MCP parts filled in, or the outcome that ended the turn.
pub(super) async fn expand(
    rec: &Recorder,
    start: &TurnStart,
    invoked: &crate::commands::Invoked,
    content: &[UserContent],
    cancel: &CancellationToken,
) -> Result<Stage<Vec<UserContent>>, StoreError> {
    let Some(servers) = start.extra_tools.as_deref() else {
        return Ok(Ok(content.to_vec()));
    };
    let Some(mut out) = cancellable(cancel, read_links(rec, servers, content)).await else {
        return end(rec, content, None, StopReason::Cancelled).await;
    };
    let Some((name, line)) = &invoked.command else {
        return Ok(Ok(out));
    };
    if !name.starts_with(COMMAND_PREFIX) || invoked.is_ours() {
        return Ok(Ok(out));
    }
    let Some(ran) = cancellable(cancel, run_prompt(servers, name, line)).await else {
        return end(rec, content, None, StopReason::Cancelled).await;
    };
    match ran {
        Ok((blocks, note)) => {
            if let Some(text) = note {
                rec.emit(Event::Notice { text }).await;
            }
            // After the line that ran it, as a prompt file's body is.
            let at = 1.min(out.len());
            out.splice(at..at, blocks);
            Ok(Ok(out))
        }
        Err(message) => end(rec, content, Some(message), StopReason::EndTurn).await,
    }
}

/// `prompts/get` with the words of `line` as arguments; the blocks it adds and the note of what
/// was cut; `Err` says why it could not run.
async fn run_prompt(
    servers: &dyn ToolProvider,
    name: &str,
    line: &str,
) -> Result<(Vec<UserContent>, Option<String>), String> {
    let find =
        |servers: &dyn ToolProvider| servers.prompts().into_iter().find(|p| p.command == name);
    let prompt = match find(servers) {
        Some(p) => Some(p),
        // Typed before its server was up (an editor remembers commands): wait for it.
        None => {
            servers.started().await;
            find(servers)
        }
    };
    let Some(prompt) = prompt else {
        return Err(format!(
            "No running MCP server offers `/{name}`: its server may have failed to start or \
             stopped offering it."
        ));
    };
    let arguments = prompts::map_arguments(&prompt, line)?;
    let extra = if prompt.arguments.is_empty() {
        line
    } else {
        ""
    };
    let messages = servers.get_prompt(name, arguments).await?;
    Ok(prompts::prompt_content(name, messages, extra))
}

/// The user's `resource_link`s that a server claims, read through it. A failed read leaves the
/// link as it was and tells the user.
async fn read_links(
    rec: &Recorder,
    servers: &dyn ToolProvider,
    content: &[UserContent],
) -> Vec<UserContent> {
    let mut out = Vec::with_capacity(content.len());
    for block in content {
        let UserContent::ResourceLink {
            uri,
            name,
            mime_type,
            text: None,
        } = block
        else {
            out.push(block.clone());
            continue;
        };
        if !resources::is_server_uri(uri) {
            out.push(block.clone());
            continue;
        }
        match servers.read_resource(uri).await {
            None => out.push(block.clone()),
            Some(Ok(parts)) => {
                let (blocks, note) =
                    resources::fill_link(uri.clone(), name.clone(), mime_type.clone(), parts);
                if let Some(text) = note {
                    rec.emit(Event::Notice { text }).await;
                }
                out.extend(blocks);
            }
            Some(Err(reason)) => {
                rec.emit(Event::Notice {
                    text: format!("The attached `{uri}` could not be read: {reason}"),
                })
                .await;
                out.push(block.clone());
            }
        }
    }
    out
}

/// `None` when the turn was cancelled first.
async fn cancellable<T>(
    cancel: &CancellationToken,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        t = work => Some(t),
    }
}

/// Ends the turn before the model: the prompt is kept in the log (replayed, never sent to the
/// model), with the message that says why, as `/undo` answers are.
async fn end(
    rec: &Recorder,
    content: &[UserContent],
    message: Option<String>,
    stop: StopReason,
) -> Result<Stage<Vec<UserContent>>, StoreError> {
    rec.record(EntryKind::Command {
        content: content.to_vec(),
    })?;
    if let Some(text) = message {
        rec.record(EntryKind::Reply { text: text.clone() })?;
        rec.emit(Event::AgentMessageChunk { text }).await;
    }
    Ok(Err(TurnOutcome::ended(stop)))
}
