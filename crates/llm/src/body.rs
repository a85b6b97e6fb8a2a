//! What the three request mappings share: writing a body, and the effort parameter (`encode`
//! picks the mapping).
//!
//! Every API's body is an object whose last member is the history's array (`messages`,
//! `input`), written after everything else: that keeps the bytes of the history's elements
//! in the order they were produced, so a body can keep the elements of the previous one that
//! did not change and write only the rest (see [`Pool`]).
//!
//! The history makes bodies of megabytes on long sessions: the buffer is sized for the body up
//! front, because growing it by doubling copies it about twice over on the path from the prompt
//! to the provider.

mod pool;

use std::ops::Range;

use bytes::Bytes;
use ferrite_core::config::ApiKind;
use ferrite_core::model::{AssistantPart, Message, ModelRequest, UserPart};
use ferrite_core::modes::Effort;
use serde::Serialize;

pub(crate) use pool::Pool;
pub use pool::release_buffers;
use pool::{Kept, Layout, POOL, Pooled};

/// The agent's pool of body buffers.
pub(crate) fn pool() -> &'static Pool {
    &POOL
}

/// The effort as every API names it (`low`, `medium`, `high`); `None` for the model's default,
/// for which nothing is sent.
pub(crate) fn effort_param(effort: Effort) -> Option<&'static str> {
    (effort != Effort::Default).then(|| effort.id())
}

/// A body being written. The API's mapping writes its [`head`](Draft::head), the elements
/// before the history's own ([`lead`](Draft::lead)), asks [`history`](Draft::history) where
/// the history's elements start (what the previous body had is kept) and writes those from
/// there on ([`element`](Draft::element)).
pub(crate) struct Draft {
    api: ApiKind,
    /// The pool the buffer came from and goes back to; `None`: a small body, not pooled.
    pool: Option<&'static Pool>,
    buf: Vec<u8>,
    /// The previous body's layout, when `buf` holds that body.
    previous: Option<Layout>,
    /// What of the previous body can be kept: how many elements, and the first message to
    /// write after them.
    keeps: Option<(usize, usize)>,
    /// The head and the lead while `buf` still holds the previous body (see
    /// [`history`](Draft::history)).
    prefix: Vec<u8>,
    prefix_len: usize,
    elements: Vec<(usize, Range<usize>)>,
    /// Bytes of the previous body's history that were kept.
    kept: usize,
}

impl Draft {
    /// A draft for `req`'s body; `reuse`: may keep what the previous body in the pool has in
    /// common with this one (the caller hands over the messages at [`finish`](Draft::finish)).
    pub(crate) fn new(pool: &'static Pool, api: ApiKind, req: &ModelRequest, reuse: bool) -> Self {
        let hint = size_hint(req);
        let mut draft = Self {
            api,
            pool: None,
            buf: Vec::new(),
            previous: None,
            keeps: None,
            prefix: Vec::new(),
            prefix_len: 0,
            elements: Vec::new(),
            kept: 0,
        };
        if hint < pool.min {
            draft.buf.reserve_exact(hint);
            return draft;
        }
        let (kept, keeps) = pool.take(api, reuse.then_some(&req.messages[..]), hint);
        draft.pool = Some(pool);
        draft.buf = kept.buf;
        draft.keeps = keeps;
        draft.previous = kept.layout;
        if draft.keeps.is_none() {
            draft.buf.clear();
        }
        draft
    }

    /// Where the head and lead go: behind the previous body's back while it may be kept.
    fn out(&mut self) -> &mut Vec<u8> {
        if self.keeps.is_some() {
            &mut self.prefix
        } else {
            &mut self.buf
        }
    }

