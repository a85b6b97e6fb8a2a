//! Times one permission decision on a hostile command line, outside any agent, for
//! `bench/shell_bounds.sh`: the policy decision of any command must take ≤ 50 ms and ≤ 50 MB
//! (issue 34). Each run decides one shape (a fresh process, so the peak memory is that
//! decision's) in `full` mode with ten bash deny rules, and prints one line: shape, bytes,
//! decision, milliseconds (the slowest of `ROUNDS`), the peak memory the decision added, and
//! the CPU milliseconds of the slowest round by CPU.
//!
//! Usage: `shell_bounds SHAPE`, or `shell_bounds --list` for the shapes.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use ferrite_policy::access::Access;
use ferrite_policy::modes::{Harness, Mode};
use ferrite_policy::permissions::{Call, Decision, Rules, decide};
use ferrite_policy::shell::Shell;

const ROUNDS: usize = 3;

/// Just under the 64 KiB the rules read, the most work a line can ask for.
const NEAR: usize = 64 * 1024 - 16;

fn fill(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len())
}

fn nested(wrap: impl Fn(&str) -> String, limit: usize) -> String {
    let mut s = "rm -rf v".to_owned();
    loop {
        let next = wrap(&s);
        if next.len() > limit {
            return s;
        }
        s = next;
    }
}

