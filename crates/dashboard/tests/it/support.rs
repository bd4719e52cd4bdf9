//! Test harness: an `App` over a real SQLite file in a temp dir with three sandbox
//! channels (`cats` publishes, `drill` acts out an unknown outcome, `strict` a
//! rejection), a steppable clock, a seeded ledger with posts in every state, and a tiny
//! cookie-keeping client that drives the router with `oneshot`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use chrono::Duration;
use chrono_tz::Tz;
use secrecy::ExposeSecret;
use tower::ServiceExt;

use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{App, AppSettings, ChannelSettings, Principal};
use airlock_core::{ChannelKind, ChannelName, Media, PostId, PostStatus, Role, RoleSet};
use airlock_dashboard::{DashboardSettings, router};
use airlock_platforms::Platform;
use airlock_platforms::sandbox::{Sandbox, Simulate};
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;

/// The text every `cats` post carries (none of the sandbox policy's business, but real).
pub const PACE: &str = "Please respect the cats' own pace.";

pub use airlock_testkit::clock::TestClock;

pub fn tokyo() -> Tz {
    "Asia/Tokyo".parse().unwrap()
}

fn name(s: &str) -> ChannelName {
    ChannelName::parse(s).unwrap()
}

/// Ids of the seeded posts, one per interesting state.
#[derive(Debug, Clone, Copy)]
pub struct Seeded {
    /// A draft that passes the policy.
    pub draft: PostId,
    /// Approved, scheduled later today (12:00 JST).
    pub approved: PostId,
    /// Published on `cats`.
    pub posted: PostId,
    /// Two posts on `drill` whose outcome is unknown.
    pub review: [PostId; 2],
    /// Rejected by `strict`.
    pub failed: PostId,
}

/// An app over a fresh SQLite ledger, with the dashboard's router.
pub struct Harness {
    /// Holds the ledger and the sandbox files until the test ends.
    pub _dir: tempfile::TempDir,
    pub clock: TestClock,
    pub app: App,
    pub seeded: Seeded,
    /// An operator token's secret.
    pub operator: String,
    /// A writer token's secret.
    pub writer: String,
}

impl Harness {
    /// A seeded ledger with an operator and a writer token.
    pub async fn new() -> Self {
        Self::with(|_| {}).await
    }

    /// [`Harness::new`] with settings `configure` changes first (channel rules, more
    /// channels); a channel it adds publishes through a sandbox that succeeds.
    pub async fn with(configure: impl FnOnce(&mut AppSettings)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(
            SqliteStore::open(&dir.path().join("airlock.db"))
                .await
                .unwrap(),
        );
        let mut settings = AppSettings::new(tokyo());
        settings.window.limit = 10;
        let mut platforms: BTreeMap<ChannelName, Arc<dyn Platform>> = BTreeMap::new();
        for (channel, simulate) in [
            ("cats", Simulate::Ok),
            ("drill", Simulate::Unknown),
            ("strict", Simulate::Reject),
        ] {
            let mut channel_settings =
                ChannelSettings::new(name(channel), ChannelKind::Sandbox, 5, tokyo());
            if channel == "cats" {
                // A money budget, as X channels have: its gauge shows beside the day's.
                channel_settings.budget = Some(airlock_app::Budget {
                    monthly: 5_000_000,
                    costs: airlock_core::budget::Costs::X_DEFAULT,
                });
            }
            settings = settings.with_channel(channel_settings);
            platforms.insert(
                name(channel),
                Arc::new(Sandbox::new(
                    name(channel),
                    dir.path().join(format!("{channel}.jsonl")),
                    simulate,
                )),
            );
        }
        configure(&mut settings);
        for channel in settings.channels.keys() {
            if !platforms.contains_key(channel) {
                let sandbox = Sandbox::new(
                    channel.clone(),
                    dir.path().join(format!("{channel}.jsonl")),
                    Simulate::Ok,
                );
                platforms.insert(channel.clone(), Arc::new(sandbox));
            }
        }
        let clock = TestClock::new();
        let app = App::new(store as Arc<dyn Store>, settings, platforms, clock.clock());
        let seeded = seed(&app).await;
        let operator = token(&app, "ops", Role::Operator).await;
        let writer = token(&app, "agent", Role::Writer).await;
        Harness {
            _dir: dir,
            clock,
            app,
            seeded,
            operator,
            writer,
        }
    }

    /// The dashboard's router with default settings.
    pub fn router(&self) -> Router {
        self.router_with(DashboardSettings::default())
    }

    /// The dashboard's router.
    pub fn router_with(&self, settings: DashboardSettings) -> Router {
        router(self.app.clone(), settings)
    }

    /// The current status of a post, read through the app.
    pub async fn status(&self, id: PostId) -> PostStatus {
        self.app
            .get_post(&Principal::cli(), id)
            .await
            .unwrap()
            .post
            .status
    }

    /// How many events the whole ledger holds.
    pub async fn n_events(&self) -> usize {
        self.app
            .events_after(&Principal::cli(), 0, 1000)
            .await
            .unwrap()
            .len()
    }

    /// Active pause scopes.
    pub async fn pauses(&self) -> Vec<String> {
        self.app
            .pauses(&Principal::cli())
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.scope)
            .collect()
    }
}

