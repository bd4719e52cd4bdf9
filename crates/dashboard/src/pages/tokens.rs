//! The tokens page (`GET /tokens`): every token with its roles, when it was last used
//! and the drafts it holds; creating one (`POST /tokens`), whose secret the answer to
//! that `POST` shows once and nothing ever shows again; revoking one after a page that
//! says what revoking does (`GET` and `POST /tokens/{name}/revoke`). The audit export's
//! form is on the same page ([`crate::audit`]).
//!
//! The secret exists only in the one response that creates it: it is never put in a
//! flash message, a redirect, a cookie or a log line, and the ledger keeps its hash.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Path, RawForm, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::ExposeSecret;

use airlock_app::Error;
use airlock_app::tokens::TokenUse;
use airlock_core::{Actor, Role, RoleSet};

use super::error::{app_error_page, error_page};
use super::parts::{Layout, layout, review_count};
use crate::auth::Operator;
use crate::form::Fields;
use crate::session::{Dashboard, Flash};
use crate::view::{local, relative};

/// `GET /tokens`, and the page `POST /tokens` answers with.
#[derive(Template, WebTemplate)]
#[template(path = "tokens.html")]
pub struct TokensPage {
    /// Frame.
    pub layout: Layout,
    /// Active tokens first, then revoked ones, each by name.
    pub tokens: Vec<TokenRow>,
    /// The create form's roles, with what each may do and whether it is ticked.
    pub roles: Vec<RoleChoice>,
    /// The create form's name field as sent (after a refusal).
    pub name: String,
    /// Why the create form was refused.
    pub error: Option<String>,
    /// The token just created, with its secret: only in the answer to its `POST`.
    pub issued: Option<Issued>,
    /// The configured calendar the audit export's dates are read in.
    pub timezone: String,
}

/// One token in the list.
#[derive(Debug, Clone)]
pub struct TokenRow {
    /// Its name.
    pub name: String,
    /// `writer, critic`.
    pub roles: String,
    /// When it was created, in the configured calendar.
    pub created: String,
    /// When it last authenticated, with how long ago, or `never`.
    pub last_used: String,
    /// Drafts it created that are still drafts.
    pub live_drafts: i64,
    /// When it was revoked, if it was.
    pub revoked: Option<String>,
    /// The signed-in operator's own token.
    pub is_you: bool,
}

/// A role in the create form.
#[derive(Debug, Clone)]
pub struct RoleChoice {
    /// `writer`.
    pub name: &'static str,
    /// What it may do.
    pub does: &'static str,
    /// Ticked.
    pub checked: bool,
}

/// A token just created.
#[derive(Debug, Clone)]
pub struct Issued {
    /// Its name.
    pub name: String,
    /// Its roles.
    pub roles: String,
    /// The secret, shown this once.
    pub secret: String,
}

/// `GET /tokens/{name}/revoke`: what revoking the token does, and the button.
#[derive(Template, WebTemplate)]
#[template(path = "token_revoke.html")]
pub struct RevokePage {
    /// Frame.
    pub layout: Layout,
    /// The token.
    pub token: TokenRow,
}

/// What each role may do, as the create form explains it.
fn does(role: Role) -> &'static str {
    match role {
        Role::Writer => "drafts posts and edits drafts",
        Role::Critic => "approves and rejects drafts",
        Role::Publisher => "publishes approved posts now",
        Role::Operator => "everything: resolves, requeues, pauses, manages tokens, signs in here",
    }
}

/// `GET /tokens`.
pub async fn tokens(State(dash): State<Dashboard>, op: Operator) -> Response {
    match tokens_page(&dash, &op, TokenForm::default(), None, None).await {
        Ok(page) => page.into_response(),
        Err(e) => app_error_page(e),
    }
}

/// The create form as sent.
#[derive(Debug, Clone, Default)]
struct TokenForm {
    name: String,
    roles: Vec<String>,
}

