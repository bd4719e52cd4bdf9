//! `wordpress`: articles through the WordPress REST API, per docs/platforms.md#wordpress.
//!
//! A post's path through the adapter:
//! 1. [`Platform::account`]: `GET /wp-json/wp/v2/users/me?context=edit`. The account name
//!    is the user's `slug` (the name in its author URL), which the channel's `account` is
//!    compared with.
//! 2. [`Platform::prepare`] (repeatable): looks for airlock's own article of this post,
//!    by the idempotency key every article airlock makes carries (an HTML comment
//!    `<!-- airlock:KEY -->` at the end of its content), with an authenticated search in
//!    every status, trash included, every page of it. An article carrying this attempt's
//!    key, or an earlier attempt's (the content approved before), is this post, published
//!    by that attempt: nothing is sent and the post is settled as published. Slugs are
//!    never used to find anything: WordPress renames them (a taken slug, an all-digit one,
//!    `feed`, `embed` get `-2`).
//! 3. [`Platform::publish`] (irreversible, once): `POST /wp-json/wp/v2/posts` with the
//!    title, the text rendered from Markdown to HTML with the key comment, `status:
//!    "publish"` and a slug made from the title. The permalink is the answer's `link`, in
//!    whatever slug WordPress chose.
//! 4. [`Platform::verify`]: reads the article back, checks it is published, and checks
//!    that its key comment survived and the site's search finds it — without that, an
//!    unknown outcome on this channel could only be settled by a person, and a failed
//!    verification says so.
//! 5. [`Platform::reconcile`]: the same search by the intent's key. An article carrying it
//!    proves the publish happened; finding none proves nothing (the request may still be
//!    on its way), so the post waits for a person.
//!
//! Authentication is HTTP Basic with an application password, in the header only. The
//! title is sent as HTML text (`&`, `<`, `>` escaped), raw HTML in the Markdown is shown
//! as text, not passed through, and links with schemes other than
//! http, https and mailto are dropped: an agent's draft must not inject markup or scripts
//! into the site. Categories, tags, excerpts and featured images are not set.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use airlock_core::{ChannelKind, ChannelName, Outcome, PostId, Published};

use crate::http::{
    Answer, Redactor, StatusTable, check_base_url, describe_transport, endpoint, id_string, send,
    transport_failure,
};
use crate::kind::{Common, KindConfig, read_token};
use crate::{
    Account, Evidence, Platform, Prepared, Proof, PublishRequest, ReconcileRequest, SettingsError,
    StepError, Verification,
};

/// How a `wordpress` channel reaches its site. Built from the channel's table
/// ([`WordpressConfig`]).
#[derive(Debug, Clone)]
pub struct WordpressSettings {
    /// The site's address (`https://blog.example`, or with a path for a site in a
    /// subdirectory); tests point it at a fake.
    pub base_url: String,
    /// The WordPress login name the application password belongs to.
    pub username: String,
    /// The application password (Users → Profile → Application Passwords).
    pub app_password: SecretString,
    /// Bound on each request, the irreversible one included.
    pub request_timeout: StdDuration,
    /// Address the API as `/?rest_route=/wp/v2/…`, for sites without pretty permalinks
    /// (where `/wp-json/` does not exist).
    pub rest_route: bool,
}

impl WordpressSettings {
    /// Settings with the defaults: 30 s requests, `/wp-json/` routing.
    pub fn new(base_url: String, username: String, app_password: SecretString) -> Self {
        WordpressSettings {
            base_url,
            username,
            app_password,
            request_timeout: StdDuration::from_secs(30),
            rest_route: false,
        }
    }
}

/// A `wordpress` channel.
#[derive(Debug)]
pub struct Wordpress {
    base_url: String,
    username: String,
    app_password: SecretString,
    client: reqwest::Client,
    timeout: StdDuration,
    rest_route: bool,
    redactor: Redactor,
}

/// Every status an article can be in: an article airlock made and someone later moved
/// (unpublished, trashed) was still made.
const EVERY_STATUS: &str = "publish,future,draft,pending,private,trash";

/// The key in an article's content, from its key comment.
fn key_in(content: &str) -> Option<&str> {
    let start = content.find("<!-- airlock:")? + "<!-- airlock:".len();
    let end = content[start..].find(" -->")?;
    Some(&content[start..start + end])
}

/// Search pages read when looking an article up by its key (100 articles each): far more
/// than articles can share an airlock key's text.
const MAX_LOOKUP_PAGES: u32 = 20;

/// The comment every article airlock makes carries, so it can be found by its key.
pub fn key_marker(idempotency_key: &str) -> String {
    format!("<!-- airlock:{idempotency_key} -->")
}

