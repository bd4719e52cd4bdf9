//! `bluesky`: posts on Bluesky through the account's PDS (AT Protocol XRPC), per
//! docs/platforms.md#bluesky.
//!
//! A post's path through the adapter:
//! 1. **Session**: `com.atproto.server.createSession` with the channel's `identifier`
//!    (the handle by default) and app password, once per process and only when a post
//!    needs it; the session is reused, refreshed with `refreshSession` when the PDS says
//!    `ExpiredToken`, and created anew only when the refresh is refused. The app password
//!    travels only in that call's body to the account's own PDS (the protocol has no
//!    other way); the session tokens only in `Authorization` headers.
//! 2. [`Platform::account`]: `com.atproto.server.getSession`; its `handle` is what the
//!    channel's `account` is compared with.
//! 3. [`Platform::prepare`] (repeatable): the record key. airlock chooses it: a TID minted
//!    from the guarded path's clock and a random clock id, recorded with the intent
//!    (`platform_ref`), so one attempt can never make two records. A retry first reads
//!    the records at the keys of earlier attempts (`com.atproto.repo.getRecord`): one
//!    that exists is this post, published (proof, nothing sent); otherwise the retry
//!    reuses the earliest earlier key, so a late landing of that attempt and the retry
//!    cannot both make a record. Then the text's links, `#hashtags` and `@handle`
//!    mentions (resolved to DIDs) become facets at UTF-8 byte offsets, and images are
//!    downloaded and uploaded with `uploadBlob` (unused blobs are discarded by the PDS).
//! 4. [`Platform::publish`] (irreversible, once): `com.atproto.repo.createRecord` on
//!    `app.bsky.feed.post` with that `rkey`. An `ExpiredToken` answer proves nothing was
//!    written: the session is refreshed and the same record (same key) sent once more. A
//!    5xx is unknown (a key that already holds a record currently answers 500), and
//!    reconcile reads the key.
//! 5. [`Platform::verify`] and [`Platform::reconcile`]: `getRecord` at the intent's key.
//!    A record there is this attempt's own object, which proves *published*; its absence
//!    proves nothing (the write may still land), so the post waits for a person.
//!
//! **Threads.** Each part of a post is its own record, prepared and published as above
//! with that part's own key (the request's `earlier` are that part's attempts). A later
//! part (and the first comment, a reply to the last part) carries `reply: {root, parent}`,
//! strong references (`{uri, cid}`) to part 1 and to the part before it: `prepare` reads
//! both records back with `getRecord` (from the PDS, not an AppView) for their CIDs, since
//! a part's `platform_post_id` is its `at://` URI only. A later part's key is a TID later
//! than every part already out, so no two parts of a post can share a key.
//!
//! Permalinks are `https://bsky.app/profile/<handle>/post/<rkey>`. A link the text does
//! not carry becomes an external embed (a card); up to four images become an image embed
//! with their alt text.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use airlock_core::channel::MAX_MENTIONS_RESOLVED;
use airlock_core::policy::url_spans;
use airlock_core::{ChannelKind, ChannelName, Outcome, Published};

use crate::http::{
    Answer, Redactor, StatusTable, Wait, check_base_url, describe_transport, endpoint, fetch_media,
    send, transport_failure,
};
use crate::kind::{Common, KindConfig, read_token};
use crate::{
    Account, Evidence, Platform, Prepared, Proof, PublishRequest, PublishedPart, ReconcileRequest,
    SettingsError, StepError, Verification,
};

/// The PDS of accounts hosted by Bluesky.
pub const DEFAULT_BASE_URL: &str = "https://bsky.social";

/// The collection of posts.
const POST_COLLECTION: &str = "app.bsky.feed.post";

/// The largest image blob `app.bsky.embed.images` takes.
pub const MAX_IMAGE_BYTES: usize = 1_000_000;

/// How a `bluesky` channel reaches its account. Built from the channel's table
/// ([`BlueskyConfig`]).
#[derive(Debug, Clone)]
pub struct BlueskySettings {
    /// The account's PDS (default [`DEFAULT_BASE_URL`]); tests point it at a fake.
    pub base_url: String,
    /// The account's handle: whose repository records are read from, and the permalinks'
    /// profile, when no session says otherwise.
    pub handle: String,
    /// What `createSession` is given when not the handle: the account's email or DID.
    pub identifier: Option<String>,
    /// The app password (Settings → App passwords).
    pub app_password: SecretString,
    /// Bound on each request, the irreversible one included.
    pub request_timeout: StdDuration,
}

