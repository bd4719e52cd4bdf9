//! Long-running and cron commands: `serve` and `dispatch --once`.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use airlock_app::App;
use airlock_app::publish::PublishResult;
use airlock_dispatcher::{Dispatcher, DispatcherSettings, run_once};

use crate::config::Config;
use crate::output::print_json;
use crate::post::channel_list;
use crate::{CmdResult, Failure, wiring};

/// `dispatch --once`: reap, reconcile, publish what is due, deliver notifications.
/// Exit 1 when a publish ended failed or needs review.
pub async fn dispatch_once(config: &Config, channels: &[String], json: bool) -> CmdResult {
    crate::operator::require_operator(config).await?;
    let app = wiring::app_for_publishing(config).await?;
    let only = if channels.is_empty() {
        None
    } else {
        Some(channel_list(&app, channels)?)
    };
    let report = run_once(&app, only.as_deref()).await?;
    let delivered = deliver(&app, config).await?;
    let bad = report
        .published
        .iter()
        .filter(|r| {
            matches!(
                r.result,
                PublishResult::Failed { .. } | PublishResult::NeedsReview { .. }
            )
        })
        .count();
    if json {
        print_json(&json!({
            "reaped": report.reaped.iter().map(|r| json!({"id": r.post.id, "status": r.post.status})).collect::<Vec<_>>(),
            "reconciled": report.reconciled.iter().map(|r| json!({"id": r.post.id, "status": r.post.status, "evidence": r.evidence})).collect::<Vec<_>>(),
            "published": report.published.iter().map(|r| json!({"id": r.post.id, "status": r.post.status, "result": r.result.name(), "permalink": r.post.permalink, "error": r.post.error})).collect::<Vec<_>>(),
            "notifications_delivered": delivered,
            "waiting_on_quota": report.waiting_on_quota.map(|(posts, until)| json!({"posts": posts, "next_free_at": until})),
        }));
    } else {
        for reaped in &report.reaped {
            println!("reaped post {}: now {}", reaped.post.id, reaped.post.status);
        }
        for settled in &report.reconciled {
            println!(
                "reconciled post {}: now {} ({})",
                settled.post.id, settled.post.status, settled.evidence
            );
        }
        for published in &report.published {
            println!(
                "post {} on {}: {}{}",
                published.post.id,
                published.post.content.channel,
                result_name(&published.result),
                published
                    .post
                    .permalink
                    .as_deref()
                    .or(published.post.error.as_deref())
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default()
            );
        }
        if report.published.is_empty() && report.reaped.is_empty() && report.reconciled.is_empty() {
            println!("nothing due");
        }
        if let Some((posts, until)) = report.waiting_on_quota {
            println!(
                "{posts} post(s) wait on quota; the next slot frees at {} (`airlock quota`)",
                airlock_core::time::format_utc(until)
            );
        }
    }
    if bad > 0 {
        return Err(Failure::failed(format!(
            "{bad} publish(es) ended failed or needing review: see `airlock post list --status needs_review` and `--status failed`"
        )));
    }
    Ok(())
}

/// A short name for a publish result.
pub fn result_name(result: &PublishResult) -> &'static str {
    match result {
        PublishResult::Posted => "posted",
        PublishResult::Failed { .. } => "failed",
        PublishResult::NeedsReview { .. } => "needs_review",
        PublishResult::Retrying { .. } => "retrying",
        PublishResult::Deferred { .. } => "deferred (over quota)",
        PublishResult::Held { .. } => "held (paused)",
        PublishResult::ContentChanged { .. } => "back to draft (content changed)",
        PublishResult::Stale => "stale (another worker took over)",
    }
}

/// Delivers due notifications once; the number delivered. A failing sink never fails
/// the pass: its notifications are retried later.
async fn deliver(app: &App, config: &Config) -> Result<u32, Failure> {
    if config.sinks.is_empty() {
        return Ok(0);
    }
    let deliverer = wiring::build_deliverer(config, app)?;
    match deliverer.deliver_once().await {
        Ok(report) => Ok(report.delivered),
        Err(e) => {
            tracing::warn!(error = %e, "notification delivery failed; it will be retried");
            Ok(0)
        }
    }
}

