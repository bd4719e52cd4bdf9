//! A fake of the WordPress REST API (`wp/v2`), reachable both as `/wp-json/wp/v2/…` and as
//! `/?rest_route=/wp/v2/…`.
//!
//! - HTTP Basic with an application password: a wrong password answers 401
//!   `incorrect_password`, no credentials 401 `rest_not_logged_in`; a user without the
//!   `publish_posts` capability gets 403 `rest_cannot_publish`.
//! - `POST posts` gives ids from a counter and renames slugs the way core's
//!   `wp_unique_post_slug` does: a slug held by another article in any status, an
//!   all-digit slug (it would clash with date archives), and the reserved `feed` names and
//!   `embed` get `-2`, `-3`, … appended. It builds `link` from the stored slug and answers
//!   201 with `Location`.
//! - `GET posts?slug=` and `GET posts?search=` (every word in the title or the raw
//!   content, as core searches) answer a list, newest first, 10 per page unless
//!   `per_page` says otherwise (with `X-WP-Total` and `X-WP-TotalPages`); statuses other
//!   than `publish` need credentials (`rest_invalid_param` otherwise).
//! - `strip_comments` acts out a security plugin that strips HTML comments from content.
//! - `GET posts/{id}` and `GET users/me`.
//! - [`PublishMode`] acts out lost answers.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{MockServer, Request, Respond, ResponseTemplate};

use crate::fake::{ANY, Fake, mount_routes, query};
use crate::{CANARY, base64};

/// The login name the application password belongs to.
pub const USERNAME: &str = "editor";
/// The user's slug, which the account check compares.
pub const USER_SLUG: &str = "inn-editor";

/// How the create endpoint behaves.
pub use crate::fake::CreateMode as PublishMode;

/// One article.
#[derive(Debug, Clone)]
pub struct Article {
    /// Its id.
    pub id: u64,
    /// Its slug.
    pub slug: String,
    /// Its status.
    pub status: String,
    /// Its title as stored.
    pub title: String,
    /// Its HTML content.
    pub content: String,
}

/// The fake's state.
#[derive(Debug)]
pub struct State {
    /// The site's address, for links.
    pub site: String,
    /// The user's slug.
    pub user_slug: String,
    /// The user may publish.
    pub can_publish: bool,
    /// How the create endpoint behaves.
    pub publish_mode: PublishMode,
    /// Strip HTML comments from created content, as some security plugins do.
    pub strip_comments: bool,
    /// The articles.
    pub articles: Vec<Article>,
    next_id: u64,
}

impl State {
    /// Adds an article as someone else would have.
    pub fn add(&mut self, slug: &str, title: &str, status: &str) -> u64 {
        self.add_with_content(slug, title, status, "<p>earlier</p>")
    }

    /// Adds an article with this content (say, the key comment of an earlier attempt).
    pub fn add_with_content(
        &mut self,
        slug: &str,
        title: &str,
        status: &str,
        content: &str,
    ) -> u64 {
        self.next_id += 1;
        self.articles.push(Article {
            id: self.next_id,
            slug: slug.into(),
            status: status.into(),
            title: title.into(),
            content: content.into(),
        });
        self.next_id
    }

    /// The slug core would store for `wanted`: taken slugs (any status), all-digit slugs
    /// and the reserved feed names get `-2`, `-3`, … until the result is free.
    pub fn unique_slug(&self, wanted: &str) -> String {
        let reserved = |slug: &str| {
            matches!(slug, "feed" | "rdf" | "rss" | "rss2" | "atom" | "embed")
                || (!slug.is_empty() && slug.bytes().all(|b| b.is_ascii_digit()))
        };
        let taken = |slug: &str| self.articles.iter().any(|a| a.slug == slug);
        if !reserved(wanted) && !taken(wanted) {
            return wanted.to_owned();
        }
        (2..)
            .map(|n| format!("{wanted}-{n}"))
            .find(|slug| !taken(slug))
            .expect("some suffix is free")
    }

    fn json(&self, article: &Article) -> Value {
        json!({
            "id": article.id,
            "date": "2026-09-01T08:00:00",
            "slug": article.slug,
            "status": article.status,
            "type": "post",
            "link": format!("{}/{}/", self.site, article.slug),
            "title": {"raw": article.title, "rendered": article.title.replace('&', "&#038;")},
            "content": {"raw": article.content, "rendered": article.content, "protected": false},
            "author": 3,
        })
    }
}

