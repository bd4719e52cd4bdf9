//! The publish loop and the reaper around `airlock-app`'s guarded path.
//!
//! - [`run_once`] is one pass for cron (`airlock dispatch --once`): reap expired
//!   leases, reconcile unknown outcomes from platform evidence, decide quota deferrals
//!   again, then publish every due post. Several passes at once (overlapping cron runs, several processes) are safe:
//!   claims are exclusive and quota reservations serialized in the store.
//! - [`Dispatcher::run`] is the long-running form inside `serve`: worker tasks that
//!   publish as soon as posts are due, a batch at a time (sleeping until the next due
//!   time, woken early when a post is approved, requeued or resumed), and a reaper task
//!   that runs even while publishing is paused.
//!
//! It does not deliver notifications; `airlock-notify`'s deliverer runs beside it.

use std::collections::HashSet;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use airlock_app::publish::{PublishReport, PublishResult};
use airlock_app::review::{Reaped, Reconciled};
use airlock_app::{App, Result};
use airlock_core::ChannelName;

/// What one pass did.
#[derive(Debug, Default)]
pub struct DispatchReport {
    /// Expired leases settled.
    pub reaped: Vec<Reaped>,
    /// Unknown outcomes settled from evidence.
    pub reconciled: Vec<Reconciled>,
    /// Posts taken through the guarded path.
    pub published: Vec<PublishReport>,
    /// After the pass, the posts still waiting on quota and when the soonest slot frees.
    pub waiting_on_quota: Option<(usize, DateTime<Utc>)>,
}

impl DispatchReport {
    /// How many runs ended with each result name.
    pub fn count(&self, result: fn(&PublishResult) -> bool) -> usize {
        self.published.iter().filter(|r| result(&r.result)).count()
    }
}

/// One pass: reap, reconcile, then publish what is due (optionally on some channels only).
pub async fn run_once(app: &App, only: Option<&[ChannelName]>) -> Result<DispatchReport> {
    let mut report = DispatchReport {
        reaped: app.reap().await?,
        reconciled: app.reconcile().await?,
        ..DispatchReport::default()
    };
    // A pass goes on whatever happened here: the claims decide for themselves.
    if let Err(e) = app.recheck_deferrals().await {
        tracing::error!(error = %e, "rechecking quota deferrals failed");
    }
    // A post handled twice in one pass would mean it came straight back (it should be
    // deferred or backed off); stop rather than spin.
    let mut seen = HashSet::new();
    while let Some(published) = app.publish_next(only).await? {
        let again = !seen.insert(published.post.id);
        report.published.push(published);
        if again {
            break;
        }
    }
    // Read-backs run in tasks of their own: record them before answering.
    app.drain().await;
    report.waiting_on_quota = app.waiting_on_quota().await?;
    Ok(report)
}

/// How many due posts a worker of [`Dispatcher::run`] takes from one look and publishes
/// at once ([`App::publish_batch`]) unless configured otherwise: their claims, and then
/// their outcomes, reach the store together and share a commit where the store groups
/// writes. A worker looks again once its whole batch is done: a slow platform call idles
/// the rest of its batch.
pub const BATCH: usize = 16;

/// The largest batch configuration accepts: each post of a batch is a run in flight.
pub const MAX_BATCH: usize = 32;

/// Settings of the long-running dispatcher.
#[derive(Debug, Clone)]
pub struct DispatcherSettings {
    /// Concurrent publishing workers in this process.
    pub workers: usize,
    /// Due posts each worker publishes at once ([`BATCH`] by default).
    pub batch: usize,
    /// The longest an idle worker sleeps before looking again (the backstop for missed wake-ups).
    pub poll_interval: StdDuration,
    /// How often the reaper and reconcile run.
    pub reap_interval: StdDuration,
}

/// The long-running dispatcher of `serve`.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    app: App,
    settings: DispatcherSettings,
}

impl Dispatcher {
    /// A dispatcher over `app`.
    pub fn new(app: App, settings: DispatcherSettings) -> Self {
        Dispatcher { app, settings }
    }

