//! typescript-language-server pushes a file's diagnostics piecemeal (syntax first, semantic
//! later), with no version, and nothing at all when they did not change: a waiter cannot tell
//! the report on the content it sent. Its `typescript.tsserverRequest` command runs tsserver's
//! own `syntacticDiagnosticsSync` and `semanticDiagnosticsSync` on the document as last sent;
//! their answers together are the file's report for that version.

use std::sync::Arc;

use lsp_types::{Diagnostic, DiagnosticSeverity, Position, Range, Url};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::docs::Docs;
use crate::rpc::Connection;

/// Asks both checks of `uri` (sent already at `version`) and records their errors as that
/// version's report. Nothing is recorded if either fails: the waiter's bound applies.
pub(crate) fn pull(conn: &Connection, docs: Arc<Docs>, uri: Url, version: i32) {
    let ask = |check: &str| {
        conn.request(
            "workspace/executeCommand",
            json!({
                "command": "typescript.tsserverRequest",
                "arguments": [check, {"file": uri}],
            }),
        )
    };
    let syntax = ask("syntacticDiagnosticsSync");
    let semantic = ask("semanticDiagnosticsSync");
    tokio::spawn(async move {
        let (Ok(syntax), Ok(semantic)) = futures::join!(syntax, semantic) else {
            return;
        };
        let (Some(mut all), Some(more)) = (diagnostics(&syntax), diagnostics(&semantic)) else {
            return;
        };
        all.extend(more);
        docs.report(&uri, Some(version), all);
    });
}

/// One of tsserver's diagnostics (1-based line and offset).
#[derive(Deserialize)]
struct TsDiagnostic {
    start: TsPosition,
    end: TsPosition,
    text: String,
    category: String,
}

#[derive(Deserialize)]
struct TsPosition {
    line: u32,
    offset: u32,
}

impl TsPosition {
    fn lsp(&self) -> Position {
        Position::new(self.line.saturating_sub(1), self.offset.saturating_sub(1))
    }
}

/// The diagnostics of a tsserver response (`{"success": true, "body": [...]}`), in LSP terms.
fn diagnostics(response: &Value) -> Option<Vec<Diagnostic>> {
    if response.get("success") != Some(&Value::Bool(true)) {
        return None;
    }
    let body: Vec<TsDiagnostic> = serde_json::from_value(response.get("body")?.clone()).ok()?;
    Some(
        body.into_iter()
            .map(|d| Diagnostic {
                range: Range::new(d.start.lsp(), d.end.lsp()),
                severity: Some(match d.category.as_str() {
                    "error" => DiagnosticSeverity::ERROR,
                    "warning" => DiagnosticSeverity::WARNING,
                    "suggestion" => DiagnosticSeverity::HINT,
                    _ => DiagnosticSeverity::INFORMATION,
                }),
                message: d.text,
                source: Some("typescript".into()),
                ..Default::default()
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tsserver_answer_becomes_lsp_diagnostics() {
        let answer = json!({"success": true, "body": [
            {"start": {"line": 2, "offset": 14}, "end": {"line": 2, "offset": 15},
             "text": "Type 'string' is not assignable to type 'number'.", "code": 2322,
             "category": "error"},
            {"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 2},
             "text": "unused", "category": "suggestion"},
        ]});
        let d = diagnostics(&answer).unwrap();
        assert_eq!(d[0].range.start, Position::new(1, 13));
        assert_eq!(d[0].severity, Some(DiagnosticSeverity::ERROR));
        assert_eq!(d[1].severity, Some(DiagnosticSeverity::HINT));
        assert!(diagnostics(&json!({"success": false})).is_none());
    }
}
