//! Slash commands: the built-ins and the user's and workspace's prompt files.
//!
//! Prompt files are `FERRITE_HOME/commands/<name>.md` (personal) and `<cwd>/.ferrite/commands/
//! <name>.md` (the project's; it wins on a name clash). A file may start with front matter:
//!
//! ```text
//! ---
//! description: Review a file for bugs
//! argument-hint: <path>
//! ---
//! Review $1 for bugs. Focus: $ARGUMENTS
//! ```
//!
//! A prompt that starts with `/<name>` gets the file's body attached, with `$ARGUMENTS` replaced by
//! the rest of the line and `$1`..`$9` by its words (quotes group words). The editor learns the
//! list from `available_commands_update`, sent again when the files change.
//!
//! Built-ins: `/compact` (summarize the conversation), `/undo [N]` and `/checkpoints` (workspace
//! checkpoints), and two prompt templates, `/init` (write an `AGENTS.md` for the repository) and
//! `/review` (review uncommitted changes with read-only tools).
//!
//! Prompt files are read through [`OwnFiles`]: a personal one must stay in
//! `FERRITE_HOME/commands/`, a project one in the workspace (never into FERRITE_HOME, never to a
//! file a deny rule covers); a FIFO or device is never opened. A file that may not be read is
//! neither listed nor run, and the personal one of the same name is used instead.

use std::path::{Path, PathBuf};

use crate::content::UserContent;
use crate::own_files::{OwnFiles, Skip};

/// A command as the editor lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CommandInfo {
    pub name: String,
    pub description: String,
    /// What to type after the name, e.g. `[N]`; `None` when it takes nothing.
    pub hint: Option<String>,
}

/// A built-in command.
struct Builtin {
    name: &'static str,
    description: &'static str,
    hint: Option<&'static str>,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "compact",
        description: "Summarize the conversation to free up context",
        hint: Some("[what to keep]"),
    },
    Builtin {
        name: "undo",
        description: "Revert the workspace to before the last turn that changed it",
        hint: Some("[N]"),
    },
    Builtin {
        name: "checkpoints",
        description: "List the workspace checkpoints of this session",
        hint: None,
    },
    Builtin {
        name: "rewind",
        description: "List your messages; `/rewind N` goes back to before message N, files too",
        hint: Some("[N]"),
    },
    Builtin {
        name: "title",
        description: "Rename the session (a generated title never replaces yours)",
        hint: Some("TEXT"),
    },
    Builtin {
        name: "init",
        description: "Explore the repository and write an AGENTS.md for it",
        hint: None,
    },
    Builtin {
        name: "review",
        description: "Review uncommitted changes (or a ref range) with read-only tools",
        hint: Some("[ref range]"),
    },
];

/// Prompt files larger than this are not offered (they are sent with the prompt).
const MAX_COMMAND_BYTES: u64 = crate::own_files::MAX_BYTES;

/// The built-ins, then the prompt files (sorted by name; the project's win on a clash). A prompt
/// file named like a built-in is not listed: the built-in runs.
pub fn available(own: &OwnFiles, cwd: &Path) -> Vec<CommandInfo> {
    let mut out: Vec<CommandInfo> = BUILTINS
        .iter()
        .map(|b| CommandInfo {
            name: b.name.to_owned(),
            description: b.description.to_owned(),
            hint: b.hint.map(str::to_owned),
        })
        .collect();
    let mut names: std::collections::BTreeSet<String> = Default::default();
    for (dir, _) in command_dirs(own.home(), cwd) {
        names.extend(prompt_files(&dir).into_iter().map(|(name, _)| name));
    }
    let mut listed: std::collections::BTreeSet<String> = Default::default();
    for name in names {
        if is_builtin(&name) {
            continue;
        }
        let Some((_, file)) = find_prompt_file(own, cwd, &name) else {
            continue;
        };
        listed.insert(name.clone());
        out.push(CommandInfo {
            description: file
                .description
                .unwrap_or_else(|| first_line(&file.body).unwrap_or_else(|| format!("/{name}"))),
            hint: file.hint,
            name,
        });
    }
    // Skills run as `/name` too; a built-in or a prompt file of the same name wins.
    for skill in crate::skills::discover(own, cwd) {
        if is_builtin(&skill.name) || listed.contains(&skill.name) {
            continue;
        }
        out.push(CommandInfo {
            name: skill.name,
            description: skill.description,
            hint: Some("[arguments]".to_owned()),
        });
    }
    out
}

