//! Pure conversions between ferrite's core types and ACP's protocol types. No I/O here: every
//! function is unit-tested on values.
//!
//! Everything a tool call shows the user (its title, content, diffs, locations, raw input and
//! output) and the model picker's names pass through [`shown`] here, the one place every card
//! and permission request is built: characters that change how text looks are escaped
//! (`ferrite_core::display`). What runs and what the model reads are not touched.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::display::visible;
use ferrite_core::events::{CompactionStage, Event};
use ferrite_core::mcp::{McpServerSpec, McpTransport};
use ferrite_store::content::{
    Location, PlanEntry, PlanPriority, PlanStatus, ToolCallUpdateView, ToolCallView, ToolContent,
    ToolKind, ToolStatus, UserContent,
};
use ferrite_store::ids::SessionId;
use ferrite_store::log::StopReason;

mod advertised;
mod settings;

pub(crate) use advertised::cursor_message;
pub use advertised::{CHECKLIST_PLAN_ID, Takes, system_prompt};
pub use settings::{OptionChange, config_options, modes, parse_option};

/// A prompt's blocks in ferrite's terms. Audio is refused: ferrite does not advertise it.
pub fn prompt_content(blocks: Vec<acp::ContentBlock>) -> Result<Vec<UserContent>, String> {
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        out.push(match block {
            acp::ContentBlock::Text(t) => UserContent::Text {
                text: t.text.into(),
            },
            acp::ContentBlock::Image(i) => UserContent::Image {
                mime_type: i.mime_type,
                data: i.data.into(),
                uri: i.uri,
            },
            acp::ContentBlock::ResourceLink(l) => UserContent::ResourceLink {
                text: None,
                uri: l.uri,
                name: l.name,
                mime_type: l.mime_type,
            },
            acp::ContentBlock::Resource(r) => match r.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => UserContent::Resource {
                    uri: t.uri,
                    text: Some(t.text),
                    blob: None,
                    mime_type: t.mime_type,
                },
                acp::EmbeddedResourceResource::BlobResourceContents(b) => UserContent::Resource {
                    uri: b.uri,
                    text: None,
                    blob: Some(b.blob),
                    mime_type: b.mime_type,
                },
                _ => return Err("unsupported embedded resource".into()),
            },
            acp::ContentBlock::Audio(_) => return Err("audio prompts are not supported".into()),
            _ => return Err("unsupported content block".into()),
        });
    }
    Ok(out)
}

fn user_block(c: &UserContent) -> acp::ContentBlock {
    match c {
        UserContent::Text { text } => {
            acp::ContentBlock::Text(acp::TextContent::new(text.to_string()))
        }
        UserContent::Image {
            mime_type,
            data,
            uri,
        } => acp::ContentBlock::Image(
            acp::ImageContent::new(data.to_string(), mime_type.clone()).uri(uri.clone()),
        ),
        UserContent::ResourceLink {
            uri,
            name,
            mime_type,
            ..
        } => acp::ContentBlock::ResourceLink(
            acp::ResourceLink::new(name.clone(), uri.clone()).mime_type(mime_type.clone()),
        ),
        UserContent::Resource {
            uri,
            text,
            blob,
            mime_type,
        } => {
            let resource = match (text, blob) {
                (Some(text), _) => acp::EmbeddedResourceResource::TextResourceContents(
                    acp::TextResourceContents::new(text.clone(), uri.clone())
                        .mime_type(mime_type.clone()),
                ),
                (None, blob) => acp::EmbeddedResourceResource::BlobResourceContents(
                    acp::BlobResourceContents::new(blob.clone().unwrap_or_default(), uri.clone())
                        .mime_type(mime_type.clone()),
                ),
            };
            acp::ContentBlock::Resource(acp::EmbeddedResource::new(resource))
        }
    }
}

fn notice_meta() -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("ferrite".into(), serde_json::json!({ "notice": true }));
    m
}

pub(crate) fn text_block(text: &str) -> acp::ContentBlock {
    acp::ContentBlock::Text(acp::TextContent::new(text.to_owned()))
}

fn tool_kind(k: ToolKind) -> acp::ToolKind {
    match k {
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Delete => acp::ToolKind::Delete,
        ToolKind::Move => acp::ToolKind::Move,
        ToolKind::Search => acp::ToolKind::Search,
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Think => acp::ToolKind::Think,
        ToolKind::Fetch => acp::ToolKind::Fetch,
        ToolKind::SwitchMode => acp::ToolKind::SwitchMode,
        ToolKind::Other => acp::ToolKind::Other,
    }
}

fn tool_status(s: ToolStatus) -> acp::ToolCallStatus {
    match s {
        ToolStatus::Pending => acp::ToolCallStatus::Pending,
        ToolStatus::InProgress => acp::ToolCallStatus::InProgress,
        ToolStatus::Completed => acp::ToolCallStatus::Completed,
        ToolStatus::Failed => acp::ToolCallStatus::Failed,
    }
}

