//! airlock's MCP server: the tools agents call to draft, review and publish posts
//! (docs/mcp.md), over stdio ([`serve_stdio`], used by `airlock mcp`) and streamable
//! HTTP ([`router`], mounted at `/mcp` by `airlock serve`).
//!
//! Layout:
//! - [`tools`]: [`AirlockMcp`], the rmcp `ServerHandler` with the thirteen tools, their
//!   argument and output schemas and annotations. Each tool is a thin wrapper over one
//!   [`airlock_app::App`] operation and answers with the same JSON as the HTTP API.
//! - [`schema`]: the tools' output schemas, from the OpenAPI derives.
//! - [`http`]: the streamable HTTP transport behind a bearer-token and `Origin` guard.
//!
//! **Architecture invariant:** only this crate knows MCP. Roles, separation of duties,
//! pauses, policy and quotas are enforced by `app`, never here: a refusal from `app`
//! becomes a tool error (`isError: true`) whose text is the error's message and code,
//! so an agent reads why and what to do; it is never a protocol error.
//!
//! What this crate deliberately does not do: read configuration or the environment
//! (the CLI passes the token for stdio and [`HttpSettings`] for HTTP), or bind sockets
//! for `serve` (it returns a router to merge).

use airlock_app::App;
use rmcp::ServiceExt;
use secrecy::SecretString;

pub mod http;
pub mod schema;
pub mod tools;

pub use http::{HttpSettings, router};
pub use tools::AirlockMcp;

/// Why serving MCP over stdio stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client never completed the MCP handshake (it closed stdin or sent something
    /// else first).
    #[error(
        "the MCP client did not complete the handshake: {0}; start `airlock mcp` from an MCP client, not by hand"
    )]
    Handshake(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The server task panicked or was aborted.
    #[error("the MCP server task stopped unexpectedly: {0}")]
    Task(#[source] tokio::task::JoinError),
}

/// Serves the tools over stdin/stdout as the holder of `token` until the client
/// disconnects. The token is authenticated again on every tool call, so revoking it
/// stops a running server at the next call.
///
/// Nothing but MCP frames is written to stdout; callers must send logs to stderr.
pub async fn serve_stdio(app: App, token: SecretString) -> Result<(), ServeError> {
    let server = AirlockMcp::for_token(app, token);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Handshake(Box::new(e)))?;
    running.waiting().await.map_err(ServeError::Task)?;
    Ok(())
}
