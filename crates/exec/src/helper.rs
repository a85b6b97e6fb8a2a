//! The sandbox helper: the `ferrite` binary re-executed as
//! `ferrite __sandbox [--write DIR]... [--no-network] -- PROGRAM [ARG]...`.
//! It restricts itself (Landlock, seccomp) and then `exec`s PROGRAM, which inherits the
//! restrictions. Doing this in a fresh single-threaded process, rather than in `pre_exec` of the
//! multi-threaded agent, keeps allocation and thread-safety trouble out of the fork path and the
//! agent itself unrestricted.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::sandbox::{self, Network, Policy};

/// `argv[1]` of a helper invocation. Not a real subcommand: users never type it.
pub(crate) const HELPER_ARG: &str = "__sandbox";

/// How a helper that could not set the sandbox up starts its message on stderr, so the runner can
/// tell that failure from the command's own output and report `SandboxUnavailable`.
pub(crate) const SETUP_FAILURE_PREFIX: &str = "ferrite sandbox: cannot enforce the sandbox: ";

/// The helper's exit code when the sandbox could not be set up (as `env` and `nice` use 125 for
/// their own failures); 126 and 127 keep their shell meanings for the command.
pub(crate) const SETUP_FAILURE_CODE: u8 = 125;

/// Whether this process was started as the sandbox helper (`args` is the whole argv, as from
/// `std::env::args_os()`). The `ferrite` binary checks this before anything else — before parsing
/// arguments, starting a runtime or a logger — and then calls [`sandbox_helper_main`].
pub fn is_sandbox_helper_invocation(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|arg| arg == HELPER_ARG)
}

/// Runs the sandbox helper: applies the sandbox described by `args` (the whole argv) to this
/// process and `exec`s the command. Returns only when that fails: 125 if the sandbox could not be
/// enforced (nothing was run), 126/127 if the command could not be executed.
pub fn sandbox_helper_main(args: &[OsString]) -> ExitCode {
    let (policy, command) = match parse(args) {
        Ok(parsed) => parsed,
        Err(err) => return fail(SETUP_FAILURE_CODE, &format!("{SETUP_FAILURE_PREFIX}{err}")),
    };
    if let Err(err) = sandbox::apply(&policy) {
        return fail(SETUP_FAILURE_CODE, &format!("{SETUP_FAILURE_PREFIX}{err}"));
    }
    let Some((program, rest)) = command.split_first() else {
        return fail(
            SETUP_FAILURE_CODE,
            &format!("{SETUP_FAILURE_PREFIX}no command given"),
        );
    };
    // `exec` only returns on failure; stdio, cwd and environment are inherited as they are.
    let err = std::process::Command::new(program).args(rest).exec();
    let code = if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    fail(
        code,
        &format!(
            "ferrite sandbox: cannot run {}: {err}",
            program.to_string_lossy()
        ),
    )
}

/// The argv for running `command` under `policy` through the helper (everything after the
/// helper executable itself).
pub(crate) fn helper_args(policy: &Policy, command: &[&OsStr]) -> Vec<OsString> {
    let mut args = vec![OsString::from(HELPER_ARG)];
    for dir in &policy.writable {
        args.push("--write".into());
        args.push(dir.clone().into_os_string());
    }
    match policy.network {
        Network::On => {}
        Network::Off => args.push("--no-network".into()),
    }
    args.push("--".into());
    args.extend(command.iter().map(|arg| arg.to_os_string()));
    args
}

fn parse(args: &[OsString]) -> Result<(Policy, Vec<OsString>), String> {
    let mut rest = args.iter().skip(2);
    let mut policy = Policy {
        writable: Vec::new(),
        network: Network::On,
    };
    loop {
        let Some(arg) = rest.next() else {
            return Err("missing `--` before the command".to_owned());
        };
        match arg.to_str() {
            Some("--write") => {
                let dir = rest.next().ok_or("`--write` needs a directory")?;
                policy.writable.push(PathBuf::from(dir));
            }
            Some("--no-network") => policy.network = Network::Off,
            Some("--") => break,
            _ => return Err(format!("unknown argument {}", arg.to_string_lossy())),
        }
    }
    let command: Vec<OsString> = rest.cloned().collect();
    if command.is_empty() {
        return Err("no command given".to_owned());
    }
    Ok((policy, command))
}

fn fail(code: u8, message: &str) -> ExitCode {
    // stderr is the command's stderr pipe: the runner reads this like any output.
    let _ = writeln!(std::io::stderr(), "{message}");
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_args_round_trip() {
        let policy = Policy {
            writable: vec![PathBuf::from("/w one"), PathBuf::from("/tmp")],
            network: Network::Off,
        };
        let command = [
            OsStr::new("sh"),
            OsStr::new("-c"),
            OsStr::new("echo --write"),
        ];
        let mut argv = vec![OsString::from("ferrite")];
        argv.extend(helper_args(&policy, &command));
        assert!(is_sandbox_helper_invocation(&argv));
        let (parsed, cmd) = parse(&argv).unwrap();
        assert_eq!(parsed, policy);
        assert_eq!(cmd, command.map(OsString::from).to_vec());
    }

    #[test]
    fn bad_helper_args_are_errors() {
        let argv = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(parse(&argv(&["f", "__sandbox", "--write"])).is_err());
        assert!(parse(&argv(&["f", "__sandbox", "sh"])).is_err());
        assert!(parse(&argv(&["f", "__sandbox", "--"])).is_err());
        assert!(parse(&argv(&["f", "__sandbox", "--bogus", "--", "sh"])).is_err());
        assert!(!is_sandbox_helper_invocation(&argv(&["f", "acp"])));
        assert!(!is_sandbox_helper_invocation(&argv(&["f"])));
    }
}
