//! The slot scheduler: fills each slot once inside its lead, survives restarts and a
//! second scheduler on the same ledger, crosses midnight, and stops when cancelled.

use std::time::Duration as StdDuration;

use chrono::{Duration, TimeZone, Utc};
use tokio_util::sync::CancellationToken;

use airlock_compose::{ScheduleSettings, Scheduler, Slot, SlotOutcome};
use airlock_core::{ChannelKind, PostStatus};
use airlock_store::{PostFilter, Reads};

use crate::support::*;

async fn harness(slots: &[&str]) -> Harness {
    let mut h = Harness::new().await;
    let channel = h.channel("cats", ChannelKind::Sandbox, None, &[], &[]);
    channel.slots = slots.iter().map(|s| Slot::parse(s).unwrap()).collect();
    channel.auto_approve = Some("critic-bot".into());
    for i in 0..3 {
        h.article(&format!("a{i}.md"), &format!("a{i}"), "2026-11-01")
            .await;
    }
    h
}

fn scheduler(h: &Harness) -> Scheduler {
    Scheduler::new(h.app(), h.settings.clone(), ScheduleSettings::default()).unwrap()
}

async fn posts(h: &Harness) -> Vec<airlock_core::Post> {
    let mut posts = h.store.list_posts(&PostFilter::default()).await.unwrap();
    posts.reverse();
    posts
}

#[tokio::test]
async fn the_scheduler_fills_a_slot_once_within_its_lead() {
    let h = harness(&["08:00"]).await;
    let scheduler = scheduler(&h);
    // 06:30 in Tokyo: the 08:00 slot opens at 07:00.
    h.clock
        .set(Utc.with_ymd_and_hms(2026, 11, 30, 21, 30, 0).unwrap());
    assert!(scheduler.run_once().await.is_empty());

    h.clock
        .set(Utc.with_ymd_and_hms(2026, 11, 30, 22, 5, 0).unwrap());
    let runs = scheduler.run_once().await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].key, "2026-12-01T08:00+09:00");
    assert!(matches!(runs[0].outcome, SlotOutcome::Drafted(_)));
    let all = posts(&h).await;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].status, PostStatus::Approved);
    assert_eq!(
        all[0].scheduled_at,
        Utc.with_ymd_and_hms(2026, 11, 30, 23, 0, 0).unwrap()
    );

    // Later passes leave the filled slot alone.
    h.clock.advance(Duration::minutes(30));
    assert!(scheduler.run_once().await.is_empty());
    // A slot missed for longer than the catch-up window (10:00 on 2 December, the
    // scheduler was down) is left empty; the next day's slot is filled once.
    h.clock
        .set(Utc.with_ymd_and_hms(2026, 12, 2, 1, 0, 0).unwrap());
    assert!(scheduler.run_once().await.is_empty());
    h.clock
        .set(Utc.with_ymd_and_hms(2026, 12, 2, 22, 30, 0).unwrap());
    let runs = scheduler.run_once().await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].key, "2026-12-03T08:00+09:00");
    assert_eq!(posts(&h).await.len(), 2);
}

#[tokio::test]
async fn a_restarted_or_second_scheduler_finds_the_slot_filled() {
    let h = harness(&["08:00", "19:00"]).await;
    h.clock
        .set(Utc.with_ymd_and_hms(2026, 11, 30, 22, 30, 0).unwrap());
    let first = scheduler(&h);
    let second = Scheduler::new(
        h.app_with_own_pool().await,
        h.settings.clone(),
        ScheduleSettings::default(),
    )
    .unwrap();
    let (a, b) = tokio::join!(first.run_once(), second.run_once());
    let outcomes: Vec<&SlotOutcome> = a.iter().chain(b.iter()).map(|r| &r.outcome).collect();
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| matches!(o, SlotOutcome::Drafted(_)))
            .count(),
        1,
        "{outcomes:?}"
    );
    drop(first);
    let restarted = scheduler(&h);
    let runs = restarted.run_once().await;
    assert_eq!(runs.len(), 1);
    assert!(matches!(runs[0].outcome, SlotOutcome::Filled(_)));
    assert_eq!(posts(&h).await.len(), 1);
}

#[tokio::test]
async fn a_slot_after_midnight_is_filled_the_evening_before() {
    let h = harness(&["00:30"]).await;
    // 23:45 on 1 December in Tokyo.
    h.clock
        .set(Utc.with_ymd_and_hms(2026, 12, 1, 14, 45, 0).unwrap());
    let runs = scheduler(&h).run_once().await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].key, "2026-12-02T00:30+09:00");
    let all = posts(&h).await;
    assert_eq!(
        all[0].scheduled_at,
        Utc.with_ymd_and_hms(2026, 12, 1, 15, 30, 0).unwrap()
    );
}

#[tokio::test]
async fn a_slot_with_nothing_eligible_is_retried_while_it_is_open() {
    let mut h = Harness::new().await;
    let channel = h.channel("cats", ChannelKind::Sandbox, None, &[], &[]);
    channel.slots = vec![Slot::parse("08:00").unwrap()];
    h.write("a.md", &article("a", "2026-11-01", ""));
    h.clock
        .set(Utc.with_ymd_and_hms(2026, 11, 30, 22, 10, 0).unwrap());
    let scheduler = scheduler(&h);
    let runs = scheduler.run_once().await;
    assert!(matches!(
        runs[0].outcome,
        SlotOutcome::NothingEligible { skipped: 1 }
    ));
    // The page goes live; the next try (after `retry`) fills the slot.
    h.page("a").await;
    h.clock.advance(Duration::minutes(1));
    assert!(
        scheduler.run_once().await.is_empty(),
        "not before the retry"
    );
    h.clock.advance(Duration::minutes(5));
    let runs = scheduler.run_once().await;
    assert!(
        matches!(runs[0].outcome, SlotOutcome::Drafted(_)),
        "{runs:?}"
    );
}

#[tokio::test]
async fn run_fills_the_slot_and_returns_when_cancelled() {
    let h = harness(&["08:00"]).await;
    h.clock
        .set(Utc.with_ymd_and_hms(2026, 11, 30, 22, 30, 0).unwrap());
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(scheduler(&h).run(shutdown.clone()));
    let mut waited = 0;
    while posts(&h).await.is_empty() {
        waited += 1;
        assert!(waited < 400, "the scheduler drafted nothing");
        tokio::time::sleep(StdDuration::from_millis(25)).await;
    }
    shutdown.cancel();
    task.await.unwrap();
    assert_eq!(posts(&h).await.len(), 1);
}

#[tokio::test]
async fn settings_that_cannot_work_are_refused_up_front() {
    let mut h = harness(&["08:00"]).await;
    h.settings.channels.get_mut(&name("cats")).unwrap().site = "blog".into();
    let err = Scheduler::new(h.app(), h.settings.clone(), ScheduleSettings::default()).unwrap_err();
    assert!(err.to_string().contains("\"blog\""), "{err}");
}
