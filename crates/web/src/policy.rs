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
//! Refusals ([`Refusal`]) carry airlock's JSON error shape `{"error": {"code", "message"}}`
//! with the codes `forbidden_host` and `forbidden_origin`. `airlock serve` applies
//! [`enforce`] around every router it merges ([`crate::guarded`]); the MCP endpoint
//! calls [`HostPolicy::check`] with the same settings as a second line.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use airlock_app::ErrorBody;
use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

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

    /// `allowed_hosts` with the host of `public_url` added.
    fn all_allowed_hosts(&self) -> Vec<String> {
        let mut hosts = self.allowed_hosts.clone();
        if let Some(host) = self.public_url.as_ref().and_then(url_host) {
            hosts.push(host);
        }
        hosts
    }

    /// `allowed_origins` with `public_url`'s origin added.
    fn all_allowed_origins(&self) -> Vec<String> {
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
    /// Whether `[server] public_url` is set (the advice then adds to the lists).
    has_public_url: bool,
    /// What a browser's page navigation gets instead of the JSON refusal.
    page: Option<RefusalPage>,
}

/// Renders a refusal as a page for a person ([`HostPolicy::with_page`]); `None` keeps
/// the JSON refusal.
pub type RefusalPage = fn(&RefusedRequest<'_>) -> Option<Response>;

/// A request the policy refused, with what would allow it, for a page that explains it.
#[derive(Debug)]
pub struct RefusedRequest<'a> {
    /// Why.
    pub refusal: Refusal,
    /// The request's headers.
    pub headers: &'a HeaderMap,
    /// Its path.
    pub path: &'a str,
    /// The address the browser used (`http://localhost:9000`), when the request shows
    /// it: the `Origin` of a form the server's own page sent (its `Origin` names the
    /// `Host` it was sent to), or the scheme and `Host` of a refused `Host`. `None` when
    /// the request came from another site: then nothing should be allowed.
    pub address: Option<String>,
    /// The `[server]` lines that would allow [`RefusedRequest::address`] (empty without
    /// one).
    pub advice: Vec<String>,
}

/// Whether a request is a browser loading a page (a link, a typed address, a form),
/// not a script or an agent: `Sec-Fetch-Mode: navigate`, or, from a browser that does
/// not send it, an `Accept` that asks for HTML.
pub fn is_navigation(headers: &HeaderMap) -> bool {
    match headers.get("sec-fetch-mode") {
        Some(mode) => mode.as_bytes() == b"navigate",
        None => headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html")),
    }
}

