//! A wrapper's options read as GNU `getopt_long` reads them, so that the word the wrapper runs
//! is the word the rules check: short options cluster (`-qc CMD`, `-qcCMD`), a short option's
//! value is the rest of its word or the next word, long options may be abbreviated to any
//! unambiguous prefix (`--comm` is `--command`) and carry their value after `=` or in the next
//! word, an optional value is only ever attached (`-t` / `--timing=FILE`), `--` ends the
//! options, and a program that permutes (no `+` in its option string: `script`, `su`) takes
//! options after its operands too.
//!
//! Where the reading is not certain (an option the table does not know, an abbreviation that
//! could be two options, a word computed at run time where an option may stand) the result
//! says so ([`Parsed::unsure`]) and the caller falls back to reading more, never less.

use super::Word;

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::permissions::shell) enum Arg {
    No,
    /// The rest of the word, or the next word.
    Required,
    /// Only attached: `-tFILE`, `--timing=FILE`.
    Optional,
}

/// One option as the program names it: its letter, or its long name when it has no letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::permissions::shell) enum Opt {
    Short(char),
    Long(&'static str),
}

/// A program's options, as in its `getopt_long` call.
pub(in crate::permissions::shell) struct Spec {
    /// The short option string without its leading `+`: a letter, `:` after it when it takes a
    /// value, `::` when the value is optional.
    pub short: &'static str,
    /// Long options: name, value, and the letter it is the same as.
    pub long: &'static [(&'static str, Arg, Option<char>)],
    /// Options may follow operands (GNU permutation).
    pub permute: bool,
    /// `-N` (digits) is an option (`nice -5`).
    pub numeric: bool,
}

/// Why the reading of the options is not certain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::permissions::shell) enum Unsure {
    /// An option the table does not know, or an abbreviation of more than one: the program may
    /// be a version with other options.
    Unknown(String),
    /// A word computed at run time stands where an option may.
    Dynamic,
}

/// The options and operands of one command line.
#[derive(Debug, Default)]
pub(in crate::permissions::shell) struct Parsed {
    /// Each option, with its value (`None`: none given, or the word is computed at run time).
    pub options: Vec<(Opt, Option<Word>)>,
    /// Indices of the operands, in order. Without permutation they run from the first operand
    /// to the end.
    pub operands: Vec<usize>,
    pub unsure: Option<Unsure>,
}

impl Parsed {
    pub(in crate::permissions::shell) fn has(&self, opt: Opt) -> bool {
        self.options.iter().any(|(o, _)| *o == opt)
    }

    /// The values given to `opt`.
    pub(in crate::permissions::shell) fn values(&self, opt: Opt) -> impl Iterator<Item = &Word> {
        self.options
            .iter()
            .filter(move |(o, _)| *o == opt)
            .filter_map(|(_, v)| v.as_ref())
    }

    /// Where the operands start (the end when there are none).
    pub(in crate::permissions::shell) fn first_operand(&self, len: usize) -> usize {
        self.operands.first().copied().unwrap_or(len)
    }
}

impl Spec {
    fn short_arg(&self, c: char) -> Option<Arg> {
        let mut chars = self.short.char_indices().peekable();
        while let Some((i, letter)) = chars.next() {
            let rest = &self.short[i + letter.len_utf8()..];
            let arg = if rest.starts_with("::") {
                Arg::Optional
            } else if rest.starts_with(':') {
                Arg::Required
            } else {
                Arg::No
            };
            if letter == c && letter != ':' {
                return Some(arg);
            }
            while chars.next_if(|(_, c)| *c == ':').is_some() {}
        }
        None
    }

    /// The long option `name` abbreviates: itself when it is one, else the only option it is a
    /// prefix of. `Err` names why it is not certain.
    fn long_option(&self, name: &str) -> Result<(Opt, Arg), String> {
        let as_opt = |(long, arg, short): &(&'static str, Arg, Option<char>)| {
            (short.map_or(Opt::Long(long), Opt::Short), *arg)
        };
        if let Some(exact) = self.long.iter().find(|(l, _, _)| *l == name) {
            return Ok(as_opt(exact));
        }
        let candidates: Vec<(Opt, Arg)> = self
            .long
            .iter()
            .filter(|(l, _, _)| !name.is_empty() && l.starts_with(name))
            .map(as_opt)
            .collect();
        match candidates.as_slice() {
            [one] => Ok(*one),
            // getopt takes an abbreviation of several names of one option.
            [first, rest @ ..] if rest.iter().all(|c| c == first) => Ok(*first),
            [] => Err(format!("--{name}")),
            _ => Err(format!("--{name} (ambiguous)")),
        }
    }

