//! Limits on everything a caller can send: the size of a post's fields, notes, reasons
//! and names, checked at the door (the CLI, the HTTP API, MCP) and again by the store.
//!
//! Two layers:
//! - **Global ceilings** ([`MAX_TEXT_CHARS`] and friends) hold for every channel, so no
//!   single row, page or request can grow without bound whatever the configuration.
//! - **The channel's own limits** (its kind's platform rules narrowed by `max_chars`):
//!   a text longer than the channel allows, or more media than it takes, is refused when
//!   it is drafted, naming the limit, instead of waiting for approval to find out.
//!
//! Lengths of text are counted in Unicode scalar values (what people call characters),
//! except where a channel counts its own way ([`LengthUnit`]). Nothing here reads a
//! file or a clock.

use std::fmt;

use crate::policy::{ContentPolicy, LengthUnit};
use crate::post::PostContent;

/// The longest text of any post, in characters (a long blog article fits; a book does not).
pub const MAX_TEXT_CHARS: usize = 100_000;
/// The longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 300;
/// The longest alternative text of one media item, in characters.
pub const MAX_ALT_CHARS: usize = 1_500;
/// The most media items on one part of a post (an Instagram carousel's most; Threads
/// and LinkedIn would take 20).
pub const MAX_MEDIA: usize = 10;
/// The most parts of one post (a thread).
pub const MAX_PARTS: usize = 50;
/// The longest URL (media, link, permalink), in characters.
pub const MAX_URL_CHARS: usize = 2_048;
/// The longest note on a post's timeline, in characters.
pub const MAX_NOTE_CHARS: usize = 2_000;
/// The longest reason (rejection, pause), in characters.
pub const MAX_REASON_CHARS: usize = 1_000;
/// The longest note of any event on a post's timeline (notes, rejection reasons,
/// evidence), in characters: what the store accepts. Everything airlock writes there is
/// built from bounded parts well below it.
pub const MAX_EVENT_NOTE_CHARS: usize = 4_000;
/// The longest error summary kept on a post (`error`), in characters: what the store
/// accepts. A rejection (`rejected by <token>: <reason>`) and a platform summary fit.
pub const MAX_ERROR_CHARS: usize = 2_000;
/// The longest a post's media list may be once serialized as JSON, in characters. The
/// store refuses more than 64 000 (an older bound on the serialized form, kept); airlock
/// refuses more than this, below it with room for the backends' renderings, so a draft
/// airlock accepts is never refused by the store. Only media whose URLs or alt texts are
/// mostly characters JSON must escape come near it.
pub const MAX_MEDIA_JSON_CHARS: usize = 60_000;
/// The longest API token name, in characters.
pub const MAX_TOKEN_NAME_CHARS: usize = 64;
/// The longest idempotency key, in characters.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 200;
/// The largest request body the HTTP API and the dashboard read, in bytes. A text at
/// [`MAX_TEXT_CHARS`] fits even when every character is sent as a JSON `\uXXXX` escape
/// of a CJK character (6 bytes), with room for the other fields.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// The largest `--text-file` the CLI reads, in bytes: [`MAX_TEXT_CHARS`] characters of
/// at most 4 UTF-8 bytes each. A larger file is refused before it is read.
pub const MAX_TEXT_FILE_BYTES: u64 = (MAX_TEXT_CHARS * 4) as u64;

/// A value over its limit; `Display` names the field, its size, the limit and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge {
    /// What is too large (`text`, `title`, `media alt text`, `note`, ...).
    pub field: &'static str,
    /// Its size, in `unit`.
    pub size: usize,
    /// The limit, in `unit`.
    pub max: usize,
    /// What is counted (`characters`, `items`, `bytes`).
    pub unit: &'static str,
    /// Whose limit it is: `airlock's limit for every channel`, `channel threads-main (threads)`.
    pub whose: String,
    /// The part it is in, numbered from 1, when the post has several.
    pub part: Option<usize>,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(part) = self.part {
            write!(f, "part {part}: ")?;
        }
        write!(
            f,
            "the {} is {} {} long; {} allows at most {}: shorten it",
            self.field, self.size, self.unit, self.whose, self.max
        )
    }
}

