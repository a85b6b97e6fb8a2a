//! The one integration-test binary of ferrite-exec: real processes, no mocks.

// Test helpers outside `#[test]` functions may unwrap and print too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

// Real Unix processes throughout; Windows' job objects are covered by CI on Windows
// (`cargo test` there runs the crate's unit tests).
#[cfg(unix)]
mod suite;
