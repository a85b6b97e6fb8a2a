//! The options of a permission request and the rules "always" answers store. An option's name
//! says exactly what its rule covers; an "always" option is left out when no rule can say it:
//! - a command that is not fully understood (see [`super::shell`]) gets no "always" options: a
//!   rule derived from part of it would not cover it (allow) or would cover far more than the
//!   user judged (deny);
//! - a command whose program runs other commands (`sh -c`, `sudo`, `xargs`, `env`, `find`, ...)
//!   gets no "always allow": `bash(sudo:*)` would allow everything;
//! - a write outside the workspace gets no "always allow": such writes ask whatever the rules say.

use std::path::{Path, PathBuf};

use super::command_rules::CommandPattern;
use super::shell::{PlainCommand, Script, possibly_wrapped, runs_other_commands};
use super::{OptionKind, PermissionOption};
use crate::access::Access;
use crate::shell::Shell;

/// Programs whose first argument is a sub-command worth keeping in an "always" rule.
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "cargo",
    "git",
    "npm",
    "npx",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "go",
    "docker",
    "podman",
    "kubectl",
    "gh",
    "make",
    "just",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "dotnet",
    "mvn",
    "gradle",
    "rustup",
    "brew",
    "apt",
    "apt-get",
    "systemctl",
    "nix",
    "terraform",
    "helm",
];

/// What an "always" answer to a call would store.
struct Scope {
    rule: String,
    /// Completes "Always allow …" / "Never allow …".
    covers: String,
    /// Whether an allow rule would take effect (writes outside the workspace always ask).
    allow_offered: bool,
}

/// The rule stored when the user picks `kind` (`AllowAlways` or `RejectAlways`) for this call;
/// `None` when that option is not offered.
pub fn always_rule(
    tool: &str,
    access: &Access,
    roots: &[PathBuf],
    shell: Shell,
    kind: OptionKind,
) -> Option<String> {
    let scope = scope(tool, access, roots, shell)?;
    match kind {
        OptionKind::AllowAlways if scope.allow_offered => Some(scope.rule),
        OptionKind::RejectAlways => Some(scope.rule),
        OptionKind::AllowAlways | OptionKind::AllowOnce | OptionKind::RejectOnce => None,
    }
}

/// The options of a request for `tool`, with names that say what "always" covers. Names are
/// plain text in every client (no Markdown: a backtick shows as a backtick).
pub fn options_for(
    tool: &str,
    access: &Access,
    roots: &[PathBuf],
    shell: Shell,
) -> Vec<PermissionOption> {
    let option = |kind: OptionKind, name: String| PermissionOption {
        id: kind.id().to_owned(),
        name,
        kind,
    };
    let scope = scope(tool, access, roots, shell);
    let mut options = vec![option(OptionKind::AllowOnce, "Allow once".to_owned())];
    if let Some(s) = scope.as_ref().filter(|s| s.allow_offered) {
        options.push(option(
            OptionKind::AllowAlways,
            format!("Always allow {}", s.covers),
        ));
    }
    options.push(option(OptionKind::RejectOnce, "Reject".to_owned()));
    if let Some(s) = &scope {
        options.push(option(
            OptionKind::RejectAlways,
            format!("Never allow {}", s.covers),
        ));
    }
    options
}

fn scope(tool: &str, access: &Access, roots: &[PathBuf], shell: Shell) -> Option<Scope> {
    match access {
        Access::Execute { command } => {
            let plain = Script::parse(command, shell).plain?;
            let scope = command_scope(plain.first()?)?;
            // Allow rules for commands hold only under bash (`permissions::decide`).
            Some(Scope {
                allow_offered: scope.allow_offered && shell == Shell::Bash,
                ..scope
            })
        }
        Access::Read { paths } | Access::Write { paths } => {
            let write = matches!(access, Access::Write { .. });
            Some(path_scope(tool, paths, roots, write))
        }
        Access::Fetch { host, .. } => Some(Scope {
            rule: format!("web_fetch(domain:{host})"),
            covers: format!("fetching pages from {host} in this workspace"),
            allow_offered: !host.is_empty(),
        }),
        Access::Mcp | Access::None => Some(tool_scope(tool)),
    }
}

