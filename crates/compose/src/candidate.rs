//! Candidates: which articles of a site may be posted on a channel now, in the order
//! `compose` takes them, and why each other article is passed over
//! (docs/sites.md#candidates).
//!
//! An article is eligible when, checked in this order (the first failing rule is its reason):
//! 1. the file is UTF-8 with YAML front matter ([`crate::site`]);
//! 2. `status: publish`;
//! 3. a `slug` that is one URL path segment (ASCII letters, digits, `-`, `_`), so its
//!    public URL is exactly `base_url + "/" + slug + "/"`; when the front matter also
//!    declares `url` (or `permalink`), as an absolute URL or a path, it must be that URL;
//!    and no other `status: publish` article has the same slug;
//! 4. non-empty `title`, `description` and `fact_checked` (`false` counts as empty);
//! 5. it was not used on the channel within the site's `reuse_after` (a post of the
//!    channel whose `source.path` is this file was created less than that long ago, by
//!    the ledger);
//! 6. on Instagram channels: it has an image (see [`crate::site::ImageRef`]: the front
//!    matter `image`, else the first image of the body; only that one is considered)
//!    whose URL is under the site's `media_prefix` and names a `.jpg`/`.jpeg` file;
//! 7. the post the channel's template makes of it passes the channel's content policy;
//! 8. its public URL answers `HEAD` with 200 (redirects are not followed), and on
//!    Instagram channels its image answers `HEAD` with 200 and `Content-Type: image/jpeg`.
//!
//! Rules 1–7 need no network; `HEAD` checks run only for articles that passed them,
//! a few at a time ([`crate::head::CheckSettings`]).
//!
//! Order: least recently used on the channel first (never used before all others), then
//! newest `updated` (an `updated` that is not a date or time sorts last), then path.

use std::collections::HashMap;
use std::fmt;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde::{Serialize, Serializer};

use airlock_app::{App, Principal};
use airlock_core::policy::is_jpeg_url;
use airlock_core::time::format_utc;
use airlock_core::{ChannelKind, ChannelName, Media, PostContent, Source, Span, Violation};

use crate::head::{Checker, Expect, HeadFailure};
use crate::site::{self, Article};
use crate::template::Fields;
use crate::{Error, Result, Target};

/// The eligible articles in the order `compose` takes them, and every other article
/// with its reason. Serializes to the `candidates --json` document.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Candidates {
    /// Eligible, best first.
    pub eligible: Vec<Eligible>,
    /// Passed over, by path.
    pub skipped: Vec<Skipped>,
}

/// An article that may be posted now, with the post it would become. Serializes to
/// `{"slug", "path", "url", "title", "image"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Eligible {
    /// Its slug.
    pub slug: String,
    /// Its path relative to the site's directory.
    pub path: String,
    /// Its public URL.
    pub url: String,
    /// Its title.
    pub title: String,
    /// The image the post carries (Instagram channels); `null` for channels that take none.
    pub image: Option<String>,
    /// The post it becomes (without schedule or slot).
    #[serde(skip)]
    pub content: PostContent,
    /// When it was last used on the channel, if ever.
    #[serde(skip)]
    pub last_used: Option<DateTime<Utc>>,
}

/// An article passed over, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Its path relative to the site's directory.
    pub path: String,
    /// Why; serialized as its sentence.
    #[serde(serialize_with = "as_display")]
    pub reason: SkipReason,
}

