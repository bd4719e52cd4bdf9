//! Operator commands: tokens, channels, pauses, quota and doctor.

use std::path::Path;

use clap::Subcommand;
use secrecy::ExposeSecret;

use airlock_app::Principal;
use airlock_core::quota::CLOCK_ALLOWANCE;
use airlock_core::time::format_utc;
use airlock_core::{RoleSet, Span};
use airlock_platforms::credential::check_file;

use crate::config::Config;
use crate::output::print_json;
use crate::{CmdResult, Failure, wiring};

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token; its secret is printed once and stored only as a hash.
    Create {
        /// Unique name (recorded as `token:<name>` on everything it does).
        #[arg(long)]
        name: String,
        /// Roles: writer, critic, publisher, operator (comma separated).
        #[arg(long = "role", value_name = "R[,R]")]
        roles: String,
        /// Print `{"name", "roles", "token"}`.
        #[arg(long)]
        json: bool,
    },
    /// List tokens (never their secrets).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token. Its passes count for nobody from now on: an approved post that
    /// needed its pass returns to draft.
    Revoke {
        /// Its name.
        name: String,
    },
}

pub async fn token(config: &Config, command: TokenCommand) -> CmdResult {
    let app = wiring::app_for_ledger(config).await?;
    let me = match command {
        TokenCommand::List { .. } => Principal::cli(),
        _ => crate::operator::acting(config, &app).await?,
    };
    match command {
        TokenCommand::Create { name, roles, json } => {
            let roles = RoleSet::parse_list(&roles).map_err(|e| Failure::refused(e.to_string()))?;
            let issued = app.create_token(&me, &name, roles).await?;
            if json {
                print_json(&issued);
            } else {
                println!(
                    "token {} ({}) created; it is shown only now:",
                    issued.name,
                    issued.roles.to_list()
                );
                println!("{}", issued.token.expose_secret());
            }
        }
        TokenCommand::List { json } => {
            let tokens = app.list_tokens(&me).await?;
            if json {
                print_json(&tokens);
            } else if tokens.is_empty() {
                println!("no tokens: create one with `airlock token create --name N --role R`");
            } else {
                println!(
                    "{:<24}  {:<36}  {:<24}  STATE",
                    "NAME", "ROLES", "CREATED (UTC)"
                );
                for token in tokens {
                    let state = match token.revoked_at {
                        Some(at) => format!("revoked {}", format_utc(at)),
                        None => "active".into(),
                    };
                    println!(
                        "{:<24}  {:<36}  {:<24}  {state}",
                        token.name,
                        token.roles.to_list(),
                        format_utc(token.created_at)
                    );
                }
            }
        }
        TokenCommand::Revoke { name } => {
            let withdrawn = app.revoke_token(&me, &name).await?;
            println!("token {name} revoked");
            for post in withdrawn {
                println!("post {}: {}", post.id, post.reason);
            }
        }
    }
    Ok(())
}

pub async fn channels(config: &Config, json: bool) -> CmdResult {
    let app = wiring::app_for_ledger(config).await?;
    let statuses = app.channel_statuses(&Principal::cli()).await?;
    if json {
        print_json(&statuses);
        return Ok(());
    }
    println!(
        "{:<20}  {:<10}  {:<20}  {:<8}  STATE",
        "NAME", "KIND", "ACCOUNT", "TODAY"
    );
    for channel in statuses {
        println!(
            "{:<20}  {:<10}  {:<20}  {:<8}  {}",
            channel.name.as_str(),
            channel.kind.as_str(),
            channel.account.as_deref().unwrap_or("-"),
            format!("{}/{}", channel.daily_used, channel.daily_limit),
            channel
                .pause_reason
                .map(|r| format!("paused: {r}"))
                .unwrap_or_else(|| "open".into())
        );
    }
    Ok(())
}

pub async fn pause(config: &Config, channel: Option<&str>, reason: &str) -> CmdResult {
    let app = wiring::app_for_ledger(config).await?;
    let me = crate::operator::acting(config, &app).await?;
    let created = app.pause(&me, channel, reason).await?;
    let what = channel.unwrap_or("all channels");
    if created {
        println!("{what} paused: {reason}");
    } else {
        println!("{what} was already paused; the earlier reason stands");
    }
    Ok(())
}

pub async fn resume(config: &Config, channel: Option<&str>) -> CmdResult {
    let app = wiring::app_for_ledger(config).await?;
    let what = channel.unwrap_or("all channels");
    let me = crate::operator::acting(config, &app).await?;
    if app.resume(&me, channel).await? {
        println!("{what} resumed");
    } else {
        println!("{what} was not paused");
    }
    Ok(())
}

