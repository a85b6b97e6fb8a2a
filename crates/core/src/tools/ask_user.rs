//! `ask_user`: a question to the user, answered in the editor (a form: free text, one option or
//! several), when the model cannot go on without a decision only the user can make. Offered
//! only where the editor can show forms (ACP form elicitation, `crate::elicit`); elsewhere the
//! model asks in its answer, as it always has.

use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::content::ToolKind;
use crate::elicit::{Field, Question, Reply};
use crate::model::ToolSpec;
use crate::tools::output::parse_input;
use crate::tools::{
    Access, CallDescription, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

pub const ASK_USER: &str = "ask_user";

/// Options offered at most, and the longest text of one.
const MAX_OPTIONS: usize = 12;
const MAX_OPTION_CHARS: usize = 200;
/// The question's length at most.
const MAX_QUESTION_CHARS: usize = 2_000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The question, with what the user needs to know to answer it.
    question: String,
    /// Answers to choose from (2 to 12); without them the user answers in their own words.
    options: Option<Vec<String>>,
    /// Whether several options may be picked.
    #[serde(default)]
    multiple: bool,
}

pub struct AskUserTool;

fn field(input: &Input) -> Result<Field, String> {
    let Some(options) = &input.options else {
        return Ok(Field::Text);
    };
    if !(2..=MAX_OPTIONS).contains(&options.len()) {
        return Err(format!(
            "give 2 to {MAX_OPTIONS} options, or none for a free answer"
        ));
    }
    let mut seen = Vec::new();
    for o in options {
        let o = o.trim();
        if o.is_empty() || o.chars().count() > MAX_OPTION_CHARS || seen.contains(&o) {
            return Err(format!(
                "each option must be non-empty, unique and at most {MAX_OPTION_CHARS} characters"
            ));
        }
        seen.push(o);
    }
    let options = seen.into_iter().map(str::to_owned).collect();
    Ok(if input.multiple {
        Field::Choices(options)
    } else {
        Field::Choice(options)
    })
}

impl Tool for AskUserTool {
    fn name(&self) -> &str {
        ASK_USER
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: ASK_USER.into(),
            description: "Ask the user a question in the editor and wait for the answer. Only \
                for a decision you cannot make from the code or the request (which of two \
                designs, whether to touch something risky); offer `options` when the answers \
                are known. The user may decline to answer."
                .into(),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn describe(&self, input: &Value, _cwd: &Path) -> CallDescription {
        let question = input.get("question").and_then(Value::as_str).unwrap_or("");
        let short: String = question.chars().take(80).collect();
        CallDescription {
            title: format!("Question: {short}"),
            locations: vec![],
        }
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
            let input: Input = parse_input(ASK_USER, input)?;
            if input.question.trim().is_empty()
                || input.question.chars().count() > MAX_QUESTION_CHARS
            {
                return Err(ToolError::RespondToModel(format!(
                    "the question must be 1 to {MAX_QUESTION_CHARS} characters"
                )));
            }
            let field = field(&input).map_err(ToolError::RespondToModel)?;
            let Some(elicitor) = ctx.elicitor.as_ref().filter(|e| e.available()) else {
                return Err(ToolError::RespondToModel(
                    "The editor cannot show questions; ask the user in your answer instead.".into(),
                ));
            };
            let question = Question {
                message: input.question.trim().to_owned(),
                field,
                tool_call: Some(ctx.call_id.clone()),
            };
            let asked = elicitor.ask(ctx.recorder.session(), question);
            let reply = tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError::Cancelled("Cancelled while the user was asked.".into()));
                }
                r = asked => r,
            };
            let text = match reply {
                Ok(Reply::Answered(values)) if values.is_empty() => {
                    "The user answered without choosing anything.".to_owned()
                }
                Ok(Reply::Answered(values)) => format!("The user answered: {}", values.join(", ")),
                Ok(Reply::Declined) => "The user declined to answer.".to_owned(),
                Ok(Reply::Cancelled) => {
                    "The user dismissed the question without answering.".to_owned()
                }
                Err(why) => {
                    return Err(ToolError::RespondToModel(format!(
                        "The question could not be shown ({why}); ask the user in your answer \
                         instead."
                    )));
                }
            };
            Ok(ToolOutput {
                text,
                content: vec![],
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(options: Option<Vec<&str>>, multiple: bool) -> Input {
        Input {
            question: "q".into(),
            options: options.map(|o| o.into_iter().map(str::to_owned).collect()),
            multiple,
        }
    }

    #[test]
    fn options_become_a_choice_and_bad_lists_are_refused() {
        assert_eq!(field(&input(None, false)), Ok(Field::Text));
        assert_eq!(
            field(&input(Some(vec!["a", " b "]), false)),
            Ok(Field::Choice(vec!["a".into(), "b".into()]))
        );
        assert_eq!(
            field(&input(Some(vec!["a", "b"]), true)),
            Ok(Field::Choices(vec!["a".into(), "b".into()]))
        );
        assert!(field(&input(Some(vec!["a"]), false)).is_err());
        assert!(field(&input(Some(vec!["a", "a"]), false)).is_err());
        assert!(field(&input(Some(vec!["a", ""]), false)).is_err());
    }
}