/// Text as the user is shown it: see the module's comment.
fn shown(text: &str) -> String {
    visible(text).into_owned()
}

fn shown_path(path: &Path) -> PathBuf {
    match path.to_str().map(visible) {
        Some(Cow::Owned(escaped)) => PathBuf::from(escaped),
        Some(Cow::Borrowed(_)) | None => path.to_path_buf(),
    }
}

/// A JSON value with every string (keys included) as [`shown`] makes it.
fn shown_json(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(shown(s)),
        Value::Array(items) => Value::Array(items.iter().map(shown_json).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (shown(k), shown_json(v))).collect())
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
    }
}

fn tool_content(c: &ToolContent) -> acp::ToolCallContent {
    match c {
        ToolContent::Text { text } => {
            acp::ToolCallContent::Content(acp::Content::new(text_block(&visible(text))))
        }
        ToolContent::Image { mime_type, data } => acp::ToolCallContent::Content(acp::Content::new(
            acp::ContentBlock::Image(acp::ImageContent::new(data.to_string(), mime_type.clone())),
        )),
        ToolContent::Diff {
            path,
            old_text,
            new_text,
        } => acp::ToolCallContent::Diff(
            acp::Diff::new(shown_path(path), shown(new_text))
                .old_text(old_text.as_deref().map(shown)),
        ),
        ToolContent::Session { session } => {
            acp::ToolCallContent::Session(acp::SessionReference::new(session.as_str().to_owned()))
        }
    }
}

/// A card's content without references to child sessions, for a client that does not show
/// them (it must not be sent one). Borrowed when there is none.
fn without_sessions(content: &[ToolContent]) -> Option<Vec<ToolContent>> {
    content
        .iter()
        .any(|c| matches!(c, ToolContent::Session { .. }))
        .then(|| {
            content
                .iter()
                .filter(|c| !matches!(c, ToolContent::Session { .. }))
                .cloned()
                .collect()
        })
}

fn location(l: &Location) -> acp::ToolCallLocation {
    acp::ToolCallLocation::new(shown_path(&l.path)).line(l.line)
}

fn tool_call(v: &ToolCallView) -> acp::ToolCall {
    acp::ToolCall::new(acp::ToolCallId::new(v.id.clone()), shown(&v.title))
        .kind(tool_kind(v.kind))
        .status(tool_status(v.status))
        .content(v.content.iter().map(tool_content).collect())
        .locations(v.locations.iter().map(location).collect())
        .raw_input(v.raw_input.as_ref().map(shown_json))
}

/// A tool call's full view as a `ToolCallUpdate` (what a permission request carries).
pub fn tool_call_as_update(v: &ToolCallView) -> acp::ToolCallUpdate {
    let fields = acp::ToolCallUpdateFields::new()
        .title(shown(&v.title))
        .kind(tool_kind(v.kind))
        .status(tool_status(v.status))
        .content(v.content.iter().map(tool_content).collect::<Vec<_>>())
        .locations(v.locations.iter().map(location).collect::<Vec<_>>())
        .raw_input(v.raw_input.as_ref().map(shown_json));
    acp::ToolCallUpdate::new(acp::ToolCallId::new(v.id.clone()), fields)
}

fn terminal_only(v: &ToolCallUpdateView) -> bool {
    (v.terminal_output.is_some() || v.terminal_exit.is_some())
        && v.status.is_none()
        && v.title.is_none()
        && v.content.is_none()
        && v.locations.is_none()
        && v.raw_output.is_none()
}

fn tool_call_update(v: &ToolCallUpdateView) -> acp::ToolCallUpdate {
    let fields = acp::ToolCallUpdateFields::new()
        .status(v.status.map(tool_status))
        .title(v.title.as_deref().map(shown))
        .content(
            v.content
                .as_ref()
                .map(|c| c.iter().map(tool_content).collect::<Vec<_>>()),
        )
        .locations(
            v.locations
                .as_ref()
                .map(|l| l.iter().map(location).collect::<Vec<_>>()),
        )
        .raw_output(v.raw_output.as_ref().map(shown_json));
    acp::ToolCallUpdate::new(acp::ToolCallId::new(v.id.clone()), fields)
}

fn plan(entries: &[PlanEntry]) -> acp::Plan {
    acp::Plan::new(
        entries
            .iter()
            .map(|e| {
                acp::PlanEntry::new(
                    e.content.clone(),
                    match e.priority {
                        PlanPriority::High => acp::PlanEntryPriority::High,
                        PlanPriority::Medium => acp::PlanEntryPriority::Medium,
                        PlanPriority::Low => acp::PlanEntryPriority::Low,
                    },
                    match e.status {
                        PlanStatus::Pending => acp::PlanEntryStatus::Pending,
                        PlanStatus::InProgress => acp::PlanEntryStatus::InProgress,
                        PlanStatus::Completed => acp::PlanEntryStatus::Completed,
                    },
                )
            })
            .collect(),
    )
}