impl std::error::Error for TooLarge {}

const GLOBAL: &str = "airlock's limit for every channel";

/// Refuses `value` when it has more than `max` characters, reporting its full length.
pub fn check_chars(field: &'static str, value: &str, max: usize) -> Result<(), TooLarge> {
    // Bytes bound characters from above: a short string is accepted without counting.
    if value.len() <= max {
        return Ok(());
    }
    let size = value.chars().count();
    if size <= max {
        return Ok(());
    }
    Err(TooLarge {
        field,
        size,
        max,
        unit: "characters",
        whose: GLOBAL.to_owned(),
        part: None,
    })
}

/// `text` cut to at most `max` characters for a capped summary (a post's `error`, an
/// event's note): whole when it fits, else its first `max - 1` characters (on a
/// character boundary) and `…`. For what airlock writes from parts that are each valid
/// but together may be long (many reasons); what a caller sends is refused instead
/// ([`check_chars`]).
pub fn fit_chars(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some(_) => {
            let keep = max.saturating_sub(1);
            let end = text
                .char_indices()
                .nth(keep)
                .map_or(text.len(), |(at, _)| at);
            let mut cut = String::with_capacity(end + '…'.len_utf8());
            cut.push_str(&text[..end]);
            if max > 0 {
                cut.push('…');
            }
            cut
        }
    }
}

/// The limits a draft must meet before it is stored: the global ceilings on every field,
/// then the channel's own text length and media count (`policy`, named in messages as
/// `channel_label`, like `channel threads-main (threads)`).
/// The rest of the content policy (phrases, shape) is checked at approval.
pub fn check_content(
    content: &PostContent,
    policy: &ContentPolicy,
    channel_label: &str,
) -> Result<(), TooLarge> {
    match content_too_large(content, policy, channel_label)
        .into_iter()
        .next()
    {
        Some(first) => Err(first),
        None => Ok(()),
    }
}

/// Every limit of [`check_content`] the draft exceeds, in the order [`check_content`]
/// checks them (its error is the first of these): what a check of a draft lists.
pub fn content_too_large(
    content: &PostContent,
    policy: &ContentPolicy,
    channel_label: &str,
) -> Vec<TooLarge> {
    let mut found = Vec::new();
    if let Some(title) = &content.title {
        found.extend(check_chars("title", title, MAX_TITLE_CHARS).err());
    }
    if let Some(link) = &content.link {
        found.extend(check_chars("link", link, MAX_URL_CHARS).err());
    }
    let parts = content.parts();
    if parts.len() > MAX_PARTS {
        found.push(TooLarge {
            field: "thread",
            size: parts.len(),
            max: MAX_PARTS,
            unit: "parts",
            whose: GLOBAL.to_owned(),
            part: None,
        });
    }
    let multipart = content.is_multipart();
    let numbered = |part: usize, errors: Vec<TooLarge>| {
        errors.into_iter().map(move |mut e| {
            e.part = multipart.then_some(part);
            e
        })
    };
    for (index, part) in parts.iter().enumerate() {
        found.extend(numbered(
            index + 1,
            part_too_large(&part.text, &part.media, policy, channel_label),
        ));
    }
    if let Some(comment) = &content.first_comment {
        found.extend(numbered(
            parts.len() + 1,
            part_too_large(comment, &[], policy, channel_label),
        ));
    }
    found
}

