//! Golden transcripts: the lines an editor and the agent exchanged, normalized (what differs
//! between runs replaced) and pretty-printed, so a change to what an editor sees is a reviewable
//! diff. `FERRITE_BLESS=1` rewrites the files instead of comparing.

use std::path::Path;

use serde_json::{Value, json};

/// Renders `lines` (`> ` + JSON from the editor, `< ` + JSON from the agent) one message per
/// entry: the direction on a line of its own, then the message pretty-printed, with every
/// `(from, to)` of `swaps` replaced in its strings.
pub fn render(lines: &[String], swaps: &[(String, &str)]) -> String {
    let mut text = String::new();
    for line in lines {
        let (direction, json) = line.split_at(2);
        let mut message: Value = serde_json::from_str(json).unwrap();
        normalize(&mut message, swaps);
        text.push_str(direction.trim_end());
        text.push('\n');
        text.push_str(&serde_json::to_string_pretty(&message).unwrap());
        text.push('\n');
    }
    text
}

/// Compares `text` with the golden file at `path` (or writes it when `FERRITE_BLESS` is set).
pub fn compare(path: &Path, text: &str) {
    if std::env::var_os("FERRITE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (FERRITE_BLESS=1 writes it)", path.display()));
    pretty_assertions::assert_eq!(
        golden,
        text,
        "{}: the transcript changed (FERRITE_BLESS=1 rewrites it once checked)",
        path.display()
    );
}

/// Replaces what differs between runs (ids, temporary paths, times) and cuts the model catalog
/// to its first entry (the catalog has its own tests; it would make every golden churn).
pub fn normalize(v: &mut Value, swaps: &[(String, &str)]) {
    if let Some(models) = v.pointer_mut("/result/_meta/ferrite/models") {
        shorten(models);
    }
    for options in ["/result/configOptions", "/params/update/configOptions"] {
        if let Some(Value::Array(options)) = v.pointer_mut(options) {
            for o in options.iter_mut().filter(|o| o["id"] == "model") {
                shorten(&mut o["options"]);
            }
        }
    }
    swap_strings(v, swaps);
}

fn shorten(list: &mut Value) {
    if let Value::Array(items) = list
        && items.len() > 1
    {
        items.truncate(1);
        items.push(json!("<the rest of the catalog>"));
    }
}

fn swap_strings(v: &mut Value, swaps: &[(String, &str)]) {
    match v {
        Value::String(s) => {
            for (from, to) in swaps {
                *s = s.replace(from.as_str(), to);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| swap_strings(i, swaps)),
        Value::Object(fields) => {
            for (k, f) in fields.iter_mut() {
                if k == "updatedAt" {
                    *f = json!("<time>");
                } else {
                    swap_strings(f, swaps);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
