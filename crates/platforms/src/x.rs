//! `x`: posts on X through API v2 with an OAuth 2.0 user token.
//!
//! A part's path through the adapter (a single post is part 1 of 1):
//! 1. [`Platform::account`]: `GET /2/users/me`; its `username` is what the channel's
//!    `account` is compared with.
//! 2. [`Platform::prepare`] (repeatable): renews the access token when the token file
//!    says it expires within [`REFRESH_MARGIN`]. A later part whose earlier attempt may
//!    have gone out is looked for first ([`Platform::reconcile`]'s read): found, nothing
//!    is sent. Then the part's images (up to [`MAX_IMAGES`]) are downloaded, checked
//!    against their approved SHA-256, and uploaded (`POST /2/media/upload`, multipart,
//!    `media_category=tweet_image`); their media ids are the intent's handle
//!    (comma-separated). An upload that fails is a step error: no post is made.
//! 3. [`Platform::publish`] (irreversible, once): `POST /2/tweets` with the text (and, on
//!    part 1, the link appended when the text lacks it), the media ids, and for a later
//!    part (a thread's part k, or the first comment, a reply to the last part)
//!    `reply.in_reply_to_tweet_id` = the part before. A 401 proves nothing was posted:
//!    with a refresh token the access token is renewed and the post sent once more.
//! 4. [`Platform::verify`]: `GET /2/tweets/{id}`.
//! 5. [`Platform::reconcile`]: part 1 has nothing to be found by (X has no idempotency
//!    key), so it waits for a person. A later part is found by one read of the account's
//!    own timeline since the part before (`GET /2/users/{id}/tweets?since_id=…`): a post
//!    that replies to the part before with this part's text proves it. Absence proves
//!    nothing (the read may be late, or the post beyond its page).
//!
//! X's `403` "duplicate content" names no earlier post, so it never proves this post was
//! published: the post fails with the reason, or — when an earlier attempt of this post
//! had an outcome that may have published it — waits for a person.
//!
//! **The token file** holds either the access token alone, or a JSON object
//! `{"access_token", "refresh_token", "client_id", "client_secret"?, "expires_at"?}`.
//! With a refresh token and client id the adapter renews the access token at
//! `POST /2/oauth2/token` (the refresh token travels in that request's body to X's own
//! token endpoint, as OAuth 2.0 requires; a confidential client's secret in its `Basic`
//! header) and, since X rotates refresh tokens, writes the new pair back to the file
//! before using it: a new file beside it, mode 0600, synced, renamed over the old one.
//! Before renewing it re-reads the file, so a token another airlock process rotated is
//! used rather than refreshed again — once `/2/users/me` says it is the checked
//! account's: another account's token there is a credential refusal. The access token travels only in the
//! `Authorization: Bearer` header.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use airlock_core::budget::{Budget, Costs, parse_usd};
use airlock_core::{ChannelKind, ChannelName, Outcome, Published};

use crate::http::{
    Answer, MediaFile, Redactor, StatusTable, Wait, check_base_url, describe_transport, endpoint,
    fetch_media, form_body, id_string, multipart, send, transport_failure,
};
use crate::kind::{Common, KindConfig, read_token};
use crate::{
    Account, Evidence, Platform, Prepared, Proof, PublishRequest, ReconcileRequest, SettingsError,
    StepError, Verification,
};

/// The X API host.
pub const DEFAULT_BASE_URL: &str = "https://api.x.com";

/// How long before its recorded expiry an access token is renewed.
pub const REFRESH_MARGIN: Duration = Duration::minutes(5);

/// The most images on one post.
pub const MAX_IMAGES: usize = 4;

/// The largest image X takes by the simple upload (5 MB).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// How many of the account's posts since the part before one reconcile read looks at
/// (X's largest page).
pub const TIMELINE_PAGE: u32 = 100;

/// What a token file holds.
#[derive(Clone)]
pub struct Credential {
    /// The OAuth 2.0 user access token.
    pub access_token: SecretString,
    /// The refresh token (scope `offline.access`), if the file has one.
    pub refresh_token: Option<SecretString>,
    /// The app's OAuth 2.0 client id, needed to refresh.
    pub client_id: Option<String>,
    /// A confidential client's secret.
    pub client_secret: Option<SecretString>,
    /// When the access token expires, if known.
    pub expires_at: Option<DateTime<Utc>>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("client_id", &self.client_id)
            .field("refreshable", &self.refreshable())
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Why a token file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("token file {path}: {problem}")]
pub struct CredentialFileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong (never its content).
    pub problem: String,
}