/// Why an article is not eligible. `Display` is a sentence about the article that says
/// what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// The file could not be read.
    Unreadable(String),
    /// The file is not UTF-8.
    NotUtf8,
    /// The file does not start with a `---` line.
    NoFrontMatter,
    /// The front matter has no closing `---` line.
    UnclosedFrontMatter,
    /// The front matter is not a YAML mapping.
    BadFrontMatter(String),
    /// `status` is missing or not `publish`.
    NotPublished {
        /// The status it has, if any.
        status: Option<String>,
    },
    /// A required front matter field is missing or empty.
    Missing(&'static str),
    /// The slug cannot be one URL path segment.
    BadSlug {
        /// The slug.
        slug: String,
    },
    /// The declared `url`/`permalink` is not the URL the slug gives.
    UrlMismatch {
        /// As declared.
        declared: String,
        /// From `base_url` and slug.
        url: String,
    },
    /// Another published article has the same slug.
    DuplicateSlug {
        /// The slug.
        slug: String,
        /// The other article's path.
        other: String,
    },
    /// Used on the channel within `reuse_after`.
    RecentlyUsed {
        /// The channel.
        channel: ChannelName,
        /// When it was last used there.
        at: DateTime<Utc>,
        /// The reuse window.
        reuse_after: Span,
    },
    /// No image on an Instagram channel.
    NoImage,
    /// The image reference is not a usable URL.
    BadImageUrl {
        /// As written.
        src: String,
    },
    /// The image is not under the site's `media_prefix`.
    ImageOffSite {
        /// The image URL.
        url: String,
        /// The prefix.
        prefix: String,
    },
    /// The image URL does not name a JPEG file.
    ImageNotJpegUrl {
        /// The image URL.
        url: String,
    },
    /// The post from the template breaks the channel's content policy.
    Policy(Vec<Violation>),
    /// The public page failed its `HEAD` check.
    Page {
        /// The page.
        url: String,
        /// How.
        failure: HeadFailure,
    },
    /// The image failed its `HEAD` check.
    Image {
        /// The image.
        url: String,
        /// How.
        failure: HeadFailure,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const PUBLISH: &str = "only articles with `status: publish` are posted";
        match self {
            SkipReason::Unreadable(e) => write!(f, "cannot be read: {e}"),
            SkipReason::NotUtf8 => write!(f, "is not UTF-8 text"),
            SkipReason::NoFrontMatter => write!(
                f,
                "has no YAML front matter: the file must start with a `---` line"
            ),
            SkipReason::UnclosedFrontMatter => {
                write!(f, "front matter is not closed: end it with a `---` line")
            }
            SkipReason::BadFrontMatter(e) => write!(f, "front matter is not valid YAML: {e}"),
            SkipReason::NotPublished { status: None } => {
                write!(f, "has no `status` in its front matter: {PUBLISH}")
            }
            SkipReason::NotPublished {
                status: Some(status),
            } => write!(f, "`status` is {status:?}: {PUBLISH}"),
            SkipReason::Missing("fact_checked") => write!(
                f,
                "`fact_checked` is missing, empty or false: only fact-checked articles are posted"
            ),
            SkipReason::Missing(field) => {
                write!(f, "`{field}` is missing or empty in the front matter")
            }
            SkipReason::BadSlug { slug } => write!(
                f,
                "`slug` {slug:?} cannot be one URL path segment: use ASCII letters, digits, `-` and `_`"
            ),
            SkipReason::UrlMismatch { declared, url } => write!(
                f,
                "front matter url {declared} does not match the public URL of its slug, {url}"
            ),
            SkipReason::DuplicateSlug { slug, other } => write!(
                f,
                "`slug` {slug:?} is also used by {other}: two articles cannot share one public URL"
            ),
            SkipReason::RecentlyUsed {
                channel,
                at,
                reuse_after,
            } => write!(
                f,
                "used on {channel} at {}, within reuse_after ({reuse_after}): eligible again from {}",
                format_utc(*at),
                format_utc(*at + reuse_after.as_chrono())
            ),
            SkipReason::NoImage => write!(
                f,
                "has no image: an Instagram post needs a JPEG (front matter `image`, or an image in the body)"
            ),
            SkipReason::BadImageUrl { src } => write!(f, "image {src:?} is not a usable URL"),
            SkipReason::ImageOffSite { url, prefix } => write!(
                f,
                "image {url} is not under the site's media_prefix {prefix}"
            ),
            SkipReason::ImageNotJpegUrl { url } => write!(
                f,
                "image {url} is not a JPEG file (.jpg/.jpeg), which Instagram needs"
            ),
            SkipReason::Policy(violations) => write!(
                f,
                "the post its template makes breaks the channel's content policy: {}",
                violations
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            SkipReason::Page { url, failure } => write!(f, "public URL {url} {failure}"),
            SkipReason::Image { url, failure } => write!(f, "image {url} {failure}"),
        }
    }
}

fn as_display<T: fmt::Display, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// Every article of the target's site judged for its channel, with `HEAD` checks for
/// all that pass the local rules.
pub async fn candidates(app: &App, target: Target<'_>, checker: &Checker) -> Result<Candidates> {
    let Prepared {
        pending,
        mut skipped,
    } = prepare(app, target).await?;
    let (eligible, failed) = check_in_order(pending, checker, false).await;
    skipped.extend(failed);
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Candidates { eligible, skipped })
}

