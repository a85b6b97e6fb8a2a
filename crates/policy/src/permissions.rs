//! The permission policy (`docs/permissions.md`): modes, harness ceilings, `allow`/`deny` rules, and the
//! "always" answers stored under `FERRITE_HOME/permissions/`. Pure decisions; asking the user is
//! core's `Approver`'s job. The exact rule semantics are in `docs/permissions.md`.
//!
//! Rules are `tool(specifier)` or a bare `tool`:
//! - `bash(prefix:*)` / `bash(exact command)`: matched against the command as a bash grammar
//!   reads it ([`shell`]). An allow rule matches only a fully understood command whose every
//!   simple command it (or another allow rule) matches word for word; a deny rule matches any
//!   simple command found anywhere in it, with programs and flags normalised
//!   ([`command_rules`]), and a command that hides what it runs is refused while a bash deny
//!   rule is in force.
//! - file tools take a glob, relative to the workspace roots or absolute (`**` crosses
//!   directories, `*` does not). `read(...)` rules also cover `grep`, `find` and `ls`;
//!   `edit(...)` rules also cover `write`.
//! - `mcp__server__tool` or `mcp__server__*` for MCP tools.
//!
//! Deny always wins, in every mode. A rule that does not parse is an error, never skipped.

mod command_rules;
#[cfg(test)]
mod corpus_tests;
#[cfg(test)]
mod differential_gen;
#[cfg(test)]
mod differential_tests;
mod options;
pub(crate) mod shell;
mod store;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod web_rules_tests;

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::access::Access;
use crate::modes::{Harness, Mode};
use crate::shell::Shell;
use command_rules::{CommandPattern, Verdict};
use shell::{PlainCommand, Script, Word};

pub use options::{always_rule, options_for};
pub use store::{StoreError, StoredRules};

/// The tools a rule may name (besides `mcp__server__tool`).
const KNOWN_TOOLS: &[&str] = &[
    "bash",
    "read",
    "edit",
    "write",
    "grep",
    "find",
    "ls",
    "update_plan",
    "exit_plan",
    "web_fetch",
    "task",
];

/// Tools whose rules take a path glob.
const FILE_TOOLS: &[&str] = &["read", "edit", "write", "grep", "find", "ls"];

/// A parsed `tool(specifier)` rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub text: String,
    tool: String,
    spec: Spec,
}

#[derive(Debug, Clone)]
enum Spec {
    Any,
    Command(CommandPattern),
    Glob(GlobSet),
    /// `web_fetch(domain:docs.rs)`, `web_fetch(domain:*.python.org)` (subdomains only).
    Domain(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule `{rule}`: {why}")]
pub struct RuleError {
    pub rule: String,
    pub why: String,
}

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let err = |why: &str| RuleError {
            rule: text.to_owned(),
            why: why.to_owned(),
        };
        let t = text.trim();
        let (tool, spec) = match t.find('(') {
            None => (t, None),
            Some(i) => {
                let inner = t[i + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| err("missing `)` at the end"))?;
                (&t[..i], Some(inner))
            }
        };
        let mcp = tool.strip_prefix("mcp__");
        let known = KNOWN_TOOLS.contains(&tool)
            || mcp.is_some_and(|m| {
                let name = m.strip_suffix('*').unwrap_or(m);
                !name.is_empty()
                    && !name.contains('*')
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
            });
        if !known {
            return Err(err(&format!(
                "unknown tool `{tool}`: a rule names one of {} or an MCP tool `mcp__server__tool` / `mcp__server__*`",
                KNOWN_TOOLS.join(", ")
            )));
        }
        let spec = match spec {
            None | Some("") | Some("*") | Some("**") => Spec::Any,
            Some(s) if tool == "bash" => match CommandPattern::parse(s) {
                Some(p) => Spec::Command(p),
                None => Spec::Any,
            },
            Some(s) if tool == "web_fetch" => match s.strip_prefix("domain:") {
                Some(d) if is_domain_pattern(d) => Spec::Domain(d.to_ascii_lowercase()),
                _ => {
                    return Err(err(
                        "web_fetch rules name a domain: `web_fetch(domain:docs.rs)` or \
                         `web_fetch(domain:*.python.org)`",
                    ));
                }
            },
            Some(s) if FILE_TOOLS.contains(&tool) => {
                // `dir/**` also matches `dir` itself (`ls dir`, `grep … dir`).
                let mut set = GlobSetBuilder::new();
                for pattern in std::iter::once(s).chain(s.strip_suffix("/**")) {
                    set.add(
                        GlobBuilder::new(pattern)
                            .literal_separator(true)
                            .build()
                            .map_err(|e| err(&e.to_string()))?,
                    );
                }
                Spec::Glob(set.build().map_err(|e| err(&e.to_string()))?)
            }
            Some(_) => {
                return Err(err(&format!(
                    "`{tool}` rules take no specifier: write `{tool}`"
                )));
            }
        };
        Ok(Rule {
            text: t.to_owned(),
            tool: tool.to_owned(),
            spec,
        })
    }

