//! A fake of a Bluesky PDS (AT Protocol XRPC), per docs/platforms.md#bluesky.
//!
//! - `com.atproto.server.createSession` takes the handle, email or DID and the app
//!   password (a wrong one answers 401 `AuthenticationRequired`); sessions hand out
//!   opaque access and refresh tokens. [`State::expire_sessions_at`] makes every access
//!   token expire when a route is first called (400 `ExpiredToken`, as the PDS answers);
//!   `refreshSession` takes the refresh token in the `Authorization` header and rotates
//!   both, unless [`State::refresh_refused`].
//! - `getSession` names the handle and DID; `resolveHandle` resolves known handles.
//! - `createRecord` on `app.bsky.feed.post` at a client-chosen `rkey`: a key that already
//!   holds a record answers 500 `InternalServerError` (what the PDS does today); a text
//!   over 300 graphemes or 3,000 bytes answers 400 `InvalidRequest`; a spent write budget
//!   answers 429 `RateLimitExceeded` with `RateLimit-*` headers. [`CreateMode`] acts out
//!   lost answers: the record is written and the answer is a 5xx or comes too late;
//!   [`State::create_mode_of`] does so for one record of a thread only (part 3's).
//!   [`State::ignore_client_rkey`] acts out a server that writes at a key of its own.
//!   A reply (`record.reply`) must name `root` and `parent` as strong references
//!   (`{uri, cid}`, else 400 `InvalidRequest`, as the lexicon says); the record keeps them
//!   as written ([`Record::parent`], [`Record::root`]), so a test reads the chain back.
//! - `getRecord` by handle or DID answers the record or 400 `RecordNotFound`.
//! - `uploadBlob` keeps the bytes and answers a blob reference.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::CANARY;
use crate::fake::{ANY, Fake, Platform, mount_routes, query, spend};

/// Any number of calls, for an [`Expect`] field.
pub const ANY_CALLS: u64 = ANY;

/// The account's handle.
pub const HANDLE: &str = "inn-cats.bsky.social";
/// The account's DID.
pub const DID: &str = "did:plc:inncats7x2k4m";

/// How `createRecord` behaves (`CreateThen…` writes the record).
pub use crate::fake::CreateMode;

/// A running fake PDS.
pub type BlueskyFake = Fake<State>;

/// The XRPC methods the fake serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `com.atproto.server.createSession`.
    CreateSession,
    /// `com.atproto.server.refreshSession`.
    RefreshSession,
    /// `com.atproto.server.getSession`.
    GetSession,
    /// `com.atproto.identity.resolveHandle`.
    ResolveHandle,
    /// `com.atproto.repo.uploadBlob`.
    UploadBlob,
    /// `com.atproto.repo.createRecord`.
    CreateRecord,
    /// `com.atproto.repo.getRecord`.
    GetRecord,
}

impl Route {
    /// Every route, in the order the fake mounts them.
    pub const ALL: [Route; 7] = [
        Route::CreateSession,
        Route::RefreshSession,
        Route::GetSession,
        Route::ResolveHandle,
        Route::UploadBlob,
        Route::CreateRecord,
        Route::GetRecord,
    ];

    fn nsid(self) -> &'static str {
        match self {
            Route::CreateSession => "com.atproto.server.createSession",
            Route::RefreshSession => "com.atproto.server.refreshSession",
            Route::GetSession => "com.atproto.server.getSession",
            Route::ResolveHandle => "com.atproto.identity.resolveHandle",
            Route::UploadBlob => "com.atproto.repo.uploadBlob",
            Route::CreateRecord => "com.atproto.repo.createRecord",
            Route::GetRecord => "com.atproto.repo.getRecord",
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Route::GetSession | Route::ResolveHandle | Route::GetRecord => "GET",
            _ => "POST",
        }
    }
}

/// A record in the repository.
#[derive(Debug, Clone)]
pub struct Record {
    /// Its key.
    pub rkey: String,
    /// The record as written.
    pub value: Value,
    /// Its content id.
    pub cid: String,
}

/// A strong reference to a record: `(uri, cid)`.
pub type StrongRef = (String, String);

fn strong_ref(value: &Value) -> Option<StrongRef> {
    Some((
        value["uri"].as_str()?.to_owned(),
        value["cid"].as_str()?.to_owned(),
    ))
}

impl Record {
    /// Its `at://` URI.
    pub fn uri(&self) -> String {
        format!("at://{DID}/app.bsky.feed.post/{}", self.rkey)
    }

