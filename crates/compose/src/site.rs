//! Reading a site: every Markdown file under the site's directory, split into YAML front
//! matter and body, with the fields docs/sites.md lists pulled out leniently.
//!
//! Rules, in the order they are applied:
//! - **Files**: `*.md` and `*.markdown` under `dir`, searched recursively. Names starting
//!   with `.` (hidden files and folders) are passed over, and symbolic links are not
//!   followed, so an article is always a regular file inside the site's directory. Paths
//!   are reported relative to `dir` with `/` separators, sorted.
//! - **Front matter**: the file starts (after an optional byte-order mark) with a line
//!   `---`, and the YAML mapping ends at the next line that is `---` or `...`. It is
//!   parsed with `serde_yaml_ng`; airlock never writes it.
//! - **Fields**: strings are trimmed; numbers and booleans are read as their text so
//!   `updated: 2026-12-01` and `fact_checked: true` both work. `tags` is a list or a
//!   comma-separated string. The image is described in [`ImageRef`].
//!
//! Nothing here decides eligibility; [`crate::candidate`] does.

use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;

use crate::candidate::SkipReason;

/// One Markdown file that was read and whose front matter parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Article {
    /// Path relative to the site's directory, `/`-separated.
    pub path: String,
    /// Lowercase hex SHA-256 of the file's bytes as read.
    pub sha256: String,
    /// The front matter fields airlock uses.
    pub front: FrontMatter,
    /// The first image of the body, if any (see [`ImageRef`]).
    pub body_image: Option<ImageRef>,
}

/// The front matter fields of docs/sites.md, each `None` when missing, empty or `null`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    /// `status` (eligible only when `publish`).
    pub status: Option<String>,
    /// `slug`: the last segment of the public URL.
    pub slug: Option<String>,
    /// `title`.
    pub title: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `fact_checked`: any non-empty value except `false` (a date, a name, `true`).
    pub fact_checked: Option<String>,
    /// `updated`, verbatim (recorded in the post's `source`).
    pub updated: Option<String>,
    /// `tags`.
    pub tags: Vec<String>,
    /// `url` or `permalink`, when the article declares its public address.
    pub declared_url: Option<String>,
    /// `image` (with `image_alt`), when the article names its image.
    pub image: Option<ImageRef>,
}

/// An image an article names: `image: URL` with an optional `image_alt: TEXT`, or
/// `image: {url: URL, alt: TEXT}` (`src` is accepted for `url`) in the front matter;
/// otherwise the first image of the body, a Markdown `![alt](URL)` or an HTML
/// `<img src="URL" alt="...">`. A relative URL is resolved against the article's public
/// URL (so `/wp-content/uploads/a.jpg` lands on the site's host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// As written in the article.
    pub src: String,
    /// Alternative text, if the article gives one.
    pub alt: Option<String>,
}

/// What reading a site found: articles with parsed front matter, and files that could
/// not be read as articles with the reason.
#[derive(Debug, Default)]
pub struct SiteScan {
    /// Readable articles, sorted by path.
    pub articles: Vec<Article>,
    /// Unreadable files, sorted by path.
    pub unreadable: Vec<(String, SkipReason)>,
}

/// Reads every Markdown file under `dir`. Fails only when `dir` itself cannot be listed;
/// a single bad file is reported in [`SiteScan::unreadable`].
pub fn scan(dir: &Path) -> std::io::Result<SiteScan> {
    let mut files = Vec::new();
    collect_markdown(dir, dir, &mut files)?;
    files.sort();
    let mut scan = SiteScan::default();
    for (relative, full) in files {
        match std::fs::read(&full) {
            Ok(bytes) => match parse_article(&relative, &bytes) {
                Ok(article) => scan.articles.push(article),
                Err(reason) => scan.unreadable.push((relative, reason)),
            },
            Err(e) => scan
                .unreadable
                .push((relative, SkipReason::Unreadable(e.to_string()))),
        }
    }
    Ok(scan)
}

fn collect_markdown(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, PathBuf)>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            collect_markdown(root, &path, out)?;
        } else if kind.is_file() && (name.ends_with(".md") || name.ends_with(".markdown")) {
            let relative = path
                .strip_prefix(root)
                .expect("walked from root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((relative, path));
        }
    }
    Ok(())
}

