//! An ACP client for tests: starts the real `ferrite` binary, speaks JSON-RPC over its stdio,
//! and validates every line the agent writes (JSON, one object per line, schema of its method,
//! and the ordering invariants of [`crate::acp_order`]). A test that ends with violations fails.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use crate::acp_order::OrderCheck;
use crate::schema::schema;

/// How long a test waits for any single answer before failing.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

pub struct AcpClient {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::UnboundedReceiver<Value>,
    backlog: VecDeque<Value>,
    next_id: i64,
    methods: Arc<Mutex<HashMap<String, String>>>,
    order: Arc<Mutex<OrderCheck>>,
    violations: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
}

/// A JSON-RPC answer: exactly one of `result` / `error` is set.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub result: Option<Value>,
    pub error: Option<Value>,
}

impl Answer {
    pub fn from_message(m: &Value) -> Self {
        Self {
            result: m.get("result").cloned(),
            error: m.get("error").cloned(),
        }
    }

    /// The result; panics with the error when there is none.
    pub fn ok(self) -> Value {
        match (self.result, self.error) {
            (Some(r), _) => r,
            (None, e) => panic!("expected a result, got error {e:?}"),
        }
    }

    /// The error code; panics when the call succeeded.
    pub fn code(&self) -> i64 {
        match &self.error {
            Some(e) => e["code"].as_i64().unwrap_or(0),
            None => panic!("expected an error, got {:?}", self.result),
        }
    }

    pub fn message(&self) -> String {
        self.error
            .as_ref()
            .and_then(|e| e["message"].as_str())
            .unwrap_or_default()
            .to_owned()
    }
}

pub struct Spawn<'a> {
    pub bin: &'a Path,
    pub home: &'a Path,
    pub args: &'a [&'a str],
    pub env: Vec<(String, String)>,
}

impl AcpClient {
    /// Starts `bin acp` with a clean environment: `FERRITE_HOME=home`, `HOME` inside it, `PATH`,
    /// plus `env`. No provider keys leak in from the developer's shell.
    pub fn spawn(bin: &Path, home: &Path, env: &[(&str, &str)]) -> Self {
        Self::spawn_with(Spawn {
            bin,
            home,
            args: &["acp"],
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        })
    }