    /// Whether this rule's tool name covers `tool`.
    fn covers_tool(&self, tool: &str) -> bool {
        if self.tool == tool {
            return true;
        }
        if let Some(prefix) = self.tool.strip_suffix('*') {
            return tool.starts_with(prefix);
        }
        matches!(
            (self.tool.as_str(), tool),
            ("read", "grep" | "find" | "ls") | ("edit", "write")
        )
    }

    fn matches_path(&self, path: &Path, roots: &[PathBuf]) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Glob(g) => {
                g.is_match(path)
                    || roots
                        .iter()
                        .any(|r| path.strip_prefix(r).is_ok_and(|rel| g.is_match(rel)))
            }
            Spec::Command(_) | Spec::Domain(_) => false,
        }
    }

    /// Whether the rule matches a call that is not a command. `all_paths`: every path must
    /// match (allow) or one suffices (deny).
    fn matches_other(&self, access: &Access, roots: &[PathBuf], all_paths: bool) -> bool {
        match access {
            Access::Read { paths } | Access::Write { paths } => {
                if paths.is_empty() {
                    return matches!(self.spec, Spec::Any);
                }
                if all_paths {
                    paths.iter().all(|p| self.matches_path(p, roots))
                } else {
                    paths.iter().any(|p| self.matches_path(p, roots))
                }
            }
            Access::Fetch { host, .. } => match &self.spec {
                Spec::Any => true,
                Spec::Domain(d) => domain_matches(d, host),
                Spec::Command(_) | Spec::Glob(_) => false,
            },
            Access::Execute { .. } | Access::Mcp | Access::None => {
                matches!(self.spec, Spec::Any)
            }
        }
    }

    /// Why this deny rule refuses the command, if it does.
    /// `work`: the words matched so far against every rule ([`shell::MAX_MATCH_WORK`]).
    fn denies_command(&self, script: &Script, work: &mut usize) -> Option<Refusal> {
        let pattern = match &self.spec {
            Spec::Any => {
                return Some(Refusal::Denied(format!(
                    "denied by the rule `{}`",
                    self.text
                )));
            }
            Spec::Command(p) => p,
            Spec::Glob(_) | Spec::Domain(_) => return None,
        };
        if let Some(why) = &script.beyond {
            return Some(Refusal::Unchecked(format!(
                "{why}, so the deny rule `{}` cannot be checked",
                self.text
            )));
        }
        self.denies_understood(pattern, script, work)
    }

    fn denies_understood(
        &self,
        pattern: &CommandPattern,
        script: &Script,
        work: &mut usize,
    ) -> Option<Refusal> {
        let denied = |why: String| Some(Refusal::Denied(why));
        if script.unparseable {
            return denied(format!(
                "the command is not valid shell syntax as far as Ferrite's bash grammar can tell, so the deny rule `{}` cannot be checked; write it in plain shell syntax",
                self.text
            ));
        }
        if let Some(why) = script.hidden.first() {
            return denied(format!(
                "{why}, so the deny rule `{}` cannot be checked; run the commands directly",
                self.text
            ));
        }
        for words in script.commands.iter().flat_map(shell::Found::runs) {
            // A suffix of another program costs one look; one of the rule's program, its words.
            *work += if pattern.names_program_of(words) {
                words.len()
            } else {
                1
            };
            if *work > shell::MAX_MATCH_WORK {
                return Some(Refusal::Unchecked(format!(
                    "the command has more words than Ferrite's rules check, so the deny rule \
                     `{}` cannot be checked",
                    self.text
                )));
            }
            match pattern.denies(words) {
                Verdict::No => {}
                Verdict::Yes => {
                    return denied(format!(
                        "denied by the rule `{}` (`{}`)",
                        self.text,
                        shown_words(words)
                    ));
                }
                Verdict::Maybe => {
                    return denied(format!(
                        "`{}` has arguments computed at run time that the deny rule `{}` may match",
                        shown_words(words),
                        self.text
                    ));
                }
            }
        }
        None
    }

    fn allows_words(&self, words: &[String]) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Command(p) => p.allows(words),
            Spec::Glob(_) | Spec::Domain(_) => false,
        }
    }
}

