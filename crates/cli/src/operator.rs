//! Who a command acts as. By default the local command line is the ledger's operator
//! (docs/lifecycle.md#concepts: the local CLI acts as operator, exempt from separation
//! of duties):
//! whoever can run `airlock` against the ledger's configuration and files owns it.
//!
//! `[cli] require_token = true` reduces that power for state-changing commands (drafting,
//! review, publishing, resolving, pauses, tokens, compose): they need an operator token
//! in `AIRLOCK_TOKEN` and act as that token, recorded as `token:<name>` and held to
//! separation of duties like any other token. Commands that run the ledger rather than
//! change a post (`serve`, `dispatch --once`, `backup`, `migrate`) need one too
//! ([`require_operator`]). Reads stay open. This is a guard against
//! an agent that was handed a shell beside the configuration, not a boundary: anyone
//! who can read the ledger's files can change them without airlock. The boundary is
//! the operating system's: the ledger owned by another user, agents over HTTP MCP with
//! their own tokens (see README, "Who is the operator").

use secrecy::{ExposeSecret, SecretString};

use airlock_app::{App, Principal};
use airlock_core::Role;

use crate::Failure;
use crate::config::Config;
use crate::mcp::TOKEN_VAR;

/// The principal a state-changing command acts as: the CLI operator, or, with
/// `[cli] require_token`, the operator token in `AIRLOCK_TOKEN` (refused otherwise).
pub async fn acting(config: &Config, app: &App) -> Result<Principal, Failure> {
    if !config.require_token {
        return Ok(Principal::cli());
    }
    let needs = format!(
        "{} sets [cli] require_token: this command changes the ledger and needs an operator token in {TOKEN_VAR} (from `airlock token create --role operator`, run by whoever holds one)",
        config.path.display()
    );
    let token = std::env::var(TOKEN_VAR)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .map(SecretString::from)
        .ok_or_else(|| Failure::refused(needs.clone()))?;
    let principal = match app.authenticate(token.expose_secret()).await {
        Ok(principal) => principal,
        Err(airlock_app::Error::Unauthorized) => {
            return Err(Failure::refused(format!(
                "{TOKEN_VAR} holds an unknown or revoked token; {needs}"
            )));
        }
        Err(other) => return Err(other.into()),
    };
    if !principal.roles.grants(Role::Operator) {
        return Err(Failure::refused(format!(
            "{} holds roles [{}], not operator; {needs}",
            principal.actor,
            principal.roles.to_list()
        )));
    }
    Ok(principal)
}

/// With `[cli] require_token`, refuses unless `AIRLOCK_TOKEN` holds an operator token:
/// for commands that act as the server or on the whole ledger (`serve`, `dispatch
/// --once`, `backup`, `migrate`) rather than as a principal. The token is checked
/// against the ledger as it is, before anything opens it for work (opening migrates), so
/// a refused command changes nothing; a ledger that does not exist yet holds no token and
/// has nothing to protect, so it is not refused.
pub async fn require_operator(config: &Config) -> Result<(), Failure> {
    if !config.require_token {
        return Ok(());
    }
    match crate::wiring::app_unmigrated(config).await? {
        Some(app) => acting(config, &app).await.map(drop),
        None => Ok(()),
    }
}
