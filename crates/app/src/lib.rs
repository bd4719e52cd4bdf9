//! The guarded operations every front end calls: the CLI, the HTTP API, MCP and the
//! dispatcher all go through [`App`], so roles, separation of duties, pauses, content
//! policy and quotas are enforced once, on every path that can publish
//! (docs/principles.md, principle 1.2).
//!
//! Layout:
//! - [`posts`]: drafting, editing, review (approve, reject, unapprove), discarding, reading.
//! - [`check`]: checking a draft without drafting it: problems, lengths, cost, quota.
//! - [`critic`]: the critic's workflow: rubrics, verdicts, the review packet, approvals
//!   required, the revision cap, quarantine and release.
//! - [`publish`]: the one guarded publish path of docs/guarded-path.md (claim, checks,
//!   reserve, intent, one irreversible request, fenced outcome, verify).
//! - [`review`]: what happens after: the reaper, reconcile, resolve and requeue.
//! - [`control`]: pauses, quota and channel status.
//! - [`tokens`]: API tokens and authentication.
//! - [`sessions`]: dashboard sessions kept (as hashes) in the ledger.
//! - [`export`]: the whole ledger, page by page, for audits and migrations.
//!
//! **API boundary:** plain data in and out ([`airlock_core`] types, [`Error`]); nothing
//! here knows HTTP, MCP or SQL.
//!
//! **The only door:** front ends reach the ledger through these operations alone; the
//! store behind `App` is private to this crate (public only with the `test-support`
//! feature, which only tests' dev-dependencies enable). The outbox [`App::deliverer`] is
//! the one other writer, and it writes only outbox rows.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use airlock_core::{Action, Actor, ChannelName, Post, PostId, PostStatus, Role, RoleSet};
use airlock_platforms::Platform;
use airlock_store::{Change, NewNotification, PostChange, Store};

pub mod check;
pub mod control;
pub mod critic;
pub mod drill;
mod error;
pub mod export;
pub mod metrics;
pub mod posts;
pub mod publish;
pub mod review;
pub mod sessions;
mod settings;
pub mod tokens;

pub use airlock_core::EVENTS;
/// The store's types that the app's operations take and return: front ends name them
/// here and never depend on the store.
pub use airlock_store::{ChannelDue, Pause, PostFilter, StoreError};
pub use error::{Error, ErrorBody, ErrorDetail, Result};
pub use settings::{AppSettings, Budget, ChannelSettings, NotifyRoute, ReviewSettings};

/// Where `app` reads the time; tests pass a fixed or steppable clock.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// Who is asking, with the roles they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Recorded on events.
    pub actor: Actor,
    /// Held roles.
    pub roles: RoleSet,
    /// Exempt from separation of duties (the local CLI and auto-approve principals).
    pub sod_exempt: bool,
}

impl Principal {
    /// The local command line: operator, exempt from separation of duties.
    pub fn cli() -> Self {
        Principal {
            actor: Actor::Cli,
            roles: RoleSet::of(&[Role::Operator]),
            sod_exempt: true,
        }
    }

    /// A configured auto-approve principal: critic, exempt from separation of duties.
    pub fn auto_approver(name: &str) -> Self {
        Principal {
            actor: Actor::AutoApprover(name.to_owned()),
            roles: RoleSet::of(&[Role::Critic]),
            sod_exempt: true,
        }
    }

    /// The slot scheduler: drafts posts.
    pub fn scheduler() -> Self {
        Principal {
            actor: Actor::Scheduler,
            roles: RoleSet::of(&[Role::Writer]),
            sod_exempt: false,
        }
    }

    /// Refuses unless the principal's roles allow `action`.
    pub fn require(&self, action: Action) -> Result<()> {
        if action.allowed_for(&self.roles) {
            return Ok(());
        }
        let needed: Vec<&str> = action.roles().iter().map(|r| r.as_str()).collect();
        Err(Error::Forbidden(format!(
            "{} holds roles [{}] and may not {}: that needs the {} role (or operator)",
            self.actor,
            self.roles.to_list(),
            action.describe(),
            needed.join(" or ")
        )))
    }
}