impl Credential {
    /// Reads a token file's text: an access token alone, or the JSON object described in
    /// the module docs. Errors name the key, never a value.
    pub fn parse(text: &SecretString, path: &Path) -> Result<Credential, CredentialFileError> {
        let bad = |problem: &str| CredentialFileError {
            path: path.to_path_buf(),
            problem: problem.to_owned(),
        };
        let raw = text.expose_secret().trim();
        if !raw.starts_with('{') {
            if raw.is_empty() || raw.chars().any(char::is_whitespace) {
                return Err(bad("holds neither one access token nor a JSON object"));
            }
            return Ok(Credential {
                access_token: SecretString::from(raw.to_owned()),
                refresh_token: None,
                client_id: None,
                client_secret: None,
                expires_at: None,
            });
        }
        let value: Value =
            serde_json::from_str(raw).map_err(|_| bad("starts with { but is not a JSON object"))?;
        let object = value
            .as_object()
            .ok_or_else(|| bad("is not a JSON object"))?;
        for key in object.keys() {
            if !matches!(
                key.as_str(),
                "access_token" | "refresh_token" | "client_id" | "client_secret" | "expires_at"
            ) {
                return Err(bad(&format!(
                    "has an unknown key {key:?} (expected access_token, refresh_token, client_id, client_secret, expires_at)"
                )));
            }
        }
        let text = |key: &str| -> Result<Option<String>, CredentialFileError> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
                Some(_) => Err(bad(&format!("{key} must be a non-empty string"))),
            }
        };
        let access_token = text("access_token")?.ok_or_else(|| bad("lacks access_token"))?;
        let refresh_token = text("refresh_token")?;
        let client_id = text("client_id")?;
        if refresh_token.is_some() && client_id.is_none() {
            return Err(bad(
                "has a refresh_token but no client_id: add the app's OAuth 2.0 client id, which refreshing needs",
            ));
        }
        let expires_at = text("expires_at")?
            .map(|at| {
                DateTime::parse_from_rfc3339(&at)
                    .map(|at| at.to_utc())
                    .map_err(|_| bad("expires_at is not an RFC 3339 time"))
            })
            .transpose()?;
        Ok(Credential {
            access_token: SecretString::from(access_token),
            refresh_token: refresh_token.map(SecretString::from),
            client_id,
            client_secret: text("client_secret")?.map(SecretString::from),
            expires_at,
        })
    }

    /// Whether the access token can be renewed.
    pub fn refreshable(&self) -> bool {
        self.refresh_token.is_some() && self.client_id.is_some()
    }

    fn to_json(&self) -> String {
        let mut value = json!({"access_token": self.access_token.expose_secret()});
        if let Some(refresh) = &self.refresh_token {
            value["refresh_token"] = json!(refresh.expose_secret());
        }
        if let Some(id) = &self.client_id {
            value["client_id"] = json!(id);
        }
        if let Some(secret) = &self.client_secret {
            value["client_secret"] = json!(secret.expose_secret());
        }
        if let Some(at) = self.expires_at {
            value["expires_at"] = json!(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        }
        let mut text = serde_json::to_string_pretty(&value).expect("JSON serializes");
        text.push('\n');
        text
    }

    fn secrets(&self) -> Vec<SecretString> {
        let mut secrets = vec![self.access_token.clone()];
        secrets.extend(self.refresh_token.clone());
        secrets.extend(self.client_secret.clone());
        secrets
    }
}

/// Checks that the directory of a refreshable token file can be written (a file created
/// there and removed): X rotates the refresh token on every refresh, so airlock must
/// write the new pair back, or the file is left holding a spent token after a restart.
/// A bare access token is never rewritten. The message says what to do.
pub fn check_token_dir(token_file: &Path, credential: &Credential) -> Result<(), String> {
    if !credential.refreshable() {
        return Ok(());
    }
    let dir = token_dir(token_file);
    let mut random = [0u8; 6];
    let _ = getrandom::fill(&mut random);
    let probe = dir.join(format!(".airlock-write-check.{}", hex::encode(random)));
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&probe);
    match created {
        Ok(_) => std::fs::remove_file(&probe).map_err(|e| (dir, e)),
        Err(e) => Err((dir, e)),
    }
    .map_err(|(dir, e)| {
        format!(
            "the X token file {} holds a refresh token, which X rotates on every refresh, but its directory {} is not writable by airlock ({}): the rotated pair could not be written back, leaving a spent token after a restart. Make the directory writable for airlock (systemd: ReadWritePaths={}; a container: mount it read-write), or keep the file under airlock's state directory; or write a bare access token without refresh_token",
            token_file.display(),
            dir.display(),
            e.kind(),
            dir.display()
        )
    })
}

fn token_dir(token_file: &Path) -> &Path {
    match token_file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Takes the advisory lock (`flock`) of a token file, waiting for another process that
/// holds it: a lock file beside it (`.<name>.lock`), since the token file itself is
/// replaced on every write. Held from the re-read of the file through the refresh to the
/// write of the rotated pair, so two processes never spend the same refresh token.
fn lock_token_file(token_file: &Path) -> std::io::Result<std::fs::File> {
    let name = token_file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "token".into());
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(token_dir(token_file).join(format!(".{name}.lock")))?;
    lock.lock()?;
    Ok(lock)
}

/// Writes `text` to `path` atomically: a new file beside it (mode 0600, created
/// exclusively), written and synced, renamed over `path`, the directory synced.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "token".into());
    let mut random = [0u8; 6];
    let _ = getrandom::fill(&mut random);
    let temp = dir.join(format!(".{name}.{}.tmp", hex::encode(random)));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// How an `x` channel reaches its account. Built from the channel's table ([`XConfig`]).
#[derive(Debug, Clone)]
pub struct XSettings {
    /// The API host (default [`DEFAULT_BASE_URL`]); tests point it at a fake.
    pub base_url: String,
    /// The token file, re-read before a refresh and rewritten after one.
    pub token_file: PathBuf,
    /// What the token file held when the channel was built.
    pub credential: Credential,
    /// Bound on each request, the irreversible one included.
    pub request_timeout: StdDuration,
}

/// An `x` channel.
#[derive(Debug)]
pub struct X {
    base_url: String,
    token_file: PathBuf,
    client: reqwest::Client,
    timeout: StdDuration,
    // The current credential; the lock serializes renewals.
    credential: tokio::sync::Mutex<Credential>,
    // Every secret seen. Never held across an await.
    redactor: std::sync::Mutex<Redactor>,
    // The account's username, once read (for permalinks). Never held across an await.
    username: std::sync::Mutex<Option<String>>,
    // The account's id, as the account check read it: a token file this process did not
    // write must name it before it is used. Never held across an await.
    user_id: std::sync::Mutex<Option<String>>,
}

