//! airlock's dashboard: the human-visible ledger, server-rendered, usable without
//! JavaScript, on a laptop or a phone (docs/dashboard.md).
//!
//! [`router`] builds an [`axum::Router`] that `airlock serve` merges at `/`. Every page
//! and every action goes through [`airlock_app::App`], so the dashboard enforces nothing
//! on its own and bypasses nothing: roles, pauses, quotas and the lifecycle are the
//! app's. It never touches the store.
//!
//! Layout:
//! - [`session`]: sessions with random 256-bit ids, kept (hashed) in the ledger so that
//!   restarts sign nobody out; CSRF tokens derived from them, cookies and flash messages.
//! - [`guard`]: middleware for every response (security headers) and every `POST`
//!   (a valid CSRF token or 403, before any handler runs).
//! - [`auth`]: `GET/POST /login`, `POST /logout`, and the [`auth::Operator`] extractor
//!   that re-authenticates the session's token on each request.
//! - [`pages`]: the queue (`/`), a post (`/posts/{id}`), the inbox (`/review`), the
//!   live fragment (`/live`), composing a post (`/compose`, with its check), the
//!   calendar (`/calendar`) and the tokens (`/tokens`: list, create with the secret
//!   shown once, revoke after a confirmation).
//! - [`audit`]: who did what, every event as CSV or JSON Lines (`/audit.csv`,
//!   `/audit.jsonl`), streamed a page at a time.
//! - [`refused`]: the page a browser gets when the server's Host/Origin policy refuses
//!   it (a forwarded port, a proxy), with the `[server]` setting that would let its
//!   address in; `serve` installs [`refusal_page`] in the policy.
//! - [`action`]: the `POST` forms; each calls one app operation, stores the result or
//!   the refusal as a flash message and redirects back (post/redirect/get).
//! - [`form`]: reading forms whose fields repeat (media rows, a thread's parts).
//! - [`zone`]: date and time pickers read in a channel's time zone, refusing a time the
//!   clocks skip or repeat.
//! - [`view`]: formatting helpers shared by the templates (local times, excerpts).
//! - [`asset`]: the stylesheet and the optional script (live refresh of the queue, the
//!   compose page's check as the operator types), compiled in.
//!
//! **Architecture Invariant:** everything an agent wrote reaches the page through
//! askama's HTML escaping; no template marks user data `|safe`.
//!
//! What it deliberately does not do: keep anything but flash messages in memory (a
//! restart or an upgrade signs nobody out and leaves open forms valid), or show a
//! token's secret anywhere but in the answer to the form that created it.

use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};

pub use refused::refusal_page;

pub mod action;
pub mod asset;
pub mod audit;
pub mod auth;
pub mod form;
pub mod guard;
pub mod pages;
pub mod refused;
pub mod session;
pub mod view;
pub mod zone;

/// How the dashboard behaves; `airlock serve` builds it from its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardSettings {
    /// The dashboard is reached over HTTPS (`[server] public_url = "https://..."`):
    /// cookies get `Secure` and the `__Host-` prefix. Set it whenever a browser reaches
    /// the dashboard over HTTPS, which it must whenever it is not on loopback.
    pub secure_cookies: bool,
    /// How long a session lasts after login, whatever the activity (default 12 hours).
    /// Revoking the token ends it sooner: the token is re-checked on every request.
    pub session_ttl: Duration,
    /// Seconds between live refreshes of the queue in browsers with JavaScript; `0`
    /// turns live refresh off (default 15). Pages never depend on it.
    pub refresh_seconds: u32,
}

impl Default for DashboardSettings {
    fn default() -> Self {
        DashboardSettings {
            secure_cookies: false,
            session_ttl: Duration::from_secs(12 * 3600),
            refresh_seconds: 15,
        }
    }
}

/// The dashboard's routes, for `airlock serve` to merge at `/`.
///
/// Pages: `GET /` (queue), `GET /posts/{id}`, `GET /review`, `GET /live` (the queue's
/// live fragment), `GET /compose`, `GET /calendar` (`?view=week|month&start=&channel=`),
/// `GET /tokens`, `GET /tokens/{name}/revoke` (the confirmation), `GET /audit.csv` and
/// `GET /audit.jsonl` (`?since=&until=`, days or RFC 3339), `GET /login`,
/// `GET /static/*`. Actions (`POST`, form-encoded, each with the CSRF
/// field `csrf`): `/login`, `/logout`, `/compose` (`intent` check, save, add_part or
/// remove_part), `/compose/check` (the check panel alone, for the script), `/tokens`
/// (`name` and one `role` per role; answers with the secret, once),
/// `/tokens/{name}/revoke`,
/// `/posts/{id}/approve`, `/reject` (both with the hidden `content_hash` the page
/// showed), `/release`, `/discard`, `/unapprove`, `/edit`, `/move` (a new date and time
/// in the channel's zone), `/publish`, `/requeue`, `/resolve` (with `resume`, resumes the
/// channel too), `/note`, and `/pause`,
/// `/resume` (one channel or all). Every response carries the security headers of
/// [`guard::SECURITY_HEADERS`].
pub fn router(app: airlock_app::App, settings: DashboardSettings) -> Router {
    let state = session::Dashboard::new(app, settings);
    Router::new()
        .route("/", get(pages::queue))
        .route("/live", get(pages::live))
        .route("/review", get(pages::review))
        .route("/calendar", get(pages::calendar))
        .route("/compose", get(pages::compose).post(pages::compose_post))
        .route("/compose/check", post(pages::compose_check))
        .route("/posts/{id}", get(pages::post))
        .route("/posts/{id}/approve", post(action::approve))
        .route("/posts/{id}/reject", post(action::reject))
        .route("/posts/{id}/release", post(action::release))
        .route("/posts/{id}/discard", post(action::discard))
        .route("/posts/{id}/unapprove", post(action::unapprove))
        .route("/posts/{id}/edit", post(action::edit))
        .route("/posts/{id}/publish", post(action::publish))
        .route("/posts/{id}/requeue", post(action::requeue))
        .route("/posts/{id}/resolve", post(action::resolve))
        .route("/posts/{id}/note", post(action::note))
        .route("/posts/{id}/move", post(action::move_post))
        .route("/tokens", get(pages::tokens).post(pages::create_token))
        .route(
            "/tokens/{name}/revoke",
            get(pages::revoke_page).post(pages::revoke),
        )
        .route("/audit.csv", get(audit::csv))
        .route("/audit.jsonl", get(audit::jsonl))
        .route("/pause", post(action::pause))
        .route("/resume", post(action::resume))
        .route("/login", get(auth::login_page).post(auth::login))
        .route("/logout", post(auth::logout))
        .route("/static/dashboard.css", get(asset::stylesheet))
        .route("/static/dashboard.js", get(asset::script))
        .route("/static/favicon.svg", get(asset::favicon))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::csrf,
        ))
        .layer(axum::middleware::from_fn(guard::security_headers))
        .with_state(state)
}