/// The `session/update` updates an event becomes (most become one; a replayed user message with
/// several blocks becomes several chunks; a turn's end becomes none).
pub fn updates(event: &Event, takes: Takes) -> Vec<acp::SessionUpdate> {
    use acp::SessionUpdate as U;
    match event {
        Event::UserMessage {
            message_id,
            content,
        } => {
            let mut out: Vec<U> = content
                .iter()
                .map(|c| {
                    U::UserMessageChunk(
                        acp::ContentChunk::new(user_block(c))
                            .message_id(message_id.clone().map(acp::MessageId::new)),
                    )
                })
                .collect();
            if let Some(id) = message_id.as_deref().filter(|_| takes.cursors) {
                out.push(advertised::cursor_before(id));
            }
            out
        }
        Event::MessageRecorded { message_id } if takes.cursors => {
            vec![advertised::cursor_before(message_id)]
        }
        Event::MessagesCut { message_ids } if takes.cursors => message_ids
            .iter()
            .map(|id| advertised::cursor_gone(id))
            .collect(),
        Event::MessageRecorded { .. } | Event::MessagesCut { .. } => vec![],
        Event::AgentMessageChunk { text } => vec![U::AgentMessageChunk(acp::ContentChunk::new(
            text_block(text),
        ))],
        Event::AgentThoughtChunk { text } => vec![U::AgentThoughtChunk(acp::ContentChunk::new(
            text_block(text),
        ))],
        Event::ToolCall(v) => vec![U::ToolCall(card(v, takes))],
        // What is only for terminal views (`crate::terminal`) is not sent to other clients.
        Event::ToolCallUpdate(v) if terminal_only(v) => vec![],
        Event::ToolCallUpdate(v) => vec![U::ToolCallUpdate(card_update(v, takes))],
        Event::Subagent(v) if takes.subagents => vec![advertised::subagent(v)],
        // Other clients never hear of a child session: they see the parent's card.
        Event::Subagent(_) => vec![],
        Event::SessionMessage {
            message_id,
            from,
            to,
            content,
        } => vec![session_message(message_id, from, to, content, takes)],
        Event::Plan { entries } if takes.plans => vec![advertised::checklist(plan(entries))],
        Event::Plan { entries } => vec![U::Plan(plan(entries))],
        Event::PlanProposal { markdown } if takes.plans => vec![advertised::proposal(markdown)],
        // Older clients read the plan on the `exit_plan` card, as they always did.
        Event::PlanProposal { .. } => vec![],
        Event::ModeChanged { mode } => {
            vec![U::CurrentModeUpdate(acp::CurrentModeUpdate::new(mode.id()))]
        }
        Event::SettingsChanged(s) => vec![U::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(
            config_options(s),
        ))],
        Event::TitleChanged { title } => vec![U::SessionInfoUpdate(
            acp::SessionInfoUpdate::new()
                .title(title.clone())
                .updated_at(ferrite_store::time::now_rfc3339()),
        )],
        Event::Usage { used, size, cost } => vec![U::UsageUpdate(
            acp::UsageUpdate::new(*used, *size).cost(cost.map(|c| acp::Cost::new(c, "USD"))),
        )],
        Event::Notice { text } => notice(text, acp::NoticeSeverity::Warning, takes),
        Event::Info { text } => notice(text, acp::NoticeSeverity::Info, takes),
        Event::Compaction { id, stage } if takes.compaction => advertised::compaction(id, stage),
        // As before compactions had updates: a notice when one is done, nothing else.
        Event::Compaction { stage, .. } => match stage {
            CompactionStage::Completed { notice: text, .. } => {
                notice(text, acp::NoticeSeverity::Warning, takes)
            }
            CompactionStage::Started
            | CompactionStage::Failed { .. }
            | CompactionStage::Cancelled => vec![],
        },
        Event::Commands { commands } => vec![U::AvailableCommandsUpdate(
            acp::AvailableCommandsUpdate::new(available_commands(commands)),
        )],
        Event::TurnEnded(_) => vec![],
    }
}

/// A call's card; a client that does not take subagents is not shown `session` content.
fn card(v: &ToolCallView, takes: Takes) -> acp::ToolCall {
    match without_sessions(&v.content) {
        Some(content) if !takes.subagents => tool_call(&ToolCallView {
            content,
            ..v.clone()
        }),
        _ => tool_call(v),
    }
}

