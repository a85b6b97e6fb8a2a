//! Skills, in the files Claude Code and Codex users already have: a skill is a folder holding a
//! `SKILL.md` (front matter `name`, `description`, optional `allowed-tools`; the body is the
//! instructions) and any files it refers to.
//!
//! Found in `FERRITE_HOME/skills/`, `~/.agents/skills/` and `~/.claude/skills/` (personal), then
//! in `.ferrite/skills/`, `.agents/skills/` and `.claude/skills/` of every directory from the
//! repository root down to the cwd (the project's; a later one wins a name). The model sees each
//! skill's name and description in the system prompt ([`section`], capped) and loads a body, or
//! a file next to it, with the `skill` tool when a task calls for it; the editor lists skills as
//! commands, and `/name args` runs one as the prompt.
//!
//! Every file is read through [`OwnFiles`], like instructions and prompt files: a `SKILL.md`
//! must stay in its area (the repository for a project skill, the skills folder for a personal
//! one) and a file it refers to in the skill's own folder; none leads into FERRITE_HOME, all
//! pass the read deny rules, and they are bounded.
//! A skill's text is instructions, like `AGENTS.md`; `allowed-tools` only ever narrows the
//! tools of a turn it runs (`/name`), so a cloned repository's skill cannot widen anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::own_files::{OwnFiles, Skip};

/// Skills looked at, at most (the rest are not listed).
const MAX_SKILLS: usize = 200;
/// What the system prompt spends on skills, at most: each description is cut to
/// [`MAX_DESCRIPTION_CHARS`], and skills past [`MAX_SECTION_BYTES`] are named in one line.
pub const MAX_SECTION_BYTES: usize = 8 * 1024;
/// 160 characters keep a listed skill within about 60 tokens of every request (bench/tokens.py).
pub const MAX_DESCRIPTION_CHARS: usize = 160;
/// Files listed next to a skill's body, at most.
const MAX_LISTED_FILES: usize = 50;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's folder.
    pub dir: PathBuf,
    /// The instructions (`SKILL.md` after its front matter).
    pub body: String,
    /// `allowed-tools`: the tools a turn that runs the skill keeps (never more than it has).
    pub allowed_tools: Option<Vec<String>>,
    /// One of the user's own (FERRITE_HOME, `~/.agents`, `~/.claude`), not the project's.
    pub personal: bool,
}

/// The folders skills are found in, personal first, each with the area its files must stay in.
fn skill_dirs(own: &OwnFiles, cwd: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let personal = own.home().join("skills");
    out.push((personal.clone(), personal));
    if let Some(home) = own.user_home() {
        for d in [home.join(".agents/skills"), home.join(".claude/skills")] {
            out.push((d.clone(), d));
        }
    }
    let chain = crate::paths::chain(cwd);
    let root = chain.first().cloned().unwrap_or_else(|| cwd.to_owned());
    for dir in &chain {
        for sub in [".ferrite/skills", ".agents/skills", ".claude/skills"] {
            out.push((dir.join(sub), root.clone()));
        }
    }
    out
}

/// The candidate `SKILL.md` files, in order (not read).
fn candidates(own: &OwnFiles, cwd: &Path) -> Vec<(PathBuf, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for (dir, area) in skill_dirs(own, cwd) {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        folders.sort();
        for folder in folders {
            if out.len() >= MAX_SKILLS {
                return out;
            }
            let file = folder.join("SKILL.md");
            if std::fs::symlink_metadata(&file).is_ok() {
                out.push((folder, file, area.clone()));
            }
        }
    }
    out
}

