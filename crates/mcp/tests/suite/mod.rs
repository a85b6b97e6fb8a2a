mod common;
mod http;
mod lifecycle;
mod stdio;
