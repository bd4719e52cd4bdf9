//! Meta's Graph API conventions, shared by [`crate::threads`] and [`crate::instagram`].
//!
//! Both platforms publish in two steps: a *container* is created and processed
//! (repeatable: an unused container just expires after 24 h), then
//! `…_publish?creation_id=<container>` makes it public (the irreversible step). This
//! module holds what the two share:
//!
//! - requests with the token in an `Authorization: Bearer` header (Meta also accepts an
//!   `access_token` query parameter; it is never used, so no URL ever carries the token);
//! - the error envelope `{"error": {"message", "type", "code", "error_subcode",
//!   "is_transient"}}` and what its codes mean ([`Refusal`]);
//! - container polling, the publishing-limit read, the permalink read, and the container
//!   read that settles an unknown outcome;
//! - the rule that keeps a retry from making a second post: while a container an earlier
//!   attempt sent can still be published, the next attempt publishes that same container
//!   (the platform publishes a container once) and never makes a new one;
//! - carousels: item containers (`is_carousel_item=true`) made and polled until
//!   `FINISHED`, then the `CAROUSEL` parent with `children=<ids>`, which is the container
//!   published and recorded;
//! - finding the media id of a published container when a later part must reply to it
//!   (the container read does not name it): a list read matched by text and time
//!   ([`MediaSearch`]).
//!
//! It knows neither platform's parameters nor its paths; the adapters pass them in.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use reqwest::header::CONTENT_TYPE;
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use airlock_core::{Outcome, Published, Span};

use crate::http::{
    Answer, Redactor, StatusTable, describe_transport, endpoint, form_body, id_string, retry_after,
    send, transport_failure,
};
use crate::{Evidence, Prepared, Proof, PublishRequest, StepError, Verification};

/// A channel's `poll_interval` when it sets none: the pause between two container reads.
pub(crate) fn default_poll_interval() -> Span {
    Span::seconds(5)
}

/// A channel's `poll_timeout` when it sets none: how long a container may take.
pub(crate) fn default_poll_timeout() -> Span {
    Span::minutes(5)
}

/// How long after an attempt's publish was sent its container may be published again
/// (when that attempt's outcome is unknown and a person requeued the post).
pub(crate) fn reuse_after() -> Duration {
    Duration::minutes(15)
}

/// When to look again after a publishing limit was reached. The limits are rolling 24 h
/// windows whose oldest entry the API does not show, so the exact moment a slot frees is
/// unknown; an hour keeps the number of refused tries small.
pub(crate) fn limit_retry() -> Duration {
    Duration::hours(1)
}

/// One Graph API host and version, with the channel's token.
#[derive(Debug)]
pub(crate) struct Graph {
    platform: &'static str,
    base_url: String,
    version: String,
    token: SecretString,
    client: reqwest::Client,
    timeout: StdDuration,
    redactor: Redactor,
}

/// The fields of a container's status read, which differ between the platforms.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ContainerFields {
    /// The `fields` query value.
    pub query: &'static str,
    /// The field holding the state (`IN_PROGRESS`, `FINISHED`, `PUBLISHED`, `ERROR`, `EXPIRED`).
    pub status: &'static str,
    /// The field holding the detail on `ERROR`.
    pub detail: &'static str,
}

/// The fields of a publishing-limit read: the posts' quota, or (Threads) the replies'.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LimitFields {
    /// The field holding the count in the rolling window.
    pub usage: &'static str,
    /// The object holding `quota_total`.
    pub config: &'static str,
    /// What it counts, for messages.
    pub counts: &'static str,
}

/// The posts' publishing limit.
pub(crate) const POST_LIMIT: LimitFields = LimitFields {
    usage: "quota_usage",
    config: "config",
    counts: "posts",
};

/// The replies' publishing limit (Threads: a thread's later parts and its first comment).
pub(crate) const REPLY_LIMIT: LimitFields = LimitFields {
    usage: "reply_quota_usage",
    config: "reply_config",
    counts: "replies",
};

/// Whether a later part of the post replies to (or comments on) this one, so its
/// `platform_post_id` must be known.
pub(crate) fn id_needed(req: &PublishRequest) -> bool {
    req.part.number < req.part.of
}

/// Whose objects a [`MediaSearch`] list holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    /// Only the account's own (its media list).
    Account,
    /// Anyone's: only those with this boolean field `true` are the account's.
    Flag(&'static str),
    /// Anyone's: only those with this `username` are the account's.
    Username(String),
}

/// How to find an object the account published, when no answer named its id: a list read,
/// matched by text, owner and time. Used only where a later part needs the id (the
/// container read does not give it) and for comments, which have no container.
#[derive(Debug, Clone)]
pub(crate) struct MediaSearch {
    /// What is listed, for messages ("the replies to part 1").
    pub what: String,
    /// The list path (`me/threads`, `{media-id}/replies`, `{user}/media`, `{media-id}/comments`).
    pub segments: Vec<String>,
    /// The `fields` query value.
    pub fields: &'static str,
    /// The field holding the text (`text`, `caption`).
    pub text_field: &'static str,
    /// The text sent.
    pub text: String,
    /// Which entries are the account's.
    pub owner: Owner,
    /// Entries older than this are not this attempt's.
    pub since: DateTime<Utc>,
}