const CREDENTIAL_HINT: &str = "the token was refused (expired without a refresh token, revoked, or missing the tweet.read tweet.write users.read scopes, and media.write for images): write a new token to the token file, then resume the channel";

/// X answers by the outcome table, reading waits from its rate-limit headers; its
/// duplicate content and used-up credits are its own.
const STATUSES: StatusTable = StatusTable {
    credential_hint: Some(CREDENTIAL_HINT),
    step_throttled: Some("X limits requests now; nothing was published"),
    publish_throttled: Some("X limits posting now; nothing was published"),
    unknown: Some(
        "whether X made the post is unknown, and X has no key to find out: check the account and settle the post",
    ),
    wait: Wait::RateLimit,
};

/// The permalink of a post.
pub fn permalink(username: &str, id: &str) -> String {
    format!("https://x.com/{username}/status/{id}")
}

/// Whether an answer is X's refusal of duplicate content.
fn is_duplicate(answer: &Answer) -> bool {
    answer.status == 403
        && answer.json().is_some_and(|body| {
            let text = format!(
                "{} {}",
                body["detail"].as_str().unwrap_or(""),
                body["errors"][0]["message"].as_str().unwrap_or("")
            )
            .to_ascii_lowercase();
            text.contains("duplicate content")
        })
}

/// Every message of an X error answer, lowercased.
fn messages(answer: &Answer) -> String {
    let Some(body) = answer.json() else {
        return String::new();
    };
    let mut text = format!(
        "{} {}",
        body["detail"].as_str().unwrap_or(""),
        body["title"].as_str().unwrap_or("")
    );
    for error in body["errors"].as_array().into_iter().flatten() {
        text.push(' ');
        text.push_str(error["message"].as_str().unwrap_or(""));
    }
    text.to_ascii_lowercase()
}

/// Whether a refused create names the media ids: expired (X keeps an upload about a
/// day) or otherwise unusable. Nothing was posted.
fn is_media_refused(answer: &Answer) -> bool {
    answer.status == 400 && {
        let text = messages(answer);
        text.contains("media") && (text.contains("invalid") || text.contains("expired"))
    }
}

/// Whether a refused create says the post replied to is gone or hidden.
fn is_parent_gone(answer: &Answer) -> bool {
    (400..500).contains(&answer.status) && answer.status != 429 && {
        let text = messages(answer);
        text.contains("reply") && (text.contains("deleted") || text.contains("not visible"))
    }
}