impl BlueskySettings {
    /// Settings with the defaults: bsky.social, the handle as identifier, 30 s requests.
    pub fn new(handle: String, app_password: SecretString) -> Self {
        BlueskySettings {
            base_url: DEFAULT_BASE_URL.to_owned(),
            handle,
            identifier: None,
            app_password,
            request_timeout: StdDuration::from_secs(30),
        }
    }
}

/// A session: its tokens and whose it is.
#[derive(Debug, Clone)]
struct Session {
    access: SecretString,
    refresh: SecretString,
    did: String,
    handle: String,
}

/// What `prepare` made for a record key: facets, the image embed and, for a later
/// part, the reply references.
#[derive(Debug, Clone, Default)]
struct Staged {
    facets: Vec<Value>,
    images: Vec<Value>,
    reply: Option<Value>,
}

/// A record the PDS holds: its `at://` URI and content id.
#[derive(Debug, Clone)]
struct Stored {
    uri: String,
    cid: Option<String>,
}

/// A `bluesky` channel.
#[derive(Debug)]
pub struct Bluesky {
    base_url: String,
    handle: String,
    identifier: String,
    app_password: SecretString,
    client: reqwest::Client,
    timeout: StdDuration,
    // The session, created when first needed; the lock serializes its renewal.
    session: tokio::sync::Mutex<Option<Session>>,
    // Every secret seen (app password, session tokens). Never held across an await.
    redactor: Mutex<Redactor>,
    // What prepare made, by record key, for publish to send. Never held across an await.
    staged: Mutex<HashMap<String, Staged>>,
}

const CREDENTIAL_HINT: &str = "the app password was refused or the account cannot post (revoked app password, takedown): write a new app password to the token file, then resume the channel";

/// A PDS answers by the outcome table, reading waits from its rate-limit headers.
const STATUSES: StatusTable = StatusTable {
    credential_hint: Some(CREDENTIAL_HINT),
    step_throttled: Some("the PDS limits requests now; nothing was published"),
    publish_throttled: Some("the PDS limits writes now; nothing was published"),
    unknown: Some(
        "whether the record was written is unknown (a key that already holds one answers 500); reading the record at its key settles it",
    ),
    wait: Wait::RateLimit,
};

/// The base32-sortable alphabet of TIDs.
const TID_ALPHABET: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";

/// A TID (timestamp identifier): 13 base32-sortable characters of 64 bits, the top one
/// zero, then 53 bits of microseconds since the epoch and a 10-bit clock id.
pub fn tid(at: DateTime<Utc>, clock_id: u16) -> String {
    let micros = (at.timestamp_micros().max(0) as u64) & ((1 << 53) - 1);
    let value = (micros << 10) | u64::from(clock_id & 0x3ff);
    (0..13)
        .rev()
        .map(|i| TID_ALPHABET[((value >> (5 * i)) & 31) as usize] as char)
        .collect()
}

/// Whether `key` is a TID.
pub fn is_tid(key: &str) -> bool {
    key.len() == 13
        && key.bytes().all(|b| TID_ALPHABET.contains(&b))
        && matches!(key.as_bytes()[0], b'2'..=b'7' | b'a'..=b'j')
}

/// The microseconds since the epoch a TID carries.
pub fn tid_micros(key: &str) -> Option<i64> {
    if !is_tid(key) {
        return None;
    }
    let value = key.bytes().fold(0u64, |value, b| {
        let digit = TID_ALPHABET.iter().position(|a| *a == b).unwrap_or(0) as u64;
        (value << 5) | digit
    });
    i64::try_from(value >> 10).ok()
}

/// When a part's key is minted: `now`, or just after the latest key of the parts already
/// out when that is later (parts prepared within one clock tick, or a clock that went
/// back), so a part's key never equals, nor sorts before, an earlier part's.
fn key_time(now: DateTime<Utc>, published: &[PublishedPart]) -> DateTime<Utc> {
    published
        .iter()
        .filter_map(|part| tid_micros(rkey_of(&part.platform_post_id)?))
        .max()
        .and_then(|micros| DateTime::<Utc>::from_timestamp_micros(micros + 1))
        .map_or(now, |after| after.max(now))
}

/// The permalink of a record key on a handle's profile.
pub fn permalink(handle: &str, rkey: &str) -> String {
    format!("https://bsky.app/profile/{handle}/post/{rkey}")
}

/// The record key at the end of an `at://` URI.
pub fn rkey_of(uri: &str) -> Option<&str> {
    let rest = uri.strip_prefix("at://")?;
    let mut parts = rest.split('/');
    let (_, collection, rkey) = (parts.next()?, parts.next()?, parts.next()?);
    (collection == POST_COLLECTION && !rkey.is_empty() && parts.next().is_none()).then_some(rkey)
}

