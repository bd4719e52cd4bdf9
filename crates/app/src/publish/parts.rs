//! Posts of several parts (docs/parts.md): which parts are out, which part a run sends
//! next, and the request for it. Each part's request has its own intent, key and
//! generation; a run resumes at the first part not known to be out, and a part whose
//! outcome is unknown is settled by proof or a person before anything after it is sent.

use airlock_core::{Intent, Post, PostDetail};
use airlock_platforms::{PartRequest, PublishRequest, PublishedPart};

/// The parts of `detail`'s post known to be out, in order: those whose intent succeeded
/// with the platform's id. Only a run of consecutive parts from the first counts: a later
/// part never goes out before the one it replies to.
pub(crate) fn landed(intents: &[Intent]) -> Vec<PublishedPart> {
    let mut landed: Vec<PublishedPart> = Vec::new();
    loop {
        let number = landed.len() as u32 + 1;
        let found = intents
            .iter()
            .filter(|i| i.part == number && i.phase == "succeeded")
            .find_map(|i| {
                i.platform_post_id.clone().map(|id| PublishedPart {
                    number,
                    platform_post_id: id,
                    permalink: i.permalink.clone(),
                })
            });
        match found {
            Some(part) => landed.push(part),
            None => return landed,
        }
    }
}

/// The parts of the post that are out, read from the ledger; none for a single post.
pub(crate) fn landed_of(detail: &PostDetail) -> Vec<PublishedPart> {
    if detail.post.content.is_multipart() {
        landed(&detail.intents)
    } else {
        Vec::new()
    }
}

/// The idempotency key of one part: part 1 keeps the post's key, so a single post sends
/// what it always sent.
pub fn part_key(post_key: &str, part: u32) -> String {
    if part <= 1 {
        post_key.to_owned()
    } else {
        format!("{post_key}-{part}")
    }
}

/// The request for part `number` of `post` (1-based; the first comment is the part after
/// the last), with the parts already out.
pub(crate) fn part_request(
    post: &Post,
    number: u32,
    published: Vec<PublishedPart>,
    post_key: &str,
) -> PublishRequest {
    let content = &post.content;
    let parts = content.parts();
    let of = content.part_count() as u32;
    let comment = number as usize > parts.len();
    let (text, media) = match parts.get(number as usize - 1) {
        Some(part) => (part.text.clone(), part.media.clone()),
        None => (
            content.first_comment.clone().unwrap_or_default(),
            Vec::new(),
        ),
    };
    let first = number == 1;
    PublishRequest {
        post_id: post.id,
        channel: content.channel.clone(),
        title: content.title.clone().filter(|_| first),
        text,
        media,
        link: content.link.clone().filter(|_| first),
        scheduled_at: post.scheduled_at,
        idempotency_key: part_key(post_key, number),
        now: post.updated_at,
        earlier: Vec::new(),
        part: PartRequest {
            number,
            of,
            comment,
            published,
        },
    }
}

/// A `published` notification's data with each part's id and permalink (`parts`) for a
/// post of several: those already `out`, then `number`, the last, as it went out now.
pub(crate) fn with_parts(
    mut payload: serde_json::Value,
    out: &[PublishedPart],
    number: u32,
    platform_post_id: Option<&str>,
    permalink: Option<&str>,
) -> serde_json::Value {
    if number > 1 {
        let part = |number: u32, id: Option<&str>, link: Option<&str>| serde_json::json!({"part": number, "platform_post_id": id, "permalink": link});
        let parts = out
            .iter()
            .filter(|p| p.number < number)
            .map(|p| part(p.number, Some(&p.platform_post_id), p.permalink.as_deref()))
            .chain(std::iter::once(part(number, platform_post_id, permalink)))
            .collect();
        payload["parts"] = serde_json::Value::Array(parts);
    }
    payload
}

/// What a person reads of a part: "part 2 of 5", "the first comment".
pub(crate) fn describe(part: &PartRequest) -> String {
    if part.comment {
        "the first comment".into()
    } else {
        format!("part {} of {}", part.number, part.of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::PostId;
    use chrono::Utc;

    fn intent(part: u32, phase: &str, id: Option<&str>) -> Intent {
        Intent {
            post_id: PostId(1),
            generation: part as i64,
            idempotency_key: "k".into(),
            phase: phase.into(),
            platform_ref: None,
            created_at: Utc::now(),
            settled_at: None,
            part,
            platform_post_id: id.map(str::to_owned),
            permalink: None,
        }
    }

    #[test]
    fn parts_out_are_the_consecutive_ones_with_ids() {
        let intents = vec![
            intent(1, "succeeded", Some("a")),
            intent(2, "unknown", None),
            intent(2, "succeeded", Some("b")),
            intent(4, "succeeded", Some("d")),
        ];
        let out = landed(&intents);
        assert_eq!(
            out.iter().map(|p| p.number).collect::<Vec<_>>(),
            [1, 2],
            "part 4 without part 3 does not count"
        );
        assert_eq!(out[1].platform_post_id, "b");
        assert!(landed(&[intent(1, "sending", None)]).is_empty());
    }

    #[test]
    fn keys_differ_per_part_but_part_one_keeps_the_posts() {
        assert_eq!(part_key("airlock-1-ab", 1), "airlock-1-ab");
        assert_eq!(part_key("airlock-1-ab", 3), "airlock-1-ab-3");
    }
}
