//! The HTTP plumbing every platform adapter shares.
//!
//! - Redirects are never followed and a `base_url` must be `https` unless its host is
//!   loopback, so a token is only ever sent to its own platform.
//! - Idle connections are not reused: a request on a connection the server already
//!   closed would fail ambiguously, and an irreversible request must fail clearly.
//! - [`transport_failure`] splits transport errors into "never sent" and "maybe sent";
//!   `StatusTable` reads a non-2xx answer by the one outcome table, in each platform's
//!   words and with its waits.
//! - [`Redactor`] scrubs secrets out of every summary before it is stored or shown,
//!   and `reqwest` errors are rendered without their URL.

use std::time::Duration as StdDuration;

use chrono::Duration;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use secrecy::{ExposeSecret, SecretString};

use airlock_core::outcome::{Outcome, StatusClass, TransportFailure, classify_status};

/// A `base_url` (or a webhook's `url`) that would send a token somewhere unsafe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} {url:?} {problem}")]
pub struct BaseUrlError {
    /// The setting it came from: `base_url`, or `url` for a webhook ([`check_webhook_url`]).
    pub key: &'static str,
    /// The URL, without any user info or password it carried ([`without_secrets`]).
    pub url: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

/// A URL as it may be shown: user name and password removed (`user:pw@` becomes
/// `***@`), and the values of query parameters that carry secrets (`password`,
/// `sslpassword`, `token`, `access_token`, `key`, `secret`) replaced by `***`. Text that
/// does not parse as a URL is cut at its last `@` before the host, so an embedded
/// credential never shows even in an error about a malformed URL.
pub fn without_secrets(url: &str) -> String {
    const SECRET_PARAMS: [&str; 6] = [
        "password",
        "sslpassword",
        "token",
        "access_token",
        "key",
        "secret",
    ];
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.has_host() || !parsed.username().is_empty() => {
            let had_userinfo = !parsed.username().is_empty() || parsed.password().is_some();
            let _ = parsed.set_password(None);
            let _ = parsed.set_username("");
            let pairs: Vec<(String, String)> = parsed
                .query_pairs()
                .map(|(k, v)| {
                    let secret = SECRET_PARAMS.contains(&k.to_ascii_lowercase().as_str());
                    (
                        k.into_owned(),
                        if secret {
                            "***".to_owned()
                        } else {
                            v.into_owned()
                        },
                    )
                })
                .collect();
            if !pairs.is_empty() {
                parsed.query_pairs_mut().clear().extend_pairs(pairs);
            }
            let mut shown = parsed.to_string();
            if had_userinfo && let Some(rest) = shown.find("://").map(|i| i + 3) {
                shown.insert_str(rest, "***@");
            }
            shown
        }
        _ => {
            // Not a URL we can take apart: drop everything between the scheme and the
            // last '@' of the authority.
            let start = url.find("://").map(|i| i + 3).unwrap_or(0);
            let authority_end = url[start..]
                .find(['/', '?', '#'])
                .map(|i| start + i)
                .unwrap_or(url.len());
            match url[start..authority_end].rfind('@') {
                Some(at) => format!("{}***@{}", &url[..start], &url[start + at + 1..]),
                None => url.to_owned(),
            }
        }
    }
}

/// Checks a `base_url`: absolute, `https` unless the host is loopback, no credentials,
/// query or fragment. Returns it without a trailing slash.
pub fn check_base_url(url: &str) -> Result<String, BaseUrlError> {
    check_url("base_url", url)
}

/// Checks the `url` of a webhook, the one rule for both a `webhook` channel and a
/// `webhook` notification sink, at load and when either is built: the rule of
/// [`check_base_url`], reported under the key `url`.
pub fn check_webhook_url(url: &str) -> Result<String, BaseUrlError> {
    check_url("url", url)
}

