//! `airlock candidates` and `airlock compose`: posts from a Markdown site (docs/sites.md),
//! and the mapping of `[sites.*]` and the channels' `site`, `slots`, `template` and
//! `auto_approve` keys to [`airlock_compose::ComposeSettings`] (also used by `serve` for
//! the slot scheduler).
//!
//! Both commands act as the scheduler does: they draft as `scheduler` and approve as the
//! channel's `auto_approve` principal, never as the operator.

use clap::Args;
use serde_json::json;

use airlock_compose::{
    ChannelCompose, CheckSettings, Checker, ComposeRequest, ComposeSettings, Composed,
    SiteSettings, Slot, Template,
};
use airlock_core::time::format_utc;

use crate::config::Config;
use crate::output::{print_json, print_post_line};
use crate::{CmdResult, Failure, wiring};

/// `airlock candidates`.
#[derive(Debug, Args)]
pub struct CandidatesArgs {
    /// The site (`[sites.NAME]`).
    #[arg(long, value_name = "NAME")]
    site: String,
    /// The channel, which must draw from that site.
    #[arg(long, value_name = "C")]
    channel: String,
    /// Print `{"eligible": [...], "skipped": [...]}`.
    #[arg(long)]
    json: bool,
}

/// `airlock compose`.
#[derive(Debug, Args)]
pub struct ComposeArgs {
    /// The site (`[sites.NAME]`).
    #[arg(long, value_name = "NAME")]
    site: String,
    /// The channel, which must draw from that site.
    #[arg(long, value_name = "C")]
    channel: String,
    /// Fill this slot (local HH:MM in the channel's time zone) of the current day; once.
    #[arg(long, value_name = "HH:MM")]
    slot: Option<String>,
    /// Show what would be drafted without writing anything.
    #[arg(long)]
    dry_run: bool,
    /// Print the post as JSON (`null` when the slot is already filled or nothing is eligible).
    #[arg(long)]
    json: bool,
}

/// The compose settings of a configuration: every site, and every channel with a `site`.
/// Refuses a bad slot or template, and compose keys on a channel without a `site`.
pub fn settings(config: &Config) -> Result<ComposeSettings, Failure> {
    let refuse =
        |message: String| Failure::refused(format!("{}: {message}", config.path.display()));
    let sites = config
        .sites
        .values()
        .map(|site| {
            let settings = SiteSettings {
                name: site.name.clone(),
                dir: site.dir.clone(),
                base_url: site.base_url.clone(),
                media_prefix: site.media_prefix.clone(),
                reuse_after: site.reuse_after,
            };
            (site.name.clone(), settings)
        })
        .collect();
    let mut channels = std::collections::BTreeMap::new();
    for channel in config.channels.values() {
        let key = |k: &str| format!("channels.{}.{k}", channel.name);
        let Some(site) = &channel.site else {
            for (present, k) in [
                (!channel.slots.is_empty(), "slots"),
                (channel.template.is_some(), "template"),
                (channel.auto_approve.is_some(), "auto_approve"),
            ] {
                if present {
                    return Err(refuse(format!(
                        "{} needs {}: name the site the channel draws from",
                        key(k),
                        key("site")
                    )));
                }
            }
            continue;
        };
        let slots = channel
            .slots
            .iter()
            .map(|s| Slot::parse(s).map_err(|e| refuse(format!("{}: {e}", key("slots")))))
            .collect::<Result<Vec<_>, _>>()?;
        let template = match &channel.template {
            Some(text) => {
                Template::parse(text).map_err(|e| refuse(format!("{}: {e}", key("template"))))?
            }
            None => Template::default(),
        };
        let auto_approve = match channel.auto_approve.as_deref().map(str::trim) {
            Some("") => {
                return Err(refuse(format!(
                    "{} is empty: name the approving principal or remove the key",
                    key("auto_approve")
                )));
            }
            other => other.map(str::to_owned),
        };
        channels.insert(
            channel.name.clone(),
            ChannelCompose {
                channel: channel.name.clone(),
                site: site.clone(),
                slots,
                template,
                auto_approve,
            },
        );
    }
    Ok(ComposeSettings {
        sites,
        channels,
        check: CheckSettings::default(),
    })
}

/// `airlock candidates --site NAME --channel C [--json]`.
pub async fn candidates(config: &Config, args: CandidatesArgs) -> CmdResult {
    let settings = settings(config)?;
    check_channel(config, &args.channel)?;
    let target = settings
        .target(&args.site, &args.channel)
        .map_err(failure)?;
    let app = wiring::app_for_ledger(config).await?;
    let checker = Checker::new(settings.check);
    let found = airlock_compose::candidates(&app, target, &checker)
        .await
        .map_err(failure)?;
    if args.json {
        print_json(&found);
        return Ok(());
    }
    if found.eligible.is_empty() {
        println!(
            "no eligible article on {} from site {}",
            args.channel, args.site
        );
    } else {
        println!("eligible, in the order compose takes them:");
        for (idx, article) in found.eligible.iter().enumerate() {
            println!(
                "  {:>3}. {}  {}  {}",
                idx + 1,
                article.path,
                article.url,
                article.title
            );
            if let Some(image) = &article.image {
                println!("       image {image}");
            }
        }
    }
    if !found.skipped.is_empty() {
        println!("skipped:");
        for skipped in &found.skipped {
            println!("  {}: {}", skipped.path, skipped.reason);
        }
    }
    Ok(())
}

