//! Cross-process wake-ups for idle dispatchers: `LISTEN airlock_due` on a dedicated
//! connection, fanned out to every waiter of this process.
//!
//! The triggers send `NOTIFY airlock_due` inside the transaction that makes a post
//! due-able (status to `approved`, a pause lifted), so a notification arrives only once
//! the change is committed. The listener starts on the first [`Wake::wait`] (a CLI
//! command that never waits opens no extra connection), runs in a background task, and
//! reconnects quietly after errors. Each time its `LISTEN` is in place (the first time
//! too) it wakes every waiter once: a notification sent before that reached nobody, so
//! the waiters look at the ledger again, now with the listener in place.
//!
//! This is a hint, never the record: waking up tells a dispatcher to look at the ledger,
//! and a missed notification only costs it its poll interval. Nothing here decides
//! what is due.

use std::sync::Mutex;
use std::time::Duration as StdDuration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The notification channel the triggers send on.
pub(crate) const CHANNEL: &str = "airlock_due";

/// How long the listener waits before reconnecting after an error.
const RECONNECT_AFTER: StdDuration = StdDuration::from_secs(1);

/// The lazily started listener and the signal it raises.
pub(crate) struct Wake {
    options: PgConnectOptions,
    state: Mutex<Option<Listening>>,
}

struct Listening {
    task: JoinHandle<()>,
    signal: watch::Receiver<u64>,
}

impl std::fmt::Debug for Wake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The options hold the password: never print them.
        f.debug_struct("Wake").finish_non_exhaustive()
    }
}

impl Wake {
    pub(crate) fn new(options: PgConnectOptions) -> Self {
        Wake {
            options,
            state: Mutex::new(None),
        }
    }

    /// The connection options (also used for the migration lock's own connection).
    pub(crate) fn options(&self) -> PgConnectOptions {
        self.options.clone()
    }

    /// The signal counter now (starting the listener if it is not running).
    pub(crate) fn signals(&self) -> u64 {
        *self.subscribe().borrow()
    }

    /// Returns the counter once it differs from `seen` — at once if a signal already came
    /// since the caller read `seen` — or when `timeout` passes, whichever is first.
    pub(crate) async fn wait(&self, seen: u64, timeout: StdDuration) -> u64 {
        let mut signal = self.subscribe();
        if *signal.borrow_and_update() != seen {
            return *signal.borrow();
        }
        match tokio::time::timeout(timeout, signal.changed()).await {
            Ok(Ok(())) | Err(_) => {}
            // The listener is gone (stopped): behave like a plain poll, never spin.
            Ok(Err(_)) => tokio::time::sleep(timeout).await,
        }
        *signal.borrow()
    }

    /// Stops the listener; a later [`Wake::wait`] starts it again.
    pub(crate) fn stop(&self) {
        if let Some(listening) = self.lock().take() {
            listening.task.abort();
        }
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        let mut state = self.lock();
        if let Some(listening) = state.as_ref()
            && !listening.task.is_finished()
        {
            return listening.signal.clone();
        }
        // A new listener counts on from where the last one stopped, so a cursor read from
        // the old one never equals the new one's count by accident.
        let start = state.as_ref().map_or(0, |l| *l.signal.borrow());
        let (tx, rx) = watch::channel(start);
        let task = tokio::spawn(listen(self.options.clone(), tx));
        *state = Some(Listening {
            task,
            signal: rx.clone(),
        });
        rx
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Listening>> {
        // The lock is never held across an await, and nothing in it can panic midway.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn listen(options: PgConnectOptions, signal: watch::Sender<u64>) {
    loop {
        if let Err(e) = listen_once(&options, &signal).await {
            tracing::debug!(error = %e, "wake-up listener lost its connection; reconnecting");
        }
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

async fn listen_once(
    options: &PgConnectOptions,
    signal: &watch::Sender<u64>,
) -> Result<(), sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(options.clone())
        .await?;
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(CHANNEL).await?;
    // Something may have become due while nobody listened: before the first LISTEN (a
    // waiter that looked at the ledger, then started the listener) or while reconnecting.
    // Waking only now, with LISTEN in place, leaves no gap for a notification to fall in.
    signal.send_modify(|n| *n = n.wrapping_add(1));
    loop {
        // `None`: the connection dropped and was re-established; notifications sent in
        // between are lost, so wake the waiters to look at the ledger.
        let _ = listener.try_recv().await?;
        signal.send_modify(|n| *n = n.wrapping_add(1));
    }
}