/// The media ids a prepare recorded (`Prepared::platform_ref`).
fn media_ids(prepared: &Prepared) -> Vec<String> {
    prepared
        .platform_ref
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The text a part is sent with: part 1 carries the link on a line of its own when the
/// text lacks it (as X's length policy counts it, `appends_link`); later parts have no
/// link.
fn part_text(req: &PublishRequest) -> String {
    airlock_core::policy::with_appended_link(req.text.trim_end(), req.link.as_deref()).into_owned()
}

/// A post's text as X shows it, in the words it was sent: X answers `&`, `<` and `>` as
/// HTML entities and each link as a `t.co` link, listed in `entities.urls` with the
/// address it stands for; an attached image adds a `t.co` link of its own (one with a
/// `media_key`). Whitespace runs count as one space.
pub fn shown_text(post: &Value) -> String {
    let note = &post["note_tweet"];
    let (text, entities) = match note["text"].as_str() {
        Some(text) => (text, &note["entities"]),
        None => (post["text"].as_str().unwrap_or(""), &post["entities"]),
    };
    let mut text = text.to_owned();
    let urls = entities["urls"]
        .as_array()
        .or_else(|| post["entities"]["urls"].as_array());
    for url in urls.into_iter().flatten() {
        let Some(short) = url["url"].as_str().filter(|u| !u.is_empty()) else {
            continue;
        };
        let media = url.get("media_key").is_some_and(|k| !k.is_null());
        let long = if media {
            ""
        } else {
            url["expanded_url"].as_str().unwrap_or(short)
        };
        text = text.replace(short, long);
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    normalized(&text)
}

/// Text with every whitespace run as one space, trimmed.
fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The post of `posts` (a timeline page) that replies to `parent` with `text`, as X shows
/// it; the earliest when there are several.
pub fn find_reply(posts: &Value, parent: &str, text: &str) -> Option<String> {
    let wanted = normalized(text);
    posts["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|post| {
            post["referenced_tweets"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| {
                    r["type"].as_str() == Some("replied_to")
                        && id_string(r.get("id")).as_deref() == Some(parent)
                })
        })
        .filter(|post| shown_text(post) == wanted)
        .filter_map(|post| id_string(post.get("id")))
        .min_by_key(|id| (id.len(), id.clone()))
}

impl X {
    /// An adapter with these settings; refuses a `base_url` that could leak the token.
    pub fn new(settings: XSettings, client: reqwest::Client) -> Result<Self, SettingsError> {
        let base_url = check_base_url(&settings.base_url)?;
        Ok(X {
            base_url,
            token_file: settings.token_file,
            client,
            timeout: settings.request_timeout,
            redactor: std::sync::Mutex::new(Redactor::new(settings.credential.secrets())),
            credential: tokio::sync::Mutex::new(settings.credential),
            username: std::sync::Mutex::new(None),
            user_id: std::sync::Mutex::new(None),
        })
    }

    fn redact(&self, text: &str) -> String {
        self.redactor
            .lock()
            .expect("lock is never poisoned")
            .summary(text)
    }

    fn summary(&self, what: &str, answer: &Answer) -> String {
        let body = answer.json().unwrap_or(Value::Null);
        let message = body["detail"]
            .as_str()
            .or_else(|| body["errors"][0]["message"].as_str())
            .or_else(|| body["error_description"].as_str())
            .or_else(|| body["title"].as_str())
            .map(str::trim)
            .unwrap_or("");
        let detail = if message.is_empty() {
            String::new()
        } else {
            // Redacted before it is cut: a cut through a secret would leave a piece of it.
            let excerpt = self
                .redactor
                .lock()
                .expect("lock is never poisoned")
                .excerpt(message, 160);
            format!(": {excerpt}")
        };
        self.redact(&format!("x: {what}: HTTP {}{detail}", answer.status))
    }

    fn transport_summary(&self, what: &str, err: &reqwest::Error) -> String {
        self.redact(&format!("x: {what}: {}", describe_transport(err)))
    }

    fn step_error(&self, what: &str, answer: &Answer) -> StepError {
        STATUSES.step_error(answer, self.summary(what, answer))
    }

    async fn access_token(&self) -> SecretString {
        self.credential.lock().await.access_token.clone()
    }

    /// Renews the access token `stale`, unless another task or process did already; the
    /// new token. Without a refresh token, the refusal that made it necessary stands.
    async fn renew(&self, stale: &SecretString) -> Result<SecretString, StepError> {
        let mut current = self.credential.lock().await;
        if current.access_token.expose_secret() != stale.expose_secret() {
            return Ok(current.access_token.clone());
        }
        // Across processes: the file lock, held until the rotated pair is written. A
        // credential without a refresh token is only read, never rewritten.
        let _file_lock = if current.refreshable() {
            let file = self.token_file.clone();
            let locked = tokio::task::spawn_blocking(move || lock_token_file(&file))
                .await
                .map_err(std::io::Error::other)
                .and_then(|r| r);
            match locked {
                Ok(lock) => Some(lock),
                Err(e) => {
                    return Err(StepError::Rejected {
                        reason: format!(
                            "x: the lock beside the token file {} cannot be taken ({}): the token is not renewed, so no other process can spend the refresh token meanwhile; make the directory writable for airlock, then resume the channel",
                            self.token_file.display(),
                            e.kind()
                        ),
                        credential: true,
                    });
                }
            }
        } else {
            None
        };
        // Another process may have rotated the pair: its refresh token is the live one.
        // But a person may also have written another account's token there: one this
        // process did not mint is used only once `/2/users/me` names the account checked.
        if let Ok(text) = crate::credential::read_secret(&self.token_file)
            && let Ok(on_disk) = Credential::parse(&text, &self.token_file)
            && on_disk.access_token.expose_secret() != stale.expose_secret()
        {
            self.redactor
                .lock()
                .expect("lock is never poisoned")
                .extend(on_disk.secrets());
            self.check_adopted(&on_disk.access_token).await?;
            *current = on_disk;
            return Ok(current.access_token.clone());
        }
        let (Some(refresh), Some(client_id)) =
            (current.refresh_token.clone(), current.client_id.clone())
        else {
            return Err(StepError::Rejected {
                reason: format!(
                    "x: the access token expired and the token file has no refresh_token and client_id to renew it: {CREDENTIAL_HINT}"
                ),
                credential: true,
            });
        };
        let what = "token refresh";
        let mut request = self
            .client
            .post(endpoint(&self.base_url, &["2", "oauth2", "token"], &[]))
            .timeout(self.timeout)
            .header("content-type", "application/x-www-form-urlencoded");
        if let Some(secret) = &current.client_secret {
            request = request.basic_auth(&client_id, Some(secret.expose_secret()));
        }
        let request = request.body(form_body(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.expose_secret()),
            ("client_id", &client_id),
        ]));
        let answer = send(request)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        if !answer.is_success() {
            return Err(match answer.status {
                400 | 401 => StepError::Rejected {
                    reason: format!(
                        "{}: X refused the refresh token (expired, revoked, or already used): authorize the app again and write the new tokens to {}, then resume the channel",
                        self.summary(what, &answer),
                        self.token_file.display()
                    ),
                    credential: true,
                },
                _ => self.step_error(what, &answer),
            });
        }
        let body = answer.json().unwrap_or(Value::Null);
        let Some(access) = body["access_token"].as_str().filter(|t| !t.is_empty()) else {
            return Err(StepError::transient(
                "x: the token refresh answered without an access_token",
            ));
        };
        let renewed = Credential {
            access_token: SecretString::from(access.to_owned()),
            refresh_token: body["refresh_token"]
                .as_str()
                .filter(|t| !t.is_empty())
                .map(|t| SecretString::from(t.to_owned()))
                .or(Some(refresh)),
            client_id: Some(client_id),
            client_secret: current.client_secret.clone(),
            expires_at: body["expires_in"]
                .as_i64()
                .map(|secs| Utc::now() + Duration::seconds(secs)),
        };
        self.redactor
            .lock()
            .expect("lock is never poisoned")
            .extend(renewed.secrets());
        // X rotates refresh tokens: the old one is spent now, so the new pair is written
        // back before anything uses it. If that fails the new tokens would be lost with
        // the process, so the channel stops for a person.
        let file = self.token_file.clone();
        let text = renewed.to_json();
        let written = tokio::task::spawn_blocking(move || write_atomically(&file, &text))
            .await
            .map_err(std::io::Error::other)
            .and_then(|r| r);
        if let Err(e) = written {
            *current = renewed;
            return Err(StepError::Rejected {
                reason: format!(
                    "x: the token was renewed but the rotated tokens could not be written to {} ({}): fix the file's directory permissions and authorize again",
                    self.token_file.display(),
                    e.kind()
                ),
                credential: true,
            });
        }
        tracing::info!(file = %self.token_file.display(), "x: access token renewed; the rotated tokens are written back");
        *current = renewed;
        Ok(current.access_token.clone())
    }

    /// Before a token read from the file (not minted by this process) is used: the
    /// account it belongs to must be the one the account check found (its id, else its
    /// username). Another account's is a credential refusal, so the channel pauses and
    /// nothing is sent. Without an account check yet there is nothing to compare: the
    /// check that follows compares it with the channel's `account`.
    async fn check_adopted(&self, token: &SecretString) -> Result<(), StepError> {
        let expected_id = self.user_id.lock().expect("lock is never poisoned").clone();
        let expected_name = self
            .username
            .lock()
            .expect("lock is never poisoned")
            .clone();
        if expected_id.is_none() && expected_name.is_none() {
            return Ok(());
        }
        let what = "identity read of the token file's token";
        let request = self
            .client
            .get(endpoint(&self.base_url, &["2", "users", "me"], &[]))
            .bearer_auth(token.expose_secret())
            .timeout(self.timeout);
        let answer = send(request)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        if !answer.is_success() {
            return Err(self.step_error(what, &answer));
        }
        let me = answer.json().unwrap_or(Value::Null);
        let found_id = id_string(me["data"].get("id"));
        let found_name = me["data"]["username"].as_str().unwrap_or("").trim();
        let same = match (&expected_id, &found_id) {
            (Some(expected), Some(found)) => expected == found,
            _ => expected_name
                .as_deref()
                .is_some_and(|name| name.eq_ignore_ascii_case(found_name)),
        };
        if same {
            return Ok(());
        }
        Err(StepError::Rejected {
            reason: self.redact(&format!(
                "x: the token in {} belongs to account {found_name:?}, not {:?} whose token this process held: it was not used and nothing was sent; write this account's token to the file (or change the channel's account and restart), then resume the channel",
                self.token_file.display(),
                expected_name.as_deref().unwrap_or("(the checked account)")
            )),
            credential: true,
        })
    }

    /// A repeatable authenticated request, renewing the token once on a 401 (which
    /// proves X did nothing). `build` makes the request, without its token.
    async fn send_step(
        &self,
        what: &str,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Answer, StepError> {
        let mut token = self.access_token().await;
        for renewed in [false, true] {
            let request = build()
                .bearer_auth(token.expose_secret())
                .timeout(self.timeout);
            let answer = send(request)
                .await
                .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
            if answer.status == 401 && !renewed {
                token = self.renew(&token).await?;
                continue;
            }
            return Ok(answer);
        }
        unreachable!("the loop returns on its second pass")
    }

    /// A repeatable authenticated `GET`, renewing the token once on a 401.
    async fn get_json(
        &self,
        what: &str,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> Result<Value, StepError> {
        let url = endpoint(&self.base_url, segments, query);
        let answer = self.send_step(what, || self.client.get(&url)).await?;
        if !answer.is_success() {
            return Err(self.step_error(what, &answer));
        }
        answer.json().ok_or_else(|| {
            StepError::transient(format!(
                "x: {what}: HTTP {} with an answer that is not JSON",
                answer.status
            ))
        })
    }

    /// Downloads the part's images (each checked against its approved SHA-256) and only
    /// then uploads them, in order: bytes changed at a URL stop the part before anything
    /// is uploaded. Their media ids.
    async fn upload_images(&self, req: &PublishRequest) -> Result<Vec<String>, StepError> {
        let mut files: Vec<MediaFile> = Vec::with_capacity(req.media.len());
        for media in &req.media {
            files.push(fetch_media(&self.client, "x", media, MAX_IMAGE_BYTES).await?);
        }
        let url = endpoint(&self.base_url, &["2", "media", "upload"], &[]);
        let mut ids = Vec::with_capacity(files.len());
        for (n, file) in files.iter().enumerate() {
            let what = format!("image upload ({} of {})", n + 1, files.len());
            let (content_type, body) =
                multipart(&[("media_category", "tweet_image")], ("media", file));
            let answer = self
                .send_step(&what, || {
                    self.client
                        .post(&url)
                        .header("content-type", &content_type)
                        .body(body.clone())
                })
                .await?;
            if !answer.is_success() {
                return Err(self.step_error(&what, &answer));
            }
            let id = answer
                .json()
                .and_then(|v| id_string(v["data"].get("id")))
                .filter(|id| id.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| {
                    StepError::transient(format!(
                        "x: {what}: HTTP {} without a media id; nothing was published",
                        answer.status
                    ))
                })?;
            ids.push(id);
        }
        Ok(ids)
    }

    /// The account's own post that is this later part: one read of its timeline since the
    /// part before, for a post replying to that part with this part's text. `None` when
    /// the page shows none (which proves nothing).
    async fn find_part(&self, req: &PublishRequest) -> Result<Option<Proof>, StepError> {
        let Some(parent) = req.part.parent() else {
            return Ok(None);
        };
        let parent_id = parent.platform_post_id.as_str();
        if parent_id.is_empty() || !parent_id.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(None);
        }
        let username = self.username().await?;
        let user_id = self.user_id.lock().expect("lock is never poisoned").clone();
        let Some(user_id) = user_id else {
            return Err(StepError::transient(
                "x: users/me answered without an id; the timeline cannot be read",
            ));
        };
        let page = TIMELINE_PAGE.to_string();
        let timeline = self
            .get_json(
                "timeline read",
                &["2", "users", &user_id, "tweets"],
                &[
                    ("since_id", parent_id),
                    ("max_results", &page),
                    ("exclude", "retweets"),
                    (
                        "tweet.fields",
                        "referenced_tweets,conversation_id,entities,note_tweet",
                    ),
                ],
            )
            .await?;
        let what = if req.part.comment {
            "the first comment".to_owned()
        } else {
            format!("part {}", req.part.number)
        };
        Ok(
            find_reply(&timeline, parent_id, &part_text(req)).map(|id| Proof {
                permalink: Some(permalink(&username, &id)),
                note: format!(
                    "x: the account's post {id} replies to part {} ({parent_id}) with the text of {what}",
                    parent.number
                ),
                platform_post_id: Some(id),
                attempt: None,
            }),
        )
    }

    async fn username(&self) -> Result<String, StepError> {
        if let Some(name) = self
            .username
            .lock()
            .expect("lock is never poisoned")
            .clone()
        {
            return Ok(name);
        }
        let me = self
            .get_json("identity read", &["2", "users", "me"], &[])
            .await?;
        let name = me["data"]["username"]
            .as_str()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| StepError::transient("x: users/me answered without a username"))?
            .to_owned();
        *self.username.lock().expect("lock is never poisoned") = Some(name.clone());
        *self.user_id.lock().expect("lock is never poisoned") = id_string(me["data"].get("id"));
        Ok(name)
    }

    fn publish_failure(&self, req: &PublishRequest, answer: &Answer) -> Outcome {
        let reason = self.summary("create post", answer);
        if is_media_refused(answer) {
            return Outcome::NotSent {
                reason: format!(
                    "{reason}: X refused the uploaded images' media ids (expired or unusable); nothing was published; the next attempt uploads them again"
                ),
                retry_after: None,
            };
        }
        if req.part.is_later() && is_parent_gone(answer) {
            let parent = req
                .part
                .parent()
                .map(|p| format!("part {} ({})", p.number, p.platform_post_id))
                .unwrap_or_else(|| "the part before".into());
            return Outcome::Rejected {
                reason: format!(
                    "{reason}: {parent}, which this part replies to, is deleted or not visible; nothing was published; settle the rest of the thread by hand"
                ),
                credential: false,
            };
        }
        if is_duplicate(answer) {
            // X names no earlier post: this is proof of nothing. Only when an earlier
            // attempt of this very post may have published it is a person needed.
            let uncertain: Vec<i64> = req
                .earlier
                .iter()
                .filter(|a| !a.definitely_unpublished)
                .map(|a| a.generation)
                .collect();
            return if uncertain.is_empty() {
                Outcome::Rejected {
                    reason: format!(
                        "{reason}: duplicate content: X refused the text as a copy of an earlier post, naming none; nothing new was published; change the text to post it"
                    ),
                    credential: false,
                }
            } else {
                Outcome::Unknown {
                    reason: format!(
                        "{reason}: X refused the text as duplicate content, naming no post; an earlier attempt of this post (generation {uncertain:?}) may have published it: check the account and settle the post"
                    ),
                }
            };
        }
        match answer.status {
            402 => Outcome::Rejected {
                reason: format!(
                    "{reason}: X says the account's API credits are used up; nothing was published; add credits, then requeue"
                ),
                credential: false,
            },
            _ => STATUSES.outcome(answer, reason),
        }
    }
}

