//! (`mod.rs` rather than `suite.rs`: cargo would build a `tests/suite.rs` as a test binary of its
//! own.)

mod common;
// The Linux implementations (subreaper, Landlock, seccomp) and what they guarantee.
#[cfg(target_os = "linux")]
mod escape;
#[cfg(target_os = "linux")]
mod kill;
#[cfg(target_os = "linux")]
mod output;
// The process-group supervisor and the Seatbelt/no-sandbox backends: every Unix, Linux included.
mod portable;
#[cfg(target_os = "linux")]
mod sandbox;
