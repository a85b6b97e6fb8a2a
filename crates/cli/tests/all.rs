//! End-to-end tests: the real `ferrite` binary driven as an editor would drive it.

// The shared helpers are test code but not #[test] functions, which clippy.toml's allowances
// cover; allow the same here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
