//! Terminal escape sequences in a command's output, which the model chose (or a file it read
//! did). The model reads the words only ([`strip`]). A terminal view (`acp::terminal`) gets the
//! CSI sequences that only draw: colours (SGR) and cursor moves and erasing, which stay inside the
//! drawn text. Every other sequence acts beyond it and is dropped: other CSI sequences (`ESC[8;…t`
//! resizes the window, `ESC[?1049h` and every private mode switch screens or turns on mouse
//! reporting, `ESC[6n` and other reports make the terminal type an answer), OSC (52 writes the
//! clipboard, 8 hides a link's target, 0 sets the title), DCS, SOS, PM and APC strings, and the
//! one-character C1 forms of all of them.
//!
//! [`Filter`] reads output in pieces as it arrives, so a sequence split between two pieces is
//! still recognised; what it holds back is one CSI sequence, at most [`MAX_CSI`] bytes.

/// A CSI sequence longer than this is not one a terminal draws colours with: it is dropped.
const MAX_CSI: usize = 64;

#[derive(Debug, Clone, Default)]
enum State {
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// Inside a CSI sequence, kept so far (when it is kept at all).
    Csi(String),
    /// Inside a CSI sequence too long to keep: dropped up to its final character.
    CsiDropped,
    /// Inside a string sequence (OSC, DCS, SOS, PM, APC), dropped up to its terminator;
    /// `escape`: the last character was ESC (`ESC \` ends it).
    Dropped { escape: bool },
    /// `ESC (` and friends: one more character, dropped.
    Charset,
}

/// Output in, what may be shown out.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Keep CSI sequences (a terminal view) or drop every sequence (the model's text).
    keep_csi: bool,
    state: State,
}

impl Filter {
    /// For a terminal view: CSI sequences kept, every other sequence dropped.
    pub fn terminal() -> Self {
        Self {
            keep_csi: true,
            state: State::Text,
        }
    }

    /// Appends what may be shown of `piece` to `out`.
    pub fn push(&mut self, piece: &str, out: &mut String) {
        for c in piece.chars() {
            self.state = match std::mem::take(&mut self.state) {
                State::Text => match c {
                    '\u{1b}' => State::Escape,
                    // C1: CSI, then the string introducers (DCS, SOS, OSC, PM, APC).
                    '\u{9b}' => State::Csi(String::from("\u{1b}[")),
                    '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => {
                        State::Dropped { escape: false }
                    }
                    '\u{80}'..='\u{9f}' => State::Text,
                    c => {
                        out.push(c);
                        State::Text
                    }
                },
                State::Escape => match c {
                    '[' => State::Csi(String::from("\u{1b}[")),
                    ']' | 'P' | 'X' | '^' | '_' => State::Dropped { escape: false },
                    '(' | ')' | '*' | '+' => State::Charset,
                    _ => State::Text,
                },
                State::Csi(mut seq) => match c {
                    '@'..='~' => {
                        if self.keep_csi && only_draws(&seq, c) {
                            seq.push(c);
                            out.push_str(&seq);
                        }
                        State::Text
                    }
                    // Parameters and intermediates; past the bound the rest is dropped too.
                    ' '..='?' if seq.len() >= MAX_CSI => State::CsiDropped,
                    ' '..='?' => {
                        seq.push(c);
                        State::Csi(seq)
                    }
                    // Not a sequence a terminal draws with: dropped; ESC starts a new one.
                    '\u{1b}' => State::Escape,
                    c => {
                        if !c.is_control() {
                            out.push(c);
                        }
                        State::Text
                    }
                },
                State::CsiDropped => match c {
                    ' '..='?' => State::CsiDropped,
                    _ => State::Text,
                },
                State::Dropped { escape } => match c {
                    '\u{7}' | '\u{9c}' => State::Text,
                    '\\' if escape => State::Text,
                    '\u{1b}' => State::Dropped { escape: true },
                    _ => State::Dropped { escape: false },
                },
                State::Charset => State::Text,
            };
        }
    }
}

