//! The JSON Schema the strict test client checks every message against
//! (`crates/test-support/fixtures/acp-schema-<version>.json`) is generated from the exact protocol
//! types ferrite pins, with the same features, so the check moves with the pin.
//! `FERRITE_BLESS=1 cargo test -p ferrite-acp schema_fixture` writes it after a bump.

use agent_client_protocol_schema::v1 as acp;
use agent_client_protocol_schema::v1::{JsonRpcMessage, Notification};
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../test-support/fixtures/acp-schema-1.20.0.json"
);

/// Every message either side may send, under the definitions the validator looks up
/// (`x-method` on each request, response and notification type, and `Error`); the root's shape
/// is not used.
fn generate() -> Value {
    let mut g = SchemaSettings::draft2020_12().into_generator();
    let agent = [
        g.subschema_for::<JsonRpcMessage<acp::Request<acp::AgentRequest>>>(),
        g.subschema_for::<JsonRpcMessage<acp::Response<acp::AgentResponse>>>(),
        g.subschema_for::<JsonRpcMessage<Notification<acp::AgentNotification>>>(),
    ];
    let client = [
        g.subschema_for::<JsonRpcMessage<acp::Request<acp::ClientRequest>>>(),
        g.subschema_for::<JsonRpcMessage<acp::Response<acp::ClientResponse>>>(),
        g.subschema_for::<JsonRpcMessage<Notification<acp::ClientNotification>>>(),
    ];
    let protocol =
        g.subschema_for::<JsonRpcMessage<Notification<acp::ProtocolLevelNotification>>>();
    g.subschema_for::<acp::Error>();
    let defs: serde_json::Map<String, Value> = g.take_definitions(true);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Agent Client Protocol",
        "anyOf": [
            {"title": "Agent", "anyOf": agent},
            {"title": "Client", "anyOf": client},
            {"title": "Protocol", "anyOf": [protocol]},
        ],
        "$defs": defs,
    })
}

#[test]
fn schema_fixture_is_generated_from_the_pinned_types() {
    let generated = serde_json::to_string_pretty(&generate()).unwrap() + "\n";
    if std::env::var_os("FERRITE_BLESS").is_some() {
        std::fs::write(FIXTURE, &generated).unwrap();
        return;
    }
    let stored = std::fs::read_to_string(FIXTURE).unwrap_or_default();
    assert!(
        stored == generated,
        "{FIXTURE} is not the schema of the pinned types; regenerate it with FERRITE_BLESS=1"
    );
}