/// `POST /tokens`: creates a token (`name`, one `role` field per ticked role) and
/// answers with the page showing its secret once. A refusal shows the form as it was.
pub async fn create_token(
    State(dash): State<Dashboard>,
    op: Operator,
    RawForm(body): RawForm,
) -> Response {
    let fields = Fields::parse(&body);
    let form = TokenForm {
        name: fields.text("name").trim().to_owned(),
        roles: fields.all("role").map(str::to_owned).collect(),
    };
    let roles = match RoleSet::parse_list(&form.roles.join(",")) {
        Ok(roles) => roles,
        Err(_) if form.roles.is_empty() => {
            let why = "Not created: tick at least one role".to_owned();
            return refused(&dash, &op, form, why).await;
        }
        Err(e) => return refused(&dash, &op, form, format!("Not created: {e}")).await,
    };
    match dash
        .app()
        .create_token(&op.principal, &form.name, roles)
        .await
    {
        Ok(issued) => {
            tracing::info!(actor = %op.principal.actor, token = %issued.name, "token created on the dashboard");
            let issued = Issued {
                name: issued.name,
                roles: issued
                    .roles
                    .iter()
                    .map(Role::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                secret: issued.token.expose_secret().to_owned(),
            };
            match tokens_page(&dash, &op, TokenForm::default(), None, Some(issued)).await {
                Ok(page) => page.into_response(),
                Err(e) => app_error_page(e),
            }
        }
        Err(e) => {
            let why = if e.is_refusal() {
                format!("Not created: {e}")
            } else {
                format!("Failed: {e}")
            };
            refused(&dash, &op, form, why).await
        }
    }
}

async fn refused(dash: &Dashboard, op: &Operator, form: TokenForm, why: String) -> Response {
    match tokens_page(dash, op, form, Some(why), None).await {
        Ok(page) => (StatusCode::BAD_REQUEST, page).into_response(),
        Err(e) => app_error_page(e),
    }
}

async fn tokens_page(
    dash: &Dashboard,
    op: &Operator,
    form: TokenForm,
    error: Option<String>,
    issued: Option<Issued>,
) -> Result<TokensPage, Error> {
    let app = dash.app();
    let mut tokens: Vec<TokenRow> = app
        .token_uses(&op.principal)
        .await?
        .iter()
        .map(|t| token_row(dash, op, t))
        .collect();
    // Active ones first; each group by name, as the ledger lists them.
    tokens.sort_by_key(|t| t.revoked.is_some());
    let roles = Role::ALL
        .iter()
        .map(|role| RoleChoice {
            name: role.as_str(),
            does: does(*role),
            checked: form.roles.iter().any(|r| r == role.as_str()),
        })
        .collect();
    let title = if issued.is_some() {
        "Token created"
    } else {
        "Tokens"
    };
    let review_count = review_count(app, op).await?;
    Ok(TokensPage {
        layout: layout(dash, op, "tokens", title.to_owned(), review_count),
        tokens,
        roles,
        name: form.name,
        error,
        issued,
        timezone: app.settings().timezone.name().to_owned(),
    })
}

fn token_row(dash: &Dashboard, op: &Operator, token: &TokenUse) -> TokenRow {
    let app = dash.app();
    let tz = app.settings().timezone;
    let now = app.now();
    let record = &token.record;
    TokenRow {
        name: record.name.clone(),
        roles: record
            .roles
            .iter()
            .map(Role::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        created: local(record.created_at, tz),
        last_used: record.last_used_at.map_or_else(
            || "never".to_owned(),
            |at| format!("{} ({})", local(at, tz), relative(at, now)),
        ),
        live_drafts: token.live_drafts,
        revoked: record.revoked_at.map(|at| local(at, tz)),
        is_you: op.principal.actor == Actor::Token(record.name.clone()),
    }
}

/// `GET /tokens/{name}/revoke`: the confirmation step.
pub async fn revoke_page(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(name): Path<String>,
) -> Response {
    let app = dash.app();
    let found = match app.token_uses(&op.principal).await {
        Ok(tokens) => tokens.into_iter().find(|t| t.record.name == name),
        Err(e) => return app_error_page(e),
    };
    let Some(token) = found.filter(|t| t.record.revoked_at.is_none()) else {
        return error_page(
            StatusCode::NOT_FOUND,
            "No such token",
            &format!(
                "There is no active token named {name:?}: it may have been revoked already. The tokens page lists them all."
            ),
        );
    };
    let review_count = match review_count(app, &op).await {
        Ok(n) => n,
        Err(e) => return app_error_page(e),
    };
    RevokePage {
        layout: layout(&dash, &op, "tokens", format!("Revoke {name}"), review_count),
        token: token_row(&dash, &op, &token),
    }
    .into_response()
}

/// `POST /tokens/{name}/revoke`: revokes the token, then back to the list with what
/// it changed (approvals withdrawn because they rested on its passes).
pub async fn revoke(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(name): Path<String>,
) -> Response {
    let flash = match dash.app().revoke_token(&op.principal, &name).await {
        Ok(withdrawn) => {
            tracing::info!(actor = %op.principal.actor, token = %name, "token revoked on the dashboard");
            let mut message = format!(
                "Revoked token {name}: every request with it is refused from now on, and its dashboard sessions ended"
            );
            if withdrawn.is_empty() {
                message.push_str("; no approval rested on its passes");
            }
            for post in withdrawn {
                message.push_str(&format!(
                    ". Post #{} is a draft again: {}",
                    post.id, post.reason
                ));
            }
            Flash::done(message)
        }
        Err(Error::NotFound(_)) => Flash::refused(format!(
            "Not done: there is no active token named {name:?} (already revoked?)"
        )),
        Err(e) if e.is_refusal() => Flash::refused(format!("Not done: {e}")),
        Err(e) => Flash::refused(format!("Failed: {e}")),
    };
    dash.flash(&op.session, flash);
    Redirect::to("/tokens").into_response()
}
