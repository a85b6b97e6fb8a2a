//! Pins what the model is shown of each built-in tool's arguments, and checks that every schema
//! has the shape all providers take (Anthropic `input_schema`, OpenAI function `parameters`).

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use serde_json::{Map, Value};

use crate::modes::Harness;
use crate::tools::registry_for;

/// Every built-in tool, by name, with its input schema (`code` offers them all).
fn builtin_schemas() -> Map<String, Value> {
    registry_for(Harness::Code)
        .specs()
        .into_iter()
        .map(|spec| (spec.name, Value::clone(&spec.input_schema)))
        .collect()
}

fn snapshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/tools/schema/builtin.json")
}

/// A change to a tool's arguments shows up as a diff of `builtin.json` in review. After an
/// intended change: `FERRITE_BLESS=1 cargo test -p ferrite-core --lib tools::schema` rewrites it.
#[test]
fn builtin_schemas_match_the_snapshot() {
    let mut actual = Value::Object(builtin_schemas());
    actual.sort_all_objects();
    if std::env::var_os("FERRITE_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&actual).unwrap() + "\n";
        std::fs::write(snapshot_path(), text).unwrap();
    }
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(snapshot_path()).unwrap()).unwrap();
    assert_eq!(
        expected, actual,
        "tool schemas changed; if intended, rerun with FERRITE_BLESS=1 and review the diff"
    );
}

/// The first thing in `schema` (at `at`) that a provider would refuse or misread.
fn shape_problem(schema: &Value, at: &str) -> Option<String> {
    let Value::Object(obj) = schema else {
        return Some(format!("{at}: not an object"));
    };
    // Self-contained: OpenAI-compatible servers do not all resolve references, and Anthropic
    // and OpenAI reject a `$schema` keyword in some positions.
    for key in ["$schema", "$ref", "$defs", "definitions", "$id"] {
        if obj.contains_key(key) {
            return Some(format!("{at}: has `{key}`"));
        }
    }
    match obj.get("type") {
        Some(Value::String(t)) if t == "integer" && obj.contains_key("format") => {
            return Some(format!("{at}: integer with a `format`"));
        }
        Some(Value::String(_)) => {}
        other => return Some(format!("{at}: `type` is {other:?}, not one type name")),
    }
    if let Some(props) = obj.get("properties") {
        let Value::Object(props) = props else {
            return Some(format!("{at}: `properties` is not an object"));
        };
        for (name, sub) in props {
            if let Some(p) = shape_problem(sub, &format!("{at}.{name}")) {
                return Some(p);
            }
        }
        let required = obj.get("required").and_then(Value::as_array);
        for name in required.into_iter().flatten() {
            if !name.as_str().is_some_and(|n| props.contains_key(n)) {
                return Some(format!("{at}: required {name} is not a property"));
            }
        }
    }
    match obj.get("items") {
        Some(items) => shape_problem(items, &format!("{at}[]")),
        None => None,
    }
}

#[test]
fn every_schema_fits_every_provider() {
    for (name, schema) in builtin_schemas() {
        // Anthropic requires an object schema at the root; OpenAI requires `properties` there.
        assert_eq!(schema["type"], "object", "{name}");
        assert!(schema["properties"].is_object(), "{name}");
        assert_eq!(shape_problem(&schema, &name), None);
    }
}

#[test]
fn the_shape_check_finds_what_providers_refuse() {
    let bad = [
        serde_json::json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}),
        serde_json::json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}),
        serde_json::json!({"type": "object", "properties": {"n": {"type": "integer", "format": "uint"}}}),
        serde_json::json!({"type": "object", "properties": {}, "required": ["x"]}),
        serde_json::json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}),
        serde_json::json!({"type": "object", "properties": {"l": {"type": "array", "items": {}}}}),
    ];
    for schema in bad {
        assert!(shape_problem(&schema, "t").is_some(), "{schema}");
    }
}

/// Every fitting `input_schema` makes, on a type that needs each of them.
#[test]
fn input_schema_fits_what_schemars_writes() {
    use schemars::JsonSchema;
    use serde::Deserialize;

    /// For Rust readers only.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Input {
        /// Says what it is.
        name: String,
        #[schemars(range(min = 1, max = 9))]
        count: Option<u64>,
        #[serde(default)]
        note: Option<String>,
        #[serde(default)]
        all: bool,
        items: Vec<Item>,
    }
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        One,
        OtherOne,
    }
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Item {
        kind: Kind,
        size: usize,
    }

    assert_eq!(
        *super::input_schema::<Input>(),
        serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Says what it is."},
                "count": {"type": "integer", "minimum": 1, "maximum": 9},
                "note": {"type": "string"},
                "all": {"type": "boolean", "default": false},
                "items": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": ["one", "other_one"]},
                        "size": {"type": "integer", "minimum": 0}
                    },
                    "required": ["kind", "size"]
                }}
            },
            "required": ["name", "items"]
        })
    );
}
