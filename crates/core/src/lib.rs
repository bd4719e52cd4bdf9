//! airlock's domain, with no IO: what a post is, how it moves through its states and
//! who may move it, the approval hash, content policy, quota arithmetic and the
//! classification of publish outcomes.
//!
//! Layout:
//! - [`status`]: the six states and the transition table of docs/lifecycle.md.
//! - [`actor`]: roles, the actions they allow, and actor names on events.
//! - [`post`]: post ids, channel names, content, and the stored post.
//! - [`hash`]: canonical JSON and the SHA-256 approval hash.
//! - [`limits`]: how large each field a caller sends may be, globally and per channel.
//! - [`policy`]: content policy, with length counted as each platform counts.
//! - [`channel`]: channel kinds and their platform rules.
//! - [`quota`]: rolling-window and calendar-day arithmetic as functions of `now`.
//! - [`budget`]: a channel's money spent per calendar month (X), as a quota.
//! - [`review`]: the critic's workflow: rubrics, verdicts, approvals required, the
//!   revision cap and quarantine, what changed since a verdict, duplicate texts.
//! - [`outcome`]: what an answer to the irreversible request means.
//! - [`thread`]: a thread written as one Markdown file.
//! - [`time`]: durations (`15m`) and `TIME` arguments.
//!
//! Callers pass `now`, time zones and limits in; nothing here reads a clock, a file
//! or the network, so every rule has plain unit tests.

pub mod actor;
pub mod budget;
pub mod channel;
pub mod hash;
pub mod limits;
pub mod outcome;
pub mod policy;
pub mod post;
pub mod quota;
pub mod review;
pub mod status;
pub mod thread;
pub mod time;

pub use actor::{Action, Actor, Role, RoleSet};
pub use channel::ChannelKind;
pub use hash::ContentHash;
pub use outcome::{Outcome, Published};
pub use policy::{ContentPolicy, Violation};
pub use post::{
    ChannelName, ContentJson, Intent, InvalidValue, Media, NewPost, Part, Post, PostContent,
    PostDetail, PostEdit, PostEvent, PostId, PostSummary, Reservation, Source,
};
pub use review::{NewVerdict, Rubric, Verdict, VerdictKind};
pub use status::{IllegalTransition, Mover, PostStatus, Transition};
pub use time::Span;

/// The notification events of docs/notifications.md, as sinks subscribe to them.
pub const EVENTS: [&str; 7] = [
    "published",
    "failed",
    "needs_review",
    "quota_deferred",
    "paused",
    "resumed",
    "verify_failed",
];
