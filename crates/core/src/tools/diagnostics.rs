//! `diagnostics`: the errors the session's language servers report, for one file or for every
//! file they reported on (`docs/lsp.md`). The card shows the same errors.

use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::content::{ToolContent, ToolKind};
use crate::lsp::{Before, LspCall, card, diagnostics_text};
use crate::model::ToolSpec;
use crate::paths::resolve;
use crate::tools::output::parse_input;
use crate::tools::write::optional_path_description;
use crate::tools::{
    Access, CallDescription, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

pub const DIAGNOSTICS: &str = "diagnostics";

pub struct Diagnostics;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// A file to check; without it, every file the language servers reported on.
    path: Option<String>,
}

impl Tool for Diagnostics {
    fn name(&self) -> &str {
        DIAGNOSTICS
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: DIAGNOSTICS.into(),
            description: "Errors the language servers report (type errors, unresolved names) \
                for a file, or for every file they have reported on. Edits already show the \
                edited file's errors."
                .into(),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn describe(&self, input: &Value, cwd: &Path) -> CallDescription {
        optional_path_description("Diagnostics of", "Diagnostics of the workspace", input, cwd)
    }

    fn access(&self, input: &Value, cwd: &Path) -> Access {
        let path = input.get("path").and_then(Value::as_str).unwrap_or(".");
        Access::Read {
            paths: vec![resolve(cwd, path)],
        }
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = parse_input(DIAGNOSTICS, input)?;
            let Some(call) = ctx.lsp.as_ref().filter(|c| c.scope.config.enabled) else {
                return Err(ToolError::RespondToModel(
                    "Language servers are turned off (`lsp.enabled = false`).".into(),
                ));
            };
            let path = input.path.map(|p| resolve(&ctx.cwd, &p));
            if let Some(p) = &path
                && !p.is_file()
            {
                return Err(ToolError::RespondToModel(format!(
                    "{} is not a file; give a file's path, or none for every file the servers \
                     reported on.",
                    crate::paths::display(p, &ctx.cwd)
                )));
            }
            let reports = call.servers.diagnostics(&call.scope, path.as_deref()).await;
            let text = match (&path, reports.is_empty()) {
                (Some(p), true) => format!(
                    "No language server handles {} (see `docs/lsp.md` for the servers and how \
                     to add one).",
                    crate::paths::display(p, &ctx.cwd)
                ),
                _ => diagnostics_text(&reports, &ctx.cwd, call.scope.config.wait_ms),
            };
            let shown = text
                .split("\n\n")
                .map(card)
                .collect::<Vec<_>>()
                .join("\n\n");
            Ok(ToolOutput {
                content: vec![ToolContent::Text { text: shown.into() }],
                text,
            })
        })
    }
}

/// After a successful `write` or `edit` of `path` (`shown` as the model named it): the errors
/// its server reports now, appended to what the model reads after a sentence that the edit was
/// applied, and shown on the card. Nothing when no server handles the file.
pub(crate) async fn after_edit(
    call: Option<&LspCall>,
    (path, shown): (&Path, &str),
    text: &str,
    out: &mut ToolOutput,
) {
    let Some(call) = call else { return };
    if !call.scope.config.enabled {
        return;
    }
    let before = before_of(out, text);
    let Some(report) = call.servers.changed(&call.scope, path, before, text).await else {
        return;
    };
    let wait = call.scope.config.wait_ms;
    let mut part = format!(
        "The edit was applied. {}",
        crate::lsp::file_text(&report, shown, wait)
    );
    if !call.budget.take(part.len()) {
        part = format!(
            "The edit was applied. (Diagnostics for {shown} left out: this turn's budget for \
             diagnostics is spent; call `diagnostics` with this path to see them.)"
        );
    }
    out.text.push_str("\n\n");
    out.text.push_str(&part);
    out.content.push(ToolContent::Text {
        text: card(&part).into(),
    });
}

/// What the file held before, from the call's diff: whole only when the diff is of the whole
/// file (a large file's diff is the changed region).
fn before_of<'a>(out: &'a ToolOutput, text: &str) -> Before<'a> {
    out.content
        .iter()
        .find_map(|c| match c {
            ToolContent::Diff {
                old_text, new_text, ..
            } if new_text == text => Some(match old_text {
                Some(old) => Before::Text(old),
                None => Before::New,
            }),
            _ => None,
        })
        .unwrap_or(Before::Unknown)
}
