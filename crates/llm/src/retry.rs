//! When and how long to wait before sending a request again (the Stainless SDK rules that the
//! official Anthropic and OpenAI SDKs share).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use ferrite_core::model::ModelErrorKind;
use reqwest::header::HeaderMap;

use crate::options::LlmOptions;

/// The longest server-requested delay we honour; beyond it the server is asking for more than a
/// coding turn can wait, so the normal backoff is used instead.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Whether an HTTP error response should be retried. `x-should-retry` (sent by both vendors)
/// wins, except that auth, quota and context errors never become retryable: resending the same
/// request cannot fix them.
pub(crate) fn should_retry_status(status: u16, headers: &HeaderMap, kind: &ModelErrorKind) -> bool {
    if matches!(
        kind,
        ModelErrorKind::Auth | ModelErrorKind::Quota | ModelErrorKind::ContextLength
    ) {
        return false;
    }
    match header_str(headers, "x-should-retry") {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The delay the server asked for: `retry-after-ms`, else `retry-after` in seconds, when within
/// (0, 60 s]. (`retry-after` as an HTTP date is not honoured; the backoff applies then.)
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let from_ms = header_str(headers, "retry-after-ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|ms| ms / 1000.0);
    let secs = from_ms.or_else(|| {
        header_str(headers, "retry-after").and_then(|v| v.trim().parse::<f64>().ok())
    })?;
    if secs.is_finite() && secs > 0.0 && secs <= MAX_RETRY_AFTER.as_secs_f64() {
        Some(Duration::from_secs_f64(secs))
    } else {
        None
    }
}

/// `min(base·2^n, max)·(1 − 0.25·rand)` for the `n`-th retry (0-based). The jitter spreads out
/// clients that failed together so they do not retry in lockstep.
pub(crate) fn backoff(options: &LlmOptions, n: u32) -> Duration {
    let exp = options
        .initial_backoff
        .saturating_mul(2u32.saturating_pow(n.min(31)));
    let capped = exp.min(options.max_backoff);
    capped.mul_f64(1.0 - 0.25 * unit_random())
}

/// A number in [0, 1). Jitter needs no quality randomness, so std's per-instance random hash
/// keys serve instead of a `rand` dependency.
fn unit_random() -> f64 {
    let bits = RandomState::new().build_hasher().finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_prefers_ms_and_ignores_out_of_range() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        h.insert("retry-after-ms", HeaderValue::from_static("0"));
        h.insert("retry-after", HeaderValue::from_static("120"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn statuses_and_override_header() {
        let none = HeaderMap::new();
        let http = |s| ModelErrorKind::Http { status: s };
        for s in [408, 409, 429, 500, 503, 529] {
            assert!(should_retry_status(s, &none, &http(s)), "{s}");
        }
        for s in [400, 404, 422] {
            assert!(!should_retry_status(s, &none, &http(s)), "{s}");
        }
        assert!(!should_retry_status(401, &none, &ModelErrorKind::Auth));
        assert!(!should_retry_status(429, &none, &ModelErrorKind::Quota));
        let mut h = HeaderMap::new();
        h.insert("x-should-retry", HeaderValue::from_static("false"));
        assert!(!should_retry_status(503, &h, &http(503)));
        h.insert("x-should-retry", HeaderValue::from_static("true"));
        assert!(should_retry_status(400, &h, &http(400)));
        assert!(!should_retry_status(401, &h, &ModelErrorKind::Auth));
    }

    #[test]
    fn backoff_grows_caps_and_jitters_down() {
        let o = LlmOptions::default();
        for n in 0..10 {
            let full = (o.initial_backoff * 2u32.pow(n)).min(o.max_backoff);
            let d = backoff(&o, n);
            assert!(d <= full && d >= full.mul_f64(0.75), "{n}: {d:?}");
        }
        assert!(backoff(&o, 1000) <= o.max_backoff);
    }
}
