//! One conformance suite for airlock's [`Store`] contract (docs/stores.md), written once
//! and run against every backend: each case is a `pub async fn` that takes a fresh, empty
//! ledger and panics when the backend breaks the contract documented in `airlock-store`.
//!
//! A backend's test file names a function that opens a fresh ledger and invokes
//! [`conformance_suite!`], which expands to one `#[tokio::test]` per case, named as the
//! case is (a sentence):
//!
//! ```text
//! async fn fresh() -> airlock_store_tests::Ledger { /* a new database, migrated */ }
//! airlock_store_tests::conformance_suite!(fresh);
//! ```
//!
//! Layout: [`fixture`] (fixed times, posts in each state, the publish-path steps),
//! [`metered`] (a delegating store that counts the post text it returns),
//! [`posts`], [`lifecycle`], [`claims`], [`quota`], [`admin`], [`security`], [`ops`],
//! [`review`], [`bounds`], [`parts`] (the cases).
//!
//! Time is always passed in: cases use fixed instants and never sleep or assert on
//! durations. Concurrency cases race several handles, each with its own pool (stand-ins
//! for processes), and assert exact counts. What needs hand-written SQL (trigger
//! refusals, corrupt rows) is deliberately not here: it is dialect-specific and lives in
//! each backend's own tests.

use std::sync::Arc;

use async_trait::async_trait;

use airlock_store::Store;

pub mod admin;
pub mod bounds;
pub mod claims;
pub mod fixture;
pub mod lifecycle;
pub mod metered;
pub mod ops;
pub mod parts;
pub mod posts;
pub mod quota;
pub mod review;
pub mod security;

/// Opens more handles on one test database, for cases that race several processes.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Another handle, with its own connection pool, on the same database as the
    /// ledger's store.
    async fn open(&self) -> Arc<dyn Store>;
}

/// A fresh, migrated, empty ledger for one case. Dropping it may remove the database.
pub struct Ledger {
    /// The store under test.
    pub store: Arc<dyn Store>,
    /// More handles on the same database.
    pub backend: Arc<dyn Backend>,
}

/// Expands to one `#[tokio::test]` per conformance case, each run on a ledger from
/// `$fresh` (an `async fn() -> Ledger`). The calling crate needs `tokio` (with the
/// `macros` and `rt-multi-thread` features) as a dev-dependency.
#[macro_export]
macro_rules! conformance_suite {
    ($fresh:path) => {
        $crate::__with_cases!(__run_cases, $fresh);
    };
}