/// What a prompt invokes, read once at the start of its turn and passed on: the intake attaches
/// the command's text, the turn keeps a skill's `allowed-tools` and `/review`'s read-only tools,
/// and an MCP prompt runs only for a name that is none of these.
#[derive(Debug, Clone, Default)]
pub struct Invoked {
    /// `/name` and its arguments, when the prompt's first text starts with one.
    pub command: Option<(String, String)>,
    pub target: Target,
}

/// What `/name` runs; a built-in wins over a prompt file, which wins over a skill.
#[derive(Debug, Clone, Default)]
pub enum Target {
    /// A plain prompt, or a `/name` that is not Ferrite's (an MCP prompt's, or unknown).
    #[default]
    Nothing,
    Builtin,
    PromptFile {
        path: PathBuf,
        body: String,
    },
    /// The turn's skill at this index.
    Skill(usize),
}

impl Invoked {
    /// Reads `content` against the built-ins, the prompt files and the turn's `skills`.
    pub fn read(
        content: &[UserContent],
        own: &OwnFiles,
        cwd: &Path,
        skills: &[crate::skills::Skill],
    ) -> Self {
        let Some((name, args)) = invocation(content) else {
            return Self::default();
        };
        let target = if is_builtin(&name) {
            Target::Builtin
        } else if let Some((path, file)) = find_prompt_file(own, cwd, &name) {
            Target::PromptFile {
                path,
                body: file.body,
            }
        } else if let Some(i) = skills.iter().position(|s| s.name == name) {
            Target::Skill(i)
        } else {
            Target::Nothing
        };
        Self {
            command: Some((name, args)),
            target,
        }
    }

    /// Whether `/name` runs a built-in, a prompt file or a skill: those win over an MCP prompt
    /// of the same name.
    pub fn is_ours(&self) -> bool {
        !matches!(self.target, Target::Nothing)
    }

    /// Whether the turn may only look, never change (`/review`).
    pub fn read_only(&self) -> bool {
        self.command
            .as_ref()
            .is_some_and(|(name, _)| name == "review")
    }

    /// The skill the prompt runs.
    pub fn skill<'a>(
        &self,
        skills: &'a [crate::skills::Skill],
    ) -> Option<&'a crate::skills::Skill> {
        match self.target {
            Target::Skill(i) => skills.get(i),
            _ => None,
        }
    }

    /// The prompt with the command's text attached after its line, or unchanged when it names
    /// no command with a text.
    pub fn expand(
        &self,
        content: Vec<UserContent>,
        skills: &[crate::skills::Skill],
    ) -> Vec<UserContent> {
        let Some((name, args)) = &self.command else {
            return content;
        };
        let (body, uri) = match &self.target {
            Target::Builtin => match builtin_template(name) {
                Some(template) => (template.to_owned(), format!("ferrite:command/{name}")),
                None => return content,
            },
            Target::PromptFile { path, body } => {
                (body.clone(), format!("file://{}", path.display()))
            }
            Target::Skill(_) => match self.skill(skills) {
                Some(skill) => (
                    skill.body.clone(),
                    format!("file://{}", skill.dir.join("SKILL.md").display()),
                ),
                None => return content,
            },
            Target::Nothing => return content,
        };
        let mut out = content;
        out.insert(
            1,
            UserContent::Resource {
                uri,
                text: Some(substitute(&body, args)),
                blob: None,
                mime_type: Some("text/markdown".into()),
            },
        );
        out
    }
}

/// A cheap fingerprint of the prompt files and skills (names, sizes, modification times): when
/// it changes, the list is sent again.
pub fn fingerprint(
    home: &Path,
    user_home: Option<&Path>,
    cwd: &Path,
) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    // Only where skills are looked for matters here, not what may be read.
    let own = OwnFiles::new(home, &[], Err(String::new())).with_user_home(user_home);
    let prompts = command_dirs(home, cwd)
        .into_iter()
        .flat_map(|(dir, _)| prompt_files(&dir).into_iter().map(|(_, path)| path));
    crate::skills::skill_files(&own, cwd)
        .into_iter()
        .chain(prompts)
        .map(|path| {
            let meta = std::fs::metadata(&path).ok();
            (
                path,
                meta.as_ref().map_or(0, std::fs::Metadata::len),
                meta.and_then(|m| m.modified().ok()),
            )
        })
        .collect()
}

/// `/<name> args` at the start of the prompt's first text block.
pub(crate) fn invocation(content: &[UserContent]) -> Option<(String, String)> {
    let Some(UserContent::Text { text }) = content.first() else {
        return None;
    };
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    crate::front_matter::valid_name(name).then(|| (name.to_owned(), args.trim().to_owned()))
}