/// Parses one file's bytes as an article.
pub fn parse_article(path: &str, bytes: &[u8]) -> Result<Article, SkipReason> {
    let text = std::str::from_utf8(bytes).map_err(|_| SkipReason::NotUtf8)?;
    let (yaml, body) = split_front_matter(text)?;
    let value: Value = if yaml.trim().is_empty() {
        Value::Mapping(Default::default())
    } else {
        serde_yaml_ng::from_str(yaml)
            .map_err(|e| SkipReason::BadFrontMatter(one_line(&e.to_string())))?
    };
    let Value::Mapping(map) = value else {
        return Err(SkipReason::BadFrontMatter(
            "it is not a mapping of keys to values".into(),
        ));
    };
    let get = |key: &str| map.get(key).and_then(scalar_text);
    let front = FrontMatter {
        status: get("status"),
        slug: get("slug"),
        title: get("title"),
        description: get("description"),
        fact_checked: map.get("fact_checked").and_then(fact_checked_text),
        updated: get("updated"),
        tags: map.get("tags").map(tag_list).unwrap_or_default(),
        declared_url: get("url").or_else(|| get("permalink")),
        image: front_matter_image(map.get("image"), get("image_alt")),
    };
    Ok(Article {
        path: path.to_owned(),
        sha256: airlock_core::hash::sha256_hex(bytes),
        front,
        body_image: first_body_image(body),
    })
}

