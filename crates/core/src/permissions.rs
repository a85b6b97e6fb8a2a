//! The permission policy (contract §5): modes, harness ceilings, `allow`/`deny` rules, and the
//! "always" answers stored under `FERRITE_HOME/permissions/`. Pure decisions; asking the user is
//! the [`Approver`]'s job.
//!
//! Rules are `tool(specifier)` or a bare `tool`:
//! - `bash(prefix:*)` matches a command whose leading words are `prefix`; `bash(cmd)` matches the
//!   command exactly. Each command of a `&&` / `||` / `;` / `|` chain is checked on its own: a
//!   chain is allowed only if every part is, and denied if any part is.
//! - file tools take a glob, relative to the workspace roots or absolute (`**` crosses
//!   directories, `*` does not). `read(...)` rules also cover `grep`, `find` and `ls`;
//!   `edit(...)` rules also cover `write`.
//! - `mcp__server__tool` or `mcp__server__*` for MCP tools.
//!
//! Deny always wins, in every mode.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};

use crate::content::ToolCallView;
use crate::ids::SessionId;
use crate::modes::{Harness, Mode};
use crate::tools::Access;

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
    CommandPrefix(Vec<String>),
    CommandExact(String),
    Glob(GlobMatcher),
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
                    .ok_or_else(|| err("missing `)`"))?;
                (&t[..i], Some(inner))
            }
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*')
        {
            return Err(err(
                "the tool name must be a word like `bash`, `read` or `mcp__server__tool`",
            ));
        }
        let spec = match spec {
            None | Some("") | Some("*") | Some("**") => Spec::Any,
            Some(s) if tool == "web_fetch" => match s.strip_prefix("domain:") {
                Some(d) if is_domain_pattern(d) => Spec::Domain(d.to_ascii_lowercase()),
                _ => {
                    return Err(err(
                        "web_fetch rules name a domain: `web_fetch(domain:docs.rs)` or \
                         `web_fetch(domain:*.python.org)`",
                    ));
                }
            },
            Some(s) if tool == "bash" => match s.strip_suffix(":*") {
                Some(prefix) => Spec::CommandPrefix(words(prefix)),
                None => Spec::CommandExact(normalize_command(s)),
            },
            Some(s) => Spec::Glob(
                GlobBuilder::new(s)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| err(&e.to_string()))?
                    .compile_matcher(),
            ),
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

    fn matches_command(&self, command: &str) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::CommandPrefix(prefix) => {
                let w = words(command);
                w.len() >= prefix.len() && w[..prefix.len()] == prefix[..]
            }
            Spec::CommandExact(c) => normalize_command(command) == *c,
            Spec::Glob(_) | Spec::Domain(_) => false,
        }
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
            Spec::CommandPrefix(_) | Spec::CommandExact(_) | Spec::Domain(_) => false,
        }
    }

    /// Whether the rule matches a call of `tool` doing `access`. `all_parts`: for command chains,
    /// whether every part must match (allow) or any part suffices (deny).
    fn matches(&self, tool: &str, access: &Access, roots: &[PathBuf], all_parts: bool) -> bool {
        if !self.covers_tool(tool) {
            return false;
        }
        match access {
            Access::Execute { command } => {
                let parts = split_chain(command);
                if parts.is_empty() {
                    return matches!(self.spec, Spec::Any);
                }
                if all_parts {
                    parts.iter().all(|p| self.matches_command(p))
                } else {
                    parts.iter().any(|p| self.matches_command(p))
                }
            }
            Access::Read { paths } | Access::Write { paths } => {
                if paths.is_empty() {
                    return matches!(self.spec, Spec::Any);
                }
                if all_parts {
                    paths.iter().all(|p| self.matches_path(p, roots))
                } else {
                    paths.iter().any(|p| self.matches_path(p, roots))
                }
            }
            Access::Fetch { host, .. } => match &self.spec {
                Spec::Any => true,
                Spec::Domain(d) => domain_matches(d, host),
                Spec::CommandPrefix(_) | Spec::CommandExact(_) | Spec::Glob(_) => false,
            },
            Access::Mcp | Access::None => matches!(self.spec, Spec::Any),
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

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

fn normalize_command(s: &str) -> String {
    words(s).join(" ")
}

/// Splits a shell command line at `&&`, `||`, `;`, `|` and newlines outside quotes. Good enough
/// to check each command of a chain; anything cleverer (subshells, `$(...)`) is treated as part
/// of the command it appears in, which can only make an allow rule match less.
pub fn split_chain(command: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                cur.push(c);
                if c == q {
                    quote = None;
                } else if c == '\\'
                    && q == '"'
                    && let Some(n) = chars.next()
                {
                    cur.push(n);
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    cur.push(c);
                }
                '\\' => {
                    cur.push(c);
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                }
                ';' | '\n' => parts.push(std::mem::take(&mut cur)),
                '&' if chars.peek() == Some(&'&') => {
                    chars.next();
                    parts.push(std::mem::take(&mut cur));
                }
                '|' => {
                    if chars.peek() == Some(&'|') {
                        chars.next();
                    }
                    parts.push(std::mem::take(&mut cur));
                }
                _ => cur.push(c),
            },
        }
    }
    parts.push(cur);
    parts
        .into_iter()
        .map(|p| normalize_command(&p))
        .filter(|p| !p.is_empty())
        .collect()
}

