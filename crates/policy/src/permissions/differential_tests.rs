//! The differential test of the command parser against the shell that runs commands (issue 28):
//! every command of the corpus and of a generated set is parsed as the policy parses it, then run
//! by the real shell with every `execve` traced and suppressed (`shell/trace_exec.c`, loaded with
//! `LD_PRELOAD`: nothing a command names is ever executed, only the shells themselves), and every
//! program the shell actually executed must be one the parser found: among the commands deny
//! rules are checked against, and, when the parser called the line fully understood, exactly one
//! of its plain commands (what allow rules match). Lines the parser refuses to judge (not valid
//! syntax, hiding what they run) are counted, not run: a deny rule refuses them and no allow rule
//! matches them.
//!
//! Wrappers (`env`, `timeout`, `script`, `su`, `flock`, `xargs`, ...) run for real too where Landlock
//! confines what the traced commands write to their scratch directories ([`confine_writes`]).
//!
//! `cargo test` runs the corpus and `FERRITE_DIFF_CASES` generated commands (default 2,000);
//! `bench/shell_differential.sh` runs a million.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::differential_gen::{corpus, corpus_lines, generated};
use super::shell::{PlainCommand, Script, Word, program_name};
use crate::shell::Shell;

/// A program the shell executed: the last component of the path it executed, and its argv
/// after argv[0].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Executed {
    program: String,
    args: Vec<String>,
    /// The record was too long to keep its arguments.
    args_unknown: bool,
}

/// The traced shells and a place to run them.
struct Tracer {
    _dir: tempfile::TempDir,
    library: PathBuf,
    bin: PathBuf,
    bash: PathBuf,
    dash: Option<PathBuf>,
    /// The wrappers run for real (traced inside, as the shells are): only where Landlock
    /// confines what the traced commands write ([`confine_writes`]).
    wrappers: Vec<PathBuf>,
}

/// Wrappers run for real when writes can be confined: what they run is then traced as the
/// shells' commands are (the interposer covers the whole exec family). `watch` loops and
/// `sudo`/`doas` drop the tracer, so those stay stubs (their commands are still parsed).
const REAL_WRAPPERS: &[&str] = &[
    "env", "timeout", "nice", "nohup", "stdbuf", "ionice", "setsid", "xargs", "flock", "script",
    "su", "runuser", "time", "setarch", "find",
];

/// Whether Landlock confines this thread's writes (and its children's) to `dirs` and `/dev`.
/// The traced shells and wrappers run real programs' code; none may write anywhere else.
fn confine_writes(dirs: &[&Path]) -> bool {
    use landlock::{
        ABI, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    };
    let write = AccessFs::from_write(ABI::V3);
    let confine = || -> Result<RulesetStatus, landlock::RulesetError> {
        let mut ruleset = Ruleset::default().handle_access(write)?.create()?;
        for dir in dirs.iter().copied().chain([Path::new("/dev")]) {
            if let Ok(fd) = PathFd::new(dir) {
                ruleset = ruleset.add_rule(PathBeneath::new(fd, write))?;
            }
        }
        Ok(ruleset.restrict_self()?.ruleset)
    };
    matches!(confine(), Ok(RulesetStatus::FullyEnforced))
}

const NOT_FOUND: &str = "__notfound";