fn is_domain_pattern(d: &str) -> bool {
    let name = d.strip_prefix("*.").unwrap_or(d);
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == ':')
}

/// `docs.rs` matches exactly that host; `*.python.org` matches its subdomains.
fn domain_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(parent) => host
            .strip_suffix(parent)
            .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
        None => host == pattern,
    }
}

fn shown_words(words: &[Word]) -> String {
    let all: Vec<&str> = words.iter().map(Word::shown).collect();
    let text = all.join(" ");
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

impl Rules {
    /// Whether a deny rule forbids `tool` to read `path`: applied to every file a search walks
    /// into, not only to the path the model named (a denied `.env` must not come back through
    /// `grep` over its directory).
    pub fn denies_read(&self, tool: &str, path: &Path, roots: &[PathBuf]) -> bool {
        self.deny
            .iter()
            .any(|r| r.covers_tool(tool) && r.matches_path(path, roots))
    }
}

/// The rules in force for one workspace: config plus stored "always" answers.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
}

impl Rules {
    /// Parses rule strings; the first that does not parse is the error.
    pub fn from_strings(allow: &[String], deny: &[String]) -> Result<Rules, RuleError> {
        let parse = |list: &[String]| -> Result<Vec<Rule>, RuleError> {
            list.iter().map(|r| Rule::parse(r)).collect()
        };
        Ok(Rules {
            allow: parse(allow)?,
            deny: parse(deny)?,
        })
    }

    /// Why a deny rule refuses the call, if one does.
    fn denied(
        &self,
        tool: &str,
        access: &Access,
        script: Option<&Script>,
        roots: &[PathBuf],
    ) -> Option<Refusal> {
        let mut rules = self.deny.iter().filter(|r| r.covers_tool(tool));
        match (access, script) {
            (Access::Execute { .. }, Some(script)) => {
                let mut work = 0;
                rules.find_map(|r| r.denies_command(script, &mut work))
            }
            _ => rules
                .find(|r| r.matches_other(access, roots, false))
                .map(|r| Refusal::Denied(format!("denied by the rule `{}`", r.text))),
        }
    }

    /// Whether allow rules cover the whole call.
    fn allowed(
        &self,
        tool: &str,
        access: &Access,
        script: Option<&Script>,
        roots: &[PathBuf],
        shell: Shell,
    ) -> bool {
        let rules: Vec<&Rule> = self.allow.iter().filter(|r| r.covers_tool(tool)).collect();
        match (access, script) {
            (Access::Execute { .. }, Some(script)) => {
                rules.iter().any(|r| matches!(r.spec, Spec::Any))
                    // The grammar is bash's: under another shell no command is understood.
                    || shell == Shell::Bash && script.plain.as_ref().is_some_and(|cmds| {
                        !cmds.is_empty() && cmds.iter().all(|c| command_allowed(&rules, c))
                    })
            }
            _ => rules.iter().any(|r| r.matches_other(access, roots, true)),
        }
    }
}

/// A simple command of a fully understood line is allowed when a rule matches its words, or,
/// for `sh -c S`, when every command of `S` is allowed. A program Ferrite does not know that is
/// followed by one that runs or changes things (`setarch x86_64 rm -rf v`) may be running it:
/// the rest must be allowed too.
fn command_allowed(rules: &[&Rule], command: &PlainCommand) -> bool {
    let whole = rules.iter().any(|r| r.allows_words(&command.words))
        && shell::possibly_wrapped(&command.words).is_none_or(|at| {
            command_allowed(
                rules,
                &PlainCommand {
                    words: command.words[at..].to_vec(),
                    inner: None,
                },
            )
        });
    whole
        || command.inner.as_ref().is_some_and(|inner| {
            !inner.is_empty() && inner.iter().all(|c| command_allowed(rules, c))
        })
}

/// Why deny rules keep a call from running.
enum Refusal {
    /// A rule refuses it.
    Denied(String),
    /// The command is beyond what the rules read ([`Script::beyond`]): no rule can be checked.
    Unchecked(String),
}

