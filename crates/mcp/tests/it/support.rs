//! Test harness: an `App` over a real SQLite file in a temp dir with sandbox channels,
//! API tokens made through the app, and MCP clients connected in-process or over HTTP.

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{App, AppSettings, ChannelSettings, Principal};
use airlock_core::{ChannelKind, ChannelName, Post, Role, RoleSet};
use airlock_mcp::{AirlockMcp, HttpSettings};
use airlock_platforms::Platform;
use airlock_platforms::sandbox::{Sandbox, Simulate};
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use secrecy::ExposeSecret;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The tools docs/mcp.md names and the critic's two, in name order.
pub const TOOLS: [&str; 13] = [
    "approve_post",
    "check_draft",
    "discard_post",
    "draft_post",
    "get_post",
    "get_review_packet",
    "list_channels",
    "list_posts",
    "publish_post",
    "quota_status",
    "reject_post",
    "submit_verdict",
    "update_draft",
];

pub type Client = RunningService<RoleClient, ()>;

/// An app over a fresh SQLite file with two sandbox channels, `cats` and `dogs`.
pub struct Harness {
    pub _dir: tempfile::TempDir,
    pub app: App,
}

impl Harness {
    /// `window_limit` publishes per rolling hour across channels.
    pub async fn new(window_limit: u32) -> Self {
        Self::with_review(window_limit, |_| {}).await
    }

    /// [`Harness::new`], with each channel's settings adjusted by `review` (its review
    /// rules, its rubric).
    pub async fn with_review(window_limit: u32, review: impl Fn(&mut ChannelSettings)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        let tz: chrono_tz::Tz = "Asia/Tokyo".parse().unwrap();
        let mut settings = AppSettings::new(tz);
        settings.window.limit = window_limit;
        let mut platforms: BTreeMap<ChannelName, Arc<dyn Platform>> = BTreeMap::new();
        for channel in ["cats", "dogs"] {
            let name = ChannelName::parse(channel).unwrap();
            let mut channel_settings =
                ChannelSettings::new(name.clone(), ChannelKind::Sandbox, 10, tz);
            review(&mut channel_settings);
            settings = settings.with_channel(channel_settings);
            platforms.insert(
                name.clone(),
                Arc::new(Sandbox::new(
                    name,
                    dir.path().join(format!("{channel}.jsonl")),
                    Simulate::Ok,
                )),
            );
        }
        let app = App::new(
            Arc::new(store) as Arc<dyn Store>,
            settings,
            platforms,
            App::system_clock(),
        );
        Harness { _dir: dir, app }
    }

    /// Creates an API token and returns its secret.
    pub async fn token(&self, name: &str, roles: &[Role]) -> String {
        let issued = self
            .app
            .create_token(&Principal::cli(), name, RoleSet::of(roles))
            .await
            .unwrap();
        issued.token.expose_secret().to_owned()
    }

    /// An MCP client connected in-process to a server acting as the token, which it
    /// authenticates on every call, as `airlock mcp` does.
    pub async fn client_for(&self, name: &str, roles: &[Role]) -> Client {
        let secret = self.token(name, roles).await;
        connect(AirlockMcp::for_token(self.app.clone(), secret.into())).await
    }

    /// A post drafted and approved by the local CLI (exempt from separation of duties).
    pub async fn approved(&self, channel: &str, text: &str) -> Post {
        let cli = Principal::cli();
        let input = DraftInput {
            channel: channel.into(),
            text: text.into(),
            ..DraftInput::default()
        };
        let post = self
            .app
            .create_post(&cli, input, None, DraftOrigin::default())
            .await
            .unwrap()
            .post;
        self.app.approve(&cli, post.id).await.unwrap()
    }

    /// Serves `/mcp` on a fresh loopback port; returns its URL. Stops when `shutdown`
    /// is cancelled.
    pub async fn serve_http(&self, shutdown: &CancellationToken) -> String {
        self.serve_http_with(shutdown, |_| {}).await
    }

    /// [`Harness::serve_http`] with settings changed by `adjust`.
    pub async fn serve_http_with(
        &self,
        shutdown: &CancellationToken,
        adjust: impl FnOnce(&mut HttpSettings),
    ) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut settings = HttpSettings::new(addr);
        settings.shutdown = shutdown.clone();
        adjust(&mut settings);
        tokio::spawn(airlock_mcp::http::serve(
            self.app.clone(),
            listener,
            settings,
        ));
        format!("http://{addr}/mcp")
    }
}

/// Connects an rmcp client to `server` over an in-memory duplex pipe.
pub async fn connect(server: AirlockMcp) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    ().serve(client_io).await.unwrap()
}

/// Calls a tool; protocol errors fail the test (refusals are results).
pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    client
        .call_tool(params)
        .await
        .unwrap_or_else(|e| panic!("{tool} was a protocol error, not a tool result: {e}"))
}

/// The text of a result.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect()
}

/// The JSON of a successful result.
pub fn ok_json(result: &CallToolResult) -> Value {
    assert_ne!(
        result.is_error,
        Some(true),
        "expected success: {}",
        text(result)
    );
    serde_json::from_str(&text(result)).expect("a tool answers with JSON text")
}

/// The text of a tool error.
pub fn refusal(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected a tool error: {}",
        text(result)
    );
    text(result)
}
