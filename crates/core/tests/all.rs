//! In-process tests of ferrite-core: sessions and turns driven through the public `Runtime` API
//! with a scripted model (no HTTP, no binary). They assert what an editor would see.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