/// The limits of one part that it exceeds: its text's length and its media.
fn part_too_large(
    text: &str,
    media: &[crate::post::Media],
    policy: &ContentPolicy,
    channel_label: &str,
) -> Vec<TooLarge> {
    let mut found = Vec::new();
    found.extend(check_chars("text", text, MAX_TEXT_CHARS).err());
    let items = |max: usize, whose: &str| TooLarge {
        field: "media list",
        size: media.len(),
        max,
        unit: "items",
        whose: whose.to_owned(),
        part: None,
    };
    if media.len() > MAX_MEDIA {
        found.push(items(MAX_MEDIA, GLOBAL));
    }
    for item in media {
        found.extend(check_chars("media url", &item.url, MAX_URL_CHARS).err());
        if let Some(alt) = &item.alt {
            found.extend(check_chars("media alt text", alt, MAX_ALT_CHARS).err());
        }
    }
    if !media.is_empty() {
        let serialized = serde_json::to_string(media).expect("media serializes");
        found.extend(check_chars("media list (as JSON)", &serialized, MAX_MEDIA_JSON_CHARS).err());
    }
    if let Some(max) = policy.max_chars {
        let size = policy.unit.count(text);
        if size > max {
            found.push(TooLarge {
                field: "text",
                size,
                max,
                unit: match policy.unit {
                    LengthUnit::Chars => "characters",
                    LengthUnit::CharsEmojiAsUtf8Bytes => {
                        "characters (each emoji counted as its UTF-8 bytes)"
                    }
                    unit => unit.name(),
                },
                whose: channel_label.to_owned(),
                part: None,
            });
        }
    }
    if let Some(max) = policy.max_media
        && media.len() > max
    {
        found.push(items(max, channel_label));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::ChannelKind;
    use crate::post::{ChannelName, Media};

    #[test]
    fn fit_chars_cuts_on_a_character_boundary_with_an_ellipsis() {
        assert_eq!(fit_chars("short", 5), "short");
        assert_eq!(
            fit_chars("猫猫猫", 3),
            "猫猫猫",
            "bytes over, characters not"
        );
        assert_eq!(fit_chars("猫猫猫猫", 3), "猫猫…");
        assert_eq!(fit_chars("abcdef", 4), "abc…");
        assert_eq!(fit_chars("abc", 1), "…");
        assert_eq!(fit_chars("abc", 0), "");
        let long = "猫".repeat(5000);
        let cut = fit_chars(&long, MAX_ERROR_CHARS);
        assert_eq!(cut.chars().count(), MAX_ERROR_CHARS);
        assert!(cut.ends_with('…'));
    }

    fn content(text: &str) -> PostContent {
        PostContent::single(ChannelName::parse("c").unwrap(), text)
    }

    #[test]
    fn every_limit_exceeded_is_listed_and_the_first_is_the_refusal() {
        let policy = ContentPolicy {
            max_chars: Some(5),
            max_media: Some(1),
            ..Default::default()
        };
        let mut post = content("far too long");
        post.title = Some("t".repeat(MAX_TITLE_CHARS + 1));
        post.media = vec![
            crate::post::Media::new("https://x.example/1.jpg".into(), None),
            crate::post::Media::new("https://x.example/2.jpg".into(), None),
        ];
        let all = content_too_large(&post, &policy, "channel c (sandbox)");
        let fields: Vec<&str> = all.iter().map(|e| e.field).collect();
        assert_eq!(fields, ["title", "text", "media list"]);
        assert_eq!(
            check_content(&post, &policy, "channel c (sandbox)").unwrap_err(),
            all[0]
        );
    }

    #[test]
    fn a_text_over_the_global_ceiling_is_refused_naming_the_limit() {
        let policy = ContentPolicy::default();
        let text = "a".repeat(1_000_000);
        let err = check_content(&content(&text), &policy, "sandbox").unwrap_err();
        assert_eq!(
            (err.field, err.size, err.max),
            ("text", 1_000_000, MAX_TEXT_CHARS)
        );
        let msg = err.to_string();
        assert!(msg.contains("1000000") && msg.contains("100000"), "{msg}");
        assert!(
            msg.contains("every channel") && msg.contains("shorten"),
            "{msg}"
        );
        assert!(check_content(&content(&"a".repeat(MAX_TEXT_CHARS)), &policy, "s").is_ok());
    }

    #[test]
    fn media_the_store_would_refuse_for_its_serialized_size_is_refused_at_the_door() {
        let policy = ContentPolicy::default();
        let mut post = content("ok");
        // Each within its own limits, but JSON writes a control character as \u0001.
        post.media = (0..MAX_MEDIA)
            .map(|i| {
                Media::new(
                    format!("https://x.example/{i}.jpg"),
                    Some("\u{1}".repeat(MAX_ALT_CHARS)),
                )
            })
            .collect();
        let err = check_content(&post, &policy, "c").unwrap_err();
        assert_eq!(err.field, "media list (as JSON)");
        assert!(err.size > 64_000, "{err}");
        // Ordinary media at every limit pass, and stay below the store's bound.
        post.media = (0..MAX_MEDIA)
            .map(|i| {
                Media::new(
                    format!("https://x.example/{}", "a".repeat(MAX_URL_CHARS - 20 - i)),
                    Some("\"".repeat(MAX_ALT_CHARS)),
                )
            })
            .collect();
        assert!(check_content(&post, &policy, "c").is_ok());
    }

    #[test]
    fn characters_not_bytes_are_counted() {
        // 300 three-byte characters: 900 bytes, but exactly the title limit.
        assert!(check_chars("title", &"猫".repeat(300), MAX_TITLE_CHARS).is_ok());
        assert!(check_chars("title", &"猫".repeat(301), MAX_TITLE_CHARS).is_err());
    }

    #[test]
    fn a_text_longer_than_the_channel_allows_is_refused_at_draft_time() {
        let policy = ChannelKind::Threads.policy_with(None, vec![], vec![]);
        let err =
            check_content(&content(&"a".repeat(501)), &policy, "channel threads-main").unwrap_err();
        assert_eq!((err.size, err.max), (501, 500));
        assert!(err.to_string().contains("channel threads-main"), "{err}");
        // Threads counts an emoji as its UTF-8 bytes.
        let err = check_content(&content(&"🐈".repeat(126)), &policy, "t").unwrap_err();
        assert_eq!((err.size, err.max), (504, 500));
        assert!(check_content(&content(&"a".repeat(500)), &policy, "t").is_ok());
    }

    #[test]
    fn every_field_has_a_ceiling() {
        let policy = ContentPolicy::default();
        let media = |url: String, alt: Option<String>| Media::new(url, alt);
        let mut post = content("ok");
        post.title = Some("t".repeat(MAX_TITLE_CHARS + 1));
        assert_eq!(
            check_content(&post, &policy, "c").unwrap_err().field,
            "title"
        );
        let mut post = content("ok");
        post.link = Some(format!("https://x.example/{}", "a".repeat(MAX_URL_CHARS)));
        assert_eq!(
            check_content(&post, &policy, "c").unwrap_err().field,
            "link"
        );
        let mut post = content("ok");
        post.media = vec![media(
            "https://x.example/a.jpg".into(),
            Some("a".repeat(MAX_ALT_CHARS + 1)),
        )];
        assert_eq!(
            check_content(&post, &policy, "c").unwrap_err().field,
            "media alt text"
        );
        let mut post = content("ok");
        post.media = (0..=MAX_MEDIA)
            .map(|i| media(format!("https://x.example/{i}.jpg"), None))
            .collect();
        let err = check_content(&post, &policy, "c").unwrap_err();
        assert_eq!((err.field, err.unit), ("media list", "items"));
        // A channel's own media limit is named as the channel's.
        let telegram = ChannelKind::Telegram.platform_policy();
        let mut post = content("ok");
        post.media = vec![media("https://x.example/a.jpg".into(), None)];
        let err = check_content(&post, &telegram, "tg").unwrap_err();
        assert_eq!(err.max, 0);
        assert!(err.whose.contains("tg"), "{err}");
    }
}