impl Redactor {
    fn extend(&mut self, secrets: Vec<SecretString>) {
        for secret in secrets {
            self.add(secret.expose_secret());
        }
    }
}

#[async_trait]
impl Platform for X {
    fn kind(&self) -> ChannelKind {
        ChannelKind::X
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        let me = self
            .get_json("identity read", &["2", "users", "me"], &[])
            .await?;
        let name = me["data"]["username"]
            .as_str()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| StepError::transient("x: users/me answered without a username"))?
            .to_owned();
        let id = id_string(me["data"].get("id"));
        *self.username.lock().expect("lock is never poisoned") = Some(name.clone());
        *self.user_id.lock().expect("lock is never poisoned") = id.clone();
        Ok(Some(Account { username: name, id }))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0, part = req.part.number))]
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        if req.media.len() > MAX_IMAGES {
            return Err(StepError::Rejected {
                reason: format!(
                    "x: a post takes at most {MAX_IMAGES} images and this part has {}; split them over more parts",
                    req.media.len()
                ),
                credential: false,
            });
        }
        if let Some(video) = req.media.iter().find(|m| {
            m.content_type
                .as_deref()
                .is_some_and(|t| !t.starts_with("image/"))
        }) {
            return Err(StepError::Rejected {
                reason: format!(
                    "x: this channel posts images only, and {} is {}; remove it",
                    crate::http::without_secrets(&video.url),
                    video.content_type.as_deref().unwrap_or("not an image")
                ),
                credential: false,
            });
        }
        if req.part.is_later() && req.part.parent().is_none() {
            return Err(StepError::Rejected {
                reason: format!(
                    "x: part {} replies to the part before it, and no part before it is recorded as published; nothing was sent",
                    req.part.number
                ),
                credential: false,
            });
        }
        let (stale, due) = {
            let credential = self.credential.lock().await;
            let due = credential.refreshable()
                && credential
                    .expires_at
                    .is_some_and(|at| at - REFRESH_MARGIN <= req.now);
            (credential.access_token.clone(), due)
        };
        if due {
            self.renew(&stale).await?;
        }
        self.username().await?;
        // An earlier attempt of this later part may have gone out: the timeline shows it
        // if so, and then nothing is sent. (Part 1 has nothing to be found by.)
        if req.part.is_later()
            && req.earlier.iter().any(|a| !a.definitely_unpublished)
            && let Some(proof) = self.find_part(req).await?
        {
            return Ok(Prepared {
                platform_ref: None,
                already_published: Some(Proof {
                    attempt: crate::latest_attempt(&req.earlier, |a| !a.definitely_unpublished),
                    ..proof
                }),
            });
        }
        if req.media.is_empty() {
            return Ok(Prepared::default());
        }
        let ids = self.upload_images(req).await?;
        Ok(Prepared::with_ref(ids.join(",")))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0, part = req.part.number))]
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        let mut body = json!({"text": part_text(req)});
        if req.part.is_later() {
            let Some(parent) = req.part.parent() else {
                return Outcome::NotSent {
                    reason: format!(
                        "x: part {} has no published part before it to reply to; nothing was sent",
                        req.part.number
                    ),
                    retry_after: None,
                };
            };
            body["reply"] = json!({"in_reply_to_tweet_id": parent.platform_post_id});
        }
        let media = media_ids(prepared);
        if media.len() != req.media.len() {
            return Outcome::NotSent {
                reason: format!(
                    "x: {} of the part's {} images are uploaded; nothing was sent; the next attempt uploads them",
                    media.len(),
                    req.media.len()
                ),
                retry_after: None,
            };
        }
        if !media.is_empty() {
            body["media"] = json!({"media_ids": media});
        }
        let body = body.to_string();
        let mut token = self.access_token().await;
        for renewed in [false, true] {
            let request = self
                .client
                .post(endpoint(&self.base_url, &["2", "tweets"], &[]))
                .bearer_auth(token.expose_secret())
                .timeout(self.timeout)
                .header("content-type", "application/json")
                .body(body.clone());
            let answer = match send(request).await {
                Ok(answer) => answer,
                Err(e) => {
                    return transport_failure(&e)
                        .outcome(self.transport_summary("create post", &e));
                }
            };
            if answer.is_success() {
                let id = answer.json().and_then(|v| id_string(v["data"].get("id")));
                let username = self
                    .username
                    .lock()
                    .expect("lock is never poisoned")
                    .clone();
                return Outcome::Published(Published {
                    permalink: id
                        .as_deref()
                        .zip(username.as_deref())
                        .map(|(id, name)| permalink(name, id)),
                    platform_post_id: id,
                    pause: None,
                    existing: None,
                });
            }
            if answer.status == 401 && !renewed {
                // X refused the token before doing anything: renew it and send once more.
                match self.renew(&token).await {
                    Ok(fresh) => {
                        token = fresh;
                        continue;
                    }
                    Err(StepError::Rejected { reason, credential }) => {
                        return Outcome::Rejected { reason, credential };
                    }
                    Err(StepError::Transient {
                        reason,
                        retry_after,
                    }) => {
                        return Outcome::NotSent {
                            reason: format!(
                                "{reason}: the token expired and could not be renewed; nothing was posted"
                            ),
                            retry_after,
                        };
                    }
                }
            }
            return self.publish_failure(req, &answer);
        }
        unreachable!("the loop returns on its second pass")
    }

    async fn verify(&self, platform_post_id: &str) -> Verification {
        if platform_post_id.is_empty() || !platform_post_id.bytes().all(|b| b.is_ascii_digit()) {
            return Verification::Failed {
                reason: format!("x: {platform_post_id:?} is not a post id"),
            };
        }
        match self
            .get_json("read back", &["2", "tweets", platform_post_id], &[])
            .await
        {
            Ok(found)
                if id_string(found["data"].get("id")).as_deref() == Some(platform_post_id) =>
            {
                let username = self
                    .username
                    .lock()
                    .expect("lock is never poisoned")
                    .clone();
                Verification::Verified {
                    permalink: username.map(|name| permalink(&name, platform_post_id)),
                }
            }
            Ok(_) => Verification::Failed {
                reason: format!("x: reading post {platform_post_id} back returned another id"),
            },
            Err(e) => Verification::Failed {
                reason: e.to_string(),
            },
        }
    }

    /// Part 1: nothing to find it by, so a person decides. A later part (a reply, or the
    /// first comment): the account's post replying to the part before with this part's
    /// text, in one read of its timeline.
    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        let publish = &req.publish;
        if !publish.part.is_later() {
            return Evidence::NoProof;
        }
        match self.find_part(publish).await {
            Ok(Some(proof)) => Evidence::Published(proof),
            Ok(None) => Evidence::NoProof,
            Err(e) => {
                tracing::warn!(error = %e, "x: the timeline could not be read for proof");
                Evidence::NoProof
            }
        }
    }
}

