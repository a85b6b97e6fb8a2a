//! `fake-provider` (`[[bin]]` of ferrite-test-support): the fake model server as a standalone process, for benchmarks and manual
//! runs. Prints its origin (`http://127.0.0.1:PORT`) on stdout, then serves until killed.
//!
//! ```text
//! fake-provider [--port P] [--text-deltas N] [--gap-ms MS] [--stamp] [--script FILE]
//! ```
//! `--text-deltas N` answers every request with N small text deltas (default 16), `--gap-ms`
//! apart (default 0); `--stamp` makes each of those deltas `ts=<send time in ns> ` (latency
//! benchmarks); `GET /_fake/timings` lists when each model call arrived and was answered;
//! `POST /_fake/push` with a [`Script`] queues it for the next model call (before the fallback);
//! `--script FILE` answers every request with the JSON [`Script`] in FILE
//! (`{"steps":[{"type":"text","text":"hi"},{"type":"tool_call","id":"c1","name":"read","args_json":"{}"}]}`).
//! Point an Anthropic provider at the origin, OpenAI providers at origin + `/v1`.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use ferrite_test_support::fake_provider::{FakeProvider, STAMP_MARKER, Script};

fn usage() -> ExitCode {
    let _ = writeln!(
        std::io::stderr(),
        "usage: fake-provider [--port P] [--text-deltas N] [--gap-ms MS] [--stamp] [--script FILE]"
    );
    ExitCode::from(2)
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut port: u16 = 0;
    let mut script = None;
    let mut deltas: usize = 16;
    let mut gap_ms: u64 = 0;
    let mut stamp = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--stamp" {
            stamp = true;
            continue;
        }
        let value = args.next();
        match (arg.as_str(), value) {
            ("--port", Some(v)) => match v.parse() {
                Ok(p) => port = p,
                Err(_) => return usage(),
            },
            ("--text-deltas", Some(v)) => match v.parse() {
                Ok(n) => deltas = n,
                Err(_) => return usage(),
            },
            ("--gap-ms", Some(v)) => match v.parse() {
                Ok(n) => gap_ms = n,
                Err(_) => return usage(),
            },
            ("--script", Some(path)) => {
                let parsed = std::fs::read_to_string(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|text| {
                        serde_json::from_str::<Script>(&text).map_err(|e| e.to_string())
                    });
                match parsed {
                    Ok(s) => script = Some(s),
                    Err(e) => {
                        let _ = writeln!(std::io::stderr(), "fake-provider: {path}: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            _ => return usage(),
        }
    }
    let script = script.unwrap_or_else(|| {
        let gap = Duration::from_millis(gap_ms);
        (0..deltas)
            .fold(Script::new(), |s, i| {
                let s = if i > 0 && gap_ms > 0 { s.stall(gap) } else { s };
                s.text(if stamp {
                    format!("{STAMP_MARKER} ")
                } else {
                    format!("tok{i} ")
                })
            })
            .usage(100, deltas as u64, 0)
    });
    let mut fake = match FakeProvider::start_on(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await
    {
        Ok(fake) => fake,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "fake-provider: cannot listen: {e}");
            return ExitCode::FAILURE;
        }
    };
    fake.set_fallback(script);
    fake.set_stamp(stamp);
    // stdout carries only the origin, so a harness can read one line and go.
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{}", fake.base_url())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    drop(stdout);
    fake.wait().await;
    ExitCode::SUCCESS
}
