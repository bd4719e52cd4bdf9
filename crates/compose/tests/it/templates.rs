//! Templates through candidates: Japanese text, length as each policy counts it,
//! required phrases appended.

use airlock_compose::{SkipReason, Template, candidates};
use airlock_core::ChannelKind;
use airlock_core::policy::{LengthUnit, Violation};

use crate::support::*;

fn japanese(slug: &str, description: &str) -> String {
    format!(
        "---\nstatus: publish\nslug: {slug}\ntitle: 猫の宿へようこそ\ndescription: {description}\nfact_checked: 確認済み\nupdated: 2026-11-20\ntags: [猫, 温泉宿]\n---\n本文\n"
    )
}

#[tokio::test]
async fn japanese_text_is_counted_in_characters_not_bytes() {
    let mut h = Harness::new().await;
    h.channel("threads-main", ChannelKind::Threads, None, &[], &[])
        .template = Template::parse("{title}\n{description}\n{tags}\n{url}").unwrap();
    // 400 characters, 1200 bytes: fits Threads' 500.
    let long = "猫".repeat(400);
    h.write("fits.md", &japanese("fits", &long));
    h.page("fits").await;
    // 130 cat emoji count as 4 bytes each on Threads: 520, too long.
    h.write("emoji.md", &japanese("emoji", &"🐱".repeat(130)));
    h.page("emoji").await;

    let found = candidates(&h.app(), h.target("threads-main"), &h.checker())
        .await
        .unwrap();

    assert_eq!(found.eligible.len(), 1, "{:?}", found.skipped);
    let text = &found.eligible[0].content.text;
    assert_eq!(
        text,
        &format!("猫の宿へようこそ\n{long}\n#猫 #温泉宿\n{}", h.url("fits"))
    );
    assert!(text.len() > 500 && text.chars().count() < 500);
    match &found.skipped[0].reason {
        SkipReason::Policy(violations) => {
            assert!(matches!(
                violations.as_slice(),
                [Violation::TooLong {
                    max: 500,
                    unit: LengthUnit::CharsEmojiAsUtf8Bytes,
                    ..
                }]
            ));
        }
        other => panic!("expected a policy skip, got {other}"),
    }
    assert!(
        found.skipped[0].reason.to_string().contains("at most 500"),
        "{}",
        found.skipped[0].reason
    );
}

#[tokio::test]
async fn a_configured_limit_narrows_the_platform_limit() {
    let mut h = Harness::new().await;
    h.channel("short", ChannelKind::Threads, Some(60), &[], &[]);
    let url_len = h.url("a").chars().count();
    // Title (8) + newline + description + newline + URL: exactly 60 fits, 61 does not.
    let fits = "あ".repeat(60 - 8 - 2 - url_len);
    h.write("a.md", &japanese("a", &fits));
    h.page("a").await;
    let found = candidates(&h.app(), h.target("short"), &h.checker())
        .await
        .unwrap();
    assert_eq!(found.eligible.len(), 1, "{:?}", found.skipped);
    assert_eq!(found.eligible[0].content.text.chars().count(), 60);

    h.write("a.md", &japanese("a", &format!("{fits}あ")));
    let found = candidates(&h.app(), h.target("short"), &h.checker())
        .await
        .unwrap();
    assert!(found.eligible.is_empty());
    assert!(matches!(
        &found.skipped[0].reason,
        SkipReason::Policy(v) if matches!(v.as_slice(), [Violation::TooLong { length: 61, max: 60, .. }])
    ));
}

#[tokio::test]
async fn required_phrases_are_appended_when_missing() {
    let mut h = Harness::new().await;
    h.channel(
        "threads-main",
        ChannelKind::Threads,
        None,
        &[],
        &["猫のペースを尊重してください。", "#猫"],
    );
    h.write("a.md", &japanese("a", "山あいの静かな宿です。"));
    h.page("a").await;
    let found = candidates(&h.app(), h.target("threads-main"), &h.checker())
        .await
        .unwrap();
    assert_eq!(found.eligible.len(), 1, "{:?}", found.skipped);
    assert_eq!(
        found.eligible[0].content.text,
        format!(
            "猫の宿へようこそ\n山あいの静かな宿です。\n{}\n猫のペースを尊重してください。\n#猫",
            h.url("a")
        )
    );
    // A template that already carries a phrase does not repeat it.
    h.settings
        .channels
        .get_mut(&name("threads-main"))
        .unwrap()
        .template = Template::parse("{title} {tags}\n{url}").unwrap();
    let found = candidates(&h.app(), h.target("threads-main"), &h.checker())
        .await
        .unwrap();
    assert_eq!(
        found.eligible[0].content.text,
        format!(
            "猫の宿へようこそ #猫 #温泉宿\n{}\n猫のペースを尊重してください。",
            h.url("a")
        )
    );
}
