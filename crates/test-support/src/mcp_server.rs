//! A small MCP server for tests, on rmcp's server side: over stdio as the `fake-mcp-server`
//! binary ([`stdio_server_bin`] finds or builds it), or in-process over streamable HTTP
//! ([`start_http`]).
//!
//! Tools: `echo {text}`, `add {a, b}`, `fail` (an `isError` result), `crash` (the process exits
//! mid-call; stdio only), `slow {ms}` (sleeps; honours cancellation), `stats` (how many calls
//! were cancelled), `env {name}` (a variable of the server's environment), `pid` (the server's pid and its grandchild's, for process-group checks),
//! `image`, `resource`, `dotted.name` and a tool whose name is too long for providers.
//!
//! Prompts and resources: see [`catalog`].
//!
//! Binary flags: `--never-initialize` (reads stdin, never answers), `--exit-at-start` (writes
//! a reason on stderr and exits 2), `--grandchild` (starts a `sleep` child in its process group),
//! `--endless-prompts` (a prompt listing whose every page names a next one).

pub mod catalog;
pub mod oauth;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The name of the tool that is too long for `mcp__<server>__<tool>` to fit in 64 characters.
pub const LONG_TOOL_NAME: &str =
    "a_tool_with_a_name_so_long_that_the_prefixed_name_cannot_fit_in_the_limit";

/// How the server is reached; `crash` only makes sense for a process of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Http,
}

#[derive(Clone)]
pub struct FakeMcp {
    transport: Transport,
    grandchild: Option<u32>,
    cancelled: Arc<AtomicUsize>,
    endless_prompts: bool,
    /// `--unlockable`: an `unlock` tool that adds a `door` tool and says its list changed.
    unlockable: bool,
    unlocked: Arc<AtomicBool>,
}

impl FakeMcp {
    pub fn new(transport: Transport) -> Self {
        Self {
            transport,
            grandchild: None,
            cancelled: Arc::default(),
            endless_prompts: false,
            unlockable: false,
            unlocked: Arc::default(),
        }
    }

    /// The tools listed now.
    fn listed(&self) -> Vec<Tool> {
        let mut all = tools();
        let none = || {
            Arc::new(serde_json::Map::from_iter([(
                "type".to_owned(),
                json!("object"),
            )]))
        };
        if self.unlockable {
            all.push(Tool::new(
                "unlock",
                "Adds the `door` tool and the `knock` prompt (the lists change).",
                none(),
            ));
        }
        if self.unlocked.load(Ordering::SeqCst) {
            all.push(Tool::new("door", "Opens the door.", none()));
        }
        all
    }
}

fn tools() -> Vec<Tool> {
    let schema = |v: Value| match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!(),
    };
    let none = || schema(json!({"type": "object", "properties": {}}));
    vec![
        Tool::new(
            "echo",
            "Returns its text.",
            schema(
                json!({"type": "object", "properties": {"text": {"type": "string"}},
                "required": ["text"]}),
            ),
        ),
        Tool::new(
            "add",
            "Adds two numbers.",
            schema(
                json!({"type": "object", "properties": {"a": {"type": "number"},
                "b": {"type": "number"}}, "required": ["a", "b"]}),
            ),
        )
        .with_title("Add numbers"),
        Tool::new("fail", "Always fails.", none()),
        Tool::new("crash", "Exits the server mid-call.", none()),
        Tool::new(
            "slow",
            "Sleeps for `ms` milliseconds.",
            schema(json!({"type": "object", "properties": {"ms": {"type": "integer"}}})),
        ),
        Tool::new("stats", "How many calls were cancelled.", none()),
        Tool::new(
            "env",
            "The value of an environment variable of the server.",
            schema(json!({"type": "object", "properties": {"name": {"type": "string"}}})),
        ),
        Tool::new("pid", "The server's pid and its grandchild's.", none()),
        Tool::new("image", "Returns a tiny PNG.", none()),
        Tool::new("resource", "Returns an embedded text resource.", none()),
        // No `type` and no `properties`: the client must make it an object schema.
        Tool::new("dotted.name", "A name with a dot.", schema(json!({}))),
        Tool::new(LONG_TOOL_NAME, "A very long name.", none()),
    ]
}

