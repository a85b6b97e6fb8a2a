//! `bash_output` and `bash_kill`: the model's handle on the commands `bash` started in the
//! background (`crate::background`). Neither needs a permission: they read or stop a command
//! that was already allowed to run.

use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::background::Piece;
use crate::content::{ToolContent, ToolKind};
use crate::display::fenced;
use crate::model::ToolSpec;
use crate::tools::output::parse_input;
use crate::tools::{
    Access, CallDescription, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

pub const BASH_OUTPUT: &str = "bash_output";
pub const BASH_KILL: &str = "bash_kill";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The id `bash` returned (`bg-1`).
    id: String,
}

pub struct BashOutput;
pub struct BashKill;

fn id_of(input: &Value) -> &str {
    input.get("id").and_then(Value::as_str).unwrap_or("")
}

/// Both tools take the command's id and nothing else.
fn spec_of(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: input_schema::<Input>(),
    }
}

fn described(title: String) -> CallDescription {
    CallDescription {
        title,
        locations: vec![],
    }
}

impl Tool for BashOutput {
    fn name(&self) -> &str {
        BASH_OUTPUT
    }

    fn spec(&self) -> ToolSpec {
        spec_of(
            BASH_OUTPUT,
            "What a background command wrote since the last read (at most 32 KiB; call again \
             for more), and whether it still runs.",
        )
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn describe(&self, input: &Value, _cwd: &Path) -> CallDescription {
        described(format!("Output of {}", id_of(input)))
    }

    fn access(&self, _input: &Value, _cwd: &Path) -> Access {
        Access::None
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = parse_input(BASH_OUTPUT, input)?;
            let piece = ctx
                .background
                .read(&input.id)
                .map_err(ToolError::RespondToModel)?;
            Ok(output_of(&input.id, &piece))
        })
    }
}

fn output_of(id: &str, piece: &Piece) -> ToolOutput {
    let status = match &piece.ended {
        None => format!("{id} is running."),
        Some(how) => format!("{id} {how}."),
    };
    let mut text = status.clone();
    text.push('\n');
    if piece.output.is_empty() {
        text.push_str("(no new output)\n");
    } else {
        text.push_str(&piece.output);
        if !piece.output.ends_with('\n') {
            text.push('\n');
        }
    }
    if piece.more {
        text.push_str("[More output is waiting: call bash_output again.]\n");
    }
    let shown = format!("{status}\n\n{}", fenced(&piece.output, "text"));
    ToolOutput {
        text,
        content: vec![ToolContent::Text { text: shown.into() }],
    }
}

impl Tool for BashKill {
    fn name(&self) -> &str {
        BASH_KILL
    }

    fn spec(&self) -> ToolSpec {
        spec_of(
            BASH_KILL,
            "Stop a background command (TERM, then KILL) and every process it started.",
        )
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn describe(&self, input: &Value, _cwd: &Path) -> CallDescription {
        described(format!("Stop {}", id_of(input)))
    }

    fn access(&self, _input: &Value, _cwd: &Path) -> Access {
        Access::None
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = parse_input(BASH_KILL, input)?;
            let how = ctx
                .background
                .kill(&input.id)
                .await
                .map_err(ToolError::RespondToModel)?;
            let text = format!("{} {how}.", input.id);
            Ok(ToolOutput {
                content: vec![ToolContent::Text {
                    text: text.as_str().into(),
                }],
                text,
            })
        })
    }
}
