//! The one integration-test binary of ferrite-exec: real processes, no mocks.

// Test helpers outside `#[test]` functions may unwrap and print too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod suite;
