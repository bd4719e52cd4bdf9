//! `init` (a commented config, the store and a first operator token) and `demo`
//! (a self-contained workspace with sample posts in every state).

use std::path::{Path, PathBuf};

use clap::Args;
use secrecy::ExposeSecret;

use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{App, Principal};
use airlock_core::{Media, PostStatus, Role, RoleSet};
use airlock_store::{PostClaim, PostFilter, Store};

use crate::config::Config;
use crate::output::print_posts;
use crate::run::{Server, shutdown_signal};
use crate::{CmdResult, Failure, wiring};

const EXAMPLE_CONFIG: &str = include_str!("airlock.example.toml");
const DEMO_MARKER: &str = ".airlock-demo";

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the demo workspace (recreated on every run).
    #[arg(long, value_name = "DIR", default_value = "airlock-demo")]
    dir: PathBuf,
    /// Where to serve the dashboard (default 127.0.0.1:8080, or a free port if that is taken).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Set up the workspace and print the queue, without serving.
    #[arg(long)]
    no_serve: bool,
}

/// `airlock init`: writes `airlock.toml`, creates the store, prints an operator token once.
pub async fn init(dir: Option<PathBuf>) -> CmdResult {
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    crate::private::create_dir_all(&dir)
        .map_err(|e| Failure::failed(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join("airlock.toml");
    if path.exists() {
        return Err(Failure::refused(format!(
            "{} already exists; airlock init never overwrites a configuration",
            path.display()
        )));
    }
    crate::private::write_new(&path, EXAMPLE_CONFIG.as_bytes())
        .map_err(|e| Failure::failed(format!("cannot write {}: {e}", path.display())))?;
    let config = Config::load(&path)?;
    let app = wiring::app_for_ledger(&config).await?;
    let token = app
        .create_token(
            &Principal::cli(),
            "operator",
            RoleSet::of(&[Role::Operator]),
        )
        .await?;
    println!("wrote {}", path.display());
    println!(
        "created the store {}",
        airlock_platforms::http::without_secrets(&config.database)
    );
    println!("operator token (shown only now; store it safely):");
    println!("{}", token.token.expose_secret());
    println!();
    println!(
        "next: airlock --config {} post add --channel sandbox --text 'hello'",
        path.display()
    );
    Ok(())
}

fn demo_config() -> String {
    r#"# airlock demo workspace (recreated by every `airlock demo`).
timezone = "Asia/Tokyo"
database = "sqlite://airlock.db"

[server]
listen = "127.0.0.1:8080"

[dispatcher]
stale_after = "15m"
poll_interval = "2s"

[quota]
window = "60m"
window_limit = 6

# The demo runs offline: its sample image at inn.example is not fetched. Anywhere else,
# leave media checks on (docs/media.md).
[media]
check = false

# Publishes to sandbox/cats.jsonl in this directory.
[channels.cats]
kind = "sandbox"
daily_limit = 5
max_chars = 280
forbidden = ["guaranteed to meet the cat"]
required = ["Please respect the cats' own pace."]

# Acts out a request that times out after sending: the post needs a person.
[channels.drill]
kind = "sandbox"
simulate = "unknown"
daily_limit = 5

# Acts out a definite rejection by the platform.
[channels.strict]
kind = "sandbox"
simulate = "reject"
daily_limit = 5
"#
    .to_owned()
}

fn prepare_dir(dir: &Path) -> Result<(), Failure> {
    if dir.exists() {
        if !dir.join(DEMO_MARKER).exists() {
            return Err(Failure::refused(format!(
                "{} exists and is not an airlock demo workspace: pass --dir for another place",
                dir.display()
            )));
        }
        std::fs::remove_dir_all(dir)
            .map_err(|e| Failure::failed(format!("cannot reset {}: {e}", dir.display())))?;
    }
    crate::private::create_dir_all(dir)
        .and_then(|()| {
            crate::private::write_new(&dir.join(DEMO_MARKER), b"made by `airlock demo`\n")
        })
        .and_then(|()| {
            crate::private::write_new(&dir.join("airlock.toml"), demo_config().as_bytes())
        })
        .map_err(|e| Failure::failed(format!("cannot create {}: {e}", dir.display())))
}

/// `airlock demo`: a fresh workspace with sandbox channels and sample posts in every
/// state, then `serve` on it: the dashboard URL and an operator token are printed, and
/// two approved posts go out through the sandbox within the first minutes.
pub async fn demo(args: DemoArgs) -> CmdResult {
    prepare_dir(&args.dir)?;
    let config = Config::load(&args.dir.join("airlock.toml"))?;
    let (app, store) = wiring::publishing_ledger(&config).await?;
    seed(&app, store.as_ref()).await?;
    let token = app
        .create_token(
            &Principal::cli(),
            "demo-operator",
            RoleSet::of(&[Role::Operator]),
        )
        .await?;
    let posts = app
        .list_posts(&Principal::cli(), &PostFilter::default())
        .await?;
    println!("airlock demo workspace: {}", args.dir.display());
    println!();
    print_posts(&posts);
    println!();
    let config_arg = args.dir.join("airlock.toml");
    if args.no_serve {
        println!("operator token: {}", token.token.expose_secret());
        println!("try: airlock --config {} post show 1", config_arg.display());
        return Ok(());
    }
    let listener = bind(args.listen.as_deref().unwrap_or(&config.listen)).await?;
    let server = Server::new(&config, app, listener)?;
    println!("dashboard:      {}/", server.url());
    println!(
        "operator token: {}   (paste it on the login page)",
        token.token.expose_secret()
    );
    println!(
        "posts 8 and 9 go out through the sandbox in the next two minutes; post 10 was claimed by"
    );
    println!(
        "a worker that crashed: the reaper returns it to the queue when its lease ends, then it goes out."
    );
    println!(
        "also try: airlock --config {} post list",
        config_arg.display()
    );
    println!("Ctrl-C stops the demo.");
    server.run(shutdown_signal()).await
}

/// Binds `address`; when its port is taken, a free port on the same host.
async fn bind(address: &str) -> Result<tokio::net::TcpListener, Failure> {
    match tokio::net::TcpListener::bind(address).await {
        Ok(listener) => Ok(listener),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            let host = address
                .rsplit_once(':')
                .map_or("127.0.0.1", |(host, _)| host);
            tokio::net::TcpListener::bind((host, 0))
                .await
                .map_err(|e| Failure::failed(format!("cannot listen on {host}: {e}")))
        }
        Err(e) => Err(Failure::failed(format!("cannot listen on {address}: {e}"))),
    }
}

const PACE: &str = "Please respect the cats' own pace.";

fn draft(channel: &str, text: &str) -> DraftInput {
    DraftInput {
        channel: channel.into(),
        text: text.into(),
        ..DraftInput::default()
    }
}

/// Sample posts in every state, made through the same guarded operations people use;
/// only the claim of a worker that crashed is written to `store` as that worker would.
async fn seed(app: &App, store: &dyn Store) -> Result<(), Failure> {
    let me = Principal::cli();
    let add = |input: DraftInput| async {
        let created = app
            .create_post(&me, input, None, DraftOrigin::default())
            .await?;
        Ok::<_, Failure>(created.post.id)
    };

    // A draft waiting for a critic, and one that breaks the policy.
    add(draft(
        "cats",
        &format!("Mochi has claimed the window seat again. {PACE}"),
    ))
    .await?;
    add(draft("cats", "Stay with us: guaranteed to meet the cat!")).await?;

    // Approved for tomorrow morning.
    let mut later = draft(
        "cats",
        &format!("Breakfast with Kuro at 8:00, if he wakes up. {PACE}"),
    );
    later.scheduled_at = Some((app.now() + chrono::Duration::hours(20)).to_rfc3339());
    let id = add(later).await?;
    app.approve(&me, id).await?;

    // Published through the sandbox, with an image.
    let mut with_image = draft(
        "cats",
        &format!("The garden cats found the sunny spot. {PACE}"),
    );
    with_image.media = vec![Media::new(
        "https://inn.example/media/garden.jpg".into(),
        Some("Three cats asleep in the sun".into()),
    )];
    for input in [
        with_image,
        draft(
            "cats",
            &format!("New blankets arrived; the cats approve. {PACE}"),
        ),
    ] {
        let id = add(input).await?;
        app.approve(&me, id).await?;
        app.publish_now(&me, id).await?;
    }

    // A publish whose outcome is unknown: it waits for a person, and its channel pauses.
    let id = add(draft(
        "drill",
        "Drill: this request times out after sending.",
    ))
    .await?;
    app.approve(&me, id).await?;
    expect_failure(app.publish_now(&me, id).await, PostStatus::NeedsReview)?;

    // A definite rejection: failed, not retried.
    let id = add(draft("strict", "Drill: the platform refuses this one.")).await?;
    app.approve(&me, id).await?;
    expect_failure(app.publish_now(&me, id).await, PostStatus::Failed)?;

    // Approved and due within the next two minutes: the dispatcher publishes them live.
    for (minutes, text) in [
        (1, "Kuro is waiting at the door for the evening guests."),
        (2, "Tonight's forecast: purring, with a chance of naps."),
    ] {
        let mut soon = draft("cats", &format!("{text} {PACE}"));
        soon.scheduled_at = Some((app.now() + chrono::Duration::minutes(minutes)).to_rfc3339());
        let id = add(soon).await?;
        app.approve(&me, id).await?;
    }

    // Claimed by a worker that then "crashed" before sending anything: `posting` until
    // its three-minute lease ends, when the reaper returns it to the queue (no intent was
    // recorded, so nothing can have gone out) and the dispatcher publishes it.
    let id = add(draft(
        "cats",
        &format!("Mochi tried the new scratching post; verdict pending. {PACE}"),
    ))
    .await?;
    app.approve(&me, id).await?;
    let read = app.get_post(&me, id).await?;
    let now = app.now();
    store
        .claim_post(&PostClaim {
            id,
            version: read.post.version,
            allow_test: true,
            worker: "crashed-demo-worker".into(),
            actor: "dispatcher:crashed-demo-worker".into(),
            now,
            lease_until: now + chrono::Duration::minutes(3),
            quota: None,
            intent: None,
        })
        .await
        .map_err(|e| Failure::failed(e.to_string()))?;
    Ok(())
}

fn expect_failure(
    result: airlock_app::Result<airlock_core::Post>,
    status: PostStatus,
) -> Result<(), Failure> {
    match result {
        Err(airlock_app::Error::OutcomeUnknown(_)) if status == PostStatus::NeedsReview => Ok(()),
        Err(airlock_app::Error::PublishFailed(_)) if status == PostStatus::Failed => Ok(()),
        other => Err(Failure::failed(format!(
            "demo drill expected {status}, got {other:?}"
        ))),
    }
}
