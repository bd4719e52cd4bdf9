//! Content policy: length counted the way each platform counts, forbidden and
//! required phrases, and the platform's own shape rules (title, media, hashtags).
//!
//! Checked at approval and again on the guarded path before publishing.

use std::fmt;

use crate::post::PostContent;

/// How a platform counts the length of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LengthUnit {
    /// Unicode scalar values (what most platforms call characters).
    #[default]
    Chars,
    /// Unicode scalar values, except that an emoji counts as its UTF-8 byte length (Threads).
    CharsEmojiAsUtf8Bytes,
}

impl LengthUnit {
    /// The length of `text` in this unit.
    pub fn count(self, text: &str) -> usize {
        match self {
            LengthUnit::Chars => text.chars().count(),
            LengthUnit::CharsEmojiAsUtf8Bytes => text
                .chars()
                .map(|c| if is_emoji(c) { c.len_utf8() } else { 1 })
                .sum(),
        }
    }

    /// How the unit counts, for people: "characters".
    pub fn describe(self) -> &'static str {
        match self {
            LengthUnit::Chars => "characters",
            LengthUnit::CharsEmojiAsUtf8Bytes => {
                "characters (each emoji counts as its UTF-8 byte length)"
            }
        }
    }
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
        }
    }
}

impl ContentPolicy {
    /// Every violation of this policy by `content`, empty when it passes.
    pub fn check(&self, content: &PostContent) -> Vec<Violation> {
        let mut violations = Vec::new();
        let text = &content.text;
        if text.trim().is_empty() {
            violations.push(Violation::EmptyText);
        }
        if let Some(max) = self.max_chars {
            let length = self.unit.count(text);
            if length > max {
                violations.push(Violation::TooLong {
                    length,
                    max,
                    unit: self.unit,
                });
            }
        }
        let searchable = searchable_text(content);
        for phrase in &self.forbidden {
            if !phrase.is_empty() && searchable.contains(&phrase.to_lowercase()) {
                violations.push(Violation::Forbidden(phrase.clone()));
            }
        }
        for phrase in &self.required {
            if !text.contains(phrase.as_str()) {
                violations.push(Violation::MissingRequired(phrase.clone()));
            }
        }
        if self.require_title && content.title.as_deref().is_none_or(|t| t.trim().is_empty()) {
            violations.push(Violation::MissingTitle);
        }
        if self.require_media && content.media.is_empty() {
            violations.push(Violation::MissingMedia);
        }
        if let Some(max) = self.max_media
            && content.media.len() > max
        {
            violations.push(Violation::TooManyMedia {
                count: content.media.len(),
                max,
            });
        }
        if self.jpeg_only {
            for media in &content.media {
                if !is_jpeg_url(&media.url) {
                    violations.push(Violation::NotJpeg(media.url.clone()));
                }
            }
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
}

/// Text, title and media alt texts, lowercased, where forbidden phrases are searched.
fn searchable_text(content: &PostContent) -> String {
    let mut all = content.text.to_lowercase();
    for part in content
        .title
        .iter()
        .chain(content.media.iter().filter_map(|m| m.alt.as_ref()))
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
        PostContent {
            channel: ChannelName::parse("c").unwrap(),
            title: None,
            text: text.into(),
            media: vec![],
            link: None,
            source: None,
        }
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
        post.media = vec![Media {
            url: "https://x.example/a.png".into(),
            alt: None,
        }];
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
    fn messages_say_what_to_do() {
        let msg = Violation::TooLong {
            length: 501,
            max: 500,
            unit: LengthUnit::Chars,
        }
        .to_string();
        assert!(msg.contains("501") && msg.contains("500") && msg.contains("shorten"));
    }
}
