//! `[channels.NAME]`: the keys every channel has, then one type per channel kind that
//! carries only that kind's keys. The kind's table is read with `deny_unknown_fields`,
//! so a key of another kind is refused by its own name; adding a kind is one variant of
//! [`PlatformConfig`], its type here, and its adapter constructor in `wiring`.

use std::path::{Path, PathBuf};

use chrono::Duration;
use chrono_tz::Tz;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use airlock_core::{ChannelKind, ChannelName, Span};
use airlock_platforms::sandbox::Simulate;

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
    /// How it reaches its platform.
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

/// What a channel's kind needs to reach its platform: one variant per kind, each with
/// only that kind's keys.
#[derive(Debug, Clone)]
pub enum PlatformConfig {
    /// `kind = "sandbox"`.
    Sandbox(SandboxConfig),
    /// `kind = "webhook"`.
    Webhook(WebhookConfig),
    /// `kind = "threads"`.
    Threads(ThreadsConfig),
    /// `kind = "instagram"`.
    Instagram(InstagramConfig),
    /// `kind = "linkedin"`.
    Linkedin(LinkedinConfig),
    /// `kind = "wordpress"`.
    Wordpress(WordpressConfig),
    /// `kind = "bluesky"`.
    Bluesky(BlueskyConfig),
    /// `kind = "mastodon"`.
    Mastodon(MastodonConfig),
    /// `kind = "x"`.
    X(XConfig),
}

fn thirty_seconds() -> Span {
    Span::seconds(30)
}

fn five_seconds() -> Span {
    Span::seconds(5)
}

fn five_minutes() -> Span {
    Span::minutes(5)
}

/// `sandbox`: a local JSON-lines log instead of a platform.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// `ok`, `reject` or `unknown`: the outcome it acts out.
    #[serde(default)]
    pub simulate: Simulate,
    /// The log (default `sandbox/<channel>.jsonl` beside the config).
    pub path: Option<PathBuf>,
    /// Bound on one publish.
    #[serde(default = "thirty_seconds")]
    pub request_timeout: Span,
}

/// `webhook`: a JSON POST to `url`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// Where to POST.
    pub url: String,
    /// HMAC secret file (signs the body).
    pub secret_file: Option<PathBuf>,
    /// Whether to send `X-Airlock-Signature` (the body-only signature of
    /// docs/channels.md#webhook, which a captured request replays) beside
    /// `X-Airlock-Signature-V2`. Default `true`; set `false` once the receiver verifies V2
    /// only.
    #[serde(default = "yes")]
    pub signature_v1: bool,
    /// Bound on the request.
    #[serde(default = "thirty_seconds")]
    pub request_timeout: Span,
}

fn yes() -> bool {
    true
}

/// `threads`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadsConfig {
    /// The access token's file (0600).
    pub token_file: PathBuf,
    /// The account the token must belong to.
    pub account: String,
    /// API host override (tests point it at a fake).
    pub base_url: Option<String>,
    /// Bound on each request.
    #[serde(default = "thirty_seconds")]
    pub request_timeout: Span,
    /// Pause between two container status reads.
    #[serde(default = "five_seconds")]
    pub poll_interval: Span,
    /// How long a container may take to be processed.
    #[serde(default = "five_minutes")]
    pub poll_timeout: Span,
}

/// `instagram`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstagramConfig {
    /// The access token's file (0600).
    pub token_file: PathBuf,
    /// The account the token must belong to.
    pub account: String,
    /// API host override (`https://graph.facebook.com` for Facebook Login; tests: a fake).
    pub base_url: Option<String>,
    /// Bound on each request.
    #[serde(default = "thirty_seconds")]
    pub request_timeout: Span,
    /// Pause between two container status reads.
    #[serde(default = "five_seconds")]
    pub poll_interval: Span,
    /// How long a container may take to be processed.
    #[serde(default = "five_minutes")]
    pub poll_timeout: Span,
    /// Graph API version (`vNN.0`).
    pub api_version: Option<String>,
    /// The professional account's user id (Facebook Login).
    pub user_id: Option<String>,
}

/// `linkedin`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkedinConfig {
    /// The access token's file (0600).
    pub token_file: PathBuf,
    /// The member (`sub`) the token must belong to.
    pub account: String,
    /// API host override.
    pub base_url: Option<String>,
    /// Bound on each request.
    #[serde(default = "thirty_seconds")]
    pub request_timeout: Span,
    /// `LinkedIn-Version` (`YYYYMM`).
    pub version: Option<String>,
    /// Author URN, to post as an organization.
    pub author: Option<String>,
}

