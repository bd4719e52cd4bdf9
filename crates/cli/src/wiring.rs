//! Wiring: the one place that names a concrete store backend and builds the channel
//! adapters from configuration (reading credential files, which may refuse).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use airlock_app::App;
use airlock_core::ChannelName;
use airlock_notify::{DISCORD_API, Deliverer, DeliverySettings, Sink, SinkKind, SinkSettings};
use airlock_platforms::credential::read_secret;
use airlock_platforms::{Platform, http};
use airlock_store::{Reads, Store};
use airlock_store_postgres::{PgSettings, PgStore};
use airlock_store_sqlite::SqliteStore;

use crate::Failure;
use crate::config::{Config, SinkTarget};

/// Opens the configured store (SQLite or PostgreSQL by the URL's scheme), applying
/// pending migrations. The only place that names a concrete backend.
pub async fn open_store(config: &Config) -> Result<Arc<dyn Store>, Failure> {
    let url = config.database.as_str();
    if url.starts_with("sqlite:") {
        let store = SqliteStore::open_url(url)
            .await
            .map_err(|e| Failure::failed(format!("{e}")))?;
        return Ok(Arc::new(store));
    }
    let store = PgStore::connect_with(url, pg_settings(config))
        .await
        .map_err(|e| Failure::failed(format!("{e}")))?;
    let drift = store
        .hold_limits(&ledger_limits(config))
        .await
        .map_err(|e| Failure::failed(format!("{e}")))?;
    for difference in drift {
        tracing::warn!(
            "the ledger's limits differ from this configuration, and the stricter decides: {difference}; run `airlock migrate` with the owner's URL to write the configuration's"
        );
    }
    Ok(Arc::new(store))
}

/// The configuration's limits, as a PostgreSQL ledger holds them for its runtime role.
pub fn ledger_limits(config: &Config) -> airlock_store_postgres::LedgerLimits {
    let settings = config.app_settings();
    airlock_store_postgres::LedgerLimits {
        window: settings.window,
        channels: settings
            .channels
            .values()
            .map(|c| airlock_store_postgres::ChannelLimits {
                channel: c.name.to_string(),
                daily_limit: c.daily_limit,
                zone: c.timezone.name().to_owned(),
                budget: c.budget.map(|b| airlock_store_postgres::BudgetLimits {
                    monthly: b.monthly,
                    post: b.costs.post,
                    url_post: b.costs.url_post,
                }),
                tests: c.kind.publishes_test_posts(),
            })
            .collect(),
    }
}

/// What `doctor` checks of a PostgreSQL ledger beyond its mode: the limits it holds
/// against the configuration's (passed or failed), and who else can reach it or hold its
/// locks (warnings, `None`). Empty for SQLite.
pub async fn pg_checks(config: &Config) -> Result<Vec<(Option<bool>, String)>, Failure> {
    let url = config.database.as_str();
    if url.starts_with("sqlite:") {
        return Ok(Vec::new());
    }
    let failed = |e: airlock_store::StoreError| Failure::failed(format!("{e}"));
    let store = PgStore::connect_existing_with(url, pg_settings(config))
        .await
        .map_err(failed)?;
    let mut checks = Vec::new();
    let drift = store
        .limits_drift(&ledger_limits(config))
        .await
        .map_err(failed)?;
    if drift.is_empty() {
        checks.push((
            Some(true),
            "postgres: the ledger holds the configuration's limits".into(),
        ));
    }
    for difference in drift {
        checks.push((
            Some(false),
            format!("postgres limits: {difference}: run `airlock migrate` with the owner's URL"),
        ));
    }
    for warning in store.access_warnings().await.map_err(failed)? {
        checks.push((None, format!("postgres access: {warning}")));
    }
    store.close().await;
    Ok(checks)
}

/// How a PostgreSQL ledger is connected (owner or hardened runtime role, functions
/// current or not), for `doctor`; `None` for SQLite.
pub async fn pg_mode(config: &Config) -> Result<Option<airlock_store_postgres::PgMode>, Failure> {
    let url = config.database.as_str();
    if url.starts_with("sqlite:") {
        return Ok(None);
    }
    let failed = |e: airlock_store::StoreError| Failure::failed(format!("{e}"));
    let store = PgStore::connect_existing_with(url, pg_settings(config))
        .await
        .map_err(failed)?;
    let mode = store.mode().await.map_err(failed)?;
    store.close().await;
    Ok(Some(mode))
}

/// The PostgreSQL settings of `[postgres]`.
pub fn pg_settings(config: &Config) -> PgSettings {
    PgSettings {
        runtime_role: config.pg_runtime_role.clone(),
        ..PgSettings::default()
    }
}

