//! `ferrite sessions list | show | delete`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use ferrite_core::events::Event;
use ferrite_core::state::SessionState;
use ferrite_store::ids::SessionId;
use ferrite_store::log::SessionStore;

fn parse_id(id: &str) -> anyhow::Result<SessionId> {
    SessionId::parse(id).map_err(|e| anyhow::anyhow!("{e}"))
}

pub fn list(home: &Path, cwd: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let cwd = match cwd {
        Some(c) => Some(std::fs::canonicalize(&c).with_context(|| format!("{}", c.display()))?),
        None => None,
    };
    let mut out = std::io::stdout().lock();
    let mut listed = 0;
    // Subagents' sessions belong to their parent (`ferrite sessions show ID` shows one); in a
    // repository, the folder's copies in its other worktrees are listed too, marked.
    let all = SessionStore::new(home).list()?;
    for l in ferrite_core::runtime::listing::sessions_in(all, cwd.as_deref()) {
        let s = l.summary;
        listed += 1;
        let marker = match &l.worktree {
            Some(w) if cwd.as_deref() != Some(s.cwd.as_path()) => format!(
                "\t[worktree {}{}{}]",
                w.root.display(),
                w.branch
                    .as_ref()
                    .map(|b| format!(" ({b})"))
                    .unwrap_or_default(),
                if w.root.is_dir() { "" } else { ", removed" }
            ),
            _ => String::new(),
        };
        writeln!(
            out,
            "{}\t{}\t{}\t{}{marker}",
            s.id,
            ferrite_store::time::rfc3339(s.updated_at),
            s.cwd.display(),
            s.title.unwrap_or_default()
        )?;
    }
    // Said on stderr: stdout stays the (empty) listing for scripts.
    if listed == 0 {
        let whence = match &cwd {
            Some(c) => format!(" in {}", c.display()),
            None => String::new(),
        };
        writeln!(std::io::stderr(), "No sessions{whence}.")?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(home: &Path, id: &str) -> anyhow::Result<ExitCode> {
    let id = parse_id(id)?;
    let log = SessionStore::new(home).read(&id)?;
    let state = SessionState::from_log(log);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "session {}  cwd {}  mode {}  model {}",
        state.id,
        state.cwd.display(),
        state.mode,
        state.model.as_deref().unwrap_or("-")
    )?;
    match state.cost_usd {
        Some(cost) => writeln!(
            out,
            "context {} tokens  cost ${cost:.4} (USD)",
            state.context_tokens
        )?,
        None => writeln!(
            out,
            "context {} tokens  cost unknown (no price for the model)",
            state.context_tokens
        )?,
    }
    for event in state.replay() {
        match event {
            Event::UserMessage { content, .. } => {
                let text: Vec<&str> = content.iter().filter_map(|c| c.display_text()).collect();
                writeln!(out, "\n> {}", text.join(" "))?;
            }
            Event::AgentMessageChunk { text } => write!(out, "{text}")?,
            Event::AgentThoughtChunk { .. } => {}
            Event::ToolCall(c) => writeln!(out, "\n[{:?}] {}", c.kind, c.title)?,
            Event::ToolCallUpdate(u) => {
                if let Some(s) = u.status {
                    writeln!(out, "  -> {s:?}")?;
                }
            }
            Event::Plan { entries } => {
                for e in entries {
                    writeln!(out, "  - [{:?}] {}", e.status, e.content)?;
                }
            }
            other => writeln!(out, "{}", serde_json::to_string(&other)?)?,
        }
    }
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}

pub fn delete(home: &Path, id: &str) -> anyhow::Result<ExitCode> {
    let id = parse_id(id)?;
    SessionStore::new(home).delete_with_subagents(&id)?;
    writeln!(std::io::stderr(), "Deleted {id}")?;
    Ok(ExitCode::SUCCESS)
}
