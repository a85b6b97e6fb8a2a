//! ferrite-policy: what Ferrite lets a tool call do, decided without doing it.
//!
//! Owns the permission policy ([`permissions`]: modes, rules, the bash grammar and its wrappers,
//! the "always" answers), path resolution ([`paths`]), the protected files ([`protected`]), the
//! vocabulary they decide on ([`access`], [`modes`], [`shell`]), and the two places where a
//! decision meets the file system: [`fsops`] opens exactly the path that was decided on, and
//! [`own_files`] reads the files Ferrite reads for itself under the same rules. The owner-only
//! file modes of Ferrite's own files ([`private_fs`]) live here too: the stored rules are
//! written with them.
//!
//! Pure decisions: no I/O beyond reading what a decision needs (and writing the stored rules;
//! `fsops` carries out, path by path, the file changes the tools were allowed),
//! no async runtime, no process spawning. It must not depend on any other Ferrite crate: the
//! security boundary is a compile-time boundary, and everything above it (core, extensions,
//! store) points down here, never the other way. Asking the user is the caller's job (core's
//! `Approver`).

pub mod access;
#[cfg(unix)]
pub mod fsops;
// No `openat` on Windows: the same API over path checks (weaker against races, see the file).
#[cfg(windows)]
#[path = "fsops_windows.rs"]
pub mod fsops;
pub mod modes;
pub mod own_files;
pub mod paths;
pub mod permissions;
pub mod private_fs;
pub mod protected;
pub mod shell;
