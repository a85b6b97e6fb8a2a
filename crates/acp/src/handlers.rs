//! One function per ACP method (`docs/acp.md`).

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use ferrite_core::catalog::{DefaultModel, KeySource};
use ferrite_core::credentials::Credentials;
use ferrite_core::events::SettingChange;
use ferrite_core::ids::SessionId;
use ferrite_core::modes::{Harness, Mode};
use ferrite_core::runtime::{NewSession, Opened};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::mapping::{self, OptionChange};
use crate::server::{
    Fail, PROMPT_ACK_TIMEOUT, PendingPrompt, Server, parse, queue_change, session_id, turn_options,
};

type Reply = Result<Value, Fail>;

fn to_value<T: serde::Serialize>(v: T) -> Reply {
    serde_json::to_value(v).map_err(|e| Fail::internal(e.to_string()))
}

fn meta(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

pub(crate) fn initialize(s: &Server, params: Value) -> Reply {
    // Read from the raw JSON: the schema crate's `ClientCapabilities` has no `auth` field yet.
    let terminal_auth = params
        .pointer("/clientCapabilities/auth/terminal")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let req: acp::InitializeRequest = parse(params)?;
    {
        let mut client = s.client();
        client.initialized = true;
        client.notices = req
            .client_capabilities
            .session
            .as_ref()
            .is_some_and(|c| c.notices.is_some());
        client.fs_read = req.client_capabilities.fs.read_text_file;
    }
    let (_, catalog) = s
        .runtime
        .services()
        .context(None)
        .map_err(|e| Fail::internal(e.to_string()))?;
    let models: Vec<Value> = catalog
        .models
        .iter()
        .map(|m| {
            json!({
                "id": m.id, "name": m.name, "provider": m.provider,
                "contextWindow": m.context_window, "maxOutputTokens": m.max_output_tokens,
                "reasoning": m.takes_effort(), "webSearch": m.web_search,
                "price": m.price, "source": m.source.id(),
                "available": catalog.is_usable(&m.provider),
            })
        })
        .collect();
    let configured = catalog.configured_providers();
    let harnesses: Vec<Value> = Harness::ALL
        .iter()
        .map(|h| json!({"id": h.id(), "description": h.description(), "ceiling": h.ceiling().id(), "defaultMode": h.default_mode().id()}))
        .collect();
    let ferrite = json!({
        "models": models,
        "auth": {"configured": !configured.is_empty(), "providers": configured},
        "harnesses": harnesses,
    });
    let caps = acp::AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(
            acp::PromptCapabilities::new()
                .image(true)
                .embedded_context(true),
        )
        .mcp_capabilities(acp::McpCapabilities::new().http(true))
        .session_capabilities(
            acp::SessionCapabilities::new()
                .list(acp::SessionListCapabilities::new())
                .resume(acp::SessionResumeCapabilities::new())
                .close(acp::SessionCloseCapabilities::new())
                .delete(acp::SessionDeleteCapabilities::new())
                .additional_directories(acp::SessionAdditionalDirectoriesCapabilities::new()),
        )
        .auth(acp::AgentAuthCapabilities::new().logout(acp::LogoutCapabilities::new()));
    let mut auth_methods = vec![acp::AuthMethod::Agent(
        acp::AuthMethodAgent::new("api-key", "API key").description(
            "Uses ANTHROPIC_API_KEY / OPENAI_API_KEY or a key stored by `ferrite login`; \
             `_meta.provider` and `_meta.token` store a key"
                .to_owned(),
        ),
    )];
    // The ACP schema: advertised only to clients that enabled terminal authentication.
    if terminal_auth {
        auth_methods.push(acp::AuthMethod::Terminal(
            acp::AuthMethodTerminal::new("ferrite-login", "Log in from a terminal")
                .args(vec!["login".into()])
                .description(
                    "Runs `ferrite login`, which asks for a provider's API key".to_owned(),
                ),
        ));
    }
    to_value(
        acp::InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(caps)
            .auth_methods(auth_methods)
            .agent_info(
                acp::Implementation::new("ferrite", s.version.clone()).title("Ferrite".to_owned()),
            )
            .meta(meta(json!({ "ferrite": ferrite }))),
    )
}

fn meta_str<'a>(m: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    m.and_then(|m| m.get(key)).and_then(Value::as_str)
}

