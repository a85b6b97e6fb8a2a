//! The memory turns free, handed back to the system once the agent rests.
//!
//! A turn on a long session allocates and frees megabytes (the history rebuilt into a request,
//! tool outputs); the allocator keeps what was freed. Handing it back after every turn would
//! make a turn that follows at once (a queued prompt, the next one of a script) fault it all in
//! again, so it waits until no turn has started or ended for [`IDLE`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long the agent rests before freed memory goes back.
pub const IDLE: Duration = Duration::from_secs(1);

/// Turns started or ended in this process: one process-wide count, because the heap is.
static ACTIVITY: AtomicU64 = AtomicU64::new(0);

/// A turn started.
pub(super) fn turn_started() {
    ACTIVITY.fetch_add(1, Ordering::Relaxed);
}

/// A turn ended: `release` runs on a blocking thread once the agent has rested for [`IDLE`].
pub(super) fn turn_ended(release: fn()) {
    release_after(&ACTIVITY, release, IDLE);
}

fn release_after(activity: &'static AtomicU64, release: fn(), idle: Duration) {
    let mark = activity.fetch_add(1, Ordering::Relaxed) + 1;
    tokio::spawn(async move {
        tokio::time::sleep(idle).await;
        if activity.load(Ordering::Relaxed) == mark {
            drop(tokio::task::spawn_blocking(release));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    /// This test's own count: turns of other tests in this process must not touch it.
    static TEST_ACTIVITY: AtomicU64 = AtomicU64::new(0);

    fn count() {
        RELEASED.fetch_add(1, Ordering::SeqCst);
    }

    #[tokio::test]
    async fn memory_goes_back_once_after_the_last_of_quick_turns() {
        // Turns 50 ms apart against a rest of 800 ms: a slow machine has 750 ms of margin
        // before a stall between two turns looks like rest.
        let idle = Duration::from_millis(800);
        let gap = Duration::from_millis(50);
        RELEASED.store(0, Ordering::SeqCst);
        for _ in 0..3 {
            TEST_ACTIVITY.fetch_add(1, Ordering::Relaxed);
            release_after(&TEST_ACTIVITY, count, idle);
            tokio::time::sleep(gap).await;
        }
        // About half the rest after the last turn: nothing yet.
        tokio::time::sleep(idle / 2 - gap).await;
        assert_eq!(
            RELEASED.load(Ordering::SeqCst),
            0,
            "released while turns went on"
        );
        for _ in 0..500 {
            if RELEASED.load(Ordering::SeqCst) > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(idle).await;
        assert_eq!(
            RELEASED.load(Ordering::SeqCst),
            1,
            "released once, after the last turn"
        );
    }
}