const CREDENTIAL_HINT: &str = "the application password was refused or lacks a capability (some hosts strip the Authorization header): fix the credential file or the user's role, then resume the channel";

/// WordPress answers by the outcome table, with its credential hint.
const STATUSES: StatusTable = StatusTable {
    credential_hint: Some(CREDENTIAL_HINT),
    ..StatusTable::PLAIN
};

/// An article found by slug.
#[derive(Debug, Clone)]
struct Found {
    id: String,
    slug: String,
    status: String,
    title: String,
    /// The raw content (`context=edit`), where the key comment is.
    content: String,
    link: Option<String>,
}

impl Found {
    fn from_json(value: &Value) -> Option<Found> {
        let title = &value["title"];
        Some(Found {
            id: id_string(value.get("id"))?,
            slug: value["slug"].as_str().unwrap_or("").to_owned(),
            status: value["status"].as_str().unwrap_or("").to_owned(),
            title: title["raw"]
                .as_str()
                .or_else(|| title["rendered"].as_str())
                .or_else(|| title.as_str())
                .unwrap_or("")
                .to_owned(),
            content: value["content"]["raw"]
                .as_str()
                .or_else(|| value["content"]["rendered"].as_str())
                .unwrap_or("")
                .to_owned(),
            link: value["link"]
                .as_str()
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
        })
    }

    fn describe(&self) -> String {
        format!(
            "article {} {:?} ({}, slug {:?}{})",
            self.id,
            crate::http::truncate(&self.title, 80),
            self.status,
            self.slug,
            self.link
                .as_deref()
                .map(|l| format!(", {l}"))
                .unwrap_or_default()
        )
    }
}

/// The slug airlock asks for: the title in lowercase ASCII letters and digits joined by
/// hyphens, at most 60 characters; `post-<id>` when nothing is left of the title.
pub fn slug_for(title: &str, post_id: PostId) -> String {
    let mut slug = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            if slug.len() >= 60 {
                break;
            }
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        format!("post-{}", post_id.0)
    } else {
        slug.to_owned()
    }
}

