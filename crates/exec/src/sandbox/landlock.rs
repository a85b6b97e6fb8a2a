//! Landlock: read and execute everywhere, write only under the writable roots and a few devices.
//! Landlock is unprivileged and needs no namespaces, so it also works in containers where
//! bubblewrap cannot create a user namespace; it applies to root too.

use std::path::PathBuf;

use ::landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError, RulesetStatus, Scope, path_beneath_rules,
};

use super::Network;

/// The newest ABI whose file-system rights we ask for (V5 added `IoctlDev`). Older kernels get
/// what they support (best effort); newer ABIs add nothing we use for files.
const FS_ABI: ABI = ABI::V5;

/// Devices every command may write to, even one that may write nowhere else (`plan` mode):
/// shells redirect to `/dev/null` all the time, and `/dev/shm` is where POSIX semaphores and
/// shared memory live (Python's multiprocessing needs it).
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

pub(super) fn restrict(writable: &[PathBuf], network: Network) -> Result<(), String> {
    let status =
        ruleset(writable, network).map_err(|err| format!("could not set up Landlock: {err}"))?;
    match status {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        RulesetStatus::NotEnforced => Err(
            "Landlock is not enforced by this kernel (it needs Linux 5.13+ with `landlock` in the \
             boot-time LSM list), so writes cannot be confined to the workspace"
                .to_owned(),
        ),
    }
}

fn ruleset(writable: &[PathBuf], network: Network) -> Result<RulesetStatus, RulesetError> {
    // Signals: a sandboxed command must not kill or stop processes outside its sandbox (ABI 6).
    // Abstract UNIX sockets are a way around "network off" (a local proxy listening on one).
    let scopes: BitFlags<Scope> = match network {
        Network::On => Scope::Signal.into(),
        Network::Off => Scope::Signal | Scope::AbstractUnixSocket,
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(FS_ABI))?
        .scope(scopes)?;
    if network == Network::Off {
        // Defence in depth next to seccomp: with no `NetPort` rule, TCP bind/connect are denied
        // (ABI 4+). seccomp also covers UDP, raw sockets and other families.
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4))?;
    }
    let status = ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(FS_ABI)))?
        .add_rules(path_beneath_rules(
            WRITABLE_DEVICES,
            AccessFs::from_all(FS_ABI),
        ))?
        // Paths that do not exist are skipped: nothing can be written there anyway, since
        // creating them would need write access to a parent.
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(FS_ABI)))?
        .restrict_self()?;
    Ok(status.ruleset)
}