fn which(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

impl Tracer {
    fn new() -> Tracer {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("trace_exec.c");
        std::fs::write(&source, include_str!("shell/trace_exec.c")).unwrap();
        let library = dir.path().join("trace_exec.so");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
        let status = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&library)
            .arg(&source)
            .arg("-ldl")
            .status()
            .unwrap_or_else(|e| {
                panic!("the differential test compiles its tracer with `{cc}`: {e}")
            });
        assert!(status.success(), "compiling the tracer failed");
        let bash = which("bash").expect("the differential test needs bash");
        let dash = which("dash");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        // The shells run for real (traced inside); `sh` is what `sh -c` finds on this system.
        let sh = which("sh").unwrap_or_else(|| bash.clone());
        for (name, target) in [("bash", &bash), ("sh", &sh)] {
            std::os::unix::fs::symlink(target, bin.join(name)).unwrap();
        }
        if let Some(dash) = &dash {
            std::os::unix::fs::symlink(dash, bin.join("dash")).unwrap();
        }
        let tracer = Tracer {
            _dir: dir,
            library,
            bin,
            bash,
            dash,
            wrappers: REAL_WRAPPERS.iter().filter_map(|w| which(w)).collect(),
        };
        tracer.stub(NOT_FOUND);
        tracer
    }

    /// An executable file named `name` on the traced PATH. It is never executed (the tracer
    /// stops every `execve` of it); it lets the shell's PATH search find the name, so that
    /// `dash`, which has no not-found hook, execs it too.
    fn stub(&self, name: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.bin.join(name);
        if path.exists() {
            return;
        }
        if std::fs::write(&path, "").is_ok() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).ok();
        }
    }

    /// Stubs for every name-like token of `command`.
    fn stub_names(&self, command: &str) {
        for token in command.split(|c: char| !(c.is_ascii_alphanumeric() || "_.+-".contains(c))) {
            if token.is_empty()
                || token.len() > 64
                || token.starts_with(['-', '.'])
                || matches!(token, "bash" | "sh" | "dash")
            {
                continue;
            }
            self.stub(token);
        }
    }

    /// Runs `command` under `bash -c` in `work`, every program it executes recorded and
    /// answered with `status`; returns what was executed, and whether it timed out.
    fn run(
        &self,
        command: &str,
        work: &Path,
        log: &Path,
        status: u8,
        confined: bool,
    ) -> (Vec<Executed>, bool) {
        // A log of its own and a fresh scratch directory per command: a process an earlier
        // command left behind (`setsid`, `nohup`, a daemonizing wrapper) opens its log by the
        // name it inherited, never this command's, and a file an earlier command wrote (a script
        // `bash FILE` would read) is gone.
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = &log.with_extension(run.to_string());
        let _ = std::fs::remove_dir_all(work);
        std::fs::create_dir(work).unwrap();
        std::fs::write(log, b"").unwrap();
        self.stub_names(command);
        let wrappers = self.wrappers.iter().filter(|_| confined);
        let pass: Vec<String> = [Some(&self.bash), self.dash.as_ref()]
            .into_iter()
            .flatten()
            .chain(wrappers)
            .map(|p| p.display().to_string())
            .collect();
        let mut child = Command::new(&self.bash)
            .arg("-c")
            .arg(command)
            .env_clear()
            .env("PATH", &self.bin)
            .env("HOME", work)
            .env("TMPDIR", work)
            .env("LD_PRELOAD", &self.library)
            .env("FERRITE_TRACE_LOG", log)
            .env("FERRITE_TRACE_STATUS", status.to_string())
            .env("FERRITE_TRACE_PASS", pass.join(":"))
            .env(
                "BASH_FUNC_command_not_found_handle%%",
                format!("() {{ exec {NOT_FOUND} \"$@\"; }}"),
            )
            .current_dir(work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_millis(1500);
        let mut timed_out = false;
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if Instant::now() > deadline {
                timed_out = true;
                break;
            }
            std::thread::sleep(Duration::from_micros(300));
        }
        // Whatever it left behind (`&`, a timeout) goes with its process group.
        if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = child.wait();
        let executed = read_log(&std::fs::read(log).unwrap());
        let _ = std::fs::remove_file(log);
        (executed, timed_out)
    }
}