/// The rules in force for one workspace: config plus stored "always" answers.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
}

impl Rules {
    /// Parses rule strings; invalid ones are reported and skipped.
    pub fn from_strings(allow: &[String], deny: &[String]) -> (Rules, Vec<RuleError>) {
        let mut errors = Vec::new();
        let mut parse = |list: &[String]| -> Vec<Rule> {
            list.iter()
                .filter_map(|r| Rule::parse(r).map_err(|e| errors.push(e)).ok())
                .collect()
        };
        let rules = Rules {
            allow: parse(allow),
            deny: parse(deny),
        };
        (rules, errors)
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
    } = *call;
    if let Some(rule) = rules
        .deny
        .iter()
        .find(|r| r.matches(tool, access, roots, false))
    {
        return Decision::Deny(format!("denied by the rule `{}`", rule.text));
    }
    let allowed_by_rule = || {
        rules
            .allow
            .iter()
            .any(|r| r.matches(tool, access, roots, true))
    };
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

/// A question for the user about one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    pub call: ToolCallView,
    pub options: Vec<PermissionOption>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    Selected(String),
    /// The client cancelled, the turn was cancelled, or nobody answered in time.
    Cancelled,
}

/// Asks the user (the ACP client's `session/request_permission`).
pub trait Approver: Send + Sync {
    fn request(
        &self,
        session: &SessionId,
        req: PermissionRequest,
    ) -> BoxFuture<'_, PermissionAnswer>;
}

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

/// The rule an "always" answer stores, and how the option names it.
pub fn always_rule(tool: &str, access: &Access, roots: &[PathBuf]) -> (String, String) {
    match access {
        Access::Execute { command } => {
            let first = split_chain(command).into_iter().next().unwrap_or_default();
            let w = words(&first);
            // `cargo test`, `git status`: programs with sub-commands keep one; `ls -la`,
            // `echo hi`: just the program.
            let has_sub = w
                .first()
                .is_some_and(|p| SUBCOMMAND_PROGRAMS.contains(&p.as_str()))
                && w.get(1)
                    .is_some_and(|s| s.chars().next().is_some_and(|c| c.is_ascii_alphabetic()));
            let take = if has_sub { 2 } else { 1 };
            let prefix = w.iter().take(take).cloned().collect::<Vec<_>>().join(" ");
            (format!("bash({prefix}:*)"), format!("`{prefix}`"))
        }
        Access::Read { paths } | Access::Write { paths } => {
            let Some(p) = paths.first() else {
                return (tool.to_owned(), format!("`{tool}`"));
            };
            let dir = p.parent().unwrap_or(p);
            let shown = roots
                .iter()
                .find_map(|r| dir.strip_prefix(r).ok())
                .map(|rel| {
                    if rel.as_os_str().is_empty() {
                        String::new()
                    } else {
                        format!("{}/", rel.display())
                    }
                });
            let rule_tool = if matches!(access, Access::Write { .. }) {
                "edit"
            } else {
                "read"
            };
            match shown {
                Some(rel) => (
                    format!("{rule_tool}({rel}**)"),
                    if rel.is_empty() {
                        "this project's files".into()
                    } else {
                        format!("`{rel}`")
                    },
                ),
                None => (
                    format!("{rule_tool}({}/**)", dir.display()),
                    format!("`{}/`", dir.display()),
                ),
            }
        }
        Access::Fetch { host, .. } => (format!("web_fetch(domain:{host})"), format!("`{host}`")),
        Access::Mcp | Access::None => (tool.to_owned(), format!("`{tool}`")),
    }
}

