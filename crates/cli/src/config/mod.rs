//! `airlock.toml` (docs/configuration.md): parsed into one typed [`Config`], every table
//! with `deny_unknown_fields` so an unknown key is refused by name, relative paths resolved
//! against the file's directory, and cross-field rules (a lease outlasts every request)
//! checked before anything runs.
//!
//! Channels ([`channel`]) and sinks ([`sink`]) are one type per kind, each carrying only
//! its kind's keys, so a key of another kind is refused by its own name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono_tz::Tz;
use serde::Deserialize;

use airlock_app::{AppSettings, ChannelSettings, NotifyRoute};
use airlock_core::quota::WindowRule;
use airlock_core::{ChannelName, Span};

/// How long fetching one media item to check it may take, unless `[media]
/// fetch_timeout` says otherwise (docs/media.md).
pub const MEDIA_FETCH_TIMEOUT: Span = Span::seconds(30);

mod channel;
mod sink;

pub use channel::{ChannelConfig, ReviewConfig};
pub use sink::{SinkConfig, SinkTarget};

/// A configuration that cannot be used, naming the file and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigError {
    /// The configuration file.
    pub path: PathBuf,
    /// What is wrong and what to do.
    pub message: String,
}

/// The configuration file to use: `--config`, else `AIRLOCK_CONFIG`, else `./airlock.toml`.
pub fn locate(flag: Option<&Path>) -> PathBuf {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os("AIRLOCK_CONFIG").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("airlock.toml"))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    timezone: Option<String>,
    database: Option<String>,
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    dispatcher: RawDispatcher,
    #[serde(default)]
    quota: RawQuota,
    #[serde(default)]
    channels: BTreeMap<String, channel::RawChannel>,
    #[serde(default)]
    notify: BTreeMap<String, sink::RawSink>,
    #[serde(default)]
    sites: BTreeMap<String, RawSite>,
    #[serde(default)]
    cli: RawCli,
    #[serde(default)]
    postgres: RawPostgres,
    #[serde(default)]
    review: channel::RawReview,
    #[serde(default)]
    media: RawMedia,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMedia {
    check: Option<bool>,
    fetch_timeout: Option<Span>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPostgres {
    runtime_role: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCli {
    require_token: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    listen: Option<String>,
    public_url: Option<String>,
    allowed_origins: Option<Vec<String>>,
    allowed_hosts: Option<Vec<String>>,
    max_drafts_per_token: Option<u32>,
    metrics_token_required: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDispatcher {
    stale_after: Option<Span>,
    poll_interval: Option<Span>,
    max_attempts: Option<u32>,
    pause_after_failures: Option<u32>,
    workers: Option<usize>,
    batch: Option<usize>,
    max_retry_after: Option<Span>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuota {
    window: Option<Span>,
    window_limit: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSite {
    dir: PathBuf,
    base_url: String,
    media_prefix: Option<String>,
    reuse_after: Option<Span>,
}

/// The whole configuration, checked and with paths resolved.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from.
    pub path: PathBuf,
    /// Default calendar.
    pub timezone: Tz,
    /// The store URL (`sqlite:///abs/path.db` or `postgres://...`). It may carry a
    /// password: show it only through `airlock_platforms::http::without_secrets`.
    pub database: String,
    /// HTTP listen address.
    pub listen: String,
    /// The address people and agents reach the server by, when it runs behind a
    /// TLS-terminating proxy (`https://airlock.example`): its host is an allowed `Host`,
    /// its origin an allowed `Origin`, and with `https` the dashboard's cookies are
    /// `Secure` with the `__Host-` prefix.
    pub public_url: Option<url::Url>,
    /// Extra browser origins allowed to call the server besides its own.
    pub allowed_origins: Vec<String>,
    /// Extra `Host` names the server answers to (behind a proxy, or listening beyond loopback).
    pub allowed_hosts: Vec<String>,
    /// `[server] max_drafts_per_token`: live drafts one token may hold (default 1000).
    pub max_drafts_per_token: u32,
    /// `[media]`: how long one media fetch may take when media are checked; `None` when
    /// `check = false` (docs/media.md).
    pub media_fetch_timeout: Option<Span>,
    /// `[server] metrics_token_required`: `/metrics` and `/api/openapi.json` need a token.
    pub metrics_token_required: bool,
    /// `[cli] require_token`: state-changing commands need an operator token in
    /// `AIRLOCK_TOKEN` and act as that token (no exemption from separation of duties).
    pub require_token: bool,
    /// `[postgres] runtime_role`: the `NOLOGIN` group role `airlock migrate` grants
    /// EXECUTE on airlock's functions and SELECT on what reads need (default
    /// `airlock_runtime`; docs/deploy.md#hardened-postgresql).
    pub pg_runtime_role: String,
    /// Lease length.
    pub stale_after: Span,
    /// Idle dispatcher backstop; also the shortest wait a platform's "not now" is read as.
    pub poll_interval: Span,
    /// The longest wait a platform's "not now" (`Retry-After`) is read as.
    pub max_retry_after: Span,
    /// Attempts before a post fails.
    pub max_attempts: u32,
    /// Failures before a channel pauses.
    pub pause_after_failures: u32,
    /// Dispatcher workers in `serve`.
    pub workers: usize,
    /// Due posts a worker publishes at once.
    pub batch: usize,
    /// The rolling window.
    pub window: WindowRule,
    /// Channels.
    pub channels: BTreeMap<ChannelName, ChannelConfig>,
    /// Notification sinks.
    pub sinks: BTreeMap<String, SinkConfig>,
    /// Markdown sites.
    pub sites: BTreeMap<String, SiteConfig>,
}

/// A Markdown site (docs/sites.md).
#[derive(Debug, Clone)]
pub struct SiteConfig {
    /// Name.
    pub name: String,
    /// Content directory.
    pub dir: PathBuf,
    /// Public base URL.
    pub base_url: String,
    /// Where Instagram images must be hosted.
    pub media_prefix: Option<String>,
    /// Reuse window.
    pub reuse_after: Span,
}

impl Config {
    /// Reads and checks a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: path.to_path_buf(),
            message: if e.kind() == std::io::ErrorKind::NotFound {
                "no such configuration file: run `airlock init` to write one, or pass --config FILE (or set AIRLOCK_CONFIG)".into()
            } else {
                format!("cannot read it: {e}")
            },
        })?;
        Config::parse(path, &text)
    }

    /// Parses and checks configuration text as if read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let fail = |message: String| ConfigError {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| fail(one_line(&e.to_string())))?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let resolve = |p: &Path| {
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                dir.join(p)
            }
        };
        let tz = |name: &str, key: &str| -> Result<Tz, ConfigError> {
            name.parse::<Tz>().map_err(|_| {
                fail(format!(
                    "{key} = {name:?} is not an IANA time zone (like \"Asia/Tokyo\" or \"UTC\")"
                ))
            })
        };
        let timezone = tz(raw.timezone.as_deref().unwrap_or("UTC"), "timezone")?;
        let database = resolve_database(
            raw.database.as_deref().unwrap_or("sqlite://airlock.db"),
            &dir,
        )
        .map_err(fail)?;
        let stale_after = raw.dispatcher.stale_after.unwrap_or(Span::minutes(15));
        let poll_interval = raw.dispatcher.poll_interval.unwrap_or(Span::seconds(30));
        let max_retry_after = raw
            .dispatcher
            .max_retry_after
            .unwrap_or(Span::minutes(24 * 60));
        if max_retry_after.as_chrono() < poll_interval.as_chrono() {
            return Err(fail(format!(
                "dispatcher.max_retry_after = {max_retry_after} is shorter than dispatcher.poll_interval = {poll_interval}: the longest wait a platform may ask for cannot be shorter than the shortest"
            )));
        }
        let max_attempts = raw.dispatcher.max_attempts.unwrap_or(3);
        if max_attempts == 0 {
            return Err(fail("dispatcher.max_attempts must be at least 1".into()));
        }
        let batch = raw.dispatcher.batch.unwrap_or(airlock_dispatcher::BATCH);
        if !(1..=airlock_dispatcher::MAX_BATCH).contains(&batch) {
            return Err(fail(format!(
                "dispatcher.batch is {batch}: it must be from 1 to {}",
                airlock_dispatcher::MAX_BATCH
            )));
        }
        let window_limit = raw.quota.window_limit.unwrap_or(3);
        if window_limit == 0 {
            return Err(fail(
                "quota.window_limit must be at least 1; to stop publishing, use `airlock pause --all`".into(),
            ));
        }

        let review = ReviewConfig::read("review", raw.review, &ReviewConfig::default(), &dir)
            .map_err(fail)?;
        let mut channels = BTreeMap::new();
        let has_site = |site: &str| raw.sites.contains_key(site);
        let cx = channel::Context {
            dir: &dir,
            timezone,
            stale_after,
            has_site: &has_site,
            review: &review,
        };
        for (name, rc) in raw.channels {
            let channel = ChannelConfig::read(&name, rc, &cx).map_err(fail)?;
            channels.insert(channel.name.clone(), channel);
        }

        let mut sinks = BTreeMap::new();
        for (name, rs) in raw.notify {
            let sink = SinkConfig::read(&name, rs, &dir).map_err(fail)?;
            sinks.insert(name, sink);
        }

        let sites = raw
            .sites
            .into_iter()
            .map(|(name, rs)| {
                let site = SiteConfig {
                    name: name.clone(),
                    dir: resolve(&rs.dir),
                    base_url: rs.base_url.trim_end_matches('/').to_owned(),
                    media_prefix: rs.media_prefix,
                    reuse_after: rs
                        .reuse_after
                        .unwrap_or(Span::new(chrono::Duration::days(60))),
                };
                (name, site)
            })
            .collect();

        let public_url = raw
            .server
            .public_url
            .as_deref()
            .map(parse_public_url)
            .transpose()
            .map_err(fail)?;
        let max_drafts_per_token = raw.server.max_drafts_per_token.unwrap_or(1000);
        if max_drafts_per_token == 0 {
            return Err(fail(
                "server.max_drafts_per_token must be at least 1 (it bounds the live drafts one token may hold)".into(),
            ));
        }
        let pg_runtime_role = raw
            .postgres
            .runtime_role
            .unwrap_or_else(|| airlock_store_postgres::DEFAULT_RUNTIME_ROLE.to_owned());
        let role_ok = pg_runtime_role.len() <= 63
            && pg_runtime_role.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && pg_runtime_role
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !role_ok {
            return Err(fail(format!(
                "postgres.runtime_role = {pg_runtime_role:?}: use 1-63 lowercase letters, digits or '_', starting with a letter or '_'"
            )));
        }
        let media_fetch_timeout = match raw.media.check {
            Some(false) => None,
            _ => Some(raw.media.fetch_timeout.unwrap_or(MEDIA_FETCH_TIMEOUT)),
        };
        Ok(Config {
            path: path.to_path_buf(),
            media_fetch_timeout,
            pg_runtime_role,
            max_drafts_per_token,
            metrics_token_required: raw.server.metrics_token_required.unwrap_or(false),
            timezone,
            database,
            listen: raw.server.listen.unwrap_or_else(|| "127.0.0.1:8080".into()),
            public_url,
            require_token: raw.cli.require_token.unwrap_or(false),
            allowed_origins: raw.server.allowed_origins.unwrap_or_default(),
            allowed_hosts: raw.server.allowed_hosts.unwrap_or_default(),
            stale_after,
            poll_interval,
            max_retry_after,
            max_attempts,
            pause_after_failures: raw.dispatcher.pause_after_failures.unwrap_or(3).max(1),
            workers: raw.dispatcher.workers.unwrap_or(2).max(1),
            batch,
            window: WindowRule {
                window: raw.quota.window.unwrap_or(Span::minutes(60)).as_chrono(),
                limit: window_limit,
            },
            channels,
            sinks,
            sites,
        })
    }

    /// The settings `app` runs with: media are checked when drafted and before they go
    /// out (docs/media.md).
    pub fn app_settings(&self) -> AppSettings {
        let mut settings = AppSettings::new(self.timezone);
        settings.window = self.window;
        settings.stale_after = self.stale_after.as_chrono();
        settings.min_retry_after = self.poll_interval.as_chrono();
        settings.max_retry_after = self.max_retry_after.as_chrono();
        settings.max_attempts = self.max_attempts;
        settings.pause_after_failures = self.pause_after_failures;
        settings.max_drafts_per_token = self.max_drafts_per_token;
        settings.media_fetch_timeout = self.media_fetch_timeout.map(Span::as_chrono);
        settings.notify = self
            .sinks
            .values()
            .map(|sink| NotifyRoute {
                sink: sink.name.clone(),
                events: sink.events.clone(),
            })
            .collect();
        for channel in self.channels.values() {
            let kind = channel.kind();
            let mut settings_channel = ChannelSettings::new(
                channel.name.clone(),
                kind,
                channel.daily_limit,
                channel.timezone,
            );
            settings_channel.account = channel.account().map(str::to_owned);
            settings_channel.policy = kind.policy_with(
                channel.max_chars,
                channel.forbidden.clone(),
                channel.required.clone(),
            );
            settings_channel.source_dir = channel
                .site
                .as_ref()
                .and_then(|site| self.sites.get(site))
                .map(|site| site.dir.clone());
            settings_channel.request_timeout = channel.common.request_timeout.as_chrono();
            settings_channel.budget = channel.budget();
            settings_channel.review = crate::rubric::review_settings(&channel.review);
            settings = settings.with_channel(settings_channel);
        }
        settings
    }
}