/// A facet over `[start, end)` bytes with one feature.
fn facet(start: usize, end: usize, feature: Value) -> Value {
    json!({
        "index": {"byteStart": start, "byteEnd": end},
        "features": [feature],
    })
}

/// The links and hashtags of `text` as facets, and the mentions to resolve:
/// `(byte start, byte end, handle)`.
pub fn link_and_tag_facets(text: &str) -> (Vec<Value>, Vec<(usize, usize, String)>) {
    let mut facets = Vec::new();
    let links = url_spans(text);
    for (start, end) in &links {
        facets.push(facet(
            *start,
            *end,
            json!({"$type": "app.bsky.richtext.facet#link", "uri": &text[*start..*end]}),
        ));
    }
    let inside_link = |at: usize| links.iter().any(|(s, e)| at >= *s && at < *e);
    let mut mentions = Vec::new();
    for (at, sigil) in text.char_indices() {
        if !matches!(sigil, '#' | '@') || inside_link(at) {
            continue;
        }
        let glued = text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if glued {
            continue;
        }
        let body_start = at + 1;
        let body_len: usize = text[body_start..]
            .chars()
            .take_while(|c| {
                c.is_alphanumeric() || *c == '_' || (sigil == '@' && matches!(c, '.' | '-'))
            })
            .map(char::len_utf8)
            .sum();
        let body = text[body_start..body_start + body_len].trim_end_matches(['.', '-']);
        let end = body_start + body.len();
        if sigil == '#' {
            if !body.is_empty() && !body.chars().all(|c| c.is_ascii_digit()) {
                facets.push(facet(
                    at,
                    end,
                    json!({"$type": "app.bsky.richtext.facet#tag", "tag": body}),
                ));
            }
        } else if body.contains('.') && !body.starts_with('.') {
            mentions.push((at, end, body.to_ascii_lowercase()));
        }
    }
    (facets, mentions)
}

