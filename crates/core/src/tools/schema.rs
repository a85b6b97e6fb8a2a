//! Tool input schemas, derived from the type a call's arguments are parsed into (each tool's
//! `Input`, read by `parse_input`): the model is shown what the parser accepts, and there is no
//! second, hand-kept schema to drift from it. A field's doc comment is the description the model
//! reads; `#[schemars(range(min = 1))]` and the like add the constraints.

use schemars::generate::SchemaSettings;
use schemars::transform::{RecursiveTransform, Transform};
use schemars::{JsonSchema, Schema};
use serde_json::Value;
use std::sync::Arc;

/// The schema of `T` in the shape every provider takes for a tool's arguments (Anthropic's
/// `input_schema`, OpenAI's function `parameters`): an object schema, self-contained. Made once
/// per type and process: every model request lists the tools, and deriving a schema costs more
/// than copying it (about a tenth of a millisecond per request for the default tools), and a
/// copy is shared rather than made (a deep copy of the default tools' schemas took ~40 µs).
pub(crate) fn input_schema<T: JsonSchema + 'static>() -> Arc<Value> {
    use std::any::TypeId;
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex, PoisonError};
    static MADE: LazyLock<Mutex<HashMap<TypeId, Arc<Value>>>> = LazyLock::new(Default::default);
    MADE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(TypeId::of::<T>())
        .or_insert_with(|| Arc::new(derive::<T>()))
        .clone()
}

fn derive<T: JsonSchema>() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .with(|s| {
            // The provider fixes the dialect; a `$schema` keyword is noise at best.
            s.meta_schema = None;
            // No `$defs`/`$ref`: OpenAI-compatible servers do not all resolve references.
            s.inline_subschemas = true;
        })
        .into_generator()
        .into_root_schema_for::<T>();
    // The type's name and doc comment are for Rust readers: the tool's spec has its description.
    schema.remove("title");
    schema.remove("description");
    RecursiveTransform(for_providers).transform(&mut schema);
    schema.to_value()
}

/// The one place where what schemars writes is fitted to what the providers take:
/// - an `Option` field is typed `["T", "null"]`; the model leaves an optional argument out rather
///   than sending null, and type lists are refused by some OpenAI-compatible servers: one type
///   (and no `default: null`, which `#[serde(default)]` on an `Option` would add);
/// - integers carry schemars' own `format`s (`uint`, `uint64`), which no provider defines; the
///   range is said with `minimum`/`maximum`;
/// - `deny_unknown_fields` becomes `additionalProperties: false`, which some OpenAI-compatible
///   servers refuse; the parser still refuses unknown fields with a message the model can act on.
fn for_providers(schema: &mut Schema) {
    let single_type = match schema.get_mut("type") {
        Some(Value::Array(types)) => {
            types.retain(|t| t != "null");
            match types.as_slice() {
                [only] => Some(only.clone()),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(only) = single_type {
        schema.insert("type".into(), only);
    }
    if schema.get("default") == Some(&Value::Null) {
        schema.remove("default");
    }
    if matches!(
        schema.get("type").and_then(Value::as_str),
        Some("integer" | "number")
    ) {
        schema.remove("format");
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        schema.remove("additionalProperties");
    }
}

#[cfg(test)]
mod tests;
