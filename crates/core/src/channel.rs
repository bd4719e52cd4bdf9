//! Channel kinds and the rules each platform imposes on content.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::policy::{ContentPolicy, LengthUnit};
use crate::post::InvalidValue;

/// The most `@handle` mentions a Bluesky post links (each needs a handle resolution);
/// further mentions stay plain text.
pub const MAX_MENTIONS_RESOLVED: usize = 8;

/// What a channel publishes to (docs/channels.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ChannelKind {
    /// A local JSON-lines log, for demos, drills and test posts.
    Sandbox,
    /// A JSON POST to a URL.
    Webhook,
    /// Threads (Meta).
    Threads,
    /// Instagram content publishing (single JPEG image posts).
    Instagram,
    /// LinkedIn Posts API.
    Linkedin,
    /// WordPress articles through the REST API.
    Wordpress,
    /// Bluesky (AT Protocol): records at a key airlock chooses.
    Bluesky,
    /// Mastodon statuses, with an `Idempotency-Key`.
    Mastodon,
    /// X (Twitter) posts through API v2, with a monthly money budget.
    X,
}

impl ChannelKind {
    /// Every kind.
    pub const ALL: [ChannelKind; 9] = [
        ChannelKind::Sandbox,
        ChannelKind::Webhook,
        ChannelKind::Threads,
        ChannelKind::Instagram,
        ChannelKind::Linkedin,
        ChannelKind::Wordpress,
        ChannelKind::Bluesky,
        ChannelKind::Mastodon,
        ChannelKind::X,
    ];

    /// The configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Sandbox => "sandbox",
            ChannelKind::Webhook => "webhook",
            ChannelKind::Threads => "threads",
            ChannelKind::Instagram => "instagram",
            ChannelKind::Linkedin => "linkedin",
            ChannelKind::Wordpress => "wordpress",
            ChannelKind::Bluesky => "bluesky",
            ChannelKind::Mastodon => "mastodon",
            ChannelKind::X => "x",
        }
    }

    /// Whether test posts are due on this kind (only sandboxes publish them).
    pub fn publishes_test_posts(self) -> bool {
        self == ChannelKind::Sandbox
    }

    /// Whether the publish waits for a platform container to be processed first, which
    /// a lease must outlast.
    pub fn polls_containers(self) -> bool {
        matches!(self, ChannelKind::Threads | ChannelKind::Instagram)
    }

    /// How many requests one publish makes, from the identity read to the end of the
    /// irreversible step (identity, quota read, container creation, key lookup, the
    /// publish and the read that may follow its refusal), not counting container polling:
    /// what a claim's lease must outlast.
    ///
    /// Bluesky: a session and its refresh, the earlier record's read, up to
    /// [`MAX_MENTIONS_RESOLVED`] handle resolutions, four image downloads and uploads, and
    /// the create with one refresh and resend. Mastodon: the account, the instance, four
    /// image downloads, uploads and one processing read each, the create. X: the account,
    /// a token refresh, the create with one refresh and resend.
    pub fn requests_per_publish(self) -> i32 {
        match self {
            ChannelKind::Sandbox => 0,
            ChannelKind::Webhook => 1,
            ChannelKind::Linkedin => 3,
            ChannelKind::Wordpress => 4,
            ChannelKind::Threads | ChannelKind::Instagram => 5,
            ChannelKind::X => 5,
            ChannelKind::Mastodon => 15,
            ChannelKind::Bluesky => 6 + MAX_MENTIONS_RESOLVED as i32 + 8,
        }
    }

    /// How many requests the irreversible step itself may make: the publish, and for some
    /// kinds one read after a refusal (Threads and Instagram read the container, LinkedIn
    /// reads the post a duplicate names). The lease must outlast them all when the intent
    /// is recorded.
    pub fn requests_in_publish(self) -> i32 {
        match self {
            ChannelKind::Threads | ChannelKind::Instagram | ChannelKind::Linkedin => 2,
            // The create, a session or token refresh after an expired-token refusal (which
            // proves nothing was made), and the create once more.
            ChannelKind::Bluesky | ChannelKind::X => 3,
            _ => 1,
        }
    }

    /// Whether the platform, not airlock, sets the length limit per server (Mastodon
    /// instances): a configured `max_chars` then replaces the kind's default instead of
    /// only narrowing it, and the adapter checks the server's own limit before sending.
    pub fn server_sets_length(self) -> bool {
        self == ChannelKind::Mastodon
    }

    /// The platform's own content rules, before the channel's configured ones.
    pub fn platform_policy(self) -> ContentPolicy {
        match self {
            ChannelKind::Sandbox | ChannelKind::Webhook => ContentPolicy::default(),
            ChannelKind::Threads => ContentPolicy {
                max_chars: Some(500),
                unit: LengthUnit::CharsEmojiAsUtf8Bytes,
                max_media: Some(1),
                max_links: Some(5),
                ..ContentPolicy::default()
            },
            ChannelKind::Instagram => ContentPolicy {
                max_chars: Some(2200),
                require_media: true,
                max_media: Some(1),
                jpeg_only: true,
                max_hashtags: Some(30),
                max_mentions: Some(20),
                ..ContentPolicy::default()
            },
            ChannelKind::Linkedin => ContentPolicy {
                max_chars: Some(3000),
                max_media: Some(0),
                ..ContentPolicy::default()
            },
            ChannelKind::Wordpress => ContentPolicy {
                require_title: true,
                ..ContentPolicy::default()
            },
            ChannelKind::Bluesky => ContentPolicy {
                max_chars: Some(300),
                max_bytes: Some(3000),
                unit: LengthUnit::Graphemes,
                max_media: Some(4),
                ..ContentPolicy::default()
            },
            // Mastodon's default; an instance may allow more (`max_chars`), and the adapter
            // reads the instance's own limit before sending.
            ChannelKind::Mastodon => ContentPolicy {
                max_chars: Some(500),
                unit: LengthUnit::CharsUrlAs23,
                max_media: Some(4),
                ..ContentPolicy::default()
            },
            ChannelKind::X => ContentPolicy {
                max_chars: Some(280),
                unit: LengthUnit::XWeighted,
                max_media: Some(0),
                appends_link: true,
                ..ContentPolicy::default()
            },
        }
    }

    /// The channel's effective policy: the platform's rules, narrowed by configuration.
    pub fn policy_with(
        self,
        max_chars: Option<usize>,
        forbidden: Vec<String>,
        required: Vec<String>,
    ) -> ContentPolicy {
        let mut policy = self.platform_policy();
        policy.max_chars = match (policy.max_chars, max_chars) {
            (Some(_), Some(configured)) if self.server_sets_length() => Some(configured),
            (Some(platform), Some(configured)) => Some(platform.min(configured)),
            (platform, configured) => platform.or(configured),
        };
        policy.forbidden = forbidden;
        policy.required = required;
        policy
    }
}