    /// Reads `args` (the words after the program).
    pub(in crate::permissions::shell) fn parse(&self, args: &[Word]) -> Parsed {
        let mut out = Parsed::default();
        let mut i = 0;
        while let Some(word) = args.get(i) {
            let Some(s) = word.literal() else {
                if !self.permute {
                    break;
                }
                out.unsure.get_or_insert(Unsure::Dynamic);
                out.operands.push(i);
                i += 1;
                continue;
            };
            if s == "--" {
                i += 1;
                break;
            }
            if let Some(long) = s.strip_prefix("--") {
                i = self.long_word(long, args, i, &mut out);
                continue;
            }
            let Some(cluster) = s.strip_prefix('-').filter(|c| !c.is_empty()) else {
                if !self.permute {
                    break;
                }
                out.operands.push(i);
                i += 1;
                continue;
            };
            if self.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
                out.options.push((Opt::Short('-'), Some(word.clone())));
                i += 1;
                continue;
            }
            i = self.cluster(cluster, args, i, &mut out);
        }
        out.operands.extend(i..args.len());
        out
    }

    /// `--name`, `--name=value`, `--name value`; returns the index after it.
    fn long_word(&self, long: &str, args: &[Word], i: usize, out: &mut Parsed) -> usize {
        let (name, attached) = match long.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (long, None),
        };
        match self.long_option(name) {
            Ok((opt, Arg::Required)) if attached.is_none() => {
                out.options.push((opt, args.get(i + 1).cloned()));
                i + 2
            }
            Ok((opt, _)) => {
                out.options
                    .push((opt, attached.map(|v| Word::Literal(v.to_owned()))));
                i + 1
            }
            Err(why) => {
                out.unsure.get_or_insert(Unsure::Unknown(why));
                i + 1
            }
        }
    }

    /// `-abc`, `-cVALUE`, `-c VALUE`; returns the index after it.
    fn cluster(&self, cluster: &str, args: &[Word], i: usize, out: &mut Parsed) -> usize {
        for (pos, c) in cluster.char_indices() {
            let rest = &cluster[pos + c.len_utf8()..];
            match self.short_arg(c) {
                None => {
                    out.unsure.get_or_insert(Unsure::Unknown(format!("-{c}")));
                }
                Some(Arg::No) => out.options.push((Opt::Short(c), None)),
                Some(Arg::Optional) => {
                    let value = (!rest.is_empty()).then(|| Word::Literal(rest.to_owned()));
                    out.options.push((Opt::Short(c), value));
                    return i + 1;
                }
                Some(Arg::Required) if rest.is_empty() => {
                    out.options.push((Opt::Short(c), args.get(i + 1).cloned()));
                    return i + 2;
                }
                Some(Arg::Required) => {
                    out.options
                        .push((Opt::Short(c), Some(Word::Literal(rest.to_owned()))));
                    return i + 1;
                }
            }
        }
        i + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: Spec = Spec {
        short: "ac:eE:fqm:o:B:I:O:T:t::Vh",
        long: &[
            ("append", Arg::No, Some('a')),
            ("command", Arg::Required, Some('c')),
            ("flush", Arg::No, Some('f')),
            ("force", Arg::No, None),
            ("quiet", Arg::No, Some('q')),
            ("timing", Arg::Optional, Some('t')),
        ],
        permute: true,
        numeric: false,
    };

    fn words(s: &[&str]) -> Vec<Word> {
        s.iter().map(|w| Word::Literal((*w).to_owned())).collect()
    }

    fn command(args: &[&str]) -> Option<String> {
        let parsed = SCRIPT.parse(&words(args));
        parsed
            .values(Opt::Short('c'))
            .next()
            .and_then(Word::literal)
            .map(str::to_owned)
    }

    #[test]
    fn reads_options_as_getopt_does() {
        let cmd = Some("rm -rf v".to_owned());
        assert_eq!(command(&["-qc", "rm -rf v", "/dev/null"]), cmd);
        assert_eq!(command(&["-qcrm -rf v", "/dev/null"]), cmd);
        assert_eq!(command(&["-q", "--comm", "rm -rf v", "/dev/null"]), cmd);
        assert_eq!(command(&["--c=rm -rf v"]), cmd);
        assert_eq!(command(&["--command=rm -rf v"]), cmd);
        assert_eq!(command(&["/dev/null", "-c", "rm -rf v"]), cmd);
        assert_eq!(command(&["-t", "-c", "rm -rf v"]), cmd);
        assert_eq!(command(&["--", "-c", "rm -rf v"]), None);
        // `--f` is `--flush` or `--force`: not certain.
        assert!(SCRIPT.parse(&words(&["--f", "x"])).unsure.is_some());
        assert!(SCRIPT.parse(&words(&["-Z", "x"])).unsure.is_some());
        let parsed = SCRIPT.parse(&words(&["-q", "a", "-f", "b"]));
        assert_eq!(parsed.operands, vec![1, 3]);
    }
}
