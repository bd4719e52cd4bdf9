//! A Markdown document's prose as one line of text (fenced code blocks left out, line
//! breaks and indentation as single spaces), so that a phrase the docs wrap across
//! lines is still found, and the numbers in it that state a quantity.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// A document's prose.
#[derive(Debug)]
pub struct Prose {
    /// The prose, whitespace collapsed.
    pub text: String,
    /// Where each source line starts in `text`, with its line number.
    lines: Vec<(usize, usize)>,
}

/// A number stated as a quantity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    /// Where it is in [`Prose::text`].
    pub at: Range<usize>,
    /// The number as written (`2,048`, `15m`).
    pub number: String,
}

/// Words that, after a number, make it a quantity (`16 due posts`: one word may come
/// between). Units of time and size are quantities too (see [`crate::value`]).
const COUNTED: &str = "characters?|chars?|graphemes?|words?|lines?|digits?|posts?|statuses|attempts?|tries|times|images?|photos?|items?|media|videos?|requests?|calls?|sessions?|tokens?|rows?|entry|entries|events?|files?|links?|URLs?|pages?|verdicts?|pass|passes|revisions?|retry|retries|results?|hashtags?|mentions?|slots?|workers?|critics?|tags?|notifications?|deliveries|containers?|drafts?|reasons?|articles?|copies|percent|per";

/// Words that, before a number, make it a quantity (`default 3`, `at most 10,000`).
const BOUNDS: &str = "at most|up to|default|defaults to|limit|limited to|more than|fewer than|less than|at least|every|within|max|maximum|minimum|capped at|above|below";

const TIME_AND_SIZE: &str = "ms|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|d|days?|weeks?|months?|years?|B|bytes?|KB|kB|KiB|MB|MiB|GB|GiB";

