//! Content policy: length counted the way each platform counts, forbidden and
//! required phrases, and the platform's own shape rules (title, media, hashtags).
//!
//! Checked at approval and again on the guarded path before publishing.

use std::fmt;

use unicode_segmentation::UnicodeSegmentation;

use crate::post::{Media, PostContent};

/// How a platform counts the length of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LengthUnit {
    /// Unicode scalar values (what most platforms call characters).
    #[default]
    Chars,
    /// Unicode scalar values, except that an emoji counts as its UTF-8 byte length (Threads).
    CharsEmojiAsUtf8Bytes,
    /// Extended grapheme clusters, what a reader sees as one character (Bluesky).
    Graphemes,
    /// Unicode scalar values, with every `http(s)://` URL counted as 23 and a remote
    /// mention `@user@domain` counted as `@user` (Mastodon).
    CharsUrlAs23,
    /// X's weighted length: most Latin, Greek, Cyrillic and punctuation characters count 1,
    /// everything else (CJK, emoji sequences) 2, every `http(s)://` URL 23.
    XWeighted,
    /// UTF-16 code units: a character outside the Basic Multilingual Plane (most emoji)
    /// counts 2 (Telegram).
    Utf16,
}

/// How many characters Mastodon and X count for a URL, whatever its length.
pub const URL_WEIGHT: usize = 23;

impl LengthUnit {
    /// The length of `text` in this unit.
    pub fn count(self, text: &str) -> usize {
        match self {
            LengthUnit::Chars => text.chars().count(),
            LengthUnit::CharsEmojiAsUtf8Bytes => text
                .chars()
                .map(|c| if is_emoji(c) { c.len_utf8() } else { 1 })
                .sum(),
            LengthUnit::Graphemes => text.graphemes(true).count(),
            LengthUnit::CharsUrlAs23 => mastodon_length(text),
            LengthUnit::XWeighted => x_weighted_length(text),
            LengthUnit::Utf16 => text.encode_utf16().count(),
        }
    }

    /// How the unit counts, for people: "characters".
    pub fn describe(self) -> &'static str {
        match self {
            LengthUnit::Chars => "characters",
            LengthUnit::CharsEmojiAsUtf8Bytes => {
                "characters (each emoji counts as its UTF-8 byte length)"
            }
            LengthUnit::Graphemes => "characters (graphemes, as Bluesky counts them)",
            LengthUnit::CharsUrlAs23 => "characters (each link counted as 23, as Mastodon counts)",
            LengthUnit::XWeighted => {
                "weighted characters (links count 23, CJK and emoji 2, as X counts)"
            }
            LengthUnit::Utf16 => "UTF-16 units (most emoji count 2, as Telegram counts)",
        }
    }

    /// How the unit is named in a size error.
    pub fn name(self) -> &'static str {
        self.describe()
    }
}

/// The spans of `http://` and `https://` URLs in `text`: from the scheme up to the next
/// whitespace, without trailing punctuation a sentence puts after a link.
pub fn url_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while from < text.len() {
        let rest = &text[from..];
        let found = [rest.find("https://"), rest.find("http://")]
            .into_iter()
            .flatten()
            .min();
        let Some(offset) = found else { break };
        let start = from + offset;
        // A scheme glued to a word (`xhttps://`) is not a link.
        let glued = text[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric());
        let mut end = text[start..]
            .find(char::is_whitespace)
            .map(|i| start + i)
            .unwrap_or(text.len());
        while end > start
            && text[..end]
                .chars()
                .next_back()
                .is_some_and(|c| matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | ')' | '"' | '\''))
        {
            end -= text[..end].chars().next_back().map_or(1, char::len_utf8);
        }
        let scheme_len = if text[start..].starts_with("https://") {
            8
        } else {
            7
        };
        if !glued && end > start + scheme_len {
            spans.push((start, end));
        }
        from = end.max(start + scheme_len);
    }
    spans
}

/// Mastodon's length: characters, each URL as 23, `@user@domain` as `@user`.
fn mastodon_length(text: &str) -> usize {
    let mut length = 0;
    let mut at = 0;
    for (start, end) in url_spans(text) {
        length += mastodon_plain(&text[at..start]) + URL_WEIGHT;
        at = end;
    }
    length + mastodon_plain(&text[at..])
}