pub(crate) fn authenticate(s: &Server, params: Value) -> Reply {
    let req: acp::AuthenticateRequest = parse(params)?;
    match &*req.method_id.0 {
        // After the terminal login ran, the client asks again: the same check as `api-key`.
        "api-key" | "ferrite-login" => {}
        _ => return Err(Fail::params("unknown auth method; use `api-key`")),
    }
    let m = req.meta.as_ref();
    let services = s.runtime.services();
    let token = meta_str(m, "token").filter(|t| !t.trim().is_empty());
    if let Some(token) = token {
        let provider = meta_str(m, "provider")
            .ok_or_else(|| Fail::params("`_meta.provider` is required with `_meta.token`"))?;
        let (_, catalog) = services
            .context(None)
            .map_err(|e| Fail::internal(e.to_string()))?;
        match catalog.provider(provider).map(|p| &p.key_source) {
            Some(KeySource::Env(_)) => {}
            Some(KeySource::NotNeeded) => {
                return Err(Fail::params(format!("provider `{provider}` takes no key")));
            }
            None => {
                let known: Vec<String> = catalog
                    .keyed_providers()
                    .iter()
                    .map(|p| p.name.clone())
                    .collect();
                return Err(Fail::params(format!(
                    "unknown provider `{provider}`; providers that take a key: {}",
                    known.join(", ")
                )));
            }
        }
        Credentials::store(&services.home, provider, token.trim())
            .map_err(|e| Fail::internal(e.to_string()))?;
    }
    // Called with `{methodId}` alone (how clients call an agent method): the environment and
    // credentials.json are read again, and it succeeds when a model is now usable.
    let (config, catalog) = services
        .context(None)
        .map_err(|e| Fail::internal(e.to_string()))?;
    match catalog.default_model(&config, &services.env) {
        DefaultModel::Chosen(model) => match catalog.auth_needed_for(&model) {
            None => Ok(json!({})),
            Some(need) => Err(Fail::auth_required(&need)),
        },
        DefaultModel::NoneConfigured => Err(Fail::auth_required(&catalog.nothing_configured())),
    }
}

pub(crate) fn logout(s: &Server, params: Value) -> Reply {
    let m = params.get("_meta").and_then(Value::as_object);
    let provider = meta_str(m, "provider");
    Credentials::remove(&s.runtime.services().home, provider)
        .map_err(|e| Fail::internal(e.to_string()))?;
    Ok(json!({}))
}

/// Cursor of `session/list`: where the previous page ended. Opaque to clients.
fn encode_cursor(updated_nanos: u128, id: &SessionId) -> String {
    format!("{updated_nanos}.{id}")
}

fn decode_cursor(c: &str) -> Option<(u128, SessionId)> {
    let (n, id) = c.split_once('.')?;
    Some((n.parse().ok()?, SessionId::parse(id).ok()?))
}

fn nanos(t: std::time::SystemTime) -> u128 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

pub(crate) fn list(s: &Server, params: Value) -> Reply {
    let req: acp::ListSessionsRequest = parse(params)?;
    let cwd = req.cwd.as_deref();
    if cwd.is_some_and(|c| !c.is_absolute()) {
        return Err(Fail::params("`cwd` must be an absolute path"));
    }
    let all = s.runtime.list(cwd)?;
    let start = match req.cursor.as_deref() {
        None => 0,
        Some(c) => {
            let (n, id) = decode_cursor(c).ok_or_else(|| Fail::params("invalid cursor"))?;
            // Newest first: the page starts after the cursor's position in that order.
            all.iter()
                .position(|x| (nanos(x.updated_at), &x.id) < (n, &id))
                .unwrap_or(all.len())
        }
    };
    let page: Vec<_> = all
        .iter()
        .skip(start)
        .take(crate::server::LIST_PAGE_SIZE)
        .collect();
    let next = (start + page.len() < all.len())
        .then(|| {
            page.last()
                .map(|l| encode_cursor(nanos(l.updated_at), &l.id))
        })
        .flatten();
    let sessions = page
        .iter()
        .map(|x| {
            acp::SessionInfo::new(acp::SessionId::new(x.id.as_str()), x.cwd.clone())
                .title(x.title.clone())
                .updated_at(ferrite_core::time::rfc3339(x.updated_at))
        })
        .collect();
    to_value(acp::ListSessionsResponse::new(sessions).next_cursor(next))
}