/// `wordpress`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WordpressConfig {
    /// The application password's file (0600).
    pub token_file: PathBuf,
    /// The user slug the password must belong to.
    pub account: String,
    /// The site's address.
    pub base_url: String,
    /// The login name the application password belongs to.
    pub username: String,
    /// Bound on each request.
    #[serde(default = "thirty_seconds")]
    pub request_timeout: Span,
    /// Route requests through `/?rest_route=` (sites without pretty permalinks).
    #[serde(default)]
    pub rest_route: bool,
}

/// `bluesky`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlueskyConfig {
    /// The app password's file (0600).
    pub token_file: PathBuf,
    /// The handle the session must name.
    pub account: String,
    /// What the session is created with, if not the handle (the account's email or DID).
    pub identifier: Option<String>,
    /// The account's PDS (default `https://bsky.social`).
    pub base_url: Option<String>,
    /// Bound on each request.
    #[serde(default = "thirty_seconds")]
    pub request_timeout: Span,
}

/// `mastodon`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MastodonConfig {
    /// The access token's file (0600).
    pub token_file: PathBuf,
    /// The `acct` the token must belong to.
    pub account: String,
    /// The instance.
    pub base_url: String,
    /// `public` (default), `unlisted`, `private` or `direct`.
    pub visibility: Option<String>,
    /// Bound on each request.
    #[serde(default = "thirty_seconds")]
    pub request_timeout: Span,
}

/// `x`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XConfig {
    /// The token file (0600): an access token, or JSON with a refresh token.
    pub token_file: PathBuf,
    /// The username the token must belong to.
    pub account: String,
    /// API host override (default `https://api.x.com`).
    pub base_url: Option<String>,
    /// Bound on each request.
    #[serde(default = "thirty_seconds")]
    pub request_timeout: Span,
    /// Most money spent per calendar month in the channel's zone, in US dollars.
    pub monthly_budget_usd: Option<f64>,
    /// What a post costs, in US dollars (default 0.015).
    pub post_cost_usd: Option<f64>,
    /// What a post with a link costs, in US dollars (default 0.20).
    pub url_post_cost_usd: Option<f64>,
}

impl MastodonConfig {
    /// Who may see the statuses; a value Mastodon does not know is refused naming the key.
    pub fn visibility(
        &self,
        name: &str,
    ) -> Result<airlock_platforms::mastodon::Visibility, String> {
        use airlock_platforms::mastodon::Visibility;
        Ok(match self.visibility.as_deref() {
            None | Some("public") => Visibility::Public,
            Some("unlisted") => Visibility::Unlisted,
            Some("private") => Visibility::Private,
            Some("direct") => Visibility::Direct,
            Some(other) => {
                return Err(format!(
                    "channels.{name}.visibility = {other:?} is not a Mastodon visibility: write \"public\", \"unlisted\", \"private\" or \"direct\""
                ));
            }
        })
    }
}

impl XConfig {
    /// The money budget, if the channel has one; a bad amount is refused naming its key.
    pub fn budget(&self, name: &str) -> Result<Option<airlock_app::Budget>, String> {
        use airlock_core::budget::{Costs, parse_usd};
        let amount = |key: &str, value: Option<f64>, default: u64| match value {
            None => Ok(default),
            Some(value) => parse_usd(value).map_err(|e| format!("channels.{name}.{key}: {e}")),
        };
        let costs = Costs {
            post: amount("post_cost_usd", self.post_cost_usd, Costs::X_DEFAULT.post)?,
            url_post: amount(
                "url_post_cost_usd",
                self.url_post_cost_usd,
                Costs::X_DEFAULT.url_post,
            )?,
        };
        let Some(monthly) = self.monthly_budget_usd else {
            if self.post_cost_usd.is_some() || self.url_post_cost_usd.is_some() {
                return Err(format!(
                    "channels.{name}.post_cost_usd and url_post_cost_usd need channels.{name}.monthly_budget_usd, the budget they are counted against"
                ));
            }
            return Ok(None);
        };
        Ok(Some(airlock_app::Budget {
            monthly: amount("monthly_budget_usd", Some(monthly), 0)?,
            costs,
        }))
    }
}

