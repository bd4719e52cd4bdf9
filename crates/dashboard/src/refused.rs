//! The page a browser gets when the server's `Host`/`Origin` policy refuses it
//! ([`airlock_web::policy`]), instead of the API's JSON: what address it used, and the
//! `[server]` setting that would let that address in.
//!
//! The usual cause is an address airlock was not told about: a forwarded port (`ssh -L
//! 9000:localhost:8080`), a container's published port (`docker run -p 9000:8080`) or a
//! proxy. The sign-in page loads there (a `GET` carries no `Origin`), and its form,
//! sent with `Origin: http://localhost:9000`, is refused. The sign-in page says so
//! before the form is sent ([`crate::auth::login_page`]), and the refusal answers with
//! the same advice. A form another site sent gets no advice: it names an origin that
//! is not the address it was sent to, and nothing should let it in.
//!
//! `serve` installs [`refusal_page`] with [`airlock_web::policy::HostPolicy::with_page`];
//! the policy calls it only for a browser's page navigation, and it answers only for
//! the dashboard's paths, so the API, `/mcp`, `/metrics` and `/healthz` keep JSON.

use askama::Template;
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

use airlock_web::policy::{Refusal, RefusedRequest};

use crate::guard::SECURITY_HEADERS;

/// Paths that are not the dashboard's: their refusals stay JSON.
const NOT_PAGES: [&str; 5] = ["/api/", "/mcp", "/metrics", "/healthz", "/.well-known/"];

/// The refusal page.
#[derive(Template)]
#[template(path = "refused.html")]
pub struct RefusedPage {
    /// Whether the `Host` was refused (else the `Origin` of a form).
    pub host: bool,
    /// The advice, when the request came from the address it was sent to.
    pub advice: Option<Advice>,
}

/// What to set so that an address can use the dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advice {
    /// `http://localhost:9000`.
    pub address: String,
    /// The lines to add under `[server]`.
    pub lines: Vec<String>,
    /// Plain `http` to a host that is not loopback: tokens would cross the network in
    /// clear text.
    pub clear_text: bool,
}

impl Advice {
    /// The advice for `address`, if there is something to set.
    pub fn new(address: &str, lines: Vec<String>) -> Option<Advice> {
        if lines.is_empty() {
            return None;
        }
        let clear_text = url::Url::parse(address).is_ok_and(|url| {
            url.scheme() == "http"
                && !matches!(url.host(), Some(url::Host::Domain("localhost")))
                && !matches!(url.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
                && !matches!(url.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback())
        });
        Some(Advice {
            address: address.to_owned(),
            lines,
            clear_text,
        })
    }
}

/// The dashboard's answer to a refused page navigation (`None` outside its paths).
pub fn refusal_page(refused: &RefusedRequest<'_>) -> Option<Response> {
    if NOT_PAGES.iter().any(|p| refused.path.starts_with(p)) {
        return None;
    }
    let page = RefusedPage {
        host: refused.refusal == Refusal::ForeignHost,
        advice: refused
            .address
            .as_deref()
            .and_then(|address| Advice::new(address, refused.advice.clone())),
    };
    let mut response = match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "could not render the refusal page");
            return None;
        }
    };
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Some(response)
}
