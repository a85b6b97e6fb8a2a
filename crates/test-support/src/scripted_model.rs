//! A model that plays a script: one [`Reply`] per request, in order, through ferrite-core's
//! [`ModelClient`]/[`ModelConnector`] traits, so core's sessions and turns can be driven
//! in-process — no HTTP, no binary. It keeps every request it was sent.
//!
//! A reply is a list of steps: model events (text, reasoning, tool calls, usage), then how the
//! stream ends: completed (the default), with an error, stalled until the turn cancels it, or
//! with a panic (a bug in a provider client).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ferrite_core::catalog::Provider;
use ferrite_core::model::{
    AssistantPart, ModelClient, ModelConnector, ModelError, ModelErrorKind, ModelEvent,
    ModelRequest, ModelResponse, ModelStream, StopKind, Usage,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// One model response, as the stream will play it.
#[derive(Debug, Clone)]
pub struct Reply {
    events: Vec<ModelEvent>,
    content: Vec<AssistantPart>,
    usage: Usage,
    stop: Option<StopKind>,
    end: End,
}

#[derive(Debug, Clone)]
enum End {
    Completed,
    Error(ModelError),
    /// Pending until the request's cancel token fires, then a `Cancelled` error.
    Stall,
    Panic(String),
}

impl Default for Reply {
    fn default() -> Self {
        Self::new()
    }
}

impl Reply {
    pub fn new() -> Self {
        Self {
            events: vec![],
            content: vec![],
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            },
            stop: None,
            end: End::Completed,
        }
    }

    /// A text delta, also part of the final message.
    pub fn text(mut self, text: &str) -> Self {
        self.events.push(ModelEvent::TextDelta(text.to_owned()));
        match self.content.last_mut() {
            Some(AssistantPart::Text { text: t }) => t.push_str(text),
            _ => self.content.push(AssistantPart::Text {
                text: text.to_owned(),
            }),
        }
        self
    }

    /// A reasoning delta, also part of the final message.
    pub fn thought(mut self, text: &str) -> Self {
        self.events
            .push(ModelEvent::ReasoningDelta(text.to_owned()));
        self.content.push(AssistantPart::Reasoning {
            text: text.to_owned(),
            provider_data: None,
        });
        self
    }

    /// A tool call in the final message (stop reason `tool_use` unless set otherwise).
    pub fn tool_call(mut self, id: &str, name: &str, arguments: Value) -> Self {
        self.content.push(AssistantPart::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_string(),
        });
        self
    }

    /// The usage the final event reports (default: 10 in, 5 out).
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        };
        self
    }

    pub fn stop(mut self, stop: StopKind) -> Self {
        self.stop = Some(stop);
        self
    }

    /// After the events so far, the stream fails with `kind`.
    pub fn error(mut self, kind: ModelErrorKind, message: &str) -> Self {
        self.end = End::Error(ModelError::new(kind, message));
        self
    }

    /// After the events so far, the stream waits until the turn cancels it.
    pub fn stall(mut self) -> Self {
        self.end = End::Stall;
        self
    }

    /// After the events so far, the stream panics (on the task polling it: the turn's).
    pub fn panic(mut self, message: &str) -> Self {
        self.end = End::Panic(message.to_owned());
        self
    }

    fn into_steps(self) -> VecDeque<Step> {
        let mut steps: VecDeque<Step> = self.events.into_iter().map(Step::Event).collect();
        steps.push_back(match self.end {
            End::Completed => {
                let calls = self
                    .content
                    .iter()
                    .any(|p| matches!(p, AssistantPart::ToolCall { .. }));
                let default_stop = if calls {
                    StopKind::ToolUse
                } else {
                    StopKind::EndTurn
                };
                Step::Event(ModelEvent::Completed(ModelResponse {
                    content: self.content,
                    stop: self.stop.unwrap_or(default_stop),
                    usage: self.usage,
                }))
            }
            End::Error(e) => Step::Fail(e),
            End::Stall => Step::Stall,
            End::Panic(m) => Step::Panic(m),
        });
        steps
    }
}

enum Step {
    Event(ModelEvent),
    Fail(ModelError),
    Stall,
    Panic(String),
}

/// The scripted model. Cloning the `Arc` shares the script and the record of requests.
#[derive(Default)]
pub struct ScriptedModel {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Queues the reply to a later request.
    pub fn push(&self, reply: Reply) {
        self.replies.lock().unwrap().push_back(reply);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// Replies queued but not yet played.
    pub fn pending(&self) -> usize {
        self.replies.lock().unwrap().len()
    }

    /// A connector whose every provider is this model.
    pub fn connector(self: &Arc<Self>) -> Arc<dyn ModelConnector> {
        Arc::new(ScriptedConnector(self.clone()))
    }
}

impl ModelClient for ScriptedModel {
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        // A session-title request is answered aside: the script is the turns'.
        if request
            .system
            .starts_with(crate::fake_provider::TITLE_MARKER)
        {
            let reply = Reply::new().text("Scripted session title").usage(200, 5);
            return Box::pin(futures::stream::iter(
                reply
                    .into_steps()
                    .into_iter()
                    .filter_map(|s| match s {
                        Step::Event(e) => Some(Ok(e)),
                        _ => None,
                    })
                    .collect::<Vec<_>>(),
            ));
        }
        self.requests.lock().unwrap().push(request);
        let steps = match self.replies.lock().unwrap().pop_front() {
            Some(reply) => reply.into_steps(),
            None => VecDeque::from([Step::Fail(ModelError::new(
                ModelErrorKind::InvalidResponse,
                "the scripted model has no reply left for this request",
            ))]),
        };
        Box::pin(futures::stream::unfold(
            Some((steps, cancel)),
            |state| async move {
                let (mut steps, cancel) = state?;
                match steps.pop_front()? {
                    Step::Event(e) => Some((Ok(e), Some((steps, cancel)))),
                    Step::Fail(e) => Some((Err(e), None)),
                    Step::Stall => {
                        cancel.cancelled().await;
                        let e = ModelError::new(ModelErrorKind::Cancelled, "cancelled");
                        Some((Err(e), None))
                    }
                    Step::Panic(message) => panic!("{message}"),
                }
            },
        ))
    }
}

struct ScriptedConnector(Arc<ScriptedModel>);

impl ModelConnector for ScriptedConnector {
    fn connect(
        &self,
        _provider: &Provider,
        _api_key: Option<&str>,
    ) -> Result<Arc<dyn ModelClient>, ModelError> {
        Ok(self.0.clone())
    }
}
