//! One `Host` and `Origin` policy for the whole server: the dashboard, the API, `/metrics`,
//! `/healthz`, the OpenAPI document and `/mcp` all answer only to the names the server
//! is meant to be reached by, so a web page the user visits cannot read or drive any of
//! them through DNS rebinding or a cross-site request.
//!
//! - **Host**: loopback names (`localhost`, `127.0.0.1`, `::1`), the listen address when
//!   it is a specific IP, the host of `[server] public_url`, and `[server] allowed_hosts`.
//!   Anything else is refused with 403 before any route runs.
//! - **Origin**: a request that carries an `Origin` (browsers send one on cross-site and
//!   on form requests) must come from the server's own origins (`http://localhost:<port>`
//!   and the other loopback forms), `public_url`'s origin, or `[server] allowed_origins`;
//!   anything else (including `null`) is refused with 403. Requests without an `Origin`
//!   (agents, CLIs, same-origin navigation) pass.
//!
//! Refusals carry airlock's JSON error shape `{"error": {"code", "message"}}` with the
//! codes `forbidden_host` and `forbidden_origin`. `airlock serve` applies [`enforce`]
//! around every router it merges; the MCP endpoint keeps its own copy of the same
//! checks (configured with the same lists) as a second line.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::Response;

/// What the policy is built from; `airlock serve` fills it from `[server]`.
#[derive(Debug, Clone)]
pub struct PolicySettings {
    /// The address the server listens on.
    pub listen: SocketAddr,
    /// The public address people and agents use (`https://airlock.example`), when the
    /// server runs behind a TLS-terminating proxy.
    pub public_url: Option<url::Url>,
    /// Further `Host` names (`airlock.example`, `airlock.example:8443`).
    pub allowed_hosts: Vec<String>,
    /// Further browser origins (`https://agents.example`).
    pub allowed_origins: Vec<String>,
}

impl PolicySettings {
    /// Loopback only, for a server on `listen`.
    pub fn new(listen: SocketAddr) -> Self {
        PolicySettings {
            listen,
            public_url: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }

    /// `allowed_hosts` with the host of `public_url` added: the list to give every
    /// component that checks `Host` on its own (the MCP endpoint).
    pub fn all_allowed_hosts(&self) -> Vec<String> {
        let mut hosts = self.allowed_hosts.clone();
        if let Some(host) = self.public_url.as_ref().and_then(url_host) {
            hosts.push(host);
        }
        hosts
    }

    /// `allowed_origins` with `public_url`'s origin added.
    pub fn all_allowed_origins(&self) -> Vec<String> {
        let mut origins = self.allowed_origins.clone();
        if let Some(url) = &self.public_url {
            origins.push(url.origin().ascii_serialization());
        }
        origins
    }
}

/// The host of a URL as the `Host` header names it (IPv6 without brackets).
fn url_host(url: &url::Url) -> Option<String> {
    Some(match url.host()? {
        url::Host::Domain(domain) => domain.to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => ip.to_string(),
    })
}

/// The policy, ready to check requests. Cheap to clone.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    hosts: Arc<BTreeSet<String>>,
    origins: Arc<BTreeSet<String>>,
}

impl HostPolicy {
    /// Builds the lists; entries that do not parse allow nothing and are logged.
    pub fn new(settings: &PolicySettings) -> Self {
        let port = settings.listen.port();
        let mut hosts: BTreeSet<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        let mut origins: BTreeSet<String> = [
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
            format!("http://[::1]:{port}"),
        ]
        .into_iter()
        .collect();
        let ip = settings.listen.ip();
        if !ip.is_unspecified() {
            hosts.insert(ip.to_string());
            if let Some(origin) = normalize_origin(&format!("http://{}", settings.listen)) {
                origins.insert(origin);
            }
        }
        hosts.extend(
            settings
                .all_allowed_hosts()
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty()),
        );
        for entry in settings.all_allowed_origins() {
            match normalize_origin(&entry) {
                Some(origin) => {
                    origins.insert(origin);
                }
                None => tracing::warn!(
                    origin = entry.as_str(),
                    "ignoring allowed origin that is not scheme://host[:port]: it allows nothing"
                ),
            }
        }
        HostPolicy {
            hosts: Arc::new(hosts),
            origins: Arc::new(origins),
        }
    }

    /// The names allowed in `Host` (`host` or `host:port`).
    pub fn hosts(&self) -> &BTreeSet<String> {
        &self.hosts
    }

    /// The allowed origins, normalized as `scheme://host:port`.
    pub fn origins(&self) -> &BTreeSet<String> {
        &self.origins
    }

    /// Whether the request's `Host` (or, without one, its URI's authority) is allowed.
    pub fn allows_host(&self, headers: &HeaderMap, uri: &Uri) -> bool {
        let authority = match headers.get(header::HOST) {
            Some(value) => value
                .to_str()
                .ok()
                .and_then(|s| s.parse::<axum::http::uri::Authority>().ok()),
            None => uri.authority().cloned(),
        };
        let Some(authority) = authority else {
            return false;
        };
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let port = authority.port_u16();
        self.hosts.iter().any(|entry| {
            let (entry_host, entry_port) = split_host_port(entry);
            entry_host == host && entry_port.is_none_or(|p| Some(p) == port)
        })
    }

    /// Whether an `Origin` header value is one of the allowed origins.
    pub fn allows_origin(&self, origin: &str) -> bool {
        normalize_origin(origin).is_some_and(|o| self.origins.contains(&o))
    }
}

