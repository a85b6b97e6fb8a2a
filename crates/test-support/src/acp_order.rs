//! The ordering invariants of one ACP stream (docs/acp.md, "One ordered stream per session"),
//! checked on every message the agent writes, in the order the client reads them:
//!
//! - a `tool_call` precedes every `tool_call_update`, `session/request_permission` and
//!   `fs/read_text_file` about that call (a read must come while a call of its session runs
//!   that names the file in its `locations`, or names no file at all: a hidden subagent's
//!   `task` card reads for the subagent without taking on its files);
//! - no conversation update of a turn follows that turn's `session/prompt` answer (unless
//!   another prompt of the session, queued behind it, still awaits its answer);
//! - a `session/load` replay is complete before the load answer;
//! - nothing is about a session the client never heard of: one it named, was given (a
//!   `sessionId` in an answer), or that a `subagent_update` announced as a child first.
//!
//! The client tells the checker what it sent (prompts and loads open a window for conversation
//! updates); the checker answers each agent message with the violations it shows.

use std::collections::HashMap;

use serde_json::Value;

/// Where a session is, as seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Created or resumed; nothing asked of it yet. Notices may still arrive.
    Open,
    /// A prompt or a load is under way: conversation updates belong here.
    Busy,
    /// The last prompt or load was answered: no conversation update may come until the next.
    Answered(&'static str),
}

#[derive(Debug)]
struct Session {
    phase: Phase,
    /// Tool calls announced by a `tool_call`: id → (finished, locations).
    calls: HashMap<String, (bool, Vec<String>)>,
}

impl Default for Session {
    fn default() -> Self {
        Self {
            phase: Phase::Open,
            calls: HashMap::new(),
        }
    }
}

/// A request the client sent that opens or closes a session's conversation window.
#[derive(Debug)]
struct Sent {
    method: &'static str,
    session: String,
}

#[derive(Debug, Default)]
pub struct OrderCheck {
    sessions: HashMap<String, Session>,
    /// Prompt and load requests awaiting their answer, by JSON id.
    sent: HashMap<String, Sent>,
    /// Messages checked so far, for error context.
    seen: usize,
    /// Sessions the client heard of: named in its requests, given in answers, announced as
    /// children.
    known: std::collections::HashSet<String>,
}

/// Updates that are part of the conversation (a turn's output or a replay).
const CONVERSATION: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
];

impl OrderCheck {
    /// The client sent request `id`.
    pub fn client_sent(&mut self, id: &Value, method: &str, params: &Value) {
        if let Some(session) = params["sessionId"].as_str() {
            self.known.insert(session.to_owned());
        }
        let method = match method {
            "session/prompt" => "session/prompt",
            "session/load" => "session/load",
            _ => return,
        };
        let Some(session) = params["sessionId"].as_str() else {
            return;
        };
        self.sessions.entry(session.to_owned()).or_default().phase = Phase::Busy;
        self.sent.insert(
            id.to_string(),
            Sent {
                method,
                session: session.to_owned(),
            },
        );
    }

    /// Checks one message from the agent; returns what it violates.
    pub fn agent_sent(&mut self, msg: &Value) -> Vec<String> {
        self.seen += 1;
        let n = self.seen;
        let mut bad = Vec::new();
        if let Some(session) = msg["result"]["sessionId"].as_str() {
            self.known.insert(session.to_owned());
        }
        if msg.get("method").is_some()
            && let Some(session) = msg["params"]["sessionId"].as_str()
            && msg["params"]["update"]["sessionUpdate"] != "subagent_update"
            && !self.known.contains(session)
        {
            bad.push(format!(
                "{} about session {session}, which the client never created, loaded or was told of \
                 (a child session needs a subagent_update on its parent first)",
                msg["method"]
            ));
        }
        match msg.get("method").and_then(Value::as_str) {
            Some("session/update") => self.update(&msg["params"], &mut bad),
            Some("session/request_permission") => {
                let p = &msg["params"];
                let session = p["sessionId"].as_str().unwrap_or_default();
                let call = p["toolCall"]["toolCallId"].as_str().unwrap_or_default();
                let known = self
                    .sessions
                    .get(session)
                    .is_some_and(|s| s.calls.contains_key(call));
                if !known {
                    bad.push(format!(
                        "session/request_permission about tool call {call:?} of session {session} arrived before its tool_call"
                    ));
                }
            }
            Some("fs/read_text_file") => {
                let p = &msg["params"];
                let session = p["sessionId"].as_str().unwrap_or_default();
                let path = p["path"].as_str().unwrap_or_default();
                let running = self.sessions.get(session).is_some_and(|s| {
                    s.calls.values().any(|(done, locs)| {
                        !done && (locs.is_empty() || locs.iter().any(|l| l == path))
                    })
                });
                if !running {
                    bad.push(format!(
                        "fs/read_text_file of {path} (session {session}) arrived before a running tool_call naming that file"
                    ));
                }
            }
            Some(_) => {}
            None => {
                // An error answer (e.g. "a turn is already running") ends no turn.
                if let Some(sent) = msg
                    .get("id")
                    .and_then(|id| self.sent.remove(&id.to_string()))
                    && msg.get("result").is_some()
                    // Prompts queued behind the answered one keep the window open.
                    && !self.sent.values().any(|o| o.session == sent.session)
                    && let Some(s) = self.sessions.get_mut(&sent.session)
                {
                    s.phase = Phase::Answered(sent.method);
                }
            }
        }
        for b in &mut bad {
            b.push_str(&format!(" (agent message #{n})"));
        }
        bad
    }