/// Opens the configured store only if it exists and its migrations are exactly this
/// binary's, without creating or migrating anything: for commands that read a ledger
/// other processes serve (`backup`, `export`). A missing SQLite file, or a ledger
/// migrated by an older or newer release, is refused (exit 2), naming what to do.
pub async fn open_store_current(config: &Config) -> Result<Arc<dyn Store>, Failure> {
    let url = config.database.as_str();
    let shown = http::without_secrets(url);
    let refuse = |problem: String| Failure::refused(format!("{shown}: {problem}"));
    if url.starts_with("sqlite:") {
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        if !Path::new(path).is_file() {
            return Err(refuse(format!(
                "there is no ledger at {path}: check `database` in {} (nothing was created)",
                config.path.display()
            )));
        }
        let store = SqliteStore::open_existing_url(url)
            .await
            .map_err(|e| Failure::failed(format!("{e}")))?;
        let status = store
            .migration_status()
            .await
            .map_err(|e| Failure::failed(format!("{e}")))?;
        if status.applied == 0 {
            return Err(refuse(
                "this file is not an airlock ledger (it has no migrations applied)".into(),
            ));
        }
        if let Some(problem) = status.problem() {
            return Err(refuse(problem));
        }
        return Ok(Arc::new(store));
    }
    let store = PgStore::connect_existing(url)
        .await
        .map_err(|e| Failure::failed(format!("{e}")))?;
    let status = store
        .migration_status()
        .await
        .map_err(|e| Failure::failed(format!("{e}")))?;
    if status.applied == 0 {
        return Err(refuse(
            "this database holds no airlock ledger (no migrations applied)".into(),
        ));
    }
    if let Some(problem) = status.problem() {
        return Err(refuse(problem));
    }
    Ok(Arc::new(store))
}

/// Builds every channel's adapter. Any credential problem refuses the whole command
/// before a single request is sent.
pub fn build_platforms(
    config: &Config,
) -> Result<BTreeMap<ChannelName, Arc<dyn Platform>>, Failure> {
    config
        .channels
        .values()
        .map(|channel| {
            (channel.platform.keys())
                .build(&channel.name, &channel.common)
                .map(|platform| (channel.name.clone(), platform))
                .map_err(|e| Failure::refused(format!("channel {}: {e}", channel.name)))
        })
        .collect()
}