/// `[server] public_url`: an absolute http(s) URL of the server's root, without user
/// info, query or fragment.
fn parse_public_url(text: &str) -> Result<url::Url, String> {
    let bad = |why: &str| format!("server.public_url = {text:?} {why}");
    let url = url::Url::parse(text.trim())
        .map_err(|_| bad("is not an absolute URL like \"https://airlock.example\""))?;
    if !matches!(url.scheme(), "https" | "http") || url.host().is_none() {
        return Err(bad("must be an https:// (or http://) URL with a host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not carry credentials"));
    }
    if url.query().is_some() || url.fragment().is_some() || url.path() != "/" {
        return Err(bad(
            "must be the server's root, without a path, query or fragment (airlock serves at /)",
        ));
    }
    Ok(url)
}

/// Resolves a relative SQLite path against the config directory.
fn resolve_database(url: &str, dir: &Path) -> Result<String, String> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(url.to_owned());
    }
    let Some(path) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return Err(format!(
            "database = {:?}: expected sqlite://PATH or postgres://USER@HOST/DB",
            airlock_platforms::http::without_secrets(url)
        ));
    };
    if path.is_empty() {
        return Err("database = \"sqlite://\" names no file".into());
    }
    let path = Path::new(path);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    };
    Ok(format!("sqlite://{}", path.display()))
}

