//! `session/new`, `session/load`, `session/resume`, `session/list`, `session/close`,
//! `session/delete`, `session/fork`, `_ferrite/session/fork`.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::events::{Event, SettingChange};
use ferrite_core::modes::Harness;
use ferrite_core::prompt::ClientPrompt;
use ferrite_core::runtime::{NewSession, Opened};
use ferrite_store::ids::SessionId;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::meta;
use crate::fail::Fail;
use crate::mapping::{self, Takes};
use crate::params::session_id;
use crate::reply::{After, Followed, Json};
use crate::state::Server;

/// Sessions listed per `session/list` page.
pub const LIST_PAGE_SIZE: usize = 50;

#[derive(Deserialize)]
struct HarnessMeta {
    #[serde(default)]
    harness: Option<String>,
}

fn harness(meta: Option<&Map<String, Value>>) -> Result<Harness, Fail> {
    match meta
        .cloned()
        .map(Value::Object)
        .map(serde_json::from_value::<HarnessMeta>)
    {
        Some(Ok(HarnessMeta { harness: Some(h) })) => h
            .parse::<Harness>()
            .map_err(|e| Fail::params(e.to_string())),
        Some(Err(_)) => Err(Fail::params("`_meta.harness` must be a string")),
        Some(Ok(HarnessMeta { harness: None })) | None => Ok(Harness::Code),
    }
}

