//! Step 6: reading a published post back from its platform, before answering or in a
//! task of its own whose result is recorded with others' in one transaction.

use super::*;

impl App {
    /// Reads a published post back from its platform; `None` when the platform cannot.
    pub(super) async fn read_back(
        &self,
        post: &Post,
        platform: &dyn Platform,
    ) -> Option<VerificationRecord> {
        let result = match &post.platform_post_id {
            None => Err("no platform id to read back".to_owned()),
            Some(id) => match platform.verify(id).await {
                Verification::Verified { permalink } => Ok(permalink),
                Verification::Failed { reason } => Err(reason),
                Verification::Unsupported => return None,
            },
        };
        let notify = match &result {
            Ok(_) => Vec::new(),
            Err(reason) => self.notifications(
                "verify_failed",
                Some(post.id),
                format!(
                    "post {} on {} could not be verified: {reason}",
                    post.id, post.content.channel
                ),
                json!({"channel": post.content.channel, "reason": reason}),
            ),
        };
        Some(VerificationRecord {
            id: post.id,
            actor: self.dispatcher_actor(),
            at: self.now(),
            result,
            notify,
        })
    }

    /// Reads a published post back from its platform now, as the guarded path does after
    /// publishing (operator): records `verified` (and `verified_at`) when the platform
    /// shows it, or `verify_failed` (with its notification) when it does not. A person
    /// runs it to clear a verification alert once the platform shows the post again, or
    /// to find out that it still does not. Verification never changes the post's status.
    pub async fn verify_post(&self, who: &Principal, id: PostId) -> Result<VerifyOutcome> {
        who.require(Action::Resolve)?;
        let post = self
            .post_in(
                id,
                &[PostStatus::Posted],
                "only published posts can be read back from their platform",
            )
            .await?;
        let channel = post.content.channel.clone();
        let Some(platform) = self.platform(&channel).cloned() else {
            return Err(Error::Invalid(format!(
                "post {id} went to channel {channel}, which is not configured now: airlock cannot read it back; check the platform by hand and note what you found (`airlock post note`)"
            )));
        };
        let Some(mut record) = self.read_back(&post, platform.as_ref()).await else {
            return Ok(VerifyOutcome::Unsupported(post));
        };
        record.actor = who.actor.to_string();
        let shown = record.result.is_ok();
        self.store().record_verifications(&[record]).await?;
        let post = self.store().get_post(id).await?;
        Ok(if shown {
            VerifyOutcome::Verified(post)
        } else {
            VerifyOutcome::Failed(post)
        })
    }

    /// Reads a published post back and records the result before answering.
    pub(super) async fn verify(&self, post: Post, platform: &dyn Platform) -> Result<Post> {
        let Some(record) = self.read_back(&post, platform).await else {
            return Ok(post);
        };
        if let Some(e) = injected("publish::verify_write") {
            return Err(e.into());
        }
        self.store().record_verifications(&[record]).await?;
        Ok(self.store().get_post(post.id).await?)
    }

    /// Reads a published post back in a task of its own; the result is recorded with
    /// others' in one transaction ([`airlock_store::Store::record_verifications`]).
    pub(super) fn verify_later(&self, post: Post, platform: std::sync::Arc<dyn Platform>) {
        let app = self.clone();
        self.inner.publishes.spawn(async move {
            let Some(record) = app.read_back(&post, platform.as_ref()).await else {
                return;
            };
            app.inner
                .verifications
                .lock()
                .expect("lock is never poisoned")
                .push(record);
            app.flush_verifications().await;
        });
    }

    /// Writes queued read-backs, one transaction per batch of what arrived within
    /// [`VERIFY_BATCH_WINDOW`]; one task at a time does it, and whatever queues up
    /// meanwhile goes in its next batch.
    pub(super) async fn flush_verifications(&self) {
        use std::sync::atomic::Ordering;
        loop {
            if self.inner.verifying.swap(true, Ordering::AcqRel) {
                return;
            }
            tokio::time::sleep(VERIFY_BATCH_WINDOW).await;
            let batch = std::mem::take(
                &mut *self
                    .inner
                    .verifications
                    .lock()
                    .expect("lock is never poisoned"),
            );
            if !batch.is_empty()
                && let Err(e) = self.store().record_verifications(&batch).await
            {
                tracing::error!(error = %e, n = batch.len(), "recording read-backs failed; the posts are published");
            }
            self.inner.verifying.store(false, Ordering::Release);
            if self
                .inner
                .verifications
                .lock()
                .expect("lock is never poisoned")
                .is_empty()
            {
                return;
            }
        }
    }
}

/// How long read-backs wait to be recorded together: one transaction for all that
/// arrive meanwhile, so verification costs the publish path no commit of its own.
pub(super) const VERIFY_BATCH_WINDOW: std::time::Duration = std::time::Duration::from_millis(50);

/// What [`App::verify_post`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyOutcome {
    /// The platform shows the post: `verified` recorded, `verified_at` set.
    Verified(Post),
    /// The platform does not show it: `verify_failed` recorded (and notified).
    Failed(Post),
    /// The channel's platform cannot read posts back; nothing recorded.
    Unsupported(Post),
}
