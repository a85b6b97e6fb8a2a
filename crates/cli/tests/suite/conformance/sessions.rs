//! The session surface that needs no turn.

use serde_json::{Value, json};

use super::Record;
use super::probes::*;

pub(super) const SESSIONS: &[&str] = &[
    "ACP-MODES-001",
    "ACP-MODES-002",
    "ACP-CONFIG-001",
    "ACP-CONFIG-002",
    "ACP-CONFIG-003",
    "ACP-ADDDIRS-001",
    "ACP-LIST-001",
    "ACP-LIST-002",
    "ACP-DELETE-001",
    "ACP-DELETE-002",
    "ACP-CLOSE-001",
    "ACP-AUTH-003",
    "ACP-AUTH-004",
];

/// The session surface that needs no turn: modes, config options, list, delete, close, auth.
pub(super) async fn sessions(r: Record) {
    let mut a = Agent::start(&r).await;
    modes(&r, &mut a).await;
    lists_and_deletes(&r, &mut a).await;
    auth(&r, &mut a).await;
    a.finish();
}

/// Modes and config options of a new session.
async fn modes(r: &Record, a: &mut Agent) {
    let ws = a.world.ws();
    let new = a
        .call("session/new", json!({"cwd": ws, "mcpServers": []}))
        .await
        .ok();
    let sid = new["sessionId"].as_str().unwrap_or_default().to_owned();
    let modes = &new["modes"];
    let ids: Vec<&str> = (modes["availableModes"].as_array().into_iter().flatten())
        .filter_map(|m| m["id"].as_str())
        .collect();
    let current = modes["currentModeId"].as_str().unwrap_or_default();
    r.check(
        "ACP-MODES-001",
        ids.contains(&current),
        format!("{current} not in {ids:?}"),
    );
    let other = ids
        .iter()
        .find(|m| **m != current)
        .copied()
        .unwrap_or(current);
    let set = a
        .call(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": other}),
        )
        .await;
    let echoes = updates_for(&a.c.drain(QUIET).await, &sid);
    let echo_ok = (echoes.iter().filter(|(k, _)| k == "current_mode_update"))
        .all(|(_, u)| u["currentModeId"] == other);
    r.check(
        "ACP-MODES-002",
        set.result.is_some() && echo_ok,
        format!("{set:?} {echoes:?}"),
    );

    options(r, a, &sid, &new).await;
}

async fn options(r: &Record, a: &mut Agent, sid: &str, new: &Value) {
    let options = new["configOptions"].as_array().cloned().unwrap_or_default();
    let valid = options.iter().all(|o| match o["type"].as_str() {
        Some("boolean") => o["currentValue"].is_boolean(),
        Some("select") => (o["options"].as_array().into_iter().flatten())
            .flat_map(|g| {
                g["options"]
                    .as_array()
                    .cloned()
                    .unwrap_or_else(|| vec![g.clone()])
            })
            .any(|v| v["value"] == o["currentValue"]),
        _ => false,
    });
    r.check("ACP-CONFIG-001", valid, format!("{options:?}"));
    r.check(
        "ACP-CONFIG-003",
        options.iter().all(|o| o["type"] != "boolean"),
        "a boolean option to a client that did not ask",
    );
    let effort = options
        .iter()
        .find(|o| o["id"] == "reasoning_effort")
        .cloned()
        .unwrap_or_default();
    let value = (effort["options"].as_array().into_iter().flatten())
        .map(|v| v["value"].clone())
        .find(|v| *v != effort["currentValue"])
        .unwrap_or_default();
    let set = a
        .call(
            "session/set_config_option",
            json!({"sessionId": sid, "configId": "reasoning_effort", "value": value}),
        )
        .await;
    let listed = set.result.clone().unwrap_or_default()["configOptions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let same_ids = listed
        .iter()
        .map(|o| o["id"].clone())
        .eq(options.iter().map(|o| o["id"].clone()));
    let applied = listed
        .iter()
        .any(|o| o["id"] == "reasoning_effort" && o["currentValue"] == value);
    r.check("ACP-CONFIG-002", same_ids && applied, format!("{set:?}"));
}

/// Additional directories, list, delete and close.
async fn lists_and_deletes(r: &Record, a: &mut Agent) {
    let ws = a.world.ws();
    let extra = tempfile::tempdir().unwrap();
    let dirs = a
        .call(
            "session/new",
            json!({"cwd": ws, "mcpServers": [], "additionalDirectories": [extra.path()]}),
        )
        .await;
    r.check(
        "ACP-ADDDIRS-001",
        dirs.result.is_some(),
        format!("{dirs:?}"),
    );
    let list = a.call("session/list", json!({})).await;
    r.check(
        "ACP-LIST-001",
        list.result
            .as_ref()
            .is_some_and(|l| l["sessions"].is_array()),
        format!("{list:?}"),
    );
    let empty = tempfile::tempdir().unwrap();
    let none = a.call("session/list", json!({"cwd": empty.path()})).await;
    r.check(
        "ACP-LIST-002",
        none.result
            .as_ref()
            .is_some_and(|l| l["sessions"] == json!([])),
        format!("{none:?}"),
    );

    let doomed = a.session().await;
    let del = a.call("session/delete", json!({"sessionId": doomed})).await;
    r.check(
        "ACP-DELETE-001",
        del.result == Some(json!({})),
        format!("{del:?}"),
    );
    for ghost in [doomed.as_str(), "tck-never-created-session"] {
        let again = a.call("session/delete", json!({"sessionId": ghost})).await;
        r.check(
            "ACP-DELETE-002",
            again.result.is_some(),
            format!("{ghost}: {again:?}"),
        );
    }
    let idle = a.session().await;
    let close = a.call("session/close", json!({"sessionId": idle})).await;
    r.check(
        "ACP-CLOSE-001",
        close.result == Some(json!({})),
        format!("{close:?}"),
    );
}

async fn auth(r: &Record, a: &mut Agent) {
    let ws = a.world.ws();
    let auth = a.call("authenticate", json!({"methodId": "api-key"})).await;
    let after = a
        .call("session/new", json!({"cwd": ws, "mcpServers": []}))
        .await;
    let not_gated = after.error.as_ref().is_none_or(|e| e["code"] != -32000);
    r.check(
        "ACP-AUTH-003",
        auth.result.as_ref().is_some_and(Value::is_object) && not_gated,
        format!("{auth:?} {after:?}"),
    );
    let logout = a.call("logout", json!({})).await;
    r.check(
        "ACP-AUTH-004",
        logout.result.as_ref().is_some_and(Value::is_object),
        format!("{logout:?}"),
    );
}