fn command_scope(first: &PlainCommand) -> Option<Scope> {
    let w = &first.words;
    let program = w.first()?;
    if runs_other_commands(program) || possibly_wrapped(w).is_some() {
        // `sh -c 'cargo test'`: the rule for what the shell runs is the useful one.
        if let Some(inner) = first.inner.as_ref().and_then(|i| i.first()) {
            return command_scope(inner);
        }
        let pattern = CommandPattern {
            words: vec![program.clone()],
            prefix: true,
        };
        return Some(Scope {
            rule: format!("bash({program}:*)"),
            covers: format!("\"{}\" commands in this workspace", pattern.shown()),
            allow_offered: false,
        });
    }
    // `cargo test`, `git status`: programs with sub-commands keep one; `ls -la`, `echo hi`:
    // just the program.
    let has_sub = SUBCOMMAND_PROGRAMS.contains(&program.as_str())
        && w.get(1).is_some_and(|s| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        });
    let words: Vec<String> = w
        .iter()
        .take(if has_sub { 2 } else { 1 })
        .cloned()
        .collect();
    // A rule is words separated by spaces: a word with a space or a parenthesis cannot be one.
    if words
        .iter()
        .any(|x| x.is_empty() || x.chars().any(|c| c.is_whitespace() || c == '(' || c == ')'))
    {
        return None;
    }
    let pattern = CommandPattern {
        words,
        prefix: true,
    };
    Some(Scope {
        rule: format!("bash({}:*)", pattern.words.join(" ")),
        covers: format!("\"{}\" commands in this workspace", pattern.shown()),
        allow_offered: true,
    })
}

fn path_scope(tool: &str, paths: &[PathBuf], roots: &[PathBuf], write: bool) -> Scope {
    let rule_tool = if write { "edit" } else { "read" };
    let doing = if write { "edits to" } else { "reading" };
    let Some(dir) = common_dir(paths) else {
        return tool_scope(tool);
    };
    match roots.iter().find_map(|r| dir.strip_prefix(r).ok()) {
        Some(rel) if rel.as_os_str().is_empty() => Scope {
            rule: format!("{rule_tool}(**)"),
            covers: format!("{doing} this workspace's files"),
            allow_offered: true,
        },
        Some(rel) => Scope {
            rule: format!(
                "{rule_tool}({}/**)",
                escape_glob(&rel.display().to_string())
            ),
            covers: format!("{doing} files under {}/ in this workspace", rel.display()),
            allow_offered: true,
        },
        None => {
            let shown = dir.display().to_string();
            let shown = shown.trim_end_matches('/');
            Scope {
                rule: format!("{rule_tool}({}/**)", escape_glob(shown)),
                covers: format!("{doing} files under {shown}/ from this workspace"),
                allow_offered: !write,
            }
        }
    }
}

fn tool_scope(tool: &str) -> Scope {
    let covers = match tool.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
        Some((server, name)) => {
            format!("the MCP tool {name} of server {server} in this workspace")
        }
        None => format!("the tool {tool} in this workspace"),
    };
    Scope {
        rule: tool.to_owned(),
        covers,
        allow_offered: true,
    }
}

/// The directory holding every path: a directory path itself, a file's parent.
fn common_dir(paths: &[PathBuf]) -> Option<PathBuf> {
    let dir_of = |p: &Path| -> PathBuf {
        if p.is_dir() {
            p.to_owned()
        } else {
            p.parent().unwrap_or(p).to_owned()
        }
    };
    let mut iter = paths.iter();
    let mut common = dir_of(iter.next()?);
    for p in iter {
        let d = dir_of(p);
        while !d.starts_with(&common) {
            common = common.parent()?.to_owned();
        }
    }
    Some(common)
}

