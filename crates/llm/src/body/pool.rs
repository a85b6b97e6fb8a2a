//! The pool of body buffers: a large body's buffer, kept with what it was written from until
//! the agent rests, for the next request to write into (see [`Pool`]).

use std::ops::Range;
use std::sync::Mutex;

use ferrite_core::config::ApiKind;
use ferrite_core::model::Message;

/// Bodies at least this large are written into a pooled buffer.
pub(super) const POOLED_MIN: usize = 256 * 1024;
/// Buffers kept between requests: one per session streaming at once is the common case.
const POOL_MAX: usize = 2;

/// Buffers of sent bodies, kept for the next request until the agent rests.
///
/// A long session's body is megabytes, rebuilt for every request: for each model call of a
/// turn's tool loop. Two costs of that are avoided here:
/// - A fresh buffer of that size is a fresh mapping (the allocator maps blocks over 1 MiB,
///   `crates/cli/src/alloc.rs`) that the kernel zeroes and faults in page by page while the
///   body is written: in a `perf` profile of prompts on a 10,000-entry session, 30% of the
///   agent's time went to those faults. A buffer written before is already resident.
/// - Serializing the history is most of the rest, and the next request of a session repeats
///   the previous one's history and adds to its end. A kept buffer still holds the previous
///   body, with where each element of its history ends and the messages it was written from
///   ([`Layout`]); the next body keeps the bytes of the leading elements whose messages are
///   the same and writes only what follows.
///
/// The pool is emptied by [`release_buffers`] once the agent rests, so an idle agent holds
/// none: the first request after a rest writes its whole body.
pub(crate) struct Pool {
    kept: Mutex<Vec<Kept>>,
    /// Bodies smaller than this are not pooled (tests lower it).
    pub(super) min: usize,
}

/// The agent's pool.
pub(super) static POOL: Pool = Pool::new(POOLED_MIN);

/// A buffer in the pool, and what the body in it was written from (`None`: not known).
#[derive(Default)]
pub(super) struct Kept {
    pub(super) buf: Vec<u8>,
    pub(super) layout: Option<Layout>,
}

/// How a body in a kept buffer was made.
pub(super) struct Layout {
    pub(super) api: ApiKind,
    /// The body up to its history's first element: the head, the array's opening and the
    /// elements that do not come from messages (a system message).
    pub(super) prefix: usize,
    /// Per element of the history, in order: where its bytes end, and the range of messages it
    /// was written from.
    pub(super) elements: Vec<(usize, Range<usize>)>,
    /// The messages the body was written from. Compared with the next request's: equal
    /// messages write equal elements. Kept alive with the bytes, so a text cannot be freed and
    /// another allocated at its address while the comparison trusts that address.
    pub(super) messages: Vec<Message>,
}

impl Layout {
    /// How much of this body a request of `api` with `messages` keeps: the number of leading
    /// elements, and the message the rest is written from. An element is kept when every
    /// message up to and including the first of the next element is the same: an element
    /// depends only on its own messages, except that a mapping may join a message to the
    /// element before it (Messages API turns of one role) or mark the last element (prompt
    /// caching), and both are ruled out when the next element starts the same way.
    fn keeps(&self, api: ApiKind, messages: &[Message]) -> Option<(usize, usize)> {
        if self.api != api {
            return None;
        }
        let same = self
            .messages
            .iter()
            .zip(messages)
            .take_while(|(a, b)| same_message(a, b))
            .count();
        let mut kept = None;
        for (i, pair) in self.elements.windows(2).enumerate() {
            let (ends, next) = (&pair[0].1, &pair[1].1);
            if next.start >= same {
                break;
            }
            if ends.end <= next.start {
                kept = Some((i + 1, next.start));
            }
        }
        kept
    }

    /// The bytes kept for `elements` leading elements.
    pub(super) fn kept_bytes(&self, elements: usize) -> usize {
        self.elements[elements - 1].0
    }
}

/// Whether two messages write the same elements. Answers are compared by address first: they
/// are shared with the history, and comparing their parts is the slow way to the same answer.
fn same_message(a: &Message, b: &Message) -> bool {
    match (a, b) {
        (Message::Assistant { content: a }, Message::Assistant { content: b })
            if std::sync::Arc::ptr_eq(a, b) =>
        {
            true
        }
        _ => a == b,
    }
}

impl Pool {
    pub(crate) const fn new(min: usize) -> Self {
        Self {
            kept: Mutex::new(Vec::new()),
            min,
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Kept>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A buffer for a body of about `hint` bytes, and what of the body in it a request with
    /// `messages` keeps (see [`Layout::keeps`]): the buffer that keeps the most. One that keeps
    /// nothing is taken only when the pool is full or it has no layout: another session's
    /// buffer stays for that session's next request.
    pub(super) fn take(
        &self,
        api: ApiKind,
        messages: Option<&[Message]>,
        hint: usize,
    ) -> (Kept, Option<(usize, usize)>) {
        let mut pool = self.lock();
        let keeps: Vec<Option<(usize, usize, usize)>> = (pool.iter())
            .map(|kept| {
                let layout = kept.layout.as_ref()?;
                let (elements, from) = layout.keeps(api, messages?)?;
                Some((layout.kept_bytes(elements), elements, from))
            })
            .collect();
        let best = (0..pool.len()).max_by_key(|&i| keeps[i].map(|(bytes, ..)| bytes));
        let (taken, keeps) = match best {
            Some(i) if keeps[i].is_some() => (Some(pool.swap_remove(i)), keeps[i]),
            _ => {
                let spare = (0..pool.len())
                    .filter(|&i| pool.len() == POOL_MAX || pool[i].layout.is_none())
                    .max_by_key(|&i| pool[i].buf.capacity());
                (spare.map(|i| pool.swap_remove(i)), None)
            }
        };
        drop(pool);
        let mut kept = taken.unwrap_or_default();
        kept.buf.reserve(hint.saturating_sub(kept.buf.len()));
        (kept, keeps.map(|(_, elements, from)| (elements, from)))
    }

    /// Back into the pool, when the last copy of its body (kept for retries) is dropped.
    fn give_back(&self, kept: Kept) {
        let mut pool = self.lock();
        if pool.len() < POOL_MAX {
            pool.push(kept);
        } else if let Some(smallest) = pool.iter_mut().min_by_key(|k| k.buf.capacity())
            && smallest.buf.capacity() < kept.buf.capacity()
        {
            // The larger one is kept; the smaller is freed after the lock is released.
            let smaller = std::mem::replace(smallest, kept);
            drop(pool);
            drop(smaller);
        }
    }

    pub(super) fn clear(&self) {
        let taken = std::mem::take(&mut *self.lock());
        drop(taken);
    }
}

/// Empties the pool of body buffers (see [`Pool`]); for when the agent rests.
pub fn release_buffers() {
    POOL.clear();
}

/// A body in a pooled buffer; back to the pool when the last copy of the body is dropped.
pub(super) struct Pooled {
    pub(super) kept: Kept,
    pub(super) pool: &'static Pool,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.kept.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.kept));
    }
}
