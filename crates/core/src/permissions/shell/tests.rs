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
        assert!(!s.hidden.is_empty() || s.unparseable || !s.commands.is_empty());
    }
    let mut nested = "rm -rf x".to_owned();
    for _ in 0..8 {
        nested = format!("sh -c '{}'", nested.replace('\'', "'\\''"));
    }
    assert!(
        commands(&nested).contains(&"rm -rf x".to_owned()),
        "{nested}"
    );
    // Plain words, but too many wrappers to follow: hidden (refused under deny rules).
    let wrapped = Script::parse(&format!("{}rm -rf x", "nice ".repeat(n)), Shell::Bash);
    assert_eq!(wrapped.hidden, [TOO_DEEP]);
    // Long flat chains are not deep.
    let chain = vec!["git status"; 5_000].join(" && ");
    assert_eq!(plain(&chain).map(|c| c.len()), Some(5_000));
    let pipes = vec!["ls"; 5_000].join(" | ");
    assert_eq!(plain(&pipes).map(|c| c.len()), Some(5_000));
    assert!(Script::parse("git status\0; touch M", Shell::Bash).unparseable);
}

/// Wrappers read two ways (`exec`, `time`) cannot make a line take exponential time: the
/// commands followed are bounded, and past the bound the line hides what it runs.
#[test]
fn wrappers_read_two_ways_are_bounded() {
    let started = std::time::Instant::now();
    let s = Script::parse(
        &format!("{}rm -rf x", "exec -a x time -f y ".repeat(60)),
        Shell::Bash,
    );
    assert!(s.commands.iter().map(|f| f.words.len()).sum::<usize>() <= MAX_WORDS + 400);
    assert!(s.hidden.iter().any(|h| h == TOO_MANY), "{:?}", s.hidden);
    let s = Script::parse(&format!("x {}", "a ".repeat(20_000)), Shell::Bash);
    assert!(s.hidden.is_empty());
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}
