//! A stand-in for the `ferrite` binary's sandbox-helper mode, for this crate's tests.

use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if ferrite_exec::is_sandbox_helper_invocation(&args) {
        return ferrite_exec::sandbox_helper_main(&args);
    }
    ExitCode::from(2)
}