/// The content as stored: without HTML comments when a plugin strips them.
fn strip(content: &str, comments: bool) -> String {
    if !comments {
        return content.to_owned();
    }
    let mut out = String::new();
    let mut rest = content;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find("-->")
            .map(|end| &rest[start + end + 3..])
            .unwrap_or("");
    }
    out.push_str(rest);
    out
}

fn error(status: u16, code: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "code": code,
        "message": message,
        "data": {"status": status},
    }))
}

/// Who a request authenticates as.
enum Caller {
    /// No credentials.
    Anonymous,
    /// The right user and application password.
    User,
    /// Credentials that do not match: the answer to give.
    Refused(ResponseTemplate),
}

fn authenticate(request: &Request) -> Caller {
    let Some(header) = request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
    else {
        return Caller::Anonymous;
    };
    if header
        == format!(
            "Basic {}",
            base64(format!("{USERNAME}:{CANARY}").as_bytes())
        )
    {
        Caller::User
    } else {
        Caller::Refused(error(
            401,
            "incorrect_password",
            "The provided password is an invalid application password.",
        ))
    }
}

/// The `wp/v2` route of a request, in either routing style, and its other query pairs.
pub fn route(request: &Request) -> Option<String> {
    if let Some(rest) = request.url.path().strip_prefix("/wp-json/wp/v2/") {
        return Some(rest.trim_end_matches('/').to_owned());
    }
    let (_, route) = request.url.query_pairs().find(|(k, _)| k == "rest_route")?;
    route
        .strip_prefix("/wp/v2/")
        .map(|r| r.trim_end_matches('/').to_owned())
}

type Shared = Arc<Mutex<State>>;

/// Whether a `wp/v2` route is the one a mock serves.
type RouteTest = fn(&str) -> bool;

struct Wp(Shared);

impl Respond for Wp {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        let authenticated = match authenticate(request) {
            Caller::Anonymous => false,
            Caller::User => true,
            Caller::Refused(refusal) => return refusal,
        };
        let route = route(request).unwrap_or_default();
        match (request.method.as_str(), route.as_str()) {
            ("GET", "users/me") => {
                if !authenticated {
                    return error(
                        401,
                        "rest_not_logged_in",
                        "You are not currently logged in.",
                    );
                }
                ResponseTemplate::new(200).set_body_json(json!({
                    "id": 3,
                    "username": USERNAME,
                    "name": "Inn Editor",
                    "slug": state.user_slug,
                    "roles": [if state.can_publish { "author" } else { "contributor" }],
                }))
            }
            ("GET", "posts") => {
                let statuses = query(request, "status").unwrap_or_else(|| "publish".into());
                let statuses: Vec<&str> = statuses.split(',').collect();
                if !authenticated && statuses.iter().any(|s| *s != "publish") {
                    return error(400, "rest_invalid_param", "Invalid parameter(s): status");
                }
                let slug = query(request, "slug");
                let search = query(request, "search").unwrap_or_default().to_lowercase();
                let words: Vec<&str> = search.split_whitespace().collect();
                let found: Vec<Value> = state
                    .articles
                    .iter()
                    .rev()
                    .filter(|a| statuses.contains(&a.status.as_str()))
                    .filter(|a| slug.as_deref().is_none_or(|s| a.slug == s))
                    .filter(|a| {
                        let haystack = format!("{} {}", a.title, a.content).to_lowercase();
                        words.iter().all(|w| haystack.contains(w))
                    })
                    .map(|a| state.json(a))
                    .collect();
                // Newest first, 10 per page unless `per_page` (at most 100) says otherwise.
                let per_page = query(request, "per_page")
                    .and_then(|p| p.parse::<usize>().ok())
                    .unwrap_or(10)
                    .clamp(1, 100);
                let page = query(request, "page")
                    .and_then(|p| p.parse::<usize>().ok())
                    .unwrap_or(1)
                    .max(1);
                let pages = found.len().div_ceil(per_page).max(1);
                let shown: Vec<Value> = found
                    .iter()
                    .skip((page - 1) * per_page)
                    .take(per_page)
                    .cloned()
                    .collect();
                ResponseTemplate::new(200)
                    .insert_header("x-wp-total", found.len().to_string().as_str())
                    .insert_header("x-wp-totalpages", pages.to_string().as_str())
                    .set_body_json(shown)
            }
            ("POST", "posts") => {
                if !authenticated {
                    return error(
                        401,
                        "rest_cannot_create",
                        "Sorry, you are not allowed to create posts as this user.",
                    );
                }
                let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
                    return error(400, "rest_invalid_json", "Invalid JSON body passed.");
                };
                let status = body["status"].as_str().unwrap_or("draft").to_owned();
                if status == "publish" && !state.can_publish {
                    return error(
                        403,
                        "rest_cannot_publish",
                        "Sorry, you are not allowed to publish posts as this user.",
                    );
                }
                if let PublishMode::StatusWithoutCreating(code) = state.publish_mode {
                    return ResponseTemplate::new(code)
                        .set_body_string("<html>Service Unavailable</html>");
                }
                let wanted = body["slug"].as_str().unwrap_or("post").to_owned();
                let slug = state.unique_slug(&wanted);
                state.next_id += 1;
                let article = Article {
                    id: state.next_id,
                    slug,
                    status,
                    title: body["title"].as_str().unwrap_or("").to_owned(),
                    content: strip(body["content"].as_str().unwrap_or(""), state.strip_comments),
                };
                let answer = state.json(&article);
                let location = format!("{}/wp-json/wp/v2/posts/{}", state.site, article.id);
                state.articles.push(article);
                let created = ResponseTemplate::new(201)
                    .insert_header("location", location.as_str())
                    .set_body_json(answer);
                state.publish_mode.answer(created, ResponseTemplate::new)
            }
            ("GET", route) if route.starts_with("posts/") => {
                let id = route.trim_start_matches("posts/");
                match state.articles.iter().find(|a| a.id.to_string() == id) {
                    Some(article) if article.status == "publish" || authenticated => {
                        ResponseTemplate::new(200).set_body_json(state.json(article))
                    }
                    _ => error(404, "rest_post_invalid_id", "Invalid post ID."),
                }
            }
            _ => error(
                404,
                "rest_no_route",
                "No route was found matching the URL and request method.",
            ),
        }
    }
}

