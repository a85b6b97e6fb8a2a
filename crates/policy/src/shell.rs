//! Which shell runs commands. Its own module because two layers need it: the `CommandRunner`
//! port (`crate::exec`) says which shell it runs, and the permission rules
//! (`crate::permissions`) read a command with that shell's grammar.

/// The shell that runs commands. The permission rules read a command with bash's grammar, so
/// what they decide holds only for bash: under any other shell (dash, busybox `ash`, ...) allow
/// rules for commands match nothing (every command asks) and constructs the two read
/// differently (`&>`, `|&`, `((`, ...) count as hiding what runs (`docs/permissions.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    /// A POSIX `sh` that is not bash.
    Sh,
}
