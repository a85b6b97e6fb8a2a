//! Golden transcripts of the main ACP flows: every JSON-RPC message both ways, normalized
//! (session ids, times, temp paths, the model catalog replaced), compared with
//! `crates/cli/tests/golden/<flow>.txt`. A change to what ferrite sends shows up as a diff of
//! those files, reviewed like code. `FERRITE_BLESS=1 cargo test -p ferrite --test all
//! suite::golden` rewrites them.
//!
//! The client waits for the agent to go quiet before each message it sends, so the interleaving
//! of the two directions is the same on every run.

use std::path::PathBuf;
use std::time::Duration;

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

/// How long the agent must stay silent before the client sends its next message.
const SETTLE: Duration = Duration::from_millis(300);

/// An ACP client that writes down every message, in the order sent and received.
struct Recorder {
    client: AcpClient,
    log: Vec<(&'static str, Value)>,
}

impl Recorder {
    fn new(client: AcpClient) -> Self {
        Self {
            client,
            log: vec![],
        }
    }

    /// Records what arrives until the agent is quiet.
    async fn settle(&mut self) -> Vec<Value> {
        let mut got = vec![];
        while let Some(m) = self.client.next_message(SETTLE).await {
            self.log.push(("<--", m.clone()));
            got.push(m);
        }
        got
    }

    /// Records what arrives until the answer to `id`, then until the agent is quiet.
    async fn until_answer(&mut self, id: &Value) -> Value {
        loop {
            let m = self
                .client
                .next_message(Duration::from_secs(20))
                .await
                .unwrap_or_else(|| panic!("no answer to {id}; stderr:\n{}", self.client.stderr()));
            self.log.push(("<--", m.clone()));
            if m.get("method").is_none() && m["id"] == *id {
                self.settle().await;
                return m;
            }
        }
    }

    async fn send(&mut self, method: &str, params: Value) -> Value {
        self.settle().await;
        let id = self.client.send_request(method, params.clone()).await;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.log.push(("-->", msg));
        id
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        self.until_answer(&id).await
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.client.notify(method, params.clone()).await;
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.log.push(("-->", msg));
    }

    async fn respond(&mut self, id: &Value, result: Value) {
        self.client.respond(id, result.clone()).await;
        self.log
            .push(("-->", json!({"jsonrpc": "2.0", "id": id, "result": result})));
    }

    /// Records what arrives until a message matching `pred`, and returns it.
    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = self
                .client
                .next_message(Duration::from_secs(20))
                .await
                .expect("the awaited message");
            self.log.push(("<--", m.clone()));
            if pred(&m) {
                return m;
            }
        }
    }
}

/// Replaces what differs between runs: temp paths, session ids, times, the catalog.
struct Normalizer {
    /// `(from, to)`, longest `from` first.
    literal: Vec<(String, String)>,
}

impl Normalizer {
    fn new(world: &World) -> Self {
        let mut literal = vec![
            (world.ws().display().to_string(), "<ws>".to_owned()),
            (world.ws.path().display().to_string(), "<ws>".to_owned()),
            (world.home().display().to_string(), "<home>".to_owned()),
        ];
        literal.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        Self { literal }
    }

    fn session(&mut self, id: &str) {
        let n = self
            .literal
            .iter()
            .filter(|(_, to)| to.starts_with("<session"))
            .count();
        self.literal
            .insert(0, (id.to_owned(), format!("<session-{}>", n + 1)));
    }

