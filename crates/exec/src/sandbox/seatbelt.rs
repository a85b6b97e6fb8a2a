//! The macOS sandbox: Seatbelt, through `/usr/bin/sandbox-exec -p PROFILE -- PROGRAM…`. The
//! helper's second stage `exec`s sandbox-exec instead of the command (see `helper.rs`); the
//! kernel then enforces the profile on the command and everything it starts.
//!
//! The profile is generated here from the [`Policy`], by pure functions that are compiled and
//! unit-tested on every platform (only macOS can run the result). It denies by default and allows:
//! - running programs and forking, signals and process queries within the sandbox only;
//! - reading everywhere except the hidden paths (FERRITE_HOME, `sandbox.deny_read`), whose own
//!   metadata stays visible (their names show in listings anyway);
//! - writing (data and metadata alike) only under the writable roots minus the hidden paths, and
//!   to a few devices; in `plan` mode nowhere but those devices;
//! - the system lookups every program makes (sysctl, user and group names, logging);
//! - the network only when the policy says so.
//!
//! Exclusions are `require-not` filters inside the allowing rule rather than separate `deny`
//! rules, so the outcome never depends on how Seatbelt ranks competing rules.
//!
//! Seatbelt matches resolved paths (`/tmp` is `/private/tmp`), so the caller hands in each path
//! both as given and resolved ([`with_resolved`]).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{Network, Policy};

/// Where macOS keeps sandbox-exec. Never looked up on `PATH`: a planted `sandbox-exec` would
/// run the command unconfined.
pub(crate) const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// Shared temp directories writable wherever anything is (as `/tmp` is through the writable roots
/// on Linux): scripts write to `/tmp` directly even though macOS gives each user a `$TMPDIR`.
const SHARED_TEMP: &[&str] = &["/private/tmp", "/private/var/tmp"];

/// Devices every command may write to, `plan` mode included: shells redirect to them all the time.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"];

/// Mach services that ordinary programs need: user and group names (`id`, `git`, `ls -l`), the
/// system log, notifications (libc's time zone changes) and preferences.
const SYSTEM_SERVICES: &[&str] = &[
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.opendirectoryd.membership",
    "com.apple.system.logger",
    "com.apple.system.notification_center",
    "com.apple.logd",
    "com.apple.cfprefsd.daemon",
    "com.apple.cfprefsd.agent",
];

/// Mach services behind name resolution and TLS certificate checks: only with the network on.
const NETWORK_SERVICES: &[&str] = &[
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.SystemConfiguration.configd",
    "com.apple.dnssd.service",
    "com.apple.networkd",
    "com.apple.trustd",
    "com.apple.trustd.agent",
    "com.apple.ocspd",
];

/// The argv that runs `command` (program and arguments) confined by `policy`: sandbox-exec with
/// the generated profile. An error when a path cannot be written into a profile.
pub(crate) fn command_line(policy: &Policy, command: &[OsString]) -> Result<Vec<OsString>, String> {
    let profile = profile(&with_resolved(policy))?;
    let mut argv = vec![
        OsString::from(SANDBOX_EXEC),
        "-p".into(),
        profile.into(),
        "--".into(),
    ];
    argv.extend(command.iter().cloned());
    Ok(argv)
}

/// `policy` with each path also in its resolved form (`/tmp/x` → `/private/tmp/x`, symlinked
/// home directories), and the shared temp directories writable when anything is.
pub(crate) fn with_resolved(policy: &Policy) -> Policy {
    let both = |paths: &[PathBuf]| -> Vec<PathBuf> {
        let mut out = Vec::new();
        for path in paths {
            push_unique(&mut out, path.clone());
            if let Ok(real) = std::fs::canonicalize(path) {
                push_unique(&mut out, real);
            }
        }
        out
    };
    let mut writable = both(&policy.writable);
    if !policy.read_only() {
        for temp in SHARED_TEMP {
            push_unique(&mut writable, PathBuf::from(temp));
        }
    }
    Policy {
        writable,
        hidden: both(&policy.hidden),
        protected: both(&policy.protected),
        network: policy.network,
        unix_sockets: policy.unix_sockets.clone(),
    }
}

fn push_unique(paths: &mut Vec<PathBuf>, path: PathBuf) {
    if !paths.contains(&path) {
        paths.push(path);
    }
}

