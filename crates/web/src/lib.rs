//! What airlock's HTTP front ends (the API, the dashboard, MCP over HTTP) share below
//! their routes: the one `Host`/`Origin` [`policy`].
//!
//! `airlock serve` wraps everything it serves in [`guarded`]; the MCP endpoint checks the
//! same [`policy::HostPolicy`] again on its own, so that it is guarded when served
//! alone too.
//!
//! **Architecture invariant:** the policy is written here only; a front end never
//! checks `Host` or `Origin` by itself.

use axum::Router;

pub mod policy;

/// `router` behind the `Host`/`Origin` policy: a foreign name or origin is refused
/// before any route (or the fallback) runs.
pub fn guarded(router: Router, policy: policy::HostPolicy) -> Router {
    router.layer(axum::middleware::from_fn_with_state(
        policy,
        policy::enforce,
    ))
}
