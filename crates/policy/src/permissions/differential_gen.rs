//! The commands of the differential shell test (`differential_tests.rs`): the corpus, and
//! generated lines of words the grammar and a shell may read differently, joined by operators,
//! nested in `sh -c` / `bash -c`, subshells and groups, with here-documents (line continuations
//! in their bodies included) and behind every wrapper Ferrite follows, their options written as
//! getopt takes them (clusters, abbreviations, `--opt=value`).

use super::corpus_tests::{Rng, random_command};

/// Words that the grammar and a shell may read differently, for the generated commands.
const TRICKY: &[&str] = &[
    "&>/dev/null",
    "&>>/dev/null",
    ">/dev/null",
    "2>/dev/null",
    "1>&2",
    ">|/dev/null",
    "<&-",
    "#x",
    "\\ #x",
    "\\\t#x",
    "\\\u{b}#x",
    "\\\u{c}#x",
    "\r",
    "\r#x",
    "\u{b}#x",
    "\u{c}#x",
    "\u{a0}#x",
    "\u{2028}#x",
    "\u{85}#x",
    "\\\r\n",
    "\\\n",
    "\\\\\n",
    "'a b'",
    "\"a b\"",
    "\"#x\"",
    "'#'x",
    "x#y",
    "$X",
    "\"$X\"",
    "~",
    "~/x",
    "a=~",
    "--rec",
    "--for",
    "-rf",
    "v",
    "|&",
    ";&",
    "&",
    ";",
    "&&",
    "||",
    "|",
    "\n",
    "<<X",
    "<<-X",
    "<<'X'",
    "<<X\\",
    "<<\\X",
    "<<<x",
    "((",
    "))",
    "{",
    "}",
    "(",
    ")",
    "!",
    "\\",
    "\0",
    "\u{1b}[2K",
    "\u{7f}",
];

const PROGRAMS: &[&str] = &[
    "git", "rm", "touch", "curl", "ls", "echo", "cat", "true", "x", "alias", "coproc", "env",
    "timeout", "nice", "command", "exec", "time", "xargs", "find", "setarch", "fakeroot",
    "linux64", "sudo", "printf", "test", "[", "type", "hash", "wait", "read", "let", "declare",
    "typeset", "local", "export", "unset", "shift", "set", "getopts", "mapfile", "compgen",
];

fn tricky_word(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => PROGRAMS[rng.below(PROGRAMS.len())].to_owned(),
        1 => [
            "status", "-s", "v", "-rf", "--", "a", "5", "KILL", "--sig", "-iu", "FOO",
        ][rng.below(11)]
        .to_owned(),
        _ => TRICKY[rng.below(TRICKY.len())].to_owned(),
    }
}

fn simple_command(rng: &mut Rng) -> String {
    let mut s = PROGRAMS[rng.below(PROGRAMS.len())].to_owned();
    for _ in 0..rng.below(6) {
        let sep = [" ", " ", " ", "", "\t"][rng.below(5)];
        s.push_str(sep);
        s.push_str(&tricky_word(rng));
    }
    s
}

/// A command line that mostly parses: simple commands of tricky words joined by operators,
/// some inside `sh -c` / `bash -c`, subshells or groups, with here-document bodies.
fn structured_command(rng: &mut Rng) -> String {
    let mut s = String::new();
    for i in 0..=rng.below(4) {
        if i > 0 {
            s.push_str([" ; ", " && ", " || ", " | ", " & ", "\n", " |& ", ";", "&"][rng.below(9)]);
        }
        let c = simple_command(rng);
        match rng.below(10) {
            0 => s.push_str(&format!("sh -c '{}'", c.replace('\'', ""))),
            1 => s.push_str(&format!("bash -c '{}'", c.replace('\'', ""))),
            2 => s.push_str(&format!("({c})")),
            3 => s.push_str(&format!("{{ {c}; }}")),
            4 => s.push_str(&format!(
                "sh -c \"{}\"",
                c.replace(['"', '$', '`', '\\'], "")
            )),
            _ => s.push_str(&c),
        }
    }
    if s.contains("<<") {
        s.push_str(["\nrm -rf v\nX\n", "\nX\nrm -rf v\n", "\nX\\\nrm -rf v\nX\n"][rng.below(3)]);
    }
    s
}

/// A corpus line with a tricky word put in at a random place.
fn mutated(rng: &mut Rng, corpus: &[String]) -> String {
    let base = &corpus[rng.below(corpus.len())];
    let mut at = rng.below(base.len() + 1);
    while !base.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}{}{}", &base[..at], tricky_word(rng), &base[at..])
}

pub(super) fn corpus() -> Vec<String> {
    corpus_lines(include_str!("corpus.txt"))
}

/// Commands written as corpus.txt writes them: after two letters and a space, `⏎` for a newline.
pub(super) fn corpus_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let command = l.get(2..).unwrap_or_default();
            command
                .strip_prefix(' ')
                .unwrap_or(command)
                .replace('⏎', "\n")
                .replace('␍', "\r")
                .replace('␋', "\u{b}")
                .replace('␌', "\u{c}")
        })
        .collect()
}

