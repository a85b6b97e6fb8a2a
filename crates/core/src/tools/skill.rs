//! `skill`: loads a skill's instructions, or a file next to them (`crate::skills`). Offered
//! only in a session that has skills. A skill's text is read like `AGENTS.md`, through the same
//! policy, without a question; a file of a project skill is what `read` of its target would be
//! (asked about outside the workspace), so a skill folder that links to the repository root
//! hands out nothing `read` would ask about.

use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::content::{ToolContent, ToolKind};
use crate::model::ToolSpec;
use crate::tools::output::parse_input;
use crate::tools::{
    Access, CallDescription, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

pub const SKILL: &str = "skill";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    // No description: the tool's says it.
    name: String,
    /// A file in its folder to read instead (`reference.md`).
    file: Option<String>,
}

/// The tool, knowing the session's skills (a file's access depends on its skill).
pub struct SkillTool {
    skills: std::sync::Arc<Vec<crate::skills::Skill>>,
}

impl SkillTool {
    pub fn new(skills: std::sync::Arc<Vec<crate::skills::Skill>>) -> Self {
        Self { skills }
    }
}

impl Tool for SkillTool {
    fn name(&self) -> &str {
        SKILL
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SKILL.into(),
            description: "Load a skill listed in the system prompt, or with `file` a file \
                          of its folder it refers to."
                .into(),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn describe(&self, input: &Value, _cwd: &Path) -> CallDescription {
        let name = input.get("name").and_then(Value::as_str).unwrap_or("");
        let title = match input.get("file").and_then(Value::as_str) {
            Some(file) => format!("Skill {name}: {file}"),
            None => format!("Skill {name}"),
        };
        CallDescription {
            title,
            locations: vec![],
        }
    }

    /// A project skill's file is a `read` of its target; the body, a personal skill's file and
    /// a file the call refuses anyway (outside the skill's folder) ask nothing.
    fn access(&self, input: &Value, _cwd: &Path) -> Access {
        let name = input.get("name").and_then(Value::as_str);
        let file = input.get("file").and_then(Value::as_str);
        let (Some(name), Some(file)) = (name, file) else {
            return Access::None;
        };
        match self.skills.iter().find(|s| s.name == name && !s.personal) {
            Some(skill) => match crate::skills::file_target(skill, file) {
                Some(target) => Access::Read {
                    paths: vec![target],
                },
                None => Access::None,
            },
            None => Access::None,
        }
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = parse_input(SKILL, input)?;
            let Some(skill) = ctx.skills.iter().find(|s| s.name == input.name) else {
                let known: Vec<&str> = ctx.skills.iter().map(|s| s.name.as_str()).collect();
                return Err(ToolError::RespondToModel(format!(
                    "no skill {:?}; the skills are: {}",
                    input.name,
                    known.join(", ")
                )));
            };
            let text = match &input.file {
                Some(rel) => crate::skills::read_file(&ctx.own_files, skill, rel)
                    .map_err(ToolError::RespondToModel)?,
                None => {
                    let files = crate::skills::files(skill);
                    let mut text = format!("# Skill: {}\n\n{}", skill.name, skill.body.trim_end());
                    if !files.is_empty() {
                        text.push_str(&format!(
                            "\n\nFiles in this skill's folder ({}), readable with `file`: {}",
                            skill.dir.display(),
                            files.join(", ")
                        ));
                    }
                    text
                }
            };
            Ok(ToolOutput {
                content: vec![ToolContent::Text {
                    text: crate::display::fenced(&text, "markdown").into(),
                }],
                text,
            })
        })
    }
}