/// The rule of [`check_base_url`] for the URL of setting `key`, reported under that key.
pub fn check_url(key: &'static str, url: &str) -> Result<String, BaseUrlError> {
    let err = |problem| BaseUrlError {
        key,
        url: without_secrets(url),
        problem,
    };
    let parsed = reqwest::Url::parse(url).map_err(|_| err("is not an absolute URL"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(err("must not carry credentials"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(err("must not have a query or fragment"));
    }
    let loopback = match parsed.host() {
        Some(url::Host::Domain(domain)) => domain == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(err("has no host")),
    };
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(err(
                "must use https (plain http is allowed only for loopback hosts)",
            ));
        }
        _ => return Err(err("must be an https URL")),
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// The HTTP client adapters take.
pub type Client = reqwest::Client;

/// The client for one channel: no redirects, no idle pooling, bounded connect and total time.
pub fn client(request_timeout: StdDuration) -> Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .connect_timeout(request_timeout.min(StdDuration::from_secs(10)))
        .timeout(request_timeout)
        .user_agent(concat!("airlock/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("the HTTP client builds with static settings")
}

/// Whether a transport error happened before the request could have left.
pub fn transport_failure(err: &reqwest::Error) -> TransportFailure {
    // A connect error (refused, DNS, connect or TLS timeout) means no byte of the request
    // was written. Everything else — a timeout waiting for the answer, a dropped
    // connection, a body error — may come after the platform received it.
    if err.is_connect() || err.is_builder() {
        TransportFailure::BeforeSending
    } else {
        TransportFailure::AfterSending
    }
}

/// A one-line description of a transport error, without its URL (which may carry a token).
pub fn describe_transport(err: &reqwest::Error) -> String {
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "could not connect"
    } else if err.is_body() || err.is_decode() {
        "broken response body"
    } else {
        "connection failed"
    };
    let mut detail = String::new();
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        detail = inner.to_string();
        source = inner.source();
    }
    if detail.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {}", truncate(&detail, 120))
    }
}

/// An absolute URL: `base` (already checked with [`check_base_url`]) plus path segments,
/// each percent-encoded so an id from a platform answer cannot change the path, plus
/// query pairs. Query pairs never carry a secret: tokens travel in headers only.
pub fn endpoint(base: &str, segments: &[&str], query: &[(&str, &str)]) -> String {
    let mut url = reqwest::Url::parse(base).expect("base URLs are checked when a channel is built");
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    url.into()
}

/// `application/x-www-form-urlencoded` text for a request body.
pub fn form_body(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// A platform's answer: status, headers and body, read in full.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body; `None` when it broke off after the status line arrived.
    pub body: Option<String>,
}

impl Answer {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body, or the empty string when it broke off.
    pub fn text(&self) -> &str {
        self.body.as_deref().unwrap_or("")
    }

    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_str(self.text()).ok()
    }
}

/// Sends a request and reads the whole answer. `Err` only when no status line arrived.
pub(crate) async fn send(request: reqwest::RequestBuilder) -> Result<Answer, reqwest::Error> {
    let response = request.send().await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.ok();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// The platform's id in a JSON answer: a non-empty string or a number.
pub(crate) fn id_string(value: Option<&serde_json::Value>) -> Option<String> {
    match value? {
        serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The longest `Retry-After` read as given; anything longer is read as this. The guarded
/// path clamps the wait further (`AppSettings::max_retry_after`), so a platform's number
/// can never overflow a time or hold a post for years.
const RETRY_AFTER_CAP_SECS: f64 = 366.0 * 86_400.0;

/// `Retry-After` as seconds or as an HTTP date, capped at a year.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let seconds = match value.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => seconds,
        Ok(_) => return None,
        // `Wed, 21 Oct 2026 07:28:00 GMT`: the IMF-fixdate of RFC 9110.
        Err(_) => {
            let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
            (at.to_utc() - chrono::Utc::now()).num_milliseconds().max(0) as f64 / 1000.0
        }
    };
    Duration::try_milliseconds((seconds.min(RETRY_AFTER_CAP_SECS) * 1000.0).ceil() as i64)
}

/// How long a rate-limited answer asks to wait: `Retry-After` if given, else the reset
/// time of the limit it exhausted — `RateLimit-Reset` (Bluesky: unix seconds),
/// `X-RateLimit-Reset` (Mastodon: an ISO 8601 time; X: unix seconds) — read as unix
/// seconds when it looks like a timestamp, seconds from now when small, or an RFC 3339
/// time. Capped at a year like [`retry_after`].
pub fn rate_limit_wait(
    headers: &HeaderMap,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Duration> {
    if let Some(wait) = retry_after(headers) {
        return Some(wait);
    }
    let value = ["ratelimit-reset", "x-ratelimit-reset", "x-rate-limit-reset"]
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok())?
        .trim();
    let wait = match value.parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 1e9 => {
            chrono::DateTime::from_timestamp(n as i64, 0).map(|at| at - now)?
        }
        Ok(n) if n.is_finite() && n >= 0.0 => {
            Duration::try_milliseconds((n * 1000.0).ceil() as i64)?
        }
        Ok(_) => return None,
        Err(_) => chrono::DateTime::parse_from_rfc3339(value).ok()?.to_utc() - now,
    };
    Some(
        wait.max(Duration::zero())
            .min(Duration::seconds(RETRY_AFTER_CAP_SECS as i64)),
    )
}

/// An image a post names, downloaded to be uploaded to a platform that takes files
/// (Bluesky, Mastodon).
#[derive(Debug, Clone)]
pub struct MediaFile {
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Its `Content-Type` (`image/jpeg`).
    pub mime: String,
    /// The last segment of its URL's path, for a file name.
    pub name: String,
}