fn read_log(bytes: &[u8]) -> Vec<Executed> {
    let mut out = Vec::new();
    let mut at = 0;
    let u32_at = |at: usize| -> Option<usize> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    while let Some(count) = u32_at(at) {
        at += 4;
        let mut strings = Vec::new();
        for _ in 0..count.max(1) {
            let Some(n) = u32_at(at) else { return out };
            at += 4;
            let Some(s) = bytes.get(at..at + n) else {
                return out;
            };
            strings.push(String::from_utf8_lossy(s).into_owned());
            at += n;
        }
        let path = strings.remove(0);
        let mut program = program_name(&path).to_owned();
        let mut args: Vec<String> = strings.into_iter().skip(1).collect();
        if program == NOT_FOUND && !args.is_empty() {
            program = program_name(&args.remove(0)).to_owned();
        }
        out.push(Executed {
            program,
            args,
            args_unknown: count == 0,
        });
    }
    out
}

/// Whether the parsed `words` are the command `e`: same program; the same arguments when every
/// word is literal (a word with `~` is expanded by the shell, so it matches any argument).
fn covers(words: &[Word], e: &Executed) -> bool {
    let Some(program) = words.first().and_then(Word::literal) else {
        return false;
    };
    if program_name(program) != e.program {
        return false;
    }
    let literal: Option<Vec<&str>> = words[1..].iter().map(Word::literal).collect();
    match literal {
        None => true,
        Some(_) if e.args_unknown => true,
        Some(args) => {
            args.len() == e.args.len()
                && args
                    .iter()
                    .zip(&e.args)
                    .all(|(w, a)| w.contains('~') || w == a)
        }
    }
}

/// Every command an allow rule that matches one of `plain` lets run: each plain command and
/// what it runs as a wrapper or shell (`time git status` runs `git status`, `sh -c 'a; b'` runs
/// `a` and `b`), found by parsing the plain command again on its own.
fn allowed_runs(plain: &[PlainCommand], out: &mut Vec<Vec<Word>>) {
    for c in plain {
        let quoted: Vec<String> = c
            .words
            .iter()
            .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
            .collect();
        let script = Script::parse(&quoted.join(" "), Shell::Bash);
        out.extend(
            script
                .commands
                .iter()
                .flat_map(|f| f.runs().map(<[Word]>::to_vec)),
        );
        if let Some(inner) = &c.inner {
            allowed_runs(inner, out);
        }
    }
}

/// Lines whose redirections could write outside the scratch directory: not run.
fn writes_outside(command: &str) -> bool {
    let bytes = command.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        b == b'>' && {
            let rest = command[i + 1..].trim_start_matches(['>', '|', '&', ' ', '\t']);
            let null = rest.strip_prefix("/dev/null").is_some_and(|after| {
                !after.starts_with(|c: char| c.is_alphanumeric() || "_./-~".contains(c))
            });
            (rest.starts_with('/') && !null) || rest.starts_with('~')
        }
    }) || command.contains("cd ")
}

#[derive(Default)]
struct Tally {
    /// Writes are confined ([`confine_writes`]), so the wrappers run for real.
    confined: bool,
    run: u64,
    refused: u64,
    skipped: u64,
    timed_out: u64,
    executed: u64,
    disagreements: Vec<String>,
}

fn check(tracer: &Tracer, command: &str, work: &Path, log: &Path, status: u8, t: &mut Tally) {
    let script = Script::parse(command, Shell::Bash);
    if script.unparseable || !script.hidden.is_empty() || script.beyond.is_some() {
        assert!(
            script.plain.is_none(),
            "understood but not judged: {command:?}"
        );
        t.refused += 1;
        return;
    }
    if writes_outside(command) {
        t.skipped += 1;
        return;
    }
    let (executed, timed_out) = tracer.run(command, work, log, status, t.confined);
    t.run += 1;
    t.timed_out += u64::from(timed_out);
    t.executed += executed.len() as u64;
    let plain = script.plain.as_ref().map(|p| {
        let mut all = Vec::new();
        allowed_runs(p, &mut all);
        all
    });
    // A shell a wrapper starts (`script -c`, `su -c`, `flock -c`) is where the string runs; the
    // commands it runs are traced and checked themselves.
    for e in executed
        .iter()
        .filter(|e| !matches!(e.program.as_str(), "bash" | "sh" | "dash"))
    {
        if !script
            .commands
            .iter()
            .flat_map(|f| f.runs())
            .any(|w| covers(w, e))
        {
            t.disagreements.push(format!(
                "deny rules never see `{} {}` run by {command:?}",
                e.program,
                e.args.join(" ")
            ));
        } else if let Some(plain) = &plain
            && !plain.iter().any(|w| covers(w, e))
        {
            t.disagreements.push(format!(
                "allow rules see something else than `{} {}` run by {command:?}",
                e.program,
                e.args.join(" ")
            ));
        }
    }
}

