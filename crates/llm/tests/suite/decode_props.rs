//! Decoding must not depend on how the network splits the bytes.

use bytes::Bytes;
use ferrite_core::config::ApiKind;
use ferrite_core::model::{ModelError, ModelEvent};
use futures::StreamExt;
use proptest::prelude::*;

const ANTHROPIC: &str = concat!(
    "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":1,\"output_tokens\":1}}}   \r\n\r\n",
    ": keep-alive comment\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Hmm… ünïcode 🦀\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2ln\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Grüße \"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"aus 東京\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"edit\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"p\\\":\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"é\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":12}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

const RESPONSES: &str = concat!(
    "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"output\":[]},\"sequence_number\":0}\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}}\n\n",
    "event: response.reasoning_summary_text.delta\ndata: {\"type\":\"response.reasoning_summary_text.delta\",\"output_index\":0,\"summary_index\":0,\"delta\":\"**Plan** ✓\"}\n\n",
    "event: response.reasoning_summary_text.delta\ndata: {\"type\":\"response.reasoning_summary_text.delta\",\"output_index\":0,\"summary_index\":1,\"delta\":\"next\"}\n\n",
    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"encrypted_content\":\"gAAA\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"**Plan** ✓\"},{\"type\":\"summary_text\",\"text\":\"next\"}]}}\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"content\":[]}}\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":1,\"content_index\":0,\"delta\":\"Ça va 😀\",\"obfuscation\":\"abc\"}\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":2,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"grep\",\"arguments\":\"\"}}\n\n",
    "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":2,\"delta\":\"{\\\"q\\\":\"}\n\n",
    "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":2,\"delta\":\"\\\"ß\\\"}\"}\n\n",
    "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":20,\"input_tokens_details\":{\"cached_tokens\":5},\"output_tokens\":8}}}\n\n",
);

const CHAT: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"<think>Rätsel \"}}]}\r\n\r\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"gelöst</think>Antwort: \"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"42 ✔\"}}],\"obfuscation\":\"q\"}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"add\",\"arguments\":\"\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\": 2}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":6}}\n\n",
    "data: [DONE]\n\n",
);

fn decode(api: ApiKind, chunks: Vec<Vec<u8>>) -> Vec<Result<ModelEvent, ModelError>> {
    let stream = futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, std::io::Error>(Bytes::from(c))),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(ferrite_llm::decode_sse(api, stream).collect())
}

fn split(input: &str, mut cuts: Vec<usize>) -> Vec<Vec<u8>> {
    let bytes = input.as_bytes();
    cuts.iter_mut().for_each(|c| *c %= bytes.len() + 1);
    cuts.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for cut in cuts {
        chunks.push(bytes[start..cut].to_vec());
        start = cut;
    }
    chunks.push(bytes[start..].to_vec());
    chunks
}

/// Deltas may be split differently, but their concatenation and every other event must match.
fn normalize(events: Vec<Result<ModelEvent, ModelError>>) -> Vec<Result<ModelEvent, ModelError>> {
    let mut out: Vec<Result<ModelEvent, ModelError>> = Vec::new();
    for event in events {
        match (out.last_mut(), event) {
            (Some(Ok(ModelEvent::TextDelta(a))), Ok(ModelEvent::TextDelta(b)))
            | (Some(Ok(ModelEvent::ReasoningDelta(a))), Ok(ModelEvent::ReasoningDelta(b))) => {
                a.push_str(&b)
            }
            (_, event) => out.push(event),
        }
    }
    out
}

#[test]
fn fixtures_decode_to_one_completed() {
    for (api, input) in [
        (ApiKind::Anthropic, ANTHROPIC),
        (ApiKind::OpenAiResponses, RESPONSES),
        (ApiKind::OpenAiChat, CHAT),
    ] {
        let events = decode(api, vec![input.as_bytes().to_vec()]);
        let completed = events
            .iter()
            .filter(|e| matches!(e, Ok(ModelEvent::Completed(_))))
            .count();
        assert_eq!(completed, 1, "{api:?}: {events:#?}");
        assert!(
            matches!(events.last(), Some(Ok(ModelEvent::Completed(_)))),
            "{api:?}"
        );
        // Losing the terminal event is a cut, not success. (Chat is whole with a finish
        // reason and usage even without `[DONE]`, so it is cut before its usage chunk.)
        let end = match api {
            ApiKind::OpenAiChat => input.rfind("data: {\"choices\":[],").unwrap(),
            ApiKind::Anthropic | ApiKind::OpenAiResponses => input.len() - 2,
        };
        let cut = decode(api, vec![input.as_bytes()[..end].to_vec()]);
        assert!(
            matches!(cut.last(), Some(Err(e)) if e.kind == ferrite_core::model::ModelErrorKind::StreamCut),
            "{api:?}: {cut:?}"
        );
    }
}

proptest! {
    #[test]
    fn anthropic_split_anywhere(cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
        let whole = normalize(decode(ApiKind::Anthropic, vec![ANTHROPIC.as_bytes().to_vec()]));
        prop_assert_eq!(normalize(decode(ApiKind::Anthropic, split(ANTHROPIC, cuts))), whole);
    }

    #[test]
    fn responses_split_anywhere(cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
        let whole = normalize(decode(ApiKind::OpenAiResponses, vec![RESPONSES.as_bytes().to_vec()]));
        prop_assert_eq!(normalize(decode(ApiKind::OpenAiResponses, split(RESPONSES, cuts))), whole);
    }

    #[test]
    fn chat_split_anywhere(cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
        let whole = normalize(decode(ApiKind::OpenAiChat, vec![CHAT.as_bytes().to_vec()]));
        prop_assert_eq!(normalize(decode(ApiKind::OpenAiChat, split(CHAT, cuts))), whole);
    }
}

#[test]
fn byte_at_a_time_matches_whole() {
    for (api, input) in [
        (ApiKind::Anthropic, ANTHROPIC),
        (ApiKind::OpenAiResponses, RESPONSES),
        (ApiKind::OpenAiChat, CHAT),
    ] {
        let whole = normalize(decode(api, vec![input.as_bytes().to_vec()]));
        let bytes = input.as_bytes().iter().map(|b| vec![*b]).collect();
        assert_eq!(normalize(decode(api, bytes)), whole, "{api:?}");
    }
}
