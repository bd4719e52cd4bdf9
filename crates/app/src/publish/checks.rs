//! The checks of steps 1 and 3: the approved content still matches (hash, source file,
//! policy), and the credential still belongs to the channel's account.

use super::*;

impl App {
    /// Whether the content (or its source file) changed since approval.
    pub(super) async fn content_change(
        &self,
        post: &Post,
        channel: &ChannelSettings,
    ) -> Option<String> {
        let current = post.content.hash();
        match &post.approved_hash {
            Some(approved) if *approved == current => {}
            Some(approved) => {
                return Some(format!(
                    "the content changed after approval (approved {approved}, now {current})"
                ));
            }
            None => return Some("the post has no approved hash".into()),
        }
        let source = post.content.source.as_ref()?;
        let dir = channel.source_dir.as_ref()?;
        let relative = std::path::Path::new(&source.path);
        if relative.is_absolute()
            || relative
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Some(format!(
                "source path {:?} leaves the site directory",
                source.path
            ));
        }
        match tokio::fs::read(dir.join(relative)).await {
            Ok(bytes) => {
                let sha = sha256_hex(&bytes);
                (sha != source.sha256).then(|| {
                    format!(
                        "the source article {} changed after approval (approved {}, now {sha})",
                        source.path, source.sha256
                    )
                })
            }
            Err(e) => Some(format!(
                "the source article {} cannot be read ({}) to confirm it is unchanged",
                source.path,
                e.kind()
            )),
        }
    }

    /// Whether this process has already found the channel's credential to be the
    /// configured account's.
    pub(super) fn account_known(&self, channel: &ChannelName) -> bool {
        self.inner
            .accounts_checked
            .lock()
            .expect("lock is never poisoned")
            .contains(channel)
    }

    pub(super) async fn check_account(
        &self,
        channel: &ChannelSettings,
        platform: &dyn Platform,
    ) -> std::result::Result<(), AccountProblem> {
        if self.account_known(&channel.name) {
            return Ok(());
        }
        let account = platform.account().await.map_err(AccountProblem::Step)?;
        if let Some(mismatch) = account_mismatch(channel, account.as_ref()) {
            return Err(AccountProblem::Mismatch(mismatch));
        }
        self.inner
            .accounts_checked
            .lock()
            .expect("lock is never poisoned")
            .insert(channel.name.clone());
        Ok(())
    }
}

pub(super) enum AccountProblem {
    Mismatch(String),
    Step(StepError),
}

/// Why the credential's account is not the channel's configured `account` (compared
/// case-insensitively, a leading `@` ignored); `None` when it is, or when either is
/// unknown.
pub(crate) fn account_mismatch(
    channel: &ChannelSettings,
    account: Option<&airlock_platforms::Account>,
) -> Option<String> {
    let (Some(expected), Some(found)) = (&channel.account, account) else {
        return None;
    };
    let same = expected.eq_ignore_ascii_case(found.username.trim_start_matches('@'))
        || expected
            .trim_start_matches('@')
            .eq_ignore_ascii_case(&found.username);
    (!same).then(|| {
        format!(
            "the {} token belongs to account {:?}, not the configured {:?}: nothing was sent; fix token_file or account, then resume",
            channel.name, found.username, expected
        )
    })
}