/// Runs every command of `work` on two threads (each with its own scratch directory, confined
/// by Landlock where it can be), and sums what they found.
fn run_all(tracer: &Tracer, work: &[(String, u8)]) -> Tally {
    let threads = 2;
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|n| {
                scope.spawn(move || {
                    let dir = tempfile::tempdir().unwrap();
                    let scratch = dir.path().join("work");
                    std::fs::create_dir(&scratch).unwrap();
                    let log = dir.path().join("log");
                    let mut t = Tally {
                        confined: confine_writes(&[dir.path(), tracer._dir.path()]),
                        ..Tally::default()
                    };
                    for (command, status) in work.iter().skip(n).step_by(threads) {
                        check(tracer, command, &scratch, &log, *status, &mut t);
                    }
                    t
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = Tally::default();
    for t in tallies {
        all.confined |= t.confined;
        all.run += t.run;
        all.refused += t.refused;
        all.skipped += t.skipped;
        all.timed_out += t.timed_out;
        all.executed += t.executed;
        all.disagreements.extend(t.disagreements);
    }
    all
}

#[test]
fn the_shell_runs_only_what_the_parser_found() {
    let cases: u64 = std::env::var("FERRITE_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let seed: u64 = std::env::var("FERRITE_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0xd1ff);
    let tracer = Tracer::new();
    // FERRITE_DIFF_FILE: only the commands of that file (one a line, written as the corpus writes
    // them), to look into a disagreement a large run found.
    let only = std::env::var("FERRITE_DIFF_FILE")
        .ok()
        .map(|f| std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{f}: {e}")));
    let corpus = match &only {
        Some(text) => corpus_lines(text),
        None => corpus(),
    };
    // The corpus with both answers (so both sides of `&&` / `||` run), then the generated set.
    let mut work: Vec<(String, u8)> = corpus
        .iter()
        .flat_map(|c| [(c.clone(), 0), (c.clone(), 1)])
        .collect();
    let cases = if only.is_some() { 0 } else { cases };
    work.extend(
        generated(cases, seed, &corpus)
            .into_iter()
            .enumerate()
            .map(|(i, c)| (c, (i % 2) as u8)),
    );
    let started = Instant::now();
    let all = run_all(&tracer, &work);
    let unique: BTreeSet<&String> = all.disagreements.iter().collect();
    println!(
        "differential: {} commands ({} corpus x2, {cases} generated, seed {seed:#x}) in {:.1} s: \
         {} run under bash ({} programs executed, {} timed out), {} refused by the parser, {} \
         skipped (they write outside the scratch directory), {} disagreements; wrappers run \
         for real: {}",
        work.len(),
        corpus.len(),
        started.elapsed().as_secs_f64(),
        all.run,
        all.executed,
        all.timed_out,
        all.refused,
        all.skipped,
        unique.len(),
        if all.confined {
            "yes (writes confined by Landlock)"
        } else {
            "no (Landlock unavailable: they are stubs)"
        }
    );
    let shown: Vec<&&String> = unique.iter().take(40).collect();
    assert!(
        unique.is_empty(),
        "{} disagreements between the parser and bash:\n{}",
        unique.len(),
        shown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
