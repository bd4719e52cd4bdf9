//! Cases for running airlock for real: export pages (every post once, in id order, with
//! its whole timeline; filters), dashboard sessions kept as hashes (expiry, eviction,
//! ending), and the health figures behind the alert rules.

use std::sync::Arc;

use chrono::Duration;

use airlock_core::{PostId, PostStatus, Role, RoleSet};
use airlock_store::{
    EventNote, ExportFilter, HealthStats, NewSession, NewToken, PauseScope, Store,
};

use crate::fixture::*;

/// Pages of an export, walked the way `airlock export` walks them.
async fn export_all(store: &dyn Store, filter: &ExportFilter, page: u32) -> Vec<PostId> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let details = store
            .export_page(filter, after, page)
            .await
            .expect("an export page");
        assert!(
            details.len() <= page as usize,
            "a page holds at most its limit"
        );
        let Some(last) = details.last() else { break };
        after = Some(last.post.id);
        for detail in details {
            assert_eq!(
                detail,
                store.post_detail(detail.post.id).await.unwrap(),
                "an exported post is what post_detail shows"
            );
            ids.push(detail.post.id);
        }
    }
    ids
}

/// Pages by id give every post exactly once, in id order, each with the same events,
/// intents and reservations as `post_detail`; an empty ledger gives an empty page.
pub async fn export_pages_give_every_post_once_with_its_timeline(store: Arc<dyn Store>) {
    let s = store.as_ref();
    assert!(
        s.export_page(&ExportFilter::default(), None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let mut made = Vec::new();
    for status in PostStatus::ALL {
        made.push(in_status(s, status, "alpha").await.id);
    }
    let posted = approved(s, "beta", "published", t0()).await;
    made.push(publish(s, &posted, mins(1), 10, 10).await.id);
    made.sort();
    for page in [1, 2, 3, 100] {
        assert_eq!(export_all(s, &ExportFilter::default(), page).await, made);
    }
    let last = s
        .export_page(&ExportFilter::default(), Some(*made.last().unwrap()), 10)
        .await
        .unwrap();
    assert!(last.is_empty(), "nothing after the last post");
}

/// `status` and `channel` narrow an export; `since` keeps posts created or changed at
/// or after it, and posts whose only later record is an event (a note).
pub async fn export_filters_by_status_channel_and_since(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let old_draft = draft(s, "alpha", "old draft", t0()).await; // created at mins(-60)
    let noted = draft(s, "alpha", "noted later", t0()).await;
    let approved_beta = approved(s, "beta", "approved beta", t0()).await; // changed at mins(-59)
    let late = s
        .create_post(create_request(new_post("beta", "late", t0()), mins(30)))
        .await
        .unwrap()
        .post;
    s.add_event(
        noted.id,
        EventNote {
            kind: "note".into(),
            note: Some("looked at it again".into()),
        },
        "cli",
        mins(20),
        Vec::new(),
    )
    .await
    .unwrap();

    let by_status = ExportFilter {
        status: Some(PostStatus::Draft),
        ..ExportFilter::default()
    };
    assert_eq!(
        export_all(s, &by_status, 1).await,
        [old_draft.id, noted.id, late.id]
    );
    let by_channel = ExportFilter {
        channel: Some(ch("beta")),
        ..ExportFilter::default()
    };
    assert_eq!(
        export_all(s, &by_channel, 1).await,
        [approved_beta.id, late.id]
    );
    let since = ExportFilter {
        since: Some(mins(10)),
        ..ExportFilter::default()
    };
    assert_eq!(export_all(s, &since, 1).await, [noted.id, late.id]);
    let since_approval = ExportFilter {
        since: Some(mins(-59)),
        channel: Some(ch("beta")),
        status: Some(PostStatus::Approved),
    };
    assert_eq!(export_all(s, &since_approval, 5).await, [approved_beta.id]);
}

async fn token(store: &dyn Store, name: &str) -> String {
    let secret_sha256 = format!("{:0>64}", name.len()).replace('0', "a") + name;
    let secret_sha256 = secret_sha256[secret_sha256.len() - 64..].to_owned();
    store
        .create_token(NewToken {
            name: name.into(),
            roles: RoleSet::of(&[Role::Operator]),
            secret_sha256: secret_sha256.clone(),
            now: t0(),
        })
        .await
        .unwrap();
    secret_sha256
}

fn session(id: &str, token_sha256: &str, now_min: i64, ttl_min: i64, max: u32) -> NewSession {
    NewSession {
        id_sha256: id.into(),
        token_sha256: token_sha256.into(),
        now: mins(now_min),
        expires_at: mins(now_min + ttl_min),
        max_sessions: max,
    }
}

/// A session is found by its id hash with its token hash and times, expired or not;
/// opening another sweeps expired ones; past `max_sessions` the oldest goes; ending one
/// reports whether it existed.
pub async fn sessions_are_kept_by_hash_until_they_expire_or_end(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let ops = token(s, "ops").await;
    s.open_session(session("s1", &ops, 0, 60, 10))
        .await
        .unwrap();
    let found = s.session("s1").await.unwrap().expect("the session");
    assert_eq!(found.token_sha256, ops);
    assert_eq!(found.created_at, mins(0));
    assert_eq!(found.expires_at, mins(60));
    assert_eq!(s.session("nope").await.unwrap(), None);

    // Expired but not yet swept: still there, for the caller to say "expired".
    s.open_session(session("s2", &ops, 10, 100, 10))
        .await
        .unwrap();
    assert!(s.session("s1").await.unwrap().is_some());
    // Opening a session after s1's end sweeps it.
    s.open_session(session("s3", &ops, 61, 100, 10))
        .await
        .unwrap();
    assert_eq!(s.session("s1").await.unwrap(), None);
    assert!(s.session("s2").await.unwrap().is_some());

    // At most two: the oldest (s2) goes.
    s.open_session(session("s4", &ops, 62, 100, 2))
        .await
        .unwrap();
    assert_eq!(s.session("s2").await.unwrap(), None);
    assert!(s.session("s3").await.unwrap().is_some());
    assert!(s.session("s4").await.unwrap().is_some());

    let live = s.live_sessions(mins(63)).await.unwrap();
    let named: Vec<(&str, _)> = live
        .iter()
        .map(|l| (l.token.as_str(), l.created_at))
        .collect();
    assert_eq!(named, [("ops", mins(61)), ("ops", mins(62))]);
    assert!(
        s.live_sessions(mins(1000)).await.unwrap().is_empty(),
        "expired ones are not live"
    );
    s.revoke_token("ops", mins(63), false).await.unwrap();
    assert!(
        s.live_sessions(mins(63)).await.unwrap().is_empty(),
        "a revoked token's sessions are not live"
    );

    assert!(s.end_session("s3").await.unwrap());
    assert!(!s.end_session("s3").await.unwrap());
    assert_eq!(s.session("s3").await.unwrap(), None);
}

/// Due posts count when nothing holds them (paused channels, a global pause, a
/// `not_before`, test posts and future posts do not); the oldest due time, the oldest
/// `needs_review` and posted posts whose verification failed are reported.
pub async fn health_stats_report_due_posts_reviews_and_failed_verifications(store: Arc<dyn Store>) {
    let s = store.as_ref();
    assert_eq!(s.health_stats(t0()).await.unwrap(), HealthStats::default());

    approved(s, "alpha", "due a while ago", mins(-30)).await;
    approved(s, "alpha", "due now", t0()).await;
    approved(s, "alpha", "later", mins(30)).await;
    approved(s, "held", "on a paused channel", mins(-40)).await;
    let mut test_post = new_post("alpha", "a test", mins(-50));
    test_post.test = true;
    let test_post = create(s, test_post).await;
    approve(s, &test_post, mins(-59)).await;
    s.pause(
        &PauseScope::Channel(ch("held")),
        "drill",
        "cli",
        mins(-45),
        Vec::new(),
    )
    .await
    .unwrap();

    let review = in_status(s, PostStatus::NeedsReview, "beta").await;
    let posted = in_status(s, PostStatus::Posted, "gamma").await;
    in_status(s, PostStatus::Posted, "gamma").await;
    s.add_event(
        posted.id,
        EventNote {
            kind: "verify_failed".into(),
            note: Some("not found on the platform".into()),
        },
        DISPATCHER,
        mins(2),
        Vec::new(),
    )
    .await
    .unwrap();

    let stats = s.health_stats(t0()).await.unwrap();
    assert_eq!(stats.due, 2, "{stats:?}");
    assert_eq!(stats.oldest_due_at, Some(mins(-30)));
    assert_eq!(stats.oldest_needs_review_at, Some(review.updated_at));
    assert_eq!(stats.verify_failed, 1);

    s.pause(&PauseScope::All, "maintenance", "cli", t0(), Vec::new())
        .await
        .unwrap();
    let stats = s.health_stats(t0() + Duration::minutes(1)).await.unwrap();
    assert_eq!((stats.due, stats.oldest_due_at), (0, None));
}