/// A path as a glob that matches only itself.
fn escape_glob(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '(' | ')') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(c: &str) -> Access {
        Access::Execute { command: c.into() }
    }

    fn write(p: &[&str]) -> Access {
        Access::Write {
            paths: p.iter().map(PathBuf::from).collect(),
        }
    }

    fn read(p: &[&str]) -> Access {
        Access::Read {
            paths: p.iter().map(PathBuf::from).collect(),
        }
    }

    /// Every option, as `id: name`.
    fn labels(tool: &str, access: &Access) -> Vec<String> {
        options_for(tool, access, &[PathBuf::from("/ws")], Shell::Bash)
            .into_iter()
            .map(|o| {
                assert_eq!(o.id, o.kind.id());
                format!("{}: {}", o.id, o.name)
            })
            .collect()
    }

    fn rule(tool: &str, access: &Access, kind: OptionKind) -> Option<String> {
        always_rule(tool, access, &[PathBuf::from("/ws")], Shell::Bash, kind)
    }

    #[test]
    fn command_labels_name_the_prefix_they_store() {
        assert_eq!(
            labels("bash", &exec("cargo test --all && echo done")),
            [
                "allow_once: Allow once",
                "allow_always: Always allow \"cargo test …\" commands in this workspace",
                "reject_once: Reject",
                "reject_always: Never allow \"cargo test …\" commands in this workspace",
            ]
        );
        assert_eq!(
            rule("bash", &exec("cargo test --all"), OptionKind::AllowAlways).as_deref(),
            Some("bash(cargo test:*)")
        );
        assert_eq!(
            labels("bash", &exec("ls -la"))[1],
            "allow_always: Always allow \"ls …\" commands in this workspace"
        );
        assert_eq!(
            rule("bash", &exec("ls -la"), OptionKind::RejectAlways).as_deref(),
            Some("bash(ls:*)")
        );
        assert_eq!(
            rule("bash", &exec("git --no-pager log"), OptionKind::AllowAlways).as_deref(),
            Some("bash(git:*)")
        );
        // `sh -c 'cargo test'`: the rule is for what the shell runs.
        assert_eq!(
            rule("bash", &exec("sh -c 'cargo test'"), OptionKind::AllowAlways).as_deref(),
            Some("bash(cargo test:*)")
        );
    }

    #[test]
    fn commands_not_fully_understood_get_no_always_options() {
        for c in [
            "git status $(touch M)",
            "git status > M",
            "FOO=1 make",
            "(make)",
            "echo 'unterminated",
            "$X status",
        ] {
            assert_eq!(
                labels("bash", &exec(c)),
                ["allow_once: Allow once", "reject_once: Reject"],
                "{c}"
            );
            assert_eq!(rule("bash", &exec(c), OptionKind::AllowAlways), None, "{c}");
            assert_eq!(
                rule("bash", &exec(c), OptionKind::RejectAlways),
                None,
                "{c}"
            );
        }
    }

    #[test]
    fn wrappers_get_no_always_allow() {
        assert_eq!(
            labels("bash", &exec("sudo make install")),
            [
                "allow_once: Allow once",
                "reject_once: Reject",
                "reject_always: Never allow \"sudo …\" commands in this workspace",
            ]
        );
        assert_eq!(
            rule("bash", &exec("xargs rm"), OptionKind::AllowAlways),
            None
        );
        assert_eq!(
            rule("bash", &exec("xargs rm"), OptionKind::RejectAlways).as_deref(),
            Some("bash(xargs:*)")
        );
    }

    #[test]
    fn edit_labels_say_which_files() {
        assert_eq!(
            labels("edit", &write(&["/ws/src/a/b.rs"])),
            [
                "allow_once: Allow once",
                "allow_always: Always allow edits to files under src/a/ in this workspace",
                "reject_once: Reject",
                "reject_always: Never allow edits to files under src/a/ in this workspace",
            ]
        );
        assert_eq!(
            rule("edit", &write(&["/ws/src/a/b.rs"]), OptionKind::AllowAlways).as_deref(),
            Some("edit(src/a/**)")
        );
        assert_eq!(
            labels("write", &write(&["/ws/main.rs"]))[1],
            "allow_always: Always allow edits to this workspace's files"
        );
        assert_eq!(
            labels("write", &write(&["/ws/main.rs"]))[3],
            "reject_always: Never allow edits to this workspace's files"
        );
        assert_eq!(
            rule("write", &write(&["/ws/main.rs"]), OptionKind::AllowAlways).as_deref(),
            Some("edit(**)")
        );
        assert_eq!(
            rule(
                "edit",
                &write(&["/ws/src/x.rs", "/ws/tests/y.rs"]),
                OptionKind::AllowAlways
            )
            .as_deref(),
            Some("edit(**)"),
            "the directory holding every path"
        );
        assert_eq!(
            rule("edit", &write(&["/ws/a[1]/x.rs"]), OptionKind::AllowAlways).as_deref(),
            Some("edit(a\\[1\\]/**)"),
            "glob characters in names are escaped"
        );
    }

    #[test]
    fn writes_outside_the_workspace_offer_only_never() {
        assert_eq!(
            labels("write", &write(&["/etc/hosts"])),
            [
                "allow_once: Allow once",
                "reject_once: Reject",
                "reject_always: Never allow edits to files under /etc/ from this workspace",
            ]
        );
        assert_eq!(
            rule("write", &write(&["/etc/hosts"]), OptionKind::RejectAlways).as_deref(),
            Some("edit(/etc/**)")
        );
    }

    #[test]
    fn read_labels_say_which_files() {
        assert_eq!(
            labels("read", &read(&["/etc/hosts"])),
            [
                "allow_once: Allow once",
                "allow_always: Always allow reading files under /etc/ from this workspace",
                "reject_once: Reject",
                "reject_always: Never allow reading files under /etc/ from this workspace",
            ]
        );
        assert_eq!(
            rule("grep", &read(&["/etc/hosts"]), OptionKind::AllowAlways).as_deref(),
            Some("read(/etc/**)")
        );
        // The stored rule covers what the label says, the directory itself included.
        let stored = rule("ls", &read(&["/etc/hosts"]), OptionKind::AllowAlways).unwrap();
        let rules = super::super::Rules::from_strings(&[stored], &[]).unwrap();
        for path in ["/etc", "/etc/hosts", "/etc/ssl/certs/x.pem"] {
            assert!(
                rules.allowed(
                    "ls",
                    &read(&[path]),
                    None,
                    &[PathBuf::from("/ws")],
                    Shell::Bash
                ),
                "{path}"
            );
        }
        assert!(!rules.allowed(
            "ls",
            &read(&["/etcetera"]),
            None,
            &[PathBuf::from("/ws")],
            Shell::Bash
        ));
        assert_eq!(
            labels("read", &read(&["/ws/docs/a.md"]))[1],
            "allow_always: Always allow reading files under docs/ in this workspace"
        );
        assert_eq!(
            labels("ls", &read(&["/ws/a.md"]))[1],
            "allow_always: Always allow reading this workspace's files"
        );
    }

    #[test]
    fn tool_labels_name_the_tool() {
        assert_eq!(
            labels("mcp__github__create_issue", &Access::Mcp),
            [
                "allow_once: Allow once",
                "allow_always: Always allow the MCP tool create_issue of server github in this workspace",
                "reject_once: Reject",
                "reject_always: Never allow the MCP tool create_issue of server github in this workspace",
            ]
        );
        assert_eq!(
            rule(
                "mcp__github__create_issue",
                &Access::Mcp,
                OptionKind::AllowAlways
            )
            .as_deref(),
            Some("mcp__github__create_issue")
        );
        assert_eq!(
            labels("web_fetch", &Access::None)[1],
            "allow_always: Always allow the tool web_fetch in this workspace"
        );
        assert_eq!(
            rule("web_fetch", &Access::None, OptionKind::AllowOnce),
            None
        );
    }
}