    fn update(&mut self, params: &Value, bad: &mut Vec<String>) {
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let u = &params["update"];
        let kind = u["sessionUpdate"].as_str().unwrap_or_default();
        if kind == "subagent_update"
            && let Some(child) = u["sessionId"].as_str()
        {
            self.known.insert(child.to_owned());
        }
        let s = self.sessions.entry(session_id.clone()).or_default();
        // A notice sent as a chunk (ferrite marks it) is not part of any turn.
        let notice = u["_meta"]["ferrite"]["notice"] == true;
        if let Phase::Answered(method) = s.phase
            && CONVERSATION.contains(&kind)
            && !notice
        {
            bad.push(format!(
                "{kind} for session {session_id} arrived after the {method} answer"
            ));
        }
        let call = u["toolCallId"].as_str().unwrap_or_default().to_owned();
        let finished = matches!(u["status"].as_str(), Some("completed" | "failed"));
        // An update's `locations` replace the call's (ACP: fields present are replaced).
        let locations = u["locations"].as_array().map(|l| {
            l.iter()
                .filter_map(|x| x["path"].as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        });
        match kind {
            "tool_call" => {
                s.calls
                    .insert(call, (finished, locations.unwrap_or_default()));
            }
            "tool_call_update" => match s.calls.get_mut(&call) {
                Some(entry) => {
                    entry.0 |= finished;
                    if let Some(locations) = locations {
                        entry.1 = locations;
                    }
                }
                None => bad.push(format!(
                    "tool_call_update for tool call {call:?} of session {session_id} arrived before its tool_call"
                )),
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn update(session: &str, u: Value) -> Value {
        json!({"method": "session/update", "params": {"sessionId": session, "update": u}})
    }

    #[test]
    fn a_child_session_is_announced_before_anything_about_it() {
        let mut c = OrderCheck::default();
        c.client_sent(&json!(1), "session/prompt", &json!({"sessionId": "s"}));
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}});
        assert_eq!(c.agent_sent(&update("child", chunk.clone())).len(), 1);
        let announce = json!({"sessionUpdate": "subagent_update", "sessionId": "child"});
        assert!(c.agent_sent(&update("s", announce)).is_empty());
        assert!(c.agent_sent(&update("child", chunk)).is_empty());
    }

    #[test]
    fn a_permission_request_before_its_tool_call_is_a_violation() {
        let mut c = OrderCheck::default();
        c.client_sent(&json!(1), "session/prompt", &json!({"sessionId": "s"}));
        let ask = json!({"method": "session/request_permission", "id": "ferrite-0", "params": {"sessionId": "s", "toolCall": {"toolCallId": "t1"}, "options": []}});
        assert_eq!(c.agent_sent(&ask).len(), 1);
        let call = update(
            "s",
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x"}),
        );
        assert!(c.agent_sent(&call).is_empty());
        assert!(c.agent_sent(&ask).is_empty());
    }

    #[test]
    fn reads_need_a_running_call_naming_the_file() {
        let mut c = OrderCheck::default();
        c.client_sent(&json!(1), "session/prompt", &json!({"sessionId": "s"}));
        let read = json!({"method": "fs/read_text_file", "id": "ferrite-1", "params": {"sessionId": "s", "path": "/w/a.rs"}});
        assert_eq!(c.agent_sent(&read).len(), 1);
        c.agent_sent(&update("s", json!({"sessionUpdate": "tool_call", "toolCallId": "r", "title": "read", "locations": [{"path": "/w/a.rs"}]})));
        assert!(c.agent_sent(&read).is_empty());
        c.agent_sent(&update(
            "s",
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "r", "status": "completed"}),
        ));
        assert_eq!(c.agent_sent(&read).len(), 1, "the call is over");
        c.agent_sent(&update("s", json!({"sessionUpdate": "tool_call", "toolCallId": "e", "title": "edit", "locations": [{"path": "/w/b.rs"}]})));
        assert_eq!(c.agent_sent(&read).len(), 1, "a call about another file");
        // A call that names no file (a hidden subagent's task card) reads for its subagent.
        c.agent_sent(&update(
            "s",
            json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Look around"}),
        ));
        assert!(c.agent_sent(&read).is_empty());
    }

    #[test]
    fn nothing_of_a_turn_after_its_answer() {
        let mut c = OrderCheck::default();
        c.client_sent(&json!(7), "session/prompt", &json!({"sessionId": "s"}));
        let chunk = update(
            "s",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}),
        );
        assert!(c.agent_sent(&chunk).is_empty());
        assert!(
            c.agent_sent(&json!({"id": 7, "result": {"stopReason": "end_turn"}}))
                .is_empty()
        );
        assert_eq!(c.agent_sent(&chunk).len(), 1);
        let usage = update(
            "s",
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 2}),
        );
        assert!(c.agent_sent(&usage).is_empty(), "not conversation");
        let unknown_update = update(
            "s",
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "nope"}),
        );
        assert_eq!(c.agent_sent(&unknown_update).len(), 2);
    }

    #[test]
    fn a_replay_after_the_load_answer_is_a_violation() {
        let mut c = OrderCheck::default();
        c.client_sent(&json!(3), "session/load", &json!({"sessionId": "s"}));
        let user = update(
            "s",
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}),
        );
        assert!(c.agent_sent(&user).is_empty());
        c.agent_sent(&json!({"id": 3, "result": {}}));
        let late = c.agent_sent(&user);
        assert!(
            late[0].contains("after the session/load answer"),
            "{late:?}"
        );
    }
}
