//! Channel adapters: the only code that knows each platform's wire format.
//!
//! An adapter does not decide what happens to a post. It reports what happened —
//! [`StepError`] for the repeatable steps before the irreversible request, and an
//! [`Outcome`] for the irreversible request itself, classified by the one table of
//! docs/channels.md ([`airlock_core::outcome`]) — and `airlock-app`'s guarded path does the
//! rest.
//!
//! Layout: [`credential`] (reading secret files safely), [`http`] (the shared client:
//! no redirects, https-only base URLs, the outcome table in each platform's words,
//! transport classification, redaction), and one module per channel kind, holding its
//! adapter and its configuration type ([`KindConfig`]: its `[channels.NAME]` keys and how
//! its adapter is built). The `kinds!` list below registers every kind once, and
//! [`PlatformConfig`] derives from it. Threads and Instagram share Meta's Graph API
//! conventions (error envelope, container polling, publishing-limit reads) in a private
//! `graph` module.
//!
//! Every real-platform adapter sends its token in a header only (never in a query
//! string; Telegram's Bot API takes it only in the URL path, see [`telegram`]), follows no
//! redirect, and renders errors through [`http::Redactor`], so no reason, note or log line
//! it produces can carry the token.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use airlock_core::{ChannelKind, ChannelName, Media, Outcome, PostId};

pub mod credential;
mod graph;
pub mod http;
mod kind;
pub mod media;

pub mod bluesky;
pub mod instagram;
pub mod linkedin;
pub mod mastodon;
pub mod sandbox;
pub mod telegram;
pub mod threads;
pub mod webhook;
pub mod wordpress;
pub mod x;

pub use kind::{Common, KindConfig};

// Every channel kind, once: its `ChannelKind` variant and its module's configuration type.
kind::kinds! {
    Sandbox(sandbox::SandboxConfig),
    Webhook(webhook::WebhookConfig),
    Threads(threads::ThreadsConfig),
    Instagram(instagram::InstagramConfig),
    Linkedin(linkedin::LinkedinConfig),
    Wordpress(wordpress::WordpressConfig),
    Bluesky(bluesky::BlueskyConfig),
    Mastodon(mastodon::MastodonConfig),
    X(x::XConfig),
    Telegram(telegram::TelegramConfig),
}

/// A channel setting an adapter cannot work with; raised when the adapter is built, so a
/// bad configuration is refused before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// The `base_url` would send a token somewhere unsafe.
    #[error(transparent)]
    BaseUrl(#[from] http::BaseUrlError),
    /// Another setting has a value the platform cannot take.
    #[error("{setting} {value:?} {problem}")]
    Invalid {
        /// The setting's name, as in the configuration.
        setting: &'static str,
        /// The value given.
        value: String,
        /// What is wrong and what to write instead.
        problem: &'static str,
    },
}

/// What an adapter needs to publish one post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishRequest {
    /// The post.
    pub post_id: PostId,
    /// Its channel.
    pub channel: ChannelName,
    /// Title (articles).
    pub title: Option<String>,
    /// Text.
    pub text: String,
    /// Media.
    pub media: Vec<Media>,
    /// Link.
    pub link: Option<String>,
    /// Schedule.
    pub scheduled_at: DateTime<Utc>,
    /// Derived from post id and approved hash; sent where the platform accepts one.
    pub idempotency_key: String,
    /// Now, by the guarded path's clock: adapters measure the age of earlier attempts
    /// against it.
    pub now: DateTime<Utc>,
    /// Earlier attempts at this part that reached the irreversible request, oldest first.
    /// Their requests may still land, so an adapter reuses their handles (the same
    /// container, the same key) instead of making new ones wherever the platform then
    /// refuses a second copy, and looks for them before publishing again.
    pub earlier: Vec<EarlierAttempt>,
    /// Which part of the post this request publishes; `text` and `media` are that part's.
    pub part: PartRequest,
}

