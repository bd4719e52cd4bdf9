//! `airlock`: the one binary. Parses the command line, loads `airlock.toml`, wires the
//! store, adapters and app together, runs the command, and maps what happened to the
//! exit codes of docs/cli.md: `0` success, `1` operational failure, `2` refused (with a
//! one-line reason on stderr).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod admin;
#[cfg(test)]
mod build_info;
mod compose;
mod config;
mod demo;
mod log;
mod mcp;
mod operator;
mod ops;
mod output;
mod post;
mod private;
mod rubric;
mod run;
mod wiring;

/// `airlock --version`: the release and the commit it was built from (`build.rs`).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("AIRLOCK_GIT_COMMIT"),
    ")"
);

const ABOUT: &str = "The one door between AI agents and public platforms: agents draft posts, a critic \
approves them, and airlock publishes each approved post at most once, inside quotas, handing \
every unknown outcome to a person.";

const AFTER_HELP: &str = "\
Getting started:
  airlock demo                    a demo ledger with posts in every state, and its dashboard
  airlock init --dir DIR          write DIR/airlock.toml (a sandbox channel), create the ledger,
                                  print an operator token
  airlock serve                   dashboard, HTTP API, MCP for agents, dispatcher, notifications

Configuration: --config FILE, else $AIRLOCK_CONFIG, else ./airlock.toml.
Logs on stderr: AIRLOCK_LOG=info (a filter; default warn), AIRLOCK_LOG_FORMAT=json (one JSON
object per line).
Exit codes: 0 success, 1 operational failure, 2 refused (the reason is on stderr).
Running it as a service (systemd, backups, alerts, upgrades): docs/deploy.md.";

/// The `airlock` command line.
#[derive(Debug, Parser)]
#[command(name = "airlock", version = VERSION, about = ABOUT, after_help = AFTER_HELP)]
struct Cli {
    /// Configuration file (default ./airlock.toml, or AIRLOCK_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write a commented airlock.toml with a sandbox channel, create the store, print an operator token.
    Init {
        /// Directory to initialize (default: current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Set up a demo workspace with sample posts in every state, and serve its dashboard.
    Demo(demo::DemoArgs),
    /// Run the HTTP API, dashboard, MCP endpoint, dispatcher, reaper and notification deliverer.
    Serve,
    /// MCP over stdio for one agent; the API token comes from AIRLOCK_TOKEN.
    Mcp,
    /// One pass: reap, reconcile, publish what is due, deliver notifications (for cron).
    Dispatch {
        /// Required: run one pass and exit.
        #[arg(long)]
        once: bool,
        /// Only publish on this channel (repeatable).
        #[arg(long = "channel", value_name = "C")]
        channels: Vec<String>,
        /// Print what happened as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Drafts and the post lifecycle.
    #[command(subcommand)]
    Post(post::PostCommand),
    /// Pause publishing on one channel or everywhere.
    Pause(PauseArgs),
    /// Resume publishing on one channel or everywhere.
    Resume(ScopeArgs),
    /// Quota use per channel and for the rolling window, with when the next slot frees.
    Quota {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// API tokens for agents and dashboards.
    #[command(subcommand)]
    Token(admin::TokenCommand),
    /// Configured channels with pause state and today's use.
    Channels {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Apply pending migrations and exit.
    Migrate,
    /// Check config, store, ledger invariants and credential files.
    Doctor {
        /// Also check each channel's account with its platform.
        #[arg(long)]
        online: bool,
        /// The ledger was just restored from a backup: also list what the backup brought
        /// back that may have been revoked or ended since (active tokens, live dashboard
        /// sessions, undelivered notifications, approved and posting posts).
        #[arg(long)]
        restored: bool,
    },
    /// Write a consistent, checked copy of a SQLite ledger while `serve` runs (mode 0600).
    Backup(ops::BackupArgs),
    /// Print every post as one JSON line, as `post show --json` gives it, oldest first.
    Export(ops::ExportArgs),
    /// Articles of a site eligible for a channel, in the order compose takes them, and why others are skipped.
    Candidates(compose::CandidatesArgs),
    /// Draft the next post for a channel from its site, optionally for a slot (HH:MM).
    Compose(compose::ComposeArgs),
}

#[derive(Debug, Args)]
struct ScopeArgs {
    /// The channel (or --all).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    channel: Option<String>,
    /// Every channel.
    #[arg(long)]
    all: bool,
}

#[derive(Debug, Args)]
struct PauseArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// Why (shown to everyone who looks).
    #[arg(long)]
    reason: String,
}

/// A command's failure: a refusal (exit 2) or an operational failure (exit 1).
#[derive(Debug)]
pub struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// Refused: invalid input, policy, illegal transition, quota, paused.
    pub fn refused(message: impl Into<String>) -> Self {
        Failure {
            code: 2,
            message: message.into(),
        }
    }

    /// Failed: store unreachable, a publish that ended failed or needs review.
    pub fn failed(message: impl Into<String>) -> Self {
        Failure {
            code: 1,
            message: message.into(),
        }
    }
}

impl From<airlock_app::Error> for Failure {
    fn from(e: airlock_app::Error) -> Self {
        if e.is_refusal() {
            Failure::refused(e.to_string())
        } else {
            Failure::failed(e.to_string())
        }
    }
}

impl From<config::ConfigError> for Failure {
    fn from(e: config::ConfigError) -> Self {
        Failure::refused(e.to_string())
    }
}

/// The outcome of a command.
pub type CmdResult = Result<(), Failure>;

/// A reader that closed standard output early (`airlock post show 7 | head`) has what it
/// wanted: printing to it ends the command quietly, as it ends `cat`, not with a panic.
fn quiet_on_closed_stdout() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout")
            && message.to_ascii_lowercase().contains("broken pipe")
        {
            std::process::exit(0);
        }
        previous(info);
    }));
}

