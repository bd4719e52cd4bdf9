//! Channel kinds and the rules each platform imposes on content: one list, one entry per
//! kind (`channel_kinds!`), from which [`ChannelKind`] and its rules derive.

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::limits;
use crate::policy::{ContentPolicy, LengthUnit, VideoRule};
use crate::post::InvalidValue;

/// The most parts of a thread on the platforms that take threads: each part is one
/// request and, on X, one paid post.
pub const THREAD_PARTS: usize = 25;

const MB: u64 = 1024 * 1024;

/// The most images of one LinkedIn post airlock takes.
pub const LINKEDIN_IMAGES: usize = 4;

/// The largest video Threads and Instagram fetch for a post.
pub const META_MAX_VIDEO_BYTES: u64 = 1024 * 1024 * 1024;

/// The most `@handle` mentions a Bluesky post links (each needs a handle resolution);
/// further mentions stay plain text.
pub const MAX_MENTIONS_RESOLVED: usize = 8;

/// What core knows of one channel kind: one value per kind in the list below, from
/// which [`ChannelKind`] and everything core answers about a kind derive. The kind's
/// adapter and configuration keys are its module in `airlock-platforms`, registered there.
#[derive(Debug, Clone, Copy)]
pub struct KindRules {
    /// The configuration name (`kind = "x"`), which is also its JSON name.
    pub name: &'static str,
    /// The platform's own content rules, before the channel's configured ones.
    pub policy: fn() -> ContentPolicy,
    /// How many requests one publish makes, from the identity read to the end of the
    /// irreversible step (identity, quota read, container creation, key lookup, the
    /// publish and the read that may follow its refusal), not counting container polling:
    /// what a claim's lease must outlast.
    pub requests_per_publish: i32,
    /// How many requests the irreversible step itself may make: the publish, and for some
    /// kinds a read after a refusal or a renewal and a resend. The lease must outlast them
    /// all when the intent is recorded.
    pub requests_in_publish: i32,
    /// Whether test posts are due on this kind (only sandboxes publish them).
    pub publishes_test_posts: bool,
    /// Whether the publish waits for a platform container to be processed first, which a
    /// lease must outlast (`poll_timeout`).
    pub polls_containers: bool,
    /// Whether the platform, not airlock, sets the length limit per server (Mastodon
    /// instances): a configured `max_chars` then replaces the kind's default instead of
    /// only narrowing it, and the adapter checks the server's own limit before sending.
    pub server_sets_length: bool,
}

impl KindRules {
    /// What a kind's entry leaves out: one request, no content rules, nothing special.
    const BASE: KindRules = KindRules {
        name: "",
        policy: ContentPolicy::default,
        requests_per_publish: 1,
        requests_in_publish: 1,
        publishes_test_posts: false,
        polls_containers: false,
        server_sets_length: false,
    };
}

/// Defines [`ChannelKind`] from the list of kinds: each entry is a variant, its
/// configuration name and the [`KindRules`] it sets beyond [`KindRules::BASE`].
macro_rules! channel_kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:tt { $($rule:ident: $value:expr),* $(,)? })*) => {
        // Each kind is one entry of the list below; its rules are `ChannelKind::rules`.
        /// What a channel publishes to (docs/channels.md).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub enum ChannelKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl ChannelKind {
            /// Every kind, in the list's order.
            pub const ALL: [ChannelKind; [$($name),*].len()] = [$(ChannelKind::$variant),*];

            /// What core knows of the kind.
            pub fn rules(self) -> &'static KindRules {
                match self {
                    $(ChannelKind::$variant => {
                        static RULES: KindRules = KindRules {
                            name: $name,
                            $($rule: $value,)*
                            ..KindRules::BASE
                        };
                        &RULES
                    })*
                }
            }
        }
    };
}