/// `scheme://host:port` with an explicit port and a lowercase host, or `None` when
/// `origin` is not an http(s) origin (`null`, a path, garbage).
pub fn normalize_origin(origin: &str) -> Option<String> {
    let url = url::Url::parse(origin.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.path() != "/" && !url.path().is_empty() {
        return None;
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return None;
    }
    let host = match url.host()? {
        url::Host::Domain(domain) => domain.to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => format!("[{ip}]"),
    };
    let port = url.port_or_known_default()?;
    Some(format!("{}://{host}:{port}", url.scheme()))
}

/// `host` or `host:port` (IPv6 addresses bare or in brackets).
fn split_host_port(entry: &str) -> (String, Option<u16>) {
    if entry.parse::<IpAddr>().is_ok() {
        return (entry.to_owned(), None);
    }
    match entry.parse::<axum::http::uri::Authority>() {
        Ok(authority) => (
            authority
                .host()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            authority.port_u16(),
        ),
        Err(_) => (entry.to_owned(), None),
    }
}

/// Middleware: refuses a foreign `Host` or `Origin` with 403 before any route runs.
pub async fn enforce(State(policy): State<HostPolicy>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if !policy.allows_host(headers, request.uri()) {
        tracing::warn!(host = ?headers.get(header::HOST), path = %request.uri().path(), "refused a request for a foreign Host");
        return refusal(
            "forbidden_host",
            "this server does not answer to this Host: reach it by loopback, its listen address, [server] public_url, or a name in [server] allowed_hosts",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|o| policy.allows_origin(o));
        if !allowed {
            tracing::warn!(origin = ?origin, path = %request.uri().path(), "refused a request from a foreign Origin");
            return refusal(
                "forbidden_origin",
                "requests from this Origin are refused: browsers may call airlock only from its own origin, [server] public_url, or one in [server] allowed_origins",
            );
        }
    }
    next.run(request).await
}

fn refusal(code: &str, message: &str) -> Response {
    let mut response = crate::error::error_response(StatusCode::FORBIDDEN, code, message);
    crate::no_store(response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn check(policy: &HostPolicy, host: &str) -> bool {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        policy.allows_host(&headers, &Uri::from_static("/"))
    }

    #[test]
    fn loopback_and_the_public_url_are_allowed_and_nothing_else() {
        let mut settings = PolicySettings::new("127.0.0.1:8080".parse().unwrap());
        settings.public_url = Some(url::Url::parse("https://airlock.example").unwrap());
        settings.allowed_hosts = vec!["proxy.internal:8443".into()];
        let policy = HostPolicy::new(&settings);
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:8080",
            "airlock.example",
            "airlock.example:443",
            "proxy.internal:8443",
        ] {
            assert!(check(&policy, ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "proxy.internal:80",
            "127.0.0.2:8080",
        ] {
            assert!(!check(&policy, bad), "{bad}");
        }
        assert!(policy.allows_origin("https://airlock.example"));
        assert!(policy.allows_origin("http://localhost:8080"));
        assert!(!policy.allows_origin("null"));
        assert!(!policy.allows_origin("http://localhost:8081"));
        assert!(!policy.allows_origin("https://evil.example"));
    }

    #[test]
    fn a_wildcard_listen_address_is_not_a_host() {
        let policy = HostPolicy::new(&PolicySettings::new("0.0.0.0:8080".parse().unwrap()));
        assert!(!check(&policy, "0.0.0.0:8080"));
        assert!(check(&policy, "localhost:8080"));
    }
}
