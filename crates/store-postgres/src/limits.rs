//! What the ledger's owner holds for the runtime role (docs/stores.md#hardened-postgresql):
//! the limits claims are decided against, written into the ledger so that a role which
//! may only call airlock's functions cannot widen them, and the checks `doctor` runs on
//! who else can reach the database or hold its locks.

use airlock_store::Result;
use chrono::Utc;

use crate::{PgStore, db, functions, micros};

/// The limits of a configuration, as the ledger holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerLimits {
    /// The rolling window across channels.
    pub window: airlock_core::quota::WindowRule,
    /// Each configured channel's.
    pub channels: Vec<ChannelLimits>,
}

/// One channel's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelLimits {
    /// The channel.
    pub channel: String,
    /// Most publishes per local day.
    pub daily_limit: u32,
    /// The zone its days and months are counted in (an IANA name).
    pub zone: String,
    /// Its monthly budget and prices, when it has one.
    pub budget: Option<BudgetLimits>,
    /// Whether its kind publishes test posts (elsewhere a test post counts).
    pub tests: bool,
}

/// A channel's budget and prices, in micro-dollars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLimits {
    /// Most spending per month.
    pub monthly: u64,
    /// A request without a link.
    pub post: u64,
    /// A request with a link.
    pub url_post: u64,
}

/// A channel's row as stored.
type Stored = (
    String,
    i64,
    String,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    bool,
);

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl ChannelLimits {
    fn row(&self) -> Stored {
        (
            self.channel.clone(),
            i64::from(self.daily_limit),
            self.zone.clone(),
            self.budget.map(|b| signed(b.monthly)),
            self.budget.map(|b| signed(b.post)),
            self.budget.map(|b| signed(b.url_post)),
            self.tests,
        )
    }
}

/// The triggers that keep the ledger's history (the migrations create them).
const HISTORY_TRIGGERS: &[&str] = &[
    "intents_no_delete",
    "intents_settled_permanent",
    "post_events_no_truncate",
    "post_events_no_update",
    "posts_delete_drafts_only",
    "posts_field_event",
    "posts_posted_at_is_permanent",
    "posts_status_event",
    "posts_status_guard",
    "reservations_no_delete",
    "reservations_quota_hours",
    "reservations_settled_permanent",
    "verdicts_no_update",
];

impl PgStore {
    /// Makes the ledger hold `limits`: the owner writes them when they differ (only the
    /// rows that do); anyone else cannot, and gets what the ledger holds that differs
    /// from them, one sentence each (empty when they match). Claims are decided by the
    /// stricter of the two, so a difference never widens a limit. Every command opens a
    /// store: a ledger that already holds them is only read.
    pub async fn hold_limits(&self, limits: &LedgerLimits) -> Result<Vec<String>> {
        let drift = self.limits_drift(limits).await?;
        if drift.is_empty() || !functions::can_migrate(&self.pool).await? {
            return Ok(drift);
        }
        self.write_limits(limits).await?;
        Ok(Vec::new())
    }

