//! Test harness: an `App` over a real SQLite file in a temp dir, with channels pointed at
//! local fakes, a steppable clock, and a raw TCP fake for failures wiremock cannot act out.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration as StdDuration;

use chrono::Duration;
use chrono_tz::Tz;

use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{App, AppSettings, ChannelSettings, NotifyRoute, Principal};
use airlock_core::{ChannelKind, ChannelName, Post, PostId, Role, RoleSet};
use airlock_platforms::Platform;
use airlock_platforms::sandbox::{Sandbox, Simulate};
use airlock_platforms::webhook::Webhook;
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;

pub use airlock_testkit::clock::TestClock;

pub fn name(s: &str) -> ChannelName {
    ChannelName::parse(s).unwrap()
}

pub fn tokyo() -> Tz {
    "Asia/Tokyo".parse().unwrap()
}

/// One configured channel and its adapter.
pub struct TestChannel {
    pub settings: ChannelSettings,
    pub platform: Arc<dyn Platform>,
}

pub fn sandbox(
    dir: &std::path::Path,
    channel: &str,
    simulate: Simulate,
    daily_limit: u32,
) -> TestChannel {
    TestChannel {
        settings: ChannelSettings::new(name(channel), ChannelKind::Sandbox, daily_limit, tokyo()),
        platform: Arc::new(Sandbox::new(
            name(channel),
            dir.join(format!("{channel}.jsonl")),
            simulate,
        )),
    }
}

pub fn webhook(channel: &str, url: &str, timeout: StdDuration, daily_limit: u32) -> TestChannel {
    TestChannel {
        settings: ChannelSettings::new(name(channel), ChannelKind::Webhook, daily_limit, tokyo()),
        platform: Arc::new(
            Webhook::new(url, None, airlock_platforms::http::client(timeout)).unwrap(),
        ),
    }
}

/// An app over a fresh SQLite file.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub store: Arc<SqliteStore>,
    pub clock: TestClock,
    pub settings: AppSettings,
    pub platforms: BTreeMap<ChannelName, Arc<dyn Platform>>,
}

impl Harness {
    pub async fn new(channels: impl FnOnce(&std::path::Path) -> Vec<TestChannel>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(
            SqliteStore::open(&dir.path().join("airlock.db"))
                .await
                .unwrap(),
        );
        let mut settings = AppSettings::new(tokyo());
        settings.window.limit = 100;
        settings.notify = vec![NotifyRoute {
            sink: "ops".into(),
            events: airlock_app::EVENTS.iter().map(|e| e.to_string()).collect(),
        }];
        let mut platforms = BTreeMap::new();
        for channel in channels(dir.path()) {
            platforms.insert(channel.settings.name.clone(), channel.platform);
            settings = settings.with_channel(channel.settings);
        }
        Harness {
            dir,
            store,
            clock: TestClock::new(),
            settings,
            platforms,
        }
    }

    /// A new app (a new "process") over the same store and clock.
    pub fn app(&self) -> App {
        App::new(
            self.store.clone() as Arc<dyn Store>,
            self.settings.clone(),
            self.platforms.clone(),
            self.clock.clock(),
        )
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    pub async fn sql(&self, statement: &str) -> Result<u64, sqlx::Error> {
        sqlx::query(sqlx::AssertSqlSafe(statement.to_owned()))
            .execute(self.store.pool())
            .await
            .map(|r| r.rows_affected())
    }
}

pub fn writer(name: &str) -> Principal {
    token(name, &[Role::Writer])
}

pub fn token(name: &str, roles: &[Role]) -> Principal {
    Principal {
        actor: airlock_core::Actor::Token(name.into()),
        roles: RoleSet::of(roles),
        sod_exempt: false,
    }
}

pub fn draft(channel: &str, text: &str) -> DraftInput {
    DraftInput {
        channel: channel.into(),
        text: text.into(),
        ..DraftInput::default()
    }
}

/// Creates and approves a post as the CLI would.
pub async fn approved(app: &App, channel: &str, text: &str) -> Post {
    let me = Principal::cli();
    let post = app
        .create_post(&me, draft(channel, text), None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    app.approve(&me, post.id).await.unwrap()
}

pub async fn status(app: &App, id: PostId) -> airlock_core::PostStatus {
    app.store().get_post(id).await.unwrap().status
}

/// Lines a sandbox wrote for a post.
pub fn sandbox_lines(path: &std::path::Path, id: PostId) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["post_id"] == id.0)
        .count()
}

/// A TCP server that reads one request per connection and then closes it without answering
/// (or after `hold` if set), counting the requests it saw.
pub struct DroppingServer {
    pub url: String,
    pub requests: Arc<AtomicUsize>,
}