/// `serve`: the HTTP API, dashboard, MCP endpoint, dispatcher, reaper, slot scheduler
/// and notification deliverer, until Ctrl-C or SIGTERM.
pub async fn serve(config: &Config) -> CmdResult {
    crate::operator::require_operator(config).await?;
    let app = wiring::app_for_publishing(config).await?;
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|e| Failure::failed(format!("cannot listen on {}: {e}", config.listen)))?;
    let server = Server::new(config, app, listener)?;
    crate::log::line(
        tracing::Level::INFO,
        &format!(
            "serving {} (dashboard /, API /api/v1, MCP /mcp, metrics /metrics; Ctrl-C to stop)",
            server.url()
        ),
    );
    server.run(shutdown_signal()).await
}

/// What `serve` warns about at start: ways to be reached by other machines without TLS,
/// where tokens and session cookies would cross the network in clear text and the
/// dashboard's cookies would not be `Secure`.
pub fn start_warnings(config: &Config, address: std::net::SocketAddr) -> Vec<String> {
    let loopback_name = |host: &str| {
        let host = host.trim().trim_start_matches('[');
        let host = host.split(']').next().unwrap_or(host);
        let host = match host.rsplit_once(':') {
            Some((name, port))
                if port.bytes().all(|b| b.is_ascii_digit()) && !name.contains(':') =>
            {
                name
            }
            _ => host,
        };
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    let https = config
        .public_url
        .as_ref()
        .is_some_and(|url| url.scheme() == "https");
    let mut warnings = Vec::new();
    if !address.ip().is_loopback() && config.public_url.is_none() {
        warnings.push("serving on a non-loopback address without [server] public_url: put airlock behind a TLS-terminating proxy and set public_url = \"https://...\" so the dashboard's cookies are Secure; until then tokens and session cookies cross the network in clear text".to_owned());
    }
    if let Some(url) = &config.public_url
        && url.scheme() == "http"
        && !url.host_str().is_some_and(loopback_name)
    {
        warnings.push(format!(
            "[server] public_url {url} is http on a host that is not loopback: tokens and session cookies cross the network in clear text and the dashboard's cookies are not Secure; serve it over https (a TLS proxy) and write public_url = \"https://...\""
        ));
    }
    let foreign: Vec<&str> = config
        .allowed_hosts
        .iter()
        .map(String::as_str)
        .filter(|host| !loopback_name(host))
        .collect();
    if !foreign.is_empty() && !https {
        warnings.push(format!(
            "[server] allowed_hosts names {} but there is no https public_url: behind a TLS proxy, set public_url = \"https://<that name>\" too, or the dashboard's forms are refused (403: the browser's Origin is not the server's) and its cookies are not Secure",
            foreign.join(", ")
        ));
    }
    warnings
}

/// The longest `serve` waits between two reaper passes, whatever `poll_interval` is: an
/// expired lease is taken back within this.
pub const REAP_INTERVAL_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// The longest `serve` waits between two delivery passes: a notification goes out within
/// this of being written.
pub const DELIVER_INTERVAL_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// Everything `serve` runs, built and checked before anything starts.
pub struct Server {
    app: App,
    listener: tokio::net::TcpListener,
    address: std::net::SocketAddr,
    deliverer: airlock_notify::Deliverer,
    scheduler: Option<airlock_compose::Scheduler>,
    dispatcher: DispatcherSettings,
    policy: airlock_web::policy::PolicySettings,
    api: airlock_api::ApiSettings,
    dashboard: airlock_dashboard::DashboardSettings,
    deliver_interval: std::time::Duration,
}

impl Server {
    /// Builds the server's parts (refusing bad sink or compose settings) on an open listener.
    pub fn new(
        config: &Config,
        app: App,
        listener: tokio::net::TcpListener,
    ) -> Result<Self, Failure> {
        let address = listener
            .local_addr()
            .map_err(|e| Failure::failed(e.to_string()))?;
        let deliverer = wiring::build_deliverer(config, &app)?;
        let compose = crate::compose::settings(config)?;
        let scheduler = if compose.channels.values().any(|c| !c.slots.is_empty()) {
            Some(
                airlock_compose::Scheduler::new(
                    app.clone(),
                    compose,
                    airlock_compose::ScheduleSettings::default(),
                )
                .map_err(|e| Failure::refused(format!("{}: {e}", config.path.display())))?,
            )
        } else {
            None
        };
        let poll = config.poll_interval.as_std();
        let mut policy = airlock_web::policy::PolicySettings::new(address);
        policy.public_url = config.public_url.clone();
        policy.allowed_hosts = config.allowed_hosts.clone();
        policy.allowed_origins = config.allowed_origins.clone();
        for warning in start_warnings(config, address) {
            tracing::warn!(listen = %address, "{warning}");
        }
        let dashboard = airlock_dashboard::DashboardSettings {
            secure_cookies: config
                .public_url
                .as_ref()
                .is_some_and(|url| url.scheme() == "https"),
            ..airlock_dashboard::DashboardSettings::default()
        };
        Ok(Server {
            app,
            listener,
            address,
            deliverer,
            scheduler,
            dispatcher: DispatcherSettings {
                workers: config.workers,
                batch: config.batch,
                poll_interval: poll,
                reap_interval: poll.min(REAP_INTERVAL_MAX),
            },
            policy,
            api: airlock_api::ApiSettings {
                metrics_token_required: config.metrics_token_required,
            },
            dashboard,
            deliver_interval: poll.min(DELIVER_INTERVAL_MAX),
        })
    }

    /// `http://ADDRESS`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Runs every task until `stop` resolves or one task exits (which stops the rest).
    pub async fn run(self, stop: impl std::future::Future<Output = ()>) -> CmdResult {
        let shutdown = CancellationToken::new();
        let mut tasks = tokio::task::JoinSet::new();
        let mut mcp = airlock_mcp::HttpSettings::new(self.address);
        mcp.policy = self.policy.clone();
        mcp.shutdown = shutdown.child_token();
        let router = airlock_api::router_with(self.app.clone(), self.api)
            .merge(airlock_dashboard::router(self.app.clone(), self.dashboard))
            .merge(airlock_mcp::router(self.app.clone(), mcp));
        // One Host and Origin policy in front of every route (dashboard, API, MCP); a
        // browser's refused page gets the dashboard's explanation, anything else JSON.
        let policy = airlock_web::policy::HostPolicy::new(&self.policy)
            .with_page(airlock_dashboard::refusal_page);
        let router = airlock_web::guarded(router, policy);
        let listener = self.listener;
        let token = shutdown.clone();
        tasks.spawn(async move {
            if let Err(e) = airlock_api::serve(listener, router, token).await {
                tracing::error!(error = %e, "HTTP server failed");
            }
            "the HTTP server"
        });
        let (deliverer, interval, token) =
            (self.deliverer, self.deliver_interval, shutdown.clone());
        tasks.spawn(async move {
            deliverer.run(token, interval).await;
            "the notification deliverer"
        });
        let dispatcher = Dispatcher::new(self.app.clone(), self.dispatcher);
        let token = shutdown.clone();
        tasks.spawn(async move {
            dispatcher.run(token).await;
            "the dispatcher"
        });
        if let Some(scheduler) = self.scheduler {
            let token = shutdown.clone();
            tasks.spawn(async move {
                scheduler.run(token).await;
                "the slot scheduler"
            });
        }
        tokio::select! {
            _ = stop => {}
            Some(done) = tasks.join_next() => {
                let task = done.unwrap_or("a task that panicked");
                crate::log::line(
                    tracing::Level::ERROR,
                    &format!("{task} stopped; shutting down"),
                );
            }
        }
        shutdown.cancel();
        while tasks.join_next().await.is_some() {}
        // A publish started by a request (or a worker) runs to its end: wait for it.
        self.app.drain().await;
        Ok(())
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler installs");
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings(server: &str, listen: &str) -> Vec<String> {
        let text = format!(
            "[server]\n{server}\n[channels.sandbox]\nkind = \"sandbox\"\ndaily_limit = 1\n"
        );
        let config = Config::parse(std::path::Path::new("/tmp/airlock.toml"), &text).unwrap();
        start_warnings(&config, listen.parse().unwrap())
    }

    #[test]
    fn start_warns_about_every_way_to_be_reached_without_tls() {
        assert!(warnings("", "127.0.0.1:8080").is_empty());
        assert!(
            warnings(
                "public_url = \"https://airlock.example\"\nallowed_hosts = [\"airlock.example\"]",
                "127.0.0.1:8080"
            )
            .is_empty()
        );
        assert!(warnings("public_url = \"http://localhost:8080\"", "127.0.0.1:8080").is_empty());
        assert!(
            warnings(
                "allowed_hosts = [\"localhost:8080\", \"127.0.0.1\"]",
                "127.0.0.1:8080"
            )
            .is_empty()
        );

        let found = warnings("allowed_hosts = [\"airlock.example\"]", "127.0.0.1:8080");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("airlock.example") && found[0].contains("public_url"),
            "{found:?}"
        );

        let found = warnings("public_url = \"http://airlock.example\"", "127.0.0.1:8080");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("is http"), "{found:?}");

        let found = warnings("", "0.0.0.0:8080");
        assert_eq!(found.len(), 1, "{found:?}");
    }
}
