//! Tunables of the HTTP layer, with overrides from the environment snapshot.

use std::time::Duration;

use ferrite_core::env::Env;

/// How the clients retry and time out. Defaults follow the official SDKs (2 retries, 0.5 s
/// doubling to 8 s) and codex (300 s without a stream event is a dead stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmOptions {
    /// Retries after the first attempt.
    pub max_retries: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// The longest wait for response headers or for the next chunk of the stream.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
}

impl Default for LlmOptions {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            idle_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(15),
        }
    }
}

impl LlmOptions {
    /// Defaults overridden by `FERRITE_STREAM_IDLE_TIMEOUT_MS`, `FERRITE_MAX_RETRIES` and
    /// `FERRITE_RETRY_BASE_MS` (tests set them small). Unparsable values are ignored with a
    /// warning rather than failing the agent's start.
    pub fn from_env(env: &Env) -> Self {
        let mut options = Self::default();
        if let Some(ms) = parse(env, "FERRITE_STREAM_IDLE_TIMEOUT_MS") {
            options.idle_timeout = Duration::from_millis(ms.max(1));
        }
        if let Some(n) = parse(env, "FERRITE_MAX_RETRIES") {
            options.max_retries = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(ms) = parse(env, "FERRITE_RETRY_BASE_MS") {
            options.initial_backoff = Duration::from_millis(ms);
            options.max_backoff = options.max_backoff.max(options.initial_backoff);
        }
        options
    }
}

fn parse(env: &Env, name: &str) -> Option<u64> {
    let raw = env.get(name)?;
    match raw.trim().parse::<u64>() {
        Ok(v) => Some(v),
        Err(_) => {
            tracing::warn!(variable = name, value = raw, "ignoring non-numeric value");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_overrides_defaults() {
        let env = Env::from_pairs([
            ("FERRITE_STREAM_IDLE_TIMEOUT_MS", "250"),
            ("FERRITE_MAX_RETRIES", "5"),
            ("FERRITE_RETRY_BASE_MS", "10"),
        ]);
        let o = LlmOptions::from_env(&env);
        assert_eq!(o.idle_timeout, Duration::from_millis(250));
        assert_eq!(o.max_retries, 5);
        assert_eq!(o.initial_backoff, Duration::from_millis(10));
        let o = LlmOptions::from_env(&Env::from_pairs([("FERRITE_MAX_RETRIES", "many")]));
        assert_eq!(o, LlmOptions::default());
    }
}
