//! What happened to an irreversible request, and how an HTTP answer is classified
//! (docs/channels.md#what-counts-as-which-outcome). Every channel kind uses this one table.

use chrono::Duration;

/// The result of one irreversible request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The platform has the post.
    Published(Published),
    /// Provably never sent (connection refused, DNS, connect/TLS timeout, 429, 408):
    /// the post returns to the queue.
    NotSent {
        /// Short redacted summary.
        reason: String,
        /// Do not try again before this much time has passed.
        retry_after: Option<Duration>,
    },
    /// The platform said it did not publish: the post fails and is not retried.
    Rejected {
        /// Short redacted summary.
        reason: String,
        /// A credential problem (401/403, expired token): the channel is paused too.
        credential: bool,
    },
    /// Nobody knows: a person (or platform evidence) must settle it.
    Unknown {
        /// Short redacted summary.
        reason: String,
    },
}

/// A successful publish.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Published {
    /// The platform's id; `None` when a 2xx carried no readable id (flagged, verified later).
    pub platform_post_id: Option<String>,
    /// Public link, when known.
    pub permalink: Option<String>,
    /// The platform named a post it already had instead of making one (LinkedIn's
    /// duplicate detection, a container an earlier attempt published): why that post is
    /// this one. Such an answer counts as this post's publish only when no other post of
    /// the ledger has that platform id.
    pub existing: Option<String>,
    /// The post went out, but the platform answered in a way that makes a later retry
    /// unsafe (a Bluesky PDS that wrote the record at a key of its own): the channel
    /// pauses with this reason when the publish is recorded.
    pub pause: Option<String>,
}

/// How an HTTP status on the irreversible request is classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// 2xx.
    Success,
    /// 429 or 408: not sent, retry after `Retry-After`.
    NotSent,
    /// 401 or 403: rejected, and the credential is the problem.
    CredentialRejected,
    /// Any other 4xx.
    Rejected,
    /// 3xx (redirects are never followed), 5xx, or anything else.
    Unknown,
}

/// Classifies an HTTP status answering the irreversible request.
pub fn classify_status(status: u16) -> StatusClass {
    match status {
        200..=299 => StatusClass::Success,
        408 | 429 => StatusClass::NotSent,
        401 | 403 => StatusClass::CredentialRejected,
        400..=499 => StatusClass::Rejected,
        _ => StatusClass::Unknown,
    }
}

/// Where a transport failure happened relative to sending the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    /// Before any byte of the request left: connection refused, DNS failure, connect or TLS timeout.
    BeforeSending,
    /// After the request may have been sent: timeout waiting for the answer, connection lost.
    AfterSending,
}

impl TransportFailure {
    /// The outcome of the irreversible request failing this way.
    pub fn outcome(self, reason: String) -> Outcome {
        match self {
            TransportFailure::BeforeSending => Outcome::NotSent {
                reason,
                retry_after: None,
            },
            TransportFailure::AfterSending => Outcome::Unknown { reason },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_spec_table() {
        assert_eq!(classify_status(200), StatusClass::Success);
        assert_eq!(classify_status(201), StatusClass::Success);
        assert_eq!(classify_status(204), StatusClass::Success);
        assert_eq!(classify_status(429), StatusClass::NotSent);
        assert_eq!(classify_status(408), StatusClass::NotSent);
        assert_eq!(classify_status(401), StatusClass::CredentialRejected);
        assert_eq!(classify_status(403), StatusClass::CredentialRejected);
        assert_eq!(classify_status(400), StatusClass::Rejected);
        assert_eq!(classify_status(422), StatusClass::Rejected);
        assert_eq!(classify_status(301), StatusClass::Unknown);
        assert_eq!(classify_status(302), StatusClass::Unknown);
        assert_eq!(classify_status(500), StatusClass::Unknown);
        assert_eq!(classify_status(503), StatusClass::Unknown);
        assert_eq!(classify_status(100), StatusClass::Unknown);
    }

    #[test]
    fn transport_failures_split_on_whether_the_request_left() {
        assert!(matches!(
            TransportFailure::BeforeSending.outcome("refused".into()),
            Outcome::NotSent { .. }
        ));
        assert!(matches!(
            TransportFailure::AfterSending.outcome("timeout".into()),
            Outcome::Unknown { .. }
        ));
    }
}