/// Downloads a post's image for upload: `https` (or `http` to a loopback host), no
/// redirects, no credential of any kind sent, at most `max_bytes`, an `image/*` answer.
/// A URL or answer that can never work is a [`StepError::Rejected`] naming the URL; a
/// failure that may pass is transient.
pub(crate) async fn fetch_media(
    client: &reqwest::Client,
    platform: &str,
    media: &airlock_core::Media,
    max_bytes: usize,
) -> Result<MediaFile, crate::StepError> {
    let url = media.url.as_str();
    let refuse = |why: String| crate::StepError::Rejected {
        reason: format!(
            "{platform}: the image {} {why}: fix the media URL, then approve again",
            without_secrets(url)
        ),
        credential: false,
    };
    let parsed = reqwest::Url::parse(url).map_err(|_| refuse("is not an absolute URL".into()))?;
    if !is_fetchable(&parsed) {
        return Err(refuse(
            "is not an https URL without credentials, which is all airlock downloads".into(),
        ));
    }
    let name = parsed
        .path_segments()
        .and_then(|mut s| s.next_back().map(str::to_owned))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "image".to_owned());
    let transient = |why: String| {
        crate::StepError::transient(format!(
            "{platform}: downloading the image {} {why}; nothing was published",
            without_secrets(url)
        ))
    };
    let response = client
        .get(parsed)
        .send()
        .await
        .map_err(|e| transient(describe_transport(&e)))?;
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(if matches!(status, 408 | 429) || status >= 500 {
            transient(format!("answered HTTP {status}"))
        } else {
            refuse(format!("answered HTTP {status}"))
        });
    }
    let mime = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    if !mime.starts_with("image/") {
        return Err(refuse(format!("is {mime:?}, not an image")));
    }
    if response
        .content_length()
        .is_some_and(|n| n > max_bytes as u64)
    {
        return Err(refuse(format!("is larger than {max_bytes} bytes")));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|e| transient(describe_transport(&e)))?;
    if bytes.len() > max_bytes {
        return Err(refuse(format!("is larger than {max_bytes} bytes")));
    }
    // Bytes swapped at the URL after approval are never sent.
    let digest = airlock_core::hash::sha256_hex(&bytes);
    if let Some(why) = crate::media::changed_since_approval(media, &digest) {
        return Err(crate::StepError::Rejected {
            reason: format!("{platform}: {why}"),
            credential: false,
        });
    }
    Ok(MediaFile {
        bytes: bytes.to_vec(),
        mime,
        name,
    })
}

/// Whether airlock fetches from `url`: `https`, or `http` to a loopback host, without
/// credentials.
pub(crate) fn is_fetchable(url: &reqwest::Url) -> bool {
    let loopback = match url.host() {
        Some(url::Host::Domain(domain)) => domain == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    (url.scheme() == "https" || (url.scheme() == "http" && loopback))
        && url.username().is_empty()
        && url.password().is_none()
}

/// A `multipart/form-data` body of text fields and one file, with its `Content-Type`.
pub(crate) fn multipart(fields: &[(&str, &str)], file: (&str, &MediaFile)) -> (String, Vec<u8>) {
    let mut random = [0u8; 12];
    let _ = getrandom::fill(&mut random);
    let boundary = format!("airlock-{}", hex::encode(random));
    let mut body = Vec::new();
    let quote = |text: &str| text.replace(['"', '\r', '\n'], "_");
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"\r\n\r\n{value}\r\n",
                quote(name)
            )
            .as_bytes(),
        );
    }
    let (name, media) = file;
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {}\r\n\r\n",
            quote(name),
            quote(&media.name),
            media.mime
        )
        .as_bytes(),
    );
    body.extend_from_slice(&media.bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// How long a 429 or 408 without a `Retry-After` asks to wait: "not now", unspecified.
pub fn default_retry_after() -> Duration {
    Duration::seconds(60)
}

/// Where a platform says how long to wait after a 408 or 429.
#[derive(Debug, Clone, Copy)]
pub enum Wait {
    /// `Retry-After` only. A repeatable step's 408 or 429 without it counts as an attempt.
    RetryAfter,
    /// `Retry-After`, else the reset time of the exhausted limit ([`rate_limit_wait`]).
    /// A 408 or 429 without either waits [`default_retry_after`], in a repeatable step too.
    RateLimit,
    /// Read by the platform's own rule (a wait in the body), else as [`Wait::RateLimit`].
    Body(fn(&Answer) -> Option<Duration>),
}

/// One platform's wording and waits over the one outcome table of docs/channels.md
/// ([`classify_status`]): what a non-2xx answer means is the same for every platform,
/// and an adapter overrides a status only where its platform really differs (a Graph
/// error code, LinkedIn's daily limit, X's duplicate content), before asking the table.
#[derive(Debug, Clone, Copy)]
pub struct StatusTable {
    /// Said after the reason of a 401 or 403: what to do about the credential.
    pub credential_hint: Option<&'static str>,
    /// Said after the reason of a 408 or 429 answering a repeatable step.
    pub step_throttled: Option<&'static str>,
    /// Said after the reason of a 408 or 429 answering the irreversible request.
    pub publish_throttled: Option<&'static str>,
    /// Said after the reason of an unknown outcome: how it can be settled.
    pub unknown: Option<&'static str>,
    /// Where the platform says how long to wait.
    pub wait: Wait,
}

impl StatusTable {
    /// The table as docs/channels.md writes it: reasons as they are, `Retry-After` waits.
    pub const PLAIN: StatusTable = StatusTable {
        credential_hint: None,
        step_throttled: None,
        publish_throttled: None,
        unknown: None,
        wait: Wait::RetryAfter,
    };

    /// The outcome of a non-2xx answer to the irreversible request.
    pub fn outcome(&self, answer: &Answer, reason: String) -> Outcome {
        match classify_status(answer.status) {
            StatusClass::Success => unreachable!("the outcome table is for non-2xx answers"),
            StatusClass::NotSent => Outcome::NotSent {
                reason: said(reason, self.publish_throttled),
                retry_after: Some(self.wait(answer).unwrap_or_else(default_retry_after)),
            },
            StatusClass::CredentialRejected => Outcome::Rejected {
                reason: said(reason, self.credential_hint),
                credential: true,
            },
            StatusClass::Rejected => Outcome::Rejected {
                reason,
                credential: false,
            },
            StatusClass::Unknown => Outcome::Unknown {
                reason: said(reason, self.unknown),
            },
        }
    }

    /// The error of a non-2xx answer to a repeatable step: what the irreversible request
    /// would not have sent, or would not know, may pass later.
    pub fn step_error(&self, answer: &Answer, reason: String) -> crate::StepError {
        use crate::StepError;
        match classify_status(answer.status) {
            StatusClass::NotSent => StepError::Transient {
                reason: said(reason, self.step_throttled),
                retry_after: match self.wait {
                    Wait::RetryAfter => self.wait(answer),
                    Wait::RateLimit | Wait::Body(_) => {
                        Some(self.wait(answer).unwrap_or_else(default_retry_after))
                    }
                },
            },
            StatusClass::CredentialRejected => StepError::Rejected {
                reason: said(reason, self.credential_hint),
                credential: true,
            },
            StatusClass::Rejected => StepError::Rejected {
                reason,
                credential: false,
            },
            StatusClass::Success | StatusClass::Unknown => StepError::Transient {
                reason,
                retry_after: self.wait(answer),
            },
        }
    }

    /// How long the answer asks to wait, if it says.
    pub fn wait(&self, answer: &Answer) -> Option<Duration> {
        let now = chrono::Utc::now();
        match self.wait {
            Wait::RetryAfter => retry_after(&answer.headers),
            Wait::RateLimit => rate_limit_wait(&answer.headers, now),
            Wait::Body(read) => read(answer).or_else(|| rate_limit_wait(&answer.headers, now)),
        }
    }
}

/// `reason`, then what the platform's table says about it.
fn said(reason: String, more: Option<&str>) -> String {
    match more {
        Some(more) => format!("{reason}: {more}"),
        None => reason,
    }
}

/// What a summary says about an answer body airlock does not keep: a body that is not
/// the platform's JSON error shape (an HTML error page, a proxy's text, a receiver's
/// free-form answer) may echo anything, request headers included, so only its size and
/// type are recorded, never its text.
pub fn unkept_body(answer_text: &str) -> String {
    let text = answer_text.trim();
    if text.is_empty() {
        return String::new();
    }
    let kind = if text.starts_with('<') {
        "an HTML or XML body"
    } else {
        "a non-JSON body"
    };
    format!(" ({kind} of {} bytes, not kept)", text.len())
}

/// Shortens text to at most `max` characters, on a character boundary.
pub fn truncate(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        out.push('…');
    }
    out
}

