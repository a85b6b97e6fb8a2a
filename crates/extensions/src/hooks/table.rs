//! Where hooks come from and their shape: `[hooks]` of `config.toml` and the `hooks` key of
//! Claude Code's `settings.json`, the same table in both —
//!
//! ```json
//! { "hooks": { "PreToolUse": [ { "matcher": "Bash",
//!     "hooks": [ { "type": "command", "command": "~/bin/check.sh", "timeout": 30 } ] } ] } }
//! ```
//!
//! The user's: `FERRITE_HOME/config.toml`, `~/.claude/settings.json`. The project's (inert until
//! the folder is trusted): the workspace `.ferrite/config.toml`, and `.claude/settings.json` and
//! `.claude/settings.local.json` of every directory from the repository root down to the cwd.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::{Hook, HookEvent, Hooks, Origin};
use crate::own_files::{OwnFiles, Skip};

/// Claude Code's default, and the most a hook may ask for.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Hooks taken from one source, at most (a repository could list thousands).
const MAX_PER_SOURCE: usize = 64;
/// Directories from the repository root down whose `.claude/settings*.json` are read, at most
/// (a cwd deep in a tree must not multiply what every turn reads and compiles).
pub const MAX_DIRS: usize = 8;

/// Event name → groups of hooks sharing a matcher.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct HookTable(pub BTreeMap<String, Vec<Group>>);

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Group {
    #[serde(default)]
    pub matcher: Option<String>,
    #[serde(default)]
    pub hooks: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Entry {
    /// Only `command` hooks exist here (Claude Code's `prompt` hooks ask a model).
    #[serde(rename = "type", default = "command_type")]
    pub kind: String,
    #[serde(default)]
    pub command: Option<String>,
    /// Seconds.
    #[serde(default)]
    pub timeout: Option<f64>,
}

fn command_type() -> String {
    "command".into()
}

/// The hooks of `table`, configured in `file`; what cannot be used goes to `problems`.
pub fn compile(
    table: &HookTable,
    origin: Origin,
    file: &Path,
    problems: &mut Vec<String>,
) -> Vec<Hook> {
    let mut out = Vec::new();
    let shown = file.display();
    for (name, groups) in &table.0 {
        let Some(event) = HookEvent::parse(name) else {
            problems.push(format!(
                "{shown}: hooks for `{name}` are not run by Ferrite"
            ));
            continue;
        };
        for group in groups {
            let matcher_text = group.matcher.as_deref().unwrap_or("").trim();
            let matcher_text = if matcher_text == "*" {
                ""
            } else {
                matcher_text
            };
            for entry in &group.hooks {
                let command = match (entry.kind.as_str(), entry.command.as_deref()) {
                    ("command", Some(c)) if !c.trim().is_empty() => c.to_owned(),
                    ("command", _) => {
                        problems.push(format!("{shown}: a {name} hook has no `command`"));
                        continue;
                    }
                    (other, _) => {
                        problems.push(format!(
                            "{shown}: {name} hooks of type `{other}` are not run by Ferrite"
                        ));
                        continue;
                    }
                };
                if out.len() >= MAX_PER_SOURCE {
                    problems.push(format!(
                        "{shown}: more than {MAX_PER_SOURCE} hooks; the rest are not run"
                    ));
                    return out;
                }
                let timeout = entry
                    .timeout
                    .filter(|t| t.is_finite() && *t > 0.0)
                    .map_or(DEFAULT_TIMEOUT, |t| {
                        Duration::from_secs_f64(t.min(MAX_TIMEOUT.as_secs_f64()))
                    });
                out.push(Hook {
                    event,
                    matcher_text: matcher_text.to_owned(),
                    matcher: None,
                    command,
                    runs: vec![],
                    timeout,
                    origin,
                    file: file.to_owned(),
                });
            }
        }
    }
    out
}

/// The hooks of a Claude Code `settings.json`: its `hooks` key (nothing else in it is read:
/// its permission rules are Claude Code's, not Ferrite's). `disableAllHooks: true` turns the
/// file's hooks off, as in Claude Code.
fn from_settings(
    own: &OwnFiles,
    file: &Path,
    area: &Path,
    origin: Origin,
    problems: &mut Vec<String>,
) -> Vec<Hook> {
    let text = match own.read(file, area, crate::own_files::MAX_BYTES) {
        Ok(t) if !t.cut => t.text,
        Ok(_) => {
            problems.push(format!("{}: over 64 KiB, not read", file.display()));
            return vec![];
        }
        Err(Skip::Missing) => return vec![],
        Err(Skip::Refused(why)) => {
            problems.push(why);
            return vec![];
        }
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            problems.push(format!(
                "{}: not JSON ({e}); its hooks are not run",
                file.display()
            ));
            return vec![];
        }
    };
    if value.get("disableAllHooks") == Some(&serde_json::Value::Bool(true)) {
        return vec![];
    }
    let Some(hooks) = value.get("hooks") else {
        return vec![];
    };
    match HookTable::deserialize(hooks) {
        Ok(table) => compile(&table, origin, file, problems),
        Err(e) => {
            problems.push(format!(
                "{}: `hooks` is not a hook table ({e})",
                file.display()
            ));
            vec![]
        }
    }
}