fn shape(name: &str) -> Option<String> {
    let four_mb = 4 << 20;
    Some(match name {
        // Longer than the rules read: refused to read at once.
        "4mb-chain" => fill("rm -rf v; ", four_mb),
        "4mb-word" => fill("a", four_mb),
        "4mb-subst" => format!("{}x{}", fill("$(", four_mb / 2), fill(")", four_mb / 2)),
        // Just under the bound: every kind of work.
        "chain" => fill("rm -rf v; ", NEAR),
        "pipes" => fill("ls | ", NEAR),
        "one-command" => format!("echo {}", fill("ab ", NEAR - 5)),
        "unknown-program" => format!("frobnicate {}", fill("ab ", NEAR - 11)),
        "suffixes-of-rm" => format!("fakeroot {}-rf v", fill("rm ", NEAR - 14)),
        "wrappers" => format!("{}rm -rf v", fill("nice ", NEAR - 8)),
        "two-readings" => format!("{}rm -rf v", fill("exec -a x time -f y ", NEAR - 8)),
        "subst-deep" => format!("{}x{}", fill("$(", NEAR / 2), fill(")", NEAR / 2)),
        "subshell-deep" => format!("{}x{}", fill("(", NEAR / 2), fill(")", NEAR / 2)),
        "group-deep" => format!("{}x{}", fill("{ ", NEAR / 2), fill("; }", NEAR / 2)),
        "bash-c-nested" => nested(|s| format!("bash -c '{}'", s.replace('\'', "'\\''")), NEAR),
        "sh-c-dquoted" => nested(
            |s| format!("sh -c \"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
            NEAR,
        ),
        "bash-c-flat" => fill("bash -c 'bash -c \"rm -rf v\"'; ", NEAR),
        "env-split" => nested(|s| format!("env -S'{}'", s.replace('\'', "'\\''")), NEAR),
        "heredocs" => fill("cat <<E\nrm -rf v\nE\n", NEAR),
        "heredoc-continuations" => format!("cat <<EOF\n{}EOF\n", fill("a\\\n", NEAR - 20)),
        "quotes-unbalanced" => fill("'\"`", NEAR),
        "garbage" => fill(")(;}{|$(<<'\"`&&", NEAR),
        "case-arms" => format!("case x in {}esac", fill("a) rm -rf v;; ", NEAR - 20)),
        "strings-guessed" => format!("frobnicate {}", fill("'a b; c' ", NEAR - 11)),
        "assignments" => format!("{}rm -rf v", fill("A=1 ", NEAR - 8)),
        // The same shapes with as much as the bounds checked before parsing let through (8192
        // tokens, 2048 separators, 256 substitutions): what a decision that is parsed costs.
        "one-command-max" => format!("echo {}", "ab ".repeat(8150)),
        "unknown-program-max" => format!("frobnicate {}", "ab ".repeat(8150)),
        "suffixes-of-rm-max" => format!("fakeroot {}-rf v", "rm ".repeat(8150)),
        "wrappers-max" => format!("{}rm -rf v", "nice ".repeat(8150)),
        "two-readings-max" => format!("{}rm -rf v", "exec -a x time -f y ".repeat(1350)),
        "assignments-max" => format!("{}rm -rf v", "A=1 ".repeat(4090)),
        "subshell-deep-max" => format!("{}x{}", "(".repeat(4090), ")".repeat(4090)),
        "subst-deep-max" => format!("{}x{}", "$(".repeat(250), ")".repeat(250)),
        "chain-max" => "rm -rf v; ".repeat(2040),
        "pipes-max" => format!("{}ls", "ls | ".repeat(2040)),
        "heredocs-max" => "cat <<E\nrm -rf v\nE\n".repeat(680),
        "case-arms-max" => format!("case x in {}esac", "a) rm -rf v;; ".repeat(1000)),
        "strings-guessed-max" => format!("frobnicate {}", "'a b; c' ".repeat(1300)),
        "garbage-max" => ")(;}{|$(<<'\"`&&".repeat(120),
        "bash-c-nested-max" => nested(|s| format!("bash -c '{}'", s.replace('\'', "'\\''")), 8000),
        "env-split-max" => nested(|s| format!("env -S'{}'", s.replace('\'', "'\\''")), 8000),
        _ => return None,
    })
}

const SHAPES: &[&str] = &[
    "4mb-chain",
    "4mb-word",
    "4mb-subst",
    "chain",
    "pipes",
    "one-command",
    "unknown-program",
    "suffixes-of-rm",
    "wrappers",
    "two-readings",
    "subst-deep",
    "subshell-deep",
    "group-deep",
    "bash-c-nested",
    "sh-c-dquoted",
    "bash-c-flat",
    "env-split",
    "heredocs",
    "heredoc-continuations",
    "quotes-unbalanced",
    "garbage",
    "case-arms",
    "strings-guessed",
    "assignments",
    "one-command-max",
    "unknown-program-max",
    "suffixes-of-rm-max",
    "wrappers-max",
    "two-readings-max",
    "assignments-max",
    "subshell-deep-max",
    "subst-deep-max",
    "chain-max",
    "pipes-max",
    "heredocs-max",
    "case-arms-max",
    "strings-guessed-max",
    "garbage-max",
    "bash-c-nested-max",
    "env-split-max",
];

/// The CPU time this thread has used, in nanoseconds (the machine may be shared: the wall
/// time of a decision then says more about the load than about the decision).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The peak resident memory of this process so far, in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() -> ExitCode {
    let arg = std::env::args().nth(1).unwrap_or_default();
    if arg == "--list" {
        let _ = writeln!(std::io::stdout(), "{}", SHAPES.join("\n"));
        return ExitCode::SUCCESS;
    }
    let Some(command) = shape(&arg) else {
        let _ = writeln!(std::io::stderr(), "usage: shell_bounds SHAPE | --list");
        return ExitCode::from(2);
    };
    let deny: Vec<String> = [
        "rm -rf:*",
        "rm -fr:*",
        "git push --force:*",
        "curl:*",
        "wget:*",
        "dd:*",
        "mkfs:*",
        "shred:*",
        "chmod -R:*",
        "sudo:*",
    ]
    .iter()
    .map(|r| format!("bash({r})"))
    .collect();
    let Ok(rules) = Rules::from_strings(&[], &deny) else {
        return ExitCode::from(2);
    };
    let roots = vec![PathBuf::from("/ws")];
    let access = Access::Execute { command };
    let call = Call {
        tool: "bash",
        access: &access,
        mode: Mode::Full,
        harness: Harness::Code,
        force_ask: false,
        roots: &roots,
        shell: Shell::Bash,
    };
    let before = peak_kib();
    let mut slowest = 0f64;
    let mut cpu = 0f64;
    let mut decision = Decision::Allow;
    for _ in 0..ROUNDS {
        let (started, cpu_started) = (Instant::now(), cpu_ns());
        decision = decide(&call, &rules);
        slowest = slowest.max(started.elapsed().as_secs_f64() * 1000.0);
        cpu = cpu.max(cpu_ns().saturating_sub(cpu_started) as f64 / 1e6);
    }
    let added = peak_kib().saturating_sub(before);
    let shown = match &decision {
        Decision::Allow => "allow".to_owned(),
        Decision::Ask => "ask".to_owned(),
        Decision::Deny(_) => "deny".to_owned(),
    };
    let Access::Execute { command } = &access else {
        unreachable!()
    };
    let _ = writeln!(
        std::io::stdout(),
        "{arg:<22} {:>9} B  {shown:<5} {slowest:>8.1} ms  {:>6.1} MB  {cpu:>8.1} ms CPU",
        command.len(),
        added as f64 / 1024.0
    );
    ExitCode::SUCCESS
}