/// `kind = "x"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XConfig {
    /// The token file (0600): an access token, or JSON with a refresh token.
    pub token_file: PathBuf,
    /// The username the token must belong to.
    pub account: String,
    /// API host override (default [`DEFAULT_BASE_URL`]).
    pub base_url: Option<String>,
    /// Most money spent per calendar month in the channel's zone, in US dollars.
    pub monthly_budget_usd: Option<f64>,
    /// What a post costs, in US dollars (default [`Costs::X_DEFAULT`]).
    pub post_cost_usd: Option<f64>,
    /// What a post with a link costs, in US dollars (default [`Costs::X_DEFAULT`]).
    pub url_post_cost_usd: Option<f64>,
}

impl KindConfig for XConfig {
    crate::kind::token_keys!(base_url: optional);

    fn check(&self, table: &str, _: &Common) -> Result<(), String> {
        self.budget(table).map(drop)
    }

    /// The money budget, if the channel has one; a bad amount is refused naming its key.
    fn budget(&self, table: &str) -> Result<Option<Budget>, String> {
        let amount = |key: &str, value: Option<f64>, default: u64| match value {
            None => Ok(default),
            Some(value) => parse_usd(value).map_err(|e| format!("{table}.{key}: {e}")),
        };
        let costs = Costs {
            post: amount("post_cost_usd", self.post_cost_usd, Costs::X_DEFAULT.post)?,
            url_post: amount(
                "url_post_cost_usd",
                self.url_post_cost_usd,
                Costs::X_DEFAULT.url_post,
            )?,
        };
        let Some(monthly) = self.monthly_budget_usd else {
            if self.post_cost_usd.is_some() || self.url_post_cost_usd.is_some() {
                return Err(format!(
                    "{table}.post_cost_usd and url_post_cost_usd need {table}.monthly_budget_usd, the budget they are counted against"
                ));
            }
            return Ok(None);
        };
        Ok(Some(Budget {
            monthly: amount("monthly_budget_usd", Some(monthly), 0)?,
            costs,
        }))
    }