/// Removes secrets from text that will be stored, logged, shown or sent (an error
/// summary, an event note, a notification), in two ways:
///
/// 1. **Known secrets in every form they travel in.** Each registered secret is
///    replaced as written, without its spaces (WordPress application passwords are
///    shown with spaces and accepted without), percent-encoded, JSON-escaped (also
///    with `\/` and `\uXXXX`, as PHP writes JSON), HTML-escaped (`&amp;`, `&quot;`,
///    `&#39;`, `&#x2F;` and the like) and in base64; [`Redactor::basic`] also registers
///    `base64(user:password)`, the `Authorization: Basic` credential a site may echo back.
/// 2. **Credentials by pattern**, known or not: the value after `Authorization:` (or
///    `"authorization": "..."`), and the token after `Bearer ` or `Basic `, to the end
///    of the token (an escape such as `\/` or an entity such as `&amp;` inside it does
///    not end it).
///
/// Every replacement reads `[redacted]`. Secrets shorter than 4 characters are not
/// registered (they would redact ordinary words); `credential::read_secret` refuses
/// such a credential file, so none is ever in use.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<SecretString>,
}

impl Redactor {
    /// A redactor for these secrets and their derived forms.
    pub fn new(secrets: impl IntoIterator<Item = SecretString>) -> Self {
        let mut redactor = Redactor::default();
        for secret in secrets {
            redactor.add(secret.expose_secret());
        }
        redactor
    }

    /// A redactor for an HTTP Basic credential: the password in every form, and
    /// `base64(user:password)` (with and without the password's spaces).
    pub fn basic(user: &str, password: &SecretString) -> Self {
        let mut redactor = Redactor::new([password.clone()]);
        let password = password.expose_secret();
        let compact: String = password.chars().filter(|c| !c.is_whitespace()).collect();
        for pass in [password, compact.as_str()] {
            redactor.push(base64_forms(&format!("{user}:{pass}")));
        }
        redactor
    }