/// Every hook of a workspace, the user's first: a project's hook is active only when the user
/// trusted it as it is (`approved`).
/// `config_tables` are the `[hooks]` tables of the config files, with their file and origin.
pub fn load(
    config_tables: &[(Origin, PathBuf, HookTable)],
    own: &OwnFiles,
    cwd: &Path,
    approved: &crate::trust::Approved,
) -> Hooks {
    let mut problems = Vec::new();
    let mut all = Vec::new();
    for (origin, file, table) in config_tables.iter().filter(|t| t.0 == Origin::User) {
        all.extend(compile(table, *origin, file, &mut problems));
    }
    if let Some(home) = own.user_home() {
        let dir = home.join(".claude");
        all.extend(from_settings(
            own,
            &dir.join("settings.json"),
            &dir,
            Origin::User,
            &mut problems,
        ));
    }
    for (origin, file, table) in config_tables.iter().filter(|t| t.0 == Origin::Project) {
        all.extend(compile(table, *origin, file, &mut problems));
    }
    let chain = crate::paths::chain(cwd);
    let root = chain.first().cloned().unwrap_or_else(|| cwd.to_owned());
    for dir in chain.iter().take(MAX_DIRS) {
        for name in ["settings.json", "settings.local.json"] {
            let file = dir.join(".claude").join(name);
            all.extend(from_settings(
                own,
                &file,
                &root,
                Origin::Project,
                &mut problems,
            ));
        }
    }
    let project = crate::trust::workspace_of(cwd);
    for hook in all.iter_mut().filter(|h| h.origin == Origin::Project) {
        hook.runs = super::files::files_run(&hook.command, &project, cwd);
    }
    let (active, inert): (Vec<Hook>, Vec<Hook>) = all.into_iter().partition(|h: &Hook| {
        h.origin == Origin::User
            || (h.unverifiable().is_none() && approved.covers(&h.fingerprint()))
    });
    for hook in inert.iter() {
        if let Some(why) = hook.unverifiable() {
            problems.push(format!(
                "{}: the {} hook `{}` runs a file that cannot be checked ({why}); it stays off",
                hook.file.display(),
                hook.event.name(),
                crate::display::visible(&hook.command)
            ));
        }
    }
    Hooks {
        active: with_matchers(active, &mut problems),
        inert,
        problems,
        session: Default::default(),
    }
}