/// Calls `$crate::$callback!` with the arguments and the list of every case, each as
/// `store module::name` (takes an `Arc<dyn Store>`) or `ledger module::name` (takes a
/// `&Ledger`). The single list of cases.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_cases {
    ($callback:ident, $($args:tt)*) => {
        $crate::$callback! { $($args)* ;
            store posts::create_post_stores_a_draft_with_its_creation_event,
            store posts::create_post_keeps_test_flag_slot_and_source,
            store posts::create_post_with_the_same_key_and_body_returns_the_first_post,
            store posts::create_post_with_the_same_key_and_another_body_is_refused,
            store posts::idempotency_keys_are_forgotten_after_their_ttl,
            store posts::an_idempotency_key_is_answered_before_a_create,
            store posts::a_filled_slot_returns_its_post_instead_of_a_second_one,
            store posts::a_missing_post_is_not_found,
            store posts::list_posts_filters_and_pages_newest_first,
            store posts::list_posts_filters_by_when_they_go_out,
            store posts::a_change_writes_and_clears_the_fields_it_names,
            store posts::a_stale_version_is_a_conflict_and_changes_nothing,
            store posts::only_drafts_are_discarded_and_their_events_stay,
            store posts::a_draft_with_publish_history_cannot_be_discarded,
            store posts::add_event_appends_a_note_with_its_notifications,
            store posts::events_after_pages_through_the_ledger_in_order,
            store posts::sources_used_reports_the_last_use_of_each_source,
            store lifecycle::every_named_change_follows_the_lifecycle,
            store review::content_changes_only_into_a_draft_and_an_approval_names_its_content,
            store lifecycle::an_edit_says_what_changed_once,
            store lifecycle::a_stale_generation_is_fenced_recorded_and_changes_nothing,
            store lifecycle::a_generation_guard_on_a_settled_post_is_fenced,
            store lifecycle::a_fenced_write_without_evidence_records_nothing,
            store lifecycle::record_intent_is_fenced_by_generation_and_lease,
            store lifecycle::record_intent_for_a_post_that_is_not_posting_is_fenced,
            store lifecycle::record_intent_is_refused_while_paused,
            store lifecycle::an_outcome_settles_the_intent_and_the_reservation,
            store lifecycle::intent_required_refuses_a_mismatch_with_conflict,
            store lifecycle::intent_required_looks_at_the_current_generation,
            store lifecycle::expired_leases_come_with_the_intent_of_their_generation,
            store lifecycle::review_queue_lists_needs_review_posts_with_their_latest_intent,
            store claims::claim_takes_the_most_overdue_post_first,
            store claims::claim_waits_for_not_before,
            store claims::claim_looks_only_at_the_listed_channels,
            store claims::test_posts_are_claimed_only_on_test_channels,
            store claims::a_claim_sets_the_lease_and_the_next_generation,
            store claims::a_post_that_is_not_approved_is_not_claimable,
            store claims::next_due_at_is_the_earliest_time_a_post_may_be_claimed,
            ledger claims::concurrent_claimers_claim_each_post_exactly_once,
            store claims::claim_post_claims_reserves_and_records_the_intent_at_once,
            store claims::claim_post_refuses_a_post_changed_since_it_was_read,
            store claims::claim_post_holds_a_paused_post_and_writes_nothing,
            store claims::claim_post_over_quota_answers_the_next_slot_and_writes_nothing,
            store claims::claim_post_with_an_intent_the_lease_cannot_cover_writes_nothing,
            store claims::due_posts_lists_what_may_be_claimed_most_overdue_first,
            store claims::due_posts_and_next_due_at_take_any_number_of_channels,
            store claims::record_verifications_records_read_backs_of_posted_posts,
            ledger claims::concurrent_claim_posts_of_one_post_claim_it_once,
            store quota::the_window_limit_holds_across_channels,
            store quota::the_daily_limit_holds_per_channel_and_local_day,
            store quota::a_reservation_near_midnight_counts_on_both_days,
            store quota::an_unsent_reservation_counts_as_now,
            store quota::a_publish_found_from_an_earlier_attempt_counts_that_attempt,
            store quota::releasing_a_reservation_frees_its_slot,
            store quota::committed_and_needs_review_reservations_keep_counting,
            store quota::quota_rows_are_live_reservations_since_a_time,
            store quota::a_money_budget_holds_per_channel_and_local_month,
            ledger quota::concurrent_reservers_never_exceed_the_limits,
            ledger quota::concurrent_reservers_never_overspend_a_budget,
            store admin::pausing_twice_keeps_the_first_pause_and_resume_lifts_it,
            store admin::a_pause_after_failures_waits_for_consecutive_failures,
            store admin::resume_resets_the_failure_count,
            store admin::a_later_pause_takes_over_an_unknown_outcomes_pause,
            store admin::a_pause_with_a_change_is_set_in_its_transaction,
            store admin::notifications_are_queued_with_their_change,
            store admin::claimed_notifications_are_leased,
            store admin::notification_completion_is_fenced_by_the_deliverers_lease,
            store admin::a_fresh_ledger_has_durable_commits,
            store admin::delivery_outcomes_are_recorded_and_counted,
            ledger admin::concurrent_deliverers_never_share_a_notification,
            store admin::tokens_authenticate_by_hash_until_revoked,
            store admin::the_last_operator_token_is_kept_when_asked,
            store admin::status_counts_count_posts_per_status,
            store admin::a_healthy_ledger_breaks_no_invariant,
            store admin::wait_for_due_returns_by_its_timeout,
            store security::content_changes_record_their_authors_until_the_next_approval,
            store security::a_schedule_change_records_no_author,
            store security::summaries_carry_an_excerpt_cut_by_the_store,
            store security::values_over_the_limits_are_refused_and_nothing_is_written,
            store bounds::excerpt_lists_cut_the_text_and_keep_every_other_field,
            store bounds::live_drafts_are_counted_per_creator,
            store bounds::a_create_past_the_live_draft_limit_is_refused_and_writes_nothing,
            ledger bounds::concurrent_creates_by_one_actor_never_pass_its_live_draft_limit,
            store bounds::a_server_secret_is_created_once_and_then_read,
            store bounds::due_posts_are_counted_per_channel,
            store bounds::notes_errors_and_media_are_bounded_as_airlock_bounds_them,
            store ops::export_pages_give_every_post_once_with_its_timeline,
            store ops::export_filters_by_status_channel_and_since,
            store ops::sessions_are_kept_by_hash_until_they_expire_or_end,
            store ops::health_stats_report_due_posts_reviews_and_failed_verifications,
            store review::verdicts_are_recorded_with_their_change_and_read_back_whole,
            store review::a_content_change_or_a_withdrawn_approval_starts_a_new_review_round,
            store review::a_schedule_move_of_a_draft_holding_passes_starts_a_new_review_round,
            store review::a_quarantined_draft_is_neither_approved_nor_changed_until_released,
            store review::a_draft_repeating_a_queued_text_within_the_window_is_refused,
            store review::an_edit_moves_the_duplicate_key_with_the_text,
            store review::an_edit_into_a_queued_text_within_the_window_is_refused_and_changes_nothing,
            store review::a_verdict_on_a_post_as_large_as_a_post_may_be_is_recorded,
            store review::approving_or_rescheduling_into_a_queued_text_is_refused_inside_the_write,
            store parts::a_post_of_several_parts_reads_back_as_created,
            store parts::an_edit_of_the_parts_changes_them_and_the_hash,
            store parts::a_published_part_keeps_the_claim_for_the_next_part,
            store parts::a_stale_generations_part_published_is_fenced,
            store parts::a_settled_part_resumes_the_post_at_the_next_part,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __run_cases {
    ($fresh:path ; $($kind:ident $module:ident :: $case:ident),* $(,)?) => {
        $( $crate::__run_case!($kind, $fresh, $module, $case); )*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __run_case {
    (store, $fresh:path, $module:ident, $case:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $case() {
            let ledger: $crate::Ledger = $fresh().await;
            $crate::$module::$case(ledger.store.clone()).await;
        }
    };
    (ledger, $fresh:path, $module:ident, $case:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $case() {
            let ledger: $crate::Ledger = $fresh().await;
            $crate::$module::$case(&ledger).await;
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __case_names {
    (; $($kind:ident $module:ident :: $case:ident),* $(,)?) => {
        &[$(concat!(stringify!($module), "::", stringify!($case))),*]
    };
}

/// Every case as `module::name`, in the order the suite runs them.
pub const CASES: &[&str] = __with_cases!(__case_names,);

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// Every `pub async fn` in a case module is in the suite, and nothing else is.
    #[test]
    fn the_suite_lists_every_case_exactly_once() {
        let modules = [
            ("posts", include_str!("posts.rs")),
            ("lifecycle", include_str!("lifecycle.rs")),
            ("claims", include_str!("claims.rs")),
            ("quota", include_str!("quota.rs")),
            ("admin", include_str!("admin.rs")),
            ("security", include_str!("security.rs")),
            ("ops", include_str!("ops.rs")),
            ("review", include_str!("review.rs")),
            ("bounds", include_str!("bounds.rs")),
            ("parts", include_str!("parts.rs")),
        ];
        let mut defined = BTreeSet::new();
        for (module, source) in modules {
            for line in source.lines() {
                if let Some(rest) = line.strip_prefix("pub async fn ") {
                    let name = rest.split('(').next().unwrap_or_default();
                    defined.insert(format!("{module}::{name}"));
                }
            }
        }
        let listed: BTreeSet<String> = super::CASES.iter().map(|c| c.to_string()).collect();
        assert_eq!(listed.len(), super::CASES.len(), "a case is listed twice");
        assert_eq!(defined, listed);
    }
}
