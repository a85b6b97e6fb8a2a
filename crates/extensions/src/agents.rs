//! Custom agents, in Claude Code's files: a Markdown file with front matter `name`,
//! `description`, `tools` and `model`, whose body is the agent's system prompt. Each becomes a
//! subagent type the model can hand a `task` to (`subagent_type`).
//!
//! Found in `FERRITE_HOME/agents/*.md` and `~/.claude/agents/*.md` (the user's), then in
//! `.ferrite/agents/*.md` and `.claude/agents/*.md` of every directory from the repository root
//! down to the cwd (the project's; a later file wins a name). A project's agents are used only in
//! a trusted workspace (`crate::trust`): an agent's prompt steers a subagent that runs commands.
//! Files are read like skills (`crate::own_files`): bounded, never through a link out of their
//! area, under the read deny rules.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::hooks::Origin;
use crate::own_files::{OwnFiles, Skip};

/// Agent files looked at, at most.
const MAX_AGENTS: usize = 100;
/// What the `task` tool's description spends on one agent's description: 160 characters keep
/// a listed agent within about 60 tokens of every request (bench/tokens.py).
pub const MAX_DESCRIPTION_CHARS: usize = 160;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    pub name: String,
    pub description: String,
    /// `tools`: Ferrite's names of the tools it may use (Claude Code's names are translated);
    /// `None` is every tool the parent turn has.
    pub tools: Option<Vec<String>>,
    /// `model`: a Ferrite model id; `None` (also `inherit`, `sonnet`, `opus`, `haiku`) is the
    /// subagent model.
    pub model: Option<String>,
    /// The body: the agent's system prompt.
    pub prompt: String,
    pub origin: Origin,
    pub file: PathBuf,
}

/// The agents of a workspace: those in use, and a repository's that wait for trust.
#[derive(Debug, Clone, Default)]
pub struct Agents {
    pub active: Vec<AgentDef>,
    pub inert: Vec<AgentDef>,
}

impl AgentDef {
    /// What trust covers of it (`crate::trust`): everything that steers its subagent.
    pub fn fingerprint(&self) -> String {
        let tools = self.tools.as_ref().map(|t| t.join(","));
        crate::trust::fingerprint(&[
            &self.name,
            &self.description,
            tools.as_deref().unwrap_or("*"),
            self.model.as_deref().unwrap_or(""),
            &self.prompt,
            &self.file.to_string_lossy(),
        ])
    }
}

impl Agents {
    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.active.iter().find(|a| a.name == name)
    }
}

/// Ferrite's name of a tool named the way Claude Code names it (`Read` → `read`).
fn ferrite_tool(name: &str) -> String {
    let lower = name.trim();
    for ours in [
        "bash",
        "read",
        "write",
        "edit",
        "grep",
        "find",
        "ls",
        "web_fetch",
        "web_search",
        "update_plan",
        "bash_output",
        "bash_kill",
        "skill",
    ] {
        if crate::hooks::claude_tool_name(ours) == Some(lower) {
            return ours.to_owned();
        }
    }
    match lower {
        "MultiEdit" => "edit".into(),
        other => other.to_owned(),
    }
}

/// The folders agent files are found in, the user's first, each with its area and origin.
fn agent_dirs(own: &OwnFiles, cwd: &Path) -> Vec<(PathBuf, PathBuf, Origin)> {
    let mut out = Vec::new();
    let personal = own.home().join("agents");
    out.push((personal.clone(), personal, Origin::User));
    if let Some(home) = own.user_home() {
        let d = home.join(".claude/agents");
        out.push((d.clone(), d, Origin::User));
    }
    let chain = crate::paths::chain(cwd);
    let root = chain.first().cloned().unwrap_or_else(|| cwd.to_owned());
    for dir in &chain {
        for sub in [".ferrite/agents", ".claude/agents"] {
            out.push((dir.join(sub), root.clone(), Origin::Project));
        }
    }
    out
}

fn parse(file: &Path, text: &str, origin: Origin) -> Option<AgentDef> {
    let (fields, body) = crate::front_matter::parse(text);
    let field = |k: &str| {
        fields
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let name =
        field("name").or_else(|| file.file_stem().and_then(|n| n.to_str()).map(str::to_owned))?;
    if !crate::front_matter::valid_name(&name) || body.trim().is_empty() {
        return None;
    }
    let description: String = field("description")
        .unwrap_or_else(|| format!("The {name} agent"))
        .chars()
        .take(MAX_DESCRIPTION_CHARS)
        .collect();
    let tools = field("tools").map(|v| {
        v.trim_matches(['[', ']'])
            .split([',', ' '])
            .map(|t| t.trim().trim_matches(['"', '\'', '-']).trim())
            .filter(|t| !t.is_empty())
            .map(ferrite_tool)
            .collect()
    });
    let model = field("model").filter(|m| {
        !matches!(m.as_str(), "inherit" | "sonnet" | "opus" | "haiku") && m.contains('/')
    });
    Some(AgentDef {
        name,
        description,
        tools,
        model,
        prompt: body.trim().to_owned(),
        origin,
        file: file.to_owned(),
    })
}

/// The agents of the workspace of `cwd`; a project's agent is in use only when the user trusted
/// it as it is (`approved`).
pub fn discover(own: &OwnFiles, cwd: &Path, approved: &crate::trust::Approved) -> Agents {
    let mut by_name: BTreeMap<String, AgentDef> = BTreeMap::new();
    let mut seen = 0;
    for (dir, area, origin) in agent_dirs(own, cwd) {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        for file in files {
            seen += 1;
            if seen > MAX_AGENTS {
                break;
            }
            let text = match own.read(&file, &area, crate::own_files::MAX_BYTES) {
                Ok(t) if !t.cut => t.text,
                Ok(_) | Err(Skip::Missing) => continue,
                Err(Skip::Refused(why)) => {
                    tracing::warn!("agent skipped: {why}");
                    continue;
                }
            };
            if let Some(agent) = parse(&file, &text, origin) {
                by_name.insert(agent.name.clone(), agent);
            }
        }
    }
    let (active, inert) = by_name
        .into_values()
        .partition(|a: &AgentDef| a.origin == Origin::User || approved.covers(&a.fingerprint()));
    Agents { active, inert }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_agent_files_read_as_they_are_written() {
        let text = "---\nname: code-reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep, Glob, Bash\nmodel: sonnet\n---\nYou are a careful reviewer.\n";
        let a = parse(Path::new("/a/code-reviewer.md"), text, Origin::User).unwrap();
        assert_eq!(a.name, "code-reviewer");
        assert_eq!(
            a.tools.as_deref().unwrap(),
            ["read", "grep", "find", "bash"]
        );
        assert_eq!(
            a.model, None,
            "Claude Code's aliases mean the subagent model"
        );
        assert_eq!(a.prompt, "You are a careful reviewer.");
        let listed =
            "---\ndescription: d\ntools:\n  - Read\n  - Edit\nmodel: openai/gpt-5\n---\nBody\n";
        let b = parse(Path::new("/a/fixer.md"), listed, Origin::Project).unwrap();
        assert_eq!(b.name, "fixer");
        assert_eq!(b.tools.as_deref().unwrap(), ["read", "edit"]);
        assert_eq!(b.model.as_deref(), Some("openai/gpt-5"));
        assert!(
            parse(
                Path::new("/a/empty.md"),
                "---\nname: e\n---\n",
                Origin::User
            )
            .is_none()
        );
        assert!(
            parse(
                Path::new("/a/x.md"),
                "---\nname: bad name!\n---\nB\n",
                Origin::User
            )
            .is_none()
        );
    }
}
