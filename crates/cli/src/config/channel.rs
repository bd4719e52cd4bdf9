//! `[channels.NAME]`: the keys every channel has, the keys every platform shares
//! ([`Common`]), then the kind's own keys, read by the kind's type in `airlock-platforms`
//! ([`PlatformConfig`], one variant per registered kind). The kind's table is read with
//! `deny_unknown_fields`, so a key of another kind is refused by its own name. Nothing
//! here names a kind: adding one is its entry in `airlock_core::channel` and its module in
//! `airlock-platforms`.

use std::path::{Path, PathBuf};

use chrono::Duration;
use chrono_tz::Tz;
use serde::Deserialize;

use airlock_core::{ChannelKind, ChannelName, Span};
use airlock_platforms::{Common, PlatformConfig};

/// One configured channel.
#[derive(Debug, Clone)]
pub struct ChannelConfig {
    /// Name.
    pub name: ChannelName,
    /// Publishes per local calendar day.
    pub daily_limit: u32,
    /// Calendar (the channel's `timezone`, else the file's).
    pub timezone: Tz,
    /// Configured length limit.
    pub max_chars: Option<usize>,
    /// Forbidden phrases.
    pub forbidden: Vec<String>,
    /// Required phrases.
    pub required: Vec<String>,
    /// Compose: site name.
    pub site: Option<String>,
    /// Compose: local slot times.
    pub slots: Vec<String>,
    /// Compose: text template.
    pub template: Option<String>,
    /// Compose: auto-approve principal.
    pub auto_approve: Option<String>,
    /// How its posts are reviewed.
    pub review: ReviewConfig,
    /// The keys every platform shares.
    pub common: Common,
    /// How it reaches its platform: its kind's own keys.
    pub platform: PlatformConfig,
}

/// A channel's review rules (its own keys, else `[review]`, else the defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewConfig {
    /// The rubric file; `None`: the built-in default rubric.
    pub rubric: Option<PathBuf>,
    /// Distinct critics that must pass the same content (at least 1).
    pub approvals_required: u32,
    /// Fail verdicts before a post is quarantined (at least 1).
    pub max_revisions: u32,
    /// The duplicate window; `None` (`"off"`): no duplicate check.
    pub duplicate_window: Option<Span>,
}

/// The review keys, as a channel or `[review]` writes them.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReview {
    pub(super) rubric: Option<PathBuf>,
    pub(super) approvals_required: Option<u32>,
    pub(super) max_revisions: Option<u32>,
    pub(super) duplicate_window: Option<String>,
}

impl ReviewConfig {
    /// Reads review keys (`table`: where they were written, for messages) over `defaults`.
    pub(super) fn read(
        table: &str,
        raw: RawReview,
        defaults: &ReviewConfig,
        dir: &Path,
    ) -> Result<Self, String> {
        let key = |k: &str| format!("{table}.{k}");
        let rubric = match raw.rubric {
            Some(path) => {
                let path = if path.is_relative() {
                    dir.join(path)
                } else {
                    path
                };
                crate::rubric::FileRubric::check(&path)
                    .map_err(|why| format!("{} = {}: {why}", key("rubric"), path.display()))?;
                Some(path)
            }
            None => defaults.rubric.clone(),
        };
        let at_least_one = |k: &str, v: Option<u32>, default: u32| match v {
            Some(0) => Err(format!("{} must be at least 1", key(k))),
            Some(n) => Ok(n),
            None => Ok(default),
        };
        let duplicate_window = match raw.duplicate_window.as_deref().map(str::trim) {
            Some("off") => None,
            Some(text) => Some(text.parse::<Span>().map_err(|e| {
                format!(
                    "{} = {text:?}: {e}; or \"off\" for no duplicate check",
                    key("duplicate_window")
                )
            })?),
            None => defaults.duplicate_window,
        };
        Ok(ReviewConfig {
            rubric,
            approvals_required: at_least_one(
                "approvals_required",
                raw.approvals_required,
                defaults.approvals_required,
            )?,
            max_revisions: at_least_one(
                "max_revisions",
                raw.max_revisions,
                defaults.max_revisions,
            )?,
            duplicate_window,
        })
    }
}

