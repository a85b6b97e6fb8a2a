//! What a model call used, in tokens. A leaf: the model boundary reports it, the catalog prices
//! it.

use serde::{Deserialize, Serialize};

/// The tokens one model call used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// All input tokens of the request, cached ones included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic bills them at a higher rate).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Tokens the conversation occupies in the context window after this call.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}
