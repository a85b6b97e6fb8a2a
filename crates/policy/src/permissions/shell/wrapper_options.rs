//! The options of each wrapper whose command Ferrite follows, as the program's own
//! `getopt_long` call declares them (GNU coreutils 9, util-linux 2.38, findutils 4.9, procps 4,
//! sudo 1.9, OpenBSD doas). An option missing here makes the reading unsure, and the caller
//! then checks every suffix of the arguments as well ([`super::getopt::Unsure`]).

use super::getopt::Arg::{No, Optional, Required};
use super::getopt::Spec;

const HELP: (&str, super::getopt::Arg, Option<char>) = ("help", No, None);
const VERSION: (&str, super::getopt::Arg, Option<char>) = ("version", No, None);

pub(super) const ENV: Spec = Spec {
    short: "a:C:iS:u:v0",
    long: &[
        ("argv0", Required, Some('a')),
        ("chdir", Required, Some('C')),
        ("ignore-environment", No, Some('i')),
        ("null", No, Some('0')),
        ("split-string", Required, Some('S')),
        ("unset", Required, Some('u')),
        ("debug", No, Some('v')),
        ("block-signal", Optional, None),
        ("default-signal", Optional, None),
        ("ignore-signal", Optional, None),
        ("list-signal-handling", No, None),
        HELP,
        VERSION,
    ],
    permute: false,
    numeric: false,
};

pub(super) const COMMAND: Spec = Spec {
    short: "pvV",
    long: &[],
    permute: false,
    numeric: false,
};

pub(super) const NOHUP: Spec = Spec {
    short: "",
    long: &[HELP, VERSION],
    permute: false,
    numeric: false,
};

/// bash's `exec [-cl] [-a name]`.
pub(super) const EXEC: Spec = Spec {
    short: "a:cl",
    long: &[],
    permute: false,
    numeric: false,
};

pub(super) const NICE: Spec = Spec {
    short: "n:",
    long: &[("adjustment", Required, Some('n')), HELP, VERSION],
    permute: false,
    numeric: true,
};

pub(super) const SETSID: Spec = Spec {
    short: "cfw",
    long: &[
        ("ctty", No, Some('c')),
        ("fork", No, Some('f')),
        ("wait", No, Some('w')),
        HELP,
        VERSION,
    ],
    permute: false,
    numeric: false,
};

/// GNU `time` (`/usr/bin/time`, `\time`).
pub(super) const TIME: Spec = Spec {
    short: "agqvVo:f:p",
    long: &[
        ("append", No, Some('a')),
        ("format", Required, Some('f')),
        ("output", Required, Some('o')),
        ("portability", No, Some('p')),
        ("quiet", No, Some('q')),
        ("verbose", No, Some('v')),
        HELP,
        VERSION,
    ],
    permute: false,
    numeric: false,
};

pub(super) const STDBUF: Spec = Spec {
    short: "i:o:e:",
    long: &[
        ("input", Required, Some('i')),
        ("output", Required, Some('o')),
        ("error", Required, Some('e')),
        HELP,
        VERSION,
    ],
    permute: false,
    numeric: false,
};

pub(super) const IONICE: Spec = Spec {
    short: "c:n:p:P:tu:hV",
    long: &[
        ("class", Required, Some('c')),
        ("classdata", Required, Some('n')),
        ("pid", Required, Some('p')),
        ("pgid", Required, Some('P')),
        ("ignore", No, Some('t')),
        ("uid", Required, Some('u')),
        HELP,
        VERSION,
    ],
    permute: false,
    numeric: false,
};

pub(super) const TIMEOUT: Spec = Spec {
    short: "fk:ps:v",
    long: &[
        ("foreground", No, Some('f')),
        ("kill-after", Required, Some('k')),
        ("preserve-status", No, Some('p')),
        ("signal", Required, Some('s')),
        ("verbose", No, Some('v')),
        HELP,
        VERSION,
    ],
    permute: false,
    numeric: false,
};

pub(super) const XARGS: Spec = Spec {
    short: "0a:E:e::i::I:l::L:n:oprs:txP:d:",
    long: &[
        ("null", No, Some('0')),
        ("arg-file", Required, Some('a')),
        ("delimiter", Required, Some('d')),
        ("eof", Optional, Some('e')),
        ("exit", No, Some('x')),
        ("interactive", No, Some('p')),
        ("max-args", Required, Some('n')),
        ("max-chars", Required, Some('s')),
        ("max-lines", Optional, Some('l')),
        ("max-procs", Required, Some('P')),
        ("no-run-if-empty", No, Some('r')),
        ("open-tty", No, Some('o')),
        ("process-slot-var", Required, None),
        ("replace", Optional, Some('i')),
        ("show-limits", No, None),
        ("verbose", No, Some('t')),
        HELP,
        VERSION,
    ],
    permute: false,
    numeric: false,
};