fn is_builtin(name: &str) -> bool {
    BUILTINS.iter().any(|b| b.name == name)
}

/// The prompt text of the built-ins that are prompts for the model.
fn builtin_template(name: &str) -> Option<&'static str> {
    match name {
        "init" => Some(INIT_PROMPT),
        "review" => Some(REVIEW_PROMPT),
        _ => None,
    }
}

const INIT_PROMPT: &str = "Write an `AGENTS.md` at the root of this repository for coding agents \
that will work in it. First explore: the build system and manifests, how to build, test and lint \
(the exact commands), the directory layout and what lives where, the conventions the code follows \
(naming, error handling, tests), and anything surprising a newcomer must know. Use the read-only \
tools to look; do not guess. Then write the file with `write` (if an `AGENTS.md` already exists, \
improve it with `edit` instead of replacing what is still true). Keep it short and concrete: \
commands in code blocks, one line per fact. $ARGUMENTS";

const REVIEW_PROMPT: &str = "Review the code changes in this repository: the working tree's \
uncommitted changes (`git status`, `git diff HEAD`), or the ref range `$ARGUMENTS` when one is \
given (`git diff $ARGUMENTS`). This turn is read-only: read the changed files and their context, \
do not change anything. Report findings ordered by severity (critical, high, medium, low), each \
with `file:line`, what is wrong, why it matters, and a concrete fix. Look for bugs, security \
problems, missing error handling, missing tests and unclear code. If there is nothing to review, \
say so.";

/// `$ARGUMENTS` becomes the whole argument text; `$1`..`$9` its words. A template that uses
/// neither gets the arguments appended.
fn substitute(template: &str, args: &str) -> String {
    let words = split_words(args);
    let uses_args =
        template.contains("$ARGUMENTS") || (1..=9).any(|i| template.contains(&format!("${i}")));
    let mut out = template.replace("$ARGUMENTS", args);
    // From 9 down, so `$1` does not eat the start of a (hypothetical) `$10`.
    for i in (1..=9).rev() {
        let value = words.get(i - 1).map_or("", String::as_str);
        out = out.replace(&format!("${i}"), value);
    }
    if !uses_args && !args.is_empty() {
        out = format!("{out}\n\n{args}");
    }
    out.trim_end().to_owned()
}

