//! A language server for tests (`docs/lsp.md`), speaking LSP over stdio with `Content-Length`
//! framing. `fake-lsp-server [--hang] [--pid-file FILE]`:
//! - by default it answers `initialize` and, on every `didOpen`/`didChange`, publishes (with the
//!   document's version) one error per line holding `ERROR`, at that word, message
//!   `found ERROR: <the rest of the line>`; a change to a text holding `CRASH` makes it exit at
//!   once (status 3), as a server that crashes mid-turn;
//! - with `--hang` it reads everything and never answers anything;
//! - with `--pid-file FILE` it appends its pid to FILE when it starts (tests count restarts and
//!   look for what is left of it).

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn read(input: &mut impl BufRead) -> Option<Value> {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn write(out: &mut impl Write, message: &Value) {
    let body = message.to_string();
    let _ = write!(out, "Content-Length: {}\r\n\r\n{body}", body.len());
    let _ = out.flush();
}

fn publish(out: &mut impl Write, uri: &Value, version: &Value, text: &str) {
    let diagnostics: Vec<Value> = text
        .lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let col = line.find("ERROR")?;
            let rest = line[col + 5..].trim();
            Some(json!({
                "range": {"start": {"line": n, "character": col}, "end": {"line": n, "character": col + 5}},
                "severity": 1,
                "message": format!("found ERROR: {rest}"),
            }))
        })
        .collect();
    write(
        out,
        &json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                "params": {"uri": uri, "version": version, "diagnostics": diagnostics}}),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hang = args.iter().any(|a| a == "--hang");
    if let Some(i) = args.iter().position(|a| a == "--pid-file")
        && let Some(file) = args.get(i + 1)
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
    {
        let _ = writeln!(f, "{}", std::process::id());
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout();
    while let Some(message) = read(&mut input) {
        if hang {
            continue;
        }
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (method, id) {
            ("initialize", Some(id)) => write(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": id, "result": {"capabilities": {"textDocumentSync": 1}}}),
            ),
            ("shutdown", Some(id)) => write(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": id, "result": null}),
            ),
            ("exit", _) => return,
            ("textDocument/didOpen", None) => {
                let doc = &params["textDocument"];
                publish(
                    &mut out,
                    &doc["uri"],
                    &doc["version"],
                    doc["text"].as_str().unwrap_or_default(),
                );
            }
            ("textDocument/didChange", None) => {
                let doc = &params["textDocument"];
                let text = params["contentChanges"][0]["text"]
                    .as_str()
                    .unwrap_or_default();
                if text.contains("CRASH") {
                    std::process::exit(3);
                }
                publish(&mut out, &doc["uri"], &doc["version"], text);
            }
            (_, Some(id)) => write(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": id, "result": null}),
            ),
            _ => {}
        }
    }
}