/// Splits `---\nYAML\n---\nbody`. The opening line must be the file's first.
pub fn split_front_matter(text: &str) -> Result<(&str, &str), SkipReason> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        return Err(SkipReason::NoFrontMatter);
    }
    let start = first.len();
    let mut offset = start;
    for line in lines {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return Ok((&text[start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(SkipReason::UnclosedFrontMatter)
}

/// A scalar as trimmed text; `None` for null, empty strings, lists and maps.
fn scalar_text(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Tagged(tagged) => return scalar_text(&tagged.value),
        Value::Null | Value::Sequence(_) | Value::Mapping(_) => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// `fact_checked` counts unless it is missing, empty, `null` or `false`.
fn fact_checked_text(value: &Value) -> Option<String> {
    match value {
        Value::Bool(false) => None,
        Value::Sequence(items) if !items.is_empty() => Some(
            items
                .iter()
                .filter_map(scalar_text)
                .collect::<Vec<_>>()
                .join(", "),
        )
        .filter(|s| !s.is_empty()),
        Value::Mapping(map) if !map.is_empty() => Some("yes".into()),
        other => scalar_text(other),
    }
}

fn tag_list(value: &Value) -> Vec<String> {
    match value {
        Value::Sequence(items) => items.iter().filter_map(scalar_text).collect(),
        Value::String(s) => s
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        other => scalar_text(other).into_iter().collect(),
    }
}

fn front_matter_image(value: Option<&Value>, alt: Option<String>) -> Option<ImageRef> {
    match value? {
        Value::Mapping(map) => {
            let get = |key: &str| map.get(key).and_then(scalar_text);
            Some(ImageRef {
                src: get("url").or_else(|| get("src"))?,
                alt: get("alt").or(alt),
            })
        }
        other => Some(ImageRef {
            src: scalar_text(other)?,
            alt,
        }),
    }
}

/// The first image of a Markdown body: a Markdown image or an HTML `<img>`, whichever
/// comes first.
pub fn first_body_image(body: &str) -> Option<ImageRef> {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut events = Parser::new(body);
    while let Some(event) = events.next() {
        match event {
            Event::Start(Tag::Image { dest_url, .. }) => {
                // The alt text is the text inside the image tag.
                let mut alt = String::new();
                for inner in events.by_ref() {
                    match inner {
                        Event::End(TagEnd::Image) => break,
                        Event::Text(text) | Event::Code(text) => alt.push_str(&text),
                        _ => {}
                    }
                }
                let alt = alt.trim().to_owned();
                return Some(ImageRef {
                    src: dest_url.trim().to_owned(),
                    alt: (!alt.is_empty()).then_some(alt),
                });
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                if let Some(image) = html_img(&html) {
                    return Some(image);
                }
            }
            _ => {}
        }
    }
    None
}

/// The first `<img src=...>` in an HTML fragment.
fn html_img(html: &str) -> Option<ImageRef> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<img")?;
    let end = lower[start..].find('>').map_or(html.len(), |e| start + e);
    let tag = &html[start..end];
    let src = html_attribute(tag, "src")?;
    Some(ImageRef {
        src,
        alt: html_attribute(tag, "alt").filter(|a| !a.is_empty()),
    })
}

/// An attribute's value in one HTML tag (`name="v"`, `name='v'` or `name=v`).
fn html_attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find(name) {
        let at = from + found;
        from = at + name.len();
        let before_ok = at > 0 && lower.as_bytes()[at - 1].is_ascii_whitespace();
        let rest = lower[from..].trim_start();
        if !before_ok || !rest.starts_with('=') {
            continue;
        }
        let value_start = tag.len() - rest.len() + 1;
        let value = tag[value_start..].trim_start();
        let parsed = match value.chars().next() {
            Some(quote @ ('"' | '\'')) => value[1..].split(quote).next().unwrap_or_default(),
            _ => value.split_whitespace().next().unwrap_or_default(),
        };
        return Some(html_unescape(parsed.trim()));
    }
    None
}

fn html_unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_split_from_the_body() {
        let (yaml, body) = split_front_matter("---\ntitle: a\n---\nbody\n").unwrap();
        assert_eq!(yaml, "title: a\n");
        assert_eq!(body, "body\n");
        let (yaml, body) = split_front_matter("\u{feff}---\r\ntitle: a\r\n...\r\nb").unwrap();
        assert_eq!(yaml, "title: a\r\n");
        assert_eq!(body, "b");
        assert_eq!(
            split_front_matter("title: a\n---\n"),
            Err(SkipReason::NoFrontMatter)
        );
        assert_eq!(
            split_front_matter("---\ntitle: a\n"),
            Err(SkipReason::UnclosedFrontMatter)
        );
    }

    #[test]
    fn fields_are_read_leniently() {
        let text = "---\nstatus: publish\nslug: neko\ntitle: \" 猫の宿 \"\nupdated: 2026-11-20\nfact_checked: true\ntags: [猫, cat cafe]\nimage:\n  url: /wp-content/uploads/neko.jpg\n  alt: 眠る猫\n---\nbody";
        let article = parse_article("a.md", text.as_bytes()).unwrap();
        assert_eq!(article.front.title.as_deref(), Some("猫の宿"));
        assert_eq!(article.front.updated.as_deref(), Some("2026-11-20"));
        assert_eq!(article.front.fact_checked.as_deref(), Some("true"));
        assert_eq!(article.front.tags, vec!["猫", "cat cafe"]);
        assert_eq!(
            article.front.image,
            Some(ImageRef {
                src: "/wp-content/uploads/neko.jpg".into(),
                alt: Some("眠る猫".into())
            })
        );
        let text = "---\nfact_checked: false\ntags: a, b\n---\n";
        let article = parse_article("b.md", text.as_bytes()).unwrap();
        assert_eq!(article.front.fact_checked, None);
        assert_eq!(article.front.tags, vec!["a", "b"]);
    }

    #[test]
    fn bad_yaml_and_bad_bytes_are_reasons_not_errors() {
        assert!(matches!(
            parse_article("a.md", b"---\ntitle: [unclosed\n---\n"),
            Err(SkipReason::BadFrontMatter(_))
        ));
        assert!(matches!(
            parse_article("a.md", b"---\n- a list\n---\n"),
            Err(SkipReason::BadFrontMatter(_))
        ));
        assert_eq!(
            parse_article("a.md", b"---\n\xff\n---\n"),
            Err(SkipReason::NotUtf8)
        );
    }

    #[test]
    fn the_first_body_image_is_markdown_or_html() {
        let image =
            first_body_image("Intro\n\n![眠る猫](https://x.example/a.jpg \"t\") and ![b](b.jpg)")
                .unwrap();
        assert_eq!(image.src, "https://x.example/a.jpg");
        assert_eq!(image.alt.as_deref(), Some("眠る猫"));
        let image = first_body_image(
            "Intro\n\n<p><img class=\"x\" src=\"/u/a.jpeg\" alt='A &amp; B'></p>\n\n![b](b.jpg)",
        )
        .unwrap();
        assert_eq!(image.src, "/u/a.jpeg");
        assert_eq!(image.alt.as_deref(), Some("A & B"));
        assert_eq!(first_body_image("no images here"), None);
    }
}