impl Prose {
    /// Reads Markdown.
    pub fn parse(markdown: &str) -> Prose {
        let mut text = String::new();
        let mut lines = Vec::new();
        let mut fenced = false;
        for (number, line) in markdown.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                fenced = !fenced;
                continue;
            }
            if fenced || trimmed.is_empty() {
                continue;
            }
            if !text.is_empty() {
                text.push(' ');
            }
            lines.push((text.len(), number + 1));
            let mut space = false;
            for c in trimmed.chars() {
                if c.is_whitespace() {
                    space = true;
                    continue;
                }
                if space {
                    text.push(' ');
                    space = false;
                }
                text.push(c);
            }
        }
        Prose { text, lines }
    }

    /// The source line of a position in [`Prose::text`].
    pub fn line_at(&self, at: usize) -> usize {
        match self.lines.binary_search_by(|(start, _)| start.cmp(&at)) {
            Ok(i) => self.lines[i].1,
            Err(0) => 1,
            Err(i) => self.lines[i - 1].1,
        }
    }

    /// Every place `phrase` occurs (its whitespace collapsed as the prose's is).
    pub fn find(&self, phrase: &str) -> Vec<Range<usize>> {
        let phrase = phrase.split_whitespace().collect::<Vec<_>>().join(" ");
        if phrase.is_empty() {
            return Vec::new();
        }
        self.text
            .match_indices(&phrase)
            .map(|(at, found)| at..at + found.len())
            .collect()
    }

    /// The code spans that name a constant by its path (`` `airlock_app::publish::DUE_CANDIDATES` ``,
    /// `` `mastodon::KEY_KEPT_FOR` ``), with where they are.
    pub fn constant_names(&self) -> Vec<(usize, String)> {
        static SPAN: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"`((?:[a-z_][a-z0-9_]*::)+[A-Z][A-Z0-9_]*)`").expect("a valid pattern")
        });
        SPAN.captures_iter(&self.text)
            .map(|c| (c.get(0).map_or(0, |m| m.start()), c[1].to_owned()))
            .collect()
    }

    /// The numbers that state a quantity: with a unit of time or size (`30 s`, `15m`,
    /// `1 MiB`), before something counted (`4 images`, `16 due posts`), after a bound
    /// (`default 3`, `at most 10,000`), or a price (`$0.015`). Numbers in link targets,
    /// URLs, dates, times, addresses, identifiers (`v2`, `SHA-256`, `2xx`, `0600`), zero,
    /// and the bare numbers that name a step, an HTTP status or an exit code are not
    /// quantities.
    pub fn quantities(&self) -> Vec<Quantity> {
        let text = &self.text;
        static SKIPPED: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"\]\([^)]*\)|https?://[^\s)>\]`]+|\b\d{4}-\d{2}-\d{2}(?:T[\d:.]+Z?)?|\b\d{1,2}:\d{2}(?::\d{2})?\b|\b\d+\.\d+\.\d+\.\d+(?::\d+)?\b",
            )
            .expect("a valid pattern")
        });
        static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"\d(?:[\d_]|,\d{3})*(?:\.\d+)?").expect("a valid pattern")
        });
        static SUFFIX: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(&format!(r"^(?:{TIME_AND_SIZE}|m|%|×)\b")).expect("a valid pattern")
        });
        static WORD_AFTER: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(&format!(
                r"^\s*-?\s*(?:[A-Za-z][\w-]*\s+)?(?:{TIME_AND_SIZE}|{COUNTED})\b|^\s*(?:%|×)"
            ))
            .expect("a valid pattern")
        });
        static BOUND_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(&format!(r"(?i)\b(?:{BOUNDS})[\s`(]*$")).expect("a valid pattern")
        });
        let (number, suffix, word_after, bound_before) =
            (&*NUMBER, &*SUFFIX, &*WORD_AFTER, &*BOUND_BEFORE);
        let skipped: Vec<Range<usize>> = SKIPPED.find_iter(text).map(|m| m.range()).collect();
        let mut found = Vec::new();
        for m in number.find_iter(text) {
            if skipped.iter().any(|r| r.contains(&m.start())) {
                continue;
            }
            // Zero is logic (`above 0`), and a leading zero writes an identifier: a
            // file mode (`0600`), a migration (`0001`).
            if m.as_str().starts_with('0') && !m.as_str().starts_with("0.") {
                continue;
            }
            let before = &text[..m.start()];
            let previous = before.chars().next_back().unwrap_or(' ');
            if previous.is_alphanumeric() || "_/.#@:-[\\".contains(previous) {
                continue;
            }
            let after = &text[m.end()..];
            let letters: &str = &after[..after
                .find(|c: char| !c.is_ascii_alphabetic())
                .unwrap_or(after.len())];
            let quantity = if !letters.is_empty() {
                // Glued to letters: a unit (`15m`, `1MiB`), or an identifier (`2xx`).
                if !suffix.is_match(after) {
                    continue;
                }
                true
            } else {
                // A bound is a few words: look at the end of what comes before only.
                let near = before
                    .char_indices()
                    .rev()
                    .nth(24)
                    .map_or(before, |(i, _)| &before[i..]);
                previous == '$' || word_after.is_match(after) || bound_before.is_match(near)
            };
            if quantity {
                let end = m.end()
                    + if suffix.is_match(after) {
                        letters.len()
                    } else {
                        0
                    };
                found.push(Quantity {
                    at: m.start()..end,
                    number: text[m.start()..end].to_owned(),
                });
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(markdown: &str) -> Vec<String> {
        Prose::parse(markdown)
            .quantities()
            .into_iter()
            .map(|q| q.number)
            .collect()
    }

    #[test]
    fn quantities_are_numbers_with_a_unit_a_count_or_a_bound() {
        assert_eq!(
            numbers(
                "The dispatcher reads up to 16 due posts; backoff 30 s, at most 30 min,\n\
                 default `15m` (default 3), bodies up to 1 MiB, $0.015 a post, 2,048\n\
                 characters, the 2-minute lease."
            ),
            ["16", "30", "30", "15m", "3", "1", "0.015", "2,048", "2"]
        );
    }

    #[test]
    fn steps_statuses_identifiers_links_and_code_blocks_are_not_quantities() {
        assert!(
            numbers(
                "1. Step 3 answers 423 (exit code 2), SHA-256, UTF-8, v2, 2xx, [step 3](#3-the-step),\n\
                 mode 0600 files, `revisions` above 0,\n\
                 https://example.com/2/users, 2026-12-01T10:00:00Z at 00:00, 127.0.0.1:8080.\n\
                 ```toml\nlimit = 5 # at most 5 posts\n```\n"
            )
            .is_empty()
        );
    }

    #[test]
    fn phrases_are_found_across_line_breaks() {
        let prose = Prose::parse("first line\n\n- reads up to 16\n  due posts of its channels\n");
        let found = prose.find("reads up to 16 due posts");
        assert_eq!(found.len(), 1);
        assert_eq!(prose.line_at(found[0].start), 3);
        assert_eq!(prose.line_at(prose.text.find("channels").unwrap()), 4);
    }

    #[test]
    fn code_spans_naming_constants_are_found() {
        let prose = Prose::parse(
            "reads `airlock_app::publish::DUE_CANDIDATES`, `mastodon::KEY_KEPT_FOR`; not `Guard::Generation` or `MAX`",
        );
        let names: Vec<String> = prose.constant_names().into_iter().map(|(_, n)| n).collect();
        assert_eq!(
            names,
            [
                "airlock_app::publish::DUE_CANDIDATES",
                "mastodon::KEY_KEPT_FOR"
            ]
        );
    }
}