/// `airlock compose --site NAME --channel C [--slot HH:MM] [--dry-run] [--json]`.
pub async fn compose(config: &Config, args: ComposeArgs) -> CmdResult {
    let slot = args
        .slot
        .as_deref()
        .map(Slot::parse)
        .transpose()
        .map_err(|e| Failure::refused(format!("--slot: {e}")))?;
    let settings = settings(config)?;
    check_channel(config, &args.channel)?;
    let target = settings
        .target(&args.site, &args.channel)
        .map_err(failure)?;
    let app = wiring::app_for_ledger(config).await?;
    if !args.dry_run {
        // Drafting (and auto-approving) changes the ledger.
        crate::operator::acting(config, &app).await?;
    }
    let checker = Checker::new(settings.check);
    let request = ComposeRequest {
        slot,
        dry_run: args.dry_run,
    };
    let composed = airlock_compose::compose(&app, target, &checker, request)
        .await
        .map_err(failure)?;
    match composed {
        Composed::Drafted { post, article } => {
            if args.json {
                print_json(&post);
            } else {
                println!(
                    "drafted post {} from {} for {}{}",
                    post.id,
                    article.path,
                    format_utc(post.scheduled_at),
                    post.slot
                        .as_deref()
                        .map(|s| format!(" (slot {s})"))
                        .unwrap_or_default()
                );
                print_post_line(&post);
            }
        }
        Composed::WouldDraft(plan) => {
            if args.json {
                print_json(&json!({
                    "dry_run": true,
                    "channel": plan.content.channel,
                    "status": "draft",
                    "title": plan.content.title,
                    "text": plan.content.text,
                    "media": plan.content.media,
                    "link": plan.content.link,
                    "source": plan.content.source,
                    "scheduled_at": plan.scheduled_at,
                    "slot": plan.slot,
                    "content_hash": plan.content.hash(),
                    "auto_approve": plan.auto_approve,
                }));
            } else {
                println!(
                    "dry run: would draft from {} for {}{}{}",
                    plan.article.path,
                    format_utc(plan.scheduled_at),
                    plan.slot
                        .as_deref()
                        .map(|s| format!(" (slot {s})"))
                        .unwrap_or_default(),
                    plan.auto_approve
                        .as_deref()
                        .map(|a| format!(", approved by {a}"))
                        .unwrap_or_default()
                );
                for media in &plan.content.media {
                    println!("media: {}", media.url);
                }
                println!("text:");
                for line in plan.content.text.lines() {
                    println!("  {line}");
                }
            }
        }
        Composed::SlotFilled { post } => {
            let message = format!(
                "slot {} on {} is already filled by post {} ({}); nothing drafted",
                post.slot.as_deref().unwrap_or("?"),
                post.content.channel,
                post.id,
                post.status
            );
            if args.json {
                print_json(&serde_json::Value::Null);
                crate::log::line(tracing::Level::INFO, &message);
            } else {
                println!("{message}");
            }
        }
        Composed::NothingEligible { skipped } => {
            let message = format!(
                "nothing drafted: no article of site {} is eligible for {} ({} skipped)",
                args.site,
                args.channel,
                skipped.len()
            );
            if args.json {
                print_json(&serde_json::Value::Null);
                crate::log::line(
                    tracing::Level::INFO,
                    &format!(
                        "{message}; see `airlock candidates --site {} --channel {}`",
                        args.site, args.channel
                    ),
                );
            } else {
                println!("{message}:");
                for skipped in &skipped {
                    println!("  {}: {}", skipped.path, skipped.reason);
                }
            }
        }
    }
    Ok(())
}

/// Refuses a channel the configuration does not have, naming the ones it has.
fn check_channel(config: &Config, channel: &str) -> Result<(), Failure> {
    if config.channels.keys().any(|c| c.as_str() == channel) {
        return Ok(());
    }
    let known: Vec<&str> = config.channels.keys().map(|c| c.as_str()).collect();
    Err(Failure::refused(format!(
        "unknown channel {channel:?}: configured channels are {}",
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    )))
}

fn failure(e: airlock_compose::Error) -> Failure {
    if e.is_refusal() {
        Failure::refused(e.to_string())
    } else {
        Failure::failed(e.to_string())
    }
}