    /// The strong reference a reply to it names.
    pub fn strong_ref(&self) -> StrongRef {
        (self.uri(), self.cid.clone())
    }

    /// Its text.
    pub fn text(&self) -> &str {
        self.value["text"].as_str().unwrap_or("")
    }

    /// The record it replies to (`reply.parent`), if it is a reply.
    pub fn parent(&self) -> Option<StrongRef> {
        strong_ref(&self.value["reply"]["parent"])
    }

    /// The thread's first record (`reply.root`), if it is a reply.
    pub fn root(&self) -> Option<StrongRef> {
        strong_ref(&self.value["reply"]["root"])
    }
}

/// The fake's state.
#[derive(Debug)]
pub struct State {
    /// The account's handle (what sessions name).
    pub handle: String,
    /// Its email, also accepted as `identifier`.
    pub email: String,
    /// The app password.
    pub password: String,
    /// Every access token expires when this route is first called with one.
    pub expire_sessions_at: Option<Route>,
    /// `refreshSession` refuses every refresh token (400 `ExpiredToken`).
    pub refresh_refused: bool,
    /// How `createRecord` behaves.
    pub create_mode: CreateMode,
    /// How the create that writes the nth record (from 1) behaves, instead of
    /// `create_mode`: `{3: CreateThenStatus(500)}` loses the answer of a thread's part 3
    /// once its record is stored.
    pub create_mode_of: HashMap<usize, CreateMode>,
    /// Writes left before 429 (`None`: no limit).
    pub writes_left: Option<u32>,
    /// `createRecord` ignores the client's `rkey` and writes at a key of its own (whether
    /// bsky.social accepts client-chosen post keys today is unconfirmed, so a server that
    /// does not is acted out).
    pub ignore_client_rkey: bool,
    /// Handles `resolveHandle` knows, with their DIDs.
    pub known_handles: HashMap<String, String>,
    /// The records, in the order written.
    pub records: Vec<Record>,
    /// Uploaded blobs: their sizes and MIME types.
    pub blobs: Vec<(usize, String)>,
    access: HashSet<String>,
    refresh: HashSet<String>,
    expired_once: HashSet<Route>,
    next: u64,
}

impl Default for State {
    fn default() -> Self {
        State {
            handle: HANDLE.into(),
            email: "cats@inn.example".into(),
            password: CANARY.into(),
            expire_sessions_at: None,
            refresh_refused: false,
            create_mode: CreateMode::Normal,
            create_mode_of: HashMap::new(),
            writes_left: None,
            ignore_client_rkey: false,
            known_handles: HashMap::from([(
                "mochi.bsky.social".to_owned(),
                "did:plc:mochi".to_owned(),
            )]),
            records: Vec::new(),
            blobs: Vec::new(),
            access: HashSet::new(),
            refresh: HashSet::new(),
            expired_once: HashSet::new(),
            next: 0,
        }
    }
}

impl State {
    /// The record at `rkey`, if any.
    pub fn record(&self, rkey: &str) -> Option<&Record> {
        self.records.iter().find(|r| r.rkey == rkey)
    }

    /// Posts written.
    pub fn posts(&self) -> usize {
        self.records.len()
    }

    /// The record a strong reference names, if its uri and cid are a stored record's.
    pub fn resolve(&self, reference: &StrongRef) -> Option<&Record> {
        self.records
            .iter()
            .find(|r| r.uri() == reference.0 && r.cid == reference.1)
    }

    /// Sessions created so far (each a pair of tokens derived from the password, so a
    /// leak of one is found by the password's canary).
    fn issue(&mut self) -> Value {
        self.next += 1;
        let access = format!("{}-access-{}", self.password, self.next);
        let refresh = format!("{}-refresh-{}", self.password, self.next);
        self.access.insert(access.clone());
        self.refresh.insert(refresh.clone());
        json!({
            "accessJwt": access,
            "refreshJwt": refresh,
            "handle": self.handle,
            "did": DID,
            "email": self.email,
            "active": true,
        })
    }
}

fn error(status: u16, name: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({"error": name, "message": message}))
}

fn bearer(request: &Request) -> Option<String> {
    request
        .headers
        .get("authorization")?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::to_owned)
}

type Shared = Arc<Mutex<State>>;

struct Pds(Shared, Route);

