//! Printing for people (aligned tables) and for tools (exactly one JSON document).

use serde::Serialize;

use airlock_core::time::format_utc;
use airlock_core::{Post, PostDetail};

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
