//! `diagnostics`: the errors the session's language servers report, for one file or for every
//! file they reported on (`docs/lsp.md`). The card shows the same errors.

use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::content::{ToolContent, ToolKind};
use crate::lsp::{card, diagnostics_text};
use crate::model::ToolSpec;
use crate::paths::resolve;
use crate::tools::output::parse_input;
use crate::tools::write::path_description;
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
        if input.get("path").and_then(Value::as_str).is_some() {
            path_description("Diagnostics of", input, cwd)
        } else {
            let mut d = path_description("Diagnostics of", &json!({"path": "."}), cwd);
            d.title = "Diagnostics of the workspace".into();
            d
        }
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
