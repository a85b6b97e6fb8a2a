//! Landlock: list directories everywhere; read and execute everywhere except the hidden paths;
//! write only under the writable roots (minus the hidden paths) and a few devices. Landlock is
//! unprivileged and needs no namespaces, so it also works in containers where bubblewrap cannot
//! create a user namespace; it applies to root too. It also keeps the command from `ptrace`-ing
//! (or reading `/proc/<pid>/environ` or `mem` of) any process outside its sandbox, the agent
//! included, and from mounting or unmounting anything.

use std::path::PathBuf;

use ::landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus, Scope, path_beneath_rules,
};

use super::carve::{Grant, canonical_existing, carve, resolved_prefix};
use super::{Network, Policy};

/// The newest ABI whose file-system rights we ask for (V5 added `IoctlDev`). Older kernels get
/// what they support (best effort); newer ABIs add nothing we use for files.
const FS_ABI: ABI = ABI::V5;

/// Devices every command may write to, even one that may write nowhere else (`plan` mode):
/// shells redirect to `/dev/null` all the time. Not `/dev/tty`: commands have no controlling
/// terminal (the helper starts a new session), and a terminal is a way to type into the user's
/// shell (TIOCSTI).
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Writable in every mode that writes at all: where POSIX semaphores and shared memory live
/// (Python's multiprocessing needs it), and pseudo-terminals (`script`, `expect`, test suites of
/// terminal programs). Not in `plan`, which writes nowhere. `TIOCSTI` stays refused (seccomp).
const WRITING_MODE_DEVICES: &[&str] = &["/dev/shm", "/dev/ptmx", "/dev/pts"];

pub(super) fn restrict(policy: &Policy) -> Result<(), String> {
    let status = ruleset(policy).map_err(|err| format!("could not set up Landlock: {err}"))?;
    match status {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        RulesetStatus::NotEnforced => Err(
            "Landlock is not enforced by this kernel (it needs Linux 5.13+ with `landlock` in the \
             boot-time LSM list), so writes cannot be confined to the workspace"
                .to_owned(),
        ),
    }
}

fn ruleset(policy: &Policy) -> Result<RulesetStatus, RulesetError> {
    // Signals: a sandboxed command must not kill or stop processes outside its sandbox (ABI 6),
    // the helper that will kill its whole process tree included.
    // Abstract UNIX sockets reach the user's daemons (D-Bus, X11) and local proxies, network on
    // or off. The supervisor's connect broker refuses them already (`connect_filter.rs`); this
    // also covers what does not go through `connect()`.
    let scopes: BitFlags<Scope> = Scope::Signal | Scope::AbstractUnixSocket;
    let all = AccessFs::from_all(FS_ABI);
    let read_files = AccessFs::from_read(FS_ABI) & !AccessFs::ReadDir;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        .scope(scopes)?;
    if policy.network == Network::Off {
        // Defence in depth next to seccomp: with no `NetPort` rule, TCP bind/connect are denied
        // (ABI 4+). seccomp also covers UDP, raw sockets and other families.
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4))?;
    }
    let hidden = canonical_existing(&policy.hidden);
    let mut devices: Vec<&str> = WRITABLE_DEVICES.to_vec();
    if !policy.read_only() {
        devices.extend(WRITING_MODE_DEVICES);
    }
    let mut created = ruleset
        .create()?
        // Names may be listed everywhere, hidden directories included: only their contents are
        // secret. Granting `ReadDir` per branch would make `ls ~` fail whenever `~/.ssh` is hidden.
        .add_rules(path_beneath_rules(["/"], AccessFs::ReadDir))?
        .add_rules(grants(carve(&[PathBuf::from("/")], &hidden), read_files))?
        .add_rules(path_beneath_rules(devices, all))?;
    // Hidden and protected paths win over writable roots (FERRITE_HOME inside the workspace
    // stays untouchable; `.claude/hooks` stays as the user trusted it).
    let mut kept = hidden.clone();
    kept.extend(resolved_prefix(&policy.protected));
    created = created.add_rules(grants(carve(&policy.writable, &kept), all))?;
    Ok(created.restrict_self()?.ruleset)
}

/// Rules granting `access` on each of `grants` (only the file rights for a file: Landlock refuses
/// directory rights on a non-directory).
fn grants(
    grants: Vec<Grant>,
    access: BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<PathBeneath<std::fs::File>, RulesetError>> {
    grants.into_iter().map(move |grant| {
        let access = if !grant.is_dir {
            access & AccessFs::from_file(FS_ABI)
        } else if grant.no_new_dirs {
            access & !(AccessFs::MakeDir | AccessFs::MakeSym)
        } else {
            access
        };
        Ok(PathBeneath::new(grant.fd, access))
    })
}
