//! Exporting the ledger for audits and for moving to another system: every post as
//! `post show` gives it, page by page in id order, so that any number of posts is read
//! with the memory of one page.

use airlock_core::{Action, PostDetail, PostId};
use airlock_store::ExportFilter;

use crate::{App, Principal, Result};

/// Posts per page when a caller does not say: big enough to amortize the round trips,
/// small enough that a page of long posts stays a few megabytes.
pub const EXPORT_PAGE: u32 = 200;

impl App {
    /// One page of an export: up to `limit` posts matching `filter` with ids above
    /// `after`, in id order, each with its events, intents and reservations. Walk the
    /// whole ledger by passing the last id of each page as the next `after`.
    pub async fn export_page(
        &self,
        who: &Principal,
        filter: &ExportFilter,
        after: Option<PostId>,
        limit: u32,
    ) -> Result<Vec<PostDetail>> {
        who.require(Action::Read)?;
        Ok(self
            .store()
            .export_page(filter, after, limit.clamp(1, 10_000))
            .await?)
    }
}
