//! `initialize`, `authenticate`, `logout`.

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1 as acp;
use ferrite_core::catalog::Catalog;
use ferrite_core::modes::Harness;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};

use super::meta;
use crate::fail::Fail;
use crate::mapping::Takes;
use crate::params::meta_str;
use crate::reply::Json;
use crate::state::Server;

/// `initialize` params, and whether the client takes terminal authentication: read from the
/// raw JSON, as the schema crate's `ClientCapabilities` has no `auth` field yet.
pub(crate) struct InitializeParams {
    request: acp::InitializeRequest,
    terminal_auth: bool,
    /// `clientCapabilities._meta["terminal-auth"]`: the registry's convention (stock Zed, the
    /// registry's verifier) for a login the client runs from the method's `_meta`.
    terminal_auth_meta: bool,
    /// `clientCapabilities._meta.terminal_output`: commands drawn as terminals.
    terminal_output: bool,
    /// `clientCapabilities.elicitation.form`: the client shows forms (`ask_user`).
    elicitation_form: bool,
    /// `clientCapabilities.elicitation.url`: the client sends the user to pages (MCP sign-ins).
    elicitation_url: bool,
}

impl<'de> Deserialize<'de> for InitializeParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(d)?;
        let terminal_auth = raw
            .pointer("/clientCapabilities/auth/terminal")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let terminal_auth_meta = raw
            .pointer("/clientCapabilities/_meta/terminal-auth")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let terminal_output = raw
            .pointer("/clientCapabilities/_meta/terminal_output")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let elicitation_form = raw
            .pointer("/clientCapabilities/elicitation/form")
            .is_some_and(Value::is_object);
        let elicitation_url = raw
            .pointer("/clientCapabilities/elicitation/url")
            .is_some_and(Value::is_object);
        let request = serde_json::from_value(raw).map_err(serde::de::Error::custom)?;
        Ok(Self {
            request,
            terminal_auth,
            terminal_auth_meta,
            terminal_output,
            elicitation_form,
            elicitation_url,
        })
    }
}

pub(crate) async fn initialize(
    s: &Server,
    p: InitializeParams,
) -> Result<acp::InitializeResponse, Fail> {
    let caps = &p.request.client_capabilities;
    let session = caps.session.as_ref();
    let takes = Takes {
        notices: session.is_some_and(|c| c.notices.is_some()),
        plans: caps.plan.is_some(),
        compaction: session.is_some_and(|c| c.compaction.is_some()),
        subagents: caps.subagents.is_some(),
        cursors: session.is_some_and(|c| c.cursors.is_some()),
    };
    s.runtime
        .services()
        .children
        .set_client_shows(takes.subagents);
    s.client.set_elicitation_form(p.elicitation_form);
    s.client.set_elicitation_url(p.elicitation_url);
    s.client.set_fs_write(caps.fs.write_text_file);
    s.client
        .set(takes, caps.fs.read_text_file, p.terminal_output);
    let (_, catalog) = s
        .runtime
        .services()
        .context(None)
        .map_err(|e| Fail::internal(e.to_string()))?;
    Ok(acp::InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities())
        .auth_methods(auth_methods(p.terminal_auth, p.terminal_auth_meta))
        .agent_info(
            acp::Implementation::new("ferrite", s.version.clone()).title("Ferrite".to_owned()),
        )
        // `steering`: `_session/steering` is answered, as the Claude and Codex adapters do;
        // `rewind`: `_session/rewind` (docs/sessions.md, "Rewind").
        .meta(meta(json!({
            "ferrite": ferrite_facts(&catalog),
            "steering": { "supported": true },
            "rewind": { "supported": true, "restoreFiles": true },
        }))))
}

fn capabilities() -> acp::AgentCapabilities {
    acp::AgentCapabilities::new()
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
                .additional_directories(acp::SessionAdditionalDirectoriesCapabilities::new())
                .system_prompt(
                    acp::SessionSystemPromptCapabilities::new().mode(
                        acp::SessionSystemPromptModeCapabilities::new()
                            .override_(acp::SessionSystemPromptOverrideCapabilities::new()),
                    ),
                )
                .fork(acp::SessionForkCapabilities::new())
                .title(acp::SessionTitleCapabilities::new()),
        )
        .auth(acp::AgentAuthCapabilities::new().logout(acp::LogoutCapabilities::new()))
}