channel_kinds! {
    /// A local JSON-lines log, for demos, drills and test posts.
    Sandbox = "sandbox" {
        policy: || ContentPolicy {
            max_parts: limits::MAX_PARTS,
            first_comment: true,
            video: VideoRule::InAlbums,
            ..ContentPolicy::default()
        },
        requests_per_publish: 0,
        publishes_test_posts: true,
    }
    /// A JSON POST to a URL.
    Webhook = "webhook" {}
    /// Threads (Meta).
    Threads = "threads" {
        policy: || ContentPolicy {
            max_chars: Some(500),
            unit: LengthUnit::CharsEmojiAsUtf8Bytes,
            // A carousel takes 2 to 20 items; airlock's own bound is lower.
            max_media: Some(limits::MAX_MEDIA),
            max_links: Some(5),
            max_parts: THREAD_PARTS,
            first_comment: true,
            image_types: &["image/jpeg", "image/png"],
            max_image_bytes: Some(8 * MB),
            video: VideoRule::InAlbums,
            max_video_bytes: Some(META_MAX_VIDEO_BYTES),
            ..ContentPolicy::default()
        },
        requests_per_publish: 5,
        // The publish, and the container read after a refusal.
        requests_in_publish: 2,
        polls_containers: true,
    }
    /// Instagram content publishing (single JPEG image posts).
    Instagram = "instagram" {
        policy: || ContentPolicy {
            max_chars: Some(2200),
            require_media: true,
            // A carousel takes 2 to 10 items.
            max_media: Some(10),
            jpeg_only: true,
            max_hashtags: Some(30),
            max_mentions: Some(20),
            first_comment: true,
            max_image_bytes: Some(8 * MB),
            video: VideoRule::InAlbums,
            max_video_bytes: Some(META_MAX_VIDEO_BYTES),
            ..ContentPolicy::default()
        },
        requests_per_publish: 5,
        requests_in_publish: 2,
        polls_containers: true,
    }
    /// LinkedIn Posts API.
    Linkedin = "linkedin" {
        policy: || ContentPolicy {
            max_chars: Some(3000),
            // Several images make a multi-image post (2 to 20 on LinkedIn); each costs
            // requests a lease must outlast, so airlock takes fewer.
            max_media: Some(LINKEDIN_IMAGES),
            first_comment: true,
            image_types: &["image/jpeg", "image/png", "image/gif"],
            ..ContentPolicy::default()
        },
        // The account, the publish and the read a duplicate names; per image its
        // download, upload URL, upload and two status reads.
        requests_per_publish: 3 + 5 * LINKEDIN_IMAGES as i32,
        // The publish, and the read of the post a duplicate names.
        requests_in_publish: 2,
    }
    /// WordPress articles through the REST API.
    Wordpress = "wordpress" {
        policy: || ContentPolicy {
            require_title: true,
            ..ContentPolicy::default()
        },
        requests_per_publish: 4,
    }
    /// Bluesky (AT Protocol): records at a key airlock chooses.
    Bluesky = "bluesky" {
        policy: || ContentPolicy {
            max_chars: Some(300),
            max_bytes: Some(3000),
            unit: LengthUnit::Graphemes,
            max_media: Some(4),
            max_parts: THREAD_PARTS,
            first_comment: true,
            max_image_bytes: Some(1_000_000),
            ..ContentPolicy::default()
        },
        // A session and its refresh, the earlier record's read, up to
        // MAX_MENTIONS_RESOLVED handle resolutions, four image downloads and uploads, and
        // the create with one refresh and resend.
        requests_per_publish: 6 + MAX_MENTIONS_RESOLVED as i32 + 8,
        // The create, a session refresh after an expired-token refusal (which proves
        // nothing was made), and the create once more.
        requests_in_publish: 3,
    }
    /// Mastodon statuses, with an `Idempotency-Key`.
    Mastodon = "mastodon" {
        // Mastodon's default; an instance may allow more (`max_chars`), and the adapter
        // reads the instance's own limit before sending.
        policy: || ContentPolicy {
            max_chars: Some(500),
            unit: LengthUnit::CharsUrlAs23,
            max_media: Some(4),
            max_parts: THREAD_PARTS,
            first_comment: true,
            max_image_bytes: Some(16 * MB),
            ..ContentPolicy::default()
        },
        // The account, the instance, four image downloads, uploads and one processing
        // read each, the create.
        requests_per_publish: 15,
        server_sets_length: true,
    }
    /// X (Twitter) posts through API v2, with a monthly money budget.
    X = "x" {
        policy: || ContentPolicy {
            max_chars: Some(280),
            unit: LengthUnit::XWeighted,
            max_media: Some(4),
            appends_link: true,
            max_parts: THREAD_PARTS,
            first_comment: true,
            image_types: &["image/jpeg", "image/png", "image/gif", "image/webp"],
            max_image_bytes: Some(5 * MB),
            ..ContentPolicy::default()
        },
        // The account, a token refresh, the create with one refresh and resend, four image
        // downloads and uploads, and the read that looks for a later part sent before.
        requests_per_publish: 5 + 8 + 1,
        // The create, a token refresh after a 401 (which proves nothing was made), and the
        // create once more.
        requests_in_publish: 3,
    }
    /// Telegram messages to one chat through the Bot API's `sendMessage`.
    Telegram = "telegram" {
        // Telegram's limit, counted as Telegram counts it.
        policy: || ContentPolicy {
            max_chars: Some(4096),
            unit: LengthUnit::Utf16,
            max_media: Some(0),
            appends_link: true,
            ..ContentPolicy::default()
        },
        // The bot's identity (`getMe`) and the message.
        requests_per_publish: 2,
    }
}

