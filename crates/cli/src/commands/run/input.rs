//! What `ferrite run` was asked, checked before anything starts: the prompt (the arguments, or
//! stdin), the directories (`-C`, `--add-dir`, resolved against the directory the command was
//! typed in), and where the last message goes.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use ferrite_core::modes::Mode;

use super::{FAILED, Stop, USAGE};
use crate::args::RunArgs;

pub(super) struct Request {
    pub json: bool,
    pub prompt: String,
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub session: Option<String>,
    pub continue_last: bool,
    /// Absolute.
    pub output_last_message: Option<PathBuf>,
    /// The working directory (canonical).
    pub cwd: PathBuf,
    /// Canonical, existing directories.
    pub add_dirs: Vec<PathBuf>,
}

fn usage(message: String) -> Stop {
    Stop {
        code: USAGE,
        error: anyhow::anyhow!(message),
    }
}

fn failed(message: String) -> Stop {
    Stop {
        code: FAILED,
        error: anyhow::anyhow!(message),
    }
}

impl Request {
    pub fn from_args(args: RunArgs) -> Result<Self, Stop> {
        let typed_in =
            std::env::current_dir().map_err(|e| failed(format!("the current directory: {e}")))?;
        let add_dirs = (args.add_dirs.iter())
            .map(|d| directory(&typed_in, d, "--add-dir"))
            .collect::<Result<Vec<_>, _>>()?;
        let output_last_message = args.output_last_message.map(|f| typed_in.join(f));
        let cwd = match &args.cd {
            Some(dir) => {
                let dir = directory(&typed_in, dir, "-C/--cd")?;
                // Commands the agent runs, and relative paths, start from there.
                std::env::set_current_dir(&dir)
                    .map_err(|e| failed(format!("-C {}: {e}", dir.display())))?;
                dir
            }
            None => typed_in
                .canonicalize()
                .map_err(|e| failed(format!("{}: {e}", typed_in.display())))?,
        };
        Ok(Self {
            json: args.json,
            prompt: prompt(&args.prompt)?,
            model: args.model,
            mode: args.mode.map(|m| m.mode()),
            session: args.session,
            continue_last: args.continue_last,
            output_last_message,
            cwd,
            add_dirs,
        })
    }
}

/// An existing directory, made absolute against `base` and canonical.
fn directory(base: &Path, dir: &Path, flag: &str) -> Result<PathBuf, Stop> {
    let path = base.join(dir);
    match path.canonicalize() {
        Ok(p) if p.is_dir() => Ok(p),
        Ok(_) => Err(usage(format!("{flag} {}: not a directory", dir.display()))),
        Err(e) => Err(usage(format!("{flag} {}: {e}", dir.display()))),
    }
}

/// The arguments joined with spaces; stdin when there are none or the one argument is `-`.
fn prompt(words: &[String]) -> Result<String, Stop> {
    let from_stdin = words.is_empty() || (words.len() == 1 && words[0] == "-");
    if !from_stdin {
        return Ok(words.join(" "));
    }
    let mut stdin = std::io::stdin();
    if words.is_empty() && stdin.is_terminal() {
        return Err(usage(
            "no prompt: give it as an argument, or on stdin (`echo … | ferrite run`)".into(),
        ));
    }
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .map_err(|e| failed(format!("reading the prompt from stdin: {e}")))?;
    if text.trim().is_empty() {
        return Err(usage("the prompt on stdin is empty".into()));
    }
    Ok(text.trim_end().to_owned())
}