/// The options of a request for `tool`, with names that say what "always" covers.
pub fn options_for(tool: &str, access: &Access, roots: &[PathBuf]) -> Vec<PermissionOption> {
    let (_, covers) = always_rule(tool, access, roots);
    let (allow_always, reject_always) = match access {
        Access::Execute { .. } => (
            format!("Always allow {covers} in this project"),
            format!("Never allow {covers} in this project"),
        ),
        Access::Write { .. } => (
            format!("Always allow edits in {covers} in this project"),
            format!("Never allow edits in {covers} in this project"),
        ),
        Access::Read { .. } => (
            format!("Always allow reading {covers} in this project"),
            format!("Never allow reading {covers} in this project"),
        ),
        Access::Fetch { .. } => (
            format!("Always allow fetching pages from {covers} in this workspace"),
            format!("Never allow fetching pages from {covers} in this workspace"),
        ),
        Access::Mcp | Access::None => (
            format!("Always allow {covers} in this project"),
            format!("Never allow {covers} in this project"),
        ),
    };
    vec![
        PermissionOption {
            id: "allow_once".into(),
            name: "Allow once".into(),
            kind: OptionKind::AllowOnce,
        },
        PermissionOption {
            id: "allow_always".into(),
            name: allow_always,
            kind: OptionKind::AllowAlways,
        },
        PermissionOption {
            id: "reject_once".into(),
            name: "Reject".into(),
            kind: OptionKind::RejectOnce,
        },
        PermissionOption {
            id: "reject_always".into(),
            name: reject_always,
            kind: OptionKind::RejectAlways,
        },
    ]
}

/// Stored "always" answers for one workspace: `FERRITE_HOME/permissions/<key>.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRules {
    pub workspace: PathBuf,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

fn store_path(home: &Path, workspace: &Path) -> PathBuf {
    // FNV-1a: a stable file name for the workspace path (the file also records the path).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in workspace.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let name = workspace
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("root");
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    home.join("permissions")
        .join(format!("{safe}-{h:016x}.json"))
}

impl StoredRules {
    pub fn load(home: &Path, workspace: &Path) -> StoredRules {
        let path = store_path(home, workspace);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "ignoring unreadable permission rules");
                StoredRules { workspace: workspace.to_owned(), ..Default::default() }
            }),
            Err(_) => StoredRules { workspace: workspace.to_owned(), ..Default::default() },
        }
    }

    /// Adds a rule and saves atomically.
    pub fn add(home: &Path, workspace: &Path, rule: String, allow: bool) -> std::io::Result<()> {
        let mut stored = Self::load(home, workspace);
        let list = if allow {
            &mut stored.allow
        } else {
            &mut stored.deny
        };
        if !list.contains(&rule) {
            list.push(rule);
        }
        let path = store_path(home, workspace);
        if let Some(dir) = path.parent() {
            crate::private_fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
        std::io::Write::write_all(
            &mut crate::private_fs::file_options()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)?,
            &serde_json::to_vec_pretty(&stored).map_err(std::io::Error::other)?,
        )?;
        std::fs::rename(&tmp, &path)
    }
}

#[cfg(test)]
mod web_rules {
    use super::*;

    fn fetch(host: &str) -> Access {
        Access::Fetch {
            url: format!("https://{host}/"),
            host: host.to_owned(),
        }
    }

    fn decide_in(
        mode: Mode,
        harness: Harness,
        access: &Access,
        allow: &[&str],
        deny: &[&str],
    ) -> Decision {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let (rules, errors) = Rules::from_strings(&s(allow), &s(deny));
        assert!(errors.is_empty(), "{errors:?}");
        decide(
            &Call {
                tool: "web_fetch",
                access,
                mode,
                harness,
                force_ask: false,
                roots: &[],
            },
            &rules,
        )
    }