impl Default for ReviewConfig {
    /// The built-in rubric, one approval, quarantine after two fails, a seven-day window.
    fn default() -> Self {
        ReviewConfig {
            rubric: None,
            approvals_required: 1,
            max_revisions: 2,
            duplicate_window: Some(Span::new(Duration::days(7))),
        }
    }
}

/// The keys every channel has; the kind's own keys are left in `rest`.
#[derive(Debug, Deserialize)]
pub(super) struct RawChannel {
    kind: String,
    daily_limit: u32,
    timezone: Option<String>,
    max_chars: Option<usize>,
    #[serde(default)]
    forbidden: Vec<String>,
    #[serde(default)]
    required: Vec<String>,
    site: Option<String>,
    #[serde(default)]
    slots: Vec<String>,
    template: Option<String>,
    auto_approve: Option<String>,
    rubric: Option<PathBuf>,
    approvals_required: Option<u32>,
    max_revisions: Option<u32>,
    duplicate_window: Option<String>,
    #[serde(flatten)]
    rest: toml::Table,
}

/// What a channel table is checked against.
pub(super) struct Context<'a> {
    /// The file's directory, for relative paths.
    pub dir: &'a Path,
    /// The file's calendar.
    pub timezone: Tz,
    /// The lease every publish must fit in.
    pub stale_after: Span,
    /// Whether a site of this name is configured.
    pub has_site: &'a dyn Fn(&str) -> bool,
    /// `[review]`: the review rules of channels that set none of their own.
    pub review: &'a ReviewConfig,
}

impl ChannelConfig {
    /// Checks one `[channels.NAME]` table.
    pub(super) fn read(name: &str, raw: RawChannel, cx: &Context<'_>) -> Result<Self, String> {
        let key = |k: &str| format!("channels.{name}.{k}");
        let channel_name =
            ChannelName::parse(name).map_err(|e| format!("[channels.{name}]: {e}"))?;
        let kind: ChannelKind = raw
            .kind
            .parse()
            .map_err(|e| format!("{}: {e}", key("kind")))?;
        let table = format!("channels.{name}");
        let (common, mut platform) = read_platform(&table, kind, raw.rest)?;
        platform
            .keys_mut()
            .resolve_paths(name, &|path: &mut PathBuf| {
                if path.is_relative() {
                    *path = cx.dir.join(&*path);
                }
            });
        platform.keys().check(&table, &common)?;
        if raw.daily_limit == 0 {
            return Err(format!(
                "{} must be at least 1; to stop a channel, use `airlock pause {name}`",
                key("daily_limit")
            ));
        }
        for (k, url) in platform.keys().urls() {
            airlock_platforms::http::check_url(k, url).map_err(|e| format!("{}: {e}", key(k)))?;
        }
        let longest = longest_publish(&common, &platform);
        if kind != ChannelKind::Sandbox && cx.stale_after.as_chrono() <= longest {
            return Err(format!(
                "dispatcher.stale_after = {} must exceed the longest publish of channel {name} ({}): a lease must never expire while its request can still be running; raise stale_after or lower {}",
                cx.stale_after,
                Span::new(longest),
                if kind.polls_containers() {
                    "request_timeout / poll_timeout"
                } else {
                    "request_timeout"
                }
            ));
        }
        if let Some(site) = &raw.site
            && !(cx.has_site)(site)
        {
            return Err(format!(
                "{} = {site:?} names no [sites.{site}] table",
                key("site")
            ));
        }
        let timezone = match &raw.timezone {
            Some(zone) => zone.parse::<Tz>().map_err(|_| {
                format!(
                    "{} = {zone:?} is not an IANA time zone (like \"Asia/Tokyo\" or \"UTC\")",
                    key("timezone")
                )
            })?,
            None => cx.timezone,
        };
        let review = ReviewConfig::read(
            &format!("channels.{name}"),
            RawReview {
                rubric: raw.rubric,
                approvals_required: raw.approvals_required,
                max_revisions: raw.max_revisions,
                duplicate_window: raw.duplicate_window,
            },
            cx.review,
            cx.dir,
        )?;
        Ok(ChannelConfig {
            name: channel_name,
            review,
            daily_limit: raw.daily_limit,
            timezone,
            max_chars: raw.max_chars,
            forbidden: raw.forbidden,
            required: raw.required,
            site: raw.site,
            slots: raw.slots,
            template: raw.template,
            auto_approve: raw.auto_approve,
            common,
            platform,
        })
    }