    fn build(&self, _: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String> {
        let timeout = common.request_timeout.as_std();
        let credential = Credential::parse(&read_token(&self.token_file)?, &self.token_file)
            .map_err(|e| e.to_string())?;
        // A refresh spends the refresh token: refuse to start where the rotated pair could
        // not be written back.
        check_token_dir(&self.token_file, &credential)?;
        let settings = XSettings {
            base_url: self
                .base_url
                .clone()
                .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            token_file: self.token_file.clone(),
            credential,
            request_timeout: timeout,
        };
        let x = X::new(settings, crate::http::client(timeout));
        Ok(Arc::new(x.map_err(|e| e.to_string())?))
    }

    /// A refreshable token file whose directory airlock cannot write: a refresh would
    /// spend the refresh token and leave it in the file.
    fn doctor(&self) -> Vec<Result<String, String>> {
        let Ok(text) = crate::credential::read_secret(&self.token_file) else {
            return Vec::new();
        };
        match Credential::parse(&text, &self.token_file) {
            Ok(credential) if credential.refreshable() => {
                vec![check_token_dir(&self.token_file, &credential).map(|()| {
                    "the token file's directory is writable (refresh tokens rotate)".to_owned()
                })]
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Credential, CredentialFileError> {
        Credential::parse(&SecretString::from(text.to_owned()), Path::new("/x/token"))
    }

    #[test]
    fn a_token_file_holds_a_bare_token_or_a_refreshable_object() {
        let bare = parse("abc123\n").unwrap();
        assert!(!bare.refreshable());
        assert_eq!(bare.access_token.expose_secret(), "abc123");
        let full = parse(
            r#"{"access_token":"a","refresh_token":"r","client_id":"c","expires_at":"2026-12-01T02:00:00Z"}"#,
        )
        .unwrap();
        assert!(full.refreshable());
        assert_eq!(
            full.expires_at,
            Some(
                DateTime::parse_from_rfc3339("2026-12-01T02:00:00Z")
                    .unwrap()
                    .to_utc()
            )
        );
        let again = parse(&full.to_json()).unwrap();
        assert_eq!(again.refresh_token.unwrap().expose_secret(), "r");
        for (bad, says) in [
            (
                r#"{"refresh_token":"r","client_id":"c"}"#,
                "lacks access_token",
            ),
            (
                r#"{"access_token":"a","refresh_token":"r"}"#,
                "no client_id",
            ),
            (
                r#"{"access_token":"a","token":"x"}"#,
                "unknown key \"token\"",
            ),
            (r#"{"access_token":"a","expires_at":"soon"}"#, "expires_at"),
            ("two words", "neither"),
            ("{not json", "not a JSON object"),
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(
                !err.contains("\"a\"") && !err.contains("two words"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_post_is_found_by_its_text_as_x_shows_it() {
        let post = json!({
            "id": "20",
            "text": "Cushion &amp; sun:  https://t.co/a1\nhttps://t.co/m2",
            "entities": {"urls": [
                {"url": "https://t.co/a1", "expanded_url": "https://inn.example/noon/"},
                {"url": "https://t.co/m2", "expanded_url": "https://x.com/i/photo/1", "media_key": "3_20"},
            ]},
            "referenced_tweets": [{"type": "replied_to", "id": "10"}],
        });
        assert_eq!(
            shown_text(&post),
            "Cushion & sun: https://inn.example/noon/"
        );
        let page = json!({"data": [
            post,
            {"id": "21", "text": "Another reply", "referenced_tweets": [{"type": "replied_to", "id": "10"}]},
            {"id": "22", "text": "Cushion & sun: https://inn.example/noon/"},
        ]});
        let text = "Cushion & sun: https://inn.example/noon/";
        assert_eq!(find_reply(&page, "10", text).as_deref(), Some("20"));
        assert_eq!(
            find_reply(&page, "11", text),
            None,
            "not a reply to that part"
        );
        assert_eq!(find_reply(&page, "10", "Cushion"), None);
    }

    #[test]
    fn a_rotated_token_is_written_atomically_and_privately() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.token");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, "new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left behind");
    }
}