impl ServerHandler for FakeMcp {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .build();
        ServerConfig::new(caps).with_server_info(Implementation::new("fake-mcp-server", "0.0.0"))
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor).unwrap_or_default();
        let mut listed = catalog::prompts(self.endless_prompts.then_some(cursor.as_str()));
        if self.unlocked.load(Ordering::SeqCst) {
            listed.prompts.push(rmcp::model::Prompt::new(
                "knock",
                Some("Knocks on the door"),
                None,
            ));
        }
        Ok(listed)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name == "stall" {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(600)) => {}
                () = context.ct.cancelled() => {
                    self.cancelled.fetch_add(1, Ordering::SeqCst);
                }
            }
            return Err(ErrorData::internal_error("stalled", None));
        }
        catalog::get_prompt(&request).map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(catalog::resources())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(catalog::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        catalog::read(&request.uri).map(Into::into)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.listed()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = |r: String| Ok(CallToolResult::success(vec![ContentBlock::text(r)]).into());
        match request.name.as_ref() {
            "echo" => text(
                args.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            ),
            "add" => {
                let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                text(format!("{}", n("a") + n("b")))
            }
            "fail" => Ok(
                CallToolResult::error(vec![ContentBlock::text("this tool always fails")]).into(),
            ),
            "crash" => match self.transport {
                Transport::Stdio => {
                    let _ = writeln!(std::io::stderr(), "fake-mcp-server: crashing on purpose");
                    std::process::exit(3)
                }
                Transport::Http => text("crash works over stdio only".into()),
            },
            "slow" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(1000);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => text(format!("slept {ms} ms")),
                    () = context.ct.cancelled() => {
                        self.cancelled.fetch_add(1, Ordering::SeqCst);
                        Err(ErrorData::internal_error("cancelled", None))
                    }
                }
            }
            "env" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("");
                text(std::env::var(name).unwrap_or_else(|_| "<unset>".into()))
            }
            "stats" => {
                text(json!({"cancelled": self.cancelled.load(Ordering::SeqCst)}).to_string())
            }
            "pid" => {
                text(json!({"pid": std::process::id(), "grandchild": self.grandchild}).to_string())
            }
            "image" => Ok(CallToolResult::success(vec![
                ContentBlock::text("a picture:"),
                // A 1x1 PNG is 67 bytes; the bytes need not be an image for the client.
                ContentBlock::image("aGVsbG8gd29ybGQ=", "image/png"),
            ])
            .into()),
            "resource" => Ok(CallToolResult::success(vec![ContentBlock::resource(
                ResourceContents::text("the resource's text", "file:///notes.txt"),
            )])
            .into()),
            "unlock" if self.unlockable => {
                self.unlocked.store(true, Ordering::SeqCst);
                let sent = context.peer.notify_tool_list_changed().await.is_ok()
                    && context.peer.notify_prompt_list_changed().await.is_ok();
                text(format!("unlocked (list_changed sent: {sent})"))
            }
            "door" if self.unlocked.load(Ordering::SeqCst) => text("the door opens".into()),
            "dotted.name" => text("dotted".into()),
            LONG_TOOL_NAME => text("long".into()),
            other => Err(ErrorData::invalid_params(
                format!("no tool `{other}`"),
                None,
            )),
        }
    }
}

/// The `fake-mcp-server` binary's `main`.
pub async fn run_stdio(args: Vec<String>) {
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let _ = writeln!(std::io::stderr(), "fake-mcp-server: starting");
    if has("--exit-at-start") {
        let _ = writeln!(std::io::stderr(), "fake-mcp-server: no config, giving up");
        std::process::exit(2);
    }
    if has("--never-initialize") {
        // Read (so the client's writes succeed) but never answer.
        let mut sink = tokio::io::sink();
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await;
        return;
    }
    let mut server = FakeMcp::new(Transport::Stdio);
    server.endless_prompts = has("--endless-prompts");
    server.unlockable = has("--unlockable");
    if has("--grandchild") {
        // Not touching our stdout: that is the JSON-RPC pipe. Never waited for on purpose: it
        // is there to be killed with the process group.
        #[allow(clippy::zombie_processes)]
        let child = Command::new("sleep")
            .arg("300")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        server.grandchild = Some(child.id());
    }
    let running = server.serve(rmcp::transport::stdio()).await.unwrap();
    let _ = running.waiting().await;
}

