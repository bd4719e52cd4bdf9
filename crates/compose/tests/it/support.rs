//! Test harness: an `App` over a real SQLite file in a temp dir, a site directory beside
//! it, a wiremock server answering `HEAD` for the site's pages and images, and a clock
//! tests set by hand.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{TimeZone, Utc};
use chrono_tz::Tz;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use airlock_app::{App, AppSettings, ChannelSettings};
use airlock_compose::{
    ChannelCompose, CheckSettings, Checker, ComposeSettings, SiteSettings, Target,
};
use airlock_core::{ChannelKind, ChannelName};
use airlock_platforms::Platform;
use airlock_platforms::sandbox::{Sandbox, Simulate};
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;

pub use airlock_testkit::clock::TestClock;

pub fn name(s: &str) -> ChannelName {
    ChannelName::parse(s).unwrap()
}

pub fn tokyo() -> Tz {
    "Asia/Tokyo".parse().unwrap()
}

/// The app, the site and the fake web server.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub server: MockServer,
    pub clock: TestClock,
    pub app_settings: AppSettings,
    pub platforms: BTreeMap<ChannelName, Arc<dyn Platform>>,
    pub settings: ComposeSettings,
    pub store: Arc<SqliteStore>,
}

impl Harness {
    /// A harness with no channels; add them with [`Harness::channel`].
    pub async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("site")).unwrap();
        let server = MockServer::start().await;
        let store = Arc::new(
            SqliteStore::open(&dir.path().join("airlock.db"))
                .await
                .unwrap(),
        );
        let mut app_settings = AppSettings::new(tokyo());
        app_settings.window.limit = 100;
        let mut site = SiteSettings::new("inn", dir.path().join("site"), &server.uri());
        site.media_prefix = Some(format!("{}/wp-content/uploads/", server.uri()));
        let mut settings = ComposeSettings {
            check: CheckSettings {
                timeout: StdDuration::from_millis(500),
                concurrency: 3,
            },
            ..ComposeSettings::default()
        };
        settings.sites.insert("inn".into(), site);
        Harness {
            dir,
            server,
            clock: TestClock::at(Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()),
            app_settings,
            platforms: BTreeMap::new(),
            settings,
            store,
        }
    }

    /// Adds a channel of `kind` drawing from the site, with its policy narrowed by
    /// `max_chars`, `forbidden` and `required`. Sandbox channels get an adapter that
    /// writes `<channel>.jsonl` in the temp dir.
    pub fn channel(
        &mut self,
        channel: &str,
        kind: ChannelKind,
        max_chars: Option<usize>,
        forbidden: &[&str],
        required: &[&str],
    ) -> &mut ChannelCompose {
        let mut settings = ChannelSettings::new(name(channel), kind, 100, tokyo());
        settings.policy = kind.policy_with(
            max_chars,
            forbidden.iter().map(|s| s.to_string()).collect(),
            required.iter().map(|s| s.to_string()).collect(),
        );
        settings.source_dir = Some(self.site_dir());
        if kind == ChannelKind::Sandbox {
            self.platforms.insert(
                name(channel),
                Arc::new(Sandbox::new(
                    name(channel),
                    self.sandbox_log(channel),
                    Simulate::Ok,
                )),
            );
        }
        self.app_settings = self.app_settings.clone().with_channel(settings);
        self.settings
            .channels
            .insert(name(channel), ChannelCompose::new(name(channel), "inn"));
        self.settings.channels.get_mut(&name(channel)).unwrap()
    }

    pub fn sandbox_log(&self, channel: &str) -> PathBuf {
        self.dir.path().join(format!("{channel}.jsonl"))
    }

    /// A new app (a new "process") over its own connection pool to the same file.
    pub async fn app_with_own_pool(&self) -> App {
        let store = SqliteStore::open(&self.dir.path().join("airlock.db"))
            .await
            .unwrap();
        self.app_over(Arc::new(store))
    }

    /// An app over the shared pool.
    pub fn app(&self) -> App {
        self.app_over(self.store.clone())
    }

    fn app_over(&self, store: Arc<SqliteStore>) -> App {
        App::new(
            store as Arc<dyn Store>,
            self.app_settings.clone(),
            self.platforms.clone(),
            self.clock.clock(),
        )
    }

    pub fn checker(&self) -> Checker {
        Checker::new(self.settings.check)
    }

    pub fn target(&self, channel: &str) -> Target<'_> {
        self.settings.target("inn", channel).unwrap()
    }

    pub fn site_dir(&self) -> PathBuf {
        self.dir.path().join("site")
    }

    /// Writes a file under the site directory.
    pub fn write(&self, relative: &str, text: &str) {
        let path = self.site_dir().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Writes an eligible-looking article with a live page.
    pub async fn article(&self, relative: &str, slug: &str, updated: &str) {
        self.write(relative, &article(slug, updated, ""));
        self.page(slug).await;
    }

    /// The page of `slug` answers `HEAD` with 200.
    pub async fn page(&self, slug: &str) {
        self.head(&format!("/{slug}/"), ResponseTemplate::new(200))
            .await;
    }

    /// `HEAD path` answers with `response`.
    pub async fn head(&self, at: &str, response: ResponseTemplate) {
        Mock::given(method("HEAD"))
            .and(path(at.to_owned()))
            .respond_with(response)
            .mount(&self.server)
            .await;
    }

    /// A JPEG under the media prefix.
    pub async fn jpeg(&self, file: &str) -> String {
        let at = format!("/wp-content/uploads/{file}");
        self.head(
            &at,
            ResponseTemplate::new(200).insert_header("Content-Type", "image/jpeg"),
        )
        .await;
        format!("{}{at}", self.server.uri())
    }

    pub fn url(&self, slug: &str) -> String {
        format!("{}/{slug}/", self.server.uri())
    }
}

/// An article's text: front matter with every required field, plus `extra` front matter lines.
pub fn article(slug: &str, updated: &str, extra: &str) -> String {
    format!(
        "---\nstatus: publish\nslug: {slug}\ntitle: Title of {slug}\ndescription: About {slug}.\nfact_checked: 2026-11-01\nupdated: {updated}\n{extra}---\nBody of {slug}.\n"
    )
}

pub fn reasons(
    skipped: &[airlock_compose::Skipped],
) -> BTreeMap<String, airlock_compose::SkipReason> {
    skipped
        .iter()
        .map(|s| (s.path.clone(), s.reason.clone()))
        .collect()
}
