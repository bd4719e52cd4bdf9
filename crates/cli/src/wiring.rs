//! Wiring: the one place that names a concrete store backend and builds the channel
//! adapters from configuration (reading credential files, which may refuse).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use airlock_app::App;
use airlock_core::ChannelName;
use airlock_notify::{DISCORD_API, Deliverer, DeliverySettings, Sink, SinkKind, SinkSettings};
use airlock_platforms::bluesky::{Bluesky, BlueskySettings};
use airlock_platforms::credential::read_secret;
use airlock_platforms::instagram::{Instagram, InstagramSettings};
use airlock_platforms::linkedin::{Linkedin, LinkedinSettings};
use airlock_platforms::mastodon::{Mastodon, MastodonSettings};
use airlock_platforms::sandbox::Sandbox;
use airlock_platforms::threads::{Threads, ThreadsSettings};
use airlock_platforms::webhook::Webhook;
use airlock_platforms::wordpress::{Wordpress, WordpressSettings};
use airlock_platforms::x::{Credential, X, XSettings};
use airlock_platforms::{Platform, http};
use airlock_store::{Reads, Store};
use airlock_store_postgres::{PgSettings, PgStore};
use airlock_store_sqlite::SqliteStore;

use crate::Failure;
use crate::config::{ChannelConfig, Config, PlatformConfig, SinkTarget};

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
    Ok(Arc::new(store))
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
            build_platform(channel)
                .map(|platform| (channel.name.clone(), platform))
                .map_err(|e| Failure::refused(format!("channel {}: {e}", channel.name)))
        })
        .collect()
}

fn build_platform(channel: &ChannelConfig) -> Result<Arc<dyn Platform>, String> {
    let timeout = channel.platform.request_timeout().as_std();
    let client = || http::client(timeout);
    let token = |file: &Path| read_secret(file).map_err(|e| e.to_string());
    let or = |url: &Option<String>, default: String| url.clone().unwrap_or(default);
    Ok(match &channel.platform {
        PlatformConfig::Sandbox(c) => Arc::new(Sandbox::new(
            channel.name.clone(),
            c.path
                .clone()
                .expect("a sandbox's path is resolved when it is read"),
            c.simulate,
        )),
        PlatformConfig::Webhook(c) => {
            let secret = c.secret_file.as_deref().map(token).transpose()?;
            let webhook = Webhook::new(&c.url, secret, client()).map_err(|e| e.to_string())?;
            Arc::new(if c.signature_v1 {
                webhook
            } else {
                webhook.without_signature_v1()
            })
        }
        PlatformConfig::Threads(c) => {
            let defaults = ThreadsSettings::new(token(&c.token_file)?);
            let settings = ThreadsSettings {
                base_url: or(&c.base_url, defaults.base_url.clone()),
                request_timeout: timeout,
                poll_interval: c.poll_interval.as_std(),
                poll_timeout: c.poll_timeout.as_std(),
                ..defaults
            };
            Arc::new(Threads::new(settings, client()).map_err(|e| e.to_string())?)
        }
        PlatformConfig::Instagram(c) => {
            let defaults = InstagramSettings::new(token(&c.token_file)?);
            let settings = InstagramSettings {
                base_url: or(&c.base_url, defaults.base_url.clone()),
                api_version: or(&c.api_version, defaults.api_version.clone()),
                user_id: c.user_id.clone(),
                request_timeout: timeout,
                poll_interval: c.poll_interval.as_std(),
                poll_timeout: c.poll_timeout.as_std(),
                ..defaults
            };
            Arc::new(Instagram::new(settings, client()).map_err(|e| e.to_string())?)
        }
        PlatformConfig::Linkedin(c) => {
            let defaults = LinkedinSettings::new(token(&c.token_file)?);
            let settings = LinkedinSettings {
                base_url: or(&c.base_url, defaults.base_url.clone()),
                version: or(&c.version, defaults.version.clone()),
                author: c.author.clone(),
                request_timeout: timeout,
                ..defaults
            };
            Arc::new(Linkedin::new(settings, client()).map_err(|e| e.to_string())?)
        }
        PlatformConfig::Wordpress(c) => {
            let mut settings = WordpressSettings::new(
                c.base_url.clone(),
                c.username.clone(),
                token(&c.token_file)?,
            );
            settings.request_timeout = timeout;
            settings.rest_route = c.rest_route;
            Arc::new(Wordpress::new(settings, client()).map_err(|e| e.to_string())?)
        }
        PlatformConfig::Bluesky(c) => {
            let defaults = BlueskySettings::new(c.account.clone(), token(&c.token_file)?);
            let settings = BlueskySettings {
                base_url: or(&c.base_url, defaults.base_url.clone()),
                identifier: c.identifier.clone(),
                request_timeout: timeout,
                ..defaults
            };
            Arc::new(Bluesky::new(settings, client()).map_err(|e| e.to_string())?)
        }
        PlatformConfig::Mastodon(c) => {
            let settings = MastodonSettings {
                visibility: c.visibility(channel.name.as_str())?,
                request_timeout: timeout,
                ..MastodonSettings::new(c.base_url.clone(), token(&c.token_file)?)
            };
            Arc::new(Mastodon::new(settings, client()).map_err(|e| e.to_string())?)
        }
        PlatformConfig::X(c) => {
            let credential = Credential::parse(&token(&c.token_file)?, &c.token_file)
                .map_err(|e| e.to_string())?;
            // A refresh spends the refresh token: refuse to start where the rotated pair
            // could not be written back.
            airlock_platforms::x::check_token_dir(&c.token_file, &credential)?;
            let settings = XSettings {
                base_url: or(
                    &c.base_url,
                    airlock_platforms::x::DEFAULT_BASE_URL.to_owned(),
                ),
                token_file: c.token_file.clone(),
                credential,
                request_timeout: timeout,
            };
            Arc::new(X::new(settings, client()).map_err(|e| e.to_string())?)
        }
    })
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
