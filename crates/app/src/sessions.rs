//! Dashboard sessions kept in the ledger, so that restarting or upgrading `serve` (or
//! moving to another host on the same PostgreSQL) signs nobody out.
//!
//! The ledger holds only hashes: the SHA-256 of the session cookie (a random 256-bit
//! value that only the browser keeps) and the signed-in token's `secret_sha256`. Every
//! lookup re-authenticates that token, so revoking it (or the session expiring) ends
//! the session at once, as before. What the dashboard does with a session (roles,
//! CSRF, cookies) stays in the dashboard; this module only stores and checks.

use chrono::Duration;
use secrecy::{ExposeSecret, SecretString};

use airlock_core::Actor;
use airlock_core::hash::sha256_hex;
use airlock_store::NewSession;

use crate::{App, Principal, Result};

/// At most this many live sessions; signing in past it ends the oldest.
pub const MAX_SESSIONS: u32 = 1000;

/// What a session cookie stands for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionState {
    /// No such session (never opened, ended, or swept after expiring).
    Unknown,
    /// Its time ran out; it has now been ended.
    Expired,
    /// Its token was revoked; it has now been ended.
    Revoked,
    /// Live, acting as this principal (with the token's current roles).
    Active(Principal),
}

/// The name of the server secret that keys the dashboard's login-form CSRF tokens.
pub const LOGIN_CSRF_SECRET: &str = "dashboard-login-csrf";

impl App {
    /// A secret the server keeps in the ledger under `name` (made at random by the first
    /// process that asks, then the same for every process and restart): for keys that
    /// must survive restarts and be shared by hosts, such as the dashboard's login-form
    /// CSRF key. Never shown; anyone who can read the ledger can read it, like everything
    /// else in it.
    pub async fn server_secret(&self, name: &str) -> Result<SecretString> {
        let candidate = crate::tokens::random_hex();
        let secret = self
            .store()
            .server_secret(name, &candidate, self.now())
            .await?;
        Ok(SecretString::from(secret))
    }

    /// Opens a session for a token secret that the caller has just authenticated and
    /// checked, lasting `ttl`; returns the cookie value (shown to nobody but the browser).
    pub async fn open_session(&self, token: &SecretString, ttl: Duration) -> Result<SecretString> {
        let cookie = crate::tokens::random_hex();
        let now = self.now();
        self.store()
            .open_session(NewSession {
                id_sha256: sha256_hex(cookie.as_bytes()),
                token_sha256: sha256_hex(token.expose_secret().trim().as_bytes()),
                now,
                expires_at: now + ttl,
                max_sessions: MAX_SESSIONS,
            })
            .await?;
        Ok(SecretString::from(cookie))
    }

    /// The state of the session named by a cookie value, re-authenticating its token.
    /// An expired or revoked session is ended on the way.
    pub async fn session(&self, cookie: &str) -> Result<SessionState> {
        let id = sha256_hex(cookie.as_bytes());
        let Some(session) = self.store().session(&id).await? else {
            return Ok(SessionState::Unknown);
        };
        let now = self.now();
        if session.expires_at <= now {
            self.store().end_session(&id).await?;
            return Ok(SessionState::Expired);
        }
        match self
            .store()
            .authenticate(&session.token_sha256, now)
            .await?
        {
            Some(record) => Ok(SessionState::Active(Principal {
                actor: Actor::Token(record.name),
                roles: record.roles,
                sod_exempt: false,
            })),
            None => {
                self.store().end_session(&id).await?;
                Ok(SessionState::Revoked)
            }
        }
    }

    /// Whether a session with this cookie exists (live or not yet noticed as expired).
    pub async fn session_exists(&self, cookie: &str) -> Result<bool> {
        let id = sha256_hex(cookie.as_bytes());
        Ok(self.store().session(&id).await?.is_some())
    }

    /// Ends the session named by a cookie value (signing out); `false` if there was none.
    pub async fn end_session(&self, cookie: &str) -> Result<bool> {
        Ok(self
            .store()
            .end_session(&sha256_hex(cookie.as_bytes()))
            .await?)
    }
}