/// The skills of a workspace, by name (a later folder wins a name).
pub fn discover(own: &OwnFiles, cwd: &Path) -> Vec<Skill> {
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    for (dir, file, area) in candidates(own, cwd) {
        let text = match own.read(&file, &area, crate::own_files::MAX_BYTES) {
            Ok(t) if !t.cut => t.text,
            Ok(_) => {
                tracing::warn!(path = %file.display(), "skill over 64 KiB not offered");
                continue;
            }
            Err(Skip::Missing) => continue,
            Err(Skip::Refused(why)) => {
                tracing::warn!("skill skipped: {why}");
                continue;
            }
        };
        let (fields, body) = crate::front_matter::parse(&text);
        let field = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        let name = field("name")
            .or_else(|| dir.file_name().and_then(|n| n.to_str()).map(str::to_owned))
            .unwrap_or_default();
        if !crate::front_matter::valid_name(&name) {
            tracing::warn!(path = %file.display(), "skill with an unusable name skipped");
            continue;
        }
        let description = field("description")
            .or_else(|| {
                body.lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| format!("The {name} skill"));
        let allowed_tools = field("allowed-tools")
            .or_else(|| field("allowed_tools"))
            .map(|v| {
                v.trim_matches(['[', ']'])
                    .split([',', ' '])
                    .map(|t| t.trim().trim_matches(['"', '\'']).to_owned())
                    .filter(|t| !t.is_empty())
                    .collect()
            });
        // A personal skill's area is its skills folder (`skill_dirs`).
        let personal = Some(area.as_path()) == dir.parent();
        by_name.insert(
            name.clone(),
            Skill {
                name,
                description,
                dir,
                body,
                allowed_tools,
                personal,
            },
        );
    }
    by_name.into_values().collect()
}

/// The `SKILL.md` files a workspace may have (not read): the command list follows them
/// (`commands::fingerprint`).
pub fn skill_files(own: &OwnFiles, cwd: &Path) -> Vec<PathBuf> {
    candidates(own, cwd)
        .into_iter()
        .map(|(_, file, _)| file)
        .collect()
}

/// What the system prompt says of the skills: each name and description, within
/// [`MAX_SECTION_BYTES`]. Empty when there are none (a session without skills pays nothing).
pub fn section(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n## Skills\nWhen a task matches one, load it with the `skill` tool and follow it.\n",
    );
    let mut left_out = Vec::new();
    for skill in skills {
        let mut description: String = skill
            .description
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_DESCRIPTION_CHARS)
            .collect();
        if description.chars().count() < skill.description.chars().count() {
            description.push('…');
        }
        let line = format!("- {}: {description}\n", skill.name);
        if s.len() + line.len() > MAX_SECTION_BYTES {
            left_out.push(skill.name.as_str());
        } else {
            s.push_str(&line);
        }
    }
    if !left_out.is_empty() {
        s.push_str(&format!(
            "- (more skills, without their descriptions: {})\n",
            left_out.join(", ")
        ));
    }
    s
}

/// The files in a skill's folder (relative paths, two levels deep at most), `SKILL.md` aside.
pub fn files(skill: &Skill) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![(skill.dir.clone(), 0)];
    while let Some((dir, depth)) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() && depth < 1 {
                todo.push((path, depth + 1));
            } else if meta.is_file()
                && let Ok(rel) = path.strip_prefix(&skill.dir)
                && rel != Path::new("SKILL.md")
            {
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    out.truncate(MAX_LISTED_FILES);
    out
}

/// Where a file of the skill, `rel` to its folder, lies once every link is followed; `None` when
/// `rel` is not a path inside the folder or its target lies outside it. A project skill's file is
/// read under the same policy as `read` of that target (`tools::skill`): a skill folder that
/// links elsewhere in the repository hands out nothing `read` would ask about.
pub fn file_target(skill: &Skill, rel: &str) -> Option<PathBuf> {
    let rel_path = Path::new(rel);
    let valid = !rel.is_empty()
        && !rel_path.is_absolute()
        && rel_path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !valid {
        return None;
    }
    let folder = std::fs::canonicalize(&skill.dir).ok()?;
    let target = crate::paths::resolve(Path::new("/"), &skill.dir.join(rel_path).to_string_lossy());
    crate::paths::is_under(&target, &folder).then_some(target)
}

/// A file of the skill, `rel` to its folder: no absolute path or `..`, its target inside the
/// skill's folder, read under the policy.
pub fn read_file(own: &OwnFiles, skill: &Skill, rel: &str) -> Result<String, String> {
    let rel_path = Path::new(rel);
    if rel.is_empty()
        || rel_path.is_absolute()
        || rel_path
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(format!(
            "`file` is a path inside the skill's folder, like `reference.md`; {rel:?} is not."
        ));
    }
    let path = skill.dir.join(rel_path);
    // The file must stay in the skill's own folder (where its link, if it is one, resolves):
    // a project skill above the cwd must not hand out the repository's other files, which
    // `read` would ask about as outside the workspace.
    let folder = std::fs::canonicalize(&skill.dir).unwrap_or_else(|_| skill.dir.clone());
    match own.read(&path, &folder, crate::own_files::MAX_BYTES) {
        Ok(t) if t.cut => Ok(format!(
            "{}\n[cut at 64 KiB: read {} with `read` for the rest]",
            t.text,
            path.display()
        )),
        Ok(t) => Ok(t.text),
        Err(Skip::Missing) => Err(format!(
            "the skill {} has no file {rel:?}; it has: {}",
            skill.name,
            files(skill).join(", ")
        )),
        Err(Skip::Refused(why)) => Err(why),
    }
}