    async fn write_limits(&self, limits: &LedgerLimits) -> Result<()> {
        let now = Utc::now();
        let mut tx = self.pool.begin().await.map_err(db)?;
        // The whole window, as a claim near its limit takes it: the claims in flight end
        // first, and every later claim reads the limits written here.
        sqlx::query("SELECT airlock_lock_window()")
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query(
            "INSERT INTO ledger_limits (window_us, window_limit, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (only_row) DO UPDATE SET window_us = $1, window_limit = $2, updated_at = $3 \
             WHERE (ledger_limits.window_us, ledger_limits.window_limit) IS DISTINCT FROM ($1, $2)",
        )
        .bind(micros(limits.window.window))
        .bind(i64::from(limits.window.limit))
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        let names: Vec<&str> = limits.channels.iter().map(|c| c.channel.as_str()).collect();
        sqlx::query("DELETE FROM channel_limits WHERE NOT channel = ANY($1)")
            .bind(&names)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        for channel in &limits.channels {
            let (name, daily, zone, monthly, post, url_post, tests) = channel.row();
            sqlx::query(
                "INSERT INTO channel_limits (channel, daily_limit, zone, budget_monthly, \
                   post_cost, url_post_cost, tests, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (channel) DO UPDATE SET daily_limit = $2, zone = $3, \
                   budget_monthly = $4, post_cost = $5, url_post_cost = $6, tests = $7, \
                   updated_at = $8 \
                 WHERE (channel_limits.daily_limit, channel_limits.zone, \
                        channel_limits.budget_monthly, channel_limits.post_cost, \
                        channel_limits.url_post_cost, channel_limits.tests) \
                   IS DISTINCT FROM ($2, $3, $4, $5, $6, $7)",
            )
            .bind(name)
            .bind(daily)
            .bind(zone)
            .bind(monthly)
            .bind(post)
            .bind(url_post)
            .bind(tests)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        tx.commit().await.map_err(db)
    }

    /// What the ledger holds that differs from `limits`, one sentence each.
    pub async fn limits_drift(&self, limits: &LedgerLimits) -> Result<Vec<String>> {
        let held: Option<(i64, i64)> =
            sqlx::query_as("SELECT window_us, window_limit FROM ledger_limits")
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
        let mut drift = Vec::new();
        let wanted = (micros(limits.window.window), i64::from(limits.window.limit));
        match held {
            None => drift.push("the ledger holds no rolling window".to_owned()),
            Some(held) if held != wanted => drift.push(format!(
                "the rolling window is {} publishes per {} µs in the ledger, {} per {} µs in the configuration",
                held.1, held.0, wanted.1, wanted.0
            )),
            Some(_) => {}
        }
        let rows: Vec<Stored> = sqlx::query_as(
            "SELECT channel, daily_limit, zone, budget_monthly, post_cost, url_post_cost, tests \
             FROM channel_limits",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let mut stored: std::collections::BTreeMap<String, Stored> =
            rows.into_iter().map(|row| (row.0.clone(), row)).collect();
        for channel in &limits.channels {
            let wanted = channel.row();
            match stored.remove(&channel.channel) {
                None => drift.push(format!(
                    "channel {}: the ledger holds no limits (it cannot publish)",
                    channel.channel
                )),
                Some(held) if held != wanted => drift.push(format!(
                    "channel {}: the ledger holds daily_limit {} in {} with budget {:?}, prices {:?}/{:?} and test posts {}, the configuration daily_limit {} in {} with budget {:?}, prices {:?}/{:?} and test posts {}",
                    channel.channel,
                    held.1,
                    held.2,
                    held.3,
                    held.4,
                    held.5,
                    held.6,
                    wanted.1,
                    wanted.2,
                    wanted.3,
                    wanted.4,
                    wanted.5,
                    wanted.6
                )),
                Some(_) => {}
            }
        }
        for name in stored.keys() {
            drift.push(format!(
                "channel {name}: the ledger holds limits for a channel the configuration does not have"
            ));
        }
        Ok(drift)
    }

    /// Who besides airlock can reach this database or hold its locks, one warning each:
    /// `CONNECT` granted to PUBLIC (any role may log in and take advisory locks),
    /// sessions holding airlock's advisory locks longer than airlock's own transactions
    /// take, sessions idle in a transaction (which keep every lock they took, the rows
    /// of `ledger_locks` included), and airlock's history triggers missing or off.
    pub async fn access_warnings(&self) -> Result<Vec<String>> {
        let mut warnings = Vec::new();
        let (database, public): (String, bool) = sqlx::query_as(
            "SELECT current_database(), \
               has_database_privilege('public', current_database(), 'CONNECT')",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        if public {
            warnings.push(format!(
                "PUBLIC may CONNECT to database {database}: any role can log in and hold locks airlock waits for; as the owner, run REVOKE CONNECT ON DATABASE {database} FROM PUBLIC and grant CONNECT to airlock's roles (docs/deploy.md#hardened-postgresql)"
            ));
        }
        // airlock's transactions last milliseconds: a session that has held one of its
        // locks, or sat in a transaction, for seconds is someone else's, whatever it
        // calls itself (another role's session shows no state: it is named too).
        let holders: Vec<(i32, Option<String>, Option<String>, String)> = sqlx::query_as(
            "SELECT a.pid, a.usename::text, a.application_name, \
               CASE WHEN a.state LIKE 'idle in transaction%' THEN 'is idle in a transaction' \
                    ELSE 'holds one of airlock''s advisory locks' END \
             FROM pg_stat_activity a \
             WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() \
               AND ((a.state LIKE 'idle in transaction%' \
                     AND a.state_change < now() - interval '5 seconds') \
                 OR ((a.state IS NULL OR a.state = 'idle' \
                      OR a.xact_start < now() - interval '5 seconds') \
                     AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid \
                       AND l.locktype = 'advisory' \
                       AND l.classid::bigint BETWEEN 1095912448 AND 1095912463))) \
             ORDER BY a.pid",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        for (pid, user, application, what) in holders {
            warnings.push(format!(
                "session {pid} (role {}, application {:?}) {what} longer than airlock's own transactions do, and airlock waits for such locks: end it with SELECT pg_terminate_backend({pid}) if it should not",
                user.as_deref().unwrap_or("unknown"),
                application.unwrap_or_default()
            ));
        }
        let triggers: Vec<(String, Option<String>)> = sqlx::query_as(
            "SELECT w.name, t.tgenabled::text FROM unnest($1::text[]) AS w(name) \
             LEFT JOIN pg_trigger t ON t.tgname = w.name AND NOT t.tgisinternal \
               AND t.tgrelid IN (SELECT oid FROM pg_class \
                                 WHERE relnamespace = current_schema()::regnamespace) \
             ORDER BY w.name",
        )
        .bind(HISTORY_TRIGGERS)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        for (name, enabled) in triggers {
            // 'O' fires normally, 'A' always; 'D' never and 'R' only for replication.
            match enabled.as_deref() {
                Some("O" | "A") => {}
                Some(_) => warnings.push(format!(
                    "trigger {name} is disabled: what it records or refuses now goes through silently; as the owner, ALTER TABLE ... ENABLE TRIGGER {name}"
                )),
                None => warnings.push(format!(
                    "trigger {name} is missing: what it records or refuses now goes through silently; restore the ledger's schema from its migrations"
                )),
            }
        }
        Ok(warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_stored_in_signed_micro_dollars() {
        let channel = ChannelLimits {
            channel: "x".into(),
            daily_limit: 3,
            zone: "UTC".into(),
            budget: Some(BudgetLimits {
                monthly: u64::MAX,
                post: 15_000,
                url_post: 200_000,
            }),
            tests: false,
        };
        assert_eq!(
            channel.row(),
            (
                "x".into(),
                3,
                "UTC".into(),
                Some(i64::MAX),
                Some(15_000),
                Some(200_000),
                false
            )
        );
    }
}