impl MediaSearch {
    /// The earliest moment a request of `req` (this attempt's or an earlier one's) may have
    /// landed, with a margin for the platform's clock.
    pub fn since(req: &PublishRequest) -> DateTime<Utc> {
        let first = req
            .earlier
            .iter()
            .map(|a| a.sent_at)
            .min()
            .map_or(req.now, |sent| sent.min(req.now));
        first - Duration::minutes(10)
    }
}

/// What a [`MediaSearch`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// The object's id.
    pub id: String,
    /// Its permalink, when listed.
    pub permalink: Option<String>,
    /// What matched, for the event note.
    pub note: String,
}

/// Reads Graph's `2026-09-30T08:00:00+0000` (and RFC 3339).
fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%z")
        .or_else(|_| DateTime::parse_from_rfc3339(text))
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// What a Graph error means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The token is invalid, expired or lacks a permission (code 190, 102, 10, 200–299; HTTP 401/403).
    Credential,
    /// Throttled or a publishing limit reached (codes 4, 17, 32, 613, 80002, 9/2207042; HTTP 429/408):
    /// the call was refused before it did anything.
    Throttled,
    /// The container cannot be published (not ready, expired, not found): nothing was published.
    ContainerUnusable,
    /// The platform failed internally (codes 1, 2, -1, -2, `is_transient`; 5xx).
    ServerTrouble,
    /// Any other definite refusal.
    Refused,
}

/// The parts of a Graph error envelope that classification and summaries use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GraphError {
    message: String,
    code: Option<i64>,
    subcode: Option<i64>,
    is_transient: bool,
}

