mod anthropic;
mod common;
mod decode_props;
mod openai_chat;
mod openai_responses;
mod retries;
mod usage;
