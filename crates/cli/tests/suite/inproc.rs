//! An editor for in-process tests of the ACP server: `ferrite_acp::serve` runs on this test's
//! runtime over an in-memory pipe, with a runtime whose model is the scripted model. Every line
//! the agent writes is checked like the e2e client checks it (the ACP schema of its method, the
//! ordering invariants); every line either way is kept, for transcripts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ferrite_core::env::Env;
use ferrite_core::runtime::{Runtime, Services};
use ferrite_test_support::acp_order::OrderCheck;
use ferrite_test_support::schema::schema;
use ferrite_test_support::scripted_model::ScriptedModel;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};

/// The editor's end of the pipe.
pub struct Editor {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
    out: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    next_id: i64,
    /// The method of each request sent, by id, to check its answer against.
    methods: HashMap<String, String>,
    order: OrderCheck,
    /// Every line, `> ` sent by the editor, `< ` by the agent.
    pub transcript: Vec<String>,
}

impl Editor {
    /// Starts the server and initializes it (the editor has no file system to lend).
    pub async fn start(model: &Arc<ScriptedModel>) -> Editor {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let env = Env::from_pairs([
            ("ANTHROPIC_API_KEY", "test-key"),
            ("FERRITE_MODEL", "anthropic/claude-sonnet-5"),
            ("HOME", home.path().to_str().unwrap()),
        ]);
        let services = Services::new(home.path().to_owned(), env, Some(model.connector()));
        let (runtime, events) = Runtime::new(services);
        let (editor_end, agent_end) = tokio::io::duplex(1 << 16);
        let (agent_in, agent_out) = tokio::io::split(agent_end);
        let options = ferrite_acp::ServeOptions {
            agent_version: "0.0.0-test".into(),
        };
        tokio::spawn(ferrite_acp::serve(
            runtime, events, agent_in, agent_out, options,
        ));
        let (editor_in, out) = tokio::io::split(editor_end);
        let mut editor = Editor {
            home,
            ws,
            out,
            lines: BufReader::new(editor_in).lines(),
            next_id: 1,
            methods: HashMap::new(),
            order: OrderCheck::default(),
            transcript: vec![],
        };
        let init = json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}},
            "clientInfo": {"name": "ferrite-tests", "version": "0"}
        });
        let id = editor.send("initialize", init).await;
        editor.answer(&id).await;
        editor
    }

    async fn write(&mut self, message: Value) {
        let line = message.to_string();
        self.transcript.push(format!("> {line}"));
        self.out
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }

    pub async fn send(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.methods.insert(id.to_string(), method.to_owned());
        self.order.client_sent(&id, method, &params);
        let m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write(m).await;
        id
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        let m = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.write(m).await;
    }

    /// Answers the agent's request `request` with `result`.
    pub async fn respond(&mut self, request: &Value, result: Value) {
        let m = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        self.write(m).await;
    }

    /// The agent's next message.
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("a message in time")
            .unwrap()
            .expect("the agent is still there");
        self.transcript.push(format!("< {line}"));
        let m: Value = serde_json::from_str(&line).unwrap();
        let answered = match m.get("method") {
            None => m
                .get("id")
                .and_then(|id| self.methods.remove(&id.to_string())),
            Some(_) => None,
        };
        if let Err(e) = schema().check_agent_message(&m, answered.as_deref()) {
            panic!("{e}\n  in: {line:.400}");
        }
        let disorder = self.order.agent_sent(&m);
        assert!(
            disorder.is_empty(),
            "ordering: {disorder:?}\n  in: {line:.400}"
        );
        m
    }

    /// Reads until the answer to `id`; returns what came before it and the answer.
    pub async fn answer(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut before = vec![];
        loop {
            let m = self.next().await;
            if m.get("id") == Some(id) && m.get("method").is_none() {
                return (before, m);
            }
            before.push(m);
        }
    }

    pub async fn new_session(&mut self) -> String {
        let cwd = self.ws.path().to_owned();
        let id = self
            .send("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        let (_, a) = self.answer(&id).await;
        // What follows the answer: the session's usage, then its commands.
        while self.next().await["params"]["update"]["sessionUpdate"] != "available_commands_update"
        {
        }
        a["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    pub async fn prompt(&mut self, session: &str, text: &str) -> Value {
        let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        self.send("session/prompt", prompt).await
    }
}

pub fn agent_text(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect()
}