/// Whether an XRPC error answer names this error.
fn xrpc_error(answer: &Answer) -> String {
    answer
        .json()
        .and_then(|v| v["error"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Whether an answer says the access token expired (the request did nothing).
fn expired(answer: &Answer) -> bool {
    matches!(answer.status, 400 | 401) && xrpc_error(answer) == "ExpiredToken"
}

impl Bluesky {
    /// An adapter with these settings; refuses a `base_url` that could leak the password.
    pub fn new(settings: BlueskySettings, client: reqwest::Client) -> Result<Self, SettingsError> {
        let base_url = check_base_url(&settings.base_url)?;
        let handle = settings.handle.trim().trim_start_matches('@').to_owned();
        if handle.is_empty() || handle.chars().any(char::is_whitespace) {
            return Err(SettingsError::Invalid {
                setting: "account",
                value: settings.handle,
                problem: "is not a Bluesky handle: write it like \"inn-cats.bsky.social\"",
            });
        }
        let identifier = match settings.identifier {
            None => handle.clone(),
            Some(given) => {
                let trimmed = given.trim().trim_start_matches('@').to_owned();
                if trimmed.is_empty() || trimmed.chars().any(char::is_whitespace) {
                    return Err(SettingsError::Invalid {
                        setting: "identifier",
                        value: given,
                        problem: "is not a Bluesky email or DID: leave it out to log in with the handle",
                    });
                }
                trimmed
            }
        };
        Ok(Bluesky {
            base_url,
            handle,
            identifier,
            redactor: Mutex::new(Redactor::new([settings.app_password.clone()])),
            app_password: settings.app_password,
            client,
            timeout: settings.request_timeout,
            session: tokio::sync::Mutex::new(None),
            staged: Mutex::new(HashMap::new()),
        })
    }

    fn xrpc(&self, nsid: &str, query: &[(&str, &str)]) -> String {
        endpoint(&self.base_url, &["xrpc", nsid], query)
    }

    fn redact(&self, text: &str) -> String {
        self.redactor
            .lock()
            .expect("lock is never poisoned")
            .summary(text)
    }

    fn summary(&self, what: &str, answer: &Answer) -> String {
        let body = answer.json().unwrap_or(Value::Null);
        let error = body["error"].as_str().unwrap_or("");
        let message = body["message"].as_str().map(str::trim).unwrap_or("");
        // Redacted before it is cut: a cut through a secret would leave a piece of it.
        let excerpt = |message: &str| {
            self.redactor
                .lock()
                .expect("lock is never poisoned")
                .excerpt(message, 160)
        };
        let detail = match (error, message) {
            ("", "") => String::new(),
            (error, "") => format!(", {error}"),
            ("", message) => format!(": {}", excerpt(message)),
            (error, message) => format!(", {error}: {}", excerpt(message)),
        };
        self.redact(&format!("bluesky: {what}: HTTP {}{detail}", answer.status))
    }

    fn transport_summary(&self, what: &str, err: &reqwest::Error) -> String {
        self.redact(&format!("bluesky: {what}: {}", describe_transport(err)))
    }

    /// A failed repeatable step.
    fn step_error(&self, what: &str, answer: &Answer) -> StepError {
        STATUSES.step_error(answer, self.summary(what, answer))
    }

    fn remember(&self, session: &Session) {
        let mut redactor = self.redactor.lock().expect("lock is never poisoned");
        redactor.add(session.access.expose_secret());
        redactor.add(session.refresh.expose_secret());
    }

    fn read_session(&self, answer: &Answer) -> Result<Session, StepError> {
        let body = answer.json().unwrap_or(Value::Null);
        let text = |key: &str| {
            body[key]
                .as_str()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        match (
            text("accessJwt"),
            text("refreshJwt"),
            text("did"),
            text("handle"),
        ) {
            (Some(access), Some(refresh), Some(did), Some(handle)) => {
                let session = Session {
                    access: SecretString::from(access),
                    refresh: SecretString::from(refresh),
                    did,
                    handle,
                };
                self.remember(&session);
                Ok(session)
            }
            _ => Err(StepError::transient(
                "bluesky: the session answer lacks accessJwt, refreshJwt, did or handle",
            )),
        }
    }

    /// `createSession` with the app password.
    async fn create_session(&self) -> Result<Session, StepError> {
        let what = "session creation";
        let body = json!({
            "identifier": self.identifier,
            "password": self.app_password.expose_secret(),
        });
        let request = self
            .client
            .post(self.xrpc("com.atproto.server.createSession", &[]))
            .timeout(self.timeout)
            .header("content-type", "application/json")
            .body(body.to_string());
        let answer = send(request)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        if !answer.is_success() {
            // A wrong identifier or password is a 401 (AuthenticationRequired); a
            // takedown or a missing second factor is a 400 that no retry fixes either.
            return Err(match (answer.status, xrpc_error(&answer).as_str()) {
                (400, "AccountTakedown" | "AuthFactorTokenRequired") | (401, _) => {
                    StepError::Rejected {
                        reason: format!("{}: {CREDENTIAL_HINT}", self.summary(what, &answer)),
                        credential: true,
                    }
                }
                _ => self.step_error(what, &answer),
            });
        }
        self.read_session(&answer)
    }

    /// `refreshSession` with the refresh token; `None` when the PDS refused it (then a new
    /// session is needed).
    async fn refresh_session(&self, old: &Session) -> Result<Option<Session>, StepError> {
        let what = "session refresh";
        let request = self
            .client
            .post(self.xrpc("com.atproto.server.refreshSession", &[]))
            .bearer_auth(old.refresh.expose_secret())
            .timeout(self.timeout);
        let answer = send(request)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        if answer.is_success() {
            return self.read_session(&answer).map(Some);
        }
        if matches!(answer.status, 400 | 401) {
            return Ok(None);
        }
        Err(self.step_error(what, &answer))
    }

    /// The current session, created when there is none.
    async fn session(&self) -> Result<Session, StepError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref() {
            return Ok(session.clone());
        }
        let session = self.create_session().await?;
        *slot = Some(session.clone());
        Ok(session)
    }

    /// Replaces the session `stale` (its access token expired): refreshed, or created anew
    /// when the refresh is refused. Another task may have renewed it meanwhile.
    async fn renew(&self, stale: &Session) -> Result<Session, StepError> {
        let mut slot = self.session.lock().await;
        if let Some(current) = slot.as_ref()
            && current.access.expose_secret() != stale.access.expose_secret()
        {
            return Ok(current.clone());
        }
        let session = match self.refresh_session(stale).await? {
            Some(session) => session,
            None => self.create_session().await?,
        };
        *slot = Some(session.clone());
        Ok(session)
    }

    /// A repeatable authenticated request, renewing the session once on `ExpiredToken`.
    async fn authed(
        &self,
        what: &str,
        build: impl Fn(&Session) -> reqwest::RequestBuilder,
    ) -> Result<(Session, Answer), StepError> {
        let mut session = self.session().await?;
        for renewed in [false, true] {
            let answer = send(
                build(&session)
                    .bearer_auth(session.access.expose_secret())
                    .timeout(self.timeout),
            )
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
            if expired(&answer) && !renewed {
                session = self.renew(&session).await?;
                continue;
            }
            if !answer.is_success() {
                return Err(self.step_error(what, &answer));
            }
            return Ok((session, answer));
        }
        unreachable!("the loop returns on its second pass")
    }

    /// The record at `rkey` in the account's repository: `Ok(Some(..))` when it exists,
    /// `Ok(None)` when the PDS says there is none. No session needed.
    async fn get_record(&self, rkey: &str) -> Result<Option<Stored>, String> {
        let repo = match self.session.lock().await.as_ref() {
            Some(session) => session.did.clone(),
            None => self.handle.clone(),
        };
        let request = self
            .client
            .get(self.xrpc(
                "com.atproto.repo.getRecord",
                &[
                    ("repo", &repo),
                    ("collection", POST_COLLECTION),
                    ("rkey", rkey),
                ],
            ))
            .timeout(self.timeout);
        let answer = send(request)
            .await
            .map_err(|e| self.transport_summary("record read", &e))?;
        if answer.is_success() {
            let body = answer.json().unwrap_or(Value::Null);
            let uri = body["uri"]
                .as_str()
                .filter(|uri| rkey_of(uri) == Some(rkey))
                .map(str::to_owned);
            let cid = body["cid"]
                .as_str()
                .filter(|cid| !cid.is_empty())
                .map(str::to_owned);
            return uri
                .map(|uri| Some(Stored { uri, cid }))
                .ok_or_else(|| "bluesky: the record read names another record".to_owned());
        }
        if answer.status == 400 && xrpc_error(&answer) == "RecordNotFound" {
            return Ok(None);
        }
        Err(self.summary("record read", &answer))
    }

    /// The handle the permalink uses: the session's, else the configured one.
    async fn handle(&self) -> String {
        match self.session.lock().await.as_ref() {
            Some(session) => session.handle.clone(),
            None => self.handle.clone(),
        }
    }

    fn proof(&self, handle: &str, uri: &str, rkey: &str, note: String) -> Proof {
        Proof {
            platform_post_id: Some(uri.to_owned()),
            permalink: Some(permalink(handle, rkey)),
            note,
            attempt: None,
        }
    }

    /// Resolves `@handle` mentions to DIDs; unresolvable ones stay plain text.
    async fn mention_facets(&self, mentions: &[(usize, usize, String)]) -> Vec<Value> {
        let mut facets = Vec::new();
        for (start, end, handle) in mentions.iter().take(MAX_MENTIONS_RESOLVED) {
            let request = self
                .client
                .get(self.xrpc("com.atproto.identity.resolveHandle", &[("handle", handle)]))
                .timeout(self.timeout);
            let did = match send(request).await {
                Ok(answer) if answer.is_success() => answer
                    .json()
                    .and_then(|v| v["did"].as_str().map(str::to_owned))
                    .filter(|did| did.starts_with("did:")),
                _ => None,
            };
            match did {
                Some(did) => facets.push(facet(
                    *start,
                    *end,
                    json!({"$type": "app.bsky.richtext.facet#mention", "did": did}),
                )),
                None => tracing::info!(handle, "bluesky: a mention does not resolve; left as text"),
            }
        }
        facets
    }

    /// The strong reference (`{uri, cid}`) of a part already out, read back from the PDS.
    async fn strong_ref(&self, part: &PublishedPart) -> Result<Value, StepError> {
        let n = part.number;
        let id = &part.platform_post_id;
        let Some(rkey) = rkey_of(id) else {
            return Err(StepError::Rejected {
                reason: format!(
                    "bluesky: part {n}'s id {id:?} is not a post's at:// URI, so nothing can reply to it: settle part {n} with the record's at:// URI"
                ),
                credential: false,
            });
        };
        match self.get_record(rkey).await {
            Ok(Some(Stored {
                uri,
                cid: Some(cid),
            })) => Ok(json!({"uri": uri, "cid": cid})),
            Ok(Some(Stored { uri, cid: None })) => Err(StepError::transient(format!(
                "bluesky: the record of part {n} ({uri}) was read without its cid; nothing was sent"
            ))),
            Ok(None) => Err(StepError::Rejected {
                reason: format!(
                    "bluesky: part {n}'s record {id} is no longer in the repository (deleted?): the thread cannot go on under it; nothing was sent"
                ),
                credential: false,
            }),
            Err(e) => Err(StepError::transient(format!(
                "{e}: part {n}'s record {id} cannot be read for the reply; nothing was sent"
            ))),
        }
    }

    /// A later part's `reply`: the strong references of part 1 and of the part before it.
    async fn reply(&self, req: &PublishRequest) -> Result<Option<Value>, StepError> {
        let (Some(root), Some(parent)) = (req.part.root(), req.part.parent()) else {
            if req.part.is_later() {
                return Err(StepError::Rejected {
                    reason: format!(
                        "bluesky: part {} names no earlier part to reply to; nothing was sent",
                        req.part.number
                    ),
                    credential: false,
                });
            }
            return Ok(None);
        };
        let parent_ref = self.strong_ref(parent).await?;
        let root_ref = if root.number == parent.number {
            parent_ref.clone()
        } else {
            self.strong_ref(root).await?
        };
        Ok(Some(json!({"root": root_ref, "parent": parent_ref})))
    }

    /// Downloads and uploads the post's images; the image embed's entries.
    async fn upload_images(&self, req: &PublishRequest) -> Result<Vec<Value>, StepError> {
        let mut images = Vec::new();
        for media in &req.media {
            let file = fetch_media(&self.client, "bluesky", media, MAX_IMAGE_BYTES).await?;
            let (_, answer) = self
                .authed("image upload", |_| {
                    self.client
                        .post(self.xrpc("com.atproto.repo.uploadBlob", &[]))
                        .header("content-type", file.mime.as_str())
                        .body(file.bytes.clone())
                })
                .await?;
            let blob = answer
                .json()
                .map(|v| v["blob"].clone())
                .filter(|blob| blob.is_object())
                .ok_or_else(|| {
                    StepError::transient("bluesky: uploadBlob answered without a blob")
                })?;
            images.push(json!({
                "image": blob,
                "alt": media.alt.clone().unwrap_or_default(),
            }));
        }
        Ok(images)
    }

    /// The record a post becomes.
    fn record(&self, req: &PublishRequest, staged: &Staged) -> Value {
        let mut record = json!({
            "$type": POST_COLLECTION,
            "text": req.text,
            "createdAt": req.now.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        });
        if !staged.facets.is_empty() {
            record["facets"] = Value::Array(staged.facets.clone());
        }
        if let Some(reply) = &staged.reply {
            record["reply"] = reply.clone();
        }
        let link = req
            .link
            .as_deref()
            .filter(|l| !l.trim().is_empty() && !req.text.contains(*l));
        if !staged.images.is_empty() {
            record["embed"] = json!({
                "$type": "app.bsky.embed.images",
                "images": staged.images,
            });
        } else if let Some(link) = link {
            record["embed"] = json!({
                "$type": "app.bsky.embed.external",
                "external": {"uri": link, "title": link, "description": ""},
            });
        }
        record
    }

    /// A non-2xx answer to the create call.
    fn publish_failure(&self, answer: &Answer) -> Outcome {
        STATUSES.outcome(answer, self.summary("create record", answer))
    }
}

#[async_trait]
impl Platform for Bluesky {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Bluesky
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        let (session, answer) = self
            .authed("session read", |_| {
                self.client
                    .get(self.xrpc("com.atproto.server.getSession", &[]))
            })
            .await?;
        let body = answer.json().unwrap_or(Value::Null);
        let handle = body["handle"]
            .as_str()
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .unwrap_or(&session.handle)
            .to_owned();
        Ok(Some(Account {
            username: handle,
            id: body["did"]
                .as_str()
                .map(str::to_owned)
                .or(Some(session.did)),
        }))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0))]
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        // The keys of earlier attempts, oldest first: a record at one is this post.
        let mut earlier_keys: Vec<(&str, i64)> = Vec::new();
        for attempt in &req.earlier {
            if let Some(key) = attempt.platform_ref.as_deref().filter(|k| is_tid(k))
                && !earlier_keys.iter().any(|(k, _)| *k == key)
            {
                earlier_keys.push((key, attempt.generation));
            }
        }
        for (key, generation) in &earlier_keys {
            match self.get_record(key).await {
                Ok(Some(Stored { uri, .. })) => {
                    let handle = self.handle().await;
                    return Ok(Prepared {
                        platform_ref: None,
                        already_published: Some(Proof {
                            attempt: Some(*generation),
                            ..self.proof(
                            &handle,
                            &uri,
                            key,
                            format!(
                                "bluesky: the record at key {key}, sent by the attempt of generation {generation}, exists ({uri})"
                            ),
                        )
                        }),
                    });
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(StepError::transient(format!(
                        "{e}: the record key {key} of an earlier attempt cannot be read; nothing new is sent until it can"
                    )));
                }
            }
        }
        // The earliest earlier key, or a new one: one key per post while its records can
        // still land, so the PDS refuses a second record.
        let rkey = match earlier_keys.first() {
            Some((key, _)) => (*key).to_owned(),
            None => {
                let mut random = [0u8; 2];
                getrandom::fill(&mut random).map_err(|e| {
                    StepError::transient(format!("bluesky: no randomness for a record key: {e}"))
                })?;
                tid(
                    key_time(req.now, &req.part.published),
                    u16::from_le_bytes(random),
                )
            }
        };
        let (mut facets, mentions) = link_and_tag_facets(&req.text);
        // A session now: the images and the create need one, and the account check may
        // have run in another process.
        self.session().await?;
        let reply = self.reply(req).await?;
        facets.extend(self.mention_facets(&mentions).await);
        let images = self.upload_images(req).await?;
        self.staged.lock().expect("lock is never poisoned").insert(
            rkey.clone(),
            Staged {
                facets,
                images,
                reply,
            },
        );
        Ok(Prepared::with_ref(rkey))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0))]
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        let Some(rkey) = prepared.platform_ref.as_deref().filter(|k| is_tid(k)) else {
            return Outcome::NotSent {
                reason: "bluesky: no record key was prepared; nothing was sent".into(),
                retry_after: None,
            };
        };
        let staged = self
            .staged
            .lock()
            .expect("lock is never poisoned")
            .remove(rkey)
            .unwrap_or_default();
        if req.part.is_later() && staged.reply.is_none() {
            return Outcome::NotSent {
                reason: format!(
                    "bluesky: part {} was not prepared with its reply references; nothing was sent",
                    req.part.number
                ),
                retry_after: None,
            };
        }
        let mut session = match self.session().await {
            Ok(session) => session,
            Err(e) => {
                return match e {
                    StepError::Rejected { reason, credential } => {
                        Outcome::Rejected { reason, credential }
                    }
                    StepError::Transient {
                        reason,
                        retry_after,
                    } => Outcome::NotSent {
                        reason: format!("{reason}; nothing was sent"),
                        retry_after,
                    },
                };
            }
        };
        let record = self.record(req, &staged);
        for renewed in [false, true] {
            let body = json!({
                "repo": session.did,
                "collection": POST_COLLECTION,
                "rkey": rkey,
                "record": record,
            });
            let request = self
                .client
                .post(self.xrpc("com.atproto.repo.createRecord", &[]))
                .bearer_auth(session.access.expose_secret())
                .timeout(self.timeout)
                .header("content-type", "application/json")
                .body(body.to_string());
            let answer = match send(request).await {
                Ok(answer) => answer,
                Err(e) => {
                    return transport_failure(&e)
                        .outcome(self.transport_summary("create record", &e));
                }
            };
            if answer.is_success() {
                let answered = answer
                    .json()
                    .and_then(|v| v["uri"].as_str().map(str::to_owned));
                // The record is where the PDS says it is. A key other than the one airlock
                // chose means this server ignores client-chosen keys: the post is out at
                // that key, but the key fences nothing there (a retry after an unknown
                // outcome could make a second record), so the channel pauses.
                if let Some(uri) = &answered
                    && let Some(written) = rkey_of(uri)
                    && written != rkey
                {
                    return Outcome::Published(Published {
                        platform_post_id: Some(uri.clone()),
                        permalink: Some(permalink(&session.handle, written)),
                        pause: Some(format!(
                            "bluesky: the PDS wrote the record at key {written}, not at the key {rkey} airlock chose: this server ignores client-chosen record keys; retries could duplicate, since reconcile and retries rely on the key: the post is published at {uri}; publish on this channel only after checking the server, then resume"
                        )),
                        existing: None,
                    });
                }
                let uri = answered
                    .filter(|uri| rkey_of(uri) == Some(rkey))
                    .unwrap_or_else(|| format!("at://{}/{POST_COLLECTION}/{rkey}", session.did));
                return Outcome::Published(Published {
                    platform_post_id: Some(uri),
                    permalink: Some(permalink(&session.handle, rkey)),
                    pause: None,
                    existing: None,
                });
            }
            if expired(&answer) && !renewed {
                // The PDS refused the token before writing anything: renew and send the
                // same record, at the same key, once more.
                match self.renew(&session).await {
                    Ok(fresh) => {
                        session = fresh;
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
                                "{reason}: the session expired and could not be renewed; nothing was written"
                            ),
                            retry_after,
                        };
                    }
                }
            }
            return self.publish_failure(&answer);
        }
        unreachable!("the loop returns on its second pass")
    }

    async fn verify(&self, platform_post_id: &str) -> Verification {
        let Some(rkey) = rkey_of(platform_post_id) else {
            return Verification::Failed {
                reason: format!("bluesky: {platform_post_id:?} is not a post's at:// URI"),
            };
        };
        match self.get_record(rkey).await {
            Ok(Some(_)) => Verification::Verified {
                permalink: Some(permalink(&self.handle().await, rkey)),
            },
            Ok(None) => Verification::Failed {
                reason: format!("bluesky: no record at key {rkey}"),
            },
            Err(reason) => Verification::Failed { reason },
        }
    }

    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        let Some(rkey) = req.platform_ref.as_deref().filter(|k| is_tid(k)) else {
            return Evidence::NoProof;
        };
        match self.get_record(rkey).await {
            Ok(Some(Stored { uri, .. })) => {
                let handle = self.handle().await;
                Evidence::Published(self.proof(
                    &handle,
                    &uri,
                    rkey,
                    format!("bluesky: the record at this attempt's key {rkey} exists ({uri})"),
                ))
            }
            Ok(None) => Evidence::NoProof,
            Err(reason) => {
                tracing::warn!(%reason, "reconcile: bluesky record read failed");
                Evidence::NoProof
            }
        }
    }
}

