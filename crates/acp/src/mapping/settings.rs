//! The session's settings as ACP shows them (its modes and config options) and the config option
//! changes a client asks for. Pure, like the rest of `mapping`.

use agent_client_protocol_schema::v1 as acp;
use ferrite_core::events::Settings;
use ferrite_core::modes::{Effort, Mode};

use super::shown;

pub fn modes(s: &Settings) -> acp::SessionModeState {
    acp::SessionModeState::new(
        s.mode.id(),
        s.available_modes
            .iter()
            .map(|m| {
                acp::SessionMode::new(m.id(), m.name()).description(m.description().to_owned())
            })
            .collect(),
    )
}

/// `mode`, `model`, `reasoning_effort`, `web_search`, in that order (`docs/acp.md`).
pub fn config_options(s: &Settings) -> Vec<acp::SessionConfigOption> {
    let mode_opts: Vec<acp::SessionConfigSelectOption> = s
        .available_modes
        .iter()
        .map(|m| {
            acp::SessionConfigSelectOption::new(m.id(), m.name())
                .description(m.description().to_owned())
        })
        .collect();
    let model_opts: Vec<acp::SessionConfigSelectOption> = s
        .models
        .iter()
        // The value is the id the editor sends back, so it stays as it is; the name is shown.
        .map(|(id, name)| acp::SessionConfigSelectOption::new(id.clone(), shown(name)))
        .collect();
    let effort_opts: Vec<acp::SessionConfigSelectOption> = Effort::ALL
        .iter()
        .map(|e| acp::SessionConfigSelectOption::new(e.id(), e.name()))
        .collect();
    let web_opts = vec![
        acp::SessionConfigSelectOption::new("off", "Off"),
        acp::SessionConfigSelectOption::new("on", "On")
            .description("The provider's hosted web search".to_owned()),
    ];
    let mut options = vec![
        acp::SessionConfigOption::select("mode", "Mode", s.mode.id(), mode_opts)
            .category(acp::SessionConfigOptionCategory::Mode),
        acp::SessionConfigOption::select("model", "Model", s.model.clone(), model_opts)
            .category(acp::SessionConfigOptionCategory::Model),
        acp::SessionConfigOption::select(
            "reasoning_effort",
            "Reasoning effort",
            s.effort.id(),
            effort_opts,
        )
        .category(acp::SessionConfigOptionCategory::ThoughtLevel),
        acp::SessionConfigOption::select(
            "web_search",
            "Web search",
            if s.web_search { "on" } else { "off" },
            web_opts,
        ),
    ];
    // Only where there are custom agents: other sessions show the options they always did.
    if !s.agents.is_empty() {
        let mut agent_opts = vec![
            acp::SessionConfigSelectOption::new(NO_AGENT, "Ferrite")
                .description("No custom agent".to_owned()),
        ];
        agent_opts.extend(s.agents.iter().map(|(name, description)| {
            acp::SessionConfigSelectOption::new(name.clone(), shown(name))
                .description(shown(description))
        }));
        let current = s.agent.clone().unwrap_or_else(|| NO_AGENT.to_owned());
        options.push(acp::SessionConfigOption::select(
            "agent", "Agent", current, agent_opts,
        ));
    }
    options
}

/// The `agent` option's value for "no custom agent".
const NO_AGENT: &str = "default";

/// Which option a `session/set_config_option` changes, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionChange {
    Mode(Mode),
    Agent(Option<String>),
    Model(String),
    Effort(Effort),
    WebSearch(bool),
}

pub fn parse_option(config_id: &str, value: &str) -> Result<OptionChange, String> {
    match config_id {
        "mode" => value
            .parse()
            .map(OptionChange::Mode)
            .map_err(|e| e.to_string()),
        "model" => Ok(OptionChange::Model(value.to_owned())),
        "agent" => Ok(OptionChange::Agent(
            (value != NO_AGENT).then(|| value.to_owned()),
        )),
        "reasoning_effort" => value
            .parse()
            .map(OptionChange::Effort)
            .map_err(|e| e.to_string()),
        "web_search" => match value {
            "on" | "true" => Ok(OptionChange::WebSearch(true)),
            "off" | "false" => Ok(OptionChange::WebSearch(false)),
            _ => Err(format!(
                "unknown web_search value `{value}`; expected on or off"
            )),
        },
        _ => Err(format!("unknown config option `{config_id}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            mode: Mode::Ask,
            available_modes: vec![Mode::Plan, Mode::Ask, Mode::Auto],
            model: "a/m".into(),
            models: vec![("a/m".into(), "M".into())],
            effort: Effort::Default,
            web_search: false,
            agent: None,
            agents: vec![],
        }
    }

    #[test]
    fn config_options_are_in_contract_order() {
        let v = serde_json::to_value(config_options(&settings())).unwrap();
        let ids: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["mode", "model", "reasoning_effort", "web_search"]);
        assert_eq!(v[0]["category"], "mode");
        assert_eq!(v[2]["category"], "thought_level");
        assert_eq!(v[0]["currentValue"], "ask");
        assert_eq!(v[0]["options"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn option_parsing() {
        assert_eq!(
            parse_option("mode", "plan"),
            Ok(OptionChange::Mode(Mode::Plan))
        );
        assert!(parse_option("mode", "yolo").is_err());
        assert!(parse_option("colour", "x").is_err());
        assert_eq!(
            parse_option("web_search", "on"),
            Ok(OptionChange::WebSearch(true))
        );
    }
}
