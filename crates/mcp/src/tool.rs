//! An MCP server's tool as a ferrite [`Tool`].

use std::sync::Arc;
use std::time::Duration;

use ferrite_core::model::ToolSpec;
use ferrite_core::tools::{
    Access, CallDescription, OutputLimits, Tool, ToolContext, ToolError, ToolOutput,
};
use ferrite_store::content::ToolKind;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::content;
use crate::server::{CallError, Server};

/// One tool of one MCP server, offered to the model as `mcp__<server>__<tool>`.
pub struct McpTool {
    /// The name the model sees (sanitized, at most 64 characters).
    name: String,
    server: Arc<Server>,
    /// The tool as the server described it; its `name` is the one to call.
    tool: rmcp::model::Tool,
    /// Its arguments' schema as the model is shown it (made once: every request lists it).
    input_schema: Arc<Value>,
    call_timeout: Duration,
}

impl McpTool {
    pub(crate) fn new(
        name: String,
        server: Arc<Server>,
        tool: rmcp::model::Tool,
        call_timeout: Duration,
    ) -> Self {
        Self {
            name,
            server,
            input_schema: Arc::new(object_schema(&tool.input_schema)),
            tool,
            call_timeout,
        }
    }

    /// The server's own name for the tool.
    pub fn mcp_name(&self) -> &str {
        &self.tool.name
    }

    pub fn server_name(&self) -> &str {
        &self.server.name
    }

    /// [`Tool::call`] without a [`ToolContext`]: what it does with the context is use its
    /// cancel token and output limits. (Public so tests outside core, which cannot build a
    /// `ToolContext`, can call tools.)
    pub async fn invoke(
        &self,
        input: Value,
        cancel: &CancellationToken,
        limits: OutputLimits,
    ) -> Result<ToolOutput, ToolError> {
        let arguments = match input {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::RespondToModel(format!(
                    "the arguments of `{}` must be a JSON object, not {other}",
                    self.name
                )));
            }
        };
        let server = &self.server.name;
        let tool = self.mcp_name();
        let result = tokio::select! {
            r = self.server.call(tool, arguments) => r,
            () = cancel.cancelled() => {
                return Err(ToolError::RespondToModel(format!(
                    "the call to `{tool}` on MCP server `{server}` was cancelled"
                )));
            }
            () = tokio::time::sleep(self.call_timeout) => {
                return Err(ToolError::RespondToModel(format!(
                    "MCP server `{server}` did not answer `{tool}` within {} s; the call was \
                     cancelled",
                    self.call_timeout.as_secs_f64()
                )));
            }
        };
        match result {
            Ok(result) => {
                let text = content::truncate(content::result_text(&result), limits);
                if result.is_error == Some(true) {
                    Err(ToolError::RespondToModel(text))
                } else {
                    Ok(ToolOutput {
                        content: content::editor_content(&result, &text),
                        text,
                    })
                }
            }
            Err(CallError::NotRunning(reason)) => Err(ToolError::RespondToModel(format!(
                "MCP server `{server}` is not running: {reason}"
            ))),
            Err(CallError::Failed(reason)) => Err(ToolError::RespondToModel(format!(
                "MCP server `{server}` failed to run `{tool}`: {reason}"
            ))),
        }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self
                .tool
                .description
                .as_deref()
                .unwrap_or_default()
                .to_owned(),
            input_schema: self.input_schema.clone(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn describe(&self, _input: &Value, _cwd: &std::path::Path) -> CallDescription {
        let title = self
            .tool
            .title
            .as_deref()
            .or_else(|| self.tool.annotations.as_ref()?.title.as_deref())
            .unwrap_or(&self.tool.name);
        CallDescription {
            title: format!("{}: {title}", self.server.name),
            locations: Vec::new(),
        }
    }

    fn access(&self, _input: &Value, _cwd: &std::path::Path) -> Access {
        Access::Mcp
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.invoke(input, &ctx.cancel, ctx.limits))
    }
}

/// The tool's input schema as providers accept it: an object schema with `type: "object"` and
/// `properties` (OpenAI refuses a function whose schema lacks either).
pub(crate) fn object_schema(schema: &Map<String, Value>) -> Value {
    let mut schema = schema.clone();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        schema.insert("type".into(), Value::from("object"));
    }
    schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    Value::Object(schema)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn schemas_are_object_schemas() {
        let Value::Object(empty) = json!({}) else {
            unreachable!()
        };
        assert_eq!(
            object_schema(&empty),
            json!({"type": "object", "properties": {}})
        );
        let Value::Object(full) = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "required": ["a"]})
        else {
            unreachable!()
        };
        assert_eq!(object_schema(&full), Value::Object(full));
    }
}
