//! The one integration-test binary of ferrite-llm.

// clippy.toml allows these in #[test] functions only; the shared helpers here are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferrite_test_support::fake_provider;

mod suite;