/// The first eligible article, checking `HEAD`s only until one passes; with every
/// article passed over on the way.
pub(crate) async fn first_eligible(
    app: &App,
    target: Target<'_>,
    checker: &Checker,
) -> Result<(Option<Eligible>, Vec<Skipped>)> {
    let Prepared {
        pending,
        mut skipped,
    } = prepare(app, target).await?;
    let (eligible, failed) = check_in_order(pending, checker, true).await;
    skipped.extend(failed);
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((eligible.into_iter().next(), skipped))
}

/// Whether `url` lies under `prefix` (a site's `media_prefix`), compared as URLs, not as
/// text: the same scheme, host and port, no user info, and a path inside the prefix's
/// path taken as a directory. As text, `https://inn.example` would also match
/// `https://inn.example@other.example/x.jpg` (user info, another host) and
/// `https://inn.example.evil/x.jpg`.
pub fn under_prefix(url: &str, prefix: &str) -> bool {
    let (Ok(url), Ok(prefix)) = (url::Url::parse(url), url::Url::parse(prefix)) else {
        return false;
    };
    if !url.username().is_empty() || url.password().is_some() {
        return false;
    }
    if url.scheme() != prefix.scheme()
        || url.host() != prefix.host()
        || url.port_or_known_default() != prefix.port_or_known_default()
    {
        return false;
    }
    let mut dir = prefix.path().to_owned();
    if !dir.ends_with('/') {
        dir.push('/');
    }
    url.path().starts_with(&dir)
}

/// Articles that passed the local rules, in order, and those that did not.
struct Prepared {
    pending: Vec<Eligible>,
    skipped: Vec<Skipped>,
}

/// Rules 1–7 of the module docs, and the order.
async fn prepare(app: &App, target: Target<'_>) -> Result<Prepared> {
    let site = target.site;
    let compose = target.channel;
    let channel = app.channel(compose.channel.as_str())?.clone();
    let instagram = channel.kind == ChannelKind::Instagram;
    check_base_url(site)?;
    let media_prefix = match (&site.media_prefix, instagram) {
        (Some(prefix), _) => Some(prefix.as_str()),
        (None, true) => {
            return Err(Error::Invalid(format!(
                "site {} has no media_prefix, which Instagram channel {} needs: set media_prefix in [sites.{}]",
                site.name, channel.name, site.name
            )));
        }
        (None, false) => None,
    };
    let dir = site.dir.clone();
    let scan = tokio::task::spawn_blocking(move || site::scan(&dir))
        .await
        .expect("the site scan does not panic")
        .map_err(|source| Error::Site {
            site: site.name.clone(),
            dir: site.dir.clone(),
            source,
        })?;
    let now = app.now();
    let used: HashMap<String, DateTime<Utc>> = app
        .sources_used(&Principal::scheduler(), &channel.name, DateTime::UNIX_EPOCH)
        .await?
        .into_iter()
        .collect();

    let mut skipped: Vec<Skipped> = scan
        .unreadable
        .into_iter()
        .map(|(path, reason)| Skipped { path, reason })
        .collect();
    // Slugs of published articles, to refuse two articles with one public URL.
    let mut slug_owners: HashMap<&str, Vec<&str>> = HashMap::new();
    for article in &scan.articles {
        if let (Some("publish"), Some(slug)) = (
            article.front.status.as_deref(),
            article.front.slug.as_deref(),
        ) {
            slug_owners.entry(slug).or_default().push(&article.path);
        }
    }
    let mut pending = Vec::new();
    let mut updated_of = HashMap::new();
    for article in &scan.articles {
        let judged = judge(
            article,
            &JudgeContext {
                site,
                compose,
                channel: &channel,
                media_prefix,
                slug_owners: &slug_owners,
                last_used: used.get(&article.path).copied(),
                now,
            },
        );
        match judged {
            Ok(eligible) => {
                updated_of.insert(
                    article.path.clone(),
                    article.front.updated.as_deref().and_then(parse_updated),
                );
                pending.push(eligible);
            }
            Err(reason) => skipped.push(Skipped {
                path: article.path.clone(),
                reason,
            }),
        }
    }
    pending.sort_by(|a, b| {
        a.last_used
            .cmp(&b.last_used)
            .then_with(|| {
                // Newest first; a missing or unreadable `updated` last.
                let a_updated = updated_of.get(&a.path).copied().flatten();
                let b_updated = updated_of.get(&b.path).copied().flatten();
                b_updated.cmp(&a_updated)
            })
            .then_with(|| a.path.cmp(&b.path))
    });
    Ok(Prepared { pending, skipped })
}