fn ferrite_meta(id: &SessionId, parent: Option<&SessionId>) -> Option<Map<String, Value>> {
    let mut f = json!({ "sessionId": id.as_str() });
    if let Some(p) = parent {
        f["parentSessionId"] = json!(p.as_str());
    }
    meta(json!({ "ferrite": f }))
}

async fn after_open(s: &Server, id: &SessionId, cwd: &Path, unsupported_mcp: &[String]) {
    // After the answer: clients drop updates for a session id they have not learned yet.
    s.out
        .update(
            id,
            acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(
                mapping::available_commands(&ferrite_core::commands::available(
                    &s.runtime.services().home,
                    cwd,
                )),
            )),
        )
        .await;
    let notices = s.client().notices;
    for name in unsupported_mcp {
        let text = format!(
            "MCP server `{name}` was not started: its transport (SSE) is not supported; use stdio or HTTP."
        );
        for u in mapping::updates(&ferrite_core::events::Event::Notice { text }, notices) {
            s.out.update(id, u).await;
        }
    }
}

/// The `usage_update` right after a session opens: occupancy from the log (0 for a new one)
/// and the running cost, so the editor's meter is right before the first prompt.
async fn send_usage(s: &Server, id: &SessionId, usage: &ferrite_core::events::Event) {
    for u in mapping::updates(usage, false) {
        s.out.update(id, u).await;
    }
}

#[derive(Deserialize)]
struct HarnessMeta {
    #[serde(default)]
    harness: Option<String>,
}

