//! `airlock mcp`: MCP over stdio for one agent, acting as the API token in
//! `AIRLOCK_TOKEN` (docs/mcp.md). An MCP client (Claude Code, Claude Desktop, an agent
//! framework) starts it as a child process.
//!
//! stdout carries nothing but MCP frames: logs go to stderr (see `init_tracing`), and a
//! token problem is reported on stderr before the first frame. The token is checked at
//! start and again on every tool call, so revoking it stops a running `airlock mcp` at
//! the agent's next call; each call runs as its principal with its roles. The app is
//! built with every channel's adapter, because `publish_post` publishes.

use secrecy::{ExposeSecret, SecretString};

use crate::config::Config;
use crate::{CmdResult, Failure, wiring};

/// The environment variable holding the agent's API token.
pub const TOKEN_VAR: &str = "AIRLOCK_TOKEN";

/// Serves MCP over stdio until the client disconnects. Exit 2 (refused) when
/// `AIRLOCK_TOKEN` is missing, unknown or revoked.
pub async fn run(config: &Config) -> CmdResult {
    let token = std::env::var(TOKEN_VAR)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .map(SecretString::from)
        .ok_or_else(|| {
            Failure::refused(format!(
                "{TOKEN_VAR} is not set: set it to an API token from `airlock token create --name NAME --role writer` (the MCP client passes it to `airlock mcp`)"
            ))
        })?;
    let app = wiring::app_for_publishing(config).await?;
    let principal = match app.authenticate(token.expose_secret()).await {
        Ok(principal) => principal,
        Err(airlock_app::Error::Unauthorized) => {
            return Err(Failure::refused(format!(
                "{TOKEN_VAR} holds an unknown or revoked token: create a new one with `airlock token create` and see `airlock token list`"
            )));
        }
        Err(other) => return Err(other.into()),
    };
    tracing::info!(actor = %principal.actor, roles = %principal.roles.to_list(), "serving MCP over stdio");
    let served = airlock_mcp::serve_stdio(app.clone(), token).await;
    // A publish an agent started runs to its end even when the agent hung up.
    app.drain().await;
    served.map_err(|e| Failure::failed(e.to_string()))
}
