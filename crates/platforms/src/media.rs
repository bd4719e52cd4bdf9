//! What a post's media are, from their bytes (docs/media.md): fetched by the same rules
//! as an adapter's downloads, hashed, their type read from the bytes themselves (not
//! from the URL or the server's word) and, for images, their dimensions. airlock does
//! this when a post is drafted or edited, so the approval binds the bytes, and again
//! before the first part goes out, so bytes swapped at the URL stop the post.

use airlock_core::Media;
use airlock_core::hash::sha256_hex;

use crate::http::{Client, describe_transport, without_secrets};

/// The largest media file airlock fetches to check it: a platform's largest image is
/// far below it; a larger video is refused here rather than read into memory.
pub const MAX_CHECKED_BYTES: u64 = 200 * 1024 * 1024;

/// Why a media item could not be checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    /// The URL or what it answered can never work: fix it.
    #[error("{0}")]
    Refused(String),
    /// It did not answer now; it may later.
    #[error("{0}")]
    Unreachable(String),
}

/// `media` with the facts of the bytes its URL serves now: their SHA-256, type, size
/// and, for images, dimensions. `http` only to a loopback host, no redirects, no
/// credentials, at most `max_bytes`.
pub async fn inspect(client: &Client, media: &Media, max_bytes: u64) -> Result<Media, MediaError> {
    let shown = without_secrets(&media.url);
    let refused = |why: String| MediaError::Refused(format!("media {shown}: {why}"));
    let unreachable = |why: String| MediaError::Unreachable(format!("media {shown}: {why}"));
    let parsed =
        reqwest::Url::parse(&media.url).map_err(|_| refused("is not an absolute URL".into()))?;
    if !crate::http::is_fetchable(&parsed) {
        return Err(refused(
            "is not an https URL without credentials, which is all airlock fetches".into(),
        ));
    }
    let response = client
        .get(parsed)
        .send()
        .await
        .map_err(|e| unreachable(format!("does not answer ({})", describe_transport(&e))))?;
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        let why = format!("answered HTTP {status}: give a URL that serves the file");
        return Err(if status == 408 || status == 429 || status >= 500 {
            unreachable(why)
        } else {
            refused(why)
        });
    }
    if response.content_length().is_some_and(|n| n > max_bytes) {
        return Err(refused(format!("is larger than {max_bytes} bytes")));
    }
    // Read piece by piece: a body without a length stops at the bound, not in memory.
    let mut response = response;
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| unreachable(format!("broke off ({})", describe_transport(&e))))?
    {
        if (bytes.len() + chunk.len()) as u64 > max_bytes {
            return Err(refused(format!("is larger than {max_bytes} bytes")));
        }
        bytes.extend_from_slice(&chunk);
    }
    let Some(content_type) = sniff(&bytes) else {
        return Err(refused(
            "is not an image or video airlock knows (JPEG, PNG, GIF, WebP, MP4, MOV)".into(),
        ));
    };
    let (width, height) = match imagesize::blob_size(&bytes) {
        Ok(size) if content_type.starts_with("image/") => (
            u32::try_from(size.width).ok(),
            u32::try_from(size.height).ok(),
        ),
        _ => (None, None),
    };
    Ok(Media {
        sha256: Some(sha256_hex(&bytes)),
        content_type: Some(content_type.to_owned()),
        bytes: Some(bytes.len() as u64),
        width,
        height,
        ..media.clone()
    })
}

/// The major brands of an ISO media file that is an MP4 video; other brands of the same
/// container (HEIC, AVIF images) are not.
const VIDEO_BRANDS: [&[u8; 4]; 9] = [
    b"isom", b"iso2", b"iso4", b"iso5", b"iso6", b"mp41", b"mp42", b"avc1", b"M4V ",
];

/// The media type of `bytes`, by their first bytes.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let at = |offset: usize, magic: &[u8]| bytes.get(offset..offset + magic.len()) == Some(magic);
    if at(0, &[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if at(0, b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if at(0, b"GIF87a") || at(0, b"GIF89a") {
        Some("image/gif")
    } else if at(0, b"RIFF") && at(8, b"WEBP") {
        Some("image/webp")
    } else if at(4, b"ftypqt") {
        Some("video/quicktime")
    } else if at(4, b"ftyp") && VIDEO_BRANDS.iter().any(|brand| at(8, *brand)) {
        Some("video/mp4")
    } else {
        None
    }
}

/// The refusal of bytes that are not those approved, naming both digests.
pub fn changed_since_approval(media: &Media, found: &str) -> Option<String> {
    let approved = media.sha256.as_deref()?;
    (approved != found).then(|| {
        format!(
            "media {} changed since it was approved (approved sha256 {approved}, now {found}): nothing was sent; serve the approved file at that URL again and requeue the post, or (before any part is out) edit it and approve it again",
            without_secrets(&media.url)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_come_from_the_bytes() {
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff(b"GIF89a..."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"\0\0\0\x18ftypmp42"), Some("video/mp4"));
        assert_eq!(sniff(b"\0\0\0\x14ftypqt  "), Some("video/quicktime"));
        assert_eq!(
            sniff(b"\0\0\0\x18ftypheic"),
            None,
            "an HEIC image is no video"
        );
        assert_eq!(sniff(b"\0\0\0\x18ftypavif"), None);
        assert_eq!(sniff(b"<html>"), None);
        assert_eq!(sniff(b""), None);
    }

    #[test]
    fn a_changed_digest_is_named_with_both() {
        let mut media = Media::new("https://inn.example/a.png".into(), None);
        assert_eq!(changed_since_approval(&media, "bb"), None, "never checked");
        media.sha256 = Some("aa".into());
        assert_eq!(changed_since_approval(&media, "aa"), None);
        let why = changed_since_approval(&media, "bb").unwrap();
        assert!(why.contains("approved sha256 aa, now bb"), "{why}");
    }
}