pub(super) const SUDO: Spec = Spec {
    short: "Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:ST:t:U:u:Vv",
    long: &[
        ("askpass", No, Some('A')),
        ("auth-type", Required, Some('a')),
        ("background", No, Some('b')),
        ("bell", No, Some('B')),
        ("close-from", Required, Some('C')),
        ("login-class", Required, Some('c')),
        ("chdir", Required, Some('D')),
        ("preserve-env", Optional, Some('E')),
        ("edit", No, Some('e')),
        ("group", Required, Some('g')),
        ("set-home", No, Some('H')),
        ("help", No, Some('h')),
        ("host", Required, None),
        ("login", No, Some('i')),
        ("remove-timestamp", No, Some('K')),
        ("reset-timestamp", No, Some('k')),
        ("list", No, Some('l')),
        ("non-interactive", No, Some('n')),
        ("preserve-groups", No, Some('P')),
        ("prompt", Required, Some('p')),
        ("chroot", Required, Some('R')),
        ("role", Required, Some('r')),
        ("stdin", No, Some('S')),
        ("shell", No, Some('s')),
        ("type", Required, Some('t')),
        ("command-timeout", Required, Some('T')),
        ("other-user", Required, Some('U')),
        ("user", Required, Some('u')),
        ("version", No, Some('V')),
        ("validate", No, Some('v')),
    ],
    permute: false,
    numeric: false,
};

pub(super) const DOAS: Spec = Spec {
    short: "C:Lnsu:",
    long: &[],
    permute: false,
    numeric: false,
};

const SU_LONG: &[(&str, super::getopt::Arg, Option<char>)] = &[
    ("command", Required, Some('c')),
    ("session-command", Required, None),
    ("fast", No, Some('f')),
    ("group", Required, Some('g')),
    ("supp-group", Required, Some('G')),
    ("login", No, Some('l')),
    ("preserve-environment", No, Some('p')),
    ("pty", No, Some('P')),
    ("shell", Required, Some('s')),
    ("whitelist-environment", Required, Some('w')),
    ("user", Required, Some('u')),
    ("help", No, Some('h')),
    ("version", No, Some('V')),
];

/// su and runuser permute: `su root -c CMD` runs CMD.
pub(super) const SU: Spec = Spec {
    short: "c:fg:G:lmpPs:u:hVw:",
    long: SU_LONG,
    permute: true,
    numeric: false,
};

pub(super) const WATCH: Spec = Spec {
    short: "bcCd::eghn:pq:rtvwx",
    long: &[
        ("beep", No, Some('b')),
        ("color", No, Some('c')),
        ("no-color", No, Some('C')),
        ("differences", Optional, Some('d')),
        ("errexit", No, Some('e')),
        ("chgexit", No, Some('g')),
        ("equexit", Required, Some('q')),
        ("interval", Required, Some('n')),
        ("precise", No, Some('p')),
        ("no-rerun", No, Some('r')),
        ("no-title", No, Some('t')),
        ("no-wrap", No, Some('w')),
        ("exec", No, Some('x')),
        ("help", No, Some('h')),
        ("version", No, Some('v')),
    ],
    permute: false,
    numeric: false,
};

/// util-linux `script` permutes: `script FILE -c CMD` runs CMD.
pub(super) const SCRIPT: Spec = Spec {
    short: "ac:eE:fqm:o:B:I:O:T:t::Vh",
    long: &[
        ("append", No, Some('a')),
        ("command", Required, Some('c')),
        ("return", No, Some('e')),
        ("echo", Required, Some('E')),
        ("flush", No, Some('f')),
        ("force", No, None),
        ("quiet", No, Some('q')),
        ("logging-format", Required, Some('m')),
        ("output-limit", Required, Some('o')),
        ("log-io", Required, Some('B')),
        ("log-in", Required, Some('I')),
        ("log-out", Required, Some('O')),
        ("log-timing", Required, Some('T')),
        ("timing", Optional, Some('t')),
        ("help", No, Some('h')),
        ("version", No, Some('V')),
    ],
    permute: true,
    numeric: false,
};

/// `flock [options] FILE COMMAND…` / `flock [options] FILE -c COMMAND`: options stop at FILE.
pub(super) const FLOCK: Spec = Spec {
    short: "sexnoFuw:E:hV",
    long: &[
        ("shared", No, Some('s')),
        ("exclusive", No, Some('x')),
        ("unlock", No, Some('u')),
        ("nonblock", No, Some('n')),
        ("nb", No, Some('n')),
        ("timeout", Required, Some('w')),
        ("wait", Required, Some('w')),
        ("conflict-exit-code", Required, Some('E')),
        ("close", No, Some('o')),
        ("no-fork", No, Some('F')),
        ("verbose", No, None),
        ("help", No, Some('h')),
        ("version", No, Some('V')),
    ],
    permute: false,
    numeric: false,
};
