//! The server in-process: `serve` over an in-memory pipe, a runtime on a temp home and no model
//! provider, driven line by line as a client would.

use std::time::Duration;

use ferrite_core::env::Env;
use ferrite_core::runtime::{Runtime, Services};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

use crate::{ServeOptions, serve};

struct Agent {
    to: WriteHalf<DuplexStream>,
    from: Lines<BufReader<ReadHalf<DuplexStream>>>,
    next: i64,
    home: tempfile::TempDir,
}

impl Agent {
    fn start() -> Self {
        let home = tempfile::tempdir().unwrap();
        // A model of no known provider: sessions open, every turn fails at once.
        let env = Env::from_pairs([("FERRITE_MODEL", "nowhere/test-model")]);
        let (runtime, events) = Runtime::new(Services::new(home.path().to_owned(), env, None));
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_in, server_out) = tokio::io::split(server);
        let options = ServeOptions {
            agent_version: "test".into(),
        };
        tokio::spawn(serve(runtime, events, server_in, server_out, options));
        let (from, to) = tokio::io::split(client);
        Self {
            to,
            from: BufReader::new(from).lines(),
            next: 1,
            home,
        }
    }

    async fn send(&mut self, msg: Value) {
        let line = format!("{msg}\n");
        self.to.write_all(line.as_bytes()).await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next);
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(msg).await;
        id
    }

    /// Every message up to the answer to `id`, and the answer.
    async fn until_answer(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut before = vec![];
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.from.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("the agent is still there");
            let m: Value = serde_json::from_str(&line).unwrap();
            if m.get("method").is_none() && m["id"] == *id {
                return (before, m);
            }
            before.push(m);
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        self.until_answer(&id).await.1
    }

    /// Nothing more arrives within a short while.
    async fn quiet(&mut self) -> Option<String> {
        tokio::time::timeout(Duration::from_millis(200), self.from.next_line())
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
    }
}

#[tokio::test]
async fn requests_wait_for_initialize_and_unknown_methods_are_not_found() {
    let mut a = Agent::start();
    let early = a.call("session/list", json!({})).await;
    assert_eq!(early["error"]["code"], -32600);
    let init = a.call("initialize", json!({"protocolVersion": 1})).await;
    assert_eq!(init["result"]["agentInfo"]["name"], "ferrite");
    let missing = a.call("session/nope", json!({})).await;
    assert_eq!(missing["error"]["code"], -32601);
    let bad = a.call("session/set_mode", json!({"sessionId": 3})).await;
    assert_eq!(bad["error"]["code"], -32602);
}

/// The handler hands the prompt over and answers nothing itself; the pump answers once, on the
/// turn's end, after the turn's updates.
#[tokio::test]
async fn a_prompt_is_answered_once_after_its_updates() {
    let mut a = Agent::start();
    a.call("initialize", json!({"protocolVersion": 1})).await;
    let cwd = a.home.path().canonicalize().unwrap();
    let new = a
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let sid = new["result"]["sessionId"].clone();
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]});
    let id = a.request("session/prompt", prompt).await;
    let (before, answer) = a.until_answer(&id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(
        answer["result"]["_meta"]["ferrite"]["turnFailure"]["terminalStatus"],
        "configuration_error"
    );
    assert!(
        before
            .iter()
            .any(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"),
        "the failure's text comes before the answer: {before:?}"
    );
    assert_eq!(a.quiet().await, None, "answered once, nothing after");
    // The session takes the next prompt: the waiting state was cleared.
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]});
    let again = a.call("session/prompt", prompt).await;
    assert_eq!(again["result"]["stopReason"], "end_turn");
}

#[tokio::test]
async fn a_prompt_to_an_unknown_session_is_refused_and_a_cancel_of_one_is_ignored() {
    let mut a = Agent::start();
    a.call("initialize", json!({"protocolVersion": 1})).await;
    let sid = "01a23088-a533-76d1-8e09-6ccfd9852c72";
    let cancel =
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}});
    a.send(cancel).await;
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]});
    let answer = a.call("session/prompt", prompt).await;
    assert_eq!(answer["error"]["code"], -32602);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session"),
        "{answer}"
    );
}

/// An agent that cannot start answers every request with the reason, in `message` and in
/// `data.details`, ignores notifications and responses, and ends with its input.
#[tokio::test]
async fn refuse_all_answers_every_request_with_the_reason() {
    // One pipe each way, so that closing the client's side ends the agent's input.
    let (mut to, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, from) = tokio::io::duplex(1 << 16);
    let done = tokio::spawn(crate::refuse_all("no home here", server_in, server_out));
    let mut from = BufReader::new(from).lines();
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {}}).to_string(),
        "{not json".to_owned(),
        json!({"jsonrpc": "2.0", "id": "x", "method": "session/new", "params": {}}).to_string(),
    ] {
        to.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    drop(to);
    let mut answers = vec![];
    while let Some(line) = from.next_line().await.unwrap() {
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    done.await.unwrap().unwrap();
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &Value::Null, &json!("x")]);
    for a in &answers {
        assert_eq!(a["error"]["code"], -32603);
        assert_eq!(a["error"]["message"], "no home here");
        assert_eq!(a["error"]["data"]["details"], "no home here");
    }
}
