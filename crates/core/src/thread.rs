//! A thread written as one Markdown file (docs/parts.md): parts are separated by a line
//! holding only `---`, and a line holding only an image, `![alt](url)`, becomes a media
//! item of its part instead of text.

use crate::post::{InvalidValue, Media, Part, check_url};

/// The line that separates two parts.
pub const PART_SEPARATOR: &str = "---";

/// The parts of a thread file, in order. Blank lines around a part are trimmed; an empty
/// part (two separators in a row, or one at the start or end) is refused, naming it.
pub fn parse_thread(markdown: &str) -> Result<Vec<Part>, InvalidValue> {
    let mut parts = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut media = Vec::new();
    let mut finish = |lines: &mut Vec<&str>, media: &mut Vec<Media>| {
        let text = lines.join("\n").trim().to_owned();
        parts.push(Part {
            text,
            media: std::mem::take(media),
        });
        lines.clear();
    };
    for line in markdown.lines() {
        if line.trim_end() == PART_SEPARATOR {
            finish(&mut current, &mut media);
            continue;
        }
        match image_line(line.trim()) {
            Some((alt, url)) => {
                check_url("media url", url)?;
                media.push(Media::new(
                    url.to_owned(),
                    (!alt.is_empty()).then(|| alt.to_owned()),
                ));
            }
            None => current.push(line),
        }
    }
    finish(&mut current, &mut media);
    if let Some(empty) = parts.iter().position(|p| p.text.is_empty()) {
        return Err(InvalidValue::new(
            "thread",
            &format!("part {}", empty + 1),
            "every part needs text: remove the extra `---` line or write the part",
        ));
    }
    Ok(parts)
}

/// `![alt](url)` alone on a line: its alt text and URL.
fn image_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("![")?;
    let (alt, rest) = rest.split_once("](")?;
    let url = rest.strip_suffix(')')?;
    (!url.is_empty() && !url.contains(char::is_whitespace)).then_some((alt, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_split_on_separator_lines_with_their_images() {
        let parts = parse_thread(
            "First part.\n\n---\nSecond, with a cat:\n![A cat asleep](https://inn.example/cat.jpg)\n---\n\nThird --- not a separator.\n",
        )
        .unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].text, "First part.");
        assert_eq!(parts[1].text, "Second, with a cat:");
        assert_eq!(parts[1].media[0].url, "https://inn.example/cat.jpg");
        assert_eq!(parts[1].media[0].alt.as_deref(), Some("A cat asleep"));
        assert_eq!(parts[2].text, "Third --- not a separator.");
        assert_eq!(parse_thread("just one").unwrap().len(), 1);
    }

    #[test]
    fn an_empty_part_or_a_bad_image_url_is_refused_by_name() {
        let err = parse_thread("one\n---\n---\nthree")
            .unwrap_err()
            .to_string();
        assert!(err.contains("part 2"), "{err}");
        let err = parse_thread("one\n![x](ftp://a/b.png)").unwrap_err();
        assert_eq!(err.what, "media url");
        // An image inside a sentence stays text.
        let parts = parse_thread("see ![x](https://a.example/b.png) here").unwrap();
        assert!(parts[0].media.is_empty());
    }
}