    pub fn spawn_with(s: Spawn<'_>) -> Self {
        let mut cmd = Command::new(s.bin);
        cmd.args(s.args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FERRITE_HOME", s.home)
            .env("HOME", s.home.join("home"))
            .envs(s.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn ferrite");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let stderr_pipe = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::unbounded_channel();
        let methods: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let order: Arc<Mutex<OrderCheck>> = Arc::default();
        let violations: Arc<Mutex<Vec<String>>> = Arc::default();
        let stderr: Arc<Mutex<String>> = Arc::default();
        {
            let methods = methods.clone();
            let order = order.clone();
            let violations = violations.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stdout).lines();
                loop {
                    let line = match lines.next_line().await {
                        Ok(Some(l)) => l,
                        Ok(None) => break,
                        Err(e) => {
                            violations
                                .lock()
                                .unwrap()
                                .push(format!("stdout is not UTF-8 lines: {e}"));
                            break;
                        }
                    };
                    let msg: Value = match serde_json::from_str(&line) {
                        Ok(v @ Value::Object(_)) => v,
                        _ => {
                            violations
                                .lock()
                                .unwrap()
                                .push(format!("not a JSON object on stdout: {line:.200}"));
                            continue;
                        }
                    };
                    let request_method = if msg.get("method").is_none() {
                        msg.get("id")
                            .and_then(|id| methods.lock().unwrap().remove(&id.to_string()))
                    } else {
                        None
                    };
                    if let Err(e) = schema().check_agent_message(&msg, request_method.as_deref()) {
                        violations
                            .lock()
                            .unwrap()
                            .push(format!("{e}\n  in: {line:.400}"));
                    }
                    for e in order.lock().unwrap().agent_sent(&msg) {
                        violations
                            .lock()
                            .unwrap()
                            .push(format!("ordering: {e}\n  in: {line:.400}"));
                    }
                    if tx.send(msg).is_err() {
                        break;
                    }
                }
            });
        }
        {
            let stderr = stderr.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut pipe = stderr_pipe;
                let mut chunk = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    *stderr.lock().unwrap() = String::from_utf8_lossy(&buf).into_owned();
                }
            });
        }
        Self {
            child,
            stdin,
            rx,
            backlog: VecDeque::new(),
            next_id: 1,
            methods,
            order,
            violations,
            stderr,
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Writes raw bytes (a line, or garbage) to the agent's stdin.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).await.expect("write stdin");
        stdin.flush().await.expect("flush stdin");
    }

    /// Sends a request and returns its id without waiting.
    pub async fn send_request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send_request_as(id, method, params).await
    }

    /// Sends a request under an id of the caller's choosing (a string id, say).
    pub async fn send_request_as(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.methods
            .lock()
            .unwrap()
            .insert(id.to_string(), method.to_owned());
        self.order.lock().unwrap().client_sent(&id, method, &params);
        let line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.send_raw(format!("{line}\n").as_bytes()).await;
        id
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        self.send_raw(format!("{line}\n").as_bytes()).await;
    }

    /// Answers a request the agent sent.
    pub async fn respond(&mut self, id: &Value, result: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        self.send_raw(format!("{line}\n").as_bytes()).await;
    }

    /// Answers a request the agent sent with a JSON-RPC error.
    pub async fn respond_error(&mut self, id: &Value, code: i64, message: &str) {
        let line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            .to_string();
        self.send_raw(format!("{line}\n").as_bytes()).await;
    }

    /// Sends a request and waits for its answer (other messages are kept for later).
    pub async fn request(&mut self, method: &str, params: Value) -> Answer {
        let id = self.send_request(method, params).await;
        self.wait_answer(&id).await
    }

    pub async fn wait_answer(&mut self, id: &Value) -> Answer {
        let (_, answer) = self.collect_until_answer(id).await;
        answer
    }

    /// Every message that arrives before the answer to `id`, and the answer.
    pub async fn collect_until_answer(&mut self, id: &Value) -> (Vec<Value>, Answer) {
        let mut before = Vec::new();
        // Earlier messages in the backlog come first.
        while let Some(m) = self.backlog.pop_front() {
            if is_answer_to(&m, id) {
                return (before, Answer::from_message(&m));
            }
            before.push(m);
        }
        loop {
            let m = self.recv(DEFAULT_TIMEOUT).await.unwrap_or_else(|| {
                panic!(
                    "no answer to request {id} within {DEFAULT_TIMEOUT:?}; stderr:\n{}",
                    self.stderr()
                )
            });
            if is_answer_to(&m, id) {
                return (before, Answer::from_message(&m));
            }
            before.push(m);
        }
    }

    async fn recv(&mut self, timeout: Duration) -> Option<Value> {
        tokio::time::timeout(timeout, self.rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// The next message of any kind (backlog first), or `None` after `timeout`.
    pub async fn next_message(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(m) = self.backlog.pop_front() {
            return Some(m);
        }
        self.recv(timeout).await
    }

    /// Waits for a message matching `pred`; others are kept in order.
    pub async fn wait_for(
        &mut self,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        if let Some(pos) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(pos);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let m = self.recv(left).await?;
            if pred(&m) {
                return Some(m);
            }
            self.backlog.push_back(m);
        }
    }

    /// Messages already received and not consumed, and any that arrive within `quiet`.
    pub async fn drain(&mut self, quiet: Duration) -> Vec<Value> {
        let mut out: Vec<Value> = self.backlog.drain(..).collect();
        while let Some(m) = self.recv(quiet).await {
            out.push(m);
        }
        out
    }

    /// Performs `initialize` with common client capabilities.
    pub async fn initialize(&mut self) -> Value {
        self.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}}, "clientInfo": {"name": "ferrite-tests", "version": "0"}}),
        )
        .await
        .ok()
    }

    /// `session/new` in `cwd`; returns the whole result.
    pub async fn new_session(&mut self, cwd: &Path) -> Value {
        self.request("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await
            .ok()
    }

    pub async fn close_stdin(&mut self) {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.shutdown().await;
        }
    }

    /// Waits for the agent to exit.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(timeout, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// SIGKILL, like a crash.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// Schema, framing and ordering problems seen so far.
    pub fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }
}

fn is_answer_to(m: &Value, id: &Value) -> bool {
    m.get("method").is_none() && m.get("id") == Some(id)
}

impl Drop for AcpClient {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let v = self.violations();
        assert!(
            v.is_empty(),
            "the agent sent messages that violate the ACP schema or the ordering invariants:\n{}",
            v.join("\n")
        );
    }
}

/// `session/update` notifications of a message list, as `(sessionUpdate kind, update)`.
pub fn updates(messages: &[Value]) -> Vec<(String, Value)> {
    messages
        .iter()
        .filter(|m| m.get("method") == Some(&json!("session/update")))
        .map(|m| {
            let u = m["params"]["update"].clone();
            (
                u["sessionUpdate"].as_str().unwrap_or_default().to_owned(),
                u,
            )
        })
        .collect()
}

/// The text of all `agent_message_chunk`s, concatenated.
pub fn agent_text(messages: &[Value]) -> String {
    updates(messages)
        .into_iter()
        .filter(|(k, _)| k == "agent_message_chunk")
        .filter_map(|(_, u)| u["content"]["text"].as_str().map(str::to_owned))
        .collect()
}