pub(crate) async fn new(
    s: &Server,
    req: acp::NewSessionRequest,
) -> Result<Followed<acp::NewSessionResponse>, Fail> {
    let harness = harness(req.meta.as_ref())?;
    // Checked before anything is created: a prompt that cannot be applied fails the request.
    let setup = Setup::parse(vec![], req.system_prompt)?;
    let (mcp_servers, unsupported) = mapping::mcp_servers(req.mcp_servers);
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
    let opened = setup.apply(s, opened).await?;
    let sid = opened.handle.id().clone();
    let response = acp::NewSessionResponse::new(acp::SessionId::new(sid.as_str()))
        .modes(mapping::modes(&opened.settings))
        .config_options(mapping::config_options(&opened.settings))
        .meta(ferrite_meta(&sid, None));
    let then = after_open(s, &sid, &opened, &unsupported, None);
    Ok(Followed { response, then })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenParams {
    session_id: acp::SessionId,
    cwd: PathBuf,
    #[serde(default)]
    mcp_servers: Vec<acp::McpServer>,
    /// Non-empty: the session's additional roots from now on. Empty or absent: those it has.
    #[serde(default)]
    additional_directories: Vec<PathBuf>,
    /// Absent: the one stored with the session, if any.
    #[serde(default)]
    system_prompt: Option<acp::SystemPrompt>,
}

/// What a client may set as it creates, loads, resumes or forks a session (schema 1.20):
/// additional workspace roots and a system prompt. Both are kept in the session's log, so a
/// later load without them keeps them.
struct Setup {
    additional_directories: Vec<PathBuf>,
    system_prompt: Option<ClientPrompt>,
}

impl Setup {
    /// Checks everything before a session is touched.
    fn parse(dirs: Vec<PathBuf>, prompt: Option<acp::SystemPrompt>) -> Result<Self, Fail> {
        for d in &dirs {
            if !d.is_absolute() || !d.is_dir() {
                return Err(Fail::params(
                    "every `additionalDirectories` entry must be an existing absolute directory",
                ));
            }
        }
        Ok(Self {
            additional_directories: dirs,
            system_prompt: prompt
                .map(mapping::system_prompt)
                .transpose()
                .map_err(Fail::params)?,
        })
    }

    /// Records what changed (the session's log keeps it); `opened.settings` stay as they are.
    async fn apply(self, s: &Server, opened: Opened) -> Result<Opened, Fail> {
        let mut changes = Vec::new();
        if !self.additional_directories.is_empty() {
            changes.push(SettingChange::Directories(self.additional_directories));
        }
        if let Some(p) = self.system_prompt {
            changes.push(SettingChange::SystemPrompt(p));
        }
        for change in changes {
            if let Err(e) = opened.handle.change(change).await {
                // A session this request opened does not stay open half set up.
                s.runtime.close(opened.handle.id()).await;
                return Err(e.into());
            }
        }
        Ok(opened)
    }
}

/// `session/load`: the replay, then the answer.
pub(crate) async fn load(
    s: &Server,
    p: OpenParams,
) -> Result<Followed<acp::LoadSessionResponse>, Fail> {
    let cwd = p.cwd.clone();
    let (opened, unsupported) = open(s, p, true).await?;
    let sid = opened.handle.id().clone();
    let takes = s.client.takes();
    for event in &opened.replay {
        for u in mapping::updates(event, takes) {
            s.out.update(&sid, u).await;
        }
    }
    let response = acp::LoadSessionResponse::new()
        .modes(mapping::modes(&opened.settings))
        .config_options(mapping::config_options(&opened.settings))
        .meta(ferrite_meta(&sid, opened.parent.as_ref()));
    let mut then = after_open(s, &sid, &opened, &unsupported, opened.title.clone());
    then.extend(elsewhere(s, &sid, &opened, &cwd));
    Ok(Followed { response, then })
}

/// A session works in the directory it was created in: when the client loads or resumes it
/// from another one, the user is told where its tools, rules and sandbox are (rather than the
/// session moving, or the request failing, unseen).
fn elsewhere(s: &Server, id: &SessionId, opened: &Opened, requested: &Path) -> Vec<After> {
    let same = |a: &Path, b: &Path| {
        a == b
            || std::fs::canonicalize(a)
                .ok()
                .zip(std::fs::canonicalize(b).ok())
                .is_some_and(|(a, b)| a == b)
    };
    if same(&opened.cwd, requested) {
        return vec![];
    }
    let text = format!(
        "This session works in {}, not in {} (the directory the editor sent): its tools, \
         permission rules and sandbox stay there. Start a new session to work in {}.",
        opened.cwd.display(),
        requested.display(),
        requested.display()
    );
    mapping::updates(&Event::Notice { text }, s.client.takes())
        .into_iter()
        .map(|u| After::update(id, u))
        .collect()
}

/// `session/resume`: `session/load` without the replay.
pub(crate) async fn resume(
    s: &Server,
    p: OpenParams,
) -> Result<Followed<acp::ResumeSessionResponse>, Fail> {
    let cwd = p.cwd.clone();
    let (opened, unsupported) = open(s, p, false).await?;
    let sid = opened.handle.id().clone();
    let response = acp::ResumeSessionResponse::new()
        .modes(mapping::modes(&opened.settings))
        .config_options(mapping::config_options(&opened.settings))
        .meta(ferrite_meta(&sid, opened.parent.as_ref()));
    let mut then = after_open(s, &sid, &opened, &unsupported, opened.title.clone());
    then.extend(elsewhere(s, &sid, &opened, &cwd));
    Ok(Followed { response, then })
}

async fn open(s: &Server, p: OpenParams, replay: bool) -> Result<(Opened, Vec<String>), Fail> {
    let sid = session_id(&p.session_id)?;
    if !p.cwd.is_absolute() {
        return Err(Fail::params("`cwd` must be an absolute path"));
    }
    let setup = Setup::parse(p.additional_directories, p.system_prompt)?;
    let (servers, unsupported) = mapping::mcp_servers(p.mcp_servers);
    let opened = s.runtime.open_session(&sid, replay, servers).await?;
    // An event the session sent while it was opened (a title written during the wait) goes out
    // before the replay and the answer, not after them.
    s.caller.after_queued_events().await;
    Ok((setup.apply(s, opened).await?, unsupported))
}

fn ferrite_meta(id: &SessionId, parent: Option<&SessionId>) -> Option<Map<String, Value>> {
    let mut f = json!({ "sessionId": id.as_str() });
    if let Some(p) = parent {
        f["parentSessionId"] = json!(p.as_str());
    }
    meta(json!({ "ferrite": f }))
}

/// After the answer (clients drop updates for a session id they have not learned yet): the
/// usage meter, the title of a loaded session, the commands, notices of MCP servers not started,
/// then discovery and the session's own held notices.
fn after_open(
    s: &Server,
    id: &SessionId,
    opened: &Opened,
    unsupported_mcp: &[String],
    title: Option<String>,
) -> Vec<After> {
    let update = |u| After::update(id, u);
    let mut then: Vec<After> = mapping::updates(&opened.usage, Takes::BASE)
        .into_iter()
        .map(update)
        .collect();
    if let Some(title) = title {
        // Editors that list sessions show the title of a loaded one too.
        let info = acp::SessionInfoUpdate::new().title(title.clone());
        then.push(update(acp::SessionUpdate::SessionInfoUpdate(info)));
    }
    then.push(update(acp::SessionUpdate::AvailableCommandsUpdate(
        acp::AvailableCommandsUpdate::new(mapping::available_commands(&opened.commands)),
    )));
    let takes = s.client.takes();
    for name in unsupported_mcp {
        let text = format!(
            "MCP server `{name}` was not started: its transport (SSE) is not supported; use stdio or HTTP."
        );
        then.extend(
            mapping::updates(&Event::Notice { text }, takes)
                .into_iter()
                .map(update),
        );
    }
    then.push(After::Discover);
    then.push(After::ReleaseNotices(opened.notices.clone()));
    then
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

pub(crate) async fn list(
    s: &Server,
    req: acp::ListSessionsRequest,
) -> Result<acp::ListSessionsResponse, Fail> {
    if req.cwd.as_deref().is_some_and(|c| !c.is_absolute()) {
        return Err(Fail::params("`cwd` must be an absolute path"));
    }
    // Listing reads the header of every log (thousands of files): on a blocking thread.
    let runtime = s.runtime.clone();
    let cwd = req.cwd.clone();
    let all = tokio::task::spawn_blocking(move || runtime.list(cwd.as_deref()))
        .await
        .map_err(|e| Fail::internal(format!("listing sessions failed: {e}")))??;
    // A session nobody prompted (opened and left, or opened to look) is not history.
    let all: Vec<_> = all.into_iter().filter(|s| s.summary.prompted).collect();
    let start = match req.cursor.as_deref() {
        None => 0,
        Some(c) => {
            let (n, id) = decode_cursor(c).ok_or_else(|| Fail::params("invalid cursor"))?;
            // Newest first: the page starts after the cursor's position in that order.
            all.iter()
                .position(|x| (nanos(x.summary.updated_at), &x.summary.id) < (n, &id))
                .unwrap_or(all.len())
        }
    };
    let page: Vec<_> = all
        .iter()
        .skip(start)
        .take(LIST_PAGE_SIZE)
        .cloned()
        .collect();
    let next = (start + page.len() < all.len())
        .then(|| {
            page.last()
                .map(|l| encode_cursor(nanos(l.summary.updated_at), &l.summary.id))
        })
        .flatten();
    // The roots each session of the page works with now (a client restores them on resume).
    let runtime = s.runtime.clone();
    let sessions = tokio::task::spawn_blocking(move || {
        page.iter()
            .map(|l| {
                let x = &l.summary;
                let dirs = runtime.services().store.additional_directories(x);
                acp::SessionInfo::new(acp::SessionId::new(x.id.as_str()), x.cwd.clone())
                    .title(x.title.clone())
                    .updated_at(ferrite_store::time::rfc3339(x.updated_at))
                    .additional_directories(dirs)
                    .meta(l.worktree.as_ref().and_then(worktree_meta))
            })
            .collect()
    })
    .await
    .map_err(|e| Fail::internal(format!("listing sessions failed: {e}")))?;
    Ok(acp::ListSessionsResponse::new(sessions).next_cursor(next))
}

/// `_meta.ferrite.worktree` of a listed session in a repository: the worktree it belongs to
/// (its top folder, its branch, whether it still exists).
fn worktree_meta(w: &ferrite_core::worktrees::Worktree) -> Option<Map<String, Value>> {
    meta(json!({ "ferrite": { "worktree": {
        "path": w.root,
        "branch": w.branch,
        "exists": w.root.is_dir(),
    }}}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionParams {
    session_id: acp::SessionId,
}

pub(crate) async fn close(s: &Server, p: SessionParams) -> Result<Json, Fail> {
    let sid = session_id(&p.session_id)?;
    if !s.runtime.knows(&sid) {
        return Err(Fail::params("unknown session"));
    }
    s.caller.cancel_session(&sid);
    // A running subagent's session: closing it stops it (its parent goes on).
    s.runtime.services().children.cancel(&sid);
    s.runtime.close(&sid).await;
    Ok(Json(json!({})))
}

pub(crate) async fn delete(s: &Server, p: SessionParams) -> Result<Json, Fail> {
    let sid = session_id(&p.session_id)?;
    if s.prompts.is_waiting(&sid) {
        return Err(Fail::params(
            "a turn is running in this session; cancel it first",
        ));
    }
    s.runtime.delete(&sid).await?;
    Ok(Json(json!({})))
}

/// `session/set_title` (unstable): the user's title, stored before the answer and never
/// replaced by a generated one; the session's `session_info_update` follows.
pub(crate) async fn set_title(
    s: &Server,
    req: acp::SetSessionTitleRequest,
) -> Result<Followed<acp::SetSessionTitleResponse>, Fail> {
    let sid = session_id(&req.session_id)?;
    if !s.runtime.knows(&sid) {
        return Err(Fail {
            code: -32002,
            message: "unknown session".into(),
            data: None,
        });
    }
    let title = s.runtime.set_title(&sid, &req.title).await?;
    let info = acp::SessionInfoUpdate::new().title(title.clone());
    let then = vec![After::update(
        &sid,
        acp::SessionUpdate::SessionInfoUpdate(info),
    )];
    Ok(Followed {
        response: acp::SetSessionTitleResponse::new(title),
        then,
    })
}

/// `_ferrite/session/fork`: the copy, not opened; answers `{sessionId}`.
pub(crate) async fn fork(s: &Server, p: SessionParams) -> Result<Json, Fail> {
    let sid = session_id(&p.session_id)?;
    let new_id = s.runtime.fork(&sid, None, None)?;
    Ok(Json(json!({ "sessionId": new_id.as_str() })))
}

/// The user message a `session/fork` ends before: the one its `cursorId` (a cursor we sent) is
/// before, or the one `_meta.jetbrains.air.fork = {version: 1, messageId}` names (the key the
/// Claude and Codex adapters accept). Neither: the whole session.
fn fork_point(req: &acp::ForkSessionRequest) -> Result<Option<String>, Fail> {
    if let Some(cursor) = &req.cursor_id {
        return crate::mapping::cursor_message(&cursor.0)
            .map(|id| Some(id.to_owned()))
            .ok_or_else(|| Fail::params(format!("unknown cursor `{}`", cursor.0)));
    }
    let Some(point) = req
        .meta
        .as_ref()
        .and_then(|m| m.get("jetbrains"))
        .and_then(|j| j.get("air"))
        .and_then(|a| a.get("fork"))
    else {
        return Ok(None);
    };
    match (
        point.get("version").and_then(Value::as_u64),
        point.get("messageId").and_then(Value::as_str),
    ) {
        (Some(1), Some(id)) if !id.is_empty() => Ok(Some(id.to_owned())),
        _ => Err(Fail::params(
            "`_meta.jetbrains.air.fork` must be `{\"version\": 1, \"messageId\": \"…\"}`",
        )),
    }
}

/// `session/fork` (schema 1.20): the same copy as `_ferrite/session/fork`, then opened like
/// `session/resume` (no replay: the client has the history), with the request's roots and
/// system prompt.
pub(crate) async fn fork_and_open(
    s: &Server,
    req: acp::ForkSessionRequest,
) -> Result<Followed<acp::ForkSessionResponse>, Fail> {
    let sid = session_id(&req.session_id)?;
    if !req.cwd.is_absolute() {
        return Err(Fail::params("`cwd` must be an absolute path"));
    }
    let at = fork_point(&req)?;
    let setup = Setup::parse(req.additional_directories, req.system_prompt)?;
    // The fork works where the client says (another checkout of the project, say).
    let new_id = s.runtime.fork(&sid, Some(req.cwd), at.as_deref())?;
    let (servers, unsupported) = mapping::mcp_servers(req.mcp_servers);
    let opened = s.runtime.open_session(&new_id, false, servers).await?;
    let opened = setup.apply(s, opened).await?;
    let response = acp::ForkSessionResponse::new(acp::SessionId::new(new_id.as_str()))
        .modes(mapping::modes(&opened.settings))
        .config_options(mapping::config_options(&opened.settings))
        .meta(ferrite_meta(&new_id, opened.parent.as_ref()));
    let then = after_open(s, &new_id, &opened, &unsupported, opened.title.clone());
    Ok(Followed { response, then })
}