impl Pds {
    /// Checks the access token of an authenticated call; the refusal to answer, if any.
    fn authenticate(&self, state: &mut State, request: &Request) -> Option<ResponseTemplate> {
        let token = bearer(request);
        if state.expire_sessions_at == Some(self.1) && state.expired_once.insert(self.1) {
            state.access.clear();
        }
        match token {
            Some(token) if state.access.contains(&token) => None,
            Some(token) if token.starts_with(&state.password) => {
                Some(error(400, "ExpiredToken", "Token has expired"))
            }
            _ => Some(error(
                401,
                "AuthenticationRequired",
                "Invalid identifier or password",
            )),
        }
    }
}

impl Respond for Pds {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        match self.1 {
            Route::CreateSession => {
                let identifier = body["identifier"].as_str().unwrap_or("");
                let known = [state.handle.as_str(), state.email.as_str(), DID];
                if !known.contains(&identifier)
                    || body["password"].as_str() != Some(&state.password)
                {
                    return error(
                        401,
                        "AuthenticationRequired",
                        "Invalid identifier or password",
                    );
                }
                ResponseTemplate::new(200).set_body_json(state.issue())
            }
            Route::RefreshSession => {
                let token = bearer(request).unwrap_or_default();
                if state.refresh_refused || !state.refresh.remove(&token) {
                    return error(400, "ExpiredToken", "Token has expired");
                }
                ResponseTemplate::new(200).set_body_json(state.issue())
            }
            Route::GetSession => {
                if let Some(refusal) = self.authenticate(&mut state, request) {
                    return refusal;
                }
                ResponseTemplate::new(200).set_body_json(json!({
                    "handle": state.handle, "did": DID, "email": state.email, "active": true,
                }))
            }
            Route::ResolveHandle => {
                let handle = query(request, "handle").unwrap_or_default();
                let did = if handle == state.handle {
                    Some(DID.to_owned())
                } else {
                    state.known_handles.get(&handle).cloned()
                };
                match did {
                    Some(did) => ResponseTemplate::new(200).set_body_json(json!({"did": did})),
                    None => error(400, "InvalidRequest", "Unable to resolve handle"),
                }
            }
            Route::UploadBlob => {
                if let Some(refusal) = self.authenticate(&mut state, request) {
                    return refusal;
                }
                let mime = request
                    .headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("application/octet-stream")
                    .to_owned();
                state.blobs.push((request.body.len(), mime.clone()));
                let link = format!("bafkreiblob{}", state.blobs.len());
                ResponseTemplate::new(200).set_body_json(json!({"blob": {
                    "$type": "blob", "ref": {"$link": link}, "mimeType": mime,
                    "size": request.body.len(),
                }}))
            }
            Route::CreateRecord => {
                if let Some(refusal) = self.authenticate(&mut state, request) {
                    return refusal;
                }
                if body["repo"].as_str() != Some(DID)
                    && body["repo"].as_str() != Some(&state.handle)
                {
                    return error(400, "InvalidRequest", "Invalid repo");
                }
                if body["collection"] != "app.bsky.feed.post" {
                    return error(400, "InvalidRequest", "Invalid collection");
                }
                if !spend(&mut state.writes_left) {
                    let reset = chrono::Utc::now().timestamp() + 120;
                    return error(429, "RateLimitExceeded", "Rate Limit Exceeded")
                        .insert_header("ratelimit-limit", "5000")
                        .insert_header("ratelimit-remaining", "0")
                        .insert_header("ratelimit-reset", reset.to_string().as_str())
                        .insert_header("ratelimit-policy", "5000;w=3600");
                }
                let text = body["record"]["text"].as_str().unwrap_or("");
                if text.graphemes_count() > 300 || text.len() > 3000 {
                    return error(
                        400,
                        "InvalidRequest",
                        "Invalid app.bsky.feed.post record: Record/text must not be longer than 300 graphemes",
                    );
                }
                let reply = &body["record"]["reply"];
                if !reply.is_null() {
                    for side in ["root", "parent"] {
                        if strong_ref(&reply[side]).is_none() {
                            return error(
                                400,
                                "InvalidRequest",
                                &format!(
                                    "Invalid app.bsky.feed.post record: Record/reply/{side} must be a strongRef with uri and cid"
                                ),
                            );
                        }
                    }
                }
                let mode = state
                    .create_mode_of
                    .get(&(state.records.len() + 1))
                    .copied()
                    .unwrap_or(state.create_mode);
                if let CreateMode::StatusWithoutCreating(code) = mode {
                    return error(code, "InternalServerError", "Internal Server Error");
                }
                let client_rkey = body["rkey"]
                    .as_str()
                    .filter(|_| !state.ignore_client_rkey)
                    .map(str::to_owned);
                let rkey = client_rkey.unwrap_or_else(|| {
                    state.next += 1;
                    format!("3lfake{:07}", state.next)
                });
                if state.record(&rkey).is_some() {
                    // What the PDS does today for a key that holds a record.
                    return error(500, "InternalServerError", "Internal Server Error");
                }
                state.next += 1;
                let cid = format!("bafyreifake{}", state.next);
                state.records.push(Record {
                    rkey: rkey.clone(),
                    value: body["record"].clone(),
                    cid: cid.clone(),
                });
                let answer = ResponseTemplate::new(200).set_body_json(json!({
                    "uri": format!("at://{DID}/app.bsky.feed.post/{rkey}"),
                    "cid": cid,
                    "commit": {"cid": "bafyreicommit", "rev": "3lrev"},
                    "validationStatus": "valid",
                }));
                mode.answer(answer, |code| {
                    error(code, "InternalServerError", "Internal Server Error")
                })
            }
            Route::GetRecord => {
                let repo = query(request, "repo").unwrap_or_default();
                if repo != DID && repo != state.handle {
                    return error(400, "InvalidRequest", "Could not find repo");
                }
                let rkey = query(request, "rkey").unwrap_or_default();
                match state.record(&rkey) {
                    Some(record) => ResponseTemplate::new(200).set_body_json(json!({
                        "uri": format!("at://{DID}/app.bsky.feed.post/{rkey}"),
                        "cid": record.cid,
                        "value": record.value,
                    })),
                    None => error(400, "RecordNotFound", "Could not locate record"),
                }
            }
        }
    }
}