impl GraphError {
    /// Reads `{"error": {...}}`; codes may come as numbers or numeric strings.
    fn parse(body: &str) -> Option<GraphError> {
        let value: Value = serde_json::from_str(body).ok()?;
        let error = value.get("error")?.as_object()?;
        let number = |key: &str| match error.get(key)? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("").trim();
        let message = match text("error_user_msg") {
            "" => text("message").to_owned(),
            user_msg => format!("{} ({user_msg})", text("message")),
        };
        Some(GraphError {
            message,
            code: number("code"),
            subcode: number("error_subcode"),
            is_transient: error
                .get("is_transient")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }
}

/// Classifies a non-2xx answer by its Graph code first, its HTTP status second.
pub(crate) fn refusal(answer: &Answer) -> Refusal {
    if let Some(error) = GraphError::parse(answer.text()) {
        match (error.code, error.subcode) {
            (Some(190 | 102 | 10 | 200..=299), _) => return Refusal::Credential,
            // "Action restricted as suspected spam": waiting does not lift it.
            (Some(4), Some(2207051)) => return Refusal::Refused,
            (Some(9), Some(2207042)) | (Some(4 | 17 | 32 | 613 | 80002), _) => {
                return Refusal::Throttled;
            }
            (Some(9007), _) | (Some(24), Some(4279009)) | (Some(-2), Some(2207020)) => {
                return Refusal::ContainerUnusable;
            }
            (Some(1 | 2 | -1 | -2), _) => return Refusal::ServerTrouble,
            _ if error.is_transient => return Refusal::ServerTrouble,
            _ => {}
        }
    }
    match answer.status {
        401 | 403 => Refusal::Credential,
        408 | 429 => Refusal::Throttled,
        400..=499 => Refusal::Refused,
        _ => Refusal::ServerTrouble,
    }
}

const CREDENTIAL_HINT: &str = "the token was refused (invalid, expired or missing a permission): replace the token file, then resume the channel";

impl Graph {
    /// A Graph client for `base_url` (checked) and `version` (`v1.0`, `v24.0`).
    pub fn new(
        platform: &'static str,
        base_url: String,
        version: String,
        token: SecretString,
        client: reqwest::Client,
        timeout: StdDuration,
    ) -> Self {
        let redactor = Redactor::new([token.clone()]);
        Graph {
            platform,
            base_url,
            version,
            token,
            client,
            timeout,
            redactor,
        }
    }

    fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> String {
        let mut path = Vec::with_capacity(segments.len() + 1);
        path.push(self.version.as_str());
        path.extend_from_slice(segments);
        endpoint(&self.base_url, &path, query)
    }

    async fn get(&self, segments: &[&str], query: &[(&str, &str)]) -> reqwest::Result<Answer> {
        let request = self
            .client
            .get(self.url(segments, query))
            .bearer_auth(self.token.expose_secret())
            .timeout(self.timeout);
        send(request).await
    }

    async fn post(
        &self,
        segments: &[&str],
        query: &[(&str, &str)],
        form: &[(&str, &str)],
    ) -> reqwest::Result<Answer> {
        let request = self
            .client
            .post(self.url(segments, query))
            .bearer_auth(self.token.expose_secret())
            .timeout(self.timeout)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form_body(form));
        send(request).await
    }

    /// A one-line redacted summary: platform, step, HTTP status, Graph code and message.
    pub fn summary(&self, what: &str, answer: &Answer) -> String {
        let detail = match GraphError::parse(answer.text()) {
            Some(error) => {
                let code = match (error.code, error.subcode) {
                    (Some(code), Some(subcode)) => format!(", code {code}/{subcode}"),
                    (Some(code), None) => format!(", code {code}"),
                    _ => String::new(),
                };
                format!("{code}: {}", self.redactor.excerpt(&error.message, 160))
            }
            // Not Graph's error shape: its code only, never its text.
            None => crate::http::unkept_body(answer.text()),
        };
        self.redactor.summary(&format!(
            "{}: {what}: HTTP {}{detail}",
            self.platform, answer.status
        ))
    }

    fn transport_summary(&self, what: &str, err: &reqwest::Error) -> String {
        self.redactor.summary(&format!(
            "{}: {what}: {}",
            self.platform,
            describe_transport(err)
        ))
    }

    /// A failed repeatable step. Nothing irreversible happened, so anything that may pass
    /// later is transient; only credential problems and definite refusals are not.
    pub fn step_error(&self, what: &str, answer: &Answer) -> StepError {
        let reason = self.summary(what, answer);
        match refusal(answer) {
            Refusal::Credential => StepError::Rejected {
                reason: format!("{reason}: {CREDENTIAL_HINT}"),
                credential: true,
            },
            Refusal::Throttled => StepError::Transient {
                reason: format!("{reason}: the platform limits calls now; nothing was sent"),
                retry_after: retry_after(&answer.headers).or(Some(limit_retry())),
            },
            Refusal::ContainerUnusable | Refusal::ServerTrouble => StepError::Transient {
                reason,
                retry_after: retry_after(&answer.headers),
            },
            Refusal::Refused => StepError::Rejected {
                reason,
                credential: false,
            },
        }
    }

    fn step_json(&self, what: &str, answer: Answer) -> Result<Value, StepError> {
        if !answer.is_success() {
            return Err(self.step_error(what, &answer));
        }
        answer.json().ok_or_else(|| {
            StepError::transient(format!(
                "{}: {what}: HTTP {} with an answer that is not JSON",
                self.platform, answer.status
            ))
        })
    }

    /// `GET` a repeatable read; a 2xx JSON answer or a classified step error.
    pub async fn get_json(
        &self,
        what: &str,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> Result<Value, StepError> {
        let answer = self
            .get(segments, query)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        self.step_json(what, answer)
    }

    /// `POST` a repeatable step (container creation) with a form body.
    pub async fn post_json(
        &self,
        what: &str,
        segments: &[&str],
        form: &[(&str, &str)],
    ) -> Result<Value, StepError> {
        let answer = self
            .post(segments, &[], form)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        self.step_json(what, answer)
    }

    /// Creates a container and returns its id; `what` names the step in messages.
    pub async fn create_container(
        &self,
        what: &str,
        segments: &[&str],
        form: &[(&str, &str)],
    ) -> Result<String, StepError> {
        let answer = self.post_json(what, segments, form).await?;
        id_string(answer.get("id")).ok_or_else(|| {
            StepError::transient(format!(
                "{}: {what} answered without an id; nothing was published",
                self.platform
            ))
        })
    }

    /// Makes a carousel: one container per item, polled until each is `FINISHED` (the
    /// parent refuses items still processing), then the parent `form` with
    /// `children=<ids>`. Returns the parent's id. Items are made before any is polled, so
    /// the platform processes them side by side; `poll_timeout` bounds them all.
    async fn create_carousel(&self, steps: &PrepareSteps<'_>) -> Result<String, StepError> {
        let p = self.platform;
        let n = steps.items.len();
        let mut children = Vec::with_capacity(n);
        for (i, item) in steps.items.iter().enumerate() {
            let what = format!("carousel item {} of {n}: container creation", i + 1);
            children.push(self.create_container(&what, steps.create, item).await?);
        }
        let deadline = tokio::time::Instant::now() + steps.poll_timeout;
        for (i, child) in children.iter().enumerate() {
            let label = format!("carousel item {} of {n} (container {child})", i + 1);
            let poll = Poll {
                fields: steps.fields,
                interval: steps.poll_interval,
                deadline,
                timeout: steps.poll_timeout,
            };
            if let Ready::Published = self.wait_until_ready(child, &label, poll).await? {
                return Err(StepError::transient(format!(
                    "{p}: {label} reads PUBLISHED though no carousel with it was published; nothing was sent: a new carousel is made on the next attempt"
                )));
            }
        }
        let children = children.join(",");
        let mut form = steps.form.to_vec();
        form.push(("children", children.as_str()));
        self.create_container("carousel container creation", steps.create, &form)
            .await
    }

    /// Reads a container's state and detail.
    pub async fn container_status(
        &self,
        container: &str,
        fields: ContainerFields,
    ) -> Result<(String, Option<String>), StepError> {
        let answer = self
            .get_json(
                "container status read",
                &[container],
                &[("fields", fields.query)],
            )
            .await?;
        let detail = answer
            .get(fields.detail)
            .and_then(Value::as_str)
            .map(|d| self.redactor.summary(d))
            .filter(|d| !d.is_empty());
        match answer.get(fields.status).and_then(Value::as_str) {
            Some(status) => Ok((status.to_owned(), detail)),
            None => Err(StepError::transient(format!(
                "{}: container {container} status read has no {}",
                self.platform, fields.status
            ))),
        }
    }

    /// Polls a container until it is `FINISHED` (ready to publish) or `PUBLISHED` (an
    /// earlier attempt's request on it landed: the post is out, and that is proof).
    /// `label` names it in messages (`container 179…`, `carousel item 2 of 3 (container 179…)`).
    ///
    /// `ERROR` is a definite refusal (the media or text cannot be processed); `EXPIRED`, a
    /// container still processing at the deadline, and read errors that may pass are
    /// transient: the next attempt creates a new container.
    async fn wait_until_ready(
        &self,
        container: &str,
        label: &str,
        poll: Poll,
    ) -> Result<Ready, StepError> {
        let p = self.platform;
        loop {
            let last = match self.container_status(container, poll.fields).await {
                Ok((status, detail)) => match status.as_str() {
                    "FINISHED" => return Ok(Ready::Finished),
                    "ERROR" => {
                        return Err(StepError::Rejected {
                            reason: format!(
                                "{p}: {label} failed processing: {}: nothing was published; change the media or text, then requeue",
                                detail.as_deref().unwrap_or("no error_message given")
                            ),
                            credential: false,
                        });
                    }
                    "EXPIRED" => {
                        return Err(StepError::transient(format!(
                            "{p}: {label} expired before it was published; a new one is made on the next attempt"
                        )));
                    }
                    // Only a publish makes a container PUBLISHED, and nobody but airlock
                    // knows its id: an earlier attempt's request on it landed.
                    "PUBLISHED" => return Ok(Ready::Published),
                    other => format!("{label} is {other}"),
                },
                Err(e @ StepError::Rejected { .. }) => return Err(e),
                Err(StepError::Transient { reason, .. }) => reason,
            };
            let now = tokio::time::Instant::now();
            if now >= poll.deadline {
                return Err(StepError::transient(format!(
                    "{p}: {label} not ready after {}s (last: {last}); nothing was published; a new container is made on the next attempt",
                    poll.timeout.as_secs()
                )));
            }
            tokio::time::sleep(poll.interval.min(poll.deadline - now)).await;
        }
    }

    /// The repeatable steps of a publish, for both platforms: look at the containers that
    /// earlier attempts sent (one `PUBLISHED` proves the post is out; one that can still be
    /// published is published again rather than replaced), check the publishing limit,
    /// make a container (or a carousel: its items, then its parent) only when none can be
    /// reused, and wait until it is `FINISHED`. When the part is out already and a later
    /// part needs its media id, [`PrepareSteps::find`] finds it.
    pub async fn prepare(
        &self,
        req: &PublishRequest,
        steps: PrepareSteps<'_>,
    ) -> Result<Prepared, StepError> {
        let reuse = match self.earlier_containers(req, steps.fields).await? {
            Earlier::Published(proof) => return Ok(already(self.proven(proof, steps.find).await?)),
            Earlier::Reuse(container) => Some(container),
            Earlier::None => None,
        };
        // The limit first: a container made while the quota is used up would only expire.
        self.check_publishing_limit(steps.limit, steps.limit_fields, 1)
            .await?;
        let container = match reuse {
            Some(container) => {
                tracing::info!(
                    post_id = req.post_id.0,
                    container,
                    "publishing the earlier attempt's container again"
                );
                container
            }
            None if steps.items.is_empty() => {
                self.create_container("container creation", steps.create, steps.form)
                    .await?
            }
            None => self.create_carousel(&steps).await?,
        };
        let poll = Poll {
            fields: steps.fields,
            interval: steps.poll_interval,
            deadline: tokio::time::Instant::now() + steps.poll_timeout,
            timeout: steps.poll_timeout,
        };
        let ready = self
            .wait_until_ready(&container, &format!("container {container}"), poll)
            .await?;
        Ok(match ready {
            Ready::Finished => Prepared::with_ref(container),
            Ready::Published => {
                let proof = Proof {
                    platform_post_id: None,
                    permalink: None,
                    note: format!(
                        "{} container {container} turned PUBLISHED while this attempt waited for it: an earlier attempt's request on it landed",
                        self.platform
                    ),
                    attempt: crate::latest_attempt(&req.earlier, |a| {
                        a.platform_ref.as_deref() == Some(container.as_str())
                    }),
                };
                already(self.proven(proof, steps.find).await?)
            }
        })
    }

    /// Completes the proof that a part is out with its media id, when a later part needs
    /// it (`find`). Without the id the chain cannot go on, so the part waits (transiently:
    /// nothing is ever sent again for it) until the list shows it.
    async fn proven(
        &self,
        mut proof: Proof,
        find: Option<&MediaSearch>,
    ) -> Result<Proof, StepError> {
        let Some(search) = find else {
            return Ok(proof);
        };
        // The part is out: whatever the list read answers, nothing may make it look
        // refused, so its failures are transient too.
        let found = self.find_media(search).await.map_err(|e| StepError::Transient {
            reason: format!(
                "{}; its media id, which the next part replies to, could not be read ({e}): nothing is sent again; looked for again later",
                proof.note
            ),
            retry_after: Some(Duration::minutes(5)),
        })?;
        match found {
            Some(found) => {
                proof.note = format!("{}; {}", proof.note, found.note);
                proof.platform_post_id = Some(found.id);
                proof.permalink = found.permalink;
                Ok(proof)
            }
            None => Err(StepError::Transient {
                reason: format!(
                    "{}; its media id, which the next part replies to, is not among {} yet: nothing is sent again; looked for again later",
                    proof.note, search.what
                ),
                retry_after: Some(Duration::minutes(5)),
            }),
        }
    }

    /// Lists `search.segments` and picks the account's entry with the text sent, made
    /// since `search.since`; the oldest when several match (all of them the account's,
    /// with that text, made by this post's attempts' time).
    pub async fn find_media(&self, search: &MediaSearch) -> Result<Option<Found>, StepError> {
        let p = self.platform;
        let segments: Vec<&str> = search.segments.iter().map(String::as_str).collect();
        let answer = self
            .get_json("list read", &segments, &[("fields", search.fields)])
            .await?;
        let Some(entries) = answer.get("data").and_then(Value::as_array) else {
            return Err(StepError::transient(format!(
                "{p}: the list of {} answered without data",
                search.what
            )));
        };
        let mut matches: Vec<(DateTime<Utc>, String, Option<String>)> = Vec::new();
        for entry in entries {
            let Some(id) = id_string(entry.get("id")) else {
                continue;
            };
            let text = entry
                .get(search.text_field)
                .and_then(Value::as_str)
                .unwrap_or("");
            if text.trim() != search.text.trim() {
                continue;
            }
            let ours = match &search.owner {
                Owner::Account => true,
                Owner::Flag(field) => entry.get(*field).and_then(Value::as_bool) == Some(true),
                Owner::Username(name) => {
                    entry.get("username").and_then(Value::as_str) == Some(name.as_str())
                }
            };
            let Some(at) = entry
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(parse_timestamp)
            else {
                continue;
            };
            if ours && at >= search.since {
                let permalink = entry
                    .get("permalink")
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned);
                matches.push((at, id, permalink));
            }
        }
        matches.sort_by_key(|a| a.0);
        let count = matches.len();
        Ok(matches.into_iter().next().map(|(at, id, permalink)| Found {
            note: format!(
                "{p} lists {id} among {}, the account's, with the text sent, made at {}{}",
                search.what,
                airlock_core::time::format_utc(at),
                if count > 1 {
                    format!(" (the oldest of {count} that match)")
                } else {
                    String::new()
                }
            ),
            id,
            permalink,
        }))
    }

    /// What the containers of earlier attempts allow the next one to do.
    async fn earlier_containers(
        &self,
        req: &PublishRequest,
        fields: ContainerFields,
    ) -> Result<Earlier, StepError> {
        let p = self.platform;
        let mut live: Vec<(&str, &crate::EarlierAttempt)> = Vec::new();
        for attempt in req.earlier.iter().rev() {
            let Some(container) = attempt.platform_ref.as_deref().filter(|c| !c.is_empty()) else {
                continue;
            };
            if live.iter().any(|(c, _)| *c == container) {
                continue;
            }
            let (status, _) = self.container_status(container, fields).await.map_err(|e| {
                StepError::transient(format!(
                    "{p}: the container {container} of an earlier attempt cannot be read ({e}); no new container is made until it can, since it may still be published"
                ))
            })?;
            match status.as_str() {
                "PUBLISHED" => {
                    return Ok(Earlier::Published(Proof {
                        platform_post_id: None,
                        permalink: None,
                        note: format!(
                            "{p} container {container}, sent by the attempt of generation {}, reads PUBLISHED",
                            attempt.generation
                        ),
                        attempt: Some(attempt.generation),
                    }));
                }
                // It can never be published now.
                "EXPIRED" | "ERROR" => {}
                _ => live.push((container, attempt)),
            }
        }
        match live.as_slice() {
            [] => Ok(Earlier::None),
            [(container, attempt)] if attempt.idempotency_key == req.idempotency_key => {
                // A backend may still be processing a publish sent moments ago; publishing
                // the container again then relies on the platform refusing the second one
                // atomically, which Meta does not document. Wait until that is unlikely.
                let settled_at = attempt.sent_at + reuse_after();
                let now = req.now;
                if now < settled_at {
                    return Err(StepError::Transient {
                        reason: format!(
                            "{p}: container {container} was sent by the attempt of generation {} at {}; it is published again once its request can no longer be processing",
                            attempt.generation,
                            airlock_core::time::format_utc(attempt.sent_at)
                        ),
                        retry_after: Some(settled_at - now),
                    });
                }
                Ok(Earlier::Reuse((*container).to_owned()))
            }
            [(container, attempt), ..] => {
                // Another approved content (or several containers): publishing this one
                // again would send the old text, and a new one could make a second post.
                // Wait until the old one expires, 24 hours after it was made.
                let expires = attempt.sent_at + Duration::hours(24) + Duration::minutes(5);
                let wait = (expires - req.now).max(Duration::minutes(5));
                Err(StepError::Transient {
                    reason: format!(
                        "{p}: container {container}, sent by the attempt of generation {} for content approved earlier, can still be published; no new container is made until it expires (24 hours after it was made)",
                        attempt.generation
                    ),
                    retry_after: Some(wait),
                })
            }
        }
    }

    /// Reads a publishing-limit endpoint and refuses, with a retry hint, when the rolling
    /// quota has no room for `needed` more. An answer without both numbers is not trusted
    /// (fail closed).
    pub async fn check_publishing_limit(
        &self,
        segments: &[&str],
        fields: LimitFields,
        needed: i64,
    ) -> Result<(), StepError> {
        let p = self.platform;
        let query = format!("{},{}", fields.usage, fields.config);
        let answer = self
            .get_json("publishing limit read", segments, &[("fields", &query)])
            .await?;
        let entry = &answer["data"][0];
        let usage = entry[fields.usage].as_i64();
        let total = entry[fields.config]["quota_total"].as_i64();
        match (usage, total) {
            (Some(usage), Some(total)) if usage + needed > total => Err(StepError::Transient {
                reason: format!(
                    "{p}: the platform's publishing limit has no room for {needed} more ({usage} of {total} {} in its rolling window): nothing was sent; the post is tried again later",
                    fields.counts
                ),
                retry_after: Some(limit_retry()),
            }),
            (Some(_), Some(_)) => Ok(()),
            _ => Err(StepError::transient(format!(
                "{p}: the publishing limit answer has no {} and quota_total; nothing was sent",
                fields.usage
            ))),
        }
    }

    /// The irreversible request: `POST <segments>?creation_id=<container>`, once. A definite
    /// refusal is checked against the container: when it reads `PUBLISHED`, an earlier
    /// attempt's request published it, and that is this post.
    ///
    /// When a later part needs this one's media id (`find`) and no answer named it (a 2xx
    /// without an id, or that earlier publish), it is looked up; when it cannot be found
    /// the outcome is unknown, and reconcile settles it by the container.
    pub async fn publish(
        &self,
        segments: &[&str],
        container: &str,
        fields: ContainerFields,
        find: Option<&MediaSearch>,
    ) -> Outcome {
        let answer = match self
            .post(segments, &[("creation_id", container)], &[])
            .await
        {
            Ok(answer) => answer,
            Err(e) => return transport_failure(&e).outcome(self.transport_summary("publish", &e)),
        };
        let published = if answer.is_success() {
            // A 2xx whose body broke off or carries no id is still a publish.
            let id = answer.json().and_then(|v| id_string(v.get("id")));
            Published {
                platform_post_id: id,
                ..Published::default()
            }
        } else {
            let outcome = self.publish_failure(&answer);
            // A definite refusal may be the platform refusing to publish a container twice:
            // when the container reads PUBLISHED, an earlier attempt's request published it.
            if matches!(
                refusal(&answer),
                Refusal::ContainerUnusable | Refusal::Refused
            ) && (400..500).contains(&answer.status)
                && let Ok((status, _)) = self.container_status(container, fields).await
                && status == "PUBLISHED"
            {
                Published {
                    pause: None,
                    existing: Some(format!(
                        "{}: the publish was refused because container {container} reads PUBLISHED: an earlier attempt's request published it",
                        self.platform
                    )),
                    ..Published::default()
                }
            } else {
                return outcome;
            }
        };
        match find {
            Some(search) if published.platform_post_id.is_none() => {
                self.with_found_id(published, container, search).await
            }
            _ => Outcome::Published(published),
        }
    }

    /// A publish that named no media id, completed by the list read, or unknown.
    async fn with_found_id(
        &self,
        mut published: Published,
        container: &str,
        search: &MediaSearch,
    ) -> Outcome {
        let p = self.platform;
        match self.find_media(search).await {
            Ok(Some(found)) => {
                published.platform_post_id = Some(found.id);
                published.permalink = found.permalink;
                Outcome::Published(published)
            }
            Ok(None) => Outcome::Unknown {
                reason: format!(
                    "{p}: container {container} was published but the answer named no media id, and {} does not show it yet; the next part needs it, so the part waits for reconcile",
                    search.what
                ),
            },
            Err(e) => Outcome::Unknown {
                reason: format!(
                    "{p}: container {container} was published but the answer named no media id, and the list read failed ({e}); the part waits for reconcile"
                ),
            },
        }
    }

    /// The irreversible request for a comment (Instagram's first comment):
    /// `POST <segments>?message=<text>`, once; the answer's `id` is the comment's.
    pub async fn comment(&self, segments: &[&str], message: &str) -> Outcome {
        let answer = match self.post(segments, &[("message", message)], &[]).await {
            Ok(answer) => answer,
            Err(e) => return transport_failure(&e).outcome(self.transport_summary("comment", &e)),
        };
        if answer.is_success() {
            let id = answer.json().and_then(|v| id_string(v.get("id")));
            return Outcome::Published(Published {
                platform_post_id: id,
                ..Published::default()
            });
        }
        self.publish_failure(&answer)
    }

    /// A non-2xx answer to the irreversible request. The outcome table (docs/channels.md)
    /// decides by status; a Graph code refines a 4xx where it proves more (a token refusal,
    /// a limit, an unusable container) or less (an internal error, which cannot prove
    /// nothing was published).
    fn publish_failure(&self, answer: &Answer) -> Outcome {
        let reason = self.summary("publish", answer);
        if !(400..500).contains(&answer.status) || matches!(answer.status, 408 | 429) {
            return StatusTable::PLAIN.outcome(answer, reason);
        }
        match refusal(answer) {
            Refusal::Credential => Outcome::Rejected {
                reason: format!("{reason}: {CREDENTIAL_HINT}"),
                credential: true,
            },
            Refusal::Throttled => Outcome::NotSent {
                reason: format!("{reason}: refused by the platform's limit; nothing was published"),
                retry_after: retry_after(&answer.headers).or(Some(limit_retry())),
            },
            Refusal::ContainerUnusable => Outcome::NotSent {
                reason: format!(
                    "{reason}: the container could not be published, so nothing was; a new container is made on the next attempt"
                ),
                retry_after: None,
            },
            Refusal::ServerTrouble => Outcome::Unknown {
                reason: format!(
                    "{reason}: the platform failed internally; whether it published is unknown"
                ),
            },
            Refusal::Refused => Outcome::Rejected {
                reason,
                credential: false,
            },
        }
    }

    /// Reads a published media object back with its permalink.
    pub async fn verify(&self, media_id: &str) -> Verification {
        let answer = match self
            .get_json("read back", &[media_id], &[("fields", "id,permalink")])
            .await
        {
            Ok(answer) => answer,
            Err(e) => {
                return Verification::Failed {
                    reason: e.to_string(),
                };
            }
        };
        match id_string(answer.get("id")) {
            Some(id) if id == media_id => Verification::Verified {
                permalink: answer
                    .get("permalink")
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned),
            },
            other => Verification::Failed {
                reason: format!(
                    "{}: reading media {media_id} back returned id {other:?}",
                    self.platform
                ),
            },
        }
    }

