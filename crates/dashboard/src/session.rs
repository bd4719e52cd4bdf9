//! Sessions, CSRF tokens, cookies and flash messages.
//!
//! A session lives only in this process's memory: a random 256-bit id in a cookie
//! (`airlock_session`, `HttpOnly; SameSite=Strict; Path=/`; behind HTTPS it is
//! `__Host-airlock_session` with `Secure`), mapped by its SHA-256 to the operator token it was opened with, an
//! expiry and pending flash messages. The token is kept so that [`crate::auth`] can
//! re-authenticate it on every request: revoking the token ends its sessions.
//!
//! CSRF tokens are not stored: a session's token is an HMAC of its id under a key made
//! at start-up, and the login form's token is an HMAC of a random nonce kept in a
//! pre-session cookie (`airlock_login`). Neither can be made without the key, and both
//! are checked in constant time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, HeaderValue, header};
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use secrecy::SecretString;
use sha2::{Digest, Sha256};

use airlock_app::App;

use crate::DashboardSettings;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "airlock_session";
/// The pre-session cookie that carries the login form's CSRF nonce.
pub const LOGIN_COOKIE: &str = "airlock_login";
/// The form field that carries the CSRF token on every form.
pub const CSRF_FIELD: &str = "csrf";

/// At most this many sessions live at once; the oldest is dropped past it.
const MAX_SESSIONS: usize = 1000;

/// The dashboard's state: the app, its settings, live sessions and the CSRF key.
/// Cheap to clone.
#[derive(Clone)]
pub struct Dashboard {
    inner: Arc<Inner>,
}

struct Inner {
    app: App,
    settings: DashboardSettings,
    key: [u8; 32],
    sessions: Mutex<HashMap<[u8; 32], Session>>,
}

/// One signed-in browser.
struct Session {
    token: SecretString,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    flashes: Vec<Flash>,
}

/// A message shown once, on the next page, after an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    /// Whether it reports a success or a refusal/failure.
    pub kind: FlashKind,
    /// The text (escaped when shown).
    pub message: String,
}

/// What a [`Flash`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlashKind {
    /// The action happened.
    Done,
    /// The app refused or the action failed; the message says what to do.
    Refused,
}

impl Flash {
    /// A success message.
    pub fn done(message: impl Into<String>) -> Self {
        Flash {
            kind: FlashKind::Done,
            message: message.into(),
        }
    }

    /// A refusal or failure message.
    pub fn refused(message: impl Into<String>) -> Self {
        Flash {
            kind: FlashKind::Refused,
            message: message.into(),
        }
    }

    /// The CSS class suffix: `done` or `refused`.
    pub fn class(&self) -> &'static str {
        match self.kind {
            FlashKind::Done => "done",
            FlashKind::Refused => "refused",
        }
    }

    /// The ARIA role: `status` for a success, `alert` for a refusal.
    pub fn role(&self) -> &'static str {
        match self.kind {
            FlashKind::Done => "status",
            FlashKind::Refused => "alert",
        }
    }
}