/// The address a browser shows the pages of a request at, and whether forms sent from
/// them pass the policy. [`enforce`] adds it to every request it lets through, so that
/// a page (the dashboard's sign-in) can say so before a form is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageOrigin {
    /// `http://localhost:9000`: the scheme (`X-Forwarded-Proto`, else `http`) and `Host`.
    pub origin: String,
    /// Whether the policy allows forms from it (as `http` or as `https`).
    pub allowed: bool,
    /// The `[server]` lines that would allow it, when it is not allowed.
    pub advice: Vec<String>,
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
            has_public_url: settings.public_url.is_some(),
            page: None,
        }
    }

    /// The policy, answering a browser's refused page navigation with `page` (the
    /// dashboard's explanation) instead of JSON; every other refusal stays JSON.
    pub fn with_page(mut self, page: RefusalPage) -> Self {
        self.page = Some(page);
        self
    }

    /// The `[server]` lines that would let a browser at `origin` (`scheme://host[:port]`)
    /// use the server: `public_url` when it is not set (it makes the name an allowed
    /// `Host` and the origin an allowed `Origin`), else `allowed_hosts` and
    /// `allowed_origins` entries.
    ///
    /// Only for an address no DNS answer can redirect — `localhost` or an IP literal, as a
    /// forwarded port or a mapped container port gives: a name could be an attacker's,
    /// rebinding it to this server, and the page must not offer a line that lets it in.
    /// The lines hold only what the URL parser made of such an address, so nothing in
    /// them can break out of the quoted value.
    pub fn advice(&self, origin: &str) -> Vec<String> {
        let Ok(url) = url::Url::parse(origin) else {
            return Vec::new();
        };
        let unrebindable = match url.host() {
            Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => true,
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        };
        if !unrebindable {
            return Vec::new();
        }
        let origin = url.origin().ascii_serialization();
        if !self.has_public_url {
            return vec![format!("public_url = \"{origin}\"")];
        }
        let mut lines = Vec::new();
        let authority = origin.split_once("://").map_or(origin.as_str(), |(_, a)| a);
        let mut headers = HeaderMap::new();
        if let Ok(host) = HeaderValue::from_str(authority) {
            headers.insert(header::HOST, host);
        }
        if !self.allows_host(&headers, &Uri::from_static("/")) {
            lines.push(format!("allowed_hosts = [\"{authority}\"]"));
        }
        if !self.allows_origin(&origin) {
            lines.push(format!("allowed_origins = [\"{origin}\"]"));
        }
        lines
    }

    /// The address a browser shows this request's pages at, and whether its forms pass.
    pub fn page_origin(&self, headers: &HeaderMap) -> Option<PageOrigin> {
        let host = headers.get(header::HOST)?.to_str().ok()?.trim();
        let scheme = match headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
        {
            Some(proto) if proto.trim().eq_ignore_ascii_case("https") => "https",
            _ => "http",
        };
        let origin = format!("{scheme}://{host}");
        normalize_origin(&origin)?;
        let allowed = ["http", "https"]
            .iter()
            .any(|scheme| self.allows_origin(&format!("{scheme}://{host}")));
        Some(PageOrigin {
            advice: if allowed {
                Vec::new()
            } else {
                self.advice(&origin)
            },
            origin,
            allowed,
        })
    }

    /// What a page can tell a person about a refused request: the address they used, if
    /// the request shows it was this server's own page (not another site's), and what
    /// would allow it.
    fn refused<'a>(
        &self,
        refusal: Refusal,
        headers: &'a HeaderMap,
        uri: &'a Uri,
    ) -> RefusedRequest<'a> {
        let address = match refusal {
            Refusal::ForeignHost => self.page_origin(headers).map(|p| p.origin),
            Refusal::ForeignOrigin => {
                let origin = headers
                    .get(header::ORIGIN)
                    .and_then(|v| v.to_str().ok())
                    .map(str::trim);
                let own = self.page_origin(headers);
                // A form the server's own page sent names, as its Origin, the Host it was
                // sent to: a forwarded port or a proxy. Another site's form does not.
                match (origin, own) {
                    (Some(origin), Some(own))
                        if normalize_origin(origin).is_some()
                            && authority_of(origin) == authority_of(&own.origin) =>
                    {
                        Some(origin.to_owned())
                    }
                    _ => None,
                }
            }
        };
        RefusedRequest {
            refusal,
            headers,
            path: uri.path(),
            advice: address
                .as_deref()
                .map(|a| self.advice(a))
                .unwrap_or_default(),
            address,
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

    /// The policy's verdict on a request: its `Host` first, then its `Origin` if it
    /// carries one. A refusal is logged here, so every front end logs it alike.
    pub fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
        if !self.allows_host(headers, uri) {
            tracing::warn!(host = %header_text(headers.get(header::HOST)), path = %uri.path(), "refused a request for a foreign Host");
            return Err(Refusal::ForeignHost);
        }
        if let Some(origin) = headers.get(header::ORIGIN)
            && !origin.to_str().is_ok_and(|o| self.allows_origin(o))
        {
            tracing::warn!(origin = %header_text(Some(origin)), path = %uri.path(), "refused a request from a foreign Origin");
            return Err(Refusal::ForeignOrigin);
        }
        Ok(())
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

/// Why the policy refused a request; answered as 403 with airlock's JSON error shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The `Host` names nothing the server answers to (DNS rebinding).
    ForeignHost,
    /// The `Origin` is not one the server allows (a cross-site request).
    ForeignOrigin,
}

