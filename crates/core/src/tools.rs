//! The tools the model can call. Each tool is a [`Tool`]; the registry is what one turn offers.
//! A failing tool is input for the model ([`ToolError::RespondToModel`]), not a Rust failure.

mod update_plan;

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::{Location, ToolContent, ToolKind};
use crate::model::ToolSpec;
use crate::turn::Recorder;

pub use update_plan::UpdatePlan;

/// How a call is shown before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CallDescription {
    pub title: String,
    pub locations: Vec<Location>,
}

/// What a finished call gives back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// What the model reads.
    pub text: String,
    /// What the editor shows (replaces the call's content).
    pub content: Vec<ToolContent>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The call failed in a way the model should hear about and can react to.
    #[error("{0}")]
    RespondToModel(String),
    /// The tool machinery itself broke: the turn ends as a `tool_error`.
    #[error("{0}")]
    Fatal(String),
}

/// What a tool may use while it runs.
pub struct ToolContext<'a> {
    pub cwd: PathBuf,
    pub call_id: String,
    pub cancel: CancellationToken,
    pub recorder: &'a Recorder,
}

pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn spec(&self) -> ToolSpec;
    fn kind(&self) -> ToolKind;
    fn describe(&self, input: &Value, cwd: &std::path::Path) -> CallDescription;
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// The tools offered in one turn.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// The built-in tools every harness gets.
    pub fn builtin() -> Self {
        let mut r = Self::default();
        r.add(Arc::new(UpdatePlan));
        r
    }

    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }
}