/// How long fetching a media item again before it goes out may take when drafts are not
/// checked (and so no fetch timeout is configured).
const MEDIA_RECHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The guarded operations, over one store and the configured channels. Cheap to clone.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    settings: AppSettings,
    platforms: BTreeMap<ChannelName, Arc<dyn Platform>>,
    clock: Clock,
    /// The ledger's clock minus this machine's, in microseconds ([`App::follow_ledger_clock`]).
    clock_offset_us: std::sync::atomic::AtomicI64,
    worker: String,
    wake: tokio::sync::Notify,
    accounts_checked: Mutex<HashSet<ChannelName>>,
    metrics: metrics::Metrics,
    /// Every run of the guarded path, each in a task of its own.
    publishes: tokio_util::task::TaskTracker,
    /// The places held by runs of [`App::publish_next`] and [`App::publish_batch`]
    /// looking for posts, one bit each.
    places: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Read-backs waiting to be recorded, several in one transaction.
    verifications: Mutex<Vec<airlock_store::VerificationRecord>>,
    /// Whether a task is recording read-backs now.
    verifying: std::sync::atomic::AtomicBool,
    /// The client media are fetched with.
    media_client: airlock_platforms::http::Client,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("worker", &self.inner.worker)
            .field("channels", &self.inner.settings.channels.keys())
            .finish()
    }
}

impl App {
    /// Builds the app. `platforms` holds an adapter for each configured channel.
    pub fn new(
        store: Arc<dyn Store>,
        settings: AppSettings,
        platforms: BTreeMap<ChannelName, Arc<dyn Platform>>,
        clock: Clock,
    ) -> Self {
        App {
            inner: Arc::new(Inner {
                store,
                platforms,
                clock,
                clock_offset_us: std::sync::atomic::AtomicI64::new(0),
                worker: worker_id(),
                wake: tokio::sync::Notify::new(),
                accounts_checked: Mutex::new(HashSet::new()),
                metrics: metrics::Metrics::default(),
                publishes: tokio_util::task::TaskTracker::new(),
                places: std::sync::Arc::default(),
                verifications: Mutex::new(Vec::new()),
                verifying: std::sync::atomic::AtomicBool::new(false),
                // Media approved with their digest are fetched again before they go out
                // even when new drafts are not checked (`media_fetch_timeout` unset).
                media_client: airlock_platforms::http::client(
                    settings
                        .media_fetch_timeout
                        .and_then(|t| t.to_std().ok())
                        .unwrap_or(MEDIA_RECHECK_TIMEOUT),
                ),
                settings,
            }),
        }
    }

    /// The real clock (in test builds, moved by a drill's `AIRLOCK_DRILL_CLOCK_SKEW`).
    pub fn system_clock() -> Clock {
        let skew = drill::clock_skew();
        Arc::new(move || Utc::now() + skew)
    }

    /// Now, by the app's clock, following the ledger's where it decides by its own.
    pub fn now(&self) -> DateTime<Utc> {
        let offset = self
            .inner
            .clock_offset_us
            .load(std::sync::atomic::Ordering::Relaxed);
        (self.inner.clock)() + chrono::Duration::microseconds(offset)
    }

