//! The approval hash (docs/lifecycle.md#the-approval-hash): lowercase hex SHA-256 of
//! canonical JSON.
//!
//! Outside tools recompute this hash, so the canonical form is written out here by
//! hand rather than relying on `serde_json`'s map ordering (which a feature flag
//! anywhere in the build could change): object keys sorted by their UTF-8 bytes, no
//! insignificant whitespace, non-ASCII text written as UTF-8 and not escaped. It is
//! the same text Python's `json.dumps(v, sort_keys=True, separators=(",", ":"),
//! ensure_ascii=False)` writes.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::post::PostContent;

/// A lowercase hex SHA-256 digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContentHash(String);

impl ContentHash {
    /// Wraps a stored digest, checking its shape.
    pub fn parse(hex_digest: &str) -> Option<Self> {
        let valid = hex_digest.len() == 64
            && hex_digest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| ContentHash(hex_digest.to_owned()))
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Lowercase hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The JSON object the approval hash covers. A single-part post without checked media
/// hashes exactly as it did before parts existed: `parts`, `first_comment` and a media
/// item's `sha256` are keys only when there is something to put in them.
pub fn hash_input(content: &PostContent) -> Value {
    let mut input = json!({
        "channel": content.channel.as_str(),
        "title": content.title,
        "text": content.text,
        "media": media_input(&content.media),
        "link": content.link,
        "source": content.source.as_ref().map(|s| json!({
            "path": s.path,
            "sha256": s.sha256,
            "updated": s.updated,
        })),
    });
    let object = input.as_object_mut().expect("an object");
    if !content.more.is_empty() {
        let parts = content
            .parts()
            .iter()
            .map(|p| json!({"text": p.text, "media": media_input(&p.media)}))
            .collect();
        object.insert("parts".into(), Value::Array(parts));
    }
    if let Some(comment) = &content.first_comment {
        object.insert("first_comment".into(), Value::String(comment.clone()));
    }
    input
}

/// Media as hashed: URL and alt text, and the bytes' SHA-256 once they were checked.
fn media_input(media: &[crate::post::Media]) -> Value {
    media
        .iter()
        .map(|m| {
            let mut item = json!({"url": m.url, "alt": m.alt});
            if let Some(sha256) = &m.sha256 {
                item["sha256"] = Value::String(sha256.clone());
            }
            item
        })
        .collect()
}

/// The content hash (docs/lifecycle.md#the-approval-hash).
pub fn content_hash(content: &PostContent) -> ContentHash {
    ContentHash(sha256_hex(canonical_json(&hash_input(content)).as_bytes()))
}

/// Canonical JSON text of a value: sorted keys, no whitespace, unescaped non-ASCII.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (idx, (key, item)) in entries.into_iter().enumerate() {
                if idx > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (idx, item) in items.iter().enumerate() {
                if idx > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        // Null, booleans and numbers have one serde_json spelling, which is canonical.
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(s: &str, out: &mut String) {
    // serde_json escapes only '"', '\\' and control characters, and writes all other
    // characters as UTF-8, which is exactly the canonical form.
    out.push_str(&Value::String(s.to_owned()).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::post::{ChannelName, Media, Part, Source};
    use proptest::prelude::*;

    fn sample() -> PostContent {
        PostContent {
            channel: ChannelName::parse("threads-main").unwrap(),
            title: None,
            text: "猫の宿へようこそ 🐈\n\"quoted\"".into(),
            media: vec![Media::new(
                "https://inn.example/a.jpg".into(),
                Some("A cat".into()),
            )],
            more: vec![],
            first_comment: None,
            link: Some("https://inn.example/".into()),
            source: Some(Source {
                path: "cats/a.md".into(),
                sha256: "ab".repeat(32),
                updated: Some("2026-11-01".into()),
            }),
        }
    }

    #[test]
    fn canonical_form_matches_the_spec() {
        let text = canonical_json(&hash_input(&sample()));
        assert_eq!(
            text,
            concat!(
                r#"{"channel":"threads-main","link":"https://inn.example/","media":[{"alt":"A cat","url":"https://inn.example/a.jpg"}],"#,
                r#""source":{"path":"cats/a.md","sha256":"abababababababababababababababababababababababababababababababab","updated":"2026-11-01"},"#,
                r#""text":"猫の宿へようこそ 🐈\n\"quoted\"","title":null}"#
            )
        );
    }

    #[test]
    fn hash_is_lowercase_hex_sha256_of_the_canonical_text() {
        let content = sample();
        let expected = sha256_hex(canonical_json(&hash_input(&content)).as_bytes());
        assert_eq!(content.hash().as_str(), expected);
        assert!(ContentHash::parse(content.hash().as_str()).is_some());
        // Fixed vector, computed independently with Python's json.dumps(sort_keys=True,
        // separators=(",", ":"), ensure_ascii=False) and hashlib.sha256.
        let minimal = PostContent::single(ChannelName::parse("sandbox").unwrap(), "hello");
        assert_eq!(
            canonical_json(&hash_input(&minimal)),
            r#"{"channel":"sandbox","link":null,"media":[],"source":null,"text":"hello","title":null}"#
        );
        assert_eq!(
            minimal.hash().as_str(),
            "02e973965e96606c1525a08f67e1a4e99e661ce9a906e3f013e604dcc540c738"
        );
        assert_eq!(
            content.hash().as_str(),
            "f145fddab6e05b190d3441417907a4d47dae1ea3226b455e9dc498598cabc06b"
        );
    }

    #[test]
    fn every_field_changes_the_hash() {
        let base = sample();
        let mut variants = vec![];
        let mut c = base.clone();
        c.text.push('!');
        variants.push(c);
        let mut c = base.clone();
        c.title = Some(String::new());
        variants.push(c);
        let mut c = base.clone();
        c.media[0].alt = None;
        variants.push(c);
        let mut c = base.clone();
        c.link = None;
        variants.push(c);
        let mut c = base.clone();
        c.source.as_mut().unwrap().sha256 = "cd".repeat(32);
        variants.push(c);
        let mut c = base.clone();
        c.channel = ChannelName::parse("threads-other").unwrap();
        variants.push(c);
        let mut c = base.clone();
        c.media[0].sha256 = Some("0".repeat(64));
        variants.push(c);
        let mut c = base.clone();
        c.first_comment = Some("more below".into());
        variants.push(c);
        let mut c = base.clone();
        c.more.push(Part {
            text: "2/2".into(),
            media: vec![],
        });
        variants.push(c);
        for variant in variants {
            assert_ne!(variant.hash(), base.hash());
        }
    }

    #[test]
    fn parts_and_media_bytes_are_hashed_in_order() {
        let mut thread = PostContent::single(ChannelName::parse("x-main").unwrap(), "1/2");
        let mut image = Media::new("https://inn.example/a.png".into(), None);
        image.sha256 = Some("ab".repeat(32));
        image.bytes = Some(10);
        thread.more.push(Part {
            text: "2/2".into(),
            media: vec![image],
        });
        thread.first_comment = Some("c".into());
        assert_eq!(
            canonical_json(&hash_input(&thread)),
            concat!(
                r#"{"channel":"x-main","first_comment":"c","link":null,"media":[],"parts":[{"media":[],"text":"1/2"},"#,
                r#"{"media":[{"alt":null,"sha256":"abababababababababababababababababababababababababababababababab","url":"https://inn.example/a.png"}],"text":"2/2"}],"#,
                r#""source":null,"text":"1/2","title":null}"#
            )
        );
        // Facts beside the digest (size, type, dimensions) follow from the bytes and are
        // not hashed twice; the order of parts is.
        let mut same = thread.clone();
        same.more[0].media[0].bytes = Some(11);
        assert_eq!(same.hash(), thread.hash());
        let mut swapped = thread.clone();
        let second = swapped.more[0].clone();
        swapped.more[0] = Part {
            text: swapped.text.clone(),
            media: swapped.media.clone(),
        };
        swapped.set_parts(vec![second, swapped.more[0].clone()]);
        assert_ne!(swapped.hash(), thread.hash());
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "\\PC*".prop_map(Value::String),
            "[\\u{0}-\\u{1f}\"\\\\a-z]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("\\PC{0,8}", inner), 0..6)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    fn has_whitespace_outside_strings(text: &str) -> bool {
        let (mut in_string, mut escaped) = (false, false);
        for c in text.chars() {
            match (in_string, escaped, c) {
                (true, true, _) => escaped = false,
                (true, false, '\\') => escaped = true,
                (_, false, '"') => in_string = !in_string,
                (false, _, c) if c.is_whitespace() => return true,
                _ => {}
            }
        }
        false
    }

    fn reversed_keys(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                let mut keys: Vec<_> = map.keys().collect();
                keys.sort();
                for key in keys.into_iter().rev() {
                    out.insert(key.clone(), reversed_keys(&map[key]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(reversed_keys).collect()),
            other => other.clone(),
        }
    }

    proptest! {
        #[test]
        fn canonical_text_parses_back_to_the_same_value(value in json_value()) {
            let text = canonical_json(&value);
            let parsed: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(parsed, value);
            prop_assert!(!has_whitespace_outside_strings(&text), "{}", text);
        }

        #[test]
        fn key_order_does_not_matter(value in json_value()) {
            prop_assert_eq!(canonical_json(&value), canonical_json(&reversed_keys(&value)));
        }

        #[test]
        fn non_ascii_text_is_kept_as_utf8(text in "[\\u{80}-\\u{10ffff}]{1,20}") {
            let canonical = canonical_json(&Value::String(text.clone()));
            prop_assert_eq!(canonical, format!("\"{text}\""));
        }

        #[test]
        fn keys_come_out_sorted(keys in prop::collection::btree_set("[a-zA-Z0-9_éß猫🐈]{0,6}", 0..8)) {
            let map: serde_json::Map<String, Value> =
                keys.iter().rev().map(|k| (k.clone(), Value::Null)).collect();
            let text = canonical_json(&Value::Object(map));
            // Every key maps to null, so the keys are the quoted strings before each ":null".
            let parsed_order: Vec<String> = text[1..text.len() - 1]
                .split(":null")
                .filter(|part| !part.is_empty())
                .map(|part| serde_json::from_str(part.trim_start_matches(',')).unwrap())
                .collect();
            let mut sorted = parsed_order.clone();
            sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            prop_assert_eq!(parsed_order, sorted);
        }
    }
}
