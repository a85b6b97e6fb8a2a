//! The probes of the conformance test: each drives a fresh `ferrite acp` (the client advertises
//! no capabilities, like acp-tck's mock client) against the loopback fake provider and records
//! what it saw under the requirement ids it checks.

use std::time::Duration;

use ferrite_test_support::fake_provider::FakeProvider;
use ferrite_test_support::{AcpClient, Answer, updates};
use serde_json::{Value, json};

use super::super::common::World;
use super::super::turns::{Api, provider_env};
use super::Record;

pub(super) const QUIET: Duration = Duration::from_millis(600);
pub(super) const STOPS: [&str; 5] = [
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];
/// The kinds a `session/load` replays (conversation history).
pub(super) const REPLAY: [&str; 6] = [
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
];
const SCHEMA: &str = include_str!("../../../../test-support/fixtures/acp-schema-1.20.0.json");

/// A running agent, its home and workspace, and the fake provider it talks to.
pub(super) struct Agent {
    pub(super) world: World,
    pub(super) fake: FakeProvider,
    pub(super) c: AcpClient,
    pub(super) r: Record,
}

impl Agent {
    pub(super) async fn start(r: &Record) -> Agent {
        let agent = Agent::uninitialized(r, World::new()).await;
        agent.initialized().await
    }

    pub(super) async fn uninitialized(r: &Record, world: World) -> Agent {
        let fake = FakeProvider::start().await.unwrap();
        let c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
        Agent {
            world,
            fake,
            c,
            r: r.clone(),
        }
    }

    pub(super) async fn initialized(mut self) -> Agent {
        let init = self.call("initialize", init_params(1)).await.ok();
        keys(&self.r, "InitializeResponse", &init);
        self
    }

    /// A request and its answer, checked for the JSON-RPC answer shape.
    pub(super) async fn call(&mut self, method: &str, params: Value) -> Answer {
        let a = self.c.request(method, params).await;
        answer_shape(&self.r, &a);
        a
    }

    pub(super) async fn session(&mut self) -> String {
        let ws = self.world.ws();
        let new = self
            .call("session/new", json!({"cwd": ws, "mcpServers": []}))
            .await
            .ok();
        keys(&self.r, "NewSessionResponse", &new);
        new["sessionId"].as_str().unwrap_or_default().to_owned()
    }

    /// A prompt and everything before its answer.
    pub(super) async fn prompt(&mut self, sid: &str, blocks: Value) -> (Vec<Value>, Answer) {
        let id = self
            .c
            .send_request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": blocks}),
            )
            .await;
        let (before, a) = self.c.collect_until_answer(&id).await;
        answer_shape(&self.r, &a);
        if let Some(res) = &a.result {
            keys(&self.r, "PromptResponse", res);
        }
        (before, a)
    }

    /// Records what the client's own checks (framing, UTF-8, schema, ordering) found.
    pub(super) fn finish(self) -> World {
        let v = self.c.violations();
        let utf8: Vec<_> = v.iter().filter(|e| e.contains("UTF-8")).collect();
        let json: Vec<_> = v
            .iter()
            .filter(|e| e.starts_with("not a JSON object"))
            .collect();
        let rest: Vec<_> = (v.iter())
            .filter(|e| !e.contains("UTF-8") && !e.starts_with("not a JSON object"))
            .collect();
        self.r
            .check("ACP-TRANSPORT-002", utf8.is_empty(), format!("{utf8:?}"));
        self.r
            .check("ACP-TRANSPORT-001", json.is_empty(), format!("{json:?}"));
        self.r
            .check("ACP-SCHEMA-001", rest.is_empty(), format!("{rest:?}"));
        self.world
    }
}

pub(super) fn init_params(version: u64) -> Value {
    json!({"protocolVersion": version, "clientCapabilities": {},
           "clientInfo": {"name": "conformance", "version": "1"}})
}

/// What `initialize` advertises, from an agent of its own.
pub(super) async fn advertised() -> Value {
    let mut a = Agent::uninitialized(&Record::default(), World::new()).await;
    let init = a.call("initialize", init_params(1)).await.ok();
    a.finish();
    init
}

pub(super) fn answer_shape(r: &Record, a: &Answer) {
    r.check(
        "ACP-JSONRPC-002",
        a.result.is_some() != a.error.is_some(),
        format!("{a:?}"),
    );
    if let Some(e) = &a.error {
        r.check(
            "ACP-JSONRPC-002",
            e["code"].is_i64() && e["message"].is_string(),
            format!("error shape: {e}"),
        );
        let m = e["message"].as_str().unwrap_or_default();
        r.check(
            "ACP-ERROR-001",
            !m.is_empty() && !m.contains('\n'),
            format!("message {m:?}"),
        );
    }
}

/// ACP-SCHEMA-002: the result's root keys are properties of its definition (or `_meta`).
pub(super) fn keys(r: &Record, def: &str, result: &Value) {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let props = &schema["$defs"][def]["properties"];
    let extra: Vec<&String> = (result.as_object().into_iter().flatten())
        .map(|(k, _)| k)
        .filter(|k| props.get(k.as_str()).is_none() && *k != "_meta")
        .collect();
    r.check(
        "ACP-SCHEMA-002",
        extra.is_empty(),
        format!("{def} has {extra:?}"),
    );
}

pub(super) fn updates_for(msgs: &[Value], sid: &str) -> Vec<(String, Value)> {
    let mine: Vec<Value> = (msgs.iter())
        .filter(|m| m["params"]["sessionId"] == sid)
        .cloned()
        .collect();
    updates(&mine)
}