/// Characters of text without URLs, with remote mentions counted by their local part.
fn mastodon_plain(text: &str) -> usize {
    let mut length = 0;
    for word in text.split_inclusive(char::is_whitespace) {
        let trimmed = word.trim_end();
        let mut count = word.chars().count();
        if let Some(rest) = trimmed.strip_prefix('@')
            && let Some((user, domain)) = rest.split_once('@')
            && !user.is_empty()
        {
            let domain: String = domain
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '.' | '-'))
                .collect();
            let domain = domain.trim_end_matches('.');
            if domain.contains('.') {
                count -= domain.chars().count() + 1;
            }
        }
        length += count;
    }
    length
}

/// X's weighted length (twitter-text version 3): URLs 23; an emoji sequence 2; other
/// characters 1 in the ranges X weighs lightly, else 2. Text is not NFC-normalized first,
/// so a decomposed accent may count one more than X counts.
fn x_weighted_length(text: &str) -> usize {
    let mut length = 0;
    let mut at = 0;
    for (start, end) in url_spans(text) {
        length += x_plain(&text[at..start]) + URL_WEIGHT;
        at = end;
    }
    length + x_plain(&text[at..])
}

fn x_plain(text: &str) -> usize {
    text.graphemes(true)
        .map(|grapheme| {
            if grapheme.chars().any(|c| is_emoji(c) && c != '\u{200d}') {
                2
            } else {
                grapheme
                    .chars()
                    .map(|c| match c as u32 {
                        0..=4351 | 8192..=8205 | 8208..=8223 | 8242..=8247 => 1,
                        _ => 2,
                    })
                    .sum()
            }
        })
        .sum()
}

/// Whether a character is part of an emoji sequence: pictographs, dingbats, regional
/// indicators, skin tones, variation selector 16, zero-width joiner and tag characters.
pub fn is_emoji(c: char) -> bool {
    matches!(c as u32,
        0x1F000..=0x1FAFF // pictographs, emoticons, transport, flags, skin tones, symbols
        | 0x2600..=0x27BF // miscellaneous symbols and dingbats
        | 0x2300..=0x23FF // technical (watch, hourglass, ...)
        | 0x2B00..=0x2BFF // arrows and stars
        | 0x2190..=0x21FF // arrows
        | 0x3030 | 0x303D | 0x3297 | 0x3299
        | 0x00A9 | 0x00AE | 0x203C | 0x2049 | 0x2122 | 0x2139
        | 0x200D // zero-width joiner inside emoji sequences
        | 0xFE0F // emoji presentation selector
        | 0xE0020..=0xE007F // tag sequences (subdivision flags)
    )
}

/// The rules one channel's content must meet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContentPolicy {
    /// Longest text allowed, counted in `unit`.
    pub max_chars: Option<usize>,
    /// Most UTF-8 bytes the text may take (Bluesky: 3,000 besides its 300 graphemes).
    pub max_bytes: Option<usize>,
    /// How length is counted.
    pub unit: LengthUnit,
    /// Phrases that must not appear (compared case-insensitively).
    pub forbidden: Vec<String>,
    /// Phrases that must appear verbatim.
    pub required: Vec<String>,
    /// Article channels need a non-empty title.
    pub require_title: bool,
    /// Image channels need at least one media item.
    pub require_media: bool,
    /// Most media items allowed.
    pub max_media: Option<usize>,
    /// Media URLs must name JPEG files (`.jpg` / `.jpeg`).
    pub jpeg_only: bool,
    /// Most `#hashtags` allowed.
    pub max_hashtags: Option<usize>,
    /// Most `@mentions` allowed.
    pub max_mentions: Option<usize>,
    /// Most distinct links in the text.
    pub max_links: Option<usize>,
    /// The adapter appends the post's separate link to the text as `\n<link>` when the
    /// text lacks it (X): the length counted is that of the text as sent.
    pub appends_link: bool,
    /// Most parts a post may have (1: no threads). Each part after the first is a reply
    /// to the one before.
    pub max_parts: usize,
    /// Whether the platform takes a first comment.
    pub first_comment: bool,
    /// The image types the platform takes, checked once the bytes' type is known; empty
    /// takes any image.
    pub image_types: &'static [&'static str],
    /// The largest image the platform takes, in bytes.
    pub max_image_bytes: Option<u64>,
    /// Whether and how the platform takes video.
    pub video: VideoRule,
    /// The largest video the platform takes, in bytes.
    pub max_video_bytes: Option<u64>,
}