impl Refusal {
    /// The error code: `forbidden_host` or `forbidden_origin`.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::ForeignHost => "forbidden_host",
            Refusal::ForeignOrigin => "forbidden_origin",
        }
    }

    /// What the person who configures the server can do about it.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::ForeignHost => {
                "this server does not answer to this Host: reach it by loopback, its listen address, [server] public_url, or a name in [server] allowed_hosts"
            }
            Refusal::ForeignOrigin => {
                "requests from this Origin are refused: browsers may call airlock only from its own origin, [server] public_url, or one in [server] allowed_origins"
            }
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = (
            StatusCode::FORBIDDEN,
            Json(ErrorBody::new(self.code(), self.message())),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

/// `host[:port]` of an origin, lowercase, as a browser writes it (no default port).
fn authority_of(origin: &str) -> Option<String> {
    let url = url::Url::parse(origin).ok()?;
    let host = match url.host()? {
        url::Host::Domain(domain) => domain.to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => format!("[{ip}]"),
    };
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// Middleware: refuses a foreign `Host` or `Origin` with 403 before any route runs; a
/// browser's page navigation gets the policy's page ([`HostPolicy::with_page`]), any
/// other request airlock's JSON error. A request let through carries its
/// [`PageOrigin`] as an extension.
pub async fn enforce(
    State(policy): State<HostPolicy>,
    mut request: Request,
    next: Next,
) -> Response {
    match policy.check(request.headers(), request.uri()) {
        Ok(()) => {
            if let Some(origin) = policy.page_origin(request.headers()) {
                request.extensions_mut().insert(origin);
            }
            next.run(request).await
        }
        Err(refusal) => {
            if let Some(page) = policy.page
                && is_navigation(request.headers())
                && let Some(mut response) =
                    page(&policy.refused(refusal, request.headers(), request.uri()))
            {
                *response.status_mut() = StatusCode::FORBIDDEN;
                response
                    .headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                return response;
            }
            refusal.into_response()
        }
    }
}

/// A header's value as plain text for the logs (empty when absent).
fn header_text(value: Option<&HeaderValue>) -> String {
    value
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    // Moved with the policy from the MCP endpoint's own copy of it.

    #[test]
    fn origins_are_normalized_with_explicit_ports() {
        assert_eq!(
            normalize_origin("https://Agents.Example").as_deref(),
            Some("https://agents.example:443")
        );
        assert_eq!(
            normalize_origin("http://localhost:8080/").as_deref(),
            Some("http://localhost:8080")
        );
        assert_eq!(
            normalize_origin("http://[::1]:9").as_deref(),
            Some("http://[::1]:9")
        );
        assert_eq!(normalize_origin("null"), None);
        assert_eq!(normalize_origin("https://evil.example/path"), None);
        assert_eq!(normalize_origin("file:///etc/passwd"), None);
    }

    #[test]
    fn own_origins_follow_the_listen_port() {
        let mut settings = PolicySettings::new("127.0.0.1:8080".parse().unwrap());
        settings.allowed_origins = vec!["https://agents.example".into(), "nonsense".into()];
        let policy = HostPolicy::new(&settings);
        let origins = policy.origins();
        assert!(origins.contains("http://127.0.0.1:8080"));
        assert!(origins.contains("http://localhost:8080"));
        assert!(origins.contains("https://agents.example:443"));
        assert!(!origins.contains("http://localhost:8081"));
        assert_eq!(origins.len(), 4, "{origins:?}");
    }

    #[test]
    fn hosts_match_by_name_and_optional_port() {
        let mut settings = PolicySettings::new("0.0.0.0:8080".parse().unwrap());
        settings.allowed_hosts = vec!["airlock.example:8443".into()];
        let policy = HostPolicy::new(&settings);
        let check = |host: &str| check(&policy, host);
        assert!(check("127.0.0.1:8080"));
        assert!(check("localhost"));
        assert!(check("[::1]:8080"));
        assert!(check("airlock.example:8443"));
        assert!(!check("airlock.example:80"));
        assert!(!check("0.0.0.0:8080"));
        assert!(!check("evil.example:8080"));
    }

    #[test]
    fn a_foreign_host_is_refused_before_its_origin_is_read() {
        let policy = HostPolicy::new(&PolicySettings::new("127.0.0.1:8080".parse().unwrap()));
        let request = |host: &str, origin: Option<&str>| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
            if let Some(origin) = origin {
                headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
            }
            policy.check(&headers, &Uri::from_static("/mcp"))
        };
        assert_eq!(request("localhost:8080", None), Ok(()));
        assert_eq!(
            request("localhost:8080", Some("http://localhost:8080")),
            Ok(())
        );
        assert_eq!(
            request("localhost:8080", Some("null")),
            Err(Refusal::ForeignOrigin)
        );
        assert_eq!(
            request("evil.example", Some("https://evil.example")),
            Err(Refusal::ForeignHost)
        );
        assert_eq!(Refusal::ForeignHost.code(), "forbidden_host");
        assert_eq!(Refusal::ForeignOrigin.code(), "forbidden_origin");
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    /// The finding: through `ssh -L 9000:localhost:8080`, the sign-in page loads (a GET
    /// has no Origin) and its form is refused. The page's address is known to be
    /// refused before the form is sent, and the advice names the setting.
    #[test]
    fn a_forwarded_port_is_seen_with_the_setting_that_allows_it() {
        let policy = HostPolicy::new(&PolicySettings::new("127.0.0.1:8080".parse().unwrap()));
        let own = policy
            .page_origin(&headers(&[("host", "localhost:8080")]))
            .unwrap();
        assert!(own.allowed && own.advice.is_empty(), "{own:?}");
        let forwarded = policy
            .page_origin(&headers(&[("host", "localhost:9000")]))
            .unwrap();
        assert_eq!(forwarded.origin, "http://localhost:9000");
        assert!(!forwarded.allowed);
        assert_eq!(forwarded.advice, ["public_url = \"http://localhost:9000\""]);

        // The form its own page sent: Origin names the Host it went to.
        let form = headers(&[
            ("host", "localhost:9000"),
            ("origin", "http://localhost:9000"),
            ("sec-fetch-mode", "navigate"),
        ]);
        let uri = Uri::from_static("/login");
        assert_eq!(policy.check(&form, &uri), Err(Refusal::ForeignOrigin));
        let refused = policy.refused(Refusal::ForeignOrigin, &form, &uri);
        assert_eq!(refused.address.as_deref(), Some("http://localhost:9000"));
        assert_eq!(refused.advice, ["public_url = \"http://localhost:9000\""]);
        assert!(is_navigation(&form));

        // Another site's form: nothing to advise, nothing should be allowed.
        let forged = headers(&[
            ("host", "localhost:8080"),
            ("origin", "https://evil.example"),
        ]);
        let refused = policy.refused(Refusal::ForeignOrigin, &forged, &uri);
        assert_eq!((refused.address, refused.advice.len()), (None, 0));
    }

    #[test]
    fn with_a_public_url_the_advice_adds_to_the_lists() {
        let mut settings = PolicySettings::new("127.0.0.1:8080".parse().unwrap());
        settings.public_url = Some(url::Url::parse("https://airlock.example").unwrap());
        let policy = HostPolicy::new(&settings);
        assert_eq!(
            policy.advice("http://localhost:9000"),
            ["allowed_origins = [\"http://localhost:9000\"]"]
        );
        assert_eq!(
            policy.advice("http://192.168.1.5:9000"),
            [
                "allowed_hosts = [\"192.168.1.5:9000\"]",
                "allowed_origins = [\"http://192.168.1.5:9000\"]"
            ]
        );
        // A name could be an attacker's, rebound to this server: no line to paste.
        assert!(policy.advice("http://box.lan:9000").is_empty());
        assert!(policy.advice("http://evil.example:8080").is_empty());
        // Behind the TLS proxy, with or without X-Forwarded-Proto, nothing to warn of.
        let proxied = policy
            .page_origin(&headers(&[("host", "airlock.example")]))
            .unwrap();
        assert!(proxied.allowed, "{proxied:?}");
    }

    /// The attack: a Host crafted to close the quoted value (`a","evil.example`) made
    /// the advice a valid TOML line allowing another host; and a rebinding victim at
    /// `evil.example` was told to allow it. Neither gets a line.
    #[test]
    fn the_advice_never_quotes_an_attackers_host() {
        for public_url in [None, Some("https://airlock.example")] {
            let mut settings = PolicySettings::new("127.0.0.1:8080".parse().unwrap());
            settings.public_url = public_url.map(|u| url::Url::parse(u).unwrap());
            let policy = HostPolicy::new(&settings);
            for host in [r#"a","evil.example"#, "evil.example:8080"] {
                let page = policy.page_origin(&headers(&[("host", host)]));
                let advice = page.map(|p| p.advice).unwrap_or_default();
                assert!(advice.is_empty(), "{host}: {advice:?}");
            }
        }
    }

    #[test]
    fn scripts_and_agents_are_not_navigations() {
        assert!(!is_navigation(&headers(&[("accept", "application/json")])));
        assert!(!is_navigation(&headers(&[
            ("sec-fetch-mode", "cors"),
            ("accept", "text/html")
        ])));
        assert!(is_navigation(&headers(&[(
            "accept",
            "text/html,application/xhtml+xml"
        )])));
        assert!(!is_navigation(&HeaderMap::new()));
    }
}