/// The notification deliverer for the configured sinks (reading their secret files).
pub fn build_deliverer(config: &Config, app: &App) -> Result<Deliverer, Failure> {
    let sinks = config
        .sinks
        .values()
        .map(|sink| {
            let refuse = |e: String| Failure::refused(format!("notify.{}: {e}", sink.name));
            let secret = |path: &Path| read_secret(path).map_err(|e| refuse(e.to_string()));
            let kind = match &sink.target {
                SinkTarget::Slack(c) => SinkKind::Slack {
                    webhook_url: secret(&c.webhook_file)?,
                },
                SinkTarget::Discord(c) => SinkKind::Discord {
                    token: secret(&c.token_file)?,
                    channel_id: c.channel_id.clone(),
                    base_url: c.base_url.clone().unwrap_or_else(|| DISCORD_API.to_owned()),
                },
                SinkTarget::Webhook(c) => SinkKind::Webhook {
                    url: c.url.clone(),
                    secret: c.secret_file.as_deref().map(secret).transpose()?,
                    signature_v1: c.signature_v1,
                },
            };
            Sink::new(SinkSettings {
                name: sink.name.clone(),
                kind,
                events: sink.events.clone(),
                request_timeout: sink.request_timeout.as_std(),
            })
            .map_err(|e| refuse(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    app.deliverer(sinks, DeliverySettings::default())
        .map_err(|e| Failure::refused(format!("{}: notify: {e}", config.path.display())))
}

/// `app` once it follows the ledger's clock (docs/quotas.md#one-clock).
async fn following_ledger_clock(app: App) -> Result<App, Failure> {
    app.follow_ledger_clock()
        .await
        .map_err(|e| Failure::failed(format!("reading the ledger's clock: {e}")))?;
    Ok(app)
}

/// [`app_for_ledger`] over [`open_store_current`]: for commands that must not create or
/// migrate the ledger.
pub async fn app_for_current_ledger(config: &Config) -> Result<App, Failure> {
    let store = open_store_current(config).await?;
    following_ledger_clock(App::new(
        store,
        config.app_settings(),
        BTreeMap::new(),
        App::system_clock(),
    ))
    .await
}

/// The app over the existing ledger as it is, without creating or migrating it; `None`
/// when there is no ledger yet (no file, or no migration applied), so nobody holds a
/// token in it. For checking a token before `migrate`.
pub async fn app_unmigrated(config: &Config) -> Result<Option<App>, Failure> {
    let url = config.database.as_str();
    let failed = |e: airlock_store::StoreError| Failure::failed(format!("{e}"));
    let store: Arc<dyn Store> = if url.starts_with("sqlite:") {
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        if !Path::new(path).is_file() {
            return Ok(None);
        }
        let store = SqliteStore::open_existing_url(url).await.map_err(failed)?;
        if store.migration_status().await.map_err(failed)?.applied == 0 {
            return Ok(None);
        }
        Arc::new(store)
    } else {
        let store = PgStore::connect_existing(url).await.map_err(failed)?;
        if store.migration_status().await.map_err(failed)?.applied == 0 {
            return Ok(None);
        }
        Arc::new(store)
    };
    following_ledger_clock(App::new(
        store,
        config.app_settings(),
        BTreeMap::new(),
        App::system_clock(),
    ))
    .await
    .map(Some)
}

/// The app without adapters: enough for commands that never publish.
pub async fn app_for_ledger(config: &Config) -> Result<App, Failure> {
    let store = open_store(config).await?;
    following_ledger_clock(App::new(
        store,
        config.app_settings(),
        BTreeMap::new(),
        App::system_clock(),
    ))
    .await
}

/// The app with every channel's adapter, for commands that publish.
pub async fn app_for_publishing(config: &Config) -> Result<App, Failure> {
    Ok(publishing_ledger(config).await?.0)
}

/// [`app_for_publishing`] and the store it runs over, for `demo`, which also plays a
/// worker that crashed after its claim: a second writer to the ledger, as another
/// process would be, that no front end may be.
pub async fn publishing_ledger(config: &Config) -> Result<(App, Arc<dyn Store>), Failure> {
    let platforms = build_platforms(config)?;
    let store = open_store(config).await?;
    let app = following_ledger_clock(App::new(
        store.clone(),
        config.app_settings(),
        platforms,
        App::system_clock(),
    ))
    .await?;
    Ok((app, store))
}

/// A checked online copy of a SQLite ledger at `to` (see `SqliteStore::backup_into`).
/// A PostgreSQL ledger is refused with the `pg_dump` command to run instead: its
/// consistent copy is the database server's job, not a file airlock can write.
pub async fn backup_sqlite(
    config: &Config,
    to: &std::path::Path,
    allow_empty: bool,
) -> Result<airlock_store_sqlite::Backup, Failure> {
    let url = config.database.as_str();
    if !url.starts_with("sqlite:") {
        return Err(Failure::refused(format!(
            "the ledger is on PostgreSQL, which airlock does not copy itself: run `pg_dump --format=custom --no-owner --file={} '{}'` (restore with `pg_restore --no-owner --dbname=NEW_DB FILE`, then `airlock doctor`)",
            to.display(),
            redact_password(url)
        )));
    }
    // Refused unless it exists and is exactly current: a backup never creates a ledger,
    // and never migrates the one a running (perhaps older) `serve` uses.
    open_store_current(config).await?;
    let store = SqliteStore::open_existing_url(url)
        .await
        .map_err(|e| Failure::failed(format!("{e}")))?;
    if !allow_empty {
        let posts: i64 = store
            .status_counts()
            .await
            .map_err(|e| Failure::failed(format!("{e}")))?
            .iter()
            .map(|(_, n)| n)
            .sum();
        if posts == 0 {
            return Err(Failure::refused(format!(
                "the ledger at {} holds no posts: is `database` the live ledger? Nothing was written; pass --allow-empty to back up an empty ledger",
                http::without_secrets(url)
            )));
        }
    }
    store.backup_into(to).await.map_err(|e| match e {
        airlock_store_sqlite::BackupError::Exists(_)
        | airlock_store_sqlite::BackupError::NoDirectory(_) => Failure::refused(e.to_string()),
        e => Failure::failed(e.to_string()),
    })
}

/// A database URL with any password replaced by `***`, for messages.
pub fn redact_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].find(':') {
            Some(colon) => format!(
                "{}{}:***{}",
                &url[..scheme_end],
                &rest[..colon],
                &rest[at..]
            ),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_password;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact_password("postgres://airlock:s3cret@db.example:5432/airlock"),
            "postgres://airlock:***@db.example:5432/airlock"
        );
        assert_eq!(
            redact_password("postgres://airlock@db/airlock"),
            "postgres://airlock@db/airlock"
        );
        assert_eq!(redact_password("postgres://db/a@b"), "postgres://db/a@b");
    }
}