fn main() -> ExitCode {
    if let Err(message) = log::choose_format() {
        log::line(tracing::Level::ERROR, &message);
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            log::line(tracing::Level::ERROR, &one_line_usage_error(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    log::init();
    quiet_on_closed_stdout();
    // Failpoints for the drills in the tests; nothing in any other build.
    airlock_app::drill::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts");
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            log::line(tracing::Level::ERROR, &failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// clap's usage errors span several lines; docs/cli.md promises one line on stderr.
fn one_line_usage_error(text: &str) -> String {
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .map(|l| l.trim_start_matches("error: "))
        .collect();
    parts
        .join(" ")
        .replace(": Usage:", "; usage:")
        .replace(" Usage:", "; usage:")
}

async fn run(cli: Cli) -> CmdResult {
    let config_path = config::locate(cli.config.as_deref());
    let load = || config::Config::load(&config_path);
    match cli.command {
        Command::Init { dir } => demo::init(dir).await,
        Command::Demo(args) => demo::demo(args).await,
        Command::Serve => run::serve(&load()?).await,
        Command::Mcp => mcp::run(&load()?).await,
        Command::Dispatch {
            once,
            channels,
            json,
        } => {
            if !once {
                return Err(Failure::refused(
                    "dispatch needs --once (for cron); `airlock serve` runs the dispatcher continuously",
                ));
            }
            run::dispatch_once(&load()?, &channels, json).await
        }
        Command::Post(command) => post::run(&load()?, command).await,
        Command::Pause(args) => {
            admin::pause(&load()?, args.scope.channel.as_deref(), &args.reason).await
        }
        Command::Resume(args) => admin::resume(&load()?, args.channel.as_deref()).await,
        Command::Quota { json } => admin::quota(&load()?, json).await,
        Command::Token(command) => admin::token(&load()?, command).await,
        Command::Channels { json } => admin::channels(&load()?, json).await,
        Command::Migrate => {
            let config = load()?;
            operator::require_operator(&config).await?;
            wiring::open_store(&config).await?;
            println!(
                "migrations applied: {}",
                airlock_platforms::http::without_secrets(&config.database)
            );
            Ok(())
        }
        Command::Doctor { online, restored } => admin::doctor(&config_path, online, restored).await,
        Command::Backup(args) => ops::backup(&load()?, args).await,
        Command::Export(args) => ops::export(&load()?, args).await,
        Command::Candidates(args) => compose::candidates(&load()?, args).await,
        Command::Compose(args) => compose::compose(&load()?, args).await,
    }
}