    /// Registers one more secret with its derived forms.
    pub fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.chars().count() < crate::credential::MIN_SECRET_CHARS {
            return;
        }
        let compact: String = secret.chars().filter(|c| !c.is_whitespace()).collect();
        let mut forms = vec![secret.to_owned(), compact.clone()];
        for form in [secret, compact.as_str()] {
            forms.push(url::form_urlencoded::byte_serialize(form.as_bytes()).collect());
            forms.push(
                url::form_urlencoded::byte_serialize(form.as_bytes())
                    .collect::<String>()
                    .replace('+', "%20"),
            );
            let json = serde_json::to_string(form).expect("a string serializes");
            let json = &json[1..json.len() - 1];
            forms.push(json.to_owned());
            // PHP's json_encode (WordPress, many webhook receivers) escapes `/` as `\/`
            // and, by default, every non-ASCII character as `\uXXXX`.
            forms.push(json.replace('/', "\\/"));
            forms.push(json_ascii_escaped(form));
            forms.extend(html_escaped_forms(form));
            forms.extend(base64_forms(form));
        }
        self.push(forms);
    }

    fn push(&mut self, forms: impl IntoIterator<Item = String>) {
        for form in forms {
            if form.len() >= 4
                && !self
                    .secrets
                    .iter()
                    .any(|known| known.expose_secret() == form)
            {
                self.secrets.push(SecretString::from(form));
            }
        }
        // Longest first: a form that contains another is replaced whole.
        self.secrets
            .sort_by_key(|s| std::cmp::Reverse(s.expose_secret().len()));
    }

    /// `text` with every secret replaced by `[redacted]`, shortened to a summary.
    pub fn summary(&self, text: &str) -> String {
        truncate(self.redact(text).trim(), 300)
    }

    /// An excerpt of at most `max` characters of text a platform sent, redacted *before* it
    /// is shortened: shortening first could cut an echoed secret in two and leave a piece
    /// of it that no longer matches, so it would survive [`Redactor::summary`].
    pub fn excerpt(&self, text: &str, max: usize) -> String {
        truncate(&self.redact(text), max)
    }

    /// `text` with every known secret form and every credential pattern replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            out = out.replace(secret.expose_secret(), "[redacted]");
        }
        scrub_credentials(&out)
    }
}