/// The Seatbelt profile (SBPL) enforcing `policy`, whose paths must already be absolute and
/// resolved. Pure: the same policy always gives the same text.
pub(crate) fn profile(policy: &Policy) -> Result<String, String> {
    let hidden = filters("subpath", &policy.hidden)?;
    let mut sb = String::new();
    sb.push_str("(version 1)\n(deny default)\n");
    sb.push_str("(allow process-fork)\n(allow process-exec)\n");
    sb.push_str("(allow signal (target same-sandbox))\n");
    sb.push_str("(allow process-info* (target same-sandbox))\n");
    sb.push_str("(allow sysctl-read)\n(allow user-preference-read)\n");
    sb.push_str("(allow ipc-posix-sem)\n(allow ipc-posix-shm)\n");
    let _ = writeln!(sb, "(allow mach-lookup{})", global_names(SYSTEM_SERVICES));

    // Reading.
    if hidden.is_empty() {
        sb.push_str("(allow file-read*)\n");
    } else {
        let _ = writeln!(sb, "(allow file-read* (require-not (require-any{hidden})))");
        let own = filters("literal", &policy.hidden)?;
        let _ = writeln!(sb, "(allow file-read-metadata (require-any{own}))");
    }

    // Writing.
    let devices: Vec<PathBuf> = WRITABLE_DEVICES.iter().map(PathBuf::from).collect();
    let _ = writeln!(
        sb,
        "(allow file-write-data file-ioctl (require-any{}))",
        filters("literal", &devices)?
    );
    if !policy.read_only() {
        let roots = filters("subpath", &policy.writable)?;
        let mut kept: Vec<PathBuf> = policy.hidden.clone();
        kept.extend(policy.protected.iter().cloned());
        let kept = filters("subpath", &kept)?;
        if kept.is_empty() {
            let _ = writeln!(sb, "(allow file-write* (require-any{roots}))");
        } else {
            let _ = writeln!(
                sb,
                "(allow file-write* (require-all (require-any{roots}) (require-not (require-any{kept}))))"
            );
        }
    }

    // Network.
    match policy.network {
        Network::On => {
            sb.push_str("(allow network*)\n(allow system-socket)\n");
            let _ = writeln!(sb, "(allow mach-lookup{})", global_names(NETWORK_SERVICES));
        }
        // Denied by default; local socket pairs need no rule (they are not `network*`).
        Network::Off => {}
    }
    Ok(sb)
}

/// ` (KIND "path")` for each path, as SBPL filters.
fn filters(kind: &str, paths: &[PathBuf]) -> Result<String, String> {
    let mut out = String::new();
    for path in paths {
        let _ = write!(out, " ({kind} {})", quote(path)?);
    }
    Ok(out)
}

fn global_names(names: &[&str]) -> String {
    names.iter().fold(String::new(), |mut out, name| {
        let _ = write!(out, " (global-name \"{name}\")");
        out
    })
}