/// A title as HTML text: `&`, `<` and `>` escaped, so markup an agent wrote shows as
/// text and never runs on the site. Quotes stay: a title is element text, and themes
/// escape it themselves where it lands in an attribute.
fn escape_title(title: &str) -> String {
    title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Whether a link target is harmless: http, https, mailto, or relative.
fn safe_url(url: &str) -> bool {
    let scheme_end = url.find(':');
    let path_start = url.find(['/', '?', '#']);
    match (scheme_end, path_start) {
        (None, _) => true,
        (Some(colon), Some(path)) if path < colon => true,
        (Some(colon), _) => {
            let scheme = url[..colon].to_ascii_lowercase();
            matches!(scheme.as_str(), "http" | "https" | "mailto")
        }
    }
}

/// Renders the post's Markdown (CommonMark with tables, footnotes, strikethrough and task
/// lists) to HTML, showing raw HTML as text and dropping unsafe link targets.
pub fn render_markdown(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        Event::Start(Tag::HtmlBlock) => Event::Start(Tag::Paragraph),
        Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::Paragraph),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) if !safe_url(&dest_url) => Event::Start(Tag::Link {
            link_type,
            dest_url: CowStr::Borrowed("#"),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) if !safe_url(&dest_url) => Event::Start(Tag::Image {
            link_type,
            dest_url: CowStr::Borrowed("#"),
            title,
            id,
        }),
        event => event,
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// The article body: the rendered text, then the post's images and its link (when the
/// text does not already carry it).
fn article_html(req: &PublishRequest) -> String {
    let mut html = render_markdown(&req.text);
    for media in &req.media {
        if !safe_url(&media.url) {
            continue;
        }
        html.push_str(&format!(
            "<figure><img src=\"{}\" alt=\"{}\" /></figure>\n",
            escape_html(&media.url),
            escape_html(media.alt.as_deref().unwrap_or(""))
        ));
    }
    if let Some(link) = req.link.as_deref().filter(|l| !l.is_empty())
        && !req.text.contains(link)
        && safe_url(link)
    {
        let link = escape_html(link);
        html.push_str(&format!("<p><a href=\"{link}\">{link}</a></p>\n"));
    }
    html.push_str(&key_marker(&req.idempotency_key));
    html.push('\n');
    html
}

impl Wordpress {
    /// An adapter with these settings; refuses a `base_url` that could leak the password
    /// and an empty user name.
    pub fn new(
        settings: WordpressSettings,
        client: reqwest::Client,
    ) -> Result<Self, SettingsError> {
        let base_url = check_base_url(&settings.base_url)?;
        if settings.username.trim().is_empty() || settings.username.contains(':') {
            return Err(SettingsError::Invalid {
                setting: "username",
                value: settings.username,
                problem: "is not a WordPress login name: give the user the application password belongs to",
            });
        }
        Ok(Wordpress {
            base_url,
            username: settings.username.trim().to_owned(),
            redactor: Redactor::basic(settings.username.trim(), &settings.app_password),
            app_password: settings.app_password,
            client,
            timeout: settings.request_timeout,
            rest_route: settings.rest_route,
        })
    }

    /// The URL of a `wp/v2` route, in the site's routing style.
    fn url(&self, route: &[&str], query: &[(&str, &str)]) -> String {
        if self.rest_route {
            let route = format!("/wp/v2/{}", route.join("/"));
            let mut pairs = vec![("rest_route", route.as_str())];
            pairs.extend_from_slice(query);
            // A trailing slash: `/blog?rest_route=` would be redirected to `/blog/`.
            endpoint(&self.base_url, &[""], &pairs)
        } else {
            let mut segments = vec!["wp-json", "wp", "v2"];
            segments.extend_from_slice(route);
            endpoint(&self.base_url, &segments, query)
        }
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .basic_auth(&self.username, Some(self.app_password.expose_secret()))
            .timeout(self.timeout)
    }

    fn summary(&self, what: &str, answer: &Answer) -> String {
        let body = answer.json().unwrap_or(Value::Null);
        let code = body["code"].as_str().unwrap_or("");
        let message = body["message"].as_str().map(str::trim).unwrap_or("");
        let detail = match (code, message) {
            ("", "") => String::new(),
            (code, "") => format!(", {code}"),
            ("", message) => format!(": {}", self.redactor.excerpt(message, 160)),
            (code, message) => format!(", {code}: {}", self.redactor.excerpt(message, 160)),
        };
        self.redactor.summary(&format!(
            "wordpress: {what}: HTTP {}{detail}",
            answer.status
        ))
    }

    fn transport_summary(&self, what: &str, err: &reqwest::Error) -> String {
        self.redactor
            .summary(&format!("wordpress: {what}: {}", describe_transport(err)))
    }

    /// A failed repeatable read.
    fn step_error(&self, what: &str, answer: &Answer) -> StepError {
        let reason = self.summary(what, answer);
        match answer.status {
            404 => StepError::Rejected {
                reason: format!(
                    "{reason}: the REST API is not at this address; check base_url (or set rest_route for sites without pretty permalinks)"
                ),
                credential: false,
            },
            _ => STATUSES.step_error(answer, reason),
        }
    }

    async fn get_json(
        &self,
        what: &str,
        route: &[&str],
        query: &[(&str, &str)],
    ) -> Result<Value, StepError> {
        self.get_page(what, route, query)
            .await
            .map(|(value, _)| value)
    }

    /// A `GET` and the `X-WP-TotalPages` of its answer (1 when absent).
    async fn get_page(
        &self,
        what: &str,
        route: &[&str],
        query: &[(&str, &str)],
    ) -> Result<(Value, u32), StepError> {
        let request = self.authorized(self.client.get(self.url(route, query)));
        let answer = send(request)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        if !answer.is_success() {
            return Err(self.step_error(what, &answer));
        }
        let pages = answer
            .headers
            .get("x-wp-totalpages")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(1);
        let value = answer.json().ok_or_else(|| {
            StepError::transient(format!(
                "wordpress: {what}: HTTP {} with an answer that is not JSON",
                answer.status
            ))
        })?;
        Ok((value, pages))
    }

    /// airlock's own article carrying `key`, if there is one, in any status: every page of
    /// core's search for the key, each candidate checked for the exact key comment.
    async fn find_by_key(&self, key: &str) -> Result<Option<Found>, StepError> {
        let what = "article lookup by key";
        let marker = key_marker(key);
        let mut page = 1;
        loop {
            let page_number = page.to_string();
            let (answer, pages) = self
                .get_page(
                    what,
                    &["posts"],
                    &[
                        ("search", key),
                        ("status", EVERY_STATUS),
                        ("context", "edit"),
                        ("per_page", "100"),
                        ("page", &page_number),
                    ],
                )
                .await?;
            let Some(items) = answer.as_array() else {
                return Err(StepError::transient(format!(
                    "wordpress: {what}: the answer is not a list of articles"
                )));
            };
            for item in items {
                let found = Found::from_json(item).ok_or_else(|| {
                    StepError::transient(format!(
                        "wordpress: {what}: an article in the answer has no id"
                    ))
                })?;
                if found.content.contains(&marker) {
                    return Ok(Some(found));
                }
            }
            if page >= pages.min(MAX_LOOKUP_PAGES) {
                return Ok(None);
            }
            page += 1;
        }
    }

    fn publish_failure(&self, answer: &Answer) -> Outcome {
        STATUSES.outcome(answer, self.summary("create article", answer))
    }
}

fn title_of(req: &PublishRequest) -> Option<&str> {
    req.title
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

#[async_trait]
impl Platform for Wordpress {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Wordpress
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        let me = self
            .get_json("identity read", &["users", "me"], &[("context", "edit")])
            .await?;
        let slug = me["slug"]
            .as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| StepError::transient("wordpress: users/me answered without a slug"))?;
        Ok(Some(Account {
            username: slug.to_owned(),
            id: id_string(me.get("id")),
        }))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0))]
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        let Some(title) = title_of(req) else {
            return Err(StepError::Rejected {
                reason: "wordpress: an article needs a title; add one, then approve again".into(),
                credential: false,
            });
        };
        if let Some(found) = self.find_by_key(&req.idempotency_key).await? {
            return Ok(Prepared {
                platform_ref: None,
                already_published: Some(Proof {
                    platform_post_id: Some(found.id.clone()),
                    permalink: found.link.clone(),
                    note: format!(
                        "wordpress: {} carries this post's key {}: an earlier attempt made it",
                        found.describe(),
                        req.idempotency_key
                    ),
                    attempt: crate::latest_attempt(&req.earlier, |a| {
                        a.idempotency_key == req.idempotency_key
                    }),
                }),
            });
        }
        let mut older_keys: Vec<&str> = req
            .earlier
            .iter()
            .map(|a| a.idempotency_key.as_str())
            .filter(|k| *k != req.idempotency_key)
            .collect();
        older_keys.dedup();
        for key in older_keys {
            if let Some(found) = self.find_by_key(key).await? {
                // The post is on the site, in the form approved before: it went out once,
                // and must not go out again.
                return Ok(Prepared {
                    platform_ref: None,
                    already_published: Some(Proof {
                        platform_post_id: Some(found.id.clone()),
                        permalink: found.link.clone(),
                        note: format!(
                            "wordpress: {} carries the key {key} of an earlier attempt, with the content approved before: the post is on the site in that form; edit it there if it must change",
                            found.describe()
                        ),
                        attempt: crate::latest_attempt(&req.earlier, |a| a.idempotency_key == key),
                    }),
                });
            }
        }
        Ok(Prepared::with_ref(slug_for(title, req.post_id)))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0))]
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        let (Some(slug), Some(title)) = (prepared.platform_ref.as_deref(), title_of(req)) else {
            return Outcome::NotSent {
                reason:
                    "wordpress: no slug was prepared or the post has no title; nothing was sent"
                        .into(),
                retry_after: None,
            };
        };
        let body = json!({
            // WordPress stores and shows the title as HTML: send it as text.
            "title": escape_title(title),
            "content": article_html(req),
            "status": "publish",
            "slug": slug,
        });
        let request = self
            .authorized(self.client.post(self.url(&["posts"], &[])))
            .header("content-type", "application/json")
            .body(body.to_string());
        let answer = match send(request).await {
            Ok(answer) => answer,
            Err(e) => {
                return transport_failure(&e).outcome(self.transport_summary("create article", &e));
            }
        };
        if !answer.is_success() {
            return self.publish_failure(&answer);
        }
        // A 2xx whose body broke off or cannot be read is still a publish.
        let found = answer.json().as_ref().and_then(Found::from_json);
        if let Some(found) = &found
            && found.slug != slug
        {
            tracing::warn!(
                requested = slug,
                chosen = %found.slug,
                "wordpress: the slug collided; WordPress renamed it and the permalink carries the new name"
            );
        }
        Outcome::Published(Published {
            platform_post_id: found.as_ref().map(|f| f.id.clone()),
            permalink: found.and_then(|f| f.link),
            pause: None,
            existing: None,
        })
    }

    async fn verify(&self, platform_post_id: &str) -> Verification {
        if platform_post_id.is_empty() || !platform_post_id.bytes().all(|b| b.is_ascii_digit()) {
            return Verification::Failed {
                reason: format!("wordpress: {platform_post_id:?} is not an article id"),
            };
        }
        let answer = match self
            .get_json(
                "read back",
                &["posts", platform_post_id],
                &[("context", "edit")],
            )
            .await
        {
            Ok(answer) => answer,
            Err(e) => {
                return Verification::Failed {
                    reason: e.to_string(),
                };
            }
        };
        match Found::from_json(&answer) {
            Some(found) if found.id == platform_post_id && found.status == "publish" => {
                // Proof of an unknown outcome depends on finding articles by their key:
                // check that this site keeps the key comment and its search finds it
                // (search plugins replace core's search; some strip comments).
                let findable = match key_in(&found.content) {
                    None => Err("its content lost airlock's key comment".to_owned()),
                    Some(key) => match self.find_by_key(key).await {
                        Ok(Some(hit)) if hit.id == found.id => Ok(()),
                        Ok(_) => Err(format!("the site's search does not find its key {key}")),
                        Err(e) => Err(format!("looking its key up failed: {e}")),
                    },
                };
                match findable {
                    Ok(()) => Verification::Verified {
                        permalink: found.link,
                    },
                    Err(why) => Verification::Failed {
                        reason: format!(
                            "wordpress: {} is published, but {why}: an unknown outcome on this channel could not be settled by proof, only by a person (check search or security plugins)",
                            found.describe()
                        ),
                    },
                }
            }
            Some(found) => Verification::Failed {
                reason: format!("wordpress: read back {}, not published", found.describe()),
            },
            None => Verification::Failed {
                reason: format!(
                    "wordpress: reading article {platform_post_id} back returned no id"
                ),
            },
        }
    }

    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        match self.find_by_key(&req.publish.idempotency_key).await {
            Ok(Some(found)) => Evidence::Published(Proof {
                platform_post_id: Some(found.id.clone()),
                permalink: found.link.clone(),
                note: format!(
                    "wordpress: {} carries this attempt's key {}",
                    found.describe(),
                    req.publish.idempotency_key
                ),
                attempt: None,
            }),
            Ok(None) => Evidence::NoProof,
            Err(e) => {
                tracing::warn!(reason = %e, "reconcile: wordpress lookup by key failed");
                Evidence::NoProof
            }
        }
    }
}