pub async fn quota(config: &Config, json: bool) -> CmdResult {
    let app = wiring::app_for_ledger(config).await?;
    let status = app.quota_status(&Principal::cli()).await?;
    if json {
        print_json(&status);
        return Ok(());
    }
    let next = |at: Option<chrono::DateTime<chrono::Utc>>| {
        at.map(|t| format!("next slot {}", format_utc(t)))
            .unwrap_or_else(|| "a slot is free now".into())
    };
    let w = &status.window;
    println!(
        "window {} (all channels): {}/{} used, {} left, {}",
        w.window,
        w.usage.used,
        w.usage.limit,
        w.usage.remaining,
        next(w.usage.next_free_at)
    );
    for channel in &status.channels {
        println!(
            "{} (day in {}): {}/{} used, {} left, {}",
            channel.channel,
            channel.timezone,
            channel.usage.used,
            channel.usage.limit,
            channel.usage.remaining,
            next(channel.next_slot_at)
        );
        if let Some(budget) = &channel.budget {
            let micros =
                |usd: f64| (usd * airlock_core::budget::MICROS_PER_USD as f64).round() as u64;
            println!(
                "{} (month in {}): {} of {} budget spent, {} left{}",
                channel.channel,
                channel.timezone,
                airlock_core::budget::format_usd(micros(budget.used_usd)),
                airlock_core::budget::format_usd(micros(budget.budget_usd)),
                airlock_core::budget::format_usd(micros(budget.remaining_usd)),
                budget
                    .next_free_at
                    .map(|t| format!(", spent until {}", format_utc(t)))
                    .unwrap_or_default()
            );
        }
    }
    Ok(())
}

/// `doctor`: every check prints a line; exit 1 when the ledger is corrupt or a check fails.
pub async fn doctor(config_path: &Path, online: bool, restored: bool) -> CmdResult {
    let mut problems = 0;
    let mut report = |ok: bool, what: String| {
        if ok {
            println!("ok    {what}");
        } else {
            problems += 1;
            println!("FAIL  {what}");
        }
    };
    let config = match Config::load(config_path) {
        Ok(config) => {
            report(true, format!("config {}", config_path.display()));
            config
        }
        Err(e) => {
            report(false, e.to_string());
            return Err(Failure::refused(
                "the configuration is not usable; see above",
            ));
        }
    };
    let files = config
        .channels
        .values()
        .flat_map(|c| {
            let owner = format!("channel {}", c.name);
            c.credential_files()
                .into_iter()
                .map(move |f| (owner.clone(), f))
        })
        .chain(config.sinks.values().flat_map(|s| {
            let owner = format!("sink {}", s.name);
            s.target
                .credential_files()
                .into_iter()
                .map(move |f| (owner.clone(), f))
        }));
    for (owner, file) in files {
        match check_file(file) {
            Ok(()) => report(true, format!("{owner}: credential file {}", file.display())),
            Err(e) => report(false, format!("{owner}: {e}")),
        }
    }
    // What each kind checks beyond its files (X: a token file whose directory airlock
    // cannot write, where a refresh would spend the refresh token).
    for channel in config.channels.values() {
        for check in channel.platform.keys().doctor() {
            match check {
                Ok(what) => report(true, format!("channel {}: {what}", channel.name)),
                Err(e) => report(false, format!("channel {}: {e}", channel.name)),
            }
        }
    }
    let store = match wiring::open_store(&config).await {
        Ok(store) => {
            report(
                true,
                format!(
                    "store {} reachable, migrations applied",
                    airlock_platforms::http::without_secrets(&config.database)
                ),
            );
            store
        }
        Err(e) => {
            report(false, format!("store: {}", e.message));
            return Err(Failure::failed(format!("{problems} check(s) failed")));
        }
    };
    match wiring::pg_mode(&config).await {
        Ok(Some(mode)) => report(
            mode.functions_current,
            format!("postgres: {}", mode.describe()),
        ),
        Ok(None) => {}
        Err(e) => report(false, format!("postgres: {}", e.message)),
    }
    match wiring::pg_checks(&config).await {
        Ok(checks) => {
            for (ok, what) in checks {
                match ok {
                    Some(ok) => report(ok, what),
                    None => println!("warn  {what}"),
                }
            }
        }
        Err(e) => report(false, format!("postgres: {}", e.message)),
    }
    let clock = airlock_app::App::system_clock();
    match airlock_store::LedgerClock::offset_from(store.as_ref(), &*clock).await {
        Ok(Some(offset)) => {
            let mine = clock();
            let apart = Span::new(offset.abs());
            if offset.abs() > CLOCK_ALLOWANCE {
                report(
                    false,
                    format!(
                        "clock: this machine's clock reads {} but the database's reads {} ({apart} apart, more than the {} airlock allows): airlock follows the database's clock, but set this machine's right (NTP)",
                        format_utc(mine),
                        format_utc(mine + offset),
                        Span::new(CLOCK_ALLOWANCE)
                    ),
                );
            } else {
                report(
                    true,
                    format!("clock: within {apart} of the database's, which decides"),
                );
            }
        }
        Ok(None) if !config.database.starts_with("sqlite:") => {
            report(
                false,
                "clock: the ledger decides by each process's own clock (ledger_clock is 'caller', a setting for tests): as the owner, run `UPDATE ledger_clock SET source = 'database'`".into(),
            );
        }
        Ok(None) => {}
        Err(e) => report(false, format!("clock: {e}")),
    }
    match store.check_invariants(chrono::Utc::now()).await {
        Ok(broken) if broken.is_empty() => report(true, "ledger invariants hold".into()),
        Ok(broken) => {
            for problem in broken {
                report(false, format!("ledger: {problem}"));
            }
        }
        Err(e) => report(false, format!("ledger: {e}")),
    }
    match store.durability_warnings().await {
        Ok(warnings) if warnings.is_empty() => report(
            true,
            "commits are durable (flushed to disk before they return)".into(),
        ),
        Ok(warnings) => {
            for warning in warnings {
                println!("warn  {warning}");
            }
        }
        Err(e) => report(false, format!("durability settings: {e}")),
    }
    match store.pauses().await {
        Ok(pauses) => {
            for pause in pauses {
                let scope = if pause.scope == "*" {
                    "all channels".into()
                } else {
                    pause.scope.clone()
                };
                println!(
                    "note  {scope} paused since {} by {}: {}",
                    format_utc(pause.at),
                    pause.actor,
                    pause.reason
                );
            }
        }
        Err(e) => report(false, format!("pauses: {e}")),
    }
    if let Ok(stats) = store.outbox_stats().await
        && stats.abandoned > 0
    {
        println!(
            "note  {} notification(s) were given up after repeated delivery failures",
            stats.abandoned
        );
    }
    if restored {
        restored_notes(store.as_ref()).await;
    }
    if online {
        match wiring::build_platforms(&config) {
            Ok(platforms) => {
                for channel in config.channels.values() {
                    let platform = &platforms[&channel.name];
                    match platform.account().await {
                        Ok(None) => report(
                            true,
                            format!(
                                "channel {}: no account to check ({})",
                                channel.name,
                                channel.kind()
                            ),
                        ),
                        Ok(Some(account)) => {
                            let expected = channel.account().unwrap_or_default();
                            let matches = expected
                                .trim_start_matches('@')
                                .eq_ignore_ascii_case(account.username.trim_start_matches('@'));
                            report(
                                matches,
                                format!(
                                    "channel {}: token belongs to {:?}{}",
                                    channel.name,
                                    account.username,
                                    if matches {
                                        String::new()
                                    } else {
                                        format!(", expected {expected:?}")
                                    }
                                ),
                            );
                        }
                        Err(e) => report(
                            false,
                            format!("channel {}: account check failed: {e}", channel.name),
                        ),
                    }
                }
            }
            Err(e) => report(false, e.message),
        }
    }
    if problems > 0 {
        Err(Failure::failed(format!(
            "{problems} check(s) failed; see above"
        )))
    } else {
        Ok(())
    }
}

