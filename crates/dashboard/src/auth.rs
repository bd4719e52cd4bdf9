//! Signing in and out, and the [`Operator`] extractor every page and action uses.
//!
//! Only a token holding the operator role may sign in: the dashboard's actions
//! (resolve, requeue, pause) are an operator's, and a writer or critic token must not
//! become a browser session. The ledger keeps the session with the hash of its token,
//! and [`Operator`] re-authenticates that token on every request, so a revoked token's
//! sessions end at once (and a restart ends none).

use askama::Template;
use askama_web::WebTemplate;
use axum::Extension;
use axum::Form;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use airlock_app::sessions::SessionState;
use airlock_app::{Error, Principal};
use airlock_core::Role;

use airlock_web::policy::PageOrigin;

use crate::pages::error_page;
use crate::refused::Advice;
use crate::session::{Dashboard, LOGIN_COOKIE, SESSION_COOKIE, cookie};

/// How long the login form's pre-session cookie lasts, in seconds.
const LOGIN_COOKIE_SECONDS: u64 = 3600;

/// A signed-in operator: the re-authenticated principal and their session.
#[derive(Debug, Clone)]
pub struct Operator {
    /// Who acts; recorded on every event the dashboard causes.
    pub principal: Principal,
    /// The session cookie's value.
    pub session: String,
    /// The CSRF token for this session's forms.
    pub csrf: String,
}

impl FromRequestParts<Dashboard> for Operator {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, dash: &Dashboard) -> Result<Self, Response> {
        let Some(id) = cookie(&parts.headers, &dash.cookie_name(SESSION_COOKIE)).map(str::to_owned)
        else {
            return Err(Redirect::to("/login").into_response());
        };
        let unavailable = |e: Error| {
            error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "The ledger is unavailable",
                &e.to_string(),
            )
        };
        match dash.session(&id).await.map_err(unavailable)? {
            SessionState::Unknown => Err(to_login(dash, None)),
            SessionState::Expired => Err(to_login(dash, Some(Ended::Expired))),
            SessionState::Revoked => Err(to_login(dash, Some(Ended::Revoked))),
            SessionState::Active(principal) if principal.roles.grants(Role::Operator) => {
                Ok(Operator {
                    principal,
                    csrf: dash.session_csrf(&id),
                    session: id,
                })
            }
            SessionState::Active(_) => {
                dash.end(&id).await.map_err(unavailable)?;
                Err(to_login(dash, Some(Ended::Revoked)))
            }
        }
    }
}

/// Why a session ended, shown on the login page (never anything a request supplied).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// The session's time ran out.
    Expired,
    /// The token was revoked or lost the operator role.
    Revoked,
    /// The operator signed out.
    SignedOut,
}

impl Ended {
    fn message(self) -> &'static str {
        match self {
            Ended::Expired => "Your session expired. Sign in again.",
            Ended::Revoked => {
                "Your session ended: its token was revoked or no longer holds the operator role."
            }
            Ended::SignedOut => "You are signed out.",
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Ended::Expired => "expired",
            Ended::Revoked => "revoked",
            Ended::SignedOut => "signed_out",
        }
    }
}

/// The login page.
#[derive(Template, WebTemplate)]
#[template(path = "login.html")]
pub struct LoginPage {
    /// The form's CSRF token.
    pub csrf: String,
    /// Why the last attempt failed.
    pub error: Option<String>,
    /// Why the previous session ended.
    pub notice: Option<&'static str>,
    /// The page was reached at an address whose forms the server refuses (a forwarded
    /// port, a proxy): what to set, before a token is typed in vain.
    pub warning: Option<Advice>,
}

/// `?ended=` on the login page.
#[derive(Debug, Deserialize)]
pub struct LoginQuery {
    /// Why the previous session ended.
    pub ended: Option<Ended>,
}

/// The login form.
#[derive(Deserialize)]
pub struct LoginForm {
    /// An operator token (`alk_...`).
    #[serde(default)]
    pub token: String,
}

