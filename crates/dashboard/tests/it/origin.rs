//! Signing in at an address airlock was not told about: a forwarded port (`ssh -L
//! 9000:localhost:8080`, `docker run -p 9000:8080`). The finding: the sign-in page
//! loaded, and its form answered the API's raw JSON `forbidden_origin`. Now the page
//! says before the form is sent that it will be refused and what to set, a refused form
//! answers a page with the same advice, and with the advised setting signing in works.
//! The API's refusals stay JSON; a form from another site gets no advice.

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use tower::ServiceExt;

use airlock_web::policy::{HostPolicy, PolicySettings};

use crate::support::{Harness, Page};

/// The dashboard behind the server's policy, as `airlock serve` runs it on
/// 127.0.0.1:8080, optionally with a `public_url`.
pub fn served(h: &Harness, public_url: Option<&str>) -> Router {
    let mut settings = PolicySettings::new("127.0.0.1:8080".parse().unwrap());
    settings.public_url = public_url.map(|u| url::Url::parse(u).unwrap());
    let policy = HostPolicy::new(&settings).with_page(airlock_dashboard::refusal_page);
    airlock_web::guarded(h.router(), policy)
}

/// One request with exactly these headers.
async fn send(
    router: &Router,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Page {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::from(body.to_owned())).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    Page {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

/// What Chromium sends with a form it submits from a page at `origin`.
fn form_headers<'a>(host: &'a str, origin: &'a str, cookie: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("host", host),
        ("origin", origin),
        ("cookie", cookie),
        ("content-type", "application/x-www-form-urlencoded"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-site", "same-origin"),
        ("accept", "text/html,application/xhtml+xml"),
    ]
}

/// Opens the sign-in page at `host` and sends its form with `token` from `origin`.
async fn sign_in(router: &Router, host: &str, origin: &str, token: &str) -> (Page, Page) {
    let form = send(
        router,
        Method::GET,
        "/login",
        &[("host", host), ("sec-fetch-mode", "navigate")],
        "",
    )
    .await;
    assert_eq!(form.status, StatusCode::OK, "{}", form.body);
    let cookie = form.set_cookies()[0].split(';').next().unwrap().to_owned();
    let body = format!("csrf={}&token={token}", form.csrf());
    let answer = send(
        router,
        Method::POST,
        "/login",
        &form_headers(host, origin, &cookie),
        &body,
    )
    .await;
    (form, answer)
}

const ADVICE: &str = "public_url = &#34;http://localhost:9000&#34;";

#[tokio::test]
async fn a_forwarded_port_gets_a_page_saying_what_to_set_then_signs_in() {
    let h = Harness::new().await;
    let router = served(&h, None);

    // Reached directly, nothing to warn of.
    let (form, answer) = sign_in(
        &router,
        "localhost:8080",
        "http://localhost:8080",
        &h.operator,
    )
    .await;
    assert!(!form.body.contains("will be refused"), "{}", form.body);
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);

    // Through the forwarded port: the sign-in page warns before the token is typed...
    let (form, answer) = sign_in(
        &router,
        "localhost:9000",
        "http://localhost:9000",
        &h.operator,
    )
    .await;
    assert!(
        form.body.contains("Signing in here will be refused"),
        "{}",
        form.body
    );
    assert!(form.body.contains(ADVICE), "{}", form.body);
    // ...and the refused form answers a page, not JSON, with the same advice.
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(
        answer
            .headers
            .get(header::CONTENT_TYPE)
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{:?}",
        answer.headers
    );
    assert!(!answer.body.contains("forbidden_origin"), "{}", answer.body);
    assert!(
        answer
            .body
            .contains("airlock is not set up for http://localhost:9000"),
        "{}",
        answer.body
    );
    assert!(answer.body.contains(ADVICE), "{}", answer.body);
    assert!(answer.body.contains("restart <code>airlock serve</code>"));
    assert_eq!(answer.headers.get("x-frame-options").unwrap(), "DENY");
    assert!(answer.set_cookies().is_empty(), "no session");

    // Following the advice: restarted with that public_url, signing in works.
    let restarted = served(&h, Some("http://localhost:9000"));
    let (form, answer) = sign_in(
        &restarted,
        "localhost:9000",
        "http://localhost:9000",
        &h.operator,
    )
    .await;
    assert!(!form.body.contains("will be refused"), "{}", form.body);
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert!(
        answer
            .set_cookies()
            .iter()
            .any(|c| c.starts_with("airlock_session="))
    );
}

/// Agents, scripts and the API keep airlock's JSON error.
#[tokio::test]
async fn refusals_outside_a_browsers_page_stay_json() {
    let h = Harness::new().await;
    let router = served(&h, None);
    let script = send(
        &router,
        Method::POST,
        "/login",
        &[
            ("host", "localhost:9000"),
            ("origin", "http://localhost:9000"),
            ("content-type", "application/x-www-form-urlencoded"),
            ("sec-fetch-mode", "cors"),
        ],
        "",
    )
    .await;
    assert_eq!(script.status, StatusCode::FORBIDDEN);
    assert!(
        script.body.contains("\"forbidden_origin\""),
        "{}",
        script.body
    );
    let api = send(
        &router,
        Method::POST,
        "/api/v1/posts",
        &form_headers("localhost:9000", "http://localhost:9000", ""),
        "",
    )
    .await;
    assert_eq!(api.status, StatusCode::FORBIDDEN);
    assert!(api.body.contains("\"forbidden_origin\""), "{}", api.body);
    let host = send(
        &router,
        Method::GET,
        "/api/v1/posts",
        &[("host", "evil.example"), ("sec-fetch-mode", "navigate")],
        "",
    )
    .await;
    assert!(host.body.contains("\"forbidden_host\""), "{}", host.body);
}

/// Another site's form gets a page that advises nothing: allowing its origin is the
/// last thing to do.
#[tokio::test]
async fn another_sites_form_gets_no_advice() {
    let h = Harness::new().await;
    let router = served(&h, None);
    let (_, answer) = sign_in(
        &router,
        "localhost:8080",
        "https://evil.example",
        &h.operator,
    )
    .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(
        answer.body.contains("this form came from another site"),
        "{}",
        answer.body
    );
    assert!(!answer.body.contains("public_url"), "{}", answer.body);
    assert!(!answer.body.contains("evil.example"), "{}", answer.body);

    // A page at a name airlock does not answer to: the name could be an attacker's,
    // rebound to this server, so the page says what to set but writes no line to paste.
    let page = send(
        &router,
        Method::GET,
        "/login",
        &[("host", "box.lan:9000"), ("sec-fetch-mode", "navigate")],
        "",
    )
    .await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(
        page.body.contains("set <code>public_url</code>"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("box.lan"), "{}", page.body);

    // At an IP address (a container's published port on a LAN), the line to paste.
    let page = send(
        &router,
        Method::GET,
        "/login",
        &[("host", "192.168.1.5:9000"), ("sec-fetch-mode", "navigate")],
        "",
    )
    .await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(
        page.body
            .contains("public_url = &#34;http://192.168.1.5:9000&#34;"),
        "{}",
        page.body
    );
    assert!(page.body.contains("clear text"), "{}", page.body);
}