/// `path` as an SBPL string literal. A path that is not absolute, not UTF-8 or holds a NUL
/// cannot be matched faithfully: an error, so the command is refused rather than run with a rule
/// that names some other path.
fn quote(path: &Path) -> Result<String, String> {
    let text = path
        .to_str()
        .ok_or_else(|| format!("the path {} is not UTF-8", path.display()))?;
    if !path.is_absolute() || text.contains('\0') {
        return Err(format!(
            "cannot write the path {text:?} into a Seatbelt profile"
        ));
    }
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    Ok(quoted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn policy(writable: &[&str], hidden: &[&str], network: Network) -> Policy {
        Policy {
            writable: writable.iter().map(PathBuf::from).collect(),
            hidden: hidden.iter().map(PathBuf::from).collect(),
            protected: vec![],
            network,
            unix_sockets: vec![],
        }
    }

    fn rules(profile: &str, head: &str) -> Vec<String> {
        profile
            .lines()
            .filter(|line| line.starts_with(head))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn writes_are_confined_to_the_roots_minus_the_hidden_paths() {
        let p = profile(&policy(
            &["/Users/me/project", "/private/tmp"],
            &["/Users/me/.ferrite", "/Users/me/.ssh"],
            Network::Off,
        ))
        .unwrap();
        assert!(p.starts_with("(version 1)\n(deny default)\n"));
        assert_eq!(
            rules(&p, "(allow file-write* "),
            vec![
                "(allow file-write* (require-all (require-any (subpath \"/Users/me/project\") \
                 (subpath \"/private/tmp\")) (require-not (require-any (subpath \
                 \"/Users/me/.ferrite\") (subpath \"/Users/me/.ssh\")))))"
                    .to_owned()
            ]
        );
        assert_eq!(
            rules(&p, "(allow file-read"),
            vec![
                "(allow file-read* (require-not (require-any (subpath \"/Users/me/.ferrite\") \
                 (subpath \"/Users/me/.ssh\"))))"
                    .to_owned(),
                "(allow file-read-metadata (require-any (literal \"/Users/me/.ferrite\") \
                 (literal \"/Users/me/.ssh\")))"
                    .to_owned(),
            ]
        );
    }

    #[test]
    fn plan_mode_writes_only_to_devices() {
        let p = profile(&policy(&[], &["/Users/me/.ferrite"], Network::Off)).unwrap();
        assert_eq!(rules(&p, "(allow file-write* ").len(), 0);
        assert_eq!(
            rules(&p, "(allow file-write-data"),
            vec![
                "(allow file-write-data file-ioctl (require-any (literal \"/dev/null\") (literal \
                 \"/dev/zero\") (literal \"/dev/random\") (literal \"/dev/urandom\")))"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn network_is_allowed_only_when_the_policy_says_so() {
        let off = profile(&policy(&["/w"], &[], Network::Off)).unwrap();
        assert!(!off.contains("network"), "{off}");
        assert!(!off.contains("trustd"), "{off}");
        let on = profile(&policy(&["/w"], &[], Network::On)).unwrap();
        assert!(on.contains("(allow network*)\n"), "{on}");
        assert!(
            on.contains("(global-name \"com.apple.trustd.agent\")"),
            "{on}"
        );
        // Nothing hidden: reading is allowed everywhere, with no empty `require-any`.
        assert!(on.contains("(allow file-read*)\n"), "{on}");
        assert!(!on.contains("(require-any)"), "{on}");
    }

    #[test]
    fn quotes_and_backslashes_cannot_end_the_string() {
        let p = profile(&policy(&["/w/a\"b\\c) (allow default"], &[], Network::Off)).unwrap();
        assert!(
            p.contains(r#"(subpath "/w/a\"b\\c) (allow default")"#),
            "{p}"
        );
        assert!(!p.contains("\n(allow default"), "{p}");
    }

    #[test]
    fn relative_and_non_utf8_paths_are_refused() {
        assert!(profile(&policy(&["project"], &[], Network::Off)).is_err());
        assert!(profile(&policy(&["/w"], &["/a\0b"], Network::Off)).is_err());
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let bad = PathBuf::from(std::ffi::OsStr::from_bytes(b"/w/\xff"));
            let p = Policy {
                writable: vec![bad],
                hidden: vec![],
                protected: vec![],
                network: Network::Off,
                unix_sockets: vec![],
            };
            assert!(profile(&p).is_err());
        }
    }

    #[test]
    fn resolved_forms_and_shared_temp_are_added() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let p = with_resolved(&policy(&[dir.path().to_str().unwrap()], &[], Network::On));
        assert!(p.writable.contains(&real));
        assert!(p.writable.contains(&PathBuf::from("/private/tmp")));
        // `plan` stays read-only: no temp directory sneaks in.
        let plan = with_resolved(&policy(&[], &["/nonexistent/hidden"], Network::Off));
        assert!(plan.writable.is_empty());
        assert_eq!(plan.hidden, vec![PathBuf::from("/nonexistent/hidden")]);
    }

    #[test]
    fn the_command_runs_under_sandbox_exec_by_absolute_path() {
        let argv = command_line(
            &policy(&["/w"], &[], Network::Off),
            &["/bin/bash".into(), "-c".into(), "ls".into()],
        )
        .unwrap();
        assert_eq!(argv[0], "/usr/bin/sandbox-exec");
        assert_eq!(argv[1], "-p");
        assert!(argv[2].to_str().unwrap().starts_with("(version 1)"));
        assert_eq!(
            &argv[3..],
            ["--", "/bin/bash", "-c", "ls"].map(OsString::from)
        );
    }
}