/// Final characters of the CSI sequences a view may draw with: SGR (`m`); cursor up, down,
/// forward, back, next and previous line, column, position (`A`–`H`, `f`, `d`); erase in display,
/// in line, characters (`J`, `K`, `X`).
const DRAWING_FINALS: &str = "mABCDEFGHfdJKX";

/// Whether the CSI sequence `seq` (`ESC [` and its parameters) ending in `last` only draws: one
/// of [`DRAWING_FINALS`] with plain numeric parameters (no private `?`/`<`/`=`/`>` marker, no
/// intermediate characters).
fn only_draws(seq: &str, last: char) -> bool {
    DRAWING_FINALS.contains(last)
        && seq.strip_prefix("\u{1b}[").is_some_and(|params| {
            params
                .chars()
                .all(|c| c.is_ascii_digit() || c == ';' || c == ':')
        })
}

/// `text` without any escape sequence (colours, cursor moves, titles): the model reads the
/// words, not the styling.
pub fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    Filter::default().push(text, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_gets_the_words_only() {
        assert_eq!(
            strip("\u{1b}[1;31merror\u{1b}[0m: bad\u{1b}]0;title\u{7} ok\u{1b}(B!"),
            "error: bad ok!"
        );
        assert_eq!(strip("plain\ttext\n"), "plain\ttext\n");
    }

    #[test]
    fn a_terminal_gets_colours_and_nothing_that_acts_beyond_the_text() {
        let output = "\u{1b}[32mgreen\u{1b}[0m \u{1b}]52;c;cm0gLXJm\u{7}\u{1b}]8;;https://x/\u{1b}\\\
                      link\u{1b}]8;;\u{1b}\\ \u{1b}Pq#0\u{1b}\\\u{9d}0;t\u{9c}\u{9b}1mbold end";
        // Whole, and one character at a time: the same.
        let mut whole = String::new();
        Filter::terminal().push(output, &mut whole);
        let mut pieces = String::new();
        let mut f = Filter::terminal();
        for c in output.chars() {
            f.push(&c.to_string(), &mut pieces);
        }
        assert_eq!(whole, pieces);
        assert_eq!(whole, "\u{1b}[32mgreen\u{1b}[0m link \u{1b}[1mbold end");
    }

    #[test]
    fn only_drawing_csi_sequences_reach_a_terminal() {
        let kept = "\u{1b}[1;38:5:196mred\u{1b}[0m\u{1b}[2J\u{1b}[H\u{1b}[3;4H\u{1b}[K\u{1b}[2A";
        let mut out = String::new();
        Filter::terminal().push(kept, &mut out);
        assert_eq!(out, kept);
        // Window resize, alternate screen, mouse and focus reporting, status and cursor
        // reports, cursor style, scroll region, private modes, keyboard protocol.
        let dropped = "a\u{1b}[8;999;999tb\u{1b}[?1049hc\u{1b}[?1000h\u{1b}[?1006h\u{1b}[?1004h\
                       d\u{1b}[6ne\u{1b}[5n\u{1b}[c\u{1b}[>0cf\u{1b}[2 q\u{1b}[1;5r\u{1b}[?25l\
                       g\u{1b}[>1u\u{1b}[21t\u{9b}?1049h\u{1b}[4h";
        let mut out = String::new();
        Filter::terminal().push(dropped, &mut out);
        assert_eq!(out, "abcdefg");
    }

    #[test]
    fn an_unterminated_string_hides_only_itself() {
        let mut out = String::new();
        let mut f = Filter::terminal();
        f.push("before \u{1b}]52;c;", &mut out);
        f.push(&"A".repeat(100_000), &mut out);
        f.push("\u{7}after", &mut out);
        assert_eq!(out, "before after");
        // A CSI too long to be a colour is dropped to its end, and holds nothing back.
        let mut out = String::new();
        let mut f = Filter::terminal();
        f.push(&format!("\u{1b}[{}", "1;".repeat(100)), &mut out);
        f.push("m after", &mut out);
        assert_eq!(out, " after");
    }
}
