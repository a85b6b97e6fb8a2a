//! What a checkpoint or an `/undo` changed, as the session log records it and as the user and
//! the model are told. A leaf: the log and the session state use it without depending on the
//! checkpoint store (`checkpoints`), which depends on them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How a checkpoint's turn changed one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Created,
    Modified,
    Deleted,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Created => "created",
            Change::Modified => "modified",
            Change::Deleted => "deleted",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: PathBuf,
    pub change: Change,
}

/// A file a checkpoint could not keep, or an undo left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// A path as shown to the user: relative to the workspace root when inside it.
pub fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .ok()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The answer to an `/undo` (also what `session/load` replays for it).
pub fn undo_message(
    undid: &[u64],
    files: &[FileChange],
    skipped: &[Skipped],
    root: &Path,
) -> String {
    let mut out = match undid.len() {
        1 => "Undid the last turn that changed the workspace.".to_owned(),
        n => format!("Undid the last {n} turns that changed the workspace."),
    };
    let group = |change: Change| -> Vec<String> {
        files
            .iter()
            .filter(|f| f.change == change)
            .map(|f| shown(&f.path, root))
            .collect()
    };
    // Markdown, as clients render it: paragraphs and a list, not lines a renderer joins.
    let mut items = Vec::new();
    for (change, label) in [
        (Change::Modified, "Restored"),
        (Change::Created, "Recreated (the turn had deleted them)"),
        (Change::Deleted, "Deleted (the turn had created them)"),
    ] {
        let names = group(change);
        if !names.is_empty() {
            items.push(format!("- {label}: {}", names.join(", ")));
        }
    }
    for s in skipped {
        items.push(format!("- Skipped {}: {}", shown(&s.path, root), s.reason));
    }
    if !items.is_empty() {
        out.push_str("\n\n");
        out.push_str(&items.join("\n"));
    }
    if files.is_empty() && skipped.is_empty() {
        out.push_str("\n\nThe files were already as they were before; nothing was changed.");
    }
    if !files.is_empty() {
        out.push_str("\n\n`/undo` again reverts this undo.");
    }
    out
}

/// What the model is told, with the next prompt, about an `/undo`: which of its changes are gone.
pub fn undo_note(files: &[FileChange], skipped: &[Skipped]) -> String {
    let mut out = String::from(
        "[Note from Ferrite: the user ran /undo. The workspace was reverted to before your last \
         change(s); do not assume those changes are still in place. Reverted:",
    );
    for f in files {
        let what = match f.change {
            Change::Modified => "restored to its earlier content",
            Change::Created => "recreated (it had been deleted)",
            Change::Deleted => "deleted (it had been created)",
        };
        out.push_str(&format!("\n- {}: {what}", f.path.display()));
    }
    for s in skipped {
        out.push_str(&format!(
            "\n- {}: NOT reverted ({})",
            s.path.display(),
            s.reason
        ));
    }
    out.push(']');
    out
}