/// An in-process streamable HTTP MCP server; stops when dropped.
pub struct HttpServer {
    stop: CancellationToken,
    cancelled: Arc<AtomicUsize>,
}

impl HttpServer {
    /// Calls of `slow` that were cancelled.
    pub fn cancelled_calls(&self) -> usize {
        self.cancelled.load(Ordering::SeqCst)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Starts the server on a loopback port; returns its URL (`http://127.0.0.1:PORT/mcp`).
pub async fn start_http() -> (String, HttpServer) {
    start_http_with_auth(None).await
}

/// Like [`start_http`], answering 401 to any request whose `Authorization` header is not
/// exactly `required` (when given).
pub async fn start_http_with_auth(required: Option<&str>) -> (String, HttpServer) {
    let stop = CancellationToken::new();
    let (service, cancelled) = service(&stop);
    let router = axum::Router::new().nest_service("/mcp", service).layer(
        axum::middleware::from_fn_with_state(required.map(str::to_owned), check_auth),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let shutdown = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
            .await;
    });
    (url, HttpServer { stop, cancelled })
}

/// The MCP endpoint's service, stopping with `stop`, and its count of cancelled calls.
fn service(
    stop: &CancellationToken,
) -> (
    StreamableHttpService<FakeMcp, LocalSessionManager>,
    Arc<AtomicUsize>,
) {
    let prototype = FakeMcp::new(Transport::Http);
    let cancelled = prototype.cancelled.clone();
    let service = StreamableHttpService::new(
        move || Ok(prototype.clone()),
        Default::default(),
        StreamableHttpServerConfig::default()
            .with_sse_keep_alive(None)
            .with_cancellation_token(stop.child_token()),
    );
    (service, cancelled)
}

async fn check_auth(State(required): State<Option<String>>, req: Request, next: Next) -> Response {
    if let Some(required) = required {
        let given = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if given != Some(required.as_str()) {
            return (axum::http::StatusCode::UNAUTHORIZED, "bad credentials").into_response();
        }
    }
    next.run(req).await
}

/// The `fake-mcp-server` binary, for tests of any package.
///
/// `cargo test --workspace` (the README's test command) builds it before any test runs: it is a
/// `[[bin]]` of this package, whose own integration tests make cargo build its binaries, into
/// the same target directory and profile as the running test (`<target>/<profile>/deps/<test>`
/// → `<target>/<profile>/fake-mcp-server`). Tests never build it themselves: a nested cargo
/// build resolved features for one package, recompiled much of the tree and looked hung. A
/// narrower `cargo test -p <package>` finds it missing or older than this package's sources and
/// says what to build. `FERRITE_FAKE_MCP_SERVER=<path>` uses that binary instead.
pub fn stdio_server_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(path) = std::env::var_os("FERRITE_FAKE_MCP_SERVER") {
            return PathBuf::from(path);
        }
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap();
        let bin = profile_dir.join(format!("fake-mcp-server{}", std::env::consts::EXE_SUFFIX));
        let build = "run `cargo test --workspace`, or `cargo build -p ferrite-test-support --bins` \
                     before a narrower `cargo test -p`";
        let built = std::fs::metadata(&bin)
            .and_then(|m| m.modified())
            .unwrap_or_else(|_| panic!("{} is missing: {build}", bin.display()));
        let sources = Path::new(env!("CARGO_MANIFEST_DIR"));
        if let Some(newer) = newer_than(&sources.join("src"), built) {
            panic!(
                "{} is older than {}: {build}",
                bin.display(),
                newer.display()
            );
        }
        bin
    })
    .clone()
}

/// A file under `dir` changed after `time`, if there is one.
fn newer_than(dir: &Path, time: std::time::SystemTime) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            if let Some(found) = newer_than(&path, time) {
                return Some(found);
            }
        } else if meta.modified().is_ok_and(|m| m > time) {
            return Some(path);
        }
    }
    None
}
