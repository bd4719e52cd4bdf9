//! Claims made at the same time by one process go to PostgreSQL as one batch
//! (`airlock_claim_batch`): one transaction for all of them, each answered as its claim
//! alone would be, and never past a limit.
//!
//! The tests run on one thread: every claim is queued before the first batch takes its
//! turn, so the batch holds all of them.

use airlock_core::{PostId, PostStatus};
use airlock_store::{
    Admin, Change, IntentClaim, PauseScope, PostChange, PostClaim, PostClaimed, Posts, Publishing,
    Reads, StoreError,
};
use airlock_store_postgres::PgStore;
use airlock_store_tests::fixture::*;
use chrono::Duration;

use crate::support::{TestDb, counted, owner_limits, store};

/// `n` approved posts on `channel`, the oldest due first.
async fn posts(store: &PgStore, channel: &str, n: usize) -> Vec<airlock_core::Post> {
    let mut posts = Vec::new();
    for idx in 0..n {
        posts.push(
            approved(
                store,
                channel,
                &format!("{channel} {idx}"),
                mins(-(idx as i64)),
            )
            .await,
        );
    }
    posts
}

/// A claim with quota `(window, daily)` and its intent, as a channel without a `prepare`
/// step makes it.
fn claim(post: &airlock_core::Post, daily: u32) -> PostClaim {
    PostClaim {
        intent: Some(IntentClaim {
            part: 1,
            idempotency_key: format!("airlock-{}", post.id),
            lease_margin: Duration::seconds(30),
        }),
        ..post_claim(post, t0(), Some((1000, daily)))
    }
}