/// The args that start the login after the agent's command (`ferrite acp login`).
const LOGIN_ARGS: [&str; 2] = ["acp", "login"];
const LOGIN_LABEL: &str = "Log in to Ferrite";
const LOGIN_DESCRIPTION: &str = "Opens a terminal that asks for your provider's API key";

fn auth_methods(terminal_auth: bool, terminal_auth_meta: bool) -> Vec<acp::AuthMethod> {
    // Shown by clients as the button's text: what the user does, in their words.
    let mut methods = vec![acp::AuthMethod::Agent(
        acp::AuthMethodAgent::new("api-key", "API key").description(
            "Use the API key in ANTHROPIC_API_KEY or OPENAI_API_KEY, or one saved with \
             `ferrite login`"
                .to_owned(),
        ),
    )];
    // `_meta["terminal-auth"]`: the command is this very binary, so a client that installed
    // Ferrite from the registry (in its own cache, not on PATH) can run the login.
    let registry_meta = terminal_auth_meta.then(terminal_auth_meta_value);
    // The ACP schema: a terminal method only for clients that enabled terminal authentication.
    if terminal_auth {
        methods.push(acp::AuthMethod::Terminal(
            acp::AuthMethodTerminal::new("ferrite-login", LOGIN_LABEL)
                .args(vec!["login".into()])
                .description(LOGIN_DESCRIPTION.to_owned())
                .meta(registry_meta),
        ));
    } else if let Some(meta) = registry_meta {
        // Clients of the registry's convention alone know no `type: "terminal"`: an agent-type
        // method whose `_meta` they run; `authenticate` with its id checks the key afterwards.
        methods.push(acp::AuthMethod::Agent(
            acp::AuthMethodAgent::new("ferrite-login", LOGIN_LABEL)
                .description(LOGIN_DESCRIPTION.to_owned())
                .meta(meta),
        ));
    }
    methods
}

/// `{"terminal-auth": {label, command, args, env}}` with the running binary's absolute path.
fn terminal_auth_meta_value() -> acp::Meta {
    let command = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(&p).ok().or(Some(p)))
        .map_or_else(|| "ferrite".to_owned(), |p| p.display().to_string());
    let mut meta = acp::Meta::new();
    meta.insert(
        "terminal-auth".into(),
        json!({"label": LOGIN_LABEL, "command": command, "args": LOGIN_ARGS, "env": {}}),
    );
    meta
}

/// `_meta.ferrite` of the answer: models, auth state, harnesses (`docs/acp.md`).
fn ferrite_facts(catalog: &Catalog) -> Value {
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
    json!({
        "models": models,
        "auth": {"configured": !configured.is_empty(), "providers": configured},
        "harnesses": harnesses,
    })
}

pub(crate) async fn authenticate(s: &Server, req: acp::AuthenticateRequest) -> Result<Json, Fail> {
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
        services.store_key(provider, token.trim())?;
    }
    // Called with `{methodId}` alone (how clients call an agent method): the environment and
    // credentials.json are read again, and it succeeds when a model is now usable.
    match services
        .auth_needed()
        .map_err(|e| Fail::internal(e.to_string()))?
    {
        None => Ok(Json(json!({}))),
        Some(need) => Err(Fail::auth_required(&need)),
    }
}

/// `logout` params: only `_meta.provider` matters, whatever else was sent.
pub(crate) struct LogoutParams {
    meta: Option<Map<String, Value>>,
}

impl<'de> Deserialize<'de> for LogoutParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(d)?;
        let meta = raw.get("_meta").and_then(Value::as_object).cloned();
        Ok(Self { meta })
    }
}

pub(crate) async fn logout(s: &Server, p: LogoutParams) -> Result<Json, Fail> {
    let provider = meta_str(p.meta.as_ref(), "provider");
    s.runtime
        .services()
        .forget_keys(provider)
        .map_err(|e| Fail::internal(e.to_string()))?;
    Ok(Json(json!({})))
}
