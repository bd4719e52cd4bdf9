//! Printing for people (aligned tables) and for tools (exactly one JSON document).

use serde::Serialize;

use airlock_app::critic::ReviewPacket;
use airlock_core::time::format_utc;
use airlock_core::{Post, PostDetail, Verdict};

/// Prints one JSON document on stdout.
pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("output serializes")
    );
}

/// One line of text, shortened for a table cell.
pub fn excerpt(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out: String = flat.chars().take(max).collect();
    if flat.chars().count() > max {
        out.push('…');
    }
    out
}

/// Posts as a table.
pub fn print_posts(posts: &[Post]) {
    if posts.is_empty() {
        println!("no posts");
        return;
    }
    println!(
        "{:>5}  {:<12}  {:<16}  {:<24}  TEXT",
        "ID", "STATUS", "CHANNEL", "SCHEDULED (UTC)"
    );
    for post in posts {
        println!(
            "{:>5}  {:<12}  {:<16}  {:<24}  {}",
            post.id.0,
            post.status.as_str(),
            excerpt(post.content.channel.as_str(), 16),
            format_utc(post.scheduled_at),
            excerpt(&post.content.text, 50)
        );
    }
}

/// A post's headline after an action.
pub fn print_post_line(post: &Post) {
    println!("  status:    {}", post.status);
    println!("  channel:   {}", post.content.channel);
    println!("  hash:      {}", post.content_hash);
    if let Some(link) = &post.permalink {
        println!("  permalink: {link}");
    }
    if let Some(error) = &post.error {
        println!("  note:      {error}");
    }
}

/// A post with its timeline.
pub fn print_post_detail(detail: &PostDetail) {
    let post = &detail.post;
    println!(
        "post {}  [{}]  on {}",
        post.id, post.status, post.content.channel
    );
    if let Some(title) = &post.content.title {
        println!("title:         {title}");
    }
    println!("text:");
    for line in post.content.text.lines() {
        println!("  {line}");
    }
    for media in &post.content.media {
        println!(
            "media:         {}{}",
            media.url,
            media
                .alt
                .as_deref()
                .map(|a| format!(" ({a})"))
                .unwrap_or_default()
        );
    }
    if let Some(link) = &post.content.link {
        println!("link:          {link}");
    }
    println!("scheduled_at:  {}", format_utc(post.scheduled_at));
    println!("content_hash:  {}", post.content_hash);
    if let Some(hash) = &post.approved_hash {
        println!(
            "approved_hash: {hash} (by {})",
            post.approved_by.as_deref().unwrap_or("?")
        );
    }
    println!(
        "generation:    {}   attempts: {}",
        post.generation, post.attempts
    );
    if let Some(owner) = &post.lease_owner {
        println!(
            "lease:         {owner} until {}",
            post.lease_expires_at.map(format_utc).unwrap_or_default()
        );
    }
    if let Some(at) = post.not_before {
        println!("not_before:    {}", format_utc(at));
    }
    if let Some(id) = &post.platform_post_id {
        println!("platform id:   {id}");
    }
    if let Some(link) = &post.permalink {
        println!("permalink:     {link}");
    }
    if let Some(at) = post.posted_at {
        println!("posted_at:     {}", format_utc(at));
    }
    if let Some(at) = post.verified_at {
        println!("verified_at:   {}", format_utc(at));
    }
    if let Some(error) = &post.error {
        println!("error:         {error}");
    }
    if let Some(at) = post.quarantined_at {
        println!(
            "quarantined:   since {} after {} failed reviews (release with `airlock post release {}`)",
            format_utc(at),
            post.revisions,
            post.id
        );
    }
    if !detail.verdicts.is_empty() {
        println!("verdicts:");
        print_verdicts(&detail.verdicts);
    }
    println!("events:");
    for event in &detail.events {
        let change = match event.from {
            Some(from) if from != event.to => format!("{from} -> {}", event.to),
            Some(_) => event.kind.clone(),
            None => format!("created as {}", event.to),
        };
        println!(
            "  {}  {:<28}  {:<28}  {}",
            format_utc(event.at),
            change,
            excerpt(&event.actor, 28),
            event.note.as_deref().unwrap_or("")
        );
    }
    if !detail.intents.is_empty() {
        println!("intents:");
        for intent in &detail.intents {
            println!(
                "  generation {}  {}  key {}  at {}{}",
                intent.generation,
                intent.phase,
                intent.idempotency_key,
                format_utc(intent.created_at),
                intent
                    .platform_ref
                    .as_deref()
                    .map(|r| format!("  ref {r}"))
                    .unwrap_or_default()
            );
        }
    }
    if !detail.reservations.is_empty() {
        println!("reservations:");
        for res in &detail.reservations {
            println!(
                "  #{}  {}  created {}{}",
                res.id,
                res.state,
                format_utc(res.created_at),
                res.sent_at
                    .map(|t| format!("  sent {}", format_utc(t)))
                    .unwrap_or_default()
            );
        }
    }
}

fn print_verdicts(verdicts: &[Verdict]) {
    for verdict in verdicts {
        println!(
            "  {}  {:<4}  {:<28}  content {}  rubric {}",
            format_utc(verdict.at),
            verdict.verdict,
            excerpt(&verdict.actor, 28),
            &verdict.content_hash.as_str()[..12],
            verdict
                .rubric_hash
                .get(..12)
                .unwrap_or(&verdict.rubric_hash)
        );
        for reason in &verdict.reasons {
            println!("      - {reason}");
        }
    }
}

/// A review packet for a person at a terminal.
pub fn print_review_packet(packet: &ReviewPacket) {
    let post = &packet.post;
    println!(
        "post {}  [{}]  on {} ({})",
        post.id, post.status, packet.channel.name, packet.channel.kind
    );
    if let Some(title) = &post.content.title {
        println!("title:         {title}");
    }
    println!("text:");
    for line in post.content.text.lines() {
        println!("  {line}");
    }
    println!("content_hash:  {}", packet.content_hash);
    println!(
        "approvals:     {} of {} ({})",
        packet.approvals.passed_by.len(),
        packet.approvals.required,
        if packet.approvals.passed_by.is_empty() {
            "none yet".to_owned()
        } else {
            packet.approvals.passed_by.join(", ")
        }
    );
    for void in &packet.approvals.not_counted {
        println!("not counted:   verdict {}: {}", void.verdict, void.reason);
    }
    println!("scheduled_at:  {}", format_utc(post.scheduled_at));
    for moved in &packet.schedule_moves {
        println!(
            "moved:         {} by {}: from {} to {}",
            format_utc(moved.at),
            moved.actor,
            format_utc(moved.from),
            format_utc(moved.to)
        );
    }
    println!(
        "revisions:     {} failed of {} before quarantine",
        packet.revisions.failed, packet.revisions.max
    );
    if !packet.channel.policy.violations.is_empty() {
        println!(
            "policy:        {}",
            packet.channel.policy.violations.join("; ")
        );
    }
    if let Some(why) = &packet.verdict_refused {
        println!("verdict:       refused now: {why}");
    }
    println!(
        "rubric:        {} ({})",
        packet.rubric.origin, packet.rubric.hash
    );
    for line in packet.rubric.text.lines() {
        println!("  | {line}");
    }
    if let Some(change) = &packet.changes_since_last_verdict {
        println!(
            "changed since verdict {}: {}",
            change.since_verdict,
            change.change.fields.join(", ")
        );
        for line in &change.change.text_diff {
            println!("  {line}");
        }
    }
    if !packet.verdicts.is_empty() {
        println!("verdicts:");
        print_verdicts(&packet.verdicts);
    }
}