    /// Measures how far the ledger's clock is from this machine's and follows it from now
    /// on (docs/quotas.md#one-clock): a PostgreSQL ledger decides by the database's clock,
    /// so this process's leases, schedules and reads agree with it, and with every other
    /// installation's. A machine whose clock is further off than
    /// [`airlock_core::quota::CLOCK_ALLOWANCE`] is not followed but named: the ledger
    /// refuses its claims and intents, naming both times, until its clock is set right
    /// (pauses, resolutions and reads still work). A ledger that decides by its callers'
    /// clocks (SQLite) leaves the app's clock as it is. `serve` measures again every reap
    /// interval. Returns the offset measured.
    pub async fn follow_ledger_clock(&self) -> Result<chrono::Duration> {
        let offset =
            airlock_store::LedgerClock::offset_from(self.store().as_ref(), &*self.inner.clock)
                .await?
                .unwrap_or_default();
        let followed = if offset.abs() > airlock_core::quota::CLOCK_ALLOWANCE {
            let mine = (self.inner.clock)();
            tracing::error!(
                machine = %airlock_core::time::format_utc(mine),
                database = %airlock_core::time::format_utc(mine + offset),
                "this machine's clock is further from the database's than airlock allows: nothing is published from here until it is set right (NTP)"
            );
            chrono::Duration::zero()
        } else {
            offset
        };
        self.inner.clock_offset_us.store(
            followed.num_microseconds().unwrap_or(0),
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(offset)
    }

    /// The settings.
    pub fn settings(&self) -> &AppSettings {
        &self.inner.settings
    }

    /// The store, for tests that must look under the guarded operations (the
    /// `test-support` feature, which only dev-dependencies enable).
    #[cfg(feature = "test-support")]
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The store. Front ends never reach it: they call the operations of [`App`].
    #[cfg(not(feature = "test-support"))]
    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The outbox deliverer for `sinks`, over this app's ledger and with its worker id.
    /// The deliverer touches only outbox rows, never a post.
    pub fn deliverer(
        &self,
        sinks: Vec<airlock_notify::Sink>,
        settings: airlock_notify::DeliverySettings,
    ) -> std::result::Result<airlock_notify::Deliverer, airlock_notify::DelivererError> {
        airlock_notify::Deliverer::new(self.store().clone(), sinks, self.worker(), settings)
    }

    /// This process's worker id (`lease_owner`, `dispatcher:<id>`).
    pub fn worker(&self) -> &str {
        &self.inner.worker
    }

    /// What this app has done, for `/metrics`.
    pub fn metrics(&self) -> &metrics::Metrics {
        &self.inner.metrics
    }

    /// Counts a refusal a front end is about to report (`airlock_refusals_total{reason}`).
    pub fn record_refusal(&self, error: &Error) {
        if error.is_refusal() {
            self.inner
                .metrics
                .incr("airlock_refusals_total", &[("reason", error.code())]);
        }
    }

    /// Waits until every publish under way has ended (each runs to its end in a task of
    /// its own, whoever started it). `serve` calls it on shutdown, after its listeners
    /// and dispatcher stopped.
    pub async fn drain(&self) {
        self.inner.publishes.close();
        self.inner.publishes.wait().await;
        self.inner.publishes.reopen();
    }

    /// Signalled whenever a post may have become due (approved, requeued, resumed).
    pub fn wake(&self) -> &tokio::sync::Notify {
        &self.inner.wake
    }

    fn wake_dispatcher(&self) {
        self.inner.wake.notify_waiters();
        self.inner.wake.notify_one();
    }

    /// The settings of a configured channel, or a refusal naming the configured ones.
    pub fn channel(&self, name: &str) -> Result<&ChannelSettings> {
        let parsed = ChannelName::parse(name).map_err(|e| Error::Invalid(e.to_string()))?;
        self.inner.settings.channels.get(&parsed).ok_or_else(|| {
            let known: Vec<&str> = self
                .inner
                .settings
                .channels
                .keys()
                .map(|c| c.as_str())
                .collect();
            Error::Invalid(format!(
                "unknown channel {name:?}: configured channels are {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ))
        })
    }

    /// The client media are fetched with when drafted, if drafts are checked
    /// (docs/media.md).
    fn draft_media_client(&self) -> Option<&airlock_platforms::http::Client> {
        self.inner
            .settings
            .media_fetch_timeout
            .map(|_| &self.inner.media_client)
    }

    /// The client media approved with their digest are fetched again with, before they
    /// go out: always, whatever drafts do.
    fn media_client(&self) -> &airlock_platforms::http::Client {
        &self.inner.media_client
    }

    fn platform(&self, name: &ChannelName) -> Option<&Arc<dyn Platform>> {
        self.inner.platforms.get(name)
    }

    /// The post, when it is in one of `states`; otherwise a refusal saying `rule`.
    pub(crate) async fn post_in(
        &self,
        id: PostId,
        states: &[PostStatus],
        rule: &str,
    ) -> Result<Post> {
        let post = self.store().get_post(id).await?;
        if states.contains(&post.status) {
            Ok(post)
        } else {
            Err(Error::IllegalTransition(format!(
                "post {id} is {}: {rule}",
                post.status
            )))
        }
    }

    /// A change by a person or agent.
    pub(crate) fn change_by(&self, who: &Principal, post: &Post, change: Change) -> PostChange {
        PostChange::new(post.id, who.actor.to_string(), self.now(), change)
    }

    /// Notifications for `event` to every sink that wants it.
    pub(crate) fn notifications(
        &self,
        event: &str,
        post_id: Option<PostId>,
        message: String,
        detail: serde_json::Value,
    ) -> Vec<NewNotification> {
        let payload = serde_json::json!({
            "event": event,
            "at": airlock_core::time::format_utc(self.now()),
            "message": message,
            "post_id": post_id,
            "detail": detail,
        });
        self.inner
            .settings
            .notify
            .iter()
            .filter(|route| route.events.iter().any(|e| e == event))
            .map(|route| NewNotification {
                sink: route.sink.clone(),
                event: event.to_owned(),
                post_id,
                payload: payload.clone(),
            })
            .collect()
    }
}

/// `host-pid-random`: unique per process, readable in `lease_owner`.
fn worker_id() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    let mut bytes = [0u8; 3];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    format!("{host}-{}-{}", std::process::id(), hex::encode(bytes))
}
