//! Validates every message ferrite sends against the ACP JSON Schema for its method: requests and
//! notifications by their `x-method` definition, responses against the `*Response` of the
//! request's method, errors against `Error`. (The schema's root is too permissive: its unions
//! accept any JSON.) The schema file is generated from the exact protocol types ferrite pins, with
//! the same features (`crates/acp/src/schema_fixture.rs`).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

const SCHEMA: &str = include_str!("../fixtures/acp-schema-1.20.0.json");

pub struct AcpSchema {
    root: Value,
    /// `(method, kind)` → definition name, kind ∈ request | response | notification.
    by_method: HashMap<(String, &'static str), String>,
    cache: Mutex<HashMap<String, std::sync::Arc<jsonschema::Validator>>>,
}

/// The process-wide schema (parsing it is not free).
pub fn schema() -> &'static AcpSchema {
    static S: OnceLock<AcpSchema> = OnceLock::new();
    S.get_or_init(AcpSchema::load)
}

impl AcpSchema {
    fn load() -> Self {
        let root: Value = serde_json::from_str(SCHEMA).unwrap_or(Value::Null);
        let mut by_method = HashMap::new();
        if let Some(defs) = root.get("$defs").and_then(Value::as_object) {
            for (name, def) in defs {
                let Some(method) = def.get("x-method").and_then(Value::as_str) else {
                    continue;
                };
                let kind = if name.ends_with("Response") {
                    "response"
                } else if name.ends_with("Notification") {
                    "notification"
                } else {
                    "request"
                };
                by_method.insert((method.to_owned(), kind), name.clone());
            }
        }
        Self {
            root,
            by_method,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn validator(&self, def: &str) -> Result<std::sync::Arc<jsonschema::Validator>, String> {
        let mut cache = self.cache.lock().map_err(|e| e.to_string())?;
        if let Some(v) = cache.get(def) {
            return Ok(v.clone());
        }
        let schema = json!({
            "$ref": format!("#/$defs/{def}"),
            "$defs": self.root.get("$defs").cloned().unwrap_or(Value::Null),
        });
        let v = std::sync::Arc::new(jsonschema::validator_for(&schema).map_err(|e| e.to_string())?);
        cache.insert(def.to_owned(), v.clone());
        Ok(v)
    }

    /// Validates `instance` against definition `def`.
    pub fn check(&self, def: &str, instance: &Value) -> Result<(), String> {
        let v = self.validator(def)?;
        let errors: Vec<String> = v
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .take(5)
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("{def}: {}", errors.join("; ")))
        }
    }

    /// Validates one message the agent wrote. `request_method` is the method of the client's
    /// request a response answers.
    pub fn check_agent_message(
        &self,
        msg: &Value,
        request_method: Option<&str>,
    ) -> Result<(), String> {
        if msg.get("jsonrpc") != Some(&json!("2.0")) {
            return Err("missing \"jsonrpc\": \"2.0\"".into());
        }
        if let Some(method) = msg.get("method").and_then(Value::as_str) {
            if method.starts_with('_') {
                return Ok(());
            }
            let kind = if msg.get("id").is_some() {
                "request"
            } else {
                "notification"
            };
            let def = self
                .by_method
                .get(&(method.to_owned(), kind))
                .ok_or_else(|| format!("agent sent unknown {kind} `{method}`"))?;
            return self.check(def, msg.get("params").unwrap_or(&Value::Null));
        }
        match (msg.get("result"), msg.get("error")) {
            (Some(result), None) => {
                let Some(method) = request_method else {
                    return Err("a response to no request".into());
                };
                if method.starts_with('_') {
                    return Ok(());
                }
                // `session/set_model` left the schema; it is answered like set_config_option.
                let method = if method == "session/set_model" {
                    "session/set_config_option"
                } else {
                    method
                };
                let def = self
                    .by_method
                    .get(&(method.to_owned(), "response"))
                    .ok_or_else(|| format!("no response schema for `{method}`"))?;
                self.check(def, result)
            }
            (None, Some(error)) => self.check("Error", error),
            _ => Err("neither result nor error".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catches_a_bad_stop_reason() {
        let s = schema();
        let good = json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}});
        assert_eq!(s.check_agent_message(&good, Some("session/prompt")), Ok(()));
        let bad = json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"done"}});
        assert!(s.check_agent_message(&bad, Some("session/prompt")).is_err());
        let upd = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","modeId":"x"}}});
        assert!(
            s.check_agent_message(&upd, None).is_err(),
            "modeId is the wrong field name"
        );
    }
}
