mod common;
mod http;
mod lifecycle;
mod prompts;
mod stdio;