    fn value(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                if is_time(s) {
                    *s = "<time>".into();
                    return;
                }
                for (from, to) in &self.literal {
                    if s.contains(from.as_str()) {
                        *s = s.replace(from.as_str(), to);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.value(x)),
            Value::Object(o) => {
                // The catalog and the agent's version change without any change to the protocol.
                if o.get("id") == Some(&json!("model")) && o.contains_key("options") {
                    o.insert("options".into(), json!("<usable models>"));
                }
                for (k, x) in o.iter_mut() {
                    match k.as_str() {
                        "models" if x.is_array() => *x = json!("<catalog>"),
                        "agentInfo" => x["version"] = json!("<version>"),
                        _ => self.value(x),
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn transcript(&self, log: &[(&'static str, Value)]) -> String {
        let mut out = String::new();
        for (dir, msg) in log {
            let mut msg = msg.clone();
            self.value(&mut msg);
            out.push_str(dir);
            out.push('\n');
            out.push_str(&serde_json::to_string_pretty(&msg).unwrap());
            out.push_str("\n\n");
        }
        out
    }
}

/// `2026-01-01T00:00:00Z`, with or without fractions or an offset.
fn is_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && (s.ends_with('Z') || s[19..].contains('+') || s[19..].contains('-'))
}

/// Compares with the stored transcript, or stores it under `FERRITE_BLESS=1`.
fn check(name: &str, transcript: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"));
    if std::env::var_os("FERRITE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, transcript).unwrap();
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "no golden transcript {}; write it with FERRITE_BLESS=1",
            path.display()
        )
    });
    assert_eq!(
        stored, transcript,
        "{name}: rewrite with FERRITE_BLESS=1 if this is intended"
    );
}

struct Flow {
    world: World,
    fake: FakeProvider,
    rec: Recorder,
    norm: Normalizer,
}

/// An agent on the fake provider (Anthropic API), initialized, with one session. The transcript
/// starts after that unless `setup` is [`Setup::Recorded`] (the first flow shows it once).
async fn flow(setup: Setup) -> (Flow, String) {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut env = provider_env(&fake, Api::Anthropic);
    env.push(("FERRITE_DISCOVERY".into(), "off".into()));
    let mut rec = Recorder::new(world.spawn_acp(env));
    let norm = Normalizer::new(&world);
    rec.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}}, "clientInfo": {"name": "golden", "version": "0"}}),
    )
    .await;
    let mut f = Flow {
        world,
        fake,
        rec,
        norm,
    };
    let new = f
        .rec
        .call(
            "session/new",
            json!({"cwd": f.world.ws(), "mcpServers": []}),
        )
        .await;
    let sid = new["result"]["sessionId"].as_str().unwrap().to_owned();
    f.norm.session(&sid);
    if let Setup::Skipped = setup {
        f.rec.log.clear();
    }
    (f, sid)
}

enum Setup {
    Recorded,
    Skipped,
}

#[tokio::test]
async fn golden_prompt_answered_with_text() {
    let (mut f, sid) = flow(Setup::Recorded).await;
    f.fake.push(Script::new().text("Hello from the model."));
    let answer = f
        .rec
        .call("session/prompt", text_prompt(&sid, "Say hello"))
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    check("prompt_text", &f.norm.transcript(&f.rec.log));
}

#[tokio::test]
async fn golden_tool_call_with_a_permission_request() {
    let (mut f, sid) = flow(Setup::Skipped).await;
    let args = json!({"path": "notes.md", "content": "# Notes\n"});
    f.fake
        .push(Script::new().tool_call("w1", "write", args.to_string()));
    f.fake.push(Script::new().text("Wrote notes.md."));
    let id = f
        .rec
        .send("session/prompt", text_prompt(&sid, "Write notes"))
        .await;
    let ask = f
        .rec
        .until(|m| m["method"] == "session/request_permission")
        .await;
    f.rec
        .respond(
            &ask["id"],
            json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}),
        )
        .await;
    let answer = f.rec.until_answer(&id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(
        std::fs::read_to_string(f.world.ws().join("notes.md")).unwrap(),
        "# Notes\n"
    );
    check("tool_call_permission", &f.norm.transcript(&f.rec.log));
}

#[tokio::test]
async fn golden_cancel() {
    let (mut f, sid) = flow(Setup::Skipped).await;
    f.fake.push(
        Script::new()
            .text("Working on it")
            .stall(Duration::from_secs(30)),
    );
    let id = f
        .rec
        .send("session/prompt", text_prompt(&sid, "Take your time"))
        .await;
    f.rec
        .until(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .await;
    f.rec.settle().await;
    f.rec
        .notify("session/cancel", json!({"sessionId": sid}))
        .await;
    let answer = f.rec.until_answer(&id).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    check("cancel", &f.norm.transcript(&f.rec.log));
}

#[tokio::test]
async fn golden_load_replays_the_conversation() {
    let (mut f, sid) = flow(Setup::Skipped).await;
    f.fake.push(Script::new().text("Hello from the model."));
    f.rec
        .call("session/prompt", text_prompt(&sid, "Say hello"))
        .await;
    f.rec.client.close_stdin().await;
    f.rec
        .client
        .wait_exit(Duration::from_secs(5))
        .await
        .unwrap();
    // A second agent loads the session from its log.
    let mut env = provider_env(&f.fake, Api::Anthropic);
    env.push(("FERRITE_DISCOVERY".into(), "off".into()));
    let mut rec = Recorder::new(f.world.spawn_acp(env));
    rec.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "golden", "version": "0"}}),
    )
    .await;
    rec.log.clear();
    let answer = rec
        .call(
            "session/load",
            json!({"sessionId": sid, "cwd": f.world.ws(), "mcpServers": []}),
        )
        .await;
    assert!(answer["result"].is_object(), "{answer}");
    check("load_replay", &f.norm.transcript(&rec.log));
}