struct JudgeContext<'a> {
    site: &'a crate::SiteSettings,
    compose: &'a crate::ChannelCompose,
    channel: &'a airlock_app::ChannelSettings,
    media_prefix: Option<&'a str>,
    slug_owners: &'a HashMap<&'a str, Vec<&'a str>>,
    last_used: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
}

/// Rules 2–7 for one article.
fn judge(article: &Article, cx: &JudgeContext<'_>) -> Result<Eligible, SkipReason> {
    let front = &article.front;
    if front.status.as_deref() != Some("publish") {
        return Err(SkipReason::NotPublished {
            status: front.status.clone(),
        });
    }
    let slug = front.slug.clone().ok_or(SkipReason::Missing("slug"))?;
    if !is_path_segment(&slug) {
        return Err(SkipReason::BadSlug { slug });
    }
    let url = cx.site.article_url(&slug);
    if let Some(declared) = &front.declared_url
        && !same_url(declared, &url)
    {
        return Err(SkipReason::UrlMismatch {
            declared: declared.clone(),
            url,
        });
    }
    if let Some(other) = cx
        .slug_owners
        .get(slug.as_str())
        .and_then(|owners| owners.iter().find(|p| **p != article.path))
    {
        return Err(SkipReason::DuplicateSlug {
            slug,
            other: (*other).to_owned(),
        });
    }
    let title = front.title.clone().ok_or(SkipReason::Missing("title"))?;
    let description = front
        .description
        .clone()
        .ok_or(SkipReason::Missing("description"))?;
    if front.fact_checked.is_none() {
        return Err(SkipReason::Missing("fact_checked"));
    }
    let reuse_after = cx.site.reuse_after;
    if let Some(at) = cx.last_used
        && at + reuse_after.as_chrono() > cx.now
    {
        return Err(SkipReason::RecentlyUsed {
            channel: cx.channel.name.clone(),
            at,
            reuse_after,
        });
    }
    let mut media = Vec::new();
    if let Some(prefix) = cx
        .media_prefix
        .filter(|_| cx.channel.kind == ChannelKind::Instagram)
    {
        let image = front
            .image
            .clone()
            .or_else(|| article.body_image.clone())
            .ok_or(SkipReason::NoImage)?;
        let resolved = url::Url::parse(&url)
            .and_then(|base| base.join(&image.src))
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| SkipReason::BadImageUrl {
                src: image.src.clone(),
            })?
            .to_string();
        if !under_prefix(&resolved, prefix) {
            return Err(SkipReason::ImageOffSite {
                url: resolved,
                prefix: prefix.to_owned(),
            });
        }
        if !is_jpeg_url(&resolved) {
            return Err(SkipReason::ImageNotJpegUrl { url: resolved });
        }
        media.push(Media::new(resolved, image.alt.clone()));
    }
    let fields = Fields {
        title: title.clone(),
        description,
        url: url.clone(),
        tags: front.tags.clone(),
    };
    let text = cx
        .compose
        .template
        .render(&fields, &cx.channel.policy.required);
    let mut content = PostContent {
        channel: cx.channel.name.clone(),
        // Article channels (WordPress) need a title; others carry it in the text.
        title: cx.channel.policy.require_title.then(|| title.clone()),
        text,
        media,
        more: vec![],
        first_comment: None,
        link: None,
        source: Some(Source {
            path: article.path.clone(),
            sha256: article.sha256.clone(),
            updated: front.updated.clone(),
        }),
    };
    // A template with `---` lines makes a thread on a channel that takes threads
    // (docs/sites.md#templates); the article's image stays with the first part.
    if cx.channel.policy.max_parts > 1
        && let Ok(parts) =
            airlock_core::thread::parse_thread(&cx.compose.template.render(&fields, &[]))
        && parts.len() > 1
    {
        let media = std::mem::take(&mut content.media);
        content.set_parts(parts);
        content.media.extend(media);
        // Required phrases go with the first part, which always goes out.
        for phrase in &cx.channel.policy.required {
            if !phrase.is_empty() && !content.text.contains(phrase.as_str()) {
                content.text = format!("{}\n{phrase}", content.text);
            }
        }
    }
    let violations = cx.channel.policy.check(&content);
    if !violations.is_empty() {
        return Err(SkipReason::Policy(violations));
    }
    Ok(Eligible {
        slug,
        path: article.path.clone(),
        url,
        title,
        image: content.media.first().map(|m| m.url.clone()),
        content,
        last_used: cx.last_used,
    })
}

