//! Running airlock for real: `backup` (a checked online copy of a SQLite ledger) and
//! `export` (every post as one JSON line, streamed page by page).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use airlock_app::Principal;
use airlock_app::export::EXPORT_PAGE;
use airlock_core::time::parse_time;
use airlock_core::{ChannelName, PostStatus};
use airlock_store::ExportFilter;

use crate::config::Config;
use crate::{CmdResult, Failure, wiring};

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The backup file to write (must not exist; written 0600).
    #[arg(long, value_name = "FILE")]
    to: PathBuf,
    /// Write the copy even when the ledger holds no posts (otherwise refused: an empty
    /// ledger usually means `database` points at the wrong file).
    #[arg(long)]
    allow_empty: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Only posts created, changed or with an event at or after TIME (RFC 3339 or `now`).
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// Only posts in this status.
    #[arg(long, value_name = "S")]
    status: Option<String>,
    /// Only posts on this channel (configured or not: old channels export too).
    #[arg(long, value_name = "C")]
    channel: Option<String>,
}

/// `backup --to FILE`: a consistent copy taken while `serve` runs, checked with
/// `PRAGMA integrity_check`, mode 0600. Restoring is pointing `database` at it. The
/// ledger must exist and carry exactly this binary's migrations (nothing is created or
/// migrated), and an empty ledger is refused without `--allow-empty`.
pub async fn backup(config: &Config, args: BackupArgs) -> CmdResult {
    if config.database.starts_with("sqlite:") {
        crate::operator::require_operator(config).await?;
    }
    let backup = wiring::backup_sqlite(config, &args.to, args.allow_empty).await?;
    println!(
        "backup written: {} ({} bytes, {} posts, integrity_check ok, mode 0600)",
        backup.path.display(),
        backup.bytes,
        backup.posts
    );
    println!("restore: stop airlock, point `database` at a copy of it, then run `airlock doctor`");
    Ok(())
}

/// `export`: one JSON line per post, oldest first, each as `post show --json` gives it.
/// Pages through the ledger by id, so memory holds one page whatever its size; a reader
/// that stops early (`| head`) ends the export quietly.
pub async fn export(config: &Config, args: ExportArgs) -> CmdResult {
    let filter = ExportFilter {
        since: args
            .since
            .as_deref()
            .map(|t| parse_time(t, chrono::Utc::now()))
            .transpose()
            .map_err(|e| Failure::refused(format!("--since: {e}")))?,
        status: args
            .status
            .as_deref()
            .map(str::parse::<PostStatus>)
            .transpose()
            .map_err(|e| Failure::refused(format!("--status: {e}")))?,
        channel: args
            .channel
            .as_deref()
            .map(ChannelName::parse)
            .transpose()
            .map_err(|e| Failure::refused(format!("--channel: {e}")))?,
    };
    // Never creates or migrates the ledger it reads.
    let app = wiring::app_for_current_ledger(config).await?;
    let me = Principal::cli();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut after = None;
    loop {
        let page = app.export_page(&me, &filter, after, EXPORT_PAGE).await?;
        let Some(last) = page.last() else { break };
        after = Some(last.post.id);
        for detail in &page {
            let written = serde_json::to_writer(&mut out, detail)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"));
            if let Err(e) = written {
                return stopped(e);
            }
        }
        if let Err(e) = out.flush() {
            return stopped(e);
        }
    }
    out.flush().or_else(stopped)
}

/// A closed stdout (the reader has what it wanted) is not a failure; anything else is.
fn stopped(e: std::io::Error) -> CmdResult {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(Failure::failed(format!("cannot write the export: {e}")))
    }
}