/// How many calls each route must get in a test ([`crate::fake::meta::ANY`]: any number).
#[derive(Debug, Clone, Copy, Default)]
pub struct Expect {
    /// `GET users/me`.
    pub identity: u64,
    /// `GET posts?slug=` or `GET posts?search=`.
    pub lookup: u64,
    /// `POST posts` (irreversible).
    pub create: u64,
    /// `GET posts/{id}`.
    pub read: u64,
}

/// A running fake.
pub type WordpressFake = Fake<State>;

impl Expect {
    /// Any number of calls to every route (for drills, which assert on the articles).
    pub const ANY: Expect = Expect {
        identity: ANY,
        lookup: ANY,
        create: ANY,
        read: ANY,
    };
}

impl WordpressFake {
    /// Starts a fake expecting these calls.
    pub async fn start(expect: Expect) -> WordpressFake {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            site: server.uri(),
            user_slug: USER_SLUG.into(),
            can_publish: true,
            publish_mode: PublishMode::Normal,
            strip_comments: false,
            articles: Vec::new(),
            next_id: 100,
        }));
        let routes: [(&str, &str, RouteTest, u64); 4] = [
            ("identity", "GET", |r| r == "users/me", expect.identity),
            ("lookup", "GET", |r| r == "posts", expect.lookup),
            (
                "create (irreversible)",
                "POST",
                |r| r == "posts",
                expect.create,
            ),
            ("read back", "GET", |r| r.starts_with("posts/"), expect.read),
        ];
        let routes = routes.map(|(name, verb, matches_route, times)| {
            let matcher = move |request: &Request| {
                request.method.as_str() == verb && route(request).is_some_and(|r| matches_route(&r))
            };
            (name.to_owned(), matcher, Wp(state.clone()), times)
        });
        let unexpected = error(
            404,
            "rest_no_route",
            "No route was found matching the URL and request method.",
        );
        mount_routes(&server, routes, unexpected).await;
        WordpressFake { server, state }
    }
}
