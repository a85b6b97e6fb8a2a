//! Runs ferrite's `grep` or `find` tool once, outside any agent, so `bench/grep_find.sh` can time
//! them against `rg`.
//!
//! Usage: `search grep|find '<json arguments>'`, e.g. `search grep '{"pattern": "fn main"}'`.

use std::io::Write as _;
use std::process::ExitCode;

use ferrite_core::tools::{find, grep};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [tool, json] => serde_json::from_str::<Value>(json).map(|v| (tool, v)),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "usage: search grep|find '<json arguments>'"
            );
            return ExitCode::from(2);
        }
    };
    let (tool, input) = match parsed {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "bad JSON arguments: {e}");
            return ExitCode::from(2);
        }
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let cancel = CancellationToken::new();
    let result = match tool.as_str() {
        "grep" => grep::run(input, &cwd, &Default::default(), &cancel),
        "find" => find::run(input, &cwd, &Default::default(), &cancel),
        other => {
            let _ = writeln!(std::io::stderr(), "unknown tool {other}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(text) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{e}");
            ExitCode::FAILURE
        }
    }
}
