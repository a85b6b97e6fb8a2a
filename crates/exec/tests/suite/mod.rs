//! (`mod.rs` rather than `suite.rs`: cargo would build a `tests/suite.rs` as a test binary of its
//! own.)

mod common;
mod escape;
mod kill;
mod output;
mod sandbox;