/// The hooks that run, their matchers compiled (from the process's cache); a hook whose matcher
/// is not a usable regular expression does not run.
fn with_matchers(hooks: Vec<Hook>, problems: &mut Vec<String>) -> Vec<Hook> {
    hooks
        .into_iter()
        .filter_map(
            |mut hook| match super::matchers::compiled(&hook.matcher_text) {
                Ok(re) => {
                    hook.matcher = re;
                    Some(hook)
                }
                Err(e) => {
                    problems.push(format!(
                        "{}: {}: {e}; the hook is not run",
                        hook.file.display(),
                        hook.event.name()
                    ));
                    None
                }
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claude_code_table_reads_the_same_from_json_and_toml() {
        let json: HookTable = serde_json::from_str(
            r#"{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"a.sh","timeout":5}]}],
                "Notification":[{"hooks":[{"type":"command","command":"n.sh"}]}],
                "Stop":[{"hooks":[{"type":"prompt","prompt":"x"},{"command":"s.sh"}]}]}"#,
        )
        .unwrap();
        let toml: HookTable = toml::from_str(
            "[[PreToolUse]]\nmatcher = \"Bash\"\nhooks = [{ type = \"command\", command = \"a.sh\", timeout = 5 }]\n\
             [[Notification]]\nhooks = [{ command = \"n.sh\" }]\n\
             [[Stop]]\nhooks = [{ type = \"prompt\" }, { command = \"s.sh\" }]\n",
        )
        .unwrap();
        let mut problems = vec![];
        let hooks = compile(&json, Origin::User, Path::new("/s.json"), &mut problems);
        let from_toml = compile(&toml, Origin::User, Path::new("/s.json"), &mut vec![]);
        assert_eq!(hooks.len(), 2);
        assert_eq!(from_toml.len(), 2);
        assert_eq!(hooks[0].event, HookEvent::PreToolUse);
        assert_eq!(hooks[0].timeout, Duration::from_secs(5));
        assert_eq!(
            (hooks[1].event, hooks[1].command.as_str()),
            (HookEvent::Stop, "s.sh")
        );
        assert_eq!(hooks[1].timeout, DEFAULT_TIMEOUT);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    #[test]
    fn a_bad_matcher_or_a_huge_timeout_cannot_run_away() {
        let table: HookTable = serde_json::from_str(
            r#"{"PreToolUse":[{"matcher":"(","hooks":[{"command":"a"}]},
                {"matcher":"*","hooks":[{"command":"b","timeout":1e12}]}]}"#,
        )
        .unwrap();
        let mut problems = vec![];
        let hooks = compile(&table, Origin::User, Path::new("/p"), &mut problems);
        assert_eq!(hooks.len(), 2);
        assert_eq!(hooks[1].timeout, MAX_TIMEOUT);
        let hooks = with_matchers(hooks, &mut problems);
        assert_eq!(hooks.len(), 1);
        assert!(hooks[0].matcher.is_none());
        assert!(problems[0].contains("not a regular expression"));
    }

    #[test]
    fn untrusted_matchers_are_not_compiled_and_a_deep_chain_is_cut() {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let mut deep = root.clone();
        let mut texts = vec![];
        for level in 0..12 {
            let text = format!("(?i)(?:\\p{{L}}|\\p{{N}}){{1,500}}untrusted{level}");
            std::fs::create_dir_all(deep.join(".claude")).unwrap();
            std::fs::write(
                deep.join(".claude/settings.json"),
                serde_json::json!({"hooks": {"PreToolUse": [
                    {"matcher": text, "hooks": [{"command": "true"}]}
                ]}})
                .to_string(),
            )
            .unwrap();
            texts.push(text);
            deep = deep.join(format!("d{level}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        let own = OwnFiles::new(
            home.path(),
            std::slice::from_ref(&root),
            Ok(Default::default()),
        );
        let hooks = load(&[], &own, &deep, &crate::trust::Approved::default());
        assert!(hooks.active.is_empty());
        assert_eq!(hooks.inert.len(), MAX_DIRS, "{:?}", hooks.problems);
        for (hook, text) in hooks.inert.iter().zip(&texts) {
            assert_eq!(&hook.matcher_text, text);
            assert!(hook.matcher.is_none());
            assert!(!super::super::matchers::was_compiled(text));
        }
    }
}