/// An update of a call's card, with `session` content only for a client that takes subagents.
fn card_update(v: &ToolCallUpdateView, takes: Takes) -> acp::ToolCallUpdate {
    match v.content.as_deref().and_then(without_sessions) {
        Some(content) if !takes.subagents => tool_call_update(&ToolCallUpdateView {
            content: Some(content),
            ..v.clone()
        }),
        _ => tool_call_update(v),
    }
}

/// A message between sessions: as itself to a client that takes subagents. Otherwise only in
/// the child's own session (loaded by its id), and since the model wrote the task it is never
/// shown as the user's words: the agent's message, naming where it came from.
fn session_message(
    message_id: &str,
    from: &SessionId,
    to: &SessionId,
    content: &[UserContent],
    takes: Takes,
) -> acp::SessionUpdate {
    if takes.subagents {
        return advertised::session_message(
            message_id,
            from,
            to,
            content.iter().map(user_block).collect(),
        );
    }
    let text: Vec<&str> = content.iter().filter_map(|c| c.display_text()).collect();
    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(text_block(&format!(
        "Task from the main agent (session {}):\n\n{}\n\n",
        from.as_str(),
        text.join("\n\n")
    ))))
}

/// A notice (or an info line): as a `notice` to a client that takes them; otherwise an agent
/// message marked, so a client can tell it from the conversation (it may come between turns),
/// a paragraph of its own in a Markdown client, each of its lines one too.
fn notice(text: &str, severity: acp::NoticeSeverity, takes: Takes) -> Vec<acp::SessionUpdate> {
    if takes.notices {
        return advertised::notice(text, severity).into_iter().collect();
    }
    vec![acp::SessionUpdate::AgentMessageChunk(
        acp::ContentChunk::new(text_block(&format!(
            "\n\n{}\n\n",
            ferrite_store::content::markdown_paragraphs(text)
        )))
        .meta(notice_meta()),
    )]
}

/// The commands as ACP lists them; a hint becomes the unstructured input's hint.
pub fn available_commands(
    commands: &[ferrite_core::commands::CommandInfo],
) -> Vec<acp::AvailableCommand> {
    commands
        .iter()
        .map(|c| {
            let cmd = acp::AvailableCommand::new(c.name.clone(), c.description.clone());
            match &c.hint {
                Some(h) => cmd.input(acp::AvailableCommandInput::Unstructured(
                    acp::UnstructuredCommandInput::new(h.clone()),
                )),
                None => cmd,
            }
        })
        .collect()
}

/// A whole `session/update` JSON-RPC line, serialized in one pass (no intermediate `Value`: the
/// streaming path sends one per text delta).
pub fn update_line(session: &SessionId, update: acp::SessionUpdate) -> String {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        jsonrpc: &'static str,
        method: &'static str,
        params: &'a acp::SessionNotification,
    }
    let params = acp::SessionNotification::new(acp::SessionId::new(session.as_str()), update);
    serde_json::to_string(&Line {
        jsonrpc: "2.0",
        method: "session/update",
        params: &params,
    })
    .unwrap_or_default()
}

pub fn stop_reason(s: StopReason) -> acp::StopReason {
    match s {
        StopReason::EndTurn => acp::StopReason::EndTurn,
        StopReason::MaxTokens => acp::StopReason::MaxTokens,
        StopReason::MaxTurnRequests => acp::StopReason::MaxTurnRequests,
        StopReason::Refusal => acp::StopReason::Refusal,
        StopReason::Cancelled => acp::StopReason::Cancelled,
    }
}

/// MCP servers from an ACP request in ferrite's terms. SSE servers are not supported (ferrite
/// advertises only HTTP); their names are returned so the user can be told.
pub fn mcp_servers(servers: Vec<acp::McpServer>) -> (Vec<McpServerSpec>, Vec<String>) {
    let mut specs = Vec::new();
    let mut unsupported = Vec::new();
    for s in servers {
        match s {
            acp::McpServer::Stdio(s) => specs.push(McpServerSpec {
                name: s.name,
                transport: McpTransport::Stdio {
                    command: s.command.to_string_lossy().into_owned(),
                    args: s.args,
                    env: s.env.into_iter().map(|e| (e.name, e.value)).collect(),
                },
                cwd: None,
                env_remove: vec![],
            }),
            acp::McpServer::Http(s) => specs.push(McpServerSpec {
                name: s.name,
                transport: McpTransport::Http {
                    url: s.url,
                    headers: s.headers.into_iter().map(|h| (h.name, h.value)).collect(),
                },
                cwd: None,
                env_remove: vec![],
            }),
            acp::McpServer::Sse(s) => unsupported.push(s.name),
            _ => unsupported.push("(unknown transport)".into()),
        }
    }
    (specs, unsupported)
}

#[cfg(test)]
mod tests;
