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
    /// The user was asked to trust the workspace, or told it is not trusted: not again.
    pub trust_settled: std::sync::atomic::AtomicBool,
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
    /// Which tools (or, for `SessionStart`, which sources) it runs for; `None` is all.
    pub matcher: Option<regex::Regex>,
    pub command: String,
    pub timeout: Duration,
    pub origin: Origin,
    /// The file it was configured in.
    pub file: PathBuf,
}

impl Hook {
    /// What trust covers of it (`crate::trust`): its event, matcher, command and file.
    pub fn fingerprint(&self) -> String {
        let matcher = self.matcher.as_ref().map_or("", |m| m.as_str());
        let file = self.file.to_string_lossy();
        crate::trust::fingerprint(&[self.event.name(), matcher, &self.command, &file])
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
            matcher: matcher.map(|m| table::matcher(m).unwrap().unwrap()),
            command: "true".into(),
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