/// `kind = "wordpress"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WordpressConfig {
    /// The application password's file (0600).
    pub token_file: PathBuf,
    /// The user slug the password must belong to.
    pub account: String,
    /// The site's address.
    pub base_url: String,
    /// The login name the application password belongs to.
    pub username: String,
    /// Route requests through `/?rest_route=` (sites without pretty permalinks).
    #[serde(default)]
    pub rest_route: bool,
}

impl KindConfig for WordpressConfig {
    crate::kind::token_keys!(base_url: required);

    fn build(&self, _: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String> {
        let timeout = common.request_timeout.as_std();
        let mut settings = WordpressSettings::new(
            self.base_url.clone(),
            self.username.clone(),
            read_token(&self.token_file)?,
        );
        settings.request_timeout = timeout;
        settings.rest_route = self.rest_route;
        let wordpress = Wordpress::new(settings, crate::http::client(timeout));
        Ok(Arc::new(wordpress.map_err(|e| e.to_string())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_come_from_the_title_or_the_post_id() {
        assert_eq!(
            slug_for("Cats' Own Pace: A Guide!", PostId(7)),
            "cats-own-pace-a-guide"
        );
        assert_eq!(slug_for("  --Hello   World--  ", PostId(7)), "hello-world");
        assert_eq!(slug_for("猫の宿", PostId(7)), "post-7");
        let long = slug_for(&"word ".repeat(40), PostId(1));
        assert!(long.len() <= 60 && !long.ends_with('-'), "{long}");
    }

    #[test]
    fn markdown_renders_and_raw_html_is_shown_as_text() {
        let html = render_markdown(
            "# Title\n\nSome *cats* and a [link](https://inn.example/).\n\n<script>alert(1)</script>\n\nInline <b>bold</b>.",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<em>cats</em>"), "{html}");
        assert!(
            html.contains("<a href=\"https://inn.example/\">link</a>"),
            "{html}"
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
    }

    #[test]
    fn unsafe_link_targets_are_dropped() {
        let html =
            render_markdown("[x](javascript:alert(1)) [y](/relative) [z](mailto:a@b.example)");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("href=\"/relative\""), "{html}");
        assert!(html.contains("href=\"mailto:a@b.example\""), "{html}");
    }

    #[test]
    fn titles_are_sent_as_html_text() {
        assert_eq!(
            escape_title("<b>Cats</b> & Dogs' day"),
            "&lt;b&gt;Cats&lt;/b&gt; &amp; Dogs' day"
        );
    }
}