/// `kind = "bluesky"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlueskyConfig {
    /// The app password's file (0600).
    pub token_file: PathBuf,
    /// The handle the session must name.
    pub account: String,
    /// What the session is created with, if not the handle (the account's email or DID).
    pub identifier: Option<String>,
    /// The account's PDS (default [`DEFAULT_BASE_URL`]).
    pub base_url: Option<String>,
}

impl KindConfig for BlueskyConfig {
    crate::kind::token_keys!(base_url: optional);

    fn build(&self, _: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String> {
        let timeout = common.request_timeout.as_std();
        let defaults = BlueskySettings::new(self.account.clone(), read_token(&self.token_file)?);
        let settings = BlueskySettings {
            base_url: self.base_url.clone().unwrap_or(defaults.base_url.clone()),
            identifier: self.identifier.clone(),
            request_timeout: timeout,
            ..defaults
        };
        let bluesky = Bluesky::new(settings, crate::http::client(timeout));
        Ok(Arc::new(bluesky.map_err(|e| e.to_string())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tids_are_13_sortable_characters_of_time_and_clock() {
        let at = DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let key = tid(at, 7);
        assert!(is_tid(&key), "{key}");
        let later = tid(at + chrono::Duration::microseconds(1), 0);
        assert!(later > key, "{later} sorts after {key}");
        assert_ne!(tid(at, 1), tid(at, 2));
        assert!(!is_tid("3jzfcijpj2z2a-"));
        assert!(!is_tid("zzzzzzzzzzzzz"), "the top bit is zero");
        assert_eq!(
            rkey_of("at://did:plc:abc/app.bsky.feed.post/3lbxyz"),
            Some("3lbxyz")
        );
        assert_eq!(rkey_of("at://did:plc:abc/app.bsky.feed.like/3lbxyz"), None);
    }

    #[test]
    fn a_later_parts_key_sorts_after_every_part_already_out() {
        let at = DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let key = tid(at, 1000);
        assert_eq!(tid_micros(&key), Some(at.timestamp_micros()));
        assert_eq!(tid_micros("3jzfcijpj2z2a-"), None);
        let part = |number, key: &str| PublishedPart {
            number,
            platform_post_id: format!("at://did:plc:abc/app.bsky.feed.post/{key}"),
            permalink: None,
        };
        // Prepared within the same clock tick as part 1, or on a clock behind it.
        for now in [at, at - chrono::Duration::seconds(5)] {
            let next = tid(key_time(now, &[part(1, &key)]), 0);
            assert!(next > key, "{next} sorts after {key}");
        }
        // A clock ahead of every part is kept as it is.
        let later = at + chrono::Duration::seconds(1);
        assert_eq!(key_time(later, &[part(1, &key)]), later);
        assert_eq!(key_time(at, &[]), at);
        // A part at a key that is no TID (a server choosing its own keys) bounds nothing.
        assert_eq!(key_time(at, &[part(1, "3lfake0000001x")]), at);
    }

    #[test]
    fn links_tags_and_mentions_get_utf8_byte_offsets() {
        let text = "猫 #cats at https://inn.example/a. Ask @mochi.bsky.social! #42 x#no";
        let (facets, mentions) = link_and_tag_facets(text);
        let spans: Vec<(&str, &str)> = facets
            .iter()
            .map(|f| {
                let start = f["index"]["byteStart"].as_u64().unwrap() as usize;
                let end = f["index"]["byteEnd"].as_u64().unwrap() as usize;
                (
                    f["features"][0]["$type"].as_str().unwrap(),
                    &text[start..end],
                )
            })
            .collect();
        assert_eq!(
            spans,
            [
                ("app.bsky.richtext.facet#link", "https://inn.example/a"),
                ("app.bsky.richtext.facet#tag", "#cats"),
            ]
        );
        assert_eq!(facets[1]["features"][0]["tag"], "cats");
        let (start, end, handle) = &mentions[0];
        assert_eq!(&text[*start..*end], "@mochi.bsky.social");
        assert_eq!(handle, "mochi.bsky.social");
        assert_eq!(mentions.len(), 1);
    }
}