/// Which part of a post a request publishes (docs/parts.md). A single post is part 1 of 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartRequest {
    /// Its number, from 1.
    pub number: u32,
    /// How many parts the post has, its first comment included.
    pub of: u32,
    /// Whether it is the post's first comment (the part after the last).
    pub comment: bool,
    /// The parts already out, in order: part k replies to part k-1, under part 1.
    pub published: Vec<PublishedPart>,
}

impl PartRequest {
    /// Part 1 of 1.
    pub const SINGLE: PartRequest = PartRequest {
        number: 1,
        of: 1,
        comment: false,
        published: Vec::new(),
    };

    /// The post's first part, when this one is a later part.
    pub fn root(&self) -> Option<&PublishedPart> {
        self.published.first().filter(|_| self.number > 1)
    }

    /// The part this one replies to (the one before it), when it is a later part.
    pub fn parent(&self) -> Option<&PublishedPart> {
        self.published.last().filter(|_| self.number > 1)
    }

    /// Whether this is a later part (a reply, a comment, a carousel's follow-up).
    pub fn is_later(&self) -> bool {
        self.number > 1
    }
}

/// A part of a post that is out, as its platform names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedPart {
    /// Its number, from 1.
    pub number: u32,
    /// The platform's id (what the adapter answered as `platform_post_id`).
    pub platform_post_id: String,
    /// Where people see it.
    pub permalink: Option<String>,
}

/// An earlier attempt at a post that recorded an intent: its request was (or may have
/// been) sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierAttempt {
    /// Its claim generation.
    pub generation: i64,
    /// The idempotency key it sent (the same as the request's when the approved content
    /// is the same).
    pub idempotency_key: String,
    /// The platform handle it recorded (a container id), if any.
    pub platform_ref: Option<String>,
    /// When its request was about to be sent.
    pub sent_at: DateTime<Utc>,
    /// Whether its outcome was definite: the platform refused it or it provably never
    /// left (`rejected`, `not_sent`). Anything else (`unknown`, `sending`) may have
    /// published.
    pub definitely_unpublished: bool,
    /// A reconcile re-send, stamped (`sent_at`) when it was claimed, before its media were
    /// uploaded; otherwise an intent, stamped right before the one irreversible request.
    /// How long a send may still be running after its stamp depends on it.
    pub resend: bool,
}

/// What the repeatable steps produced for the irreversible one (a container id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// A platform handle recorded in the intent; reconcile reads it later.
    pub platform_ref: Option<String>,
    /// The platform already shows this post, published by an earlier attempt: nothing is
    /// sent, and the post is settled as published with this proof.
    pub already_published: Option<Proof>,
}

impl Prepared {
    /// Ready to send, with this handle recorded in the intent.
    pub fn with_ref(platform_ref: impl Into<String>) -> Self {
        Prepared {
            platform_ref: Some(platform_ref.into()),
            already_published: None,
        }
    }
}

/// Why a repeatable step (identity, container creation, polling) did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// Try again later; nothing irreversible happened.
    #[error("{reason}")]
    Transient {
        /// Short redacted summary.
        reason: String,
        /// Not before this much time.
        retry_after: Option<Duration>,
    },
    /// The platform refused; retrying will not help.
    #[error("{reason}")]
    Rejected {
        /// Short redacted summary.
        reason: String,
        /// The credential is the problem (pause the channel).
        credential: bool,
    },
}

impl StepError {
    /// A transient failure without a retry hint.
    pub fn transient(reason: impl Into<String>) -> Self {
        StepError::Transient {
            reason: reason.into(),
            retry_after: None,
        }
    }
}

/// Who the channel's credential belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The name compared with the channel's configured `account`.
    pub username: String,
    /// The platform's id for it.
    pub id: Option<String>,
}