/// What the policy says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Ask,
    Deny(String),
}

/// Everything a decision depends on.
pub struct Call<'a> {
    pub tool: &'a str,
    pub access: &'a Access,
    pub mode: Mode,
    pub harness: Harness,
    /// `_meta.permission_mode = "ask"` on this turn.
    pub force_ask: bool,
    pub roots: &'a [PathBuf],
    /// The shell commands run with: allow rules for commands hold only under bash.
    pub shell: Shell,
}

fn inside(paths: &[PathBuf], roots: &[PathBuf]) -> bool {
    paths.iter().all(|p| roots.iter().any(|r| p.starts_with(r)))
}

pub fn decide(call: &Call<'_>, rules: &Rules) -> Decision {
    let Call {
        tool,
        access,
        mode,
        harness,
        force_ask,
        roots,
        shell,
    } = *call;
    let script = match access {
        Access::Execute { command } => Some(Script::parse(command, call.shell)),
        Access::Read { .. }
        | Access::Write { .. }
        | Access::Fetch { .. }
        | Access::Mcp
        | Access::None => None,
    };
    match rules.denied(tool, access, script.as_ref(), roots) {
        Some(Refusal::Denied(why)) => return Decision::Deny(why),
        // A command too long or too deep to check against the deny rules runs only after a
        // question, whatever the mode (`full` included).
        Some(Refusal::Unchecked(why)) if !harness.may_ask() => return Decision::Deny(why),
        Some(Refusal::Unchecked(_)) => return Decision::Ask,
        None => {}
    }
    let allowed_by_rule = || rules.allowed(tool, access, script.as_ref(), roots, shell);
    let mode = if force_ask { mode.min(Mode::Ask) } else { mode };
    let decision = match (mode, access) {
        (_, Access::None) => Decision::Allow,
        (Mode::Full, _) => Decision::Allow,
        (Mode::Plan, Access::Write { .. }) => {
            return Decision::Deny(
                "plan mode does not write files; finish the plan with exit_plan first".into(),
            );
        }
        // Commands in plan mode run in a read-only sandbox without network.
        (Mode::Plan, Access::Execute { .. }) => Decision::Allow,
        // A URL can carry what the model read: below `full`, only a domain rule lets a fetch
        // through without asking, whatever the mode.
        (Mode::Plan | Mode::Ask | Mode::Auto, Access::Fetch { .. }) => {
            if allowed_by_rule() {
                Decision::Allow
            } else {
                Decision::Ask
            }
        }
        (Mode::Plan | Mode::Ask | Mode::Auto, Access::Read { paths }) => {
            // Outside the workspace, `auto` asks too: `~/.ssh/id_*` is one read away otherwise.
            if inside(paths, roots) || allowed_by_rule() {
                Decision::Allow
            } else {
                Decision::Ask
            }
        }
        // Writes outside the workspace always ask, whatever the rules say.
        (Mode::Ask | Mode::Auto, Access::Write { paths }) if !inside(paths, roots) => Decision::Ask,
        (Mode::Auto, Access::Write { .. } | Access::Execute { .. } | Access::Mcp) => {
            Decision::Allow
        }
        (Mode::Ask | Mode::Plan, Access::Write { .. } | Access::Execute { .. } | Access::Mcp) => {
            if allowed_by_rule() {
                Decision::Allow
            } else {
                Decision::Ask
            }
        }
    };
    match decision {
        Decision::Ask if !harness.may_ask() => Decision::Deny(
            "this session runs unattended, so nothing can be approved; the call would need the user's permission".into(),
        ),
        other => other,
    }
}

/// What the model is told of a call that needed the user's approval in a session with no one
/// to ask (`ferrite run`): the call's result, word for word, so `ferrite run` can tell these
/// refusals from the others (its exit status says a call wanted approval).
pub const NO_ONE_TO_ASK: &str =
    "Permission denied: this call needs the user's approval and there is no one to ask.";

/// The four choices of a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

impl OptionKind {
    pub fn id(self) -> &'static str {
        match self {
            OptionKind::AllowOnce => "allow_once",
            OptionKind::AllowAlways => "allow_always",
            OptionKind::RejectOnce => "reject_once",
            OptionKind::RejectAlways => "reject_always",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionOption {
    pub id: String,
    pub name: String,
    pub kind: OptionKind,
}
