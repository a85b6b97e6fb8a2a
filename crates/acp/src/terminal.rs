//! Commands drawn as terminals, for clients that advertise `clientCapabilities._meta.
//! terminal_output: true` (Zed draws its own agent's commands this way, and the Claude adapter's
//! through these fields): the `tool_call` of a command carries `_meta.terminal_info
//! {terminal_id}` and `[{type: "terminal", terminalId}]` as its content, its output goes out as
//! `_meta.terminal_output {terminal_id, data}` (what was written since the last update, colours
//! kept), and its end as `_meta.terminal_exit {terminal_id, exit_code, signal}`. The terminal id
//! is the tool call id. A command that never ran (refused, cancelled before it started) ends
//! with its text as any call does. Every other client gets the fenced text, and the model's
//! result is the same either way.
//!
//! Live turns only: a replay (`session/load`) shows the text each call ended with.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::events::Event;
use ferrite_store::content::{ToolCallUpdateView, ToolKind, ToolStatus};
use ferrite_store::ids::SessionId;
use serde_json::{Map, Value, json};

use crate::mapping::{self, Takes};

/// The commands shown as terminals that are not finished (session, call id), and whether each
/// started running.
#[derive(Default)]
pub(crate) struct Terminals(Mutex<HashMap<(SessionId, String), bool>>);

fn meta(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

impl Terminals {
    fn calls(&self) -> MutexGuard<'_, HashMap<(SessionId, String), bool>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The updates for `event` with commands drawn as terminals; `None` when the event is not
    /// about one (it is mapped as for any client).
    pub fn updates(&self, session: &SessionId, event: &Event) -> Option<Vec<acp::SessionUpdate>> {
        use acp::SessionUpdate as U;
        match event {
            Event::ToolCall(v) if v.kind == ToolKind::Execute => {
                let mapped = mapping::updates(event, Takes::BASE);
                self.calls().insert((session.clone(), v.id.clone()), false);
                Some(
                    mapped
                        .into_iter()
                        .map(|u| match u {
                            U::ToolCall(tc) => U::ToolCall(
                                tc.content(vec![terminal_content(&v.id)])
                                    .meta(meta("terminal_info", json!({ "terminal_id": v.id }))),
                            ),
                            other => other,
                        })
                        .collect(),
                )
            }
            Event::ToolCallUpdate(v) => self.update(session, v),
            _ => None,
        }
    }

    /// A turn of `session` ended: a call it left unfinished (its task aborted) is not kept.
    /// The session's next turn starts only after this one's end.
    pub fn turn_ended(&self, session: &SessionId) {
        self.calls().retain(|(s, _), _| s != session);
    }

    fn update(
        &self,
        session: &SessionId,
        v: &ToolCallUpdateView,
    ) -> Option<Vec<acp::SessionUpdate>> {
        use acp::SessionUpdate as U;
        let key = (session.clone(), v.id.clone());
        let finished = matches!(v.status, Some(ToolStatus::Completed | ToolStatus::Failed));
        let started = {
            let mut calls = self.calls();
            let started = calls.get_mut(&key)?;
            *started |= v.terminal_output.is_some() || v.terminal_exit.is_some();
            let started = *started;
            if finished {
                calls.remove(&key);
            }
            started
        };
        let id = acp::ToolCallId::new(v.id.clone());
        let mut out = Vec::new();
        if let Some(data) = &v.terminal_output {
            out.push(U::ToolCallUpdate(
                acp::ToolCallUpdate::new(id.clone(), acp::ToolCallUpdateFields::new()).meta(meta(
                    "terminal_output",
                    json!({ "terminal_id": v.id, "data": data.as_ref() }),
                )),
            ));
        }
        if let Some(exit) = &v.terminal_exit {
            out.push(U::ToolCallUpdate(
                acp::ToolCallUpdate::new(id.clone(), acp::ToolCallUpdateFields::new()).meta(meta(
                    "terminal_exit",
                    json!({
                        "terminal_id": v.id,
                        "exit_code": exit.exit_code,
                        "signal": exit.signal,
                    }),
                )),
            ));
        }
        // What else the update says (status, the final result): once the command ran, the
        // terminal stays its content instead of the text.
        let rest = ToolCallUpdateView {
            terminal_output: None,
            terminal_exit: None,
            content: match started {
                true => None,
                false => v.content.clone(),
            },
            ..v.clone()
        };
        if rest.status.is_some()
            || rest.title.is_some()
            || rest.content.is_some()
            || rest.locations.is_some()
            || rest.raw_output.is_some()
        {
            for u in mapping::updates(&Event::ToolCallUpdate(rest), Takes::BASE) {
                out.push(match u {
                    U::ToolCallUpdate(mut tcu) if started && finished => {
                        tcu.fields.content = Some(vec![terminal_content(&v.id)]);
                        U::ToolCallUpdate(tcu)
                    }
                    other => other,
                });
            }
        }
        Some(out)
    }
}

fn terminal_content(id: &str) -> acp::ToolCallContent {
    acp::ToolCallContent::Terminal(acp::Terminal::new(acp::TerminalId::new(id.to_owned())))
}