    /// What a container read proves about an unknown outcome: `PUBLISHED` that the post
    /// went out; `EXPIRED` or `ERROR` that this attempt can never be published. `FINISHED`
    /// proves nothing — the request may still be on its way or processing — and neither
    /// does anything else, or a failed read.
    ///
    /// When a later part needs the media id (`find`), `PUBLISHED` is proof only with it:
    /// without it the evidence is [`Evidence::Unsettled`], for a person to give the id.
    pub async fn container_evidence(
        &self,
        platform_ref: Option<&str>,
        fields: ContainerFields,
        find: Option<&MediaSearch>,
    ) -> Evidence {
        let p = self.platform;
        let Some(container) = platform_ref.filter(|c| !c.is_empty()) else {
            return Evidence::NoProof;
        };
        let (status, detail) = match self.container_status(container, fields).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(platform = p, reason = %e, "reconcile: container read failed");
                return Evidence::NoProof;
            }
        };
        match status.as_str() {
            "PUBLISHED" => {
                let proof = Proof {
                    platform_post_id: None,
                    permalink: None,
                    note: format!(
                        "{p} container {container} reads PUBLISHED (the container read does not name the media id)"
                    ),
                    attempt: None,
                };
                let Some(search) = find else {
                    return Evidence::Published(proof);
                };
                match self.find_media(search).await {
                    Ok(Some(found)) => Evidence::Published(Proof {
                        platform_post_id: Some(found.id),
                        permalink: found.permalink,
                        note: format!("{p} container {container} reads PUBLISHED; {}", found.note),
                        attempt: None,
                    }),
                    Ok(None) => Evidence::Unsettled {
                        note: format!(
                            "{p} container {container} reads PUBLISHED, but {} does not show it with the text sent, so its media id (which the next part replies to) is unknown: give it when settling the part",
                            search.what
                        ),
                    },
                    Err(e) => {
                        tracing::warn!(platform = p, reason = %e, "reconcile: list read failed");
                        Evidence::NoProof
                    }
                }
            }
            "EXPIRED" => Evidence::CannotLand {
                note: format!(
                    "{p} container {container} reads EXPIRED: it can no longer be published"
                ),
            },
            "ERROR" => Evidence::CannotLand {
                note: format!(
                    "{p} container {container} reads ERROR ({}): it can never be published",
                    detail.as_deref().unwrap_or("no detail")
                ),
            },
            _ => Evidence::NoProof,
        }
    }

    /// What a list read proves about a comment (no container): the account's comment with
    /// the text sent is proof; its absence proves nothing.
    pub async fn listed_evidence(&self, search: &MediaSearch) -> Evidence {
        match self.find_media(search).await {
            Ok(Some(found)) => Evidence::Published(Proof {
                platform_post_id: Some(found.id),
                permalink: found.permalink,
                note: found.note,
                attempt: None,
            }),
            Ok(None) => Evidence::NoProof,
            Err(e) => {
                tracing::warn!(platform = self.platform, reason = %e, "reconcile: list read failed");
                Evidence::NoProof
            }
        }
    }
}