pub(super) fn generated(cases: u64, seed: u64, corpus: &[String]) -> Vec<String> {
    let mut rng = Rng(seed);
    (0..cases)
        .map(|_| match rng.below(10) {
            0..=2 => structured_command(&mut rng),
            3..=4 => wrapped_command(&mut rng, 0),
            5 => heredoc_command(&mut rng),
            6..=7 => mutated(&mut rng, corpus),
            _ => random_command(&mut rng),
        })
        .collect()
}

/// Every wrapper Ferrite follows, with its options written each way getopt reads them: `{c}`
/// is the wrapped command's words, `{q}` the same as one single-quoted string.
const WRAPPERS: &[&str] = &[
    "env {c}",
    "env -i {c}",
    "env -iu FOO {c}",
    "env --unset=FOO {c}",
    "env --un FOO {c}",
    "env -C . {c}",
    "env --ch=. {c}",
    "env -S{q}",
    "env -S {q}",
    "env --split-string={q}",
    "env --sp {q}",
    "env A=1 {c}",
    "timeout 5 {c}",
    "timeout -s KILL 5 {c}",
    "timeout -sKILL 5 {c}",
    "timeout --sig=KILL 5 {c}",
    "timeout --si KILL 5 {c}",
    "timeout -k1 5 {c}",
    "timeout -fv 5 {c}",
    "timeout --kill 1 5 {c}",
    "nice {c}",
    "nice -n5 {c}",
    "nice -n 5 {c}",
    "nice --adj=5 {c}",
    "nice -5 {c}",
    "nohup {c}",
    "nohup -- {c}",
    "stdbuf -oL {c}",
    "stdbuf -o L {c}",
    "stdbuf --out=L {c}",
    "stdbuf -i0 -eL {c}",
    "ionice -c3 {c}",
    "ionice --cl 3 {c}",
    "ionice -t {c}",
    "setsid {c}",
    "setsid -f {c}",
    "setsid -fw {c}",
    "setsid --wa {c}",
    "xargs {c}",
    "xargs -r {c}",
    "xargs -n1 {c}",
    "xargs -I{} {c}",
    "xargs -i {c}",
    "xargs --max-a 1 {c}",
    "xargs -P2 {c}",
    "flock lk {c}",
    "flock -n lk {c}",
    "flock -w1 lk {c}",
    "flock -nw 1 lk {c}",
    "flock lk -c {q}",
    "flock --time 1 lk {c}",
    "flock lk --command {q}",
    "script -qc {q} /dev/null",
    "script -q --comm {q} /dev/null",
    "script -q --command={q} /dev/null",
    "script -qc{q} /dev/null",
    "script /dev/null -qc {q}",
    "script -qe --c {q} /dev/null",
    "su -c {q}",
    "su root -c {q}",
    "su -lc {q}",
    "su - root --comm {q}",
    "su root -- -c {q}",
    "su --session-command={q}",
    "runuser -u root -- {c}",
    "runuser root -c {q}",
    "time {c}",
    "time -p {c}",
    "\\time {c}",
    "\\time -f %e {c}",
    "command time -o /dev/null {c}",
    "setarch x86_64 {c}",
    "setarch x86_64 -R {c}",
    "linux64 {c}",
    "command {c}",
    "command -p {c}",
    "exec {c}",
    "exec -a x {c}",
    "find . -maxdepth 0 -exec {c} \\;",
    "bash -c {q}",
    "sh -c {q}",
    "bash -ec {q}",
    "dash -c {q}",
    "bash -c {q} arg0",
    "sh -c {q} && bash -c {q}",
];

fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A command behind a wrapper (behind another one, now and then).
fn wrapped_command(rng: &mut Rng, depth: usize) -> String {
    let inner = match rng.below(6) {
        0 if depth < 2 => wrapped_command(rng, depth + 1),
        1 => heredoc_command(rng),
        2 => simple_command(rng),
        _ => [
            "rm -rf v",
            "touch M",
            "git status",
            "rm -r -f v",
            "echo a b",
        ][rng.below(5)]
        .to_owned(),
    };
    let template = WRAPPERS[rng.below(WRAPPERS.len())];
    template
        .replace("{q}", &single_quoted(&inner))
        .replace("{c}", &inner)
}

/// A here-document whose body holds line continuations (bash joins those lines before it
/// looks for the delimiter, when the delimiter is unquoted), at the top or in `bash -c`.
fn heredoc_command(rng: &mut Rng) -> String {
    let body = [
        "b\nE\\\nOF\n{c}\nEOF\n",
        "x\\\nEOF\n{c}\nEOF\n",
        "E\\\n\\\nOF\n{c}\nEOF\n",
        "EO\\\\\nF\n{c}\nEOF\n",
        "{c}\nEOF\n",
        "$({c})\nEOF\n",
    ][rng.below(6)];
    let start = [
        "cat <<EOF\n",
        "cat <<'EOF'\n",
        "cat <<-EOF\n",
        "cat <<\"EOF\"\n",
    ][rng.below(4)];
    let payload = ["rm -rf v", "touch M", "git status"][rng.below(3)];
    let doc = format!("{start}{}", body.replace("{c}", payload));
    match rng.below(3) {
        0 => format!("bash -c {}", single_quoted(&doc)),
        1 => format!("sh -c {}", single_quoted(&doc)),
        _ => doc,
    }
}