/// What `doctor --restored` lists: a backup is the ledger of its moment, so tokens
/// revoked, sessions ended and notifications delivered since then are back. Each line
/// says what to check and how to settle it; nothing is changed.
async fn restored_notes(store: &dyn airlock_store::Store) {
    let now = chrono::Utc::now();
    match store.tokens().await {
        Ok(tokens) => {
            let active: Vec<_> = tokens.iter().filter(|t| t.revoked_at.is_none()).collect();
            println!(
                "note  restored ledger: {} active token(s); revoke again (`airlock token revoke NAME`) every one revoked after the backup was taken:",
                active.len()
            );
            for token in active {
                println!(
                    "note    token {} [{}] created {}, last used {}",
                    token.name,
                    token.roles.to_list(),
                    format_utc(token.created_at),
                    token
                        .last_used_at
                        .map(format_utc)
                        .unwrap_or_else(|| "never".into())
                );
            }
        }
        Err(e) => println!("warn  restored ledger: cannot list tokens: {e}"),
    }
    match store.live_sessions(now).await {
        Ok(sessions) => {
            println!(
                "note  restored ledger: {} dashboard session(s) still live; one signed out since the backup is signed in again until it expires: revoke (and re-create) its token to end it:",
                sessions.len()
            );
            for session in sessions {
                println!(
                    "note    session of token {} opened {}, ends {}",
                    session.token,
                    format_utc(session.created_at),
                    format_utc(session.expires_at)
                );
            }
        }
        Err(e) => println!("warn  restored ledger: cannot list sessions: {e}"),
    }
    if let Ok(stats) = store.outbox_stats().await
        && stats.pending > 0
    {
        println!(
            "note  restored ledger: {} notification(s) wait for delivery; some may have been delivered before the restore and will be sent again (receivers drop repeats by X-Airlock-Event-Id)",
            stats.pending
        );
    }
    if let Ok(counts) = store.status_counts().await {
        for (status, n) in counts {
            if matches!(
                status,
                airlock_core::PostStatus::Approved | airlock_core::PostStatus::Posting
            ) && n > 0
            {
                println!(
                    "note  restored ledger: {n} post(s) {status}: compare with the platforms before `airlock resume --all` (`airlock post list --status {status}`); any that went out after the backup must not go again"
                );
            }
        }
    }
}
