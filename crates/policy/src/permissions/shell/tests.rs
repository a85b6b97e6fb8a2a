use super::*;
use crate::shell::Shell;

fn plain(c: &str) -> Option<Vec<Vec<String>>> {
    Script::parse(c, Shell::Bash)
        .plain
        .map(|cmds| cmds.into_iter().map(|c| c.words).collect())
}

fn commands(c: &str) -> Vec<String> {
    Script::parse(c, Shell::Bash)
        .commands
        .iter()
        .flat_map(Found::runs)
        .map(|ws| {
            ws.iter()
                .map(|w| match w {
                    Word::Literal(s) => s.clone(),
                    Word::Dynamic(s) => format!("<{s}>"),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn v(words: &[&[&str]]) -> Option<Vec<Vec<String>>> {
    Some(
        words
            .iter()
            .map(|c| c.iter().map(|w| (*w).to_owned()).collect())
            .collect(),
    )
}

#[test]
fn plain_lines_keep_their_words() {
    assert_eq!(
        plain("git status && cargo test -- --nocapture | tee 'a b'; echo \"x y\" &"),
        v(&[
            &["git", "status"],
            &["cargo", "test", "--", "--nocapture"],
            &["tee", "a b"],
            &["echo", "x y"],
        ])
    );
    assert_eq!(plain("git sta\\\ntus"), v(&[&["git", "status"]]));
    assert_eq!(
        plain("git status 2>&1 >/dev/null # note"),
        v(&[&["git", "status"]])
    );
    assert_eq!(plain("\\git st\"a\"'tus'"), v(&[&["git", "status"]]));
}

#[test]
fn anything_else_is_not_plain() {
    for c in [
        "git status $(touch M)",
        "git status `touch M`",
        "git status > M",
        "FOO=1 git status",
        "(git status)",
        "{ git status; }",
        "git status <<< x",
        "echo *.rs",
        "echo {a,b}",
        "echo $HOME",
        "echo \"$HOME\"",
        "eval git status",
        "f() { git status; }",
        "echo 'unterminated",
    ] {
        assert_eq!(plain(c), None, "{c}");
    }
}

#[test]
fn commands_are_found_everywhere() {
    assert_eq!(
        commands("echo $(rm -rf a) | (rm -rf b)"),
        ["rm -rf a", "echo <$(rm -rf a)>", "rm -rf b"]
    );
    assert_eq!(
        commands("sudo -u root timeout 5 nice -n 2 rm -rf x"),
        [
            "sudo -u root timeout 5 nice -n 2 rm -rf x",
            "timeout 5 nice -n 2 rm -rf x",
            "nice -n 2 rm -rf x",
            "rm -rf x"
        ]
    );
    assert_eq!(
        commands("sh -c 'bash -c \"rm -rf x\"'"),
        ["sh -c bash -c \"rm -rf x\"", "bash -c rm -rf x", "rm -rf x"]
    );
    assert_eq!(
        commands("find . -name x -exec rm -rf {} +"),
        ["find . -name x -exec rm -rf {} +", "rm -rf {}"].map(|s| s.replace("{}", "<{}>"))
    );
}

#[test]
fn hidden_programs_say_why() {
    for c in [
        "$X -rf y",
        "$(echo rm) -rf y",
        "eval 'rm -rf y'",
        "echo rm -rf y | sh",
        "bash <<< 'rm -rf y'",
        "sh -c \"$CMD\"",
        "/bin/r? -rf y",
    ] {
        assert!(!Script::parse(c, Shell::Bash).hidden.is_empty(), "{c}");
    }
    assert!(
        Script::parse("bash build.sh", Shell::Bash)
            .hidden
            .is_empty()
    );
}

#[test]
fn deep_and_long_inputs_neither_overflow_nor_pass() {
    let n = 5_000;
    for c in [
        format!("{}rm -rf x{}", "$(".repeat(n), ")".repeat(n)),
        format!("{}rm -rf x{}", "(".repeat(n), ")".repeat(n)),
        format!("{}rm -rf x{}", "{ ".repeat(n), "; }".repeat(n)),
    ] {
        let s = Script::parse(&c, Shell::Bash);
        assert!(s.plain.is_none());
        assert!(
            !s.hidden.is_empty() || s.unparseable || s.beyond.is_some() || !s.commands.is_empty()
        );
    }
    let mut nested = "rm -rf x".to_owned();
    for _ in 0..8 {
        nested = format!("sh -c '{}'", nested.replace('\'', "'\\''"));
    }
    assert!(
        commands(&nested).contains(&"rm -rf x".to_owned()),
        "{nested}"
    );
    // Plain words, but too many wrappers to follow: beyond the bounds (asks under deny rules).
    let wrapped = Script::parse(&format!("{}rm -rf x", "nice ".repeat(n)), Shell::Bash);
    assert!(wrapped.beyond.is_some() && wrapped.plain.is_none());
    // Long flat chains are not deep: understood up to the separator bound (counted in
    // characters, so `&&` is two), beyond it before any parsing.
    let chain = vec!["git status"; 1_000].join(" && ");
    assert_eq!(plain(&chain).map(|c| c.len()), Some(1_000));
    let pipes = vec!["ls"; 2_000].join(" | ");
    assert_eq!(plain(&pipes).map(|c| c.len()), Some(2_000));
    let pipes = vec!["ls"; 5_000].join(" | ");
    assert!(Script::parse(&pipes, Shell::Bash).beyond.is_some());
    assert!(Script::parse("git status\0; touch M", Shell::Bash).unparseable);
}

/// Wrappers read two ways (`exec`, `time`) cannot make a line take exponential time: the work
/// is bounded, and past the bound the line is beyond what the rules read.
#[test]
fn wrappers_read_two_ways_are_bounded() {
    let s = Script::parse(
        &format!("{}rm -rf x", "exec -a x time -f y ".repeat(60)),
        Shell::Bash,
    );
    let recorded: usize = s
        .commands
        .iter()
        .flat_map(|f| &f.words)
        .map(|w| w.shown().len() + bounds::WORK_PER_WORD)
        .sum();
    assert!(recorded <= bounds::MAX_WORK, "{recorded}");
    assert!(s.beyond.is_some() && s.plain.is_none());
    let s = Script::parse(&format!("x {}", "a ".repeat(8_000)), Shell::Bash);
    assert!(s.hidden.is_empty() && s.beyond.is_none(), "{:?}", s.beyond);
}

/// Issue 34: a line too long, too deep or too costly to read is beyond the bounds, never
/// understood, and no command of it is lost silently.
#[test]
fn lines_beyond_the_bounds_are_never_understood() {
    let long = "rm -rf v; ".repeat(400_000);
    assert_eq!(long.len(), 4_000_000);
    let s = Script::parse(&long, Shell::Bash);
    assert!(
        s.beyond.as_deref().is_some_and(|b| b.contains("3907 KiB")),
        "{:?}",
        s.beyond
    );
    assert!(s.plain.is_none() && s.commands.is_empty());
    // `bash -c` in `bash -c` in …: each level quotes the last, so the line grows past the
    // size bound before it gets deep.
    let mut nested = "rm -rf v".to_owned();
    while nested.len() <= MAX_BYTES {
        nested = format!("bash -c {}", quote(&nested));
    }
    let s = Script::parse(&nested, Shell::Bash);
    assert!(s.beyond.is_some() && s.plain.is_none());
    let deep = format!("{}rm -rf x{}", "$(".repeat(20_000), ")".repeat(20_000));
    let s = Script::parse(&deep, Shell::Bash);
    assert!(s.beyond.is_some() && s.plain.is_none());
    // Up to the token bound, plain words are still read; past it (16k `A=1` took 130 ms of
    // CPU in release) the line is beyond the bounds before it is parsed.
    let words = format!("echo {}", "ab ".repeat(bounds::MAX_TOKENS - 10));
    assert!(Script::parse(&words, Shell::Bash).plain.is_some());
    let assignments = format!("{}rm -rf v", "A=1 ".repeat(bounds::MAX_TOKENS / 2));
    let s = Script::parse(&assignments, Shell::Bash);
    assert!(
        s.beyond
            .as_deref()
            .is_some_and(|b| b.contains("words and operators")),
        "{:?}",
        s.beyond
    );
    // A here-document of a few hundred lines of code is well within it.
    let body: String = (0..300)
        .map(|i| format!("    let x{i} = foo(\"a b\", $y, 'c') + bar[{i}]; // {i}\n"))
        .collect();
    let heredoc = format!("cat > f.rs <<EOF\n{body}EOF\n");
    assert!(Script::parse(&heredoc, Shell::Bash).beyond.is_none());
    // The lines that cost a minute (a flat pipeline) and seconds (nested substitutions) under
    // the size bound are beyond the bounds before they are parsed.
    let pipeline = format!("{}rm -rf v", "ls | ".repeat(13_000));
    assert!(pipeline.len() < MAX_BYTES);
    let s = Script::parse(&pipeline, Shell::Bash);
    assert!(
        s.beyond
            .as_deref()
            .is_some_and(|b| b.contains("separators")),
        "{:?}",
        s.beyond
    );
    let deep = format!("{}rm -rf x{}", "$(".repeat(300), ")".repeat(300));
    let s = Script::parse(&deep, Shell::Bash);
    assert!(
        s.beyond
            .as_deref()
            .is_some_and(|b| b.contains("substitutions"))
    );
    // Everyday chains stay understood.
    let chain = "cargo build && cargo test | tee log; ls $(pwd) `pwd`".to_owned();
    assert!(Script::parse(&chain, Shell::Bash).beyond.is_none());
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Issue 34: what the round-four bypasses run is found.
#[test]
fn round_four_bypasses_are_followed() {
    for c in [
        "script -qc 'rm -rf v' /dev/null",
        "script -q --comm 'rm -rf v' /dev/null",
        "script -qc'rm -rf v' /dev/null",
        "script /dev/null -c 'rm -rf v'",
        "su root -- -c 'rm -rf v'",
        "flock -nw1 /tmp/l -c 'rm -rf v'",
        "env -S'-i rm -rf v'",
        "parallel 'rm -rf v' ::: x",
    ] {
        assert!(
            commands(c).contains(&"rm -rf v".to_owned()),
            "{c}: {:?}",
            commands(c)
        );
    }
    assert!(commands("su -s /bin/rm root -- -rf v").contains(&"/bin/rm -rf v".to_owned()));
    assert!(commands("timeout --si=KILL 5 rm -rf v").contains(&"rm -rf v".to_owned()));
    // `bash FILE` runs the script FILE (found on PATH too): FILE is named as a command.
    assert!(commands("bash rm -rf x").contains(&"rm -rf x".to_owned()));
    assert!(commands("sh -e rm -rf x").contains(&"rm -rf x".to_owned()));
    // What xargs runs gets more arguments from its input: computed at run time.
    assert!(
        commands("xargs -i rm -rf {}")
            .contains(&"rm -rf <{}> <<arguments from the input>>".to_owned())
    );
    assert!(
        commands("xargs -r").contains(&"echo <<arguments from the input>>".to_owned()),
        "{:?}",
        commands("xargs -r")
    );
    let heredoc = Script::parse(
        "bash -c 'cat <<EOF\nb\nE\\\nOF\nrm -rf v\nEOF\n'",
        Shell::Bash,
    );
    assert!(!heredoc.hidden.is_empty(), "{:?}", heredoc.commands);
    // A quoted delimiter: bash joins nothing, and nor does the grammar.
    let quoted = Script::parse("cat <<'EOF'\nb\nE\\\nOF\nEOF\n", Shell::Bash);
    assert!(quoted.hidden.is_empty(), "{:?}", quoted.hidden);
}