/// How a platform takes video.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VideoRule {
    /// Not at all (through airlock).
    #[default]
    None,
    /// One video, alone in its part.
    Alone,
    /// Also as an item of an album or carousel.
    InAlbums,
}

/// The text as an adapter that appends the separate link sends it: the text, trimmed at
/// the end, then a line break and the link, unless the text already carries the link.
pub fn with_appended_link<'a>(text: &'a str, link: Option<&str>) -> std::borrow::Cow<'a, str> {
    match link.map(str::trim).filter(|l| !l.is_empty()) {
        Some(link) if !text.contains(link) => {
            std::borrow::Cow::Owned(format!("{}\n{link}", text.trim_end()))
        }
        _ => std::borrow::Cow::Borrowed(text),
    }
}

/// One way content breaks a policy; its `Display` says what is wrong and what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// The text is empty.
    EmptyText,
    /// The text is longer than allowed.
    TooLong {
        /// Its length in `unit`.
        length: usize,
        /// The limit.
        max: usize,
        /// How it was counted.
        unit: LengthUnit,
    },
    /// The text takes more UTF-8 bytes than the platform stores.
    TooManyBytes {
        /// Its size in bytes.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A forbidden phrase appears.
    Forbidden(String),
    /// A required phrase is missing.
    MissingRequired(String),
    /// No title on a channel that needs one.
    MissingTitle,
    /// No media on a channel that needs some.
    MissingMedia,
    /// Too many media items.
    TooManyMedia {
        /// How many there are.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A media URL that is not a JPEG on a JPEG-only channel.
    NotJpeg(String),
    /// Too many hashtags.
    TooManyHashtags {
        /// How many there are.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Too many mentions.
    TooManyMentions {
        /// How many there are.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Too many distinct links.
    TooManyLinks {
        /// How many there are.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// More parts than the platform takes.
    TooManyParts {
        /// How many there are.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A first comment on a platform without comments.
    NoFirstComment,
    /// A media item of a type the platform does not take.
    MediaType {
        /// Its URL.
        url: String,
        /// Its type, from the bytes.
        found: String,
        /// What the platform takes.
        takes: String,
    },
    /// A media item larger than the platform takes.
    MediaTooLarge {
        /// Its URL.
        url: String,
        /// Its size.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// A violation in one part (numbered from 1; the first comment is the part after the
    /// last).
    InPart {
        /// The part.
        part: usize,
        /// What is wrong with it.
        violation: Box<Violation>,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::EmptyText => write!(f, "the text is empty"),
            Violation::TooLong { length, max, unit } => write!(
                f,
                "the text is {length} {} long; the channel allows at most {max}: shorten it",
                unit.describe()
            ),
            Violation::TooManyBytes { bytes, max } => write!(
                f,
                "the text takes {bytes} bytes in UTF-8; the platform stores at most {max}: shorten it"
            ),
            Violation::Forbidden(phrase) => {
                write!(
                    f,
                    "the text contains the forbidden phrase {phrase:?}: remove it"
                )
            }
            Violation::MissingRequired(phrase) => {
                write!(f, "the text lacks the required phrase {phrase:?}: add it")
            }
            Violation::MissingTitle => {
                write!(f, "the channel publishes articles and needs a title")
            }
            Violation::MissingMedia => write!(f, "the channel needs an image: add --media URL"),
            Violation::TooManyMedia { count, max } => {
                write!(
                    f,
                    "the post has {count} media items; the channel takes at most {max}"
                )
            }
            Violation::NotJpeg(url) => {
                write!(
                    f,
                    "media {url:?} is not a JPEG (.jpg/.jpeg); the channel takes JPEG only"
                )
            }
            Violation::TooManyHashtags { count, max } => {
                write!(
                    f,
                    "the text has {count} hashtags; the channel allows at most {max}"
                )
            }
            Violation::TooManyMentions { count, max } => {
                write!(
                    f,
                    "the text has {count} @mentions; the channel allows at most {max}"
                )
            }
            Violation::TooManyLinks { count, max } => {
                write!(
                    f,
                    "the text has {count} distinct links; the channel allows at most {max}"
                )
            }
            Violation::TooManyParts { count, max } if *max <= 1 => write!(
                f,
                "the post has {count} parts; the channel publishes single posts only: post them separately"
            ),
            Violation::TooManyParts { count, max } => write!(
                f,
                "the post has {count} parts; the channel takes at most {max}: shorten the thread or split it"
            ),
            Violation::NoFirstComment => write!(
                f,
                "the channel takes no first comment: remove it, or add it to the text"
            ),
            Violation::MediaType { url, found, takes } => write!(
                f,
                "media {url:?} is {found}; the channel takes {takes}: convert it or choose another"
            ),
            Violation::MediaTooLarge { url, bytes, max } => write!(
                f,
                "media {url:?} is {bytes} bytes; the channel takes at most {max}: make it smaller"
            ),
            Violation::InPart { part, violation } => write!(f, "part {part}: {violation}"),
        }
    }
}

impl Violation {
    /// A stable machine name for what is wrong (`too_long`, `forbidden_phrase`, ...); a
    /// violation in one part is named by what is wrong in it ([`Violation::part`] says
    /// which part).
    pub fn kind(&self) -> &'static str {
        match self {
            Violation::EmptyText => "empty_text",
            Violation::TooLong { .. } => "too_long",
            Violation::TooManyBytes { .. } => "too_many_bytes",
            Violation::Forbidden(_) => "forbidden_phrase",
            Violation::MissingRequired(_) => "missing_required_phrase",
            Violation::MissingTitle => "missing_title",
            Violation::MissingMedia => "missing_media",
            Violation::TooManyMedia { .. } => "too_many_media",
            Violation::NotJpeg(_) => "not_jpeg",
            Violation::TooManyHashtags { .. } => "too_many_hashtags",
            Violation::TooManyMentions { .. } => "too_many_mentions",
            Violation::TooManyLinks { .. } => "too_many_links",
            Violation::TooManyParts { .. } => "too_many_parts",
            Violation::NoFirstComment => "no_first_comment",
            Violation::MediaType { .. } => "media_type",
            Violation::MediaTooLarge { .. } => "media_too_large",
            Violation::InPart { violation, .. } => violation.kind(),
        }
    }

    /// The part it is in, numbered from 1 (the first comment is the part after the
    /// last), when the post has several; `None` for the post as a whole.
    pub fn part(&self) -> Option<usize> {
        match self {
            Violation::InPart { part, .. } => Some(*part),
            _ => None,
        }
    }

    /// Whether it is about the post's shape (parts, media, a first comment the platform
    /// cannot take), which is refused when a post is drafted, not only at approval.
    pub fn is_shape(&self) -> bool {
        match self {
            Violation::TooManyParts { .. }
            | Violation::NoFirstComment
            | Violation::MediaType { .. }
            | Violation::MediaTooLarge { .. }
            | Violation::TooManyMedia { .. } => true,
            Violation::InPart { violation, .. } => violation.is_shape(),
            _ => false,
        }
    }
}

impl ContentPolicy {
    /// Every violation of this policy by `content`, empty when it passes. A post of several
    /// parts is checked part by part, each violation naming its part.
    pub fn check(&self, content: &PostContent) -> Vec<Violation> {
        let mut violations = Vec::new();
        let parts = content.parts();
        let multipart = content.is_multipart();
        let in_part = |part: usize, found: Vec<Violation>| -> Vec<Violation> {
            if !multipart {
                return found;
            }
            found
                .into_iter()
                .map(|v| Violation::InPart {
                    part,
                    violation: Box::new(v),
                })
                .collect()
        };
        if parts.len() > self.max_parts.max(1) {
            violations.push(Violation::TooManyParts {
                count: parts.len(),
                max: self.max_parts.max(1),
            });
        }
        for (index, part) in parts.iter().enumerate() {
            let link = (index == 0).then_some(content.link.as_deref()).flatten();
            let found = self.check_part(&part.text, &part.media, link, false);
            violations.extend(in_part(index + 1, found));
        }
        if let Some(comment) = &content.first_comment {
            if !self.first_comment {
                violations.push(Violation::NoFirstComment);
            }
            let found = self.check_part(comment, &[], None, true);
            violations.extend(in_part(parts.len() + 1, found));
        }
        let searchable = searchable_text(content);
        for phrase in &self.forbidden {
            if !phrase.is_empty() && searchable.contains(&phrase.to_lowercase()) {
                violations.push(Violation::Forbidden(phrase.clone()));
            }
        }
        // A required phrase (a disclosure) stands in the first part: a thread stopped
        // halfway still carries it.
        for phrase in &self.required {
            if !content.text.contains(phrase.as_str()) {
                violations.push(Violation::MissingRequired(phrase.clone()));
            }
        }
        if self.require_title && content.title.as_deref().is_none_or(|t| t.trim().is_empty()) {
            violations.push(Violation::MissingTitle);
        }
        violations
    }

    /// What is wrong with one part's text and media; a `comment` carries text only, so
    /// media rules do not apply to it.
    fn check_part(
        &self,
        text: &str,
        media: &[Media],
        link: Option<&str>,
        comment: bool,
    ) -> Vec<Violation> {
        let mut violations = Vec::new();
        if text.trim().is_empty() {
            violations.push(Violation::EmptyText);
        }
        if let Some(max) = self.max_chars {
            let sent = if self.appends_link {
                with_appended_link(text, link)
            } else {
                std::borrow::Cow::Borrowed(text)
            };
            let length = self.unit.count(&sent);
            if length > max {
                violations.push(Violation::TooLong {
                    length,
                    max,
                    unit: self.unit,
                });
            }
        }
        if let Some(max) = self.max_bytes
            && text.len() > max
        {
            violations.push(Violation::TooManyBytes {
                bytes: text.len(),
                max,
            });
        }
        if self.require_media && media.is_empty() && !comment {
            violations.push(Violation::MissingMedia);
        }
        if let Some(max) = self.max_media
            && media.len() > max
        {
            violations.push(Violation::TooManyMedia {
                count: media.len(),
                max,
            });
        }
        for item in media {
            violations.extend(self.check_media(item, media.len()));
        }
        let count_limit = |max: Option<usize>, count: usize| max.filter(|max| count > *max);
        if let Some(max) = count_limit(self.max_hashtags, count_tokens(text, '#')) {
            violations.push(Violation::TooManyHashtags {
                count: count_tokens(text, '#'),
                max,
            });
        }
        if let Some(max) = count_limit(self.max_mentions, count_tokens(text, '@')) {
            violations.push(Violation::TooManyMentions {
                count: count_tokens(text, '@'),
                max,
            });
        }
        let links = distinct_links(text);
        if let Some(max) = count_limit(self.max_links, links) {
            violations.push(Violation::TooManyLinks { count: links, max });
        }
        violations
    }

    /// What is wrong with one media item of a part of `items` items: by its URL until its
    /// bytes were checked, then by what they are.
    fn check_media(&self, media: &Media, items: usize) -> Vec<Violation> {
        let mut violations = Vec::new();
        let Some(found) = media.content_type.as_deref() else {
            if self.jpeg_only && !is_jpeg_url(&media.url) {
                violations.push(Violation::NotJpeg(media.url.clone()));
            }
            return violations;
        };
        let wrong = |takes: String| Violation::MediaType {
            url: media.url.clone(),
            found: found.to_owned(),
            takes,
        };
        let max = if media.is_video() {
            match self.video {
                VideoRule::None => violations.push(wrong("images only".into())),
                VideoRule::Alone if items > 1 => {
                    violations.push(wrong("a video only alone in its part".into()))
                }
                _ => {}
            }
            self.max_video_bytes
        } else if found.starts_with("image/") {
            let types = if self.jpeg_only {
                &["image/jpeg"][..]
            } else {
                self.image_types
            };
            if !types.is_empty() && !types.contains(&found) {
                violations.push(wrong(types.join(", ")));
            }
            self.max_image_bytes
        } else {
            violations.push(wrong("images".into()));
            None
        };
        if let (Some(max), Some(bytes)) = (max, media.bytes)
            && bytes > max
        {
            violations.push(Violation::MediaTooLarge {
                url: media.url.clone(),
                bytes,
                max,
            });
        }
        violations
    }
}

/// Every part's text, the first comment, the title and media alt texts, lowercased,
/// where forbidden phrases are searched.
fn searchable_text(content: &PostContent) -> String {
    let mut all = content.text.to_lowercase();
    for part in content
        .title
        .iter()
        .chain(content.more.iter().map(|p| &p.text))
        .chain(content.first_comment.iter())
        .chain(content.all_media().filter_map(|m| m.alt.as_ref()))
    {
        all.push('\n');
        all.push_str(&part.to_lowercase());
    }
    all
}

/// Whether a URL's path names a JPEG file.
pub fn is_jpeg_url(url: &str) -> bool {
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .to_ascii_lowercase();
    path.ends_with(".jpg") || path.ends_with(".jpeg")
}

/// Counts words that start with `sigil` followed by a letter or digit (`#cats`, `@inn`).
fn count_tokens(text: &str, sigil: char) -> usize {
    text.split(|c: char| c.is_whitespace())
        .filter(|word| {
            let mut chars = word.chars();
            chars.next() == Some(sigil) && chars.next().is_some_and(|c| c.is_alphanumeric())
        })
        .count()
}

fn distinct_links(text: &str) -> usize {
    let mut links: Vec<&str> = text
        .split(|c: char| c.is_whitespace())
        .filter(|word| word.starts_with("http://") || word.starts_with("https://"))
        .collect();
    links.sort_unstable();
    links.dedup();
    links.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::post::{ChannelName, Media};

    fn content(text: &str) -> PostContent {
        PostContent::single(ChannelName::parse("c").unwrap(), text)
    }

    #[test]
    fn utf16_counts_astral_characters_twice() {
        assert_eq!(LengthUnit::Utf16.count("猫の宿"), 3);
        assert_eq!(LengthUnit::Utf16.count("🐈"), 2);
        // 2,100 cats are 2,100 characters but 4,200 units: over Telegram's limit.
        assert_eq!(LengthUnit::Utf16.count(&"🐈".repeat(2100)), 4200);
    }

    #[test]
    fn length_counts_unicode_characters_not_bytes() {
        assert_eq!(LengthUnit::Chars.count("猫の宿"), 3);
        assert_eq!(LengthUnit::Chars.count("é"), 1);
        let policy = ContentPolicy {
            max_chars: Some(3),
            ..Default::default()
        };
        assert!(policy.check(&content("猫の宿")).is_empty());
        assert_eq!(
            policy.check(&content("猫の宿だ")),
            vec![Violation::TooLong {
                length: 4,
                max: 3,
                unit: LengthUnit::Chars
            }]
        );
    }

    #[test]
    fn threads_counts_emoji_by_utf8_bytes() {
        let unit = LengthUnit::CharsEmojiAsUtf8Bytes;
        assert_eq!(unit.count("cat"), 3);
        assert_eq!(unit.count("🐈"), 4);
        assert_eq!(unit.count("猫🐈"), 5);
        // A ZWJ family: 4 pictographs (4 bytes each) and 3 joiners (3 bytes each).
        assert_eq!(unit.count("👨\u{200d}👩\u{200d}👧\u{200d}👦"), 25);
        assert_eq!(unit.count("❤\u{fe0f}"), 6);
    }

    #[test]
    fn bluesky_counts_graphemes() {
        let unit = LengthUnit::Graphemes;
        assert_eq!(unit.count("cat"), 3);
        assert_eq!(unit.count("🐈"), 1);
        // A ZWJ family is one grapheme; a flag is one; an accent on its base is one.
        assert_eq!(unit.count("👨\u{200d}👩\u{200d}👧\u{200d}👦"), 1);
        assert_eq!(unit.count("🇯🇵"), 1);
        assert_eq!(unit.count("e\u{301}"), 1);
        assert_eq!(unit.count("猫の宿"), 3);
        let policy = ContentPolicy {
            max_chars: Some(300),
            max_bytes: Some(3000),
            unit,
            ..Default::default()
        };
        assert!(policy.check(&content(&"🐈".repeat(300))).is_empty());
        assert!(!policy.check(&content(&"🐈".repeat(301))).is_empty());
        // 300 graphemes of 25 bytes each pass the grapheme count but not the bytes.
        let families = "👨\u{200d}👩\u{200d}👧\u{200d}👦".repeat(200);
        assert_eq!(
            policy.check(&content(&families)),
            vec![Violation::TooManyBytes {
                bytes: 5000,
                max: 3000
            }]
        );
    }

    #[test]
    fn mastodon_counts_links_as_23_and_remote_mentions_by_their_user() {
        let unit = LengthUnit::CharsUrlAs23;
        assert_eq!(unit.count("hello"), 5);
        let long = format!("see https://inn.example/{}", "a".repeat(100));
        assert_eq!(unit.count(&long), 4 + 23);
        assert_eq!(unit.count("see http://a.example/x."), 4 + 23 + 1);
        assert_eq!(unit.count("hi @mochi@cats.example!"), 3 + 6 + 1);
        assert_eq!(unit.count("hi @mochi"), 9);
        assert_eq!(unit.count("mail me@example.org"), 19);
    }

    #[test]
    fn x_weighs_links_cjk_and_emoji() {
        let unit = LengthUnit::XWeighted;
        assert_eq!(unit.count("hello"), 5);
        assert_eq!(unit.count("猫の宿"), 6);
        assert_eq!(unit.count("🐈"), 2);
        assert_eq!(unit.count("👨\u{200d}👩\u{200d}👧\u{200d}👦"), 2);
        assert_eq!(unit.count("café"), 4);
        assert_eq!(
            unit.count(&format!("a https://x.example/{}", "b".repeat(80))),
            2 + 23
        );
        let policy = ContentPolicy {
            max_chars: Some(280),
            unit,
            ..Default::default()
        };
        assert!(policy.check(&content(&"猫".repeat(140))).is_empty());
        assert!(!policy.check(&content(&"猫".repeat(141))).is_empty());
    }

    /// X's adapter appends a separate link as `\n<link>` when the text lacks it: that link
    /// counts (23 weighted, and 1 for the line break), so a text that fits only without it
    /// is refused at draft time, not by X.
    #[test]
    fn x_counts_the_link_its_adapter_appends() {
        let policy = crate::ChannelKind::X.platform_policy();
        let mut post = content(&"a".repeat(270));
        assert!(policy.check(&post).is_empty());
        post.link = Some("https://inn.example/rooms".into());
        assert_eq!(
            policy.check(&post),
            vec![Violation::TooLong {
                length: 270 + 1 + 23,
                max: 280,
                unit: LengthUnit::XWeighted
            }]
        );
        // A text that carries the link already is sent as it is.
        post.text = format!("{} https://inn.example/rooms", "a".repeat(250));
        assert!(policy.check(&post).is_empty());
        post.text = "a".repeat(256);
        assert!(policy.check(&post).is_empty());
        // Other kinds send the link their own way: not counted in the text.
        let bluesky = crate::ChannelKind::Bluesky.platform_policy();
        post.text = "a".repeat(290);
        assert!(bluesky.check(&post).is_empty());
    }

    #[test]
    fn urls_are_found_without_trailing_punctuation() {
        let text = "Read https://inn.example/a. Or (http://b.example/c) xhttps://no.example";
        let found: Vec<&str> = url_spans(text).iter().map(|(s, e)| &text[*s..*e]).collect();
        assert_eq!(found, ["https://inn.example/a", "http://b.example/c"]);
        assert!(url_spans("https:// alone").is_empty());
    }

    #[test]
    fn phrases_are_checked() {
        let policy = ContentPolicy {
            forbidden: vec!["Guaranteed to meet the cat".into()],
            required: vec!["Please respect the cats' own pace.".into()],
            ..Default::default()
        };
        let ok = "Come stay. Please respect the cats' own pace.";
        assert!(policy.check(&content(ok)).is_empty());
        let bad = "You are GUARANTEED to meet the cat!";
        assert_eq!(
            policy.check(&content(bad)),
            vec![
                Violation::Forbidden("Guaranteed to meet the cat".into()),
                Violation::MissingRequired("Please respect the cats' own pace.".into())
            ]
        );
    }

    #[test]
    fn platform_shape_rules() {
        let policy = ContentPolicy {
            require_title: true,
            require_media: true,
            jpeg_only: true,
            max_hashtags: Some(2),
            max_mentions: Some(1),
            max_links: Some(1),
            ..Default::default()
        };
        let mut post =
            content("#a #b #c @x @y https://a.example https://b.example https://a.example");
        post.media = vec![Media::new("https://x.example/a.png".into(), None)];
        let violations = policy.check(&post);
        assert!(violations.contains(&Violation::MissingTitle));
        assert!(violations.contains(&Violation::NotJpeg("https://x.example/a.png".into())));
        assert!(violations.contains(&Violation::TooManyHashtags { count: 3, max: 2 }));
        assert!(violations.contains(&Violation::TooManyMentions { count: 2, max: 1 }));
        assert!(violations.contains(&Violation::TooManyLinks { count: 2, max: 1 }));
        assert!(is_jpeg_url("https://x.example/A.JPG?size=2"));
        assert!(!policy.check(&content("")).is_empty());
    }

    #[test]
    fn each_violation_has_a_kind_and_a_part_in_a_thread() {
        let policy = ContentPolicy {
            forbidden: vec!["guaranteed".into()],
            required: vec!["#ad".into()],
            max_chars: Some(3),
            max_parts: 2,
            ..Default::default()
        };
        let mut post = content("#ad fine");
        post.more = vec![crate::post::Part {
            text: "guaranteed".into(),
            media: vec![],
        }];
        let found: Vec<(&str, Option<usize>)> = policy
            .check(&post)
            .iter()
            .map(|v| (v.kind(), v.part()))
            .collect();
        assert_eq!(
            found,
            [
                ("too_long", Some(1)),
                ("too_long", Some(2)),
                ("forbidden_phrase", None)
            ]
        );
        assert_eq!(
            Violation::MissingRequired("#ad".into()).kind(),
            "missing_required_phrase"
        );
    }

    #[test]
    fn messages_say_what_to_do() {
        let msg = Violation::TooLong {
            length: 501,
            max: 500,
            unit: LengthUnit::Chars,
        }
        .to_string();
        assert!(msg.contains("501") && msg.contains("500") && msg.contains("shorten"));
    }

    #[test]
    fn parts_are_checked_one_by_one_and_a_comment_needs_no_media() {
        use crate::channel::ChannelKind;
        use crate::post::Part;
        let image = |url: &str, kind: &str, bytes: u64| {
            let mut media = Media::new(url.into(), Some("a cat".into()));
            media.content_type = Some(kind.into());
            media.bytes = Some(bytes);
            media
        };
        let instagram = ChannelKind::Instagram.platform_policy();
        let mut carousel = content("Three cats.");
        carousel.media = (1..=3)
            .map(|n| image(&format!("https://x.example/{n}.jpg"), "image/jpeg", 1000))
            .collect();
        carousel.first_comment = Some("Which one?".into());
        assert_eq!(instagram.check(&carousel), vec![]);
        carousel.media[1] = image("https://x.example/2.png", "image/png", 1000);
        let found = instagram.check(&carousel);
        assert!(
            matches!(&found[..], [Violation::InPart { part: 1, violation }] if violation.is_shape()),
            "{found:?}"
        );

        let x = ChannelKind::X.platform_policy();
        let mut thread = content("1/3");
        thread.more = vec![
            Part {
                text: "2/3".into(),
                media: vec![image("https://x.example/v.mp4", "video/mp4", 10)],
            },
            Part {
                text: "x".repeat(300),
                media: vec![],
            },
        ];
        let found: Vec<String> = x.check(&thread).iter().map(ToString::to_string).collect();
        assert!(
            found[0].starts_with("part 2: media") && found[0].contains("images only"),
            "{found:?}"
        );
        assert!(found[1].starts_with("part 3: the text is 300"), "{found:?}");

        let telegram = ChannelKind::Telegram.platform_policy();
        let found = telegram.check(&thread);
        assert!(
            found.contains(&Violation::TooManyParts { count: 3, max: 1 }),
            "{found:?}"
        );
        assert!(found[0].to_string().contains("single posts only"));
    }
}
