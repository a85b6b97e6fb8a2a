//! Hooks, in Claude Code's format: commands the user configured to run at points of a session
//! (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`, `SessionStart`, `SubagentStop`). A
//! hook gets the event as JSON on stdin and answers by its exit code (2 blocks, with its stderr as
//! the reason) or by JSON on stdout (`decision`, `reason`, `hookSpecificOutput`).
//!
//! This module holds what needs no process: where hooks come from ([`table`]), which hooks an
//! event runs ([`Hooks::matching`]), and what their answers mean together ([`answer`]). Running
//! them (sandboxed as the session's commands, with a timeout and bounded output) is the turn's
//! (`turn/hooks.rs`).
//!
//! Hooks a repository brings (its `.claude/settings.json`, its `.ferrite/config.toml`) are inert
//! until the user trusts the folder ([`crate::trust`]): a cloned repository must not run code on
//! the user's machine because an agent was started in it.

pub mod answer;
pub mod files;
pub mod matchers;
pub mod shown;
pub mod table;

use std::path::PathBuf;
use std::time::Duration;

pub use answer::{Answer, Combined, PreVerdict};
pub use table::HookTable;

/// What a session remembers of its hooks while it is open in this process.
#[derive(Debug, Default)]
pub struct SessionFlags {
    /// `SessionStart` hooks ran (once per session and process: a load is a resume).
    pub started: std::sync::atomic::AtomicBool,
    /// The hooks and agents (by fingerprint) the user was asked to trust, or told are off: not
    /// again in this session (one that changes after is asked about anew).
    pub trust_asked: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Hooks (by fingerprint) whose failure the user was told of: a hook that fails on every
    /// prompt is reported once per session.
    pub failures_told: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// The events Ferrite runs hooks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
    SessionStart,
    SubagentStop,
}

impl HookEvent {
    pub const ALL: [HookEvent; 6] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::SubagentStop,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SubagentStop => "SubagentStop",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// Whose a hook is: the user's own files, or the repository's (inert until trusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    User,
    Project,
}

/// One hook command, ready to run.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: HookEvent,
    /// Which tools (or, for `SessionStart`, which sources) it runs for, as written; empty is all.
    pub matcher_text: String,
    /// The matcher compiled: only for a hook that runs (an untrusted repository's matchers cost
    /// nothing), `None` for all.
    pub matcher: Option<std::sync::Arc<regex::Regex>>,
    pub command: String,
    /// The workspace files the command runs, with their content's digest (project hooks only;
    /// trust covers them, see [`files`]).
    pub runs: Vec<files::RunFile>,
    pub timeout: Duration,
    pub origin: Origin,
    /// The file it was configured in.
    pub file: PathBuf,
}

impl Hook {
    /// What trust covers of it (`crate::trust`): its event, matcher, command and file, and the
    /// content of every workspace file the command runs.
    pub fn fingerprint(&self) -> String {
        let file = self.file.to_string_lossy();
        let mut parts = vec![
            self.event.name().to_owned(),
            self.matcher_text.clone(),
            self.command.clone(),
            file.into_owned(),
        ];
        for run in &self.runs {
            parts.push(run.path.to_string_lossy().into_owned());
            parts.push(run.digest.as_record());
        }
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        crate::trust::fingerprint(&parts)
    }

    /// Why the hook cannot be trusted as it is (a file it runs could not be hashed), if so.
    pub fn unverifiable(&self) -> Option<String> {
        self.runs.iter().find_map(|r| match &r.digest {
            files::Digest::Unverifiable(why) => Some(format!("{}: {why}", r.path.display())),
            _ => None,
        })
    }

    /// Whether it runs for `subject`: a tool (by Ferrite's name or Claude Code's) or a
    /// `SessionStart` source. Events without a subject run every hook.
    fn matches(&self, subject: Option<&str>) -> bool {
        let (Some(re), Some(subject)) = (&self.matcher, subject) else {
            return true;
        };
        re.is_match(subject) || claude_tool_name(subject).is_some_and(|alias| re.is_match(alias))
    }
}

/// The hooks of one turn: those that run, and those a repository brought that wait for the
/// user's trust (listed, never run).
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub active: Vec<Hook>,
    pub inert: Vec<Hook>,
    /// Files and entries that could not be used, in words (for the log and `ferrite doctor`).
    pub problems: Vec<String>,
    /// What the session remembers of its hooks (which failures the user was told of).
    pub session: std::sync::Arc<SessionFlags>,
}

impl Hooks {
    /// The active hooks `event` runs for `subject` (see [`Hook::matches`]), in the order they
    /// were configured.
    pub fn matching(&self, event: HookEvent, subject: Option<&str>) -> Vec<&Hook> {
        self.active
            .iter()
            .filter(|h| h.event == event && h.matches(subject))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }
}

/// What hooks told the model, as a note in the conversation (`kind`: `context`, `feedback`).
pub fn note(event: &str, kind: &str, text: &str) -> String {
    format!("[{event} hook {kind}: {text}]")
}

/// Context a hook added, as the model reads it.
pub fn context_note(event: &str, context: &str) -> String {
    note(event, "context", context)
}

/// Context a hook added, as the user is shown it (live and when the session is loaded).
pub fn context_notice(event: &str, context: &str) -> String {
    format!("A {event} hook added context for the model:\n\n{context}")
}

/// The name Claude Code gives the same tool, so that hooks written for it (`"matcher": "Bash"`,
/// scripts that test `tool_name == "Edit"`) work unchanged.
pub fn claude_tool_name(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "bash" => "Bash",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "grep" => "Grep",
        "find" => "Glob",
        "ls" => "LS",
        "web_fetch" => "WebFetch",
        "web_search" => "WebSearch",
        "task" => "Task",
        "update_plan" => "TodoWrite",
        "bash_output" => "BashOutput",
        "bash_kill" => "KillShell",
        "skill" => "Skill",
        _ => return None,
    })
}

/// The mode as Claude Code names it (`permission_mode` of every event).
pub fn claude_mode(mode: crate::modes::Mode) -> &'static str {
    match mode {
        crate::modes::Mode::Plan => "plan",
        crate::modes::Mode::Ask => "default",
        crate::modes::Mode::Auto => "acceptEdits",
        crate::modes::Mode::Full => "bypassPermissions",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(matcher: Option<&str>) -> Hook {
        Hook {
            event: HookEvent::PreToolUse,
            matcher_text: matcher.unwrap_or_default().into(),
            matcher: matcher.map(|m| matchers::compiled(m).unwrap().unwrap()),
            command: "true".into(),
            runs: vec![],
            timeout: Duration::from_secs(1),
            origin: Origin::User,
            file: PathBuf::from("/x"),
        }
    }

    #[test]
    fn matchers_take_ferrite_and_claude_code_names_whole() {
        let bash = hook(Some("Bash"));
        assert!(bash.matches(Some("bash")));
        assert!(!bash.matches(Some("bash_output")), "a name matches whole");
        let files = hook(Some("Edit|Write"));
        assert!(files.matches(Some("edit")) && files.matches(Some("write")));
        assert!(!files.matches(Some("read")));
        assert!(hook(Some("mcp__github__.*")).matches(Some("mcp__github__create_issue")));
        assert!(hook(None).matches(Some("anything")));
        assert!(hook(Some("edit")).matches(Some("edit")));
    }
}
