//! How the helper processes (`helper`, `supervisor`) report that they could not set a command up:
//! an exit code and a stderr prefix the runner tells apart from the command's own output. A leaf,
//! so the helper and the supervisor it starts do not import each other for it.

use std::io::Write;
use std::process::ExitCode;

/// How a helper that could not set the sandbox up starts its message on stderr, so the runner can
/// tell that failure from the command's own output and report `SandboxUnavailable`.
pub(crate) const SETUP_FAILURE_PREFIX: &str = "ferrite sandbox: cannot enforce the sandbox: ";

/// The helper's exit code when the sandbox could not be set up (as `env` and `nice` use 125 for
/// their own failures); 126 and 127 keep their shell meanings for the command.
pub(crate) const SETUP_FAILURE_CODE: u8 = 125;

pub(crate) fn fail(code: u8, message: &str) -> ExitCode {
    // stderr is the command's stderr pipe: the runner reads this like any output.
    let _ = writeln!(std::io::stderr(), "{message}");
    ExitCode::from(code)
}
