//! A stdio MCP server for tests: see `ferrite_test_support::mcp_server`.

#[tokio::main(flavor = "current_thread")]
async fn main() {
    ferrite_test_support::mcp_server::run_stdio(std::env::args().skip(1).collect()).await;
}