    /// Its kind.
    pub fn kind(&self) -> ChannelKind {
        self.platform.kind()
    }

    /// Its monthly money budget (X channels with `monthly_budget_usd`), checked when read.
    pub fn budget(&self) -> Option<airlock_app::Budget> {
        let table = format!("channels.{}", self.name);
        self.platform.keys().budget(&table).ok().flatten()
    }

    /// The account the credential must belong to, for kinds with accounts.
    pub fn account(&self) -> Option<&str> {
        self.platform.keys().account()
    }

    /// The secret files it reads (credentials, HMAC secrets), for `doctor`.
    pub fn credential_files(&self) -> Vec<&Path> {
        self.platform.keys().secret_files()
    }
}

/// Reads a channel's platform keys (`rest`: the table without the keys every channel
/// has): the kind's own keys by its type, then the [`Common`] ones. Serde's `flatten`
/// would read them in one go, but under `deny_unknown_fields` it reports a misspelt
/// required key as the missing one; split first, a misspelt key is named as written.
fn read_platform(
    table: &str,
    kind: ChannelKind,
    mut rest: toml::Table,
) -> Result<(Common, PlatformConfig), String> {
    let what = format!("{kind} channel");
    let common: toml::Table = Common::KEYS
        .iter()
        .filter_map(|k| rest.remove_entry(*k))
        .collect();
    let platform = PlatformConfig::read(kind, toml::Value::Table(rest))
        .map_err(|e| field_error(table, &what, &e))?;
    let common = Common::deserialize(toml::Value::Table(common))
        .map_err(|e| field_error(table, &what, &e))?;
    Ok((common, platform))
}

/// The longest one publish may take (every request up to and including the irreversible
/// one, container polling, and the slack the guarded path keeps before the lease ends):
/// what a lease must outlast.
fn longest_publish(common: &Common, platform: &PlatformConfig) -> Duration {
    let mut longest = common.request_timeout.as_chrono() * platform.kind().requests_per_publish()
        + airlock_app::publish::LEASE_SLACK;
    if let Some(polling) = platform.keys().poll_timeout() {
        longest += polling.as_chrono();
    }
    longest
}

/// A serde error on a kind's own keys in table `table` (`channels.NAME`), said with the
/// key's full name: what (`a threads channel`) it does not apply to, or needs.
pub(super) fn field_error(table: &str, what: &str, error: &toml::de::Error) -> String {
    let message = error.message();
    let quoted = |text: &str| {
        let start = text.find('`')? + 1;
        let end = start + text[start..].find('`')?;
        Some(text[start..end].to_owned())
    };
    if let Some(rest) = message.strip_prefix("unknown field ")
        && let Some(field) = quoted(rest)
    {
        return format!("{table}.{field} does not apply to a {what}");
    }
    if let Some(rest) = message.strip_prefix("missing field ")
        && let Some(field) = quoted(rest)
    {
        return format!("missing required key {table}.{field} for a {what}");
    }
    format!("[{table}] ({what}): {}", message.trim())
}