    /// Runs the workers and the reaper until `shutdown` is cancelled. A task that panics
    /// is logged and replaced: nothing stops silently. (A panic inside a publish is
    /// caught closer still, by the guarded path, which settles its post.)
    pub async fn run(self, shutdown: CancellationToken) {
        let mut tasks = tokio::task::JoinSet::new();
        let mut roles = std::collections::HashMap::new();
        for worker in 0..self.settings.workers.max(1) {
            let id = self.spawn(&mut tasks, Role::Worker(worker), &shutdown);
            roles.insert(id, Role::Worker(worker));
        }
        let id = self.spawn(&mut tasks, Role::Reaper, &shutdown);
        roles.insert(id, Role::Reaper);
        while let Some(done) = tasks.join_next_with_id().await {
            let (id, panic) = match done {
                Ok((id, ())) => (id, None),
                Err(e) => (e.id(), e.is_panic().then(|| e.to_string())),
            };
            let Some(role) = roles.remove(&id) else {
                continue;
            };
            if let Some(panic) = panic
                && !shutdown.is_cancelled()
            {
                tracing::error!(task = %role, panic = %panic, "a dispatcher task panicked; starting a new one");
                let id = self.spawn(&mut tasks, role, &shutdown);
                roles.insert(id, role);
            }
        }
    }

    fn spawn(
        &self,
        tasks: &mut tokio::task::JoinSet<()>,
        role: Role,
        shutdown: &CancellationToken,
    ) -> tokio::task::Id {
        let this = self.clone();
        let shutdown = shutdown.clone();
        tasks
            .spawn(async move {
                match role {
                    Role::Worker(worker) => this.worker(worker, shutdown).await,
                    Role::Reaper => this.reaper(shutdown).await,
                }
            })
            .id()
    }

    async fn worker(&self, worker: usize, shutdown: CancellationToken) {
        tracing::debug!(worker, "dispatcher worker started");
        // Read before each look at the ledger, so a signal in between is not lost.
        let mut seen = self.app.due_signals().await;
        while !shutdown.is_cancelled() {
            airlock_app::drill::boundary("dispatcher::worker");
            let runs = (self.app.publish_batch(None, self.settings.batch).await)
                .unwrap_or_else(|e| vec![Err(e)]);
            let mut failed = false;
            for run in &runs {
                match run {
                    Ok(report) => report.result.log(report.post.id),
                    Err(e) => {
                        tracing::error!(error = %e, "dispatch failed");
                        failed = true;
                    }
                }
            }
            if failed && sleep_or_shutdown(StdDuration::from_secs(1), &shutdown).await {
                break;
            }
            if !runs.is_empty() {
                continue;
            }
            let wait = self.idle_wait().await;
            tokio::select! {
                signals = self.app.wait_for_due(seen, wait) => seen = signals,
                _ = self.app.wake().notified() => {}
                _ = shutdown.cancelled() => break,
            }
        }
    }

    /// How long an idle worker may sleep: until the next post is due, at most the poll interval.
    async fn idle_wait(&self) -> StdDuration {
        let next = self.app.next_due_at().await.ok().flatten();
        match next {
            Some(at) => (at - self.app.now())
                .to_std()
                .unwrap_or(StdDuration::ZERO)
                .min(self.settings.poll_interval),
            None => self.settings.poll_interval,
        }
    }

    async fn reaper(&self, shutdown: CancellationToken) {
        while !shutdown.is_cancelled() {
            // Clocks drift: follow the ledger's as measured now.
            if let Err(e) = self.app.follow_ledger_clock().await {
                tracing::warn!(error = %e, "measuring the ledger's clock failed");
            }
            match self.app.reap().await {
                Ok(reaped) if !reaped.is_empty() => {
                    tracing::warn!(n = reaped.len(), "reaped expired leases")
                }
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "reaper failed"),
            }
            match self.app.reconcile().await {
                Ok(settled) if !settled.is_empty() => {
                    tracing::info!(n = settled.len(), "reconciled posts")
                }
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "reconcile failed"),
            }
            match self.app.recheck_deferrals().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(n, "quota slots freed for deferred posts"),
                Err(e) => tracing::error!(error = %e, "rechecking quota deferrals failed"),
            }
            if sleep_or_shutdown(self.settings.reap_interval, &shutdown).await {
                break;
            }
        }
    }
}

/// What a dispatcher task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A publishing worker.
    Worker(usize),
    /// The reaper and reconcile loop.
    Reaper,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::Worker(n) => write!(f, "worker {n}"),
            Role::Reaper => f.write_str("reaper"),
        }
    }
}

/// Sleeps; `true` when shutdown came first.
async fn sleep_or_shutdown(duration: StdDuration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(duration) => false,
        _ = shutdown.cancelled() => true,
    }
}
