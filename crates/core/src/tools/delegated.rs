//! Writes handed to the editor (`fs_delegation = "review"`, the default where the client writes
//! files): `write` and `edit` send the new text as `fs/write_text_file`, so the editor's review
//! of agent edits (Zed's Keep/Reject) tracks them.
//!
//! The policy decided on a resolved path; an editor writes the path as it finds it, in place
//! and following a link. So a write is handed over only while nothing can turn the path into a
//! link: no link on the way to it (`fsops::slot`) and no command of the session (or of its
//! subagents) running ([`crate::clientfs::CommandGate`]), checked when the call starts and again
//! right before sending, and no command starts until the write was checked. Anything else is
//! written by this process, without following links. After the editor's answer the path must
//! still be link-free and hold the new text; if not, the file is put back as it was and the call
//! fails, saying where the text may have gone. A process outside the session that swaps the path
//! while the editor writes is only caught by that last check (`docs/acp.md`).

use std::path::Path;
use std::sync::Arc;

use crate::clientfs::ClientFs;
use crate::fsops::{self, Parents, Slot};
use crate::tools::{ToolContext, ToolError};

/// The editor, when `write`/`edit` of `path` go through it: the policy and the client allow it,
/// the path has no link on the way, and no command of the session runs now.
pub(crate) fn delegated_writer(ctx: &ToolContext<'_>, path: &Path) -> Option<Arc<dyn ClientFs>> {
    ctx.client_fs.clone().filter(|c| {
        crate::clientfs::delegate_write(ctx.fs_delegation, c.writes(), path, &ctx.roots)
            && ctx.command_gate.is_quiet()
            && fsops::slot(path).is_ok()
    })
}

/// Has the editor write `content` to `path` (`fs/write_text_file`), or writes it here when the
/// path or the session's commands changed since the call started. The editor's refusal is the
/// call's error, and nothing was written; a write that did not land in `path` is undone.
pub(crate) async fn write_through(
    ctx: &ToolContext<'_>,
    client: &dyn ClientFs,
    path: &Path,
    shown: &str,
    content: &str,
    parents: Parents,
) -> Result<(), ToolError> {
    // Taken before the last look at the path: from here no command of the session starts
    // until the editor's write was checked.
    let quiet = ctx.command_gate.quiet();
    let (Some(_quiet), Ok(slot)) = (quiet, fsops::slot(path)) else {
        return write_here(path, shown, content, parents);
    };
    let before = match slot {
        Slot::Absent => None,
        Slot::File { mode } => Some((read_bytes(path, shown)?, mode)),
    };
    let write = client.write_text_file(ctx.recorder.session(), path, content.to_owned());
    tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled(format!(
            "Cancelled while the editor wrote {shown}."
        ))),
        r = write => r.map_err(|e| ToolError::RespondToModel(format!(
            "The editor could not write {shown}: {e}. The file is unchanged."
        )))?,
    }
    match landed(path, content) {
        Ok(()) => Ok(()),
        Err(what) => Err(ToolError::RespondToModel(format!(
            "The editor's write of {shown} could not be verified: {what}. {}",
            undo(path, before)
        ))),
    }
}

/// The write done by this process, without following links.
fn write_here(path: &Path, shown: &str, content: &str, parents: Parents) -> Result<(), ToolError> {
    fsops::open_write(path, parents)
        .and_then(|mut f| std::io::Write::write_all(&mut f, content.as_bytes()))
        .map_err(|e| ToolError::RespondToModel(format!("cannot write {shown}: {e}")))
}

fn read_bytes(path: &Path, shown: &str) -> Result<Vec<u8>, ToolError> {
    crate::tools::write::read_existing(path)
        .map_err(|e| ToolError::RespondToModel(format!("cannot read {shown} before writing: {e}")))
}

/// Whether the editor's write is in `path`: still reached without a link, holding `content`
/// (line endings aside: an editor may keep the file's own).
fn landed(path: &Path, content: &str) -> Result<(), String> {
    if let Err(e) = fsops::slot(path) {
        let target = std::fs::read_link(path)
            .map(|t| format!(" (a link to {})", t.display()))
            .unwrap_or_default();
        return Err(format!(
            "the path changed while the editor wrote it{target}: {e}; the editor may have \
             written the text somewhere else"
        ));
    }
    let now = crate::tools::write::read_existing(path).map_err(|e| e.to_string())?;
    let same = String::from_utf8(now)
        .is_ok_and(|now| now.replace("\r\n", "\n") == content.replace("\r\n", "\n"));
    if same {
        Ok(())
    } else {
        Err(
            "the file does not hold the new text; the editor may have written it somewhere \
             else"
                .to_owned(),
        )
    }
}

/// Puts `path` back as it was before the write (`None`: it did not exist); says what was done.
fn undo(path: &Path, before: Option<(Vec<u8>, u32)>) -> String {
    let restored = fsops::entry(path, Parents::MustExist).and_then(|entry| match &before {
        Some((bytes, mode)) => entry.replace_with_file(bytes, *mode),
        None => match entry.remove_file() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
    });
    match restored {
        Ok(()) if before.is_some() => {
            "The file was restored to its content before the call.".into()
        }
        Ok(()) => "The file was removed again.".into(),
        Err(e) => format!("It could not be restored: {e}."),
    }
}
