//! How long the runtime waits, and its clock.

use std::time::Duration;

/// How long a cancelled turn may take to wind down before its task is aborted.
pub const CANCEL_GRACE: Duration = Duration::from_secs(3);
/// How long closing a session may take before its task is aborted.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Milliseconds since the process started; a monotonic clock for "least recently used".
pub(super) fn uptime_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}