/// Rule 8 for every pending article, at most `concurrency` requests at a time; results
/// keep the pending order. With `first_only`, checks `concurrency` articles at a time in
/// order and stops after the batch holding the first that passes, returning only that one.
async fn check_in_order(
    pending: Vec<Eligible>,
    checker: &Checker,
    first_only: bool,
) -> (Vec<Eligible>, Vec<Skipped>) {
    let concurrency = checker.settings().concurrency.max(1);
    if !first_only {
        let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(concurrency));
        return split(check_all(pending, checker, Some(permits)).await);
    }
    let mut eligible = Vec::new();
    let mut skipped = Vec::new();
    let mut pending = pending.into_iter().peekable();
    while pending.peek().is_some() {
        let batch: Vec<Eligible> = pending.by_ref().take(concurrency).collect();
        let (passed, failed) = split(check_all(batch, checker, None).await);
        skipped.extend(failed);
        if let Some(first) = passed.into_iter().next() {
            eligible.push(first);
            break;
        }
    }
    (eligible, skipped)
}

/// Checks every article at once (or as `permits` allow), in the order given.
async fn check_all(
    pending: Vec<Eligible>,
    checker: &Checker,
    permits: Option<std::sync::Arc<tokio::sync::Semaphore>>,
) -> Vec<Result<Eligible, Skipped>> {
    let mut tasks = tokio::task::JoinSet::new();
    for (idx, candidate) in pending.into_iter().enumerate() {
        let checker = checker.clone();
        let permits = permits.clone();
        tasks.spawn(async move {
            let _permit = match &permits {
                Some(permits) => Some(
                    permits
                        .acquire()
                        .await
                        .expect("the semaphore is never closed"),
                ),
                None => None,
            };
            (idx, check_one(&checker, candidate).await)
        });
    }
    let mut results = Vec::new();
    while let Some(done) = tasks.join_next().await {
        results.push(done.expect("a HEAD check does not panic"));
    }
    results.sort_by_key(|(idx, _)| *idx);
    results.into_iter().map(|(_, result)| result).collect()
}

fn split(results: Vec<Result<Eligible, Skipped>>) -> (Vec<Eligible>, Vec<Skipped>) {
    let mut eligible = Vec::new();
    let mut skipped = Vec::new();
    for result in results {
        match result {
            Ok(candidate) => eligible.push(candidate),
            Err(skip) => skipped.push(skip),
        }
    }
    (eligible, skipped)
}

