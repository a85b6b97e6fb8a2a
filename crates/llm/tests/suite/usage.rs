//! The usage each API reports, read into one shape: the reasoning part of the output where the
//! API counts it apart (OpenAI's two APIs), the cache writes where it bills them (Anthropic).

use ferrite_core::config::ApiKind;
use ferrite_core::model::Usage;
use pretty_assertions::assert_eq;

use super::common::*;
use crate::fake_provider::Script;

/// 1000 tokens in (400 read from the cache, 100 written to it), 300 out of which 120 reasoning.
async fn usage_of(api: ApiKind) -> Usage {
    let fake = fake().await;
    fake.push(
        Script::new()
            .thinking("Let me think.", "sig")
            .text("Done.")
            .usage_details(1000, 300, 400, 100, 120),
    );
    let (_, response) = complete(&client(api, &fake), request("hi")).await;
    response.usage
}

#[tokio::test]
async fn chat_completions_reports_reasoning_tokens_from_completion_details() {
    assert_eq!(
        usage_of(ApiKind::OpenAiChat).await,
        Usage {
            input_tokens: 1000,
            output_tokens: 300,
            cached_input_tokens: 400,
            cache_write_tokens: 0,
            reasoning_tokens: 120,
        }
    );
}

#[tokio::test]
async fn responses_reports_reasoning_tokens_from_output_details() {
    assert_eq!(
        usage_of(ApiKind::OpenAiResponses).await,
        Usage {
            input_tokens: 1000,
            output_tokens: 300,
            cached_input_tokens: 400,
            cache_write_tokens: 0,
            reasoning_tokens: 120,
        }
    );
}

#[tokio::test]
async fn anthropic_counts_cache_reads_and_writes_as_input_and_no_separate_reasoning() {
    assert_eq!(
        usage_of(ApiKind::Anthropic).await,
        Usage {
            input_tokens: 1000,
            output_tokens: 300,
            cached_input_tokens: 400,
            cache_write_tokens: 100,
            reasoning_tokens: 0,
        }
    );
}
