//! End-to-end tests: the real `ferrite` binary driven as an editor would drive it.

mod suite;