/// `GET /login`: the sign-in form, with a fresh pre-session CSRF cookie. A browser that
/// is signed in already goes to the queue.
pub async fn login_page(
    State(dash): State<Dashboard>,
    headers: HeaderMap,
    origin: Option<Extension<PageOrigin>>,
    Query(query): Query<LoginQuery>,
) -> Response {
    if let Some(id) = cookie(&headers, &dash.cookie_name(SESSION_COOKIE))
        && matches!(dash.session(id).await, Ok(SessionState::Active(_)))
    {
        return Redirect::to("/").into_response();
    }
    let nonce = dash.login_nonce();
    let csrf = match dash.login_csrf(&nonce).await {
        Ok(csrf) => csrf,
        Err(e) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the ledger is unavailable: {e}"),
            )
                .into_response();
        }
    };
    let warning = origin
        .filter(|Extension(origin)| !origin.allowed)
        .and_then(|Extension(origin)| Advice::new(&origin.origin, origin.advice));
    let page = LoginPage {
        csrf,
        error: None,
        notice: query.ended.map(Ended::message),
        warning,
    };
    (
        [(
            header::SET_COOKIE,
            dash.cookie(LOGIN_COOKIE, &nonce, "/login", Some(LOGIN_COOKIE_SECONDS)),
        )],
        page,
    )
        .into_response()
}

/// `POST /login`: opens a session for an operator token; refuses any other token with a
/// message saying why. The CSRF token was checked by [`crate::guard::csrf`].
pub async fn login(
    State(dash): State<Dashboard>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let token = SecretString::from(form.token.trim().to_owned());
    let nonce = cookie(&headers, &dash.cookie_name(LOGIN_COOKIE)).unwrap_or_default();
    // The form was just checked against this key, so it can be read.
    let csrf = dash.login_csrf(nonce).await.unwrap_or_default();
    let refuse = |status: StatusCode, message: String| {
        let page = LoginPage {
            csrf: csrf.clone(),
            error: Some(message),
            notice: None,
            warning: None,
        };
        (status, page).into_response()
    };
    if token.expose_secret().is_empty() {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "Enter an operator token (it starts with alk_).".into(),
        );
    }
    match dash.app().authenticate(token.expose_secret()).await {
        Ok(principal) if principal.roles.grants(Role::Operator) => {
            let id = match dash.open(&token).await {
                Ok(id) => id,
                Err(e) => return refuse(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            };
            tracing::info!(actor = %principal.actor, "dashboard sign-in");
            let mut response = Redirect::to("/").into_response();
            let headers = response.headers_mut();
            headers.append(
                header::SET_COOKIE,
                dash.cookie(SESSION_COOKIE, &id, "/", None),
            );
            headers.append(header::SET_COOKIE, dash.cookie(LOGIN_COOKIE, "", "/login", Some(0)));
            response
        }
        Ok(principal) => refuse(
            StatusCode::FORBIDDEN,
            format!(
                "{} holds roles [{}]: only a token with the operator role may sign in to the dashboard. Create one with `airlock token create --name NAME --role operator`, or have an operator create one on the dashboard's Tokens page.",
                principal.actor,
                principal.roles.to_list()
            ),
        ),
        Err(Error::Unauthorized) => refuse(
            StatusCode::UNAUTHORIZED,
            "That token is unknown or revoked. Use an operator token from `airlock token create` (or the one `airlock init` printed), or one an operator created on the dashboard's Tokens page.".into(),
        ),
        Err(e) => refuse(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

/// `POST /logout`: ends the session and deletes its cookie.
pub async fn logout(State(dash): State<Dashboard>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie(&headers, &dash.cookie_name(SESSION_COOKIE))
        && let Err(e) = dash.end(id).await
    {
        tracing::warn!(error = %e, "could not end a dashboard session in the ledger");
    }
    to_login(&dash, Some(Ended::SignedOut))
}

/// A redirect to the login page, deleting the session cookie that no longer works.
fn to_login(dash: &Dashboard, ended: Option<Ended>) -> Response {
    let location = match ended {
        Some(ended) => format!("/login?ended={}", ended.as_str()),
        None => "/login".to_owned(),
    };
    let mut response = Redirect::to(&location).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        dash.cookie(SESSION_COOKIE, "", "/", Some(0)),
    );
    response
}