/// Words separated by whitespace; `"…"` and `'…'` group words.
fn split_words(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            None => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// Personal first, then the project's (later entries win), each with the area its files must
/// stay in: `FERRITE_HOME/commands/` for the personal ones, the workspace for the project's.
fn command_dirs(home: &Path, cwd: &Path) -> [(PathBuf, PathBuf); 2] {
    let personal = home.join("commands");
    [
        (personal.clone(), personal),
        (cwd.join(".ferrite").join("commands"), cwd.to_owned()),
    ]
}

/// The prompt file `name` runs: the project's when it may be read, else the personal one.
fn find_prompt_file(own: &OwnFiles, cwd: &Path, name: &str) -> Option<(PathBuf, PromptFile)> {
    command_dirs(own.home(), cwd)
        .into_iter()
        .rev()
        .find_map(|(dir, area)| {
            let path = dir.join(format!("{name}.md"));
            read_prompt_file(own, &path, &area).map(|f| (path, f))
        })
}

fn prompt_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut out: Vec<(String, PathBuf)> = rd
        .flatten()
        .map(|d| d.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .filter_map(|p| {
            let name = p.file_stem()?.to_str()?.to_owned();
            let valid = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            valid.then_some((name, p))
        })
        .collect();
    out.sort();
    out
}

struct PromptFile {
    description: Option<String>,
    hint: Option<String>,
    body: String,
}

fn read_prompt_file(own: &OwnFiles, path: &Path, area: &Path) -> Option<PromptFile> {
    match own.read(path, area, MAX_COMMAND_BYTES) {
        Ok(t) if !t.cut => Some(parse_front_matter(&t.text)),
        Ok(_) => {
            tracing::warn!(path = %path.display(), "prompt file over 64 KiB not offered");
            None
        }
        Err(Skip::Missing) => None,
        Err(Skip::Refused(why)) => {
            tracing::warn!("prompt file skipped: {why}");
            None
        }
    }
}

fn parse_front_matter(text: &str) -> PromptFile {
    let (fields, body) = crate::front_matter::parse(text);
    let mut file = PromptFile {
        description: None,
        hint: None,
        body,
    };
    for (key, value) in fields {
        match key.as_str() {
            "description" => file.description = Some(value),
            "argument-hint" | "argument_hint" => file.hint = Some(value),
            _ => {}
        }
    }
    file
}

fn first_line(body: &str) -> Option<String> {
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.trim_start_matches('#').trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Vec<UserContent> {
        vec![UserContent::Text { text: t.into() }]
    }

    fn attached(out: &[UserContent]) -> String {
        match &out[1] {
            UserContent::Resource { text: Some(t), .. } => t.clone(),
            other => panic!("{other:?}"),
        }
    }

    struct Dirs {
        home: tempfile::TempDir,
        ws: tempfile::TempDir,
    }

    impl Dirs {
        fn new() -> Self {
            Self {
                home: tempfile::tempdir().unwrap(),
                ws: tempfile::tempdir().unwrap(),
            }
        }
        fn personal(&self, name: &str, body: &str) {
            std::fs::create_dir_all(self.home.path().join("commands")).unwrap();
            std::fs::write(self.home.path().join("commands").join(name), body).unwrap();
        }
        fn project(&self, name: &str, body: &str) {
            let d = self.ws.path().join(".ferrite/commands");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(name), body).unwrap();
        }
        fn own(&self) -> OwnFiles {
            OwnFiles::new(self.home.path(), &[], Ok(Default::default()))
        }
        fn expand(&self, t: &str) -> Vec<UserContent> {
            let skills = crate::skills::discover(&self.own(), self.ws.path());
            let invoked = Invoked::read(&text(t), &self.own(), self.ws.path(), &skills);
            invoked.expand(text(t), &skills)
        }
        fn read_only(&self, t: &str) -> bool {
            Invoked::read(&text(t), &self.own(), self.ws.path(), &[]).read_only()
        }
    }

    #[test]
    fn expands_prompt_files_with_arguments() {
        let d = Dirs::new();
        d.project("review-file.md", "Review $ARGUMENTS carefully.");
        let out = d.expand("/review-file src/lib.rs");
        assert_eq!(attached(&out), "Review src/lib.rs carefully.");
        d.project(
            "pos.md",
            "---\ndescription: x\n---\nCompare $1 with $2 ($ARGUMENTS).",
        );
        let out = d.expand("/pos a.rs \"b c.rs\"");
        assert_eq!(
            attached(&out),
            "Compare a.rs with b c.rs (a.rs \"b c.rs\")."
        );
        d.project("plain.md", "Do the thing.");
        assert_eq!(attached(&d.expand("/plain now")), "Do the thing.\n\nnow");
        assert_eq!(d.expand("/nope x").len(), 1);
        assert_eq!(d.expand("/../etc/passwd").len(), 1);
        assert_eq!(d.expand("plain").len(), 1);
    }

    #[test]
    fn project_commands_win_over_personal_ones() {
        let d = Dirs::new();
        d.personal("fix.md", "personal fix");
        d.personal(
            "mine.md",
            "---\ndescription: Mine only\nargument-hint: <x>\n---\nbody",
        );
        d.project("fix.md", "project fix");
        assert_eq!(attached(&d.expand("/fix")), "project fix");
        assert_eq!(attached(&d.expand("/mine")), "body");
        let list = available(&d.own(), d.ws.path());
        let names: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "compact",
                "undo",
                "checkpoints",
                "rewind",
                "title",
                "init",
                "review",
                "fix",
                "mine"
            ]
        );
        let mine = list.iter().find(|c| c.name == "mine").unwrap();
        assert_eq!(mine.description, "Mine only");
        assert_eq!(mine.hint.as_deref(), Some("<x>"));
        let fix = list.iter().find(|c| c.name == "fix").unwrap();
        assert_eq!(fix.description, "project fix");
    }

    #[test]
    fn builtin_prompts_and_read_only_review() {
        let d = Dirs::new();
        // A prompt file cannot shadow a built-in.
        d.project("review.md", "shadow");
        let out = d.expand("/review main..HEAD");
        let body = attached(&out);
        assert!(body.contains("git diff main..HEAD"), "{body}");
        assert!(d.read_only("/review"));
        assert!(!d.read_only("/init"));
        assert!(attached(&d.expand("/init")).contains("AGENTS.md"));
        // `/compact` and `/undo` are handled by the turn, not expanded.
        assert_eq!(d.expand("/compact").len(), 1);
        assert_eq!(d.expand("/undo 2").len(), 1);
    }

    #[test]
    fn fingerprint_changes_when_a_file_is_added() {
        let d = Dirs::new();
        let before = fingerprint(d.home.path(), None, d.ws.path());
        d.project("new.md", "x");
        assert_ne!(before, fingerprint(d.home.path(), None, d.ws.path()));
    }
}