trait Graphemes {
    fn graphemes_count(&self) -> usize;
}

impl Graphemes for str {
    fn graphemes_count(&self) -> usize {
        unicode_segmentation::UnicodeSegmentation::graphemes(self, true).count()
    }
}

/// How many calls each route must get in a test ([`ANY`]: any number).
#[derive(Debug, Clone, Copy, Default)]
pub struct Expect {
    /// `createSession`.
    pub create_session: u64,
    /// `refreshSession`.
    pub refresh_session: u64,
    /// `getSession` (the account check).
    pub get_session: u64,
    /// `resolveHandle`.
    pub resolve: u64,
    /// `uploadBlob`.
    pub upload: u64,
    /// `createRecord` (irreversible).
    pub create: u64,
    /// `getRecord`.
    pub get_record: u64,
}

impl Expect {
    /// Any number of calls to every route.
    pub const ANY: Expect = Expect {
        create_session: ANY,
        refresh_session: ANY,
        get_session: ANY,
        resolve: ANY,
        upload: ANY,
        create: ANY,
        get_record: ANY,
    };

    /// Nothing may be called.
    pub const NONE: Expect = Expect {
        create_session: 0,
        refresh_session: 0,
        get_session: 0,
        resolve: 0,
        upload: 0,
        create: 0,
        get_record: 0,
    };

    /// A text post: one session, the account check, the create, the read-back.
    pub const ONE_POST: Expect = Expect {
        create_session: 1,
        refresh_session: 0,
        get_session: 1,
        resolve: 0,
        upload: 0,
        create: 1,
        get_record: 1,
    };

    fn times(&self, route: Route) -> u64 {
        match route {
            Route::CreateSession => self.create_session,
            Route::RefreshSession => self.refresh_session,
            Route::GetSession => self.get_session,
            Route::ResolveHandle => self.resolve,
            Route::UploadBlob => self.upload,
            Route::CreateRecord => self.create,
            Route::GetRecord => self.get_record,
        }
    }
}

impl Platform for State {
    type Expect = Expect;

    async fn mount(fake: &BlueskyFake, expect: Expect) {
        let routes = Route::ALL.map(|route| {
            let path = format!("/xrpc/{}", route.nsid());
            let matcher = move |request: &Request| {
                request.method.as_str() == route.verb() && request.url.path() == path
            };
            let responder = Pds(fake.state.clone(), route);
            (
                route.nsid().to_owned(),
                matcher,
                responder,
                expect.times(route),
            )
        });
        let unexpected = error(501, "MethodNotImplemented", "Method Not Implemented");
        mount_routes(&fake.server, routes, unexpected).await;
    }
}
