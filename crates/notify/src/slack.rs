//! `slack`: a Slack incoming webhook (docs/platforms.md#slack).
//!
//! `POST <webhook_url>` with `{"text": message}`; success is HTTP 200 with the plain-text
//! body `ok`. Errors are plain-text codes (`no_service`, `invalid_payload`,
//! `channel_not_found`, ...) and 429 carries `Retry-After`. The URL is the credential:
//! it, its path and its last segment are redacted from every summary.
//!
//! Slack has no idempotency key, so a delivery whose answer was lost can repeat.
//! The message is escaped (`&`, `<`, `>`) so text quoted from a post or a platform
//! error cannot become a mention such as `<!channel>` or a disguised link.

use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

use airlock_platforms::http::{retry_after, truncate};

use crate::sink::{Outgoing, SendFailure};

/// Slack truncates long `text`; stay well inside its limit.
const MAX_TEXT_CHARS: usize = 3_900;

#[derive(Debug)]
pub(crate) struct Slack {
    webhook_url: SecretString,
}

impl Slack {
    pub(crate) fn new(webhook_url: SecretString) -> Self {
        Slack { webhook_url }
    }

    pub(crate) async fn send(&self, out: &Outgoing<'_>) -> Result<(), SendFailure> {
        let body = json!({ "text": text(&out.message()) });
        let request = out
            .client
            .post(self.webhook_url.expose_secret())
            .json(&body);
        let answer = out.exchange("slack", request).await?;
        if answer.is_success() {
            return Ok(());
        }
        let detail = answer.body.clone();
        Err(out.refused("slack", &answer, &detail, retry_after(&answer.headers)))
    }
}

/// `message` escaped for Slack's `mrkdwn` and shortened to fit.
pub fn text(message: &str) -> String {
    let escaped = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    truncate(&escaped, MAX_TEXT_CHARS)
}

/// The parts of a webhook URL to scrub from summaries: the URL, its path, and the
/// final path segment (the token part of `/services/T…/B…/<token>`).
pub(crate) fn secret_parts(url: &str) -> Vec<SecretString> {
    let mut parts = vec![SecretString::from(url.to_owned())];
    let trimmed = url.trim_end_matches('/');
    if trimmed != url {
        parts.push(SecretString::from(trimmed.to_owned()));
    }
    if let Ok(parsed) = reqwest::Url::parse(trimmed) {
        let path = parsed.path();
        if path.len() > 1 {
            parts.push(SecretString::from(path.to_owned()));
        }
        if let Some(last) = path.rsplit('/').next().filter(|s| !s.is_empty()) {
            parts.push(SecretString::from(last.to_owned()));
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_platforms::http::Redactor;

    #[test]
    fn text_is_escaped_so_quoted_content_cannot_mention_everyone() {
        assert_eq!(
            text("post 7 failed: <!channel> & <https://x.example|click>"),
            "post 7 failed: &lt;!channel&gt; &amp; &lt;https://x.example|click&gt;"
        );
    }

    #[test]
    fn long_text_is_shortened() {
        assert_eq!(
            text(&"a".repeat(10_000)).chars().count(),
            MAX_TEXT_CHARS + 1
        );
    }

    #[test]
    fn the_url_its_path_and_its_token_segment_are_all_redacted() {
        let url = "https://hooks.slack.com/services/T0001/B0002/slack-canary-xyz";
        let redactor = Redactor::new(secret_parts(url));
        for leak in [
            url.to_owned(),
            "/services/T0001/B0002/slack-canary-xyz".to_owned(),
            "token slack-canary-xyz revoked".to_owned(),
        ] {
            let summary = redactor.summary(&leak);
            assert!(!summary.contains("slack-canary-xyz"), "{summary}");
        }
    }
}
