//! ferrite-policy: what Ferrite lets a tool call do, decided without doing it.
//!
//! Owns the permission policy ([`permissions`]: modes, rules, the bash grammar and its wrappers,
//! the "always" answers), path resolution ([`paths`]), the protected files ([`protected`]), the
//! vocabulary they decide on ([`access`], [`modes`], [`shell`]) and the owner-only file modes of
//! Ferrite's own files ([`private_fs`], which the stored rules are written with).
//!
//! Pure decisions: no I/O beyond reading what a decision needs (and writing the stored rules),
//! no async runtime, no process spawning. It must not depend on any other Ferrite crate: the
//! security boundary is a compile-time boundary, and everything above it (core, extensions,
//! store) points down here, never the other way. Asking the user is the caller's job (core's
//! `Approver`).

pub mod access;
pub mod modes;
pub mod paths;
pub mod permissions;
pub mod private_fs;
pub mod protected;
pub mod shell;