impl PlatformConfig {
    /// Reads a kind's own keys (`rest`: the table without the keys every channel has),
    /// refusing a key of another kind by its own name.
    fn read(name: &str, kind: ChannelKind, rest: toml::Table) -> Result<Self, String> {
        fn read<T: DeserializeOwned>(
            name: &str,
            kind: ChannelKind,
            rest: toml::Table,
        ) -> Result<T, String> {
            T::deserialize(toml::Value::Table(rest)).map_err(|e| {
                field_error(&format!("channels.{name}"), &format!("{kind} channel"), &e)
            })
        }
        Ok(match kind {
            ChannelKind::Sandbox => PlatformConfig::Sandbox(read(name, kind, rest)?),
            ChannelKind::Webhook => PlatformConfig::Webhook(read(name, kind, rest)?),
            ChannelKind::Threads => PlatformConfig::Threads(read(name, kind, rest)?),
            ChannelKind::Instagram => PlatformConfig::Instagram(read(name, kind, rest)?),
            ChannelKind::Linkedin => PlatformConfig::Linkedin(read(name, kind, rest)?),
            ChannelKind::Wordpress => PlatformConfig::Wordpress(read(name, kind, rest)?),
            ChannelKind::Bluesky => PlatformConfig::Bluesky(read(name, kind, rest)?),
            ChannelKind::Mastodon => PlatformConfig::Mastodon(read(name, kind, rest)?),
            ChannelKind::X => PlatformConfig::X(read(name, kind, rest)?),
        })
    }

    /// Its kind.
    pub fn kind(&self) -> ChannelKind {
        match self {
            PlatformConfig::Sandbox(_) => ChannelKind::Sandbox,
            PlatformConfig::Webhook(_) => ChannelKind::Webhook,
            PlatformConfig::Threads(_) => ChannelKind::Threads,
            PlatformConfig::Instagram(_) => ChannelKind::Instagram,
            PlatformConfig::Linkedin(_) => ChannelKind::Linkedin,
            PlatformConfig::Wordpress(_) => ChannelKind::Wordpress,
            PlatformConfig::Bluesky(_) => ChannelKind::Bluesky,
            PlatformConfig::Mastodon(_) => ChannelKind::Mastodon,
            PlatformConfig::X(_) => ChannelKind::X,
        }
    }

    /// The account the credential must belong to, for kinds with accounts.
    pub fn account(&self) -> Option<&str> {
        match self {
            PlatformConfig::Sandbox(_) | PlatformConfig::Webhook(_) => None,
            PlatformConfig::Threads(c) => Some(&c.account),
            PlatformConfig::Instagram(c) => Some(&c.account),
            PlatformConfig::Linkedin(c) => Some(&c.account),
            PlatformConfig::Wordpress(c) => Some(&c.account),
            PlatformConfig::Bluesky(c) => Some(&c.account),
            PlatformConfig::Mastodon(c) => Some(&c.account),
            PlatformConfig::X(c) => Some(&c.account),
        }
    }

    /// The bound on each request.
    pub fn request_timeout(&self) -> Span {
        match self {
            PlatformConfig::Sandbox(c) => c.request_timeout,
            PlatformConfig::Webhook(c) => c.request_timeout,
            PlatformConfig::Threads(c) => c.request_timeout,
            PlatformConfig::Instagram(c) => c.request_timeout,
            PlatformConfig::Linkedin(c) => c.request_timeout,
            PlatformConfig::Wordpress(c) => c.request_timeout,
            PlatformConfig::Bluesky(c) => c.request_timeout,
            PlatformConfig::Mastodon(c) => c.request_timeout,
            PlatformConfig::X(c) => c.request_timeout,
        }
    }

    /// How long container processing may take, for kinds that poll containers.
    fn poll_timeout(&self) -> Option<Span> {
        match self {
            PlatformConfig::Threads(c) => Some(c.poll_timeout),
            PlatformConfig::Instagram(c) => Some(c.poll_timeout),
            _ => None,
        }
    }

    /// The secret files it reads (credentials, HMAC secrets), for `doctor`.
    pub fn credential_files(&self) -> Vec<&Path> {
        match self {
            PlatformConfig::Sandbox(_) => Vec::new(),
            PlatformConfig::Webhook(c) => c.secret_file.iter().map(PathBuf::as_path).collect(),
            PlatformConfig::Threads(c) => vec![&c.token_file],
            PlatformConfig::Instagram(c) => vec![&c.token_file],
            PlatformConfig::Linkedin(c) => vec![&c.token_file],
            PlatformConfig::Wordpress(c) => vec![&c.token_file],
            PlatformConfig::Bluesky(c) => vec![&c.token_file],
            PlatformConfig::Mastodon(c) => vec![&c.token_file],
            PlatformConfig::X(c) => vec![&c.token_file],
        }
    }