pub(crate) async fn new_session(s: Arc<Server>, id: Value, params: Value) {
    let result = async {
        let req: acp::NewSessionRequest = parse(params)?;
        let harness = match req
            .meta
            .clone()
            .map(Value::Object)
            .map(serde_json::from_value::<HarnessMeta>)
        {
            Some(Ok(HarnessMeta { harness: Some(h) })) => h
                .parse::<Harness>()
                .map_err(|e| Fail::params(e.to_string()))?,
            Some(Err(_)) => return Err(Fail::params("`_meta.harness` must be a string")),
            Some(Ok(HarnessMeta { harness: None })) | None => Harness::Code,
        };
        let (mcp_servers, unsupported) = mapping::mcp_servers(req.mcp_servers);
        let cwd = req.cwd.clone();
        let opened = s
            .runtime
            .new_session(NewSession {
                cwd: req.cwd,
                additional_directories: req.additional_directories,
                harness,
                mcp_servers,
                model: None,
            })
            .await?;
        Ok((opened, cwd, unsupported))
    }
    .await;
    match result {
        Err(f) => s.out.reply(&id, Err(f)).await,
        Ok((opened, cwd, unsupported)) => {
            let sid = opened.handle.id().clone();
            let resp = acp::NewSessionResponse::new(acp::SessionId::new(sid.as_str()))
                .modes(mapping::modes(&opened.settings))
                .config_options(mapping::config_options(&opened.settings))
                .meta(ferrite_meta(&sid, None));
            s.out.reply(&id, to_value(resp)).await;
            send_usage(&s, &sid, &opened.usage).await;
            after_open(&s, &sid, &cwd, &unsupported).await;
            s.runtime.discover_in_background();
            opened.notices.release();
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OpenParams {
    session_id: acp::SessionId,
    cwd: std::path::PathBuf,
    #[serde(default)]
    mcp_servers: Vec<acp::McpServer>,
}

pub(crate) async fn open_session(s: Arc<Server>, id: Value, params: Value, replay: bool) {
    let result: Result<(Opened, Vec<String>), Fail> = async {
        let req: OpenParams = parse(params)?;
        let sid = session_id(&req.session_id)?;
        if !req.cwd.is_absolute() {
            return Err(Fail::params("`cwd` must be an absolute path"));
        }
        let (servers, unsupported) = mapping::mcp_servers(req.mcp_servers);
        Ok((
            s.runtime.open_session(&sid, replay, servers).await?,
            unsupported,
        ))
    }
    .await;
    let (opened, unsupported) = match result {
        Ok(o) => o,
        Err(f) => return s.out.reply(&id, Err(f)).await,
    };
    let sid = opened.handle.id().clone();
    let notices = s.client().notices;
    for event in &opened.replay {
        for u in mapping::updates(event, notices) {
            s.out.update(&sid, u).await;
        }
    }
    let body = if replay {
        to_value(
            acp::LoadSessionResponse::new()
                .modes(mapping::modes(&opened.settings))
                .config_options(mapping::config_options(&opened.settings))
                .meta(ferrite_meta(&sid, opened.parent.as_ref())),
        )
    } else {
        to_value(
            acp::ResumeSessionResponse::new()
                .modes(mapping::modes(&opened.settings))
                .config_options(mapping::config_options(&opened.settings))
                .meta(ferrite_meta(&sid, opened.parent.as_ref())),
        )
    };
    s.out.reply(&id, body).await;
    send_usage(&s, &sid, &opened.usage).await;
    if let Some(title) = opened.title.clone() {
        // Editors that list sessions show the title of a loaded one too.
        let info = acp::SessionInfoUpdate::new().title(title);
        s.out
            .update(&sid, acp::SessionUpdate::SessionInfoUpdate(info))
            .await;
    }
    let cwd = s
        .runtime
        .services()
        .store
        .read(&sid)
        .map(|l| l.header.cwd)
        .ok();
    if let Some(cwd) = cwd {
        after_open(&s, &sid, &cwd, &unsupported).await;
    }
    s.runtime.discover_in_background();
    opened.notices.release();
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionParams {
    session_id: acp::SessionId,
}

pub(crate) async fn close(s: Arc<Server>, params: Value) -> Reply {
    let req: SessionParams = parse(params)?;
    let sid = session_id(&req.session_id)?;
    if s.runtime.get(&sid).is_none() && !s.runtime.services().store.path(&sid).exists() {
        return Err(Fail::params("unknown session"));
    }
    s.calls.cancel_session(&sid);
    s.runtime.close(&sid).await;
    Ok(json!({}))
}

pub(crate) async fn delete(s: Arc<Server>, params: Value) -> Reply {
    let req: SessionParams = parse(params)?;
    let sid = session_id(&req.session_id)?;
    if s.prompts().contains_key(&sid) {
        return Err(Fail::params(
            "a turn is running in this session; cancel it first",
        ));
    }
    s.runtime.delete(&sid).await?;
    Ok(json!({}))
}

pub(crate) async fn fork(s: Arc<Server>, params: Value) -> Reply {
    let req: SessionParams = parse(params)?;
    let sid = session_id(&req.session_id)?;
    let new_id = s.runtime.fork(&sid)?;
    Ok(json!({ "sessionId": new_id.as_str() }))
}

pub(crate) async fn prompt(s: &Arc<Server>, id: Value, params: Value, tasks: &mut JoinSet<()>) {
    let prepared = (|| {
        let req: acp::PromptRequest = parse(params)?;
        let sid = session_id(&req.session_id)?;
        let options = turn_options(req.meta.as_ref())?;
        let content = mapping::prompt_content(req.prompt).map_err(Fail::params)?;
        if content.is_empty() {
            return Err(Fail::params("the prompt is empty"));
        }
        let handle = s
            .runtime
            .get(&sid)
            .ok_or_else(|| Fail::params("unknown session: create, load or resume it first"))?;
        Ok((sid, handle, content, options))
    })();
    let (sid, handle, content, options) = match prepared {
        Ok(p) => p,
        Err(f) => return s.out.reply(&id, Err(f)).await,
    };
    let done = CancellationToken::new();
    let busy = {
        let mut prompts = s.prompts();
        let busy = prompts.contains_key(&sid);
        if !busy {
            let pending = PendingPrompt {
                request_id: id.clone(),
                turn: None,
                done: done.clone(),
            };
            prompts.insert(sid.clone(), pending);
        }
        busy
    };
    if busy {
        return s
            .out
            .reply(&id, Err(Fail::params("a turn is already running")))
            .await;
    }
    let ack = match handle.submit_prompt(content, options) {
        Ok(rx) => rx,
        Err(r) => {
            s.prompts().remove(&sid);
            return s.out.reply(&id, Err(r.into())).await;
        }
    };
    let s = s.clone();
    tasks.spawn(async move {
        match tokio::time::timeout(PROMPT_ACK_TIMEOUT, ack).await {
            Ok(Ok(Ok(turn))) => {
                if let Some(p) = s.prompts().get_mut(&sid)
                    && p.request_id == id
                {
                    p.turn = Some(turn);
                }
            }
            Ok(Ok(Err(refusal))) => {
                s.prompts().remove(&sid);
                return s.out.reply(&id, Err(refusal.into())).await;
            }
            Ok(Err(_)) => {
                return s.fail_prompt(&sid, &id, "session_task_died", "The session stopped unexpectedly before the turn started; reload the session to continue.");
            }
            Err(_) => {
                return s.fail_prompt(&sid, &id, "session_unresponsive", "The session did not respond; the turn was not started. Try again, or close and reload the session.");
            }
        }
        // The turn runs: make sure it is answered even if the session task dies under it.
        tokio::select! {
            () = done.cancelled() => {}
            () = handle.closed() => {
                s.fail_prompt(&sid, &id, "session_task_died", "The session stopped unexpectedly during the turn; what was recorded is kept. Reload the session to continue.");
            }
        }
    });
}

/// What a settings request is answered with.
#[derive(Clone, Copy)]
pub(crate) enum ChangeAnswer {
    Empty,
    ConfigOptions,
}

pub(crate) async fn set_mode(s: &Arc<Server>, id: Value, params: Value, tasks: &mut JoinSet<()>) {
    let parsed = (|| {
        let req: acp::SetSessionModeRequest = parse(params)?;
        let sid = session_id(&req.session_id)?;
        let mode: Mode = req
            .mode_id
            .0
            .parse()
            .map_err(|e: ferrite_core::modes::UnknownName| Fail::params(e.to_string()))?;
        Ok((sid, mode))
    })();
    match parsed {
        Ok((sid, mode)) => {
            queue_change(
                s,
                tasks,
                id,
                sid,
                SettingChange::Mode(mode),
                ChangeAnswer::Empty,
            )
            .await
        }
        Err(f) => s.out.reply(&id, Err(f)).await,
    }
}

pub(crate) async fn set_config_option(
    s: &Arc<Server>,
    id: Value,
    params: Value,
    tasks: &mut JoinSet<()>,
) {
    let parsed = (|| {
        let req: acp::SetSessionConfigOptionRequest = parse(params)?;
        let sid = session_id(&req.session_id)?;
        let value = match &req.value {
            acp::SessionConfigOptionValue::ValueId { value } => value.0.to_string(),
            acp::SessionConfigOptionValue::Boolean { value } => value.to_string(),
            _ => return Err(Fail::params("unsupported value type")),
        };
        let change = mapping::parse_option(&req.config_id.0, &value).map_err(Fail::params)?;
        Ok((sid, change))
    })();
    match parsed {
        Ok((sid, change)) => {
            let change = match change {
                OptionChange::Mode(m) => SettingChange::Mode(m),
                OptionChange::Model(m) => SettingChange::Model(m),
                OptionChange::Effort(e) => SettingChange::Effort(e),
                OptionChange::WebSearch(w) => SettingChange::WebSearch(w),
            };
            queue_change(s, tasks, id, sid, change, ChangeAnswer::ConfigOptions).await
        }
        Err(f) => s.out.reply(&id, Err(f)).await,
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetModelParams {
    session_id: acp::SessionId,
    model_id: String,
}

pub(crate) async fn set_model(s: &Arc<Server>, id: Value, params: Value, tasks: &mut JoinSet<()>) {
    let parsed = (|| {
        let req: SetModelParams = parse(params)?;
        Ok((session_id(&req.session_id)?, req.model_id))
    })();
    match parsed {
        Ok((sid, model)) => {
            queue_change(
                s,
                tasks,
                id,
                sid,
                SettingChange::Model(model),
                ChangeAnswer::ConfigOptions,
            )
            .await
        }
        Err(f) => s.out.reply(&id, Err(f)).await,
    }
}
