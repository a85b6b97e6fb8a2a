//! What the three request mappings share: serializing a body, and the effort parameter.
//!
//! The history makes bodies of megabytes on long sessions: the buffer is sized for the body up
//! front, because growing it by doubling copies it about twice over on the path from the prompt
//! to the provider.

use ferrite_core::model::{AssistantPart, Message, ModelRequest, UserPart};
use ferrite_core::modes::Effort;
use std::sync::Mutex;

use bytes::Bytes;
use serde::Serialize;

/// The effort as every API names it (`low`, `medium`, `high`); `None` for the model's default,
/// for which nothing is sent.
pub(crate) fn effort_param(effort: Effort) -> Option<&'static str> {
    (effort != Effort::Default).then(|| effort.id())
}

pub(crate) fn to_bytes(body: &impl Serialize, req: &ModelRequest) -> serde_json::Result<Bytes> {
    let hint = size_hint(req);
    if hint < POOLED_MIN {
        let mut out = Vec::with_capacity(hint);
        serde_json::to_writer(&mut out, body)?;
        return Ok(Bytes::from(out));
    }
    let mut out = Pooled(take_buffer(hint));
    serde_json::to_writer(&mut out.0, body)?;
    Ok(Bytes::from_owner(out))
}

/// Bodies at least this large are written into a pooled buffer.
const POOLED_MIN: usize = 256 * 1024;
/// Buffers kept between requests: one per session streaming at once is the common case.
const POOL_MAX: usize = 2;

/// Buffers of sent bodies, kept for the next request until the agent rests.
///
/// A long session's body is megabytes, rebuilt for every request: for each model call of a
/// turn's tool loop. A fresh buffer of that size is a fresh mapping (the allocator maps blocks
/// over 1 MiB, `crates/cli/src/alloc.rs`) that the kernel zeroes and faults in page by page
/// while the body is written: in a `perf` profile of prompts on a 10,000-entry session, 30% of
/// the agent's time went to those faults. A buffer written before is already resident. The
/// pool is emptied by [`release_buffers`] once the agent rests, so an idle agent holds none.
static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// The largest pooled buffer, or a new one, with room for `hint` bytes, empty.
fn take_buffer(hint: usize) -> Vec<u8> {
    let pooled = {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let largest = (0..pool.len()).max_by_key(|&i| pool[i].capacity());
        largest.map(|i| pool.swap_remove(i))
    };
    let mut buf = pooled.unwrap_or_default();
    buf.clear();
    buf.reserve(hint);
    buf
}

/// Empties the pool of body buffers (see [`POOL`]); for when the agent rests.
pub fn release_buffers() {
    let taken = std::mem::take(&mut *POOL.lock().unwrap_or_else(|e| e.into_inner()));
    drop(taken);
}

/// A body in a pooled buffer; the buffer goes back to the pool when the last copy of the body
/// (kept for retries) is dropped.
struct Pooled(Vec<u8>);

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL_MAX {
            pool.push(buf);
        } else if let Some(smallest) = pool.iter_mut().min_by_key(|b| b.capacity())
            && smallest.capacity() < buf.capacity()
        {
            // The larger one is kept; the smaller is freed after the lock is released.
            let smaller = std::mem::replace(smallest, buf);
            drop(pool);
            drop(smaller);
        }
    }
}

/// About the body's size: the text it carries, an eighth more for escapes, and room for the
/// JSON around each part and for the tool schemas. Too small costs one reallocation.
fn size_hint(req: &ModelRequest) -> usize {
    let mut text = req.system.len();
    let mut parts = 0;
    for message in &req.messages {
        match message {
            Message::User { content } => {
                parts += content.len();
                text += content
                    .iter()
                    .map(|p| match p {
                        UserPart::Text { text } => text.len(),
                        UserPart::Image { data, .. } => data.len(),
                    })
                    .sum::<usize>();
            }
            Message::Assistant { content } => {
                parts += content.len();
                text += content
                    .iter()
                    .map(|p| match p {
                        AssistantPart::Text { text } | AssistantPart::Reasoning { text, .. } => {
                            text.len()
                        }
                        AssistantPart::ToolCall { arguments, .. } => arguments.len(),
                        AssistantPart::Opaque { .. } => 256,
                    })
                    .sum::<usize>();
            }
            Message::ToolResults { results } => {
                parts += results.len();
                text += results.iter().map(|r| r.content.len()).sum::<usize>();
            }
        }
    }
    text + text / 8 + parts * 96 + req.tools.len() * 1024 + 1024
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_core::model::ToolResultPart;

    /// A request whose body is about `n` bytes: one tool result of that size.
    fn request_of(n: usize) -> ModelRequest {
        ModelRequest {
            messages: vec![Message::ToolResults {
                results: vec![ToolResultPart {
                    call_id: "c".into(),
                    content: "x\n".repeat(n / 2).into(),
                    is_error: false,
                }],
            }],
            ..crate::golden_tests::minimal()
        }
    }

    // The only test that builds bodies over `POOLED_MIN` in this binary: others could take the
    // pooled buffer between these steps.
    #[test]
    fn a_large_body_is_written_into_the_last_ones_buffer_until_the_agent_rests() {
        let req = request_of(2 * POOLED_MIN);
        let first = crate::anthropic::request_body(&req).unwrap();
        let sent = first.to_vec();
        let at = first.as_ptr();
        let copy = first.clone();
        drop(first);
        // A copy kept for a retry keeps the buffer out of the pool.
        assert!(POOL.lock().unwrap().is_empty());
        drop(copy);
        let second = crate::anthropic::request_body(&req).unwrap();
        assert_eq!(second.as_ptr(), at, "the buffer is reused");
        assert_eq!(second.as_ref(), sent.as_slice());
        drop(second);
        assert_eq!(POOL.lock().unwrap().len(), 1);
        release_buffers();
        assert!(POOL.lock().unwrap().is_empty());
        // Small bodies never touch the pool.
        drop(crate::anthropic::request_body(&request_of(16)).unwrap());
        assert!(POOL.lock().unwrap().is_empty());
    }
}
