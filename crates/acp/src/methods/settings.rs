//! `session/set_mode`, `session/set_config_option`, `session/set_model`.

use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::events::{SettingChange, Settings};
use ferrite_core::modes::Mode;
use ferrite_store::ids::SessionId;
use serde::Deserialize;
use serde_json::json;

use crate::fail::Fail;
use crate::mapping::{self, OptionChange};
use crate::params::session_id;
use crate::reply::{After, Followed, Json};
use crate::state::Server;

/// How long a session task has to answer a settings change.
pub const SESSION_REPLY_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn set_mode(
    s: &Server,
    req: acp::SetSessionModeRequest,
) -> Result<Followed<Json>, Fail> {
    let sid = session_id(&req.session_id)?;
    let mode: Mode = req
        .mode_id
        .0
        .parse()
        .map_err(|e: ferrite_core::modes::UnknownName| Fail::params(e.to_string()))?;
    let change = SettingChange::Mode(mode);
    let settings = apply(s, &sid, change.clone()).await?;
    Ok(Followed {
        response: Json(json!({})),
        then: updates(&sid, &change, &settings),
    })
}

pub(crate) async fn set_config_option(
    s: &Server,
    req: acp::SetSessionConfigOptionRequest,
) -> Result<Followed<acp::SetSessionConfigOptionResponse>, Fail> {
    let sid = session_id(&req.session_id)?;
    let value = match &req.value {
        acp::SessionConfigOptionValue::ValueId { value } => value.0.to_string(),
        acp::SessionConfigOptionValue::Boolean { value } => value.to_string(),
        _ => return Err(Fail::params("unsupported value type")),
    };
    let change = match mapping::parse_option(&req.config_id.0, &value).map_err(Fail::params)? {
        OptionChange::Mode(m) => SettingChange::Mode(m),
        OptionChange::Agent(a) => SettingChange::Agent(a),
        OptionChange::Model(m) => SettingChange::Model(m),
        OptionChange::Effort(e) => SettingChange::Effort(e),
        OptionChange::WebSearch(w) => SettingChange::WebSearch(w),
    };
    changed_options(s, sid, change).await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetModelParams {
    session_id: acp::SessionId,
    model_id: String,
}

/// The legacy method, answered like setting the `model` option.
pub(crate) async fn set_model(
    s: &Server,
    p: SetModelParams,
) -> Result<Followed<acp::SetSessionConfigOptionResponse>, Fail> {
    let sid = session_id(&p.session_id)?;
    changed_options(s, sid, SettingChange::Model(p.model_id)).await
}

async fn changed_options(
    s: &Server,
    sid: SessionId,
    change: SettingChange,
) -> Result<Followed<acp::SetSessionConfigOptionResponse>, Fail> {
    let settings = apply(s, &sid, change.clone()).await?;
    Ok(Followed {
        response: acp::SetSessionConfigOptionResponse::new(mapping::config_options(&settings)),
        then: updates(&sid, &change, &settings),
    })
}

/// Queues `change` to the session (before the first await, so in arrival order) and waits for
/// its answer.
async fn apply(s: &Server, sid: &SessionId, change: SettingChange) -> Result<Settings, Fail> {
    let handle = s
        .runtime
        .get(sid)
        .ok_or_else(|| Fail::params("unknown session"))?;
    let rx = handle.submit_change(change)?;
    match tokio::time::timeout(SESSION_REPLY_TIMEOUT, rx).await {
        Ok(Ok(r)) => r.map_err(Fail::from),
        Ok(Err(_)) => Err(Fail::internal("the session stopped")),
        Err(_) => Err(Fail::internal("the session did not answer in time")),
    }
}

/// What follows a change's answer: the new mode, then every option.
fn updates(sid: &SessionId, change: &SettingChange, settings: &Settings) -> Vec<After> {
    let mut then = vec![];
    if let SettingChange::Mode(m) = change {
        let u = acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(m.id()));
        then.push(After::update(sid, u));
    }
    let options = acp::ConfigOptionUpdate::new(mapping::config_options(settings));
    then.push(After::update(
        sid,
        acp::SessionUpdate::ConfigOptionUpdate(options),
    ));
    then
}