impl ChannelKind {
    /// The configuration name.
    pub fn as_str(self) -> &'static str {
        self.rules().name
    }

    /// Whether test posts are due on this kind (only sandboxes publish them).
    pub fn publishes_test_posts(self) -> bool {
        self.rules().publishes_test_posts
    }

    /// Whether the publish waits for a platform container to be processed first, which
    /// a lease must outlast.
    pub fn polls_containers(self) -> bool {
        self.rules().polls_containers
    }

    /// How many requests one publish makes ([`KindRules::requests_per_publish`]).
    pub fn requests_per_publish(self) -> i32 {
        self.rules().requests_per_publish
    }

    /// How many requests the irreversible step itself may make
    /// ([`KindRules::requests_in_publish`]).
    pub fn requests_in_publish(self) -> i32 {
        self.rules().requests_in_publish
    }

    /// Whether the platform, not airlock, sets the length limit per server
    /// ([`KindRules::server_sets_length`]).
    pub fn server_sets_length(self) -> bool {
        self.rules().server_sets_length
    }

    /// The platform's own content rules, before the channel's configured ones.
    pub fn platform_policy(self) -> ContentPolicy {
        (self.rules().policy)()
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

/// What a `kind` may be: "expected sandbox, webhook, ... or x", from the list.
static EXPECTED_KIND: LazyLock<String> = LazyLock::new(|| {
    let names = ChannelKind::ALL.map(ChannelKind::as_str);
    match names.split_last() {
        Some((last, [])) => format!("expected {last}"),
        Some((last, rest)) => format!("expected {} or {last}", rest.join(", ")),
        None => "no kind is defined".to_owned(),
    }
});

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
            .ok_or_else(|| InvalidValue::new("channel kind", s, &EXPECTED_KIND))
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
    fn a_kinds_json_and_configuration_names_are_one() {
        for kind in ChannelKind::ALL {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, kind.as_str(), "{kind:?}");
            assert_eq!(serde_json::from_value::<ChannelKind>(json).unwrap(), kind);
        }
    }

    #[cfg(feature = "openapi")]
    #[test]
    fn the_openapi_schema_names_kinds_as_the_configuration_does() {
        let schema =
            serde_json::to_value(<ChannelKind as utoipa::PartialSchema>::schema()).unwrap();
        let names: Vec<&str> = ChannelKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(schema["enum"], serde_json::json!(names), "{schema}");
    }

    #[test]
    fn an_unknown_kind_is_refused_naming_every_kind() {
        let err = "twitter".parse::<ChannelKind>().unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid channel kind \"twitter\": expected sandbox, webhook, threads, instagram, linkedin, wordpress, bluesky, mastodon, x or telegram"
        );
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
