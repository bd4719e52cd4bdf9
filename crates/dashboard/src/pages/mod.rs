//! The pages: the queue (`/`), its live fragment (`/live`), a post (`/posts/{id}`, with
//! its verdicts against the rubric and what breaks its channel's rules), the inbox of
//! posts that need a person (`/review`: `needs_review` posts to settle and quarantined
//! drafts to release or discard), composing a post (`/compose`), the calendar
//! (`/calendar`) and the tokens (`/tokens`), plus the error page.
//!
//! Handlers read through [`airlock_app::App`] as the signed-in operator and turn the
//! answers into view models of plain strings (times already in the channel's calendar),
//! so templates only lay them out. Times of a post show in its channel's time zone;
//! pauses and the rolling window show in the configured default time zone.
//!
//! Layout: one module a page, with its view models and handlers: `queue` (`/` and
//! `/live`), `post` (`/posts/{id}`), `review` (`/review`), `compose` (`/compose` and
//! `/compose/check`), `calendar` (`/calendar`) and `tokens` (`/tokens` and
//! `/tokens/{name}/revoke`); `parts` holds the view
//! models more than one page shows (the frame, post rows and views, the evidence and
//! verdict rows, the inbox counts), and `error` the error page.

mod calendar;
mod compose;
mod error;
mod parts;
mod post;
mod queue;
mod review;
mod tokens;

pub use calendar::{
    CALENDAR_LIMIT, CalendarPage, CalendarQuery, DayView, Entry, Grid, View, calendar, placed_at,
};
pub use compose::{
    ChannelChoice, CheckFragment, CheckPanel, CheckView, ComposeForm, ComposePage, ComposeQuery,
    PartForm, PreviewPart, Problem, compose, compose_check, compose_post, rules_of,
};
pub use error::{ErrorPage, error_page};
pub use parts::{
    EventRow, InDoubt, IntentRow, Layout, MediaView, PartView, PostRow, PostView, ReservationRow,
    VerdictRow,
};
pub use post::{Actions, PostPage, ReviewView, post};
pub use queue::{
    BudgetRow, ChannelRow, CountRow, Live, LiveFragment, PauseRow, QueuePage, QueueQuery,
    ScheduleRow, SelectOption, WindowRow, live, queue,
};
pub use review::{QuarantineItem, ReviewItem, ReviewPage, ReviewQuery, review};
pub use tokens::{
    Issued, RevokePage, RoleChoice, TokenRow, TokensPage, create_token, revoke, revoke_page, tokens,
};

/// Posts per page of the queue table; older ones are a link away (`?before=`).
pub const TABLE_LIMIT: u32 = 100;
/// Posts the queue's inbox lists; the review page has them all, a page at a time.
pub const INBOX_LIMIT: u32 = 50;
/// Posts per state the "today" schedule looks at (approved, posting, posted), newest first.
pub const SCHEDULE_LIMIT: u32 = 200;
/// Posts per page of the review inbox, each with its whole text and evidence.
pub const REVIEW_PAGE: u32 = 10;
/// Characters of text a list shows; the store cuts the text, so lists never load more.
pub const EXCERPT_CHARS: u32 = 120;

// What one render of the queue (or its live fragment, every 15 s) costs, whatever the
// ledger holds: one count per state (`count(*)`), and at most INBOX_LIMIT +
// 3 × SCHEDULE_LIMIT + TABLE_LIMIT summaries of EXCERPT_CHARS + 1 characters of text
// each. No whole text is loaded. The review page loads at most REVIEW_PAGE whole posts.
