//! What every file tool shares: capping what goes back to the model (`docs/tools.md`: 2,000 lines or
//! 50 KB by default) with the full text spilled to a file the model can page through, argument
//! parsing, and running blocking file-system work off the async runtime.

use std::borrow::Cow;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use tokio_util::sync::CancellationToken;

use crate::tools::{OutputLimits, ToolContext, ToolError, ToolOutput};

/// `text` cut to `limits` (whichever of lines or bytes comes first, never inside a character).
/// When cut, the whole text goes to a new file in `spill_dir` and the excerpt ends with a note
/// naming that file, so nothing the model might need is lost.
pub fn cap(text: &str, limits: OutputLimits, spill_dir: &Path) -> String {
    let cut = cut_point(text, limits);
    if cut == text.len() {
        return text.to_owned();
    }
    let excerpt = &text[..cut];
    let shown_lines = count_lines(excerpt);
    let total_lines = count_lines(text);
    // A fresh, exclusively created file (never a name from the model or provider, never through
    // a link someone planted): see `exec::create_spill_file`.
    let saved = crate::exec::create_spill_file(spill_dir, "txt").and_then(|(path, mut file)| {
        std::io::Write::write_all(&mut file, text.as_bytes()).map(|()| path)
    });
    let mut out = String::with_capacity(cut + 300);
    out.push_str(excerpt);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "\n[Output truncated: showing lines 1-{shown_lines} of {total_lines} ({cut} of {} bytes). ",
        text.len()
    ));
    match saved {
        Ok(path) => out.push_str(&format!(
            "The full output is in {}; use `read` with offset/limit or `grep` on that file to see \
             the rest.]",
            path.display()
        )),
        Err(e) => {
            tracing::warn!(dir = %spill_dir.display(), error = %e, "could not spill tool output");
            out.push_str(&format!(
                "The full output could not be saved ({e}); narrow the request to see the rest.]"
            ));
        }
    }
    out
}

/// Where `text` must be cut to respect `limits`; `text.len()` when it fits.
fn cut_point(text: &str, limits: OutputLimits) -> usize {
    let line_cut = text
        .match_indices('\n')
        .nth(limits.max_lines.saturating_sub(1))
        .map_or(text.len(), |(i, _)| i + 1);
    let line_cut = if limits.max_lines == 0 { 0 } else { line_cut };
    if text.len() <= limits.max_bytes {
        return line_cut;
    }
    let byte_cut = floor_char_boundary(text, limits.max_bytes);
    if line_cut <= byte_cut {
        return line_cut;
    }
    // Prefer whole lines; a single enormous line is cut inside it rather than showing nothing.
    match text[..byte_cut].rfind('\n') {
        Some(i) => i + 1,
        None => byte_cut,
    }
}

/// Lines as a person counts them: a final line without a newline still counts.
pub fn count_lines(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// "1 line", "2 lines".
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The largest char boundary `<= i`.
pub fn floor_char_boundary(text: &str, i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    let mut i = i;
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One line shortened to `max` bytes for display, saying how much was left out. Minified files
/// and lock files have lines of megabytes that would otherwise fill the whole budget.
pub fn truncate_line(line: &str, max: usize) -> Cow<'_, str> {
    if line.len() <= max {
        return Cow::Borrowed(line);
    }
    let cut = floor_char_boundary(line, max);
    Cow::Owned(format!(
        "{}… [{} more bytes]",
        &line[..cut],
        line.len() - cut
    ))
}

/// The arguments of `tool` as `T`, or an error the model can act on.
pub fn parse_input<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input)
        .map_err(|e| ToolError::RespondToModel(format!("invalid `{tool}` arguments: {e}")))
}

/// Runs file-system work on the blocking pool: a walk over a large tree must not stall the
/// runtime threads that stream the model's answer.
pub async fn blocking<T, F>(f: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::Fatal(format!("a file tool's worker thread failed: {e}")))?
}

/// Runs a search (`grep`, `find`) on the blocking pool and caps its text for the model.
pub async fn search_output(
    ctx: &ToolContext<'_>,
    input: Value,
    run: fn(Value, &Path, &crate::tools::ReadDeny, &CancellationToken) -> Result<String, ToolError>,
) -> Result<ToolOutput, ToolError> {
    let cwd = ctx.cwd.clone();
    let cancel = ctx.cancel.clone();
    let deny = ctx.read_deny.clone();
    let text = blocking(move || run(input, &cwd, &deny, &cancel)).await?;
    Ok(ToolOutput {
        text: cap(&text, ctx.limits, &ctx.spill_dir),
        content: vec![],
    })
}

/// Locks `m`; a panic in another walker thread leaves plain collected data behind, still usable.
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How a searched place is named in a sentence.
pub fn place(shown: &str) -> &str {
    if shown == "." {
        "the working directory"
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_lines: usize, max_bytes: usize) -> OutputLimits {
        OutputLimits {
            max_bytes,
            max_lines,
        }
    }

    #[test]
    fn short_text_is_unchanged_and_not_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let out = cap("a\nb\n", limits(10, 100), dir.path());
        assert_eq!(out, "a\nb\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn line_cap_spills_everything() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let spill = dir.path().join("nested");
        let out = cap(&text, limits(3, 10_000), &spill);
        assert!(
            out.starts_with("line 1\nline 2\nline 3\n\n[Output truncated"),
            "{out}"
        );
        assert!(out.contains("showing lines 1-3 of 10"), "{out}");
        let path = only_file(&spill);
        assert!(out.contains(&path.display().to_string()), "{out}");
        assert!(out.contains("`read`") && out.contains("`grep`"));
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
    }

    #[test]
    fn byte_cap_prefers_whole_lines_and_char_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let out = cap("aaaa\nbbbb\ncccc\n", limits(100, 12), dir.path());
        assert!(out.starts_with("aaaa\nbbbb\n\n[Output truncated"), "{out}");
        assert!(out.contains("10 of 15 bytes"), "{out}");
        // One long line of multi-byte characters: cut inside the line, on a boundary.
        let text = "é".repeat(10);
        let dir = tempfile::tempdir().unwrap();
        let out = cap(&text, limits(100, 5), dir.path());
        assert!(out.starts_with("éé\n\n[Output truncated"), "{out}");
        assert_eq!(
            std::fs::read_to_string(only_file(dir.path())).unwrap(),
            text
        );
    }

    /// The one spill file in `dir` (its name is the agent's own, unpredictable).
    fn only_file(dir: &Path) -> std::path::PathBuf {
        let files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }

    #[test]
    fn counts_and_truncation_helpers() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(truncate_line("short", 10), "short");
        assert_eq!(truncate_line("ééé", 3), "é… [4 more bytes]");
    }
}