/// toml's errors span several lines (a source excerpt); keep the message on one line.
fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let location = lines.first().copied().unwrap_or_default();
    let message = lines.last().copied().unwrap_or_default();
    if lines.len() > 1 {
        format!(
            "{} ({})",
            message,
            location
                .trim_start_matches("TOML parse error ")
                .trim_end_matches(':')
        )
    } else {
        message.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use airlock_platforms::PlatformConfig;

    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("/etc/airlock/airlock.toml"), text)
    }

    // The example of docs/configuration.md ("Example"), with `max_retry_after`.
    const SPEC_EXAMPLE: &str = r#"
timezone = "Asia/Tokyo"
database = "sqlite://airlock.db"

[server]
listen = "127.0.0.1:8080"

[dispatcher]
stale_after = "15m"
poll_interval = "30s"
max_attempts = 3
max_retry_after = "24h"
pause_after_failures = 3

[quota]
window = "60m"
window_limit = 3

[channels.threads-main]
kind = "threads"
token_file = "credentials/threads-access-token"
account = "example_user"
daily_limit = 3
max_chars = 500
forbidden = ["guaranteed to meet the cat"]
required = ["Please respect the cats' own pace."]

[channels.sandbox]
kind = "sandbox"
daily_limit = 10

[notify.ops]
kind = "discord"
token_file = "credentials/discord-bot-token"
channel_id = "123456789"
events = ["published", "failed", "needs_review", "paused"]
"#;

    #[test]
    fn the_spec_example_parses_with_paths_resolved() {
        let config = parse(SPEC_EXAMPLE).unwrap();
        assert_eq!(config.database, "sqlite:///etc/airlock/airlock.db");
        let threads = &config.channels[&ChannelName::parse("threads-main").unwrap()];
        let PlatformConfig::Threads(platform) = &threads.platform else {
            panic!("{:?}", threads.platform);
        };
        assert_eq!(
            platform.token_file,
            Path::new("/etc/airlock/credentials/threads-access-token")
        );
        assert_eq!(threads.timezone, chrono_tz::Asia::Tokyo);
        let sandbox = &config.channels[&ChannelName::parse("sandbox").unwrap()];
        let PlatformConfig::Sandbox(platform) = &sandbox.platform else {
            panic!("{:?}", sandbox.platform);
        };
        assert_eq!(
            platform.path.as_deref(),
            Some(Path::new("/etc/airlock/sandbox/sandbox.jsonl"))
        );
        assert_eq!(config.window.limit, 3);
        let settings = config.app_settings();
        assert_eq!(settings.channels.len(), 2);
        assert_eq!(settings.notify[0].sink, "ops");
    }

    #[test]
    fn signature_v1_is_on_by_default_and_can_be_turned_off_for_webhooks_only() {
        let config = parse(
            "[channels.hook]\nkind = \"webhook\"\nurl = \"https://x.example/h\"\ndaily_limit = 1\nsignature_v1 = false\n\n[channels.hook2]\nkind = \"webhook\"\nurl = \"https://x.example/h\"\ndaily_limit = 1\n\n[notify.audit]\nkind = \"webhook\"\nurl = \"https://x.example/n\"\nevents = [\"published\"]\nsignature_v1 = false\n",
        )
        .unwrap();
        let v1 = |name: &str| match &config.channels[&ChannelName::parse(name).unwrap()].platform {
            PlatformConfig::Webhook(c) => c.signature_v1,
            other => panic!("{other:?}"),
        };
        assert!(!v1("hook"));
        assert!(v1("hook2"), "on by default (docs/channels.md#webhook)");
        let SinkTarget::Webhook(sink) = &config.sinks["audit"].target else {
            panic!("a webhook sink");
        };
        assert!(!sink.signature_v1);
        let err =
            parse("[channels.s]\nkind = \"sandbox\"\ndaily_limit = 1\nsignature_v1 = false\n")
                .unwrap_err();
        assert!(err.to_string().contains("signature_v1"), "{err}");
    }

    #[test]
    fn a_dispatcher_batch_is_read_and_checked() {
        assert_eq!(parse("").unwrap().batch, airlock_dispatcher::BATCH);
        assert_eq!(parse("[dispatcher]\nbatch = 1\n").unwrap().batch, 1);
        for wrong in [0, airlock_dispatcher::MAX_BATCH + 1, usize::MAX] {
            let err = parse(&format!("[dispatcher]\nbatch = {wrong}\n")).unwrap_err();
            assert!(err.to_string().contains("dispatcher.batch"), "{err}");
        }
    }

    #[test]
    fn server_limits_are_read_and_checked() {
        let config =
            parse("[server]\nmax_drafts_per_token = 5\nmetrics_token_required = true\n").unwrap();
        assert_eq!(config.app_settings().max_drafts_per_token, 5);
        assert!(config.metrics_token_required);
        let config = parse("").unwrap();
        assert_eq!(config.app_settings().max_drafts_per_token, 1000);
        assert!(!config.metrics_token_required);
        let err = parse("[server]\nmax_drafts_per_token = 0\n").unwrap_err();
        assert!(err.to_string().contains("max_drafts_per_token"), "{err}");
    }

    #[test]
    fn unknown_keys_are_refused_by_name_and_file() {
        let err = parse("timezone = \"UTC\"\ncolour = \"blue\"\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("/etc/airlock/airlock.toml"), "{msg}");
        assert!(msg.contains("colour"), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        let err = parse("[channels.s]\nkind = \"sandbox\"\ndaily_limit = 1\nsimulte = \"ok\"\n")
            .unwrap_err();
        assert!(err.to_string().contains("simulte"), "{err}");
    }

    #[test]
    fn missing_required_keys_are_named() {
        let err = parse("[channels.s]\nkind = \"sandbox\"\n").unwrap_err();
        assert!(err.to_string().contains("daily_limit"), "{err}");
        let err = parse("[channels.t]\nkind = \"threads\"\ndaily_limit = 1\naccount = \"a\"\n")
            .unwrap_err();
        assert!(err.to_string().contains("channels.t.token_file"), "{err}");
    }

    #[test]
    fn keys_of_other_kinds_are_refused_by_their_own_name() {
        let err = parse(
            "[channels.s]\nkind = \"sandbox\"\ndaily_limit = 1\nurl = \"https://x.example\"\n",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("channels.s.url does not apply to a sandbox channel"),
            "{err}"
        );
        // Another kind's key is named as written, not as a key it travels with.
        let err = parse(
            "[channels.t]\nkind = \"threads\"\ndaily_limit = 1\ntoken_file = \"t\"\naccount = \"a\"\nauthor = \"urn:li:organization:1\"\n",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("channels.t.author does not apply to a threads channel"),
            "{err}"
        );
        let err = parse(
            "[notify.n]\nkind = \"slack\"\nevents = []\nwebhook_file = \"w\"\nchannel_id = \"1\"\n",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("notify.n.channel_id does not apply to a slack sink"),
            "{err}"
        );
        let err =
            parse("[notify.n]\nkind = \"discord\"\nevents = []\ntoken_file = \"t\"\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("missing required key notify.n.channel_id for a discord sink"),
            "{err}"
        );
    }

    #[test]
    fn a_lease_must_outlast_every_request() {
        let text = "[dispatcher]\nstale_after = \"30s\"\n[channels.w]\nkind = \"webhook\"\ndaily_limit = 1\nurl = \"https://x.example/hook\"\nrequest_timeout = \"30s\"\n";
        let err = parse(text).unwrap_err();
        assert!(err.to_string().contains("stale_after"), "{err}");
        let text = "[dispatcher]\nstale_after = \"5m\"\n[channels.t]\nkind = \"threads\"\ndaily_limit = 1\ntoken_file = \"t\"\naccount = \"a\"\n";
        let err = parse(text).unwrap_err();
        assert!(err.to_string().contains("poll_timeout"), "{err}");
    }

    #[test]
    fn public_url_and_require_token_are_read_and_checked() {
        let config = parse(
            "[server]\nlisten = \"0.0.0.0:8080\"\npublic_url = \"https://airlock.example\"\n[cli]\nrequire_token = true\n",
        )
        .unwrap();
        assert_eq!(
            config.public_url.as_ref().map(|u| u.as_str()),
            Some("https://airlock.example/")
        );
        assert!(config.require_token);
        let defaults = parse("").unwrap();
        assert!(defaults.public_url.is_none() && !defaults.require_token);
        for bad in [
            "ftp://airlock.example",
            "airlock.example",
            "https://user:pw@airlock.example",
            "https://airlock.example/airlock",
            "https://airlock.example/?a=1",
        ] {
            let err = parse(&format!("[server]\npublic_url = {bad:?}\n")).unwrap_err();
            assert!(
                err.to_string().contains("server.public_url"),
                "{bad}: {err}"
            );
        }
        assert!(parse("[cli]\nrequire_tokens = true\n").is_err());
    }

    #[test]
    fn bad_values_are_explained() {
        assert!(
            parse("timezone = \"Mars/Olympus\"\n")
                .unwrap_err()
                .to_string()
                .contains("IANA")
        );
        assert!(
            parse("[dispatcher]\nstale_after = \"15 minutes\"\n")
                .unwrap_err()
                .to_string()
                .contains("15m")
        );
        assert!(
            parse("database = \"mysql://x\"\n")
                .unwrap_err()
                .to_string()
                .contains("sqlite://")
        );
        let err = parse("[channels.w]\nkind = \"webhook\"\ndaily_limit = 1\nurl = \"http://example.com/hook\"\n")
            .unwrap_err();
        assert!(err.to_string().contains("https"), "{err}");
        let err = parse(
            "[notify.n]\nkind = \"webhook\"\nurl = \"https://x.example\"\nevents = [\"posted\"]\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown event"), "{err}");
    }

    #[test]
    fn review_rules_come_from_the_channel_then_the_review_table_then_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("rubrics")).unwrap();
        std::fs::write(dir.path().join("rubrics/default.md"), "- tone: Warm.\n").unwrap();
        std::fs::write(dir.path().join("rubrics/threads.md"), "- claims: True.\n").unwrap();
        let text = "[review]\nrubric = \"rubrics/default.md\"\nmax_revisions = 3\n\
            [channels.plain]\nkind = \"sandbox\"\ndaily_limit = 1\n\
            [channels.strict]\nkind = \"sandbox\"\ndaily_limit = 1\nrubric = \"rubrics/threads.md\"\n\
            approvals_required = 2\nduplicate_window = \"off\"\n";
        let config = Config::parse(&dir.path().join("airlock.toml"), text).unwrap();
        let plain = &config.channels[&ChannelName::parse("plain").unwrap()].review;
        assert_eq!(plain.rubric, Some(dir.path().join("rubrics/default.md")));
        assert_eq!((plain.approvals_required, plain.max_revisions), (1, 3));
        assert_eq!(
            plain.duplicate_window,
            Some(Span::new(chrono::Duration::days(7)))
        );
        let strict = &config.channels[&ChannelName::parse("strict").unwrap()].review;
        assert_eq!(strict.rubric, Some(dir.path().join("rubrics/threads.md")));
        assert_eq!((strict.approvals_required, strict.max_revisions), (2, 3));
        assert_eq!(strict.duplicate_window, None);
        let settings = config.app_settings();
        let strict = &settings.channels[&ChannelName::parse("strict").unwrap()].review;
        assert_eq!(strict.rules.approvals_required, 2);
        assert_eq!(strict.duplicate_window, chrono::Duration::zero());
        assert_eq!(strict.rubric.read().unwrap().items[0].id, "claims");

        // Without any review keys: the built-in rubric and the defaults.
        let bare = parse("[channels.s]\nkind = \"sandbox\"\ndaily_limit = 1\n").unwrap();
        let review = &bare.channels[&ChannelName::parse("s").unwrap()].review;
        assert_eq!(review, &ReviewConfig::default());
        let settings = bare.app_settings();
        let rubric = &settings.channels[&ChannelName::parse("s").unwrap()]
            .review
            .rubric;
        assert_eq!(rubric.origin(), "built-in default rubric");
    }

    #[test]
    fn bad_review_keys_are_refused_by_name() {
        let channel = "[channels.s]\nkind = \"sandbox\"\ndaily_limit = 1\n";
        for (extra, needle) in [
            (
                "approvals_required = 0\n",
                "channels.s.approvals_required must be at least 1",
            ),
            (
                "max_revisions = 0\n",
                "channels.s.max_revisions must be at least 1",
            ),
            (
                "duplicate_window = \"a week\"\n",
                "channels.s.duplicate_window",
            ),
            (
                "rubric = \"rubrics/missing.md\"\n",
                "channels.s.rubric = /etc/airlock/rubrics/missing.md: no such file",
            ),
        ] {
            let err = parse(&format!("{channel}{extra}")).unwrap_err().to_string();
            assert!(err.contains(needle), "{extra}: {err}");
        }
        let err = parse("[review]\nrubrik = \"x.md\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("rubrik"), "{err}");
    }
}
