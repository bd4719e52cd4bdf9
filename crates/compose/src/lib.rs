//! Posts from a Markdown site (docs/sites.md): which articles may be posted on a channel,
//! the text a channel's template makes of one, and slots filled at most once.
//!
//! Layout:
//! - [`site`]: reading a site's Markdown files and their YAML front matter.
//! - [`candidate`]: the eligibility rules, the order articles are taken in, and the
//!   reason for every article passed over ([`candidates`]).
//! - [`head`]: `HEAD` checks of public pages and images (no redirects, short timeouts).
//! - [`template`]: channel templates.
//! - [`slot`]: local slot times, their instants and their store keys.
//! - [`compose`](mod@compose): drafting the next post for a channel, optionally for a slot ([`compose()`]).
//! - [`scheduler`]: the loop inside `serve` that fills each configured slot once.
//!
//! **API boundary:** every write goes through [`airlock_app::App`] (drafting as
//! [`airlock_app::Principal::scheduler`], approving as the channel's `auto_approve`
//! principal), so policy, roles and the ledger's slot uniqueness apply as for any other
//! draft. This crate reads files and sends `HEAD` requests; it never publishes, and it
//! never writes a site's files. Settings come in as plain data ([`ComposeSettings`]); the
//! CLI maps `airlock.toml` to them.

#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use airlock_core::{ChannelName, Span};

pub mod candidate;
pub mod compose;
pub mod head;
pub mod scheduler;
pub mod site;
pub mod slot;
pub mod template;

pub use candidate::{Candidates, Eligible, SkipReason, Skipped, candidates};
pub use compose::{ComposeRequest, Composed, Plan, compose};
pub use head::{CheckSettings, Checker};
pub use scheduler::{ScheduleSettings, Scheduler, SlotOutcome, SlotRun};
pub use slot::{BadSlot, Slot, SlotInstance};
pub use template::{Template, TemplateError};

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What stops `candidates` or `compose` as a whole. A single article that cannot be used
/// is never an error: it is [`Skipped`] with its reason.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input or settings: an unknown site or channel, a channel drawing from another
    /// site, an Instagram channel on a site without `media_prefix` (exit 2).
    #[error("{0}")]
    Invalid(String),
    /// The site's directory cannot be listed (exit 2 when it does not exist, else 1).
    #[error("cannot read the directory of site {site} ({}): {source}", dir.display())]
    Site {
        /// The site.
        site: String,
        /// Its directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The guarded operations refused or failed (drafting, approving, reading the ledger).
    #[error(transparent)]
    App(#[from] airlock_app::Error),
}

impl Error {
    /// Whether this is a refusal (bad input or configuration) rather than an operational failure.
    pub fn is_refusal(&self) -> bool {
        match self {
            Error::Invalid(_) => true,
            Error::Site { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            Error::App(e) => e.is_refusal(),
        }
    }
}

impl From<airlock_app::StoreError> for Error {
    fn from(e: airlock_app::StoreError) -> Self {
        Error::App(e.into())
    }
}

/// A Markdown site (`[sites.NAME]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSettings {
    /// Its name in the configuration.
    pub name: String,
    /// Where its Markdown files are (searched recursively); also the root of each
    /// post's `source.path`, which the guarded publish path re-hashes.
    pub dir: PathBuf,
    /// Its public address; an article's URL is `base_url + "/" + slug + "/"`.
    pub base_url: String,
    /// Where Instagram images must be hosted (a URL prefix).
    pub media_prefix: Option<String>,
    /// How long an article rests on a channel after it was used there (default 60 days).
    pub reuse_after: Span,
}

impl SiteSettings {
    /// A site with no media prefix and the default 60-day reuse window.
    pub fn new(name: impl Into<String>, dir: impl Into<PathBuf>, base_url: &str) -> Self {
        SiteSettings {
            name: name.into(),
            dir: dir.into(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            media_prefix: None,
            reuse_after: Span::new(chrono::Duration::days(60)),
        }
    }

    /// The public URL of the article with this slug.
    pub fn article_url(&self, slug: &str) -> String {
        format!("{}/{slug}/", self.base_url.trim_end_matches('/'))
    }
}

/// How one channel draws posts from a site (the channel's `site`, `slots`, `template`
/// and `auto_approve` keys). The channel's kind, time zone and policy come from the
/// [`airlock_app::App`]'s channel settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelCompose {
    /// The channel.
    pub channel: ChannelName,
    /// The name of the site it draws from.
    pub site: String,
    /// Local times to fill each day, in the channel's time zone.
    pub slots: Vec<Slot>,
    /// The text template ([`template::DEFAULT_TEMPLATE`] unless configured).
    pub template: Template,
    /// The principal that approves drafts passing the policy, if any.
    pub auto_approve: Option<String>,
}

impl ChannelCompose {
    /// A channel drawing from `site` with the default template, no slots and no auto-approval.
    pub fn new(channel: ChannelName, site: impl Into<String>) -> Self {
        ChannelCompose {
            channel,
            site: site.into(),
            slots: Vec::new(),
            template: Template::default(),
            auto_approve: None,
        }
    }
}

/// Every site and every channel that draws from one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComposeSettings {
    /// Sites by name.
    pub sites: BTreeMap<String, SiteSettings>,
    /// Channels with a `site`, by name.
    pub channels: BTreeMap<ChannelName, ChannelCompose>,
    /// How public URLs are checked.
    pub check: CheckSettings,
}

/// One channel drawing from one site: what [`candidates`] and [`compose()`] work on.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The site.
    pub site: &'a SiteSettings,
    /// The channel's compose settings.
    pub channel: &'a ChannelCompose,
}

impl ComposeSettings {
    /// The channel `channel` drawing from site `site`, or a refusal saying what is
    /// wrong: an unknown site, a channel without a `site`, or one drawing from another site.
    pub fn target(&self, site: &str, channel: &str) -> Result<Target<'_>> {
        let site_settings = self.sites.get(site).ok_or_else(|| {
            Error::Invalid(format!(
                "unknown site {site:?}: configured sites are {}",
                list(self.sites.keys().map(String::as_str))
            ))
        })?;
        let compose = ChannelName::parse(channel)
            .ok()
            .and_then(|name| self.channels.get(&name))
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "channel {channel:?} draws from no site: add site = {site:?} to [channels.{channel}] (channels drawing from a site: {})",
                    list(self.channels.keys().map(ChannelName::as_str))
                ))
            })?;
        if compose.site != site {
            return Err(Error::Invalid(format!(
                "channel {channel} draws from site {:?}, not {site:?}: pass --site {}",
                compose.site, compose.site
            )));
        }
        Ok(Target {
            site: site_settings,
            channel: compose,
        })
    }
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