/// `text` as PHP's `json_encode` writes it inside quotes by default: JSON escapes, `/` as
/// `\/`, and every character outside ASCII as `\uXXXX` (UTF-16).
fn json_ascii_escaped(text: &str) -> String {
    let json = serde_json::to_string(text).expect("a string serializes");
    let mut out = String::with_capacity(json.len());
    for c in json[1..json.len() - 1].chars() {
        match c {
            '/' => out.push_str("\\/"),
            c if c.is_ascii() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out
}

/// `text` as HTML escapers write it: `&`, `<`, `>`, `"`, `'` (and, for some, `/`) as
/// named or numeric entities, in the spellings common escapers use (a site that echoes a
/// request into an HTML error page escapes it so).
fn html_escaped_forms(text: &str) -> Vec<String> {
    const SPELLINGS: [[&str; 6]; 3] = [
        // &, <, >, ", ', /
        ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;", "/"],
        ["&amp;", "&lt;", "&gt;", "&quot;", "&#039;", "/"],
        ["&amp;", "&lt;", "&gt;", "&#34;", "&#x27;", "&#x2F;"],
    ];
    SPELLINGS
        .iter()
        .map(|entities| {
            let mut out = String::with_capacity(text.len());
            for c in text.chars() {
                match c {
                    '&' => out.push_str(entities[0]),
                    '<' => out.push_str(entities[1]),
                    '>' => out.push_str(entities[2]),
                    '"' => out.push_str(entities[3]),
                    '\'' => out.push_str(entities[4]),
                    '/' => out.push_str(entities[5]),
                    c => out.push(c),
                }
            }
            out
        })
        .collect()
}

/// Standard and URL-safe base64, padded and not, of `text`.
fn base64_forms(text: &str) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .map(|engine| engine.encode(text.as_bytes()))
        .collect()
}

/// Replaces credentials found by pattern, whoever they belong to: the value of an
/// `Authorization` header or field, and the token after `Bearer` or `Basic`.
pub fn scrub_credentials(text: &str) -> String {
    let scrubbed = scrub_after_keyword(text, "authorization", true);
    let scrubbed = scrub_after_keyword(&scrubbed, "bearer", false);
    scrub_after_keyword(&scrubbed, "basic", false)
}

/// Replaces what follows each case-insensitive `keyword`: for a header name
/// (`authorization`), the value after a `:` or `=` (quotes allowed) up to the end of the
/// line or the closing quote; for a scheme (`bearer`, `basic`), the token after the
/// spaces, when it looks like a credential (at least 8 token characters).
fn scrub_after_keyword(text: &str, keyword: &str, header: bool) -> String {
    let lower = text.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = lower[from..].find(keyword) {
        let start = from + found;
        let mut at = start + keyword.len();
        from = at;
        // A keyword inside a longer word (`basically`, `unauthorization`) is not one.
        let before_ok = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        if !before_ok || bytes.get(at).is_some_and(|b| b.is_ascii_alphanumeric()) {
            continue;
        }
        let value_start;
        let value_end;
        if header {
            // `Authorization: x`, `authorization=x`, `"authorization": "x"`.
            while at < bytes.len() && matches!(bytes[at], b'"' | b'\'' | b' ' | b'\t') {
                at += 1;
            }
            if at >= bytes.len() || !matches!(bytes[at], b':' | b'=') {
                continue;
            }
            at += 1;
            while at < bytes.len() && matches!(bytes[at], b' ' | b'\t') {
                at += 1;
            }
            let quote = bytes.get(at).copied().filter(|b| matches!(b, b'"' | b'\''));
            if quote.is_some() {
                at += 1;
            }
            value_start = at;
            let mut end = at;
            while end < bytes.len() {
                let b = bytes[end];
                // Inside quotes, an escaped quote (`\"`) does not close the value.
                if quote.is_some() && b == b'\\' && end + 1 < bytes.len() {
                    end += 2;
                    continue;
                }
                if b == b'\n' || b == b'\r' || Some(b) == quote || (quote.is_none() && b == b',') {
                    break;
                }
                end += 1;
            }
            value_end = end;
        } else {
            let spaces = at;
            while at < bytes.len() && matches!(bytes[at], b' ' | b'\t') {
                at += 1;
            }
            if at == spaces {
                continue;
            }
            value_start = at;
            // To the end of the token, whatever it is made of: an escape (`\/`, `\"`,
            // `\u0026`) or an entity (`&amp;`) inside it does not end it; only what
            // separates words in the text around it does.
            let mut end = at;
            let mut word_chars = 0;
            while end < bytes.len() {
                let b = bytes[end];
                if b == b'\\' && end + 1 < bytes.len() {
                    end += 2;
                    continue;
                }
                if b.is_ascii_whitespace()
                    || matches!(b, b'"' | b'\'' | b',' | b'<' | b'>' | b')' | b']' | b'}')
                {
                    break;
                }
                if b.is_ascii_alphanumeric() {
                    word_chars += 1;
                }
                end += 1;
            }
            // `Bearer of news`: a scheme word followed by an ordinary word is not a credential.
            if end - value_start < 8 || word_chars < 4 {
                continue;
            }
            value_end = end;
        }
        if value_end > value_start && &text[value_start..value_end] != "[redacted]" {
            out.push_str(&text[copied..value_start]);
            out.push_str("[redacted]");
            copied = value_end;
            from = value_end;
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_must_be_https_unless_loopback() {
        assert_eq!(
            check_base_url("https://graph.threads.net/").unwrap(),
            "https://graph.threads.net"
        );
        assert!(check_base_url("http://127.0.0.1:8080").is_ok());
        assert!(check_base_url("http://localhost:9").is_ok());
        assert!(check_base_url("http://[::1]:9").is_ok());
        for bad in [
            "http://graph.threads.net",
            "http://10.0.0.1",
            "ftp://x.example",
            "https://user:pw@x.example",
            "https://x.example/?a=1",
            "graph.threads.net",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls_are_shown_without_their_secrets() {
        assert_eq!(
            without_secrets("postgres://airlock:s3cret-pw@db.example:5432/airlock"),
            "postgres://***@db.example:5432/airlock"
        );
        assert_eq!(
            without_secrets("postgres://db.example/airlock?sslmode=require&password=s3cret-pw"),
            "postgres://db.example/airlock?sslmode=require&password=***"
        );
        assert_eq!(
            without_secrets("postgres://airlock@db.example/airlock"),
            "postgres://***@db.example/airlock"
        );
        assert_eq!(
            without_secrets("sqlite:///srv/airlock.db"),
            "sqlite:///srv/airlock.db"
        );
        // Not parseable (bad port), still cut.
        let shown = without_secrets("postgres://u:s3cret-pw@db.example:99999/x");
        assert!(!shown.contains("s3cret"), "{shown}");
        let err = check_base_url("https://user:s3cret-pw@x.example").unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert!(err.to_string().contains("credentials"), "{err}");
    }

    #[test]
    fn endpoints_encode_segments_and_query() {
        assert_eq!(
            endpoint(
                "https://graph.threads.net",
                &["v1.0", "me", "threads_publish"],
                &[("creation_id", "17")]
            ),
            "https://graph.threads.net/v1.0/me/threads_publish?creation_id=17"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:9/blog", &["wp-json", "a/b"], &[]),
            "http://127.0.0.1:9/blog/wp-json/a%2Fb"
        );
        assert_eq!(form_body(&[("text", "a b&c")]), "text=a+b%26c");
    }

    #[test]
    fn rate_limit_resets_are_read_in_every_form_platforms_send() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let wait = |name: &'static str, value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, value.parse().unwrap());
            rate_limit_wait(&headers, now)
        };
        // Bluesky and X: unix seconds.
        let in_90s = (now.timestamp() + 90).to_string();
        assert_eq!(
            wait("ratelimit-reset", &in_90s),
            Some(Duration::seconds(90))
        );
        assert_eq!(
            wait("x-rate-limit-reset", &in_90s),
            Some(Duration::seconds(90))
        );
        // Mastodon: an ISO 8601 time.
        assert_eq!(
            wait("x-ratelimit-reset", "2026-12-01T00:05:00.000Z"),
            Some(Duration::minutes(5))
        );
        // Seconds from now; a reset in the past waits nothing; Retry-After wins.
        assert_eq!(wait("ratelimit-reset", "30"), Some(Duration::seconds(30)));
        let past = (now.timestamp() - 90).to_string();
        assert_eq!(wait("ratelimit-reset", &past), Some(Duration::zero()));
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "7".parse().unwrap());
        headers.insert("x-rate-limit-reset", in_90s.parse().unwrap());
        assert_eq!(rate_limit_wait(&headers, now), Some(Duration::seconds(7)));
        assert_eq!(rate_limit_wait(&HeaderMap::new(), now), None);
    }

    #[test]
    fn one_status_table_in_each_platforms_words_and_waits() {
        use crate::StepError;
        let answer = |status: u16, header: Option<(&'static str, &str)>, body: &str| {
            let mut headers = HeaderMap::new();
            if let Some((name, value)) = header {
                headers.insert(name, value.parse().unwrap());
            }
            Answer {
                status,
                headers,
                body: Some(body.to_owned()),
            }
        };
        let plain = StatusTable::PLAIN;
        let worded = StatusTable {
            credential_hint: Some("replace the token"),
            step_throttled: Some("busy"),
            publish_throttled: Some("busy posting"),
            unknown: Some("a person settles it"),
            wait: Wait::RateLimit,
        };
        let throttled = answer(429, None, "");
        // The irreversible request: "not now" always carries a wait.
        assert_eq!(
            plain.outcome(&throttled, "r".into()),
            Outcome::NotSent {
                reason: "r".into(),
                retry_after: Some(default_retry_after())
            }
        );
        assert_eq!(
            worded.outcome(&throttled, "r".into()),
            Outcome::NotSent {
                reason: "r: busy posting".into(),
                retry_after: Some(default_retry_after())
            }
        );
        // A repeatable step: without Retry-After only the rate-limit readers assume one.
        assert_eq!(
            plain.step_error(&throttled, "r".into()),
            StepError::Transient {
                reason: "r".into(),
                retry_after: None
            }
        );
        assert_eq!(
            worded.step_error(&throttled, "r".into()),
            StepError::Transient {
                reason: "r: busy".into(),
                retry_after: Some(default_retry_after())
            }
        );
        let reset = answer(503, Some(("ratelimit-reset", "30")), "");
        assert_eq!(plain.wait(&reset), None);
        assert_eq!(worded.wait(&reset), Some(Duration::seconds(30)));
        assert_eq!(
            worded.outcome(&reset, "r".into()),
            Outcome::Unknown {
                reason: "r: a person settles it".into()
            }
        );
        assert_eq!(
            worded.outcome(&answer(403, None, ""), "r".into()),
            Outcome::Rejected {
                reason: "r: replace the token".into(),
                credential: true
            }
        );
        assert_eq!(
            worded.step_error(&answer(422, None, ""), "r".into()),
            StepError::Rejected {
                reason: "r".into(),
                credential: false
            }
        );
        // A wait in the body, read by the platform's own rule.
        let in_body = StatusTable {
            wait: Wait::Body(|answer| {
                answer.json()?["retry_after"]
                    .as_i64()
                    .map(Duration::seconds)
            }),
            ..StatusTable::PLAIN
        };
        let answer = answer(429, Some(("retry-after", "5")), r#"{"retry_after": 35}"#);
        assert_eq!(in_body.wait(&answer), Some(Duration::seconds(35)));
        assert_eq!(plain.wait(&answer), Some(Duration::seconds(5)));
    }

    #[test]
    fn retry_after_reads_seconds() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "120".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::seconds(120)));
        headers.insert(RETRY_AFTER, "1.5".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::milliseconds(1500)));
        for absurd in ["99999999999999", "1e308"] {
            headers.insert(RETRY_AFTER, absurd.parse().unwrap());
            assert_eq!(retry_after(&headers), Some(Duration::days(366)), "{absurd}");
        }
        headers.insert(RETRY_AFTER, "-5".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
        let in_two_minutes = (chrono::Utc::now() + Duration::seconds(120))
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        headers.insert(RETRY_AFTER, in_two_minutes.parse().unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::seconds(110) && wait <= Duration::seconds(120),
            "{wait:?}"
        );
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), Some(Duration::zero()));
        headers.insert(RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn every_derived_form_of_a_basic_credential_is_redacted() {
        use base64::Engine;
        let password = SecretString::from("abcd EFGH ijkl MNOP".to_owned());
        let redactor = Redactor::basic("editor", &password);
        let basic = base64::engine::general_purpose::STANDARD.encode("editor:abcd EFGH ijkl MNOP");
        let compact_basic =
            base64::engine::general_purpose::STANDARD.encode("editor:abcdEFGHijklMNOP");
        let echoes = [
            "abcd EFGH ijkl MNOP".to_owned(),
            "abcdEFGHijklMNOP".to_owned(),
            "abcd%20EFGH%20ijkl%20MNOP".to_owned(),
            "abcd+EFGH+ijkl+MNOP".to_owned(),
            basic.clone(),
            compact_basic.clone(),
            format!("{{\"headers\": {{\"Authorization\": \"Basic {basic}\"}}}}"),
        ];
        for echo in echoes {
            let shown = redactor.summary(&format!("rest_forbidden: you sent {echo} here"));
            for needle in ["abcd", "EFGH", "MNOP", &basic[..12], &compact_basic[..12]] {
                assert!(!shown.contains(needle), "{needle} survived in {shown}");
            }
            assert!(shown.contains("[redacted]"), "{shown}");
        }
    }

    #[test]
    fn credentials_are_scrubbed_by_pattern_even_when_unknown() {
        let redactor = Redactor::default();
        for (text, leaked) in [
            (
                "Authorization: Basic dXNlcjpwYXNz\nX-Other: 1",
                "dXNlcjpwYXNz",
            ),
            ("authorization=Bearer something-secret", "something-secret"),
            (r#"{"authorization":"Bearer tok.abc.def"}"#, "tok.abc.def"),
            (
                "got bearer   eyJhbGciOiJIUzI1NiJ9.x.y back",
                "eyJhbGciOiJIUzI1NiJ9",
            ),
            ("basic Zm9vOmJhcmJhemJheg== rejected", "Zm9vOmJhcmJhemJheg"),
        ] {
            let shown = redactor.summary(text);
            assert!(!shown.contains(leaked), "{leaked} survived in {shown}");
        }
        // Ordinary words stay.
        assert_eq!(
            redactor.summary("basically the basic plan; Bearer of news"),
            "basically the basic plan; Bearer of news"
        );
        assert_eq!(
            redactor.summary("X-Other: 1\nAuthorization: Bearer abcdefghij\nok"),
            "X-Other: 1\nAuthorization: [redacted]\nok"
        );
    }

    #[test]
    fn html_escaped_and_php_json_forms_of_a_secret_are_redacted() {
        let secret = "p@ss/w&rd<1>\"q'é";
        let redactor = Redactor::new([SecretString::from(secret.to_owned())]);
        let echoes = [
            // HTML error pages.
            "p@ss/w&amp;rd&lt;1&gt;&quot;q&#39;é",
            "p@ss/w&amp;rd&lt;1&gt;&quot;q&#039;é",
            "p@ss&#x2F;w&amp;rd&lt;1&gt;&#34;q&#x27;é",
            // PHP's json_encode: `\/`, and `\u00e9` for é.
            "p@ss\\/w&rd<1>\\\"q'é",
            "p@ss\\/w&rd<1>\\\"q'\\u00e9",
        ];
        for echo in echoes {
            let shown = redactor.summary(&format!("error: you sent {echo} here"));
            assert!(!shown.contains("p@ss"), "{echo} survived as {shown}");
            assert!(!shown.contains("rd"), "{echo} survived as {shown}");
            assert!(shown.contains("[redacted]"), "{shown}");
        }
    }

    #[test]
    fn bearer_and_basic_values_are_scrubbed_to_the_end_of_the_token() {
        let redactor = Redactor::default();
        for (text, tail) in [
            ("echo: Bearer abcd1234\\/efgh5678 end", "efgh5678"),
            ("echo: Bearer abcd1234&amp;efgh5678 end", "efgh5678"),
            ("echo: Bearer abcd1234\\u0026efgh5678 end", "efgh5678"),
            ("echo: Basic dXNlcjpw&#x2F;YXNzd29yZA== end", "YXNzd29yZA"),
            (
                r#"{"authorization":"Bearer abcd1234\"efgh5678"}"#,
                "efgh5678",
            ),
        ] {
            let shown = redactor.summary(text);
            assert!(
                !shown.contains("abcd1234") && !shown.contains(tail),
                "{text} became {shown}"
            );
            assert!(shown.ends_with("end") || shown.ends_with('}'), "{shown}");
        }
    }

    #[test]
    fn redactor_scrubs_secrets() {
        let redactor = Redactor::new([SecretString::from("tok-canary-123".to_owned())]);
        assert_eq!(
            redactor.summary("bad token tok-canary-123 given"),
            "bad token [redacted] given"
        );
        assert_eq!(truncate("abcdef", 3), "abc…");
    }

    #[test]
    fn an_excerpt_is_redacted_before_it_is_cut_so_no_piece_of_a_secret_survives() {
        let redactor = Redactor::new([SecretString::from("tok-canary-123".to_owned())]);
        let echoed = "authorization: Bearer tok-canary-123";
        // Cut inside the secret: "…Bearer tok-cana" would no longer match it.
        let excerpt = redactor.excerpt(echoed, 26);
        assert!(!excerpt.contains("tok-"), "{excerpt}");
        assert_eq!(excerpt, "authorization: [redacted]");
        let excerpt = redactor.excerpt("you sent tok-canary-123 twice", 14);
        assert_eq!(excerpt, "you sent [reda…");
    }
}