async fn check_one(checker: &Checker, candidate: Eligible) -> Result<Eligible, Skipped> {
    let skip = |reason| Skipped {
        path: candidate.path.clone(),
        reason,
    };
    if let Err(failure) = checker.check(&candidate.url, Expect::Page).await {
        return Err(skip(SkipReason::Page {
            url: candidate.url.clone(),
            failure,
        }));
    }
    if let Some(image) = &candidate.image
        && let Err(failure) = checker.check(image, Expect::Jpeg).await
    {
        return Err(skip(SkipReason::Image {
            url: image.clone(),
            failure,
        }));
    }
    Ok(candidate)
}

fn check_base_url(site: &crate::SiteSettings) -> Result<()> {
    match url::Url::parse(&site.base_url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => Ok(()),
        _ => Err(Error::Invalid(format!(
            "site {}: base_url {:?} is not an absolute http(s) URL",
            site.name, site.base_url
        ))),
    }
}

/// One URL path segment: ASCII letters, digits, `-` and `_`.
fn is_path_segment(slug: &str) -> bool {
    !slug.is_empty()
        && slug
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A declared `url`/`permalink` (absolute, or a path) names `url`, ignoring a trailing slash.
fn same_url(declared: &str, url: &str) -> bool {
    let declared = declared.trim();
    let trimmed = |s: &str| s.trim_end_matches('/').to_owned();
    if declared.starts_with('/') {
        return url::Url::parse(url).is_ok_and(|u| trimmed(u.path()) == trimmed(declared));
    }
    trimmed(declared) == trimmed(url)
}

/// `updated` as an instant for ordering: RFC 3339, `YYYY-MM-DD HH:MM[:SS]` or a date (UTC).
fn parse_updated(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(at) = NaiveDateTime::parse_from_str(text, format) {
            return Some(at.and_utc());
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .map(|d| d.and_time(chrono::NaiveTime::MIN).and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_must_be_one_path_segment() {
        assert!(is_path_segment("neko-no-yado_2"));
        for bad in ["", "a/b", "猫", "a b", "a?b", ".."] {
            assert!(!is_path_segment(bad), "{bad}");
        }
    }

    #[test]
    fn media_prefixes_compare_as_urls_not_as_text() {
        for prefix in ["https://inn.example", "https://inn.example/"] {
            assert!(
                under_prefix("https://inn.example/a.jpg", prefix),
                "{prefix}"
            );
            // User info before another host, and a longer host name, are not the site.
            assert!(!under_prefix(
                "https://inn.example@other.example/a.jpg",
                prefix
            ));
            assert!(!under_prefix("https://inn.example.evil/a.jpg", prefix));
            assert!(!under_prefix("https://inn.example:8443/a.jpg", prefix));
            assert!(!under_prefix("http://inn.example/a.jpg", prefix));
        }
        for prefix in [
            "https://inn.example/wp-content/uploads",
            "https://inn.example/wp-content/uploads/",
        ] {
            assert!(under_prefix(
                "https://inn.example/wp-content/uploads/2026/mochi.jpg",
                prefix
            ));
            assert!(!under_prefix(
                "https://inn.example/wp-content/uploads-other/mochi.jpg",
                prefix
            ));
            assert!(!under_prefix("https://inn.example/mochi.jpg", prefix));
        }
        assert!(under_prefix(
            "https://inn.example:443/a.jpg",
            "https://inn.example/"
        ));
    }

    #[test]
    fn declared_urls_match_with_or_without_a_trailing_slash() {
        let url = "https://inn.example/blog/neko/";
        assert!(same_url("https://inn.example/blog/neko", url));
        assert!(same_url("/blog/neko/", url));
        assert!(!same_url("/neko/", url));
        assert!(!same_url("https://other.example/blog/neko/", url));
    }

    #[test]
    fn updated_reads_dates_and_times() {
        assert!(parse_updated("2026-11-20") < parse_updated("2026-11-20 09:00"));
        assert!(parse_updated("2026-11-20T09:00:00+09:00") < parse_updated("2026-11-20T09:00:00Z"));
        assert_eq!(parse_updated("last week"), None);
    }
}