async fn token(app: &App, name: &str, role: Role) -> String {
    app.create_token(&Principal::cli(), name, RoleSet::of(&[role]))
        .await
        .unwrap()
        .token
        .expose_secret()
        .to_owned()
}

pub fn draft(channel: &str, text: &str) -> DraftInput {
    DraftInput {
        channel: channel.into(),
        text: text.into(),
        ..DraftInput::default()
    }
}

/// Creates a draft as the local CLI, so an operator token may approve it.
pub async fn create(app: &App, input: DraftInput) -> PostId {
    app.create_post(&Principal::cli(), input, None, DraftOrigin::default())
        .await
        .unwrap()
        .post
        .id
}

/// Posts in every state, made through the same guarded operations people use.
pub async fn seed(app: &App) -> Seeded {
    let me = Principal::cli();
    let draft_id = create(
        app,
        draft(
            "cats",
            &format!("Mochi has claimed the window seat again. {PACE}"),
        ),
    )
    .await;

    let mut later = draft(
        "cats",
        &format!("Lunch with Kuro at noon, if he wakes up. {PACE}"),
    );
    later.scheduled_at = Some((app.now() + Duration::hours(3)).to_rfc3339());
    let approved = create(app, later).await;
    app.approve(&me, approved).await.unwrap();

    let mut with_image = draft(
        "cats",
        &format!("The garden cats found the sunny spot. {PACE}"),
    );
    with_image.media = vec![Media::new(
        "https://inn.example/media/garden.jpg".into(),
        Some("Three cats asleep in the sun".into()),
    )];
    let posted = create(app, with_image).await;
    app.approve(&me, posted).await.unwrap();
    app.publish_now(&me, posted).await.unwrap();

    let mut review = [PostId(0); 2];
    for (slot, text) in review.iter_mut().zip([
        "Drill: this request times out after sending.",
        "Drill: and so does this one.",
    ]) {
        let id = create(app, draft("drill", text)).await;
        app.approve(&me, id).await.unwrap();
        let outcome = app.publish_now(&me, id).await;
        assert!(
            matches!(outcome, Err(airlock_app::Error::OutcomeUnknown(_))),
            "{outcome:?}"
        );
        // The unknown outcome paused drill; resume it so the second drill can go.
        app.resume(&me, Some("drill")).await.unwrap();
        *slot = id;
    }

    let failed = create(
        app,
        draft("strict", "Drill: the platform refuses this one."),
    )
    .await;
    app.approve(&me, failed).await.unwrap();
    let outcome = app.publish_now(&me, failed).await;
    assert!(
        matches!(outcome, Err(airlock_app::Error::PublishFailed(_))),
        "{outcome:?}"
    );

    Seeded {
        draft: draft_id,
        approved,
        posted,
        review,
        failed,
    }
}

/// A response, read whole.
#[derive(Debug)]
pub struct Page {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Page {
    /// Where a redirect points.
    pub fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Every `Set-Cookie` header.
    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    /// The value of the first `name="csrf"` field on the page.
    pub fn csrf(&self) -> String {
        let marker = r#"name="csrf" value=""#;
        let start = self
            .body
            .find(marker)
            .unwrap_or_else(|| panic!("no CSRF field on the page:\n{}", self.body))
            + marker.len();
        let end = self.body[start..].find('"').unwrap() + start;
        self.body[start..end].to_owned()
    }
}

/// A browser without JavaScript: keeps cookies, sends forms, never follows redirects.
pub struct Browser {
    pub router: Router,
    pub cookies: HashMap<String, String>,
}

impl Browser {
    pub fn new(router: Router) -> Self {
        Browser {
            router,
            cookies: HashMap::new(),
        }
    }

    /// Signs in with `token` and asserts it worked.
    pub async fn signed_in(router: Router, token: &str) -> Self {
        let mut browser = Browser::new(router);
        let page = browser.login(token).await;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
        assert_eq!(page.location(), "/");
        browser
    }

    /// Opens the login page and submits `token` with its CSRF field.
    pub async fn login(&mut self, token: &str) -> Page {
        let form = self.get("/login").await;
        assert_eq!(form.status, StatusCode::OK);
        let csrf = form.csrf();
        self.post("/login", &[("csrf", &csrf), ("token", token)])
            .await
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let request = Request::builder().method(Method::GET).uri(path);
        self.send(request, Body::empty()).await
    }

    /// Sends a form with exactly these fields.
    pub async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        self.send(request, Body::from(body)).await
    }

    /// Sends a form with the CSRF token of the page at `from`.
    pub async fn submit(&mut self, from: &str, path: &str, fields: &[(&str, &str)]) -> Page {
        let csrf = self.get(from).await.csrf();
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }

    async fn send(&mut self, mut request: axum::http::request::Builder, body: Body) -> Page {
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            request = request.header(header::COOKIE, jar.join("; "));
        }
        let response = self
            .router
            .clone()
            .oneshot(request.body(body).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let page = Page {
            status,
            headers,
            body: String::from_utf8(bytes.to_vec()).unwrap(),
        };
        for cookie in page.set_cookies() {
            let pair = cookie.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() || cookie.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        page
    }
}