    /// Writes the body's members but the history (`head`, an object), and opens the history's
    /// array, named `key`, as the body's last member.
    pub(crate) fn head(&mut self, head: &impl Serialize, key: &str) -> serde_json::Result<()> {
        let out = self.out();
        serde_json::to_writer(&mut *out, head)?;
        // `head` is an object: reopen it for one more member.
        debug_assert_eq!(out.last(), Some(&b'}'));
        out.pop();
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key)?;
        out.extend_from_slice(b":[");
        Ok(())
    }

    /// Writes an element of the history's array that comes from no message (a system message).
    pub(crate) fn lead(&mut self, element: &impl Serialize) -> serde_json::Result<()> {
        let out = self.out();
        if out.last() != Some(&b'[') {
            out.push(b',');
        }
        serde_json::to_writer(out, element)
    }

    /// The first message whose elements are to be written: those before it are the previous
    /// body's. An element depends only on its messages, so they are kept even when the head
    /// or lead changed (an output limit that shrinks as the window fills, another effort, a
    /// tool more): the kept bytes then move to follow the new head, one copy instead of
    /// writing them again.
    pub(crate) fn history(&mut self) -> usize {
        let (Some(layout), Some((elements, from))) = (&mut self.previous, self.keeps) else {
            self.prefix_len = self.buf.len();
            return 0;
        };
        let prefix = std::mem::take(&mut self.prefix);
        self.prefix_len = prefix.len();
        let end = layout.kept_bytes(elements);
        self.kept = end - layout.prefix;
        self.buf.truncate(end);
        self.elements = std::mem::take(&mut layout.elements);
        self.elements.truncate(elements);
        if self.buf[..layout.prefix] != prefix[..] {
            // The first kept element starts with the comma after a lead, if there was one;
            // the new prefix may have a lead where there was none, or none where there was.
            let old = layout.prefix + usize::from(self.buf[layout.prefix] == b',');
            let mut new = prefix;
            if new.last() != Some(&b'[') {
                new.push(b',');
            }
            let new_len = new.len();
            self.buf.splice(..old, new);
            for (end, _) in &mut self.elements {
                *end = *end - old + new_len;
            }
        }
        from
    }

    /// Writes the history's next element, made from the messages in `messages`.
    pub(crate) fn element(
        &mut self,
        element: &impl Serialize,
        messages: Range<usize>,
    ) -> serde_json::Result<()> {
        if self.buf.last() != Some(&b'[') {
            self.buf.push(b',');
        }
        serde_json::to_writer(&mut self.buf, element)?;
        self.elements.push((self.buf.len(), messages));
        Ok(())
    }

    /// The body. With `messages` (the request's, given up), a pooled body remembers them for
    /// the next one. Also returns the messages no longer needed, for the caller to drop where
    /// freeing them costs nothing (a long history is tens of thousands of allocations).
    pub(crate) fn finish(mut self, messages: Option<Vec<Message>>) -> Encoded {
        self.buf.extend_from_slice(b"]}");
        let previous = self.previous.take().map(|layout| layout.messages);
        let Some(pool) = self.pool else {
            return Encoded {
                body: Bytes::from(self.buf),
                unused: messages.unwrap_or_default(),
                kept: 0,
            };
        };
        let layout = messages.map(|messages| Layout {
            api: self.api,
            prefix: self.prefix_len,
            elements: self.elements,
            messages,
        });
        Encoded {
            body: Bytes::from_owner(Pooled {
                kept: Kept {
                    buf: self.buf,
                    layout,
                },
                pool,
            }),
            unused: previous.unwrap_or_default(),
            kept: self.kept,
        }
    }
}

/// A written body.
pub(crate) struct Encoded {
    pub(crate) body: Bytes,
    /// Messages to drop (see [`Draft::finish`]).
    pub(crate) unused: Vec<Message>,
    /// Bytes of the previous body's history that were kept.
    pub(crate) kept: usize,
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
    use super::pool::POOLED_MIN;
    use super::*;
    use crate::encode::{encode, request_body, write};
    use ferrite_core::model::ToolResultPart;

    const APIS: [ApiKind; 3] = [
        ApiKind::Anthropic,
        ApiKind::OpenAiResponses,
        ApiKind::OpenAiChat,
    ];

    /// A request whose body is about `n` bytes: one tool result of that size.
    fn request_of(n: usize) -> ModelRequest {
        ModelRequest {
            messages: vec![result(&"x\n".repeat(n / 2))],
            ..crate::golden_tests::minimal()
        }
    }