/// Makes every claim at once: each in a task of its own, as a worker's runs are.
async fn claim_each(
    store: &PgStore,
    claims: &[PostClaim],
) -> Vec<airlock_store::Result<PostClaimed>> {
    let tasks: Vec<_> = claims
        .iter()
        .map(|c| {
            let (store, c) = (store.clone(), c.clone());
            tokio::spawn(async move { store.claim_post(&c).await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("claim task"));
    }
    answers
}

/// [`claim_each`], every claim answered.
async fn claim_together(store: &PgStore, claims: &[PostClaim]) -> Vec<PostClaimed> {
    claim_each(store, claims)
        .await
        .into_iter()
        .map(|a| a.expect("claim"))
        .collect()
}

/// How many transactions last wrote these posts.
async fn writers(store: &PgStore, ids: &[PostId]) -> i64 {
    let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
    sqlx::query_scalar("SELECT count(DISTINCT xmin::text) FROM posts WHERE id = ANY ($1)")
        .bind(ids)
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// How many reservations the ledger holds.
async fn reservations(store: &PgStore) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM reservations")
        .fetch_one(store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn claims_made_together_are_one_transaction_each_with_its_own_claim() {
    let db = TestDb::create();
    let store = store(&db).await;
    let posts = posts(&store, "alpha", 6).await;
    let claims: Vec<PostClaim> = posts.iter().map(|p| claim(p, 100)).collect();
    let answers = claim_together(&store, &claims).await;
    for (post, answer) in posts.iter().zip(&answers) {
        let PostClaimed::Claimed {
            post: claimed,
            intent,
        } = answer
        else {
            panic!("post {} was not claimed: {answer:?}", post.id);
        };
        assert_eq!(claimed.id, post.id);
        assert_eq!(claimed.status, PostStatus::Posting);
        assert_eq!(claimed.generation, post.generation + 1);
        assert_eq!(claimed.lease_owner.as_deref(), Some(WORKER));
        let intent = intent
            .as_ref()
            .expect("the intent is recorded with the claim");
        assert_eq!(intent.generation, claimed.generation);
        assert_eq!(intent.idempotency_key, format!("airlock-{}", post.id));
    }
    let ids: Vec<PostId> = posts.iter().map(|p| p.id).collect();
    assert_eq!(
        writers(&store, &ids).await,
        1,
        "one transaction claimed them all"
    );
    assert_eq!(reservations(&store).await, 6, "one reservation a claim");
    assert!(store.check_invariants(mins(1)).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_batch_answers_each_claim_as_it_would_be_alone() {
    let db = TestDb::create();
    let store = store(&db).await;
    let mut posts = posts(&store, "alpha", 3).await;
    posts.extend(self::posts(&store, "beta", 2).await);
    store
        .pause(
            &PauseScope::Channel(ch("beta")),
            "checking",
            "tester",
            t0(),
            vec![],
        )
        .await
        .unwrap();
    let mut claims: Vec<PostClaim> = posts.iter().map(|p| claim(p, 100)).collect();
    // A claim of a post as it was before a change, and a second claim of one post.
    claims[1].version -= 1;
    claims.push(claims[0].clone());
    let answers = claim_together(&store, &claims).await;
    assert!(
        matches!(answers[0], PostClaimed::Claimed { .. }),
        "{:?}",
        answers[0]
    );
    assert!(
        matches!(&answers[1], PostClaimed::Gone(Some(post)) if post.status == PostStatus::Approved),
        "a changed post is gone, as read now: {:?}",
        answers[1]
    );
    assert!(
        matches!(answers[2], PostClaimed::Claimed { .. }),
        "{:?}",
        answers[2]
    );
    for answer in &answers[3..5] {
        assert!(
            matches!(answer, PostClaimed::Paused { scope, .. } if scope == "beta"),
            "{answer:?}"
        );
    }
    assert!(
        matches!(answers[5], PostClaimed::Gone(None)),
        "{:?}",
        answers[5]
    );
    assert_eq!(
        reservations(&store).await,
        2,
        "only the claimed posts reserve"
    );
}

#[tokio::test]
async fn claims_made_together_never_pass_the_daily_limit() {
    let db = TestDb::create();
    let store = store(&db).await;
    // Far from the limit: the batch proves room for all of them at once.
    let first = posts(&store, "alpha", 8).await;
    let answers = claim_together(
        &store,
        &first.iter().map(|p| claim(p, 50)).collect::<Vec<_>>(),
    )
    .await;
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, PostClaimed::Claimed { .. }))
    );
    let ids: Vec<PostId> = first.iter().map(|p| p.id).collect();
    assert_eq!(writers(&store, &ids).await, 1);
    // Up to it: a batch proves its room while the limit is the slots above the count;
    // nearer, each claim is decided alone from the rows.
    let second = posts(&store, "alpha", 50).await;
    let answers = claim_together(
        &store,
        &second.iter().map(|p| claim(p, 50)).collect::<Vec<_>>(),
    )
    .await;
    let claimed = answers
        .iter()
        .filter(|a| matches!(a, PostClaimed::Claimed { .. }))
        .count();
    let over = answers
        .iter()
        .filter(|a| matches!(a, PostClaimed::OverQuota(_)))
        .count();
    assert_eq!((claimed, over), (42, 8), "the day takes exactly its limit");
    assert!(store.check_invariants(mins(1)).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_batch_claims_as_many_as_slots_are_free_and_the_rest_alone() {
    let db = TestDb::create();
    let store = store(&db).await;
    let posts = posts(&store, "alpha", 6).await;
    // Another process's claims in flight hold all slots but four.
    let slots: i64 =
        sqlx::query_scalar("SELECT count(*) FROM ledger_locks WHERE name LIKE 'window slot %'")
            .fetch_one(store.pool())
            .await
            .unwrap();
    let mut other = db.conn().await;
    sqlx::query("BEGIN").execute(&mut other).await.unwrap();
    sqlx::query(
        "SELECT 1 FROM ledger_locks WHERE name LIKE 'window slot %' \
         ORDER BY name LIMIT $1 FOR UPDATE",
    )
    .bind(slots - 4)
    .execute(&mut other)
    .await
    .unwrap();
    // The two made alone wait for the whole window, held by the other process.
    assert_eq!(
        claimed_while(&store, &posts, other, "ROLLBACK").await,
        3,
        "one batch of four, two alone"
    );
    assert!(store.check_invariants(mins(1)).await.unwrap().is_empty());
}

/// Claims `posts` together (far from their limits) while `other` holds what it holds,
/// ends `other`'s transaction with `end` once they wait, and requires every claim made:
/// how many transactions made them.
async fn claimed_while(
    store: &PgStore,
    posts: &[airlock_core::Post],
    mut other: sqlx::PgConnection,
    end: &str,
) -> i64 {
    let together = {
        let (store, claims) = (
            store.clone(),
            posts.iter().map(|p| claim(p, 100)).collect::<Vec<_>>(),
        );
        tokio::spawn(async move { claim_together(&store, &claims).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    sqlx::query(sqlx::AssertSqlSafe(end.to_owned()))
        .execute(&mut other)
        .await
        .unwrap();
    let answers = together.await.unwrap();
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, PostClaimed::Claimed { .. })),
        "{answers:?}"
    );
    let ids: Vec<PostId> = posts.iter().map(|p| p.id).collect();
    writers(store, &ids).await
}

/// Claims `posts` together and records each one's intent.
async fn claimed(store: &PgStore, posts: &[airlock_core::Post]) -> Vec<airlock_core::Post> {
    let claims: Vec<PostClaim> = posts.iter().map(|p| claim(p, 100)).collect();
    claim_together(store, &claims)
        .await
        .into_iter()
        .map(|a| match a {
            PostClaimed::Claimed { post, .. } => *post,
            other => panic!("not claimed: {other:?}"),
        })
        .collect()
}

/// Writes every change at once: each in a task of its own.
async fn change_together(
    store: &PgStore,
    changes: Vec<PostChange>,
) -> Vec<airlock_store::Result<airlock_core::Post>> {
    let tasks: Vec<_> = changes
        .into_iter()
        .map(|c| {
            let store = store.clone();
            tokio::spawn(async move { store.change_post(c).await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("change task"));
    }
    answers
}

#[tokio::test]
async fn publishes_written_together_are_one_transaction_each_as_alone() {
    let db = TestDb::create();
    let store = store(&db).await;
    let posts = claimed(&store, &posts(&store, "alpha", 5).await).await;
    let mut changes: Vec<PostChange> = posts
        .iter()
        .map(|p| outcome(p, PostStatus::Posted, t0()))
        .collect();
    // A stale generation's outcome is refused, its evidence recorded.
    let mut stale = changes.pop().unwrap();
    if let Change::Published { generation, .. } = &mut stale.change {
        *generation -= 1;
    }
    changes.push(stale);
    let answers = change_together(&store, changes).await;
    for (post, answer) in posts[..4].iter().zip(&answers) {
        let written = answer.as_ref().expect("published");
        assert_eq!(written.status, PostStatus::Posted);
        assert_eq!(written.posted_at, Some(t0()));
        assert_eq!(
            written.platform_post_id.as_deref(),
            Some(format!("platform-{}", post.id).as_str())
        );
        assert_eq!(written.lease_owner, None);
    }
    assert!(
        matches!(answers[4], Err(StoreError::Fenced { .. })),
        "{:?}",
        answers[4]
    );
    let ids: Vec<PostId> = posts[..4].iter().map(|p| p.id).collect();
    assert_eq!(
        writers(&store, &ids).await,
        1,
        "one transaction wrote them all"
    );
    let stale = events(&store, posts[4].id).await;
    assert!(stale.iter().any(|e| e.kind == "stale_outcome"), "{stale:?}");
    let committed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM reservations WHERE state = 'committed'")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(committed, 4);
    let settled: i64 = sqlx::query_scalar("SELECT count(*) FROM intents WHERE phase = 'succeeded'")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(settled, 4);
    assert!(store.check_invariants(mins(1)).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_batch_the_database_refuses_is_made_claim_by_claim() {
    let db = TestDb::create();
    let store = store(&db).await;
    let posts = posts(&store, "alpha", 3).await;
    let mut claims: Vec<PostClaim> = posts.iter().map(|p| claim(p, 100)).collect();
    // A lease no claim may take refuses the whole batch; alone, only its own claim.
    claims[1].lease_until = t0() + Duration::days(2);
    let answers = claim_each(&store, &claims).await;
    assert!(
        matches!(answers[0], Ok(PostClaimed::Claimed { .. })),
        "{:?}",
        answers[0]
    );
    assert!(answers[1].is_err(), "{:?}", answers[1]);
    assert!(
        matches!(answers[2], Ok(PostClaimed::Claimed { .. })),
        "{:?}",
        answers[2]
    );
    assert_eq!(reservations(&store).await, 2);
}

#[tokio::test]
async fn a_publish_without_its_generation_is_left_to_be_written_alone() {
    let db = TestDb::create();
    let store = store(&db).await;
    let post = claimed(&store, &posts(&store, "alpha", 1).await)
        .await
        .remove(0);
    let row = sqlx::query(
        "SELECT r.outcome, (r.post).status FROM airlock_change_published_batch( \
           ARRAY[$1::bigint], ARRAY['dispatcher'], ARRAY[$2::timestamptz], '[[]]', \
           ARRAY[NULL::bigint], ARRAY[1::bigint], ARRAY[$2::timestamptz], ARRAY['x'], \
           ARRAY[NULL::text], ARRAY['published'], ARRAY[NULL::text]) r",
    )
    .bind(post.id.0)
    .bind(t0())
    .fetch_one(store.pool())
    .await
    .unwrap();
    let outcome: String = sqlx::Row::get(&row, "outcome");
    assert_eq!(outcome, "single");
    let status: Option<String> = sqlx::Row::get(&row, "status");
    assert_eq!(status, None, "nothing of it was written");
    assert_eq!(
        store.get_post(post.id).await.unwrap().status,
        PostStatus::Posting
    );
}

#[tokio::test]
async fn claims_under_limits_within_the_slots_are_made_alone() {
    let db = TestDb::create();
    let store = store(&db).await;
    let posts = posts(&store, "alpha", 4).await;
    // No batch could prove its room under a daily limit of 10: none is tried.
    let answers = claim_together(
        &store,
        &posts.iter().map(|p| claim(p, 10)).collect::<Vec<_>>(),
    )
    .await;
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, PostClaimed::Claimed { .. }))
    );
    let ids: Vec<PostId> = posts.iter().map(|p| p.id).collect();
    assert_eq!(
        writers(&store, &ids).await,
        4,
        "each claim its own transaction"
    );
}

/// Holds every count a claim of `alpha` at `t0()` writes (`quota_hours`, any shard), so
/// that such a claim stops there, in flight, holding what it holds until the answer
/// commits or rolls back.
async fn hold_counts(db: &TestDb) -> sqlx::PgConnection {
    let mut conn = db.conn().await;
    sqlx::query(
        "INSERT INTO quota_hours (channel, hour, shard, live, latest) \
         SELECT 'alpha', h, s, 0, $1 \
         FROM unnest(ARRAY[date_trunc('hour', $1, 'UTC'), '-infinity']) h, \
              generate_series(1, 48) s \
         ON CONFLICT DO NOTHING",
    )
    .bind(t0())
    .execute(&mut conn)
    .await
    .unwrap();
    sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
    sqlx::query("SELECT 1 FROM quota_hours WHERE channel = 'alpha' FOR UPDATE")
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

/// A claim near its channel's daily limit waits for the claims of that channel in
/// flight, alone (`n` = 1) or in a batch, and counts them: claims far from their limits
/// hold their channel's limits shared.
async fn a_claim_near_its_day_counts_claims_in_flight(n: usize) {
    const DAILY: i64 = 30;
    let db = TestDb::create();
    let store = store(&db).await;
    owner_limits(store.pool(), &[("alpha", 100)]).await;
    let earlier = posts(&store, "alpha", 1).await[0].id;
    counted(store.pool(), earlier.0, DAILY - n as i64).await;
    let far = posts(&store, "alpha", n).await;
    let near = posts(&store, "alpha", 1).await.remove(0);

    let mut held = hold_counts(&db).await;
    let in_flight = {
        let (store, claims) = (
            store.clone(),
            far.iter().map(|p| claim(p, 100)).collect::<Vec<_>>(),
        );
        tokio::spawn(async move { claim_together(&store, &claims).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !in_flight.is_finished(),
        "the claims far from the limit are in flight"
    );
    let deciding = {
        let (store, claim) = (store.clone(), claim(&near, DAILY as u32));
        tokio::spawn(async move { store.claim_post(&claim).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    sqlx::query("ROLLBACK").execute(&mut held).await.unwrap();
    let made = in_flight.await.unwrap();
    assert!(
        made.iter()
            .all(|a| matches!(a, PostClaimed::Claimed { .. })),
        "{made:?}"
    );
    let ids: Vec<PostId> = far.iter().map(|p| p.id).collect();
    assert_eq!(writers(&store, &ids).await, 1, "one transaction made them");
    match deciding.await.unwrap().unwrap() {
        PostClaimed::OverQuota(denial) => assert_eq!(denial.used, DAILY as u64),
        other => panic!("the claim near its limit missed the claims in flight: {other:?}"),
    }
}

#[tokio::test]
async fn a_claim_near_its_day_counts_a_claim_in_flight() {
    a_claim_near_its_day_counts_claims_in_flight(1).await;
}

#[tokio::test]
async fn a_claim_near_its_day_counts_a_batch_in_flight() {
    a_claim_near_its_day_counts_claims_in_flight(3).await;
}

/// The fixtures' local days around `now`, as a claim sends them.
fn day_list(now: chrono::DateTime<chrono::Utc>) -> Vec<chrono::DateTime<chrono::Utc>> {
    let first = airlock_core::quota::day_bounds(now - Duration::days(1), TZ).0;
    let mut starts = vec![first];
    for _ in 0..3 {
        let next = airlock_core::quota::day_bounds(*starts.last().unwrap(), TZ).1;
        starts.push(next);
    }
    starts
}

/// Every array of a batch has one entry per claim: a short one is refused, never read
/// as nulls (a null intent margin would pass its check).
#[tokio::test]
async fn a_batch_with_a_short_array_is_refused() {
    let db = TestDb::create();
    let store = store(&db).await;
    let posts = posts(&store, "alpha", 2).await;
    let days = day_list(t0());
    let refused = sqlx::query(
        "SELECT * FROM airlock_claim_batch(ARRAY[$1, $2], ARRAY[$3, $4], ARRAY[true, true], \
           ARRAY['w', 'w'], ARRAY['a', 'a'], ARRAY[$5, $5], ARRAY[$6, $6], ARRAY['n', 'n'], \
           3600000000, 1000, ARRAY[100, 100]::bigint[], $7, $8, ARRAY['k1', 'k2'], \
           ARRAY[1]::bigint[])",
    )
    .bind(posts[0].id.0)
    .bind(posts[1].id.0)
    .bind(posts[0].version)
    .bind(posts[1].version)
    .bind(t0())
    .bind(t0() + Duration::minutes(15))
    .bind([days.clone(), days.clone()].concat())
    .bind(i32::try_from(days.len()).unwrap())
    .execute(store.pool())
    .await
    .expect_err("a short array is refused");
    let code = refused.as_database_error().and_then(|e| e.code());
    assert_eq!(code.as_deref(), Some("AL020"), "{refused}");
    assert_eq!(reservations(&store).await, 0, "nothing was claimed");
}

/// Under the caller's clock (a setting for tests) a batch proves its room at its
/// earliest claim's time, where its claims' windows count the most: a stamp that lies in
/// the future of that claim stops the batch, as it stops that claim alone.
#[tokio::test]
async fn a_batch_proves_its_room_at_its_earliest_claims_time() {
    let db = TestDb::create();
    let store = store(&db).await;
    let posts = posts(&store, "alpha", 3).await;
    sqlx::query(
        "INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at) \
         VALUES ($1, 1, 'alpha', 'committed', $2, $3)",
    )
    .bind(posts[2].id.0)
    .bind(mins(-20))
    .bind(mins(-2))
    .execute(store.pool())
    .await
    .unwrap();
    let late = claim(&posts[0], 100);
    let early = PostClaim {
        now: mins(-10),
        lease_until: mins(5),
        ..claim(&posts[1], 100)
    };
    let answers = claim_each(&store, &[late, early]).await;
    assert!(
        matches!(answers[0], Ok(PostClaimed::Claimed { .. })),
        "{:?}",
        answers[0]
    );
    let refused = answers[1]
        .as_ref()
        .expect_err("sent in the future of the early claim");
    assert!(refused.to_string().contains("in the future"), "{refused}");
}

/// A batch whose channels' limits were rewritten after it read them claims nothing by
/// them: each of its claims is made alone, reading the limits again.
#[tokio::test]
async fn a_batch_under_limits_rewritten_since_makes_each_claim_alone() {
    let db = TestDb::create();
    let store = store(&db).await;
    owner_limits(store.pool(), &[("alpha", 100)]).await;
    let posts = posts(&store, "alpha", 3).await;
    let mut owner = db.conn().await;
    sqlx::query("BEGIN").execute(&mut owner).await.unwrap();
    sqlx::query("UPDATE channel_limits SET daily_limit = 90 WHERE channel = 'alpha'")
        .execute(&mut owner)
        .await
        .unwrap();
    assert_eq!(
        claimed_while(&store, &posts, owner, "COMMIT").await,
        3,
        "each claim made alone"
    );
}

/// A claim that waited for its channel's limits (held by a claim near its day) is
/// stamped after the wait, alone (`n` = 1) or in a batch: its reservation counts in the
/// window from when it was made, not from before.
async fn a_claim_is_stamped_after_waiting_for_its_channel(n: usize) {
    let db = TestDb::create();
    let store = store(&db).await;
    owner_limits(store.pool(), &[("alpha", 100)]).await;
    let posts = posts(&store, "alpha", n).await;
    let mut holder = db.conn().await;
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::query("SELECT 1 FROM channel_limits WHERE channel = 'alpha' FOR UPDATE")
        .execute(&mut holder)
        .await
        .unwrap();
    claimed_while(&store, &posts, holder, "ROLLBACK").await;
    let first: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT min(created_at) FROM reservations")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert!(
        first >= t0() + Duration::milliseconds(250),
        "stamped {first}, before the wait ended"
    );
}

#[tokio::test]
async fn a_claim_is_stamped_after_its_wait() {
    a_claim_is_stamped_after_waiting_for_its_channel(1).await;
}

#[tokio::test]
async fn a_batch_is_stamped_after_its_wait() {
    a_claim_is_stamped_after_waiting_for_its_channel(3).await;
}
