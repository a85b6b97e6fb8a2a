//! Modes, harnesses and reasoning effort (`docs/permissions.md`, `docs/acp.md`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Session modes, ordered from most to least restricted: `Ord` is "how much the agent may do".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Plan,
    Ask,
    Auto,
    Full,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Plan, Mode::Ask, Mode::Auto, Mode::Full];

    pub fn id(self) -> &'static str {
        match self {
            Mode::Plan => "plan",
            Mode::Ask => "ask",
            Mode::Auto => "auto",
            Mode::Full => "full",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Plan => "Plan",
            Mode::Ask => "Ask",
            Mode::Auto => "Auto",
            Mode::Full => "Full access",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Mode::Plan => "Read and plan only: no file writes, read-only commands without network",
            Mode::Ask => "Ask before writing files or running commands",
            Mode::Auto => "Edit files and run sandboxed commands in the workspace without asking",
            Mode::Full => "Anything, anywhere, without asking and without a sandbox",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}`; expected one of: {expected}")]
pub struct UnknownName {
    pub what: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl FromStr for Mode {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "plan" => Ok(Mode::Plan),
            "ask" => Ok(Mode::Ask),
            "auto" => Ok(Mode::Auto),
            "full" => Ok(Mode::Full),
            _ => Err(UnknownName {
                what: "mode",
                value: s.to_owned(),
                expected: "plan, ask, auto, full",
            }),
        }
    }
}

/// Presets picked with `_meta.harness` on `session/new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Harness {
    Code,
    Planner,
    Assistant,
    Unattended,
}

impl Harness {
    pub const ALL: [Harness; 4] = [
        Harness::Code,
        Harness::Planner,
        Harness::Assistant,
        Harness::Unattended,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Harness::Code => "code",
            Harness::Planner => "planner",
            Harness::Assistant => "assistant",
            Harness::Unattended => "unattended",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Harness::Code => "All tools (default)",
            Harness::Planner => "Read and plan tools only",
            Harness::Assistant => "No file or shell tools: MCP and plan tools only",
            Harness::Unattended => "Never asks the client: anything that would ask is refused",
        }
    }

    /// The highest mode a session of this harness can reach.
    pub fn ceiling(self) -> Mode {
        match self {
            Harness::Code | Harness::Assistant => Mode::Full,
            Harness::Planner => Mode::Plan,
            Harness::Unattended => Mode::Auto,
        }
    }

    /// The mode a new session starts in, before ceilings are applied.
    pub fn default_mode(self) -> Mode {
        match self {
            Harness::Code | Harness::Assistant => Mode::Ask,
            Harness::Planner => Mode::Plan,
            // Nobody is there to answer a question, so the useful default is the ceiling.
            Harness::Unattended => Mode::Auto,
        }
    }

    /// Whether the client may be asked for permission at all.
    pub fn may_ask(self) -> bool {
        !matches!(self, Harness::Unattended)
    }
}

impl FromStr for Harness {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "code" => Ok(Harness::Code),
            "planner" => Ok(Harness::Planner),
            "assistant" => Ok(Harness::Assistant),
            "unattended" => Ok(Harness::Unattended),
            _ => Err(UnknownName {
                what: "harness",
                value: s.to_owned(),
                expected: "code, planner, assistant, unattended",
            }),
        }
    }
}

/// The `reasoning_effort` config option (category `thought_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    #[default]
    Default,
    Low,
    Medium,
    High,
}

impl Effort {
    pub const ALL: [Effort; 4] = [Effort::Default, Effort::Low, Effort::Medium, Effort::High];

    pub fn id(self) -> &'static str {
        match self {
            Effort::Default => "default",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Effort::Default => "Default",
            Effort::Low => "Low",
            Effort::Medium => "Medium",
            Effort::High => "High",
        }
    }
}

impl FromStr for Effort {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(Effort::Default),
            "low" => Ok(Effort::Low),
            "medium" => Ok(Effort::Medium),
            "high" => Ok(Effort::High),
            _ => Err(UnknownName {
                what: "reasoning effort",
                value: s.to_owned(),
                expected: "default, low, medium, high",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_order_by_power() {
        assert!(Mode::Plan < Mode::Ask && Mode::Ask < Mode::Auto && Mode::Auto < Mode::Full);
        for m in Mode::ALL {
            assert_eq!(m.id().parse::<Mode>(), Ok(m));
        }
    }

    #[test]
    fn harness_defaults_stay_under_ceilings() {
        for h in Harness::ALL {
            assert!(h.default_mode() <= h.ceiling(), "{h:?}");
            assert_eq!(h.id().parse::<Harness>(), Ok(h));
        }
    }
}