    fn result(content: &str) -> Message {
        Message::ToolResults {
            results: vec![ToolResultPart {
                call_id: "c".into(),
                content: content.into(),
                is_error: false,
            }],
        }
    }

    /// `req`'s body written whole, from no pool.
    fn whole(api: ApiKind, req: &ModelRequest) -> Vec<u8> {
        static NEVER: Pool = Pool::new(usize::MAX);
        let mut draft = Draft::new(&NEVER, api, req, true);
        write(api, req, &mut draft).unwrap();
        draft.finish(None).body.to_vec()
    }

    // The only test that builds bodies over `POOLED_MIN` with the agent's pool in this binary:
    // others could take the pooled buffer between these steps.
    #[test]
    fn a_large_body_is_written_into_the_last_ones_buffer_until_the_agent_rests() {
        let req = request_of(2 * POOLED_MIN);
        let first = request_body(ApiKind::Anthropic, &req).unwrap();
        let sent = first.to_vec();
        let at = first.as_ptr();
        let copy = first.clone();
        drop(first);
        // A copy kept for a retry keeps the buffer out of the pool.
        assert!(POOL.lock().is_empty());
        drop(copy);
        let second = request_body(ApiKind::Anthropic, &req).unwrap();
        assert_eq!(second.as_ptr(), at, "the buffer is reused");
        assert_eq!(second.as_ref(), sent.as_slice());
        drop(second);
        assert_eq!(POOL.lock().len(), 1);
        release_buffers();
        assert!(POOL.lock().is_empty());
        // Small bodies never touch the pool.
        drop(request_body(ApiKind::Anthropic, &request_of(16)).unwrap());
        assert!(POOL.lock().is_empty());
    }

