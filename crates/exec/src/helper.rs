//! The sandbox helper: the `ferrite` binary re-executed, in two stages.
//!
//! 1. `ferrite __sandbox --parent PID [POLICY] -- PROGRAM [ARG]...` is the *supervisor* the agent
//!    spawns for every command (sandboxed or not). It starts a new session (no controlling
//!    terminal), dies with the agent (`PR_SET_PDEATHSIG`), becomes a child subreaper so that
//!    nothing the command starts can leave its process tree (`setsid` and double forks end up
//!    as its children), and kills that whole tree when asked, when the agent dies, and when the
//!    command ends (see `supervisor.rs`). It stays unsandboxed: a sandboxed command cannot
//!    signal or trace it (Landlock's scopes), so it cannot stop it from cleaning up.
//! 2. `ferrite __sandbox-exec --parent PID [POLICY] -- PROGRAM [ARG]...` is its child: it dies
//!    with the supervisor, restricts itself (Landlock, seccomp) unless `--unrestricted`, and
//!    `exec`s PROGRAM, which inherits the restrictions.
//!
//! POLICY is `--unrestricted` (`full` mode) or `--sandbox BACKEND [--write DIR]... [--hide PATH]...
//! [--no-network]`; `--tree group|subreaper` says how the supervisor contains the tree (see
//! `platform.rs`). On macOS the supervisor keeps the command in a process group of its own instead
//! of being a subreaper, and the second stage `exec`s `sandbox-exec` with a Seatbelt profile.
//! Doing all this in fresh single-threaded processes, rather than in `pre_exec` of the
//! multi-threaded agent, keeps allocation and thread-safety trouble out of the fork path and the
//! agent itself unrestricted.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::platform::{ProcessTree, SandboxBackend};
use crate::sandbox::{self, Network, Policy};
use crate::supervisor;

/// `argv[1]` of the supervisor. Not a real subcommand: users never type it.
pub(crate) const HELPER_ARG: &str = "__sandbox";

/// `argv[1]` of the supervisor's child, which sandboxes itself and runs the command.
const EXEC_ARG: &str = "__sandbox-exec";

pub(crate) use crate::setup_failure::{SETUP_FAILURE_CODE, SETUP_FAILURE_PREFIX, fail};

/// What runs the command: the sandbox policy, or nothing but process containment (`full`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Confinement {
    Unrestricted,
    Sandboxed(Policy, SandboxBackend),
}

/// A parsed helper command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invocation {
    /// The process that started this one: the helper dies with it.
    pub(crate) parent: i32,
    pub(crate) tree: ProcessTree,
    pub(crate) confinement: Confinement,
    /// The second stage's channel to the supervisor's connect broker (a descriptor it
    /// inherited), sandboxed Linux commands only.
    pub(crate) broker_fd: Option<i32>,
    pub(crate) command: Vec<OsString>,
}

/// Whether this process was started as the sandbox helper (`args` is the whole argv, as from
/// `std::env::args_os()`). The `ferrite` binary checks this before anything else — before parsing
/// arguments, starting a runtime or a logger — and then calls [`sandbox_helper_main`].
pub fn is_sandbox_helper_invocation(args: &[OsString]) -> bool {
    args.get(1)
        .is_some_and(|arg| arg == HELPER_ARG || arg == EXEC_ARG)
}

/// Runs the sandbox helper (either stage, see the module docs). Returns the command's exit status
/// (the supervisor), or only when starting the command failed (the second stage): 125 if the
/// sandbox could not be enforced (nothing was run), 126/127 if the command could not be executed.
pub fn sandbox_helper_main(args: &[OsString]) -> ExitCode {
    let invocation = match parse(args) {
        Ok(parsed) => parsed,
        Err(err) => return fail(SETUP_FAILURE_CODE, &format!("{SETUP_FAILURE_PREFIX}{err}")),
    };
    if args.get(1).is_some_and(|arg| arg == HELPER_ARG) {
        // The same invocation for the second stage, whose parent is this supervisor.
        let me = std::process::id();
        let command: Vec<&OsStr> = invocation.command.iter().map(OsString::as_os_str).collect();
        let mut stage_two = helper_args(me, invocation.tree, &invocation.confinement, &command);
        stage_two[0] = OsString::from(EXEC_ARG);
        supervisor::run(
            invocation.parent,
            invocation.tree,
            &stage_two,
            socket_rules(&invocation.confinement),
        )
    } else {
        exec_confined(&invocation)
    }
}

/// What the supervisor's connect broker enforces: only for Landlock (Linux) sandboxes.
#[cfg(target_os = "linux")]
fn socket_rules(confinement: &Confinement) -> Option<supervisor::SocketRules> {
    match confinement {
        Confinement::Sandboxed(policy, SandboxBackend::Landlock) => {
            Some(supervisor::SocketRules::starting_now(
                &policy.writable,
                &policy.hidden,
                &policy.unix_sockets,
            ))
        }
        _ => None,
    }
}