/// How to poll one container.
#[derive(Debug, Clone, Copy)]
struct Poll {
    fields: ContainerFields,
    interval: StdDuration,
    deadline: tokio::time::Instant,
    /// The bound the deadline came from, for messages.
    timeout: StdDuration,
}

/// What polling a container found.
enum Ready {
    /// Ready to publish.
    Finished,
    /// Already published by an earlier attempt's request.
    Published,
}

fn already(proof: Proof) -> Prepared {
    Prepared {
        platform_ref: None,
        already_published: Some(proof),
    }
}

/// What the containers of earlier attempts allow.
enum Earlier {
    /// None can still be published: make a new one.
    None,
    /// Publish this one again: same content, and the platform publishes a container once.
    Reuse(String),
    /// One reads `PUBLISHED`: the post is out.
    Published(Proof),
}

/// The platform-specific parts of [`Graph::prepare`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct PrepareSteps<'a> {
    /// The container status fields.
    pub fields: ContainerFields,
    /// The publishing-limit path.
    pub limit: &'a [&'a str],
    /// Which limit the part counts against.
    pub limit_fields: LimitFields,
    /// The container-creation path.
    pub create: &'a [&'a str],
    /// The container's parameters (a carousel's parent's, without `children`).
    pub form: &'a [(&'a str, &'a str)],
    /// A carousel's items' parameters, in order; empty for a single container.
    pub items: &'a [Vec<(&'a str, &'a str)>],
    /// How to find the part's media id when it turns out published already and a later
    /// part needs the id; `None` when none does.
    pub find: Option<&'a MediaSearch>,
    /// Pause between two status reads.
    pub poll_interval: StdDuration,
    /// How long a new container (a carousel's items together) may stay `IN_PROGRESS`.
    pub poll_timeout: StdDuration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderMap;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            headers: HeaderMap::new(),
            body: Some(body.to_owned()),
        }
    }

    #[test]
    fn graph_codes_refine_the_http_status() {
        let cases = [
            (
                400,
                r#"{"error":{"code":190,"error_subcode":463}}"#,
                Refusal::Credential,
            ),
            (400, r#"{"error":{"code":"190"}}"#, Refusal::Credential),
            (
                400,
                r#"{"error":{"code":9,"error_subcode":2207042}}"#,
                Refusal::Throttled,
            ),
            (
                400,
                r#"{"error":{"code":4,"error_subcode":2207051}}"#,
                Refusal::Refused,
            ),
            (400, r#"{"error":{"code":613}}"#, Refusal::Throttled),
            (
                400,
                r#"{"error":{"code":9007,"error_subcode":2207027}}"#,
                Refusal::ContainerUnusable,
            ),
            (
                400,
                r#"{"error":{"code":24,"error_subcode":4279009}}"#,
                Refusal::ContainerUnusable,
            ),
            (
                400,
                r#"{"error":{"code":-1,"error_subcode":2207001}}"#,
                Refusal::ServerTrouble,
            ),
            (
                400,
                r#"{"error":{"code":100,"is_transient":true}}"#,
                Refusal::ServerTrouble,
            ),
            (400, r#"{"error":{"code":100}}"#, Refusal::Refused),
            (401, "", Refusal::Credential),
            (429, "", Refusal::Throttled),
            (400, "not json", Refusal::Refused),
            (502, "", Refusal::ServerTrouble),
        ];
        for (status, body, expected) in cases {
            assert_eq!(refusal(&answer(status, body)), expected, "{status} {body}");
        }
    }
}
