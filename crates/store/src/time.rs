//! Wall-clock timestamps as RFC 3339 strings (what ACP's `updatedAt` and the session log use).

use std::time::SystemTime;

pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}