impl fmt::Display for ChannelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ChannelKind {
    type Err = InvalidValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ChannelKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| {
                InvalidValue::new(
                    "channel kind",
                    s,
                    "expected sandbox, webhook, threads, instagram, linkedin, wordpress, bluesky, mastodon or x",
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_length_narrows_but_never_widens_the_platform_limit() {
        let policy = ChannelKind::Threads.policy_with(Some(280), vec![], vec![]);
        assert_eq!(policy.max_chars, Some(280));
        let policy = ChannelKind::Threads.policy_with(Some(900), vec![], vec![]);
        assert_eq!(policy.max_chars, Some(500));
        let policy = ChannelKind::Sandbox.policy_with(Some(900), vec![], vec![]);
        assert_eq!(policy.max_chars, Some(900));
        assert_eq!(
            ChannelKind::Threads.platform_policy().unit,
            LengthUnit::CharsEmojiAsUtf8Bytes
        );
    }

    #[test]
    fn kinds_parse() {
        for kind in ChannelKind::ALL {
            assert_eq!(kind.as_str().parse::<ChannelKind>().unwrap(), kind);
        }
        assert!("twitter".parse::<ChannelKind>().is_err());
    }

    #[test]
    fn a_mastodon_instance_may_allow_more_than_the_default() {
        let policy = ChannelKind::Mastodon.policy_with(Some(5000), vec![], vec![]);
        assert_eq!(policy.max_chars, Some(5000));
        assert_eq!(
            ChannelKind::Mastodon
                .policy_with(None, vec![], vec![])
                .max_chars,
            Some(500)
        );
        let policy = ChannelKind::Bluesky.policy_with(Some(900), vec![], vec![]);
        assert_eq!(policy.max_chars, Some(300));
        assert_eq!(policy.unit, LengthUnit::Graphemes);
        assert_eq!(ChannelKind::X.platform_policy().max_chars, Some(280));
    }
}