/// A real session (log in a temp home, events on a channel) and a workspace in a temp dir, for the
/// tools' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::Value;
    use tokio_util::sync::CancellationToken;

    use crate::events::Event;
    use crate::exec::{CommandRunner, Sandbox};
    use crate::session::testing::TestSession;
    use crate::tools::{OutputLimits, Tool, ToolContext, ToolError, ToolOutput};

    pub struct TestEnv {
        /// The workspace root, canonical.
        pub root: PathBuf,
        pub spill: PathBuf,
        pub limits: OutputLimits,
        pub runner: Option<Arc<dyn CommandRunner>>,
        pub session: TestSession,
        pub read_deny: crate::tools::ReadDeny,
        _work: tempfile::TempDir,
    }

    impl TestEnv {
        pub fn new() -> Self {
            let work = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(work.path()).unwrap();
            let session = TestSession::new(root.clone());
            Self {
                spill: session.home.path().join("tool-output"),
                root,
                limits: OutputLimits {
                    max_bytes: 51_200,
                    max_lines: 2_000,
                },
                runner: None,
                session,
                read_deny: crate::tools::ReadDeny::default(),
                _work: work,
            }
        }

        pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
            let p = self.root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }

        pub fn read(&self, rel: &str) -> String {
            std::fs::read_to_string(self.root.join(rel)).unwrap()
        }

        pub fn ctx(&self) -> ToolContext<'_> {
            ToolContext {
                cwd: self.root.clone(),
                roots: vec![self.root.clone()],
                call_id: "call_1".into(),
                cancel: CancellationToken::new(),
                recorder: &self.session.recorder,
                limits: self.limits,
                spill_dir: self.spill.clone(),
                runner: self.runner.clone(),
                sandbox: Sandbox::None,
                bash_timeout: Duration::from_secs(120),
                client_fs: None,
                elicitor: None,
                lsp: None,
                fs_delegation: crate::config::FsDelegation::Never,
                command_gate: Default::default(),
                read_deny: self.read_deny.clone(),
                web: None,
                web_reach: crate::web::Reach::PublicOnly,
                model_images: true,
                image_decodes: Default::default(),
                background: Default::default(),
                max_background: 8,
                skills: Default::default(),
                own_files: crate::own_files::OwnFiles::new(
                    &self.root,
                    std::slice::from_ref(&self.root),
                    Ok(Default::default()),
                ),
            }
        }

        /// Puts deny rules in force for the calls that follow.
        pub fn deny(&mut self, rules: &[&str]) {
            let deny: Vec<String> = rules.iter().map(|r| (*r).to_owned()).collect();
            let rules = crate::permissions::Rules::from_strings(&[], &deny).unwrap();
            self.read_deny =
                crate::tools::ReadDeny::new(Arc::new(rules), vec![self.root.clone()], None);
        }

        pub async fn call(&self, tool: &dyn Tool, input: Value) -> Result<ToolOutput, ToolError> {
            let ctx = self.ctx();
            tool.call(input, &ctx).await
        }

        /// The text of a successful call.
        pub async fn ok(&self, tool: &dyn Tool, input: Value) -> String {
            match self.call(tool, input).await {
                Ok(out) => out.text,
                Err(e) => panic!("tool failed: {e:?}"),
            }
        }

        /// The message of a call that fails with `RespondToModel`.
        pub async fn err(&self, tool: &dyn Tool, input: Value) -> String {
            match self.call(tool, input).await {
                Err(ToolError::RespondToModel(msg)) => msg,
                other => panic!("expected an error for the model, got {other:?}"),
            }
        }

        pub fn drain_events(&mut self) -> Vec<Event> {
            self.session.drain_events()
        }
    }
}

#[cfg(test)]
mod registry_tests {
    use crate::modes::Harness;
    use crate::tools::{ToolRegistry, registry_for};

    fn names(r: &ToolRegistry) -> Vec<String> {
        let mut v: Vec<String> = r.specs().into_iter().map(|s| s.name).collect();
        v.sort();
        v
    }

    #[test]
    fn each_harness_gets_its_tools() {
        let all = [
            "bash",
            "bash_kill",
            "bash_output",
            "diagnostics",
            "edit",
            "find",
            "grep",
            "ls",
            "read",
            "update_plan",
            "web_fetch",
            "write",
        ];
        assert_eq!(names(&registry_for(Harness::Code)), all);
        assert_eq!(names(&registry_for(Harness::Unattended)), all);
        assert_eq!(
            names(&registry_for(Harness::Planner)),
            [
                "diagnostics",
                "find",
                "grep",
                "ls",
                "read",
                "update_plan",
                "web_fetch"
            ]
        );
        assert_eq!(
            names(&registry_for(Harness::Assistant)),
            ["update_plan", "web_fetch"]
        );
    }
}