#[cfg(not(target_os = "linux"))]
fn socket_rules(_confinement: &Confinement) -> Option<supervisor::SocketRules> {
    None
}

/// The second stage: die with the supervisor, restrict, `exec`.
fn exec_confined(invocation: &Invocation) -> ExitCode {
    supervisor::unblock_all_signals();
    if let Err(err) = supervisor::die_with_parent(invocation.tree, invocation.parent) {
        return fail(SETUP_FAILURE_CODE, &format!("{SETUP_FAILURE_PREFIX}{err}"));
    }
    let command = match confine(
        &invocation.confinement,
        invocation.broker_fd,
        &invocation.command,
    ) {
        Ok(command) => command,
        Err(err) => return fail(SETUP_FAILURE_CODE, &format!("{SETUP_FAILURE_PREFIX}{err}")),
    };
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

/// Applies `confinement` to this process and returns the argv to `exec`: `command` itself
/// (Landlock, none), or `command` under sandbox-exec (Seatbelt).
fn confine(
    confinement: &Confinement,
    broker_fd: Option<i32>,
    command: &[OsString],
) -> Result<Vec<OsString>, String> {
    match confinement {
        Confinement::Unrestricted => Ok(command.to_vec()),
        Confinement::Sandboxed(policy, SandboxBackend::Landlock) => {
            sandbox::apply(policy, broker_fd)?;
            Ok(command.to_vec())
        }
        Confinement::Sandboxed(policy, SandboxBackend::Seatbelt) => {
            sandbox::seatbelt::command_line(policy, command)
        }
        Confinement::Sandboxed(_, SandboxBackend::Unsupported) => {
            Err("there is no command sandbox on this platform".to_owned())
        }
    }
}

/// The argv for running `command` confined by `confinement` through the helper (everything after
/// the helper executable itself); `parent` is the agent's pid.
pub(crate) fn helper_args(
    parent: u32,
    tree: ProcessTree,
    confinement: &Confinement,
    command: &[&OsStr],
) -> Vec<OsString> {
    let mut args = vec![
        OsString::from(HELPER_ARG),
        "--parent".into(),
        parent.to_string().into(),
        "--tree".into(),
        tree.arg().into(),
    ];
    match confinement {
        Confinement::Unrestricted => args.push("--unrestricted".into()),
        Confinement::Sandboxed(policy, backend) => {
            args.push("--sandbox".into());
            args.push(backend.arg().into());
            for dir in &policy.writable {
                args.push("--write".into());
                args.push(dir.clone().into_os_string());
            }
            for path in &policy.hidden {
                args.push("--hide".into());
                args.push(path.clone().into_os_string());
            }
            for path in &policy.protected {
                args.push("--protect".into());
                args.push(path.clone().into_os_string());
            }
            for path in &policy.unix_sockets {
                args.push("--unix-socket".into());
                args.push(path.clone().into_os_string());
            }
            match policy.network {
                Network::On => {}
                Network::Off => args.push("--no-network".into()),
            }
        }
    }
    args.push("--".into());
    args.extend(command.iter().map(|arg| arg.to_os_string()));
    args
}

/// The options that add a path to one of the policy's lists: the option, the message when its
/// path is missing, the list.
type PathList = fn(&mut Policy) -> &mut Vec<PathBuf>;
const PATH_OPTIONS: [(&str, &str, PathList); 4] = [
    ("--write", "`--write` needs a directory", |p| {
        &mut p.writable
    }),
    ("--hide", "`--hide` needs a path", |p| &mut p.hidden),
    ("--protect", "`--protect` needs a path", |p| {
        &mut p.protected
    }),
    ("--unix-socket", "`--unix-socket` needs a path", |p| {
        &mut p.unix_sockets
    }),
];

fn parse(args: &[OsString]) -> Result<Invocation, String> {
    let mut rest = args.iter().skip(2);
    let mut parent = None;
    let mut tree = None;
    let mut backend = None;
    let mut unrestricted = false;
    let mut policy = Policy {
        writable: Vec::new(),
        hidden: Vec::new(),
        protected: Vec::new(),
        network: Network::On,
        unix_sockets: Vec::new(),
    };
    let mut broker_fd = None;
    loop {
        let Some(arg) = rest.next() else {
            return Err("missing `--` before the command".to_owned());
        };
        let path_option = arg
            .to_str()
            .and_then(|a| PATH_OPTIONS.iter().find(|(name, ..)| *name == a));
        if let Some((_, needs, list)) = path_option {
            let path = rest.next().ok_or(*needs)?;
            list(&mut policy).push(PathBuf::from(path));
            continue;
        }
        match arg.to_str() {
            Some("--parent") => {
                let pid = rest.next().ok_or("`--parent` needs a pid")?;
                let pid = pid
                    .to_str()
                    .and_then(|p| p.parse::<i32>().ok())
                    .filter(|p| *p > 0)
                    .ok_or("`--parent` needs a pid")?;
                parent = Some(pid);
            }
            Some("--tree") => {
                let name = rest.next().and_then(|n| n.to_str()).unwrap_or_default();
                tree =
                    Some(ProcessTree::from_arg(name).ok_or("`--tree` needs group or subreaper")?);
            }
            Some("--sandbox") => {
                let name = rest.next().and_then(|n| n.to_str()).unwrap_or_default();
                backend = Some(SandboxBackend::from_arg(name).ok_or("unknown `--sandbox`")?);
            }
            Some("--unrestricted") => unrestricted = true,
            Some(supervisor::BROKER_FD_ARG) => {
                let fd = rest.next().and_then(|n| n.to_str()?.parse::<i32>().ok());
                broker_fd = Some(
                    fd.filter(|fd| *fd > 2)
                        .ok_or("`--broker-fd` needs a descriptor")?,
                );
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
    let parent = parent.ok_or("missing `--parent`")?;
    let tree = tree.ok_or("missing `--tree`")?;
    let confinement = if unrestricted {
        Confinement::Unrestricted
    } else {
        Confinement::Sandboxed(policy, backend.ok_or("missing `--sandbox`")?)
    };
    Ok(Invocation {
        parent,
        tree,
        confinement,
        broker_fd,
        command,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_args_round_trip() {
        let command = [
            OsStr::new("sh"),
            OsStr::new("-c"),
            OsStr::new("echo --write"),
        ];
        for confinement in [
            Confinement::Unrestricted,
            Confinement::Sandboxed(
                Policy {
                    writable: vec![PathBuf::from("/w one"), PathBuf::from("/tmp")],
                    hidden: vec![PathBuf::from("/root/.ssh")],
                    protected: vec![PathBuf::from("/w one/.claude")],
                    network: Network::Off,
                    unix_sockets: vec![PathBuf::from("/run/dev.sock")],
                },
                SandboxBackend::Seatbelt,
            ),
        ] {
            let mut argv = vec![OsString::from("ferrite")];
            argv.extend(helper_args(
                42,
                ProcessTree::ProcessGroup,
                &confinement,
                &command,
            ));
            assert!(is_sandbox_helper_invocation(&argv));
            let parsed = parse(&argv).unwrap();
            assert_eq!(parsed.parent, 42);
            assert_eq!(parsed.tree, ProcessTree::ProcessGroup);
            assert_eq!(parsed.confinement, confinement);
            assert_eq!(parsed.command, command.map(OsString::from).to_vec());
        }
    }

    #[test]
    fn bad_helper_args_are_errors() {
        let argv = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let group = |v: &[&str]| {
            let mut full = vec!["f", "__sandbox", "--parent", "1", "--tree", "group"];
            full.extend(v);
            argv(&full)
        };
        assert!(parse(&group(&["--unrestricted", "--", "sh"])).is_ok());
        // No `--tree`, an unknown one, or a sandbox without its backend.
        assert!(
            parse(&argv(&[
                "f",
                "__sandbox",
                "--parent",
                "1",
                "--unrestricted",
                "--",
                "sh"
            ]))
            .is_err()
        );
        assert!(
            parse(&argv(&[
                "f",
                "__sandbox",
                "--parent",
                "1",
                "--tree",
                "x",
                "--",
                "sh"
            ]))
            .is_err()
        );
        assert!(parse(&group(&["--write", "/w", "--", "sh"])).is_err());
        assert!(parse(&group(&["--sandbox", "bogus", "--", "sh"])).is_err());
        assert!(parse(&argv(&["f", "__sandbox", "--parent", "1", "--write"])).is_err());
        assert!(parse(&argv(&["f", "__sandbox", "--parent", "1", "sh"])).is_err());
        assert!(parse(&argv(&["f", "__sandbox", "--parent", "1", "--"])).is_err());
        assert!(parse(&argv(&["f", "__sandbox", "--", "sh"])).is_err());
        assert!(parse(&argv(&["f", "__sandbox", "--parent", "x", "--", "sh"])).is_err());
        assert!(
            parse(&argv(&[
                "f",
                "__sandbox",
                "--parent",
                "1",
                "--bogus",
                "--",
                "sh"
            ]))
            .is_err()
        );
        assert!(is_sandbox_helper_invocation(&argv(&[
            "f",
            "__sandbox-exec"
        ])));
        assert!(!is_sandbox_helper_invocation(&argv(&["f", "acp"])));
        assert!(!is_sandbox_helper_invocation(&argv(&["f"])));
    }
}
