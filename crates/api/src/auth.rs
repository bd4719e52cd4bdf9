//! Bearer-token authentication: the `Caller` extractor turns `Authorization: Bearer
//! <token>` into the token's `Principal`, or answers 401 with `WWW-Authenticate: Bearer`.
//! Role checks happen in `app`, on every operation.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use airlock_app::{App, Error, Principal};

use crate::error::{ApiError, Recorded};

/// The authenticated principal of a request.
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

/// The bearer secret of a request, if it carries one.
pub fn bearer(parts: &Parts) -> Option<&str> {
    bearer_header(&parts.headers)
}

/// The secret of an `Authorization: Bearer <token>` header, if there is one.
pub fn bearer_header(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, secret) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(secret.trim())
}

impl FromRequestParts<App> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let secret = bearer(parts).ok_or(ApiError(Error::Unauthorized))?;
        app.authenticate(secret).await.recorded(app).map(Caller)
    }
}

/// A JSON body whose errors are API errors (400 with the reason).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let axum::Json(value) = axum::Json::<T>::from_request(req, state).await?;
        Ok(ApiJson(value))
    }
}