    /// Every `base_url` it sends a credential to, with the key naming it (a webhook's
    /// `url` is checked by its own rule, `check_webhook_url`).
    fn urls(&self) -> Vec<(&str, &'static str)> {
        match self {
            PlatformConfig::Sandbox(_) => Vec::new(),
            PlatformConfig::Webhook(_) => Vec::new(),
            PlatformConfig::Threads(c) => c
                .base_url
                .iter()
                .map(|u| (u.as_str(), "base_url"))
                .collect(),
            PlatformConfig::Instagram(c) => c
                .base_url
                .iter()
                .map(|u| (u.as_str(), "base_url"))
                .collect(),
            PlatformConfig::Linkedin(c) => c
                .base_url
                .iter()
                .map(|u| (u.as_str(), "base_url"))
                .collect(),
            PlatformConfig::Wordpress(c) => vec![(c.base_url.as_str(), "base_url")],
            PlatformConfig::Bluesky(c) => c
                .base_url
                .iter()
                .map(|u| (u.as_str(), "base_url"))
                .collect(),
            PlatformConfig::Mastodon(c) => vec![(c.base_url.as_str(), "base_url")],
            PlatformConfig::X(c) => c
                .base_url
                .iter()
                .map(|u| (u.as_str(), "base_url"))
                .collect(),
        }
    }

    /// Resolves relative paths against the configuration's directory.
    fn resolve(&mut self, name: &str, dir: &Path) {
        let resolve = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        };
        match self {
            PlatformConfig::Sandbox(c) => {
                let path = c
                    .path
                    .get_or_insert_with(|| PathBuf::from("sandbox").join(format!("{name}.jsonl")));
                resolve(path);
            }
            PlatformConfig::Webhook(c) => c.secret_file.iter_mut().for_each(resolve),
            PlatformConfig::Threads(c) => resolve(&mut c.token_file),
            PlatformConfig::Instagram(c) => resolve(&mut c.token_file),
            PlatformConfig::Linkedin(c) => resolve(&mut c.token_file),
            PlatformConfig::Wordpress(c) => resolve(&mut c.token_file),
            PlatformConfig::Bluesky(c) => resolve(&mut c.token_file),
            PlatformConfig::Mastodon(c) => resolve(&mut c.token_file),
            PlatformConfig::X(c) => resolve(&mut c.token_file),
        }
    }

    /// The longest one publish may take (every request up to and including the
    /// irreversible one, container polling, and the slack the guarded path keeps before
    /// the lease ends): what a lease must outlast.
    pub fn longest_publish(&self) -> Duration {
        let kind = self.kind();
        let mut longest = self.request_timeout().as_chrono() * kind.requests_per_publish()
            + airlock_app::publish::LEASE_SLACK;
        if let Some(polling) = self.poll_timeout() {
            longest += polling.as_chrono();
        }
        longest
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
        let mut platform = PlatformConfig::read(name, kind, raw.rest)?;
        platform.resolve(name, cx.dir);
        match &platform {
            PlatformConfig::X(x) => {
                x.budget(name)?;
            }
            PlatformConfig::Mastodon(m) => {
                m.visibility(name)?;
                airlock_platforms::mastodon::check_request_timeout(m.request_timeout.as_std())
                    .map_err(|e| format!("channels.{name}.{e}"))?;
            }
            _ => {}
        }
        if raw.daily_limit == 0 {
            return Err(format!(
                "{} must be at least 1; to stop a channel, use `airlock pause {name}`",
                key("daily_limit")
            ));
        }
        for (url, k) in platform.urls() {
            airlock_platforms::http::check_base_url(url).map_err(|e| format!("{}: {e}", key(k)))?;
        }
        if let PlatformConfig::Webhook(c) = &platform {
            // One rule and message with a webhook notification sink's url.
            airlock_platforms::http::check_webhook_url(&c.url)
                .map_err(|e| format!("{}: {e}", key("url")))?;
        }
        let longest = platform.longest_publish();
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
            platform,
        })
    }

    /// Its kind.
    pub fn kind(&self) -> ChannelKind {
        self.platform.kind()
    }

    /// Its monthly money budget (X channels with `monthly_budget_usd`), checked when read.
    pub fn budget(&self) -> Option<airlock_app::Budget> {
        match &self.platform {
            PlatformConfig::X(c) => c.budget(self.name.as_str()).ok().flatten(),
            _ => None,
        }
    }
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