    /// A tool loop as a turn runs it: each request is the last one plus the answer and its
    /// results, with a smaller output limit as the window fills (the head changes). Every body
    /// keeps all of the last one's history but its last turn, and is the body written whole.
    #[test]
    fn the_next_request_of_a_tool_loop_writes_only_what_is_new() {
        for api in APIS {
            static LOOP: Pool = Pool::new(0);
            let mut req = ModelRequest {
                messages: vec![],
                ..crate::golden_tests::rich()
            };
            let mut kept = Vec::new();
            for step in 0..6 {
                req.max_output_tokens = Some([32_000, 9_999, 100_000][step % 3]);
                let big = "output line\n".repeat(1000 + step);
                if step == 0 {
                    req.messages.push(Message::User {
                        content: vec![UserPart::Text {
                            text: "prompt".into(),
                        }],
                    });
                }
                req.messages.push(Message::Assistant {
                    content: vec![AssistantPart::ToolCall {
                        id: format!("call_{step}"),
                        name: "read".into(),
                        arguments: r#"{"path":"a.rs"}"#.into(),
                    }]
                    .into(),
                });
                req.messages.push(result(&big));
                let expected = whole(api, &req);
                let encoded = encode(&LOOP, api, req.clone()).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&encoded.body),
                    String::from_utf8_lossy(&expected),
                    "{api:?} step {step}"
                );
                kept.push((encoded.kept, encoded.body.len()));
            }
            assert_eq!(kept[0].0, 0, "{api:?}: nothing to keep the first time");
            for (step, pair) in kept.windows(2).enumerate() {
                let ((_, last_len), (now_kept, _)) = (pair[0], pair[1]);
                // All of the last body but its last turn (a tool result of 13 KB escaped, which
                // was marked for caching as the last) and the closing brackets.
                assert!(
                    now_kept > 0 && now_kept + 13 * (1001 + step) + 1000 > last_len,
                    "{api:?} step {}: kept {now_kept} of {last_len}",
                    step + 1
                );
            }
            LOOP.clear();
        }
    }

    /// Another session's body stays in the pool for that session's next request.
    #[test]
    fn two_sessions_each_keep_their_own_body() {
        static TWO: Pool = Pool::new(0);
        let api = ApiKind::Anthropic;
        let session = |tag: &str| ModelRequest {
            messages: (0..6)
                .map(|i| match i % 2 {
                    0 => result(&format!("{tag} {i}")),
                    _ => Message::Assistant {
                        content: vec![AssistantPart::Text {
                            text: format!("{tag} answer {i}"),
                        }]
                        .into(),
                    },
                })
                .collect(),
            ..crate::golden_tests::minimal()
        };
        let (mut a, mut b) = (session("a"), session("b"));
        drop(encode(&TWO, api, a.clone()).unwrap());
        drop(encode(&TWO, api, b.clone()).unwrap());
        a.messages.push(result("a 6"));
        b.messages.push(result("b 6"));
        for req in [&a, &b] {
            let encoded = encode(&TWO, api, req.clone()).unwrap();
            assert!(encoded.kept > 0);
            assert_eq!(encoded.body.as_ref(), whole(api, req).as_slice());
        }
    }

    /// A small xorshift: the same sequence on every run.
    struct Dice(u64);

    impl Dice {
        fn roll(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// A message of any kind, from the golden conversation (every part each API maps, drops or
    /// rewrites) or new text; answers are sometimes an equal copy at another address.
    fn any_message(dice: &mut Dice, palette: &[Message], n: usize) -> Message {
        match dice.roll(5) {
            0 => Message::User {
                content: vec![UserPart::Text {
                    text: format!("prompt \"{n}\"\n").into(),
                }],
            },
            1 => result(&format!("result {n}\tline\n")),
            _ => match &palette[dice.roll(palette.len())] {
                Message::Assistant { content } if dice.roll(2) == 0 => Message::Assistant {
                    content: content.to_vec().into(),
                },
                message => message.clone(),
            },
        }
    }

    /// Requests changed every way a session changes them: answers and results added, the
    /// last messages replaced (a retry), the history cut (compaction), a message in the middle
    /// changed, the model, system prompt, tools or effort switched. Every body kept from the
    /// last one is byte for byte the body written whole.
    #[test]
    fn a_body_that_keeps_part_of_the_last_is_the_body_written_whole() {
        static ANY: Pool = Pool::new(0);
        let rich = crate::golden_tests::rich();
        let palette = rich.messages.clone();
        let mut kept_some = 0;
        for api in APIS {
            for seed in 1..=40u64 {
                let mut dice = Dice(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let mut req = crate::golden_tests::minimal();
                for step in 0..40 {
                    match dice.roll(10) {
                        0..=4 => {
                            for _ in 0..=dice.roll(3) {
                                req.messages.push(any_message(&mut dice, &palette, step));
                            }
                        }
                        5 => {
                            req.messages.pop();
                            req.messages.push(any_message(&mut dice, &palette, step));
                        }
                        6 => {
                            let keep = dice.roll(req.messages.len() + 1);
                            req.messages.truncate(keep);
                        }
                        7 if !req.messages.is_empty() => {
                            let at = dice.roll(req.messages.len());
                            req.messages[at] = any_message(&mut dice, &palette, step);
                        }
                        8 => match dice.roll(5) {
                            0 => req.model = format!("m-{step}"),
                            // A system message comes and goes: the chat APIs' lead element.
                            1 if dice.roll(3) == 0 => req.system = String::new(),
                            1 => req.system = format!("system {step}"),
                            2 => req.tools = rich.tools[..dice.roll(3)].to_vec(),
                            3 => req.max_output_tokens = Some(1 + dice.roll(99_999) as u32),
                            _ => req.effort = rich.effort,
                        },
                        _ => {}
                    }
                    let expected = whole(api, &req);
                    let encoded = encode(&ANY, api, req.clone()).unwrap();
                    if encoded.body.as_ref() != expected.as_slice() {
                        panic!(
                            "{api:?} seed {seed} step {step}, kept {}:\n{}\n!=\n{}",
                            encoded.kept,
                            String::from_utf8_lossy(&encoded.body),
                            String::from_utf8_lossy(&expected)
                        );
                    }
                    kept_some += usize::from(encoded.kept > 0);
                }
            }
        }
        // Most steps add to the history: most bodies keep part of the last.
        assert!(
            kept_some > 3 * 40 * 40 / 3,
            "kept part of the last body {kept_some} times"
        );
    }
}
