//! The progress indicator of `ferrite run`: one line on stderr, redrawn in place, only when
//! stderr is a terminal (a pipe or a log file never gets it). Cleared before anything else is
//! written, and not drawn while the answer's last line on the same terminal is unfinished.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often the line is redrawn.
pub(super) const TICK: Duration = Duration::from_millis(120);

const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

pub(super) struct Progress {
    started: Instant,
    frame: usize,
    /// The call running now; empty while the model works.
    doing: String,
    shown: bool,
    /// Whether stdout is the same kind of place (a terminal): its unfinished line would be
    /// overwritten.
    stdout_terminal: bool,
}

impl Progress {
    /// An indicator when stderr is a terminal, else `None`.
    pub fn on_terminal() -> Option<Self> {
        std::io::stderr().is_terminal().then(|| Self {
            started: Instant::now(),
            frame: 0,
            doing: String::new(),
            shown: false,
            stdout_terminal: std::io::stdout().is_terminal(),
        })
    }

    pub fn working_on(&mut self, title: &str) {
        self.doing = title.chars().take(60).collect();
    }

    pub fn draw(&mut self, stdout_mid_line: bool) {
        if stdout_mid_line && self.stdout_terminal {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let what = if self.doing.is_empty() {
            "working"
        } else {
            self.doing.as_str()
        };
        let secs = self.started.elapsed().as_secs();
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2K{} {what} ({secs}s)", FRAMES[self.frame]);
        let _ = stderr.flush();
        self.shown = true;
    }

    pub fn clear(&mut self) {
        if self.shown {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K");
            let _ = stderr.flush();
            self.shown = false;
        }
    }
}
