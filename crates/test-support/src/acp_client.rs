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
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
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
    /// Answers `collect_until_answer` met while it waited for another one: they are in what it
    /// returned (their order matters to a test), and kept here for a later wait for their id.
    answered: HashMap<String, Value>,
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
        let checks = Checks::default();
        let stderr: Arc<Mutex<String>> = Arc::default();
        tokio::spawn(checks.clone().read_stdout(stdout, tx));
        tokio::spawn(keep_stderr(stderr_pipe, stderr.clone()));
        Self {
            child,
            stdin,
            rx,
            backlog: VecDeque::new(),
            answered: HashMap::new(),
            next_id: 1,
            methods: checks.methods,
            order: checks.order,
            violations: checks.violations,
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
        // An id used again: an answer kept from its earlier use is not this request's.
        self.answered.remove(&id.to_string());
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

    /// Every message that arrives before the answer to `id`, and the answer. Answers to other
    /// requests among them stay to be found by a later wait for their id.
    pub async fn collect_until_answer(&mut self, id: &Value) -> (Vec<Value>, Answer) {
        if let Some(m) = self.answered.remove(&id.to_string()) {
            return (Vec::new(), Answer::from_message(&m));
        }
        let mut before = Vec::new();
        loop {
            // Earlier messages in the backlog come first.
            let m = match self.backlog.pop_front() {
                Some(m) => m,
                None => self.recv(DEFAULT_TIMEOUT).await.unwrap_or_else(|| {
                    panic!(
                        "no answer to request {id} within {DEFAULT_TIMEOUT:?}; stderr:\n{}",
                        self.stderr()
                    )
                }),
            };
            if is_answer_to(&m, id) {
                return (before, Answer::from_message(&m));
            }
            if let Some(other) = answer_id(&m) {
                self.answered.insert(other.to_string(), m.clone());
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
    answer_id(m) == Some(id)
}

/// The id a message answers, if it is an answer (not a request or a notification).
fn answer_id(m: &Value) -> Option<&Value> {
    m.get("method").is_none().then(|| m.get("id")).flatten()
}

/// What the stdout reader checks every line against, shared with the client.
#[derive(Clone, Default)]
struct Checks {
    /// The method of each request the client sent, by id, until its answer came.
    methods: Arc<Mutex<HashMap<String, String>>>,
    order: Arc<Mutex<OrderCheck>>,
    violations: Arc<Mutex<Vec<String>>>,
}

impl Checks {
    /// Reads the agent's stdout line by line, checks each and hands it to the client.
    async fn read_stdout(self, stdout: ChildStdout, tx: mpsc::UnboundedSender<Value>) {
        let mut lines = BufReader::new(stdout).lines();
        loop {
            let line = match lines.next_line().await {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    self.violation(format!("stdout is not UTF-8 lines: {e}"));
                    break;
                }
            };
            if let Some(msg) = self.check(&line)
                && tx.send(msg).is_err()
            {
                break;
            }
        }
    }

    /// One line: a JSON object, valid for its method's schema, in an allowed order.
    fn check(&self, line: &str) -> Option<Value> {
        let msg: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                self.violation(format!("not a JSON object on stdout: {line:.200}"));
                return None;
            }
        };
        let request_method = if msg.get("method").is_none() {
            msg.get("id")
                .and_then(|id| self.methods.lock().unwrap().remove(&id.to_string()))
        } else {
            None
        };
        if let Err(e) = schema().check_agent_message(&msg, request_method.as_deref()) {
            self.violation(format!("{e}\n  in: {line:.400}"));
        }
        for e in self.order.lock().unwrap().agent_sent(&msg) {
            self.violation(format!("ordering: {e}\n  in: {line:.400}"));
        }
        Some(msg)
    }

    fn violation(&self, text: String) {
        self.violations.lock().unwrap().push(text);
    }
}

/// Keeps everything the agent wrote to stderr, for failure messages.
async fn keep_stderr(mut pipe: ChildStderr, stderr: Arc<Mutex<String>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        *stderr.lock().unwrap() = String::from_utf8_lossy(&buf).into_owned();
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A client whose agent messages come from the test: `true` stands in for the agent.
    fn client_fed_by(rx: mpsc::UnboundedReceiver<Value>) -> AcpClient {
        let checks = Checks::default();
        AcpClient {
            child: Command::new("true").spawn().expect("spawn true"),
            stdin: None,
            rx,
            backlog: VecDeque::new(),
            answered: HashMap::new(),
            next_id: 1,
            methods: checks.methods,
            order: checks.order,
            violations: checks.violations,
            stderr: Arc::default(),
        }
    }

    #[tokio::test]
    async fn an_answer_met_while_waiting_for_another_is_found_by_a_later_wait() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut client = client_fed_by(rx);
        let update = json!({"jsonrpc": "2.0", "method": "session/update", "params": {}});
        let first = json!({"jsonrpc": "2.0", "id": 1, "result": {"n": 1}});
        let second = json!({"jsonrpc": "2.0", "id": 2, "result": {"n": 2}});
        for m in [&update, &first, &second] {
            tx.send(m.clone()).unwrap();
        }
        let (before, answer) = client.collect_until_answer(&json!(2)).await;
        assert_eq!(before, vec![update, first]);
        assert_eq!(answer.ok(), json!({"n": 2}));
        assert_eq!(client.wait_answer(&json!(1)).await.ok(), json!({"n": 1}));
        // Handed out once: nothing else is left over.
        assert!(client.drain(Duration::from_millis(10)).await.is_empty());
        assert!(client.answered.is_empty());
    }

    #[tokio::test]
    async fn answers_in_the_backlog_are_kept_the_same_way() {
        let (_tx, rx) = mpsc::unbounded_channel();
        let mut client = client_fed_by(rx);
        client.backlog.extend([
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32000, "message": "no"}}),
            json!({"jsonrpc": "2.0", "id": 8, "result": null}),
        ]);
        let (before, _) = client.collect_until_answer(&json!(8)).await;
        assert_eq!(before.len(), 1);
        assert_eq!(client.wait_answer(&json!(7)).await.code(), -32000);
    }
}