/// What a read-back found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// The post exists on the platform.
    Verified {
        /// Its permalink, if the read returned one.
        permalink: Option<String>,
    },
    /// The post was not found or did not match.
    Failed {
        /// What was found.
        reason: String,
    },
    /// This kind cannot read posts back.
    Unsupported,
}

/// The platform shows this attempt's own object: the post went out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The platform's id, when the read names it.
    pub platform_post_id: Option<String>,
    /// Permalink, if known.
    pub permalink: Option<String>,
    /// What proves it, for the event note.
    pub note: String,
    /// The generation of the earlier attempt whose request made what the platform shows,
    /// when a later attempt found it: that attempt's send is the one the quota counts.
    pub attempt: Option<i64>,
}

/// The generation of the latest of `earlier` that `sent` it, if any.
pub fn latest_attempt(
    earlier: &[EarlierAttempt],
    sent: impl Fn(&EarlierAttempt) -> bool,
) -> Option<i64> {
    earlier
        .iter()
        .filter(|a| sent(a))
        .max_by_key(|a| (a.sent_at, a.generation))
        .map(|a| a.generation)
}

/// What the platform can prove about an unknown outcome (`docs/evidence.md`). Only proof
/// settles a post; absence of a thing never does while some process may still be sending
/// it, and a platform may rename what it stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// The platform shows this attempt's own object (the container it created reads
    /// `PUBLISHED`, the article carrying its key, the record at its key).
    Published(Proof),
    /// The platform guarantees this attempt can never complete later (its container is
    /// `EXPIRED` or `ERROR`).
    CannotLand {
        /// What guarantees it.
        note: String,
    },
    /// Nothing the platform shows settles it (or it could not be asked now); the post
    /// waits, for proof or for a person.
    NoProof,
    /// A request reconcile sent was answered with something that settles nothing but a
    /// person must know (a re-send answered by a status of another account): recorded on
    /// the post, which waits.
    Unsettled {
        /// What the platform answered.
        note: String,
    },
}

/// The post and intent a reconcile looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileRequest {
    /// The post as it would have been published; its `earlier` lists every attempt that
    /// recorded an intent, the one being reconciled last.
    pub publish: PublishRequest,
    /// The platform handle recorded in the intent, if any.
    pub platform_ref: Option<String>,
}

/// One channel's adapter.
#[async_trait]
pub trait Platform: Send + Sync + std::fmt::Debug {
    /// The kind.
    fn kind(&self) -> ChannelKind;

    /// Who the credential belongs to; `None` for kinds without accounts.
    async fn account(&self) -> Result<Option<Account>, StepError>;

    /// Whether [`Platform::prepare`] does anything. An adapter without repeatable steps
    /// answers `false`, so its intent is recorded in the transaction that claims the post:
    /// one commit fewer per publish. An adapter that overrides `prepare` must answer `true`.
    fn prepares(&self) -> bool {
        true
    }

    /// The repeatable steps before the irreversible request (container creation, polling,
    /// platform limit check). Before making anything new it looks for the handles of
    /// [`PublishRequest::earlier`] attempts, and answers [`Prepared::already_published`]
    /// when the platform shows one of them published.
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        let _ = req;
        Ok(Prepared::default())
    }

    /// The irreversible request, sent once.
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome;

    /// Reads a published post back.
    async fn verify(&self, platform_post_id: &str) -> Verification {
        let _ = platform_post_id;
        Verification::Unsupported
    }

    /// Whether [`Platform::reconcile`] would send the create request again for `req` now
    /// (Mastodon, within the hour its instance keeps a key). The guarded path then first
    /// checks the account and the operator's pauses and claims the re-send
    /// (docs/guarded-path.md#reconcile); a kind whose reconcile only reads answers `false`.
    fn reconcile_sends(&self, req: &ReconcileRequest) -> bool {
        let _ = req;
        false
    }

    /// What the platform can prove about an unknown outcome.
    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        let _ = req;
        Evidence::NoProof
    }
}