impl DroppingServer {
    pub async fn start(hold: Option<StdDuration>) -> Self {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    break;
                };
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    let mut got = Vec::new();
                    // Read until the end of headers and the declared body.
                    loop {
                        let Ok(n) = socket.read(&mut buf).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        got.extend_from_slice(&buf[..n]);
                        if let Some(end) = find(&got, b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
                            let len = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if got.len() >= end + 4 + len {
                                break;
                            }
                        }
                    }
                    seen.fetch_add(1, Ordering::SeqCst);
                    if let Some(hold) = hold {
                        tokio::time::sleep(hold).await;
                    }
                    drop(socket);
                });
            }
        });
        DroppingServer { url, requests }
    }

    pub fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A local port nothing listens on.
pub async fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/hook")
}

/// The canary token the platform fakes accept.
pub fn fake_token() -> secrecy::SecretString {
    secrecy::SecretString::from(airlock_testkit::CANARY.to_owned())
}

/// A `threads` or `instagram` channel on a Graph fake, polling fast, with requests bounded
/// by `timeout`; its account is the fake's default one.
pub fn graph_channel(
    channel: &str,
    flavour: airlock_testkit::fake::meta::Flavour,
    base_url: &str,
    timeout: StdDuration,
) -> TestChannel {
    use airlock_platforms::instagram::{Instagram, InstagramSettings};
    use airlock_platforms::threads::{Threads, ThreadsSettings};
    use airlock_testkit::fake::meta::Flavour;
    let client = airlock_platforms::http::client(timeout);
    let poll_interval = StdDuration::from_millis(20);
    let poll_timeout = StdDuration::from_secs(5);
    let (kind, platform): (ChannelKind, Arc<dyn Platform>) = match flavour {
        Flavour::Threads => (
            ChannelKind::Threads,
            Arc::new(
                Threads::new(
                    ThreadsSettings {
                        base_url: base_url.to_owned(),
                        request_timeout: timeout,
                        poll_interval,
                        poll_timeout,
                        ..ThreadsSettings::new(fake_token())
                    },
                    client,
                )
                .unwrap(),
            ),
        ),
        Flavour::Instagram => (
            ChannelKind::Instagram,
            Arc::new(
                Instagram::new(
                    InstagramSettings {
                        base_url: base_url.to_owned(),
                        request_timeout: timeout,
                        poll_interval,
                        poll_timeout,
                        ..InstagramSettings::new(fake_token())
                    },
                    client,
                )
                .unwrap(),
            ),
        ),
    };
    let mut settings = ChannelSettings::new(name(channel), kind, 10, tokyo());
    settings.account = Some("inn_cats".into());
    settings.request_timeout = Duration::from_std(timeout).unwrap();
    TestChannel { settings, platform }
}

/// A `wordpress` channel on the WordPress fake.
pub fn wordpress_channel(channel: &str, base_url: &str, timeout: StdDuration) -> TestChannel {
    use airlock_platforms::wordpress::{Wordpress, WordpressSettings};
    use airlock_testkit::fake::wordpress::{USER_SLUG, USERNAME};
    let platform = Wordpress::new(
        WordpressSettings {
            request_timeout: timeout,
            ..WordpressSettings::new(base_url.to_owned(), USERNAME.into(), fake_token())
        },
        airlock_platforms::http::client(timeout),
    )
    .unwrap();
    let mut settings = ChannelSettings::new(name(channel), ChannelKind::Wordpress, 10, tokyo());
    settings.account = Some(USER_SLUG.into());
    settings.request_timeout = Duration::from_std(timeout).unwrap();
    TestChannel {
        settings,
        platform: Arc::new(platform),
    }
}

/// Creates and approves an article (title and Markdown text) as the CLI would.
pub async fn approved_article(app: &App, channel: &str, title: &str, text: &str) -> Post {
    let me = Principal::cli();
    let input = DraftInput {
        title: Some(title.into()),
        ..draft(channel, text)
    };
    let post = app
        .create_post(&me, input, None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    app.approve(&me, post.id).await.unwrap()
}

/// Polls until `check` holds, for at most `within` of real time.
pub async fn eventually(within: StdDuration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(StdDuration::from_millis(25)).await;
    }
}

/// A `linkedin` channel posting as the fake's member.
pub fn linkedin_channel(channel: &str, base_url: &str, timeout: StdDuration) -> TestChannel {
    use airlock_platforms::linkedin::{Linkedin, LinkedinSettings};
    let platform = Linkedin::new(
        LinkedinSettings {
            base_url: base_url.to_owned(),
            request_timeout: timeout,
            ..LinkedinSettings::new(fake_token())
        },
        airlock_platforms::http::client(timeout),
    )
    .unwrap();
    let mut settings = ChannelSettings::new(name(channel), ChannelKind::Linkedin, 10, tokyo());
    settings.account = Some(airlock_testkit::fake::linkedin::SUB.into());
    settings.request_timeout = Duration::from_std(timeout).unwrap();
    TestChannel {
        settings,
        platform: Arc::new(platform),
    }
}
