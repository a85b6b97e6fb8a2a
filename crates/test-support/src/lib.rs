//! Shared test fakes.
