//! The prompt's answer carries the turn's token usage (the schema's unstable `usage`), summed
//! over every model request of the turn, and it is what the `usage_update` cost was priced from.

use ferrite_test_support::fake_provider::Script;
use ferrite_test_support::updates;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::turns::{ALL, Api, rig};

/// The catalog's price of each API's test model, USD per million: input, cache read, cache
/// write, output.
fn price(api: Api) -> [f64; 4] {
    match api {
        Api::Anthropic => [3.0, 0.30, 3.75, 15.0],
        Api::Responses => [1.25, 0.125, 0.0, 10.0],
        Api::Chat => [2.50, 1.25, 0.0, 10.0],
    }
}

/// What the answer's usage costs at the model's price.
fn cost_of(api: Api, usage: &Value) -> f64 {
    let n = |k: &str| usage[k].as_u64().unwrap_or(0) as f64;
    let [input, read, write, output] = price(api);
    let plain = n("inputTokens") - n("cachedReadTokens") - n("cachedWriteTokens");
    (plain * input
        + n("cachedReadTokens") * read
        + n("cachedWriteTokens") * write
        + n("outputTokens") * output)
        / 1_000_000.0
}

fn last_cost(messages: &[Value]) -> f64 {
    updates(messages)
        .into_iter()
        .rfind(|(k, _)| k == "usage_update")
        .and_then(|(_, u)| u["cost"]["amount"].as_f64())
        .expect("a usage_update with a cost")
}

#[tokio::test]
async fn a_turn_with_two_model_requests_answers_with_their_sum_for_each_api() {
    for api in ALL {
        let mut r = rig(api).await;
        std::fs::write(r.world.ws().join("a.txt"), "alpha\n").unwrap();
        // A tool loop: the first request reads a file, the second answers.
        r.fake.push(
            Script::new()
                .tool_call("r1", "read", r#"{"path":"a.txt"}"#)
                .usage_details(1_000, 200, 300, 100, 50),
        );
        r.fake.push(
            Script::new()
                .text("done")
                .usage_details(1_500, 70, 900, 0, 30),
        );
        let (before, answer) = r.prompt("read a.txt").await;
        assert_eq!(r.requests().len(), 2, "{api:?}");
        assert_eq!(answer["stopReason"], "end_turn", "{api:?}");
        // Input counts cached reads and writes, output counts the reasoning part; Anthropic
        // bills cache writes and does not count thinking apart, OpenAI the other way round.
        let expected = match api {
            Api::Anthropic => {
                json!({"totalTokens": 2_770, "inputTokens": 2_500, "outputTokens": 270,
                "cachedReadTokens": 1_200, "cachedWriteTokens": 100})
            }
            Api::Responses | Api::Chat => json!({"totalTokens": 2_770, "inputTokens": 2_500,
                "outputTokens": 270, "cachedReadTokens": 1_200, "cachedWriteTokens": 0,
                "thoughtTokens": 80}),
        };
        assert_eq!(answer["usage"], expected, "{api:?}");
        // The session started at cost 0: the meter now shows exactly what these tokens cost.
        let shown = last_cost(&before);
        let priced = cost_of(api, &answer["usage"]);
        assert!(
            (shown - priced).abs() < 1e-9,
            "{api:?}: usage_update {shown}, usage {priced}"
        );

        // The next turn reports its own request only.
        r.fake.push(Script::new().text("again").usage(400, 10, 0));
        let (_, answer) = r.prompt("once more").await;
        assert_eq!(answer["usage"]["inputTokens"], 400, "{api:?}");
        assert_eq!(answer["usage"]["outputTokens"], 10, "{api:?}");
        assert_eq!(answer["usage"]["totalTokens"], 410, "{api:?}");
        assert!(answer["usage"].get("thoughtTokens").is_none(), "{api:?}");
    }
}
