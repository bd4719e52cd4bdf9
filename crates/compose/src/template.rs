//! Channel templates: the text of a post made from an article.
//!
//! A template is text with the placeholders `{title}`, `{description}`, `{url}` and
//! `{tags}`; `{{` and `}}` write literal braces, and any other `{name}` is refused when
//! the template is parsed (at startup, not at the first slot). Rendering:
//!
//! - `{tags}` becomes the article's tags as hashtags separated by spaces: `#` followed by
//!   the tag's letters, digits and `_` (other characters, spaces included, are dropped,
//!   so `cat cafe` becomes `#catcafe` and `猫` stays `#猫`); empty and repeated tags are left out.
//! - A template line made only of placeholders that all came out empty (an article
//!   without tags) is left out rather than leaving a blank line.
//! - Trailing whitespace is trimmed, then each of the channel policy's `required`
//!   phrases the text does not already contain is appended on its own line.
//!
//! The result is not shortened to fit: it must pass the channel's content policy, with
//! length counted the way the policy counts it, or nothing is drafted.

use std::fmt;

/// The default template: `{title}\n{description}\n{url}` (docs/sites.md).
pub const DEFAULT_TEMPLATE: &str = "{title}\n{description}\n{url}";

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    lines: Vec<Vec<Piece>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Field(Field),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Title,
    Description,
    Url,
    Tags,
}

/// A template that cannot be used, saying where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("template {template:?}: {problem}")]
pub struct TemplateError {
    /// The template text.
    pub template: String,
    /// What is wrong.
    pub problem: String,
}

/// The article fields a template can use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    /// The article's title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// Its public URL.
    pub url: String,
    /// Its tags, as written in the front matter.
    pub tags: Vec<String>,
}

impl Template {
    /// Parses a template, refusing unknown placeholders and unbalanced braces.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let fail = |problem: String| TemplateError {
            template: text.to_owned(),
            problem,
        };
        let mut lines = Vec::new();
        for line in text.split('\n') {
            let mut pieces = Vec::new();
            let mut literal = String::new();
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '{' if chars.peek() == Some(&'{') => {
                        chars.next();
                        literal.push('{');
                    }
                    '}' if chars.peek() == Some(&'}') => {
                        chars.next();
                        literal.push('}');
                    }
                    '{' => {
                        let mut name = String::new();
                        loop {
                            match chars.next() {
                                Some('}') => break,
                                Some(c) => name.push(c),
                                None => {
                                    return Err(fail(format!(
                                        "unclosed {{{name}: write {{{{ for a literal brace"
                                    )));
                                }
                            }
                        }
                        let field = match name.trim() {
                            "title" => Field::Title,
                            "description" => Field::Description,
                            "url" => Field::Url,
                            "tags" => Field::Tags,
                            other => {
                                return Err(fail(format!(
                                    "unknown placeholder {{{other}}}: use {{title}}, {{description}}, {{url}} or {{tags}}"
                                )));
                            }
                        };
                        if !literal.is_empty() {
                            pieces.push(Piece::Text(std::mem::take(&mut literal)));
                        }
                        pieces.push(Piece::Field(field));
                    }
                    '}' => {
                        return Err(fail("a lone }: write }} for a literal brace".to_owned()));
                    }
                    c => literal.push(c),
                }
            }
            if !literal.is_empty() {
                pieces.push(Piece::Text(literal));
            }
            lines.push(pieces);
        }
        Ok(Template {
            source: text.to_owned(),
            lines,
        })
    }

    /// The template text as configured.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Renders the text of a post: fields filled in, lines of only empty fields left
    /// out, trailing whitespace trimmed, missing `required` phrases appended.
    pub fn render(&self, fields: &Fields, required: &[String]) -> String {
        let tags = hashtags(&fields.tags);
        let mut out: Vec<String> = Vec::new();
        for pieces in &self.lines {
            let mut line = String::new();
            let mut has_field = false;
            let mut has_text = false;
            for piece in pieces {
                match piece {
                    Piece::Text(text) => {
                        has_text |= !text.trim().is_empty();
                        line.push_str(text);
                    }
                    Piece::Field(field) => {
                        has_field = true;
                        line.push_str(match field {
                            Field::Title => fields.title.trim(),
                            Field::Description => fields.description.trim(),
                            Field::Url => fields.url.trim(),
                            Field::Tags => &tags,
                        });
                    }
                }
            }
            if has_field && !has_text && line.trim().is_empty() {
                continue;
            }
            out.push(line.trim_end().to_owned());
        }
        let mut text = out.join("\n").trim_end().to_owned();
        for phrase in required {
            if !phrase.is_empty() && !text.contains(phrase.as_str()) {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(phrase);
            }
        }
        text
    }
}

impl Default for Template {
    fn default() -> Self {
        Template::parse(DEFAULT_TEMPLATE).expect("the default template parses")
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Tags as `#tag` words (see the module docs).
pub fn hashtags(tags: &[String]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for tag in tags {
        let word: String = tag
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !word.is_empty() && !seen.contains(&word) {
            seen.push(word);
        }
    }
    seen.iter()
        .map(|w| format!("#{w}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Fields {
        Fields {
            title: "猫の宿へようこそ".into(),
            description: "静かな山あいの宿で、猫たちがお迎えします。".into(),
            url: "https://inn.example/neko/".into(),
            tags: vec!["猫".into(), "cat cafe".into(), "#猫".into(), "-".into()],
        }
    }

    #[test]
    fn placeholders_are_filled_and_tags_become_hashtags() {
        let template = Template::parse("{title}\n{description}\n{tags}\n{url}").unwrap();
        assert_eq!(
            template.render(&fields(), &[]),
            "猫の宿へようこそ\n静かな山あいの宿で、猫たちがお迎えします。\n#猫 #catcafe\nhttps://inn.example/neko/"
        );
    }

    #[test]
    fn a_line_of_only_empty_placeholders_is_left_out() {
        let template = Template::parse("{title}\n{tags}\n{url}").unwrap();
        let mut no_tags = fields();
        no_tags.tags.clear();
        assert_eq!(
            template.render(&no_tags, &[]),
            "猫の宿へようこそ\nhttps://inn.example/neko/"
        );
        let template = Template::parse("{title}\n\nTags: {tags}").unwrap();
        assert_eq!(template.render(&no_tags, &[]), "猫の宿へようこそ\n\nTags:");
    }

    #[test]
    fn missing_required_phrases_are_appended_once() {
        let template = Template::parse("{title} 猫のペースを尊重してください。").unwrap();
        let required = vec![
            "猫のペースを尊重してください。".to_owned(),
            "#猫の宿".to_owned(),
        ];
        assert_eq!(
            template.render(&fields(), &required),
            "猫の宿へようこそ 猫のペースを尊重してください。\n#猫の宿"
        );
    }

    #[test]
    fn braces_escape_and_unknown_placeholders_are_refused() {
        let template = Template::parse("{{{title}}}").unwrap();
        assert_eq!(template.render(&fields(), &[]), "{猫の宿へようこそ}");
        let err = Template::parse("{titel}").unwrap_err();
        assert!(
            err.to_string().contains("unknown placeholder {titel}"),
            "{err}"
        );
        assert!(Template::parse("{title").is_err());
        assert!(Template::parse("a } b").is_err());
        assert_eq!(Template::default().as_str(), DEFAULT_TEMPLATE);
    }
}
