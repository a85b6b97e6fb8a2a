//! What a model call used, in tokens. A leaf: the model boundary reports it, the catalog prices
//! it.

use serde::{Deserialize, Serialize};

/// The tokens one model call used (or, summed, a turn's calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// All input tokens of the request, cached ones included.
    pub input_tokens: u64,
    /// All output tokens, reasoning ones included (as the APIs bill them).
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic bills them at a higher rate).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// The part of `output_tokens` the model spent reasoning, when the API says (OpenAI's
    /// `reasoning_tokens`; Anthropic does not count them apart).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Tokens the conversation occupies in the context window after this call.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds another call's tokens (a turn's calls summed).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_entry_written_before_reasoning_was_counted_still_reads() {
        let old = r#"{"input_tokens":10,"output_tokens":5,"cached_input_tokens":2}"#;
        let u: Usage = serde_json::from_str(old).unwrap();
        assert_eq!(u.reasoning_tokens, 0);
        assert_eq!(u.cache_write_tokens, 0);
    }

    #[test]
    fn calls_sum_field_by_field() {
        let mut turn = Usage::default();
        let call = |i, o, c, w, r| Usage {
            input_tokens: i,
            output_tokens: o,
            cached_input_tokens: c,
            cache_write_tokens: w,
            reasoning_tokens: r,
        };
        turn.add(&call(100, 20, 40, 5, 7));
        turn.add(&call(150, 30, 90, 0, 11));
        assert_eq!(turn, call(250, 50, 130, 5, 18));
    }
}