    #[test]
    fn domain_rules() {
        let allow = [
            "web_fetch(domain:docs.rs)",
            "web_fetch(domain:*.python.org)",
        ];
        for mode in [Mode::Plan, Mode::Ask, Mode::Auto] {
            assert_eq!(
                decide_in(mode, Harness::Code, &fetch("docs.rs"), &allow, &[]),
                Decision::Allow
            );
            assert_eq!(
                decide_in(mode, Harness::Code, &fetch("docs.python.org"), &allow, &[]),
                Decision::Allow
            );
            assert_eq!(
                decide_in(mode, Harness::Code, &fetch("python.org"), &allow, &[]),
                Decision::Ask
            );
            assert_eq!(
                decide_in(mode, Harness::Code, &fetch("evilpython.org"), &allow, &[]),
                Decision::Ask
            );
            assert_eq!(
                decide_in(
                    mode,
                    Harness::Code,
                    &fetch("docs.rs.evil.example"),
                    &allow,
                    &[]
                ),
                Decision::Ask
            );
        }
        assert_eq!(
            decide_in(Mode::Full, Harness::Code, &fetch("x.example"), &[], &[]),
            Decision::Allow
        );
        assert!(matches!(
            decide_in(
                Mode::Full,
                Harness::Code,
                &fetch("docs.rs"),
                &[],
                &["web_fetch(domain:docs.rs)"]
            ),
            Decision::Deny(_)
        ));
        assert!(matches!(
            decide_in(
                Mode::Auto,
                Harness::Unattended,
                &fetch("x.example"),
                &[],
                &[]
            ),
            Decision::Deny(_)
        ));
        assert!(Rule::parse("web_fetch(docs.rs)").is_err());
        assert!(Rule::parse("web_fetch(domain:)").is_err());
        assert_eq!(
            always_rule("web_fetch", &fetch("docs.rs"), &[]).0,
            "web_fetch(domain:docs.rs)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> Rules {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let (r, errs) = Rules::from_strings(&s(allow), &s(deny));
        assert!(errs.is_empty(), "{errs:?}");
        r
    }

    fn exec(c: &str) -> Access {
        Access::Execute { command: c.into() }
    }

    fn write(p: &str) -> Access {
        Access::Write {
            paths: vec![PathBuf::from(p)],
        }
    }

    fn read(p: &str) -> Access {
        Access::Read {
            paths: vec![PathBuf::from(p)],
        }
    }

    fn d(tool: &str, access: &Access, mode: Mode, rules: &Rules) -> Decision {
        let roots = vec![PathBuf::from("/ws")];
        decide(
            &Call {
                tool,
                access,
                mode,
                harness: Harness::Code,
                force_ask: false,
                roots: &roots,
            },
            rules,
        )
    }

    #[test]
    fn chains_split_outside_quotes() {
        assert_eq!(
            split_chain("cargo build && cargo test | tee x; echo 'a && b'"),
            vec!["cargo build", "cargo test", "tee x", "echo 'a && b'"]
        );
        assert_eq!(split_chain("a || b\nc"), vec!["a", "b", "c"]);
    }

    #[test]
    fn bash_prefix_and_exact_rules() {
        let r = rules(&["bash(cargo test:*)", "bash(git status)"], &["bash(rm:*)"]);
        assert_eq!(
            d("bash", &exec("cargo test --all"), Mode::Ask, &r),
            Decision::Allow
        );
        assert_eq!(
            d("bash", &exec("cargo testify"), Mode::Ask, &r),
            Decision::Ask
        );
        assert_eq!(
            d("bash", &exec("git  status"), Mode::Ask, &r),
            Decision::Allow
        );
        assert_eq!(
            d("bash", &exec("git status -s"), Mode::Ask, &r),
            Decision::Ask
        );
        assert_eq!(
            d("bash", &exec("cargo test && curl evil"), Mode::Ask, &r),
            Decision::Ask,
            "every part must be allowed"
        );
        assert!(
            matches!(
                d("bash", &exec("cargo test; rm -rf /"), Mode::Full, &r),
                Decision::Deny(_)
            ),
            "deny wins in full"
        );
        assert!(matches!(
            d("bash", &exec("echo hi | rm x"), Mode::Auto, &r),
            Decision::Deny(_)
        ));
    }

    #[test]
    fn file_rules_and_workspace_boundaries() {
        let r = rules(&["edit(src/**)"], &["read(**/.env)"]);
        assert_eq!(
            d("edit", &write("/ws/src/a/b.rs"), Mode::Ask, &r),
            Decision::Allow
        );
        assert_eq!(
            d("write", &write("/ws/src/new.rs"), Mode::Ask, &r),
            Decision::Allow,
            "edit rules cover write"
        );
        assert_eq!(
            d("edit", &write("/ws/README.md"), Mode::Ask, &r),
            Decision::Ask
        );
        assert!(matches!(
            d("read", &read("/ws/app/.env"), Mode::Full, &r),
            Decision::Deny(_)
        ));
        assert!(
            matches!(
                d("grep", &read("/ws/.env"), Mode::Auto, &r),
                Decision::Deny(_)
            ),
            "read rules cover grep"
        );
        assert_eq!(
            d("read", &read("/ws/src/main.rs"), Mode::Ask, &r),
            Decision::Allow
        );
        assert_eq!(d("read", &read("/etc/hosts"), Mode::Ask, &r), Decision::Ask);
        // Outside the workspace `auto` asks as `ask` does (secrets such as ~/.ssh live there).
        assert_eq!(
            d("read", &read("/etc/hosts"), Mode::Auto, &r),
            Decision::Ask
        );
        assert_eq!(
            d("edit", &write("/ws/src/x.rs"), Mode::Auto, &rules(&[], &[])),
            Decision::Allow
        );
        assert_eq!(
            d(
                "edit",
                &write("/tmp/x"),
                Mode::Auto,
                &rules(&["edit(/tmp/**)"], &[])
            ),
            Decision::Ask,
            "outside always asks"
        );
        assert_eq!(
            d("edit", &write("/tmp/x"), Mode::Full, &rules(&[], &[])),
            Decision::Allow
        );
    }

    #[test]
    fn modes() {
        let none = rules(&[], &[]);
        assert!(matches!(
            d("edit", &write("/ws/a"), Mode::Plan, &none),
            Decision::Deny(_)
        ));
        assert_eq!(d("bash", &exec("ls"), Mode::Plan, &none), Decision::Allow);
        assert_eq!(d("bash", &exec("make"), Mode::Ask, &none), Decision::Ask);
        assert_eq!(d("bash", &exec("make"), Mode::Auto, &none), Decision::Allow);
        assert_eq!(
            d("mcp__s__t", &Access::Mcp, Mode::Ask, &none),
            Decision::Ask
        );
        assert_eq!(
            d(
                "mcp__s__t",
                &Access::Mcp,
                Mode::Ask,
                &rules(&["mcp__s__*"], &[])
            ),
            Decision::Allow
        );
        assert!(matches!(
            d(
                "mcp__s__t",
                &Access::Mcp,
                Mode::Full,
                &rules(&[], &["mcp__s__t"])
            ),
            Decision::Deny(_)
        ));
        let roots = vec![PathBuf::from("/ws")];
        let forced = Call {
            tool: "bash",
            access: &exec("make"),
            mode: Mode::Auto,
            harness: Harness::Code,
            force_ask: true,
            roots: &roots,
        };
        assert_eq!(decide(&forced, &none), Decision::Ask);
        let unattended = Call {
            tool: "bash",
            access: &exec("make"),
            mode: Mode::Ask,
            harness: Harness::Unattended,
            force_ask: false,
            roots: &roots,
        };
        assert!(matches!(decide(&unattended, &none), Decision::Deny(_)));
    }

    #[test]
    fn always_rules_name_their_scope() {
        let roots = vec![PathBuf::from("/ws")];
        assert_eq!(
            always_rule("bash", &exec("cargo test --all && echo"), &roots).0,
            "bash(cargo test:*)"
        );
        assert_eq!(always_rule("bash", &exec("ls -la"), &roots).0, "bash(ls:*)");
        assert_eq!(
            always_rule("bash", &exec("echo first"), &roots).0,
            "bash(echo:*)"
        );
        assert_eq!(
            always_rule("edit", &write("/ws/src/main.rs"), &roots).0,
            "edit(src/**)"
        );
        assert_eq!(
            always_rule("edit", &write("/ws/main.rs"), &roots).0,
            "edit(**)"
        );
        assert_eq!(
            always_rule("read", &read("/etc/hosts"), &roots).0,
            "read(/etc/**)"
        );
        let opts = options_for("bash", &exec("cargo test"), &roots);
        assert_eq!(opts[1].name, "Always allow `cargo test` in this project");
        let kinds: Vec<&str> = opts.iter().map(|o| o.kind.id()).collect();
        assert_eq!(
            kinds,
            ["allow_once", "allow_always", "reject_once", "reject_always"]
        );
    }

    #[test]
    fn stored_rules_roundtrip_per_workspace() {
        let home = tempfile::tempdir().unwrap();
        StoredRules::add(home.path(), Path::new("/ws/a"), "bash(make:*)".into(), true).unwrap();
        StoredRules::add(home.path(), Path::new("/ws/a"), "bash(make:*)".into(), true).unwrap();
        StoredRules::add(home.path(), Path::new("/ws/a"), "edit(**)".into(), false).unwrap();
        let s = StoredRules::load(home.path(), Path::new("/ws/a"));
        assert_eq!(
            (s.allow, s.deny),
            (
                vec!["bash(make:*)".to_string()],
                vec!["edit(**)".to_string()]
            )
        );
        assert!(
            StoredRules::load(home.path(), Path::new("/ws/b"))
                .allow
                .is_empty()
        );
    }

    #[test]
    fn bad_rules_are_reported() {
        assert!(Rule::parse("bash(unclosed").is_err());
        assert!(Rule::parse("(x)").is_err());
        assert!(Rule::parse("edit([)").is_err());
    }
}
