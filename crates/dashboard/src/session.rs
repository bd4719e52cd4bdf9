//! Sessions, CSRF tokens, cookies and flash messages.
//!
//! A session is a random 256-bit id in a cookie (`airlock_session`, `HttpOnly;
//! SameSite=Strict; Path=/`; behind HTTPS it is `__Host-airlock_session` with `Secure`). The ledger keeps it, as the
//! SHA-256 of the id next to the hash of the operator token it was opened with and its
//! expiry ([`airlock_app::sessions`]), so a restart or an upgrade of `serve` signs
//! nobody out; every request re-authenticates that token, so revoking the token ends
//! its sessions. Flash messages are the only session state kept in memory: losing one
//! in a restart loses a notice, never a sign-in.
//!
//! CSRF tokens are not stored: a session's token is an HMAC keyed by its (secret)
//! session id, and the login form's token an HMAC, keyed by a server secret kept in the
//! ledger ([`airlock_app::sessions::LOGIN_CSRF_SECRET`]), of a random nonce kept in a
//! pre-session cookie (`airlock_login`). The nonce alone is not enough: someone able to
//! set a cookie for the dashboard's site (another port on `localhost`, a sibling
//! subdomain) chooses the nonce but cannot make its token without the server's key.
//! Both survive a restart (the key is in the ledger), so a form left open across an
//! upgrade still submits. Both are checked in constant time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, HeaderValue, header};
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

use airlock_app::App;
use airlock_app::sessions::SessionState;

use crate::DashboardSettings;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "airlock_session";
/// The pre-session cookie that carries the login form's CSRF nonce.
pub const LOGIN_COOKIE: &str = "airlock_login";
/// The form field that carries the CSRF token on every form.
pub const CSRF_FIELD: &str = "csrf";

/// At most this many sessions have pending flash messages; past it, the oldest go.
const MAX_FLASH_SESSIONS: usize = 1000;

/// The dashboard's state: the app, its settings and pending flash messages.
/// Cheap to clone.
#[derive(Clone)]
pub struct Dashboard {
    inner: Arc<Inner>,
}

struct Inner {
    app: App,
    settings: DashboardSettings,
    flashes: Mutex<HashMap<[u8; 32], Vec<Flash>>>,
    login_key: tokio::sync::OnceCell<SecretString>,
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
    /// The state for one router.
    pub fn new(app: App, settings: DashboardSettings) -> Self {
        Dashboard {
            inner: Arc::new(Inner {
                app,
                settings,
                flashes: Mutex::new(HashMap::new()),
                login_key: tokio::sync::OnceCell::new(),
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

    /// Opens a session in the ledger for a token that has just been checked; returns
    /// the cookie value.
    pub async fn open(&self, token: &SecretString) -> airlock_app::Result<String> {
        let ttl = chrono::Duration::from_std(self.inner.settings.session_ttl)
            .unwrap_or(chrono::Duration::hours(12));
        let cookie = self.inner.app.open_session(token, ttl).await?;
        Ok(cookie.expose_secret().to_owned())
    }

    /// What the cookie's session stands for now (an expired or revoked one is ended).
    pub async fn session(&self, cookie: &str) -> airlock_app::Result<SessionState> {
        self.inner.app.session(cookie).await
    }

    /// Whether the cookie names a session (live or not yet noticed as expired).
    pub async fn exists(&self, cookie: &str) -> airlock_app::Result<bool> {
        self.inner.app.session_exists(cookie).await
    }

    /// Ends a session and drops its pending messages.
    pub async fn end(&self, cookie: &str) -> airlock_app::Result<()> {
        self.lock().remove(&lookup_key(cookie));
        self.inner.app.end_session(cookie).await.map(|_| ())
    }

    /// Queues a message for the session's next page.
    pub fn flash(&self, cookie: &str, flash: Flash) {
        let mut flashes = self.lock();
        if flashes.len() >= MAX_FLASH_SESSIONS {
            // Messages nobody came back for; a notice lost is harmless.
            flashes.clear();
        }
        flashes.entry(lookup_key(cookie)).or_default().push(flash);
    }

    /// Takes the session's pending messages.
    pub fn take_flashes(&self, cookie: &str) -> Vec<Flash> {
        self.lock().remove(&lookup_key(cookie)).unwrap_or_default()
    }

    /// The CSRF token of a session's forms.
    pub fn session_csrf(&self, cookie: &str) -> String {
        hex::encode(mac("session", cookie).finalize().into_bytes())
    }

    /// Whether `token` is the CSRF token of the session named by `cookie`.
    pub fn check_session_csrf(&self, cookie: &str, token: &str) -> bool {
        verify(mac("session", cookie), token)
    }

    /// A fresh nonce for the login form's pre-session cookie.
    pub fn login_nonce(&self) -> String {
        hex::encode(random_bytes())
    }

    /// The CSRF token of a login form whose pre-session cookie holds `nonce`: an HMAC of
    /// the nonce keyed by the server's login key (read from the ledger once).
    pub async fn login_csrf(&self, nonce: &str) -> airlock_app::Result<String> {
        Ok(hex::encode(
            self.login_mac(nonce).await?.finalize().into_bytes(),
        ))
    }

    /// Whether `token` is the login form's CSRF token for `nonce`.
    pub async fn check_login_csrf(&self, nonce: &str, token: &str) -> airlock_app::Result<bool> {
        Ok(verify(self.login_mac(nonce).await?, token))
    }

    async fn login_mac(&self, nonce: &str) -> airlock_app::Result<Hmac<Sha256>> {
        let key = self
            .inner
            .login_key
            .get_or_try_init(|| {
                self.inner
                    .app
                    .server_secret(airlock_app::sessions::LOGIN_CSRF_SECRET)
            })
            .await?;
        let mut mac = Hmac::<Sha256>::new_from_slice(key.expose_secret().as_bytes())
            .expect("HMAC takes any key length");
        mac.update(b"airlock dashboard csrf:login:");
        mac.update(nonce.as_bytes());
        Ok(mac)
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Vec<Flash>>> {
        // A panic while holding the lock leaves plain data behind; keep serving.
        self.inner
            .flashes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// An HMAC keyed by a secret cookie value (a session id or a login nonce): only the
/// holder of the cookie can make it, in this process or the next.
fn mac(purpose: &str, secret: &str) -> Hmac<Sha256> {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(b"airlock dashboard csrf:");
    mac.update(purpose.as_bytes());
    mac
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
