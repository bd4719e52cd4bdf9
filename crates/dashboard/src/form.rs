//! Reading the forms that repeat fields: a part's media items are `p1_url` / `p1_alt`
//! pairs, one pair per row, in order; a thread's parts are `p1_text`, `p2_text`, ...
//!
//! Axum's `Form` takes one value per name, so these forms are read as the ordered list
//! of pairs the browser sent.

use airlock_core::Media;

/// Every field of a form body, in the order sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields(Vec<(String, String)>);

/// The most parts a form is read for: more than any platform takes.
pub const MAX_FORM_PARTS: usize = 50;

/// The most media rows a part is read for.
pub const MAX_FORM_MEDIA: usize = 20;

/// One media row as typed: its URL and alt text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MediaRow {
    /// The URL (empty for a blank row).
    pub url: String,
    /// The alt text.
    pub alt: String,
}

impl Fields {
    /// Parses a form-encoded body.
    pub fn parse(body: &[u8]) -> Self {
        Fields(
            form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `name`, if sent.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of `name`, or empty.
    pub fn text(&self, name: &str) -> String {
        self.get(name).unwrap_or_default().to_owned()
    }

    /// Every value of `name`, in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the form has any field `name`.
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The media rows of part `n` (from 1): `p{n}_url` and `p{n}_alt`, paired in order.
    pub fn media_rows(&self, n: usize) -> Vec<MediaRow> {
        let (url, alt) = (format!("p{n}_url"), format!("p{n}_alt"));
        let urls: Vec<&str> = self.all(&url).take(MAX_FORM_MEDIA).collect();
        let alts: Vec<&str> = self.all(&alt).take(MAX_FORM_MEDIA).collect();
        (0..urls.len().max(alts.len()))
            .map(|i| MediaRow {
                url: urls.get(i).map_or("", |u| u.trim()).to_owned(),
                alt: alts.get(i).map_or("", |a| a.trim()).to_owned(),
            })
            .collect()
    }
}

/// The media items rows name: blank rows dropped, an alt text without a URL refused.
pub fn media_of(rows: &[MediaRow], part: usize) -> Result<Vec<Media>, String> {
    let mut media = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        match (row.url.is_empty(), row.alt.is_empty()) {
            (true, true) => {}
            (true, false) => {
                return Err(format!(
                    "media item {} of part {part} has alt text but no URL: add the URL or clear the alt text",
                    i + 1
                ));
            }
            (false, _) => media.push(Media::new(
                row.url.clone(),
                Some(row.alt.clone()).filter(|a| !a.is_empty()),
            )),
        }
    }
    Ok(media)
}

/// The rows a list of media shows as: each item's URL and alt text.
pub fn rows_of(media: &[Media]) -> Vec<MediaRow> {
    media
        .iter()
        .map(|m| MediaRow {
            url: m.url.clone(),
            alt: m.alt.clone().unwrap_or_default(),
        })
        .collect()
}

/// Browsers send text areas with CRLF line ends; the ledger keeps what was meant.
pub fn text_area(value: &str) -> String {
    value.replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_rows_pair_in_order_and_blank_rows_drop() {
        let fields = Fields::parse(
            b"p1_url=https%3A%2F%2Fa.example%2F1.jpg&p1_alt=One&p1_url=&p1_alt=&p2_url=https%3A%2F%2Fa.example%2F2.jpg&p2_alt=&p1_url=+https%3A%2F%2Fa.example%2F3.jpg+&p1_alt=Three",
        );
        let rows = fields.media_rows(1);
        assert_eq!(rows.len(), 3);
        let media = media_of(&rows, 1).unwrap();
        assert_eq!(media.len(), 2);
        assert_eq!(media[0].url, "https://a.example/1.jpg");
        assert_eq!(media[0].alt.as_deref(), Some("One"));
        assert_eq!(media[1].url, "https://a.example/3.jpg");
        let two = media_of(&fields.media_rows(2), 2).unwrap();
        assert_eq!(two[0].alt, None, "an empty alt is no alt");
        assert!(fields.media_rows(3).is_empty());
    }

    #[test]
    fn an_alt_text_without_a_url_is_refused() {
        let fields = Fields::parse(b"p2_url=&p2_alt=A+cat");
        let err = media_of(&fields.media_rows(2), 2).unwrap_err();
        assert!(
            err.contains("media item 1 of part 2 has alt text but no URL"),
            "{err}"
        );
    }
}