impl std::fmt::Debug for Dashboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dashboard")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl Dashboard {
    /// The state for one router, with a fresh CSRF key and no sessions.
    pub fn new(app: App, settings: DashboardSettings) -> Self {
        Dashboard {
            inner: Arc::new(Inner {
                app,
                settings,
                key: random_bytes(),
                sessions: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The guarded operations.
    pub fn app(&self) -> &App {
        &self.inner.app
    }

    /// The settings.
    pub fn settings(&self) -> &DashboardSettings {
        &self.inner.settings
    }

    /// Opens a session for a token that has just been checked; returns the cookie value.
    pub fn open(&self, token: SecretString) -> String {
        let id = random_bytes();
        let now = self.inner.app.now();
        let ttl = chrono::Duration::from_std(self.inner.settings.session_ttl)
            .unwrap_or(chrono::Duration::hours(12));
        let mut sessions = self.lock();
        sessions.retain(|_, s| s.expires_at > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.created_at)
                .map(|(k, _)| *k)
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            lookup_key(&hex::encode(id)),
            Session {
                token,
                created_at: now,
                expires_at: now + ttl,
                flashes: Vec::new(),
            },
        );
        hex::encode(id)
    }

    /// The token of a live session, or `None` when the cookie names no session or it
    /// expired (an expired session is removed).
    pub fn token(&self, cookie: &str) -> Option<SecretString> {
        let key = lookup_key(cookie);
        let now = self.inner.app.now();
        let mut sessions = self.lock();
        match sessions.get(&key) {
            Some(session) if session.expires_at > now => Some(session.token.clone()),
            Some(_) => {
                sessions.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Whether the cookie names a session (live or not yet noticed as expired).
    pub fn exists(&self, cookie: &str) -> bool {
        self.lock().contains_key(&lookup_key(cookie))
    }

    /// Ends a session.
    pub fn end(&self, cookie: &str) {
        self.lock().remove(&lookup_key(cookie));
    }

    /// Queues a message for the session's next page.
    pub fn flash(&self, cookie: &str, flash: Flash) {
        if let Some(session) = self.lock().get_mut(&lookup_key(cookie)) {
            session.flashes.push(flash);
        }
    }

    /// Takes the session's pending messages.
    pub fn take_flashes(&self, cookie: &str) -> Vec<Flash> {
        self.lock()
            .get_mut(&lookup_key(cookie))
            .map(|s| std::mem::take(&mut s.flashes))
            .unwrap_or_default()
    }

    /// The CSRF token of a session's forms.
    pub fn session_csrf(&self, cookie: &str) -> String {
        hex::encode(self.mac("session", cookie).finalize().into_bytes())
    }

    /// Whether `token` is the CSRF token of the session named by `cookie`.
    pub fn check_session_csrf(&self, cookie: &str, token: &str) -> bool {
        verify(self.mac("session", cookie), token)
    }

    /// A fresh nonce for the login form's pre-session cookie.
    pub fn login_nonce(&self) -> String {
        hex::encode(random_bytes())
    }

    /// The CSRF token of a login form whose pre-session cookie holds `nonce`.
    pub fn login_csrf(&self, nonce: &str) -> String {
        hex::encode(self.mac("login", nonce).finalize().into_bytes())
    }

    /// Whether `token` is the login form's CSRF token for `nonce`.
    pub fn check_login_csrf(&self, nonce: &str, token: &str) -> bool {
        verify(self.mac("login", nonce), token)
    }

    /// The name a cookie goes by: `name` itself, or, with secure cookies (the dashboard
    /// is reached over HTTPS), `__Host-<name>`, which browsers accept only with `Secure`,
    /// `Path=/` and no `Domain`, so no other site or subdomain can set or shadow it.
    pub fn cookie_name(&self, name: &str) -> String {
        if self.inner.settings.secure_cookies {
            format!("__Host-{name}")
        } else {
            name.to_owned()
        }
    }

    /// A `Set-Cookie` value with the dashboard's flags: `HttpOnly; SameSite=Strict`,
    /// the path, and `Max-Age` when given (`0` deletes). With secure cookies, the name
    /// takes the `__Host-` prefix ([`Dashboard::cookie_name`]), the path is `/` (the
    /// prefix requires it) and `Secure` is added.
    pub fn cookie(&self, name: &str, value: &str, path: &str, max_age: Option<u64>) -> HeaderValue {
        let secure = self.inner.settings.secure_cookies;
        let path = if secure { "/" } else { path };
        let name = self.cookie_name(name);
        let mut cookie = format!("{name}={value}; HttpOnly; SameSite=Strict; Path={path}");
        if let Some(age) = max_age {
            cookie.push_str(&format!("; Max-Age={age}"));
        }
        if secure {
            cookie.push_str("; Secure");
        }
        HeaderValue::from_str(&cookie).expect("cookie values are hex and fixed names")
    }

    fn mac(&self, purpose: &str, value: &str) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.inner.key).expect("HMAC takes any key length");
        mac.update(purpose.as_bytes());
        mac.update(b":");
        mac.update(value.as_bytes());
        mac
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Session>> {
        // A panic while holding the lock leaves plain data behind; keep serving.
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The value of cookie `name` in a request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

fn verify(mac: Hmac<Sha256>, token: &str) -> bool {
    match hex::decode(token.trim()) {
        Ok(bytes) => mac.verify_slice(&bytes).is_ok(),
        Err(_) => false,
    }
}

fn lookup_key(cookie: &str) -> [u8; 32] {
    Sha256::digest(cookie.as_bytes()).into()
}

fn random_bytes() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_among_several_headers() {
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, HeaderValue::from_static("a=1; b=2"));
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("airlock_session=abc"),
        );
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("abc"));
        assert_eq!(cookie(&headers, "c"), None);
    }
}
