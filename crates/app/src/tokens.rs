//! API tokens: secrets are shown once and stored only as SHA-256 hashes.

use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;

use airlock_core::hash::sha256_hex;
use airlock_core::review::{self, Revoked};
use airlock_core::{Action, Actor, Post, PostId, PostStatus, RoleSet};
use airlock_store::{Change, NewToken, PostFilter, StoreError, TokenRecord};

use crate::{App, Error, Principal, Result};

/// How many approved posts a revocation reads at a time.
const REVOKE_PAGE: u32 = 100;

/// An approval withdrawn because the pass it rested on was a revoked token's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Withdrawn {
    /// The post, a draft again.
    pub id: PostId,
    /// Why, as its status event says.
    pub reason: String,
}

/// A token with what it holds now ([`App::token_uses`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenUse {
    /// The token, without its secret.
    #[serde(flatten)]
    pub record: TokenRecord,
    /// Drafts it created that are still drafts (what `[server] max_drafts_per_token`
    /// limits).
    pub live_drafts: i64,
}

/// A newly created token; the only time its secret exists outside its holder.
#[derive(Debug, Serialize)]
pub struct IssuedToken {
    /// Name.
    pub name: String,
    /// Roles.
    pub roles: RoleSet,
    /// The secret (`alk_...`).
    #[serde(serialize_with = "expose")]
    pub token: SecretString,
}

fn expose<S: serde::Serializer>(secret: &SecretString, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(secret.expose_secret())
}

/// Checks a token name: 1-64 of `a-z 0-9 - _ .`, not starting with `.` (a browser
/// reads `/tokens/../revoke` as another path, so such a token could not be revoked on
/// the dashboard).
pub fn check_token_name(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && !name.starts_with('.')
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "invalid token name {name:?}: use 1-64 lowercase letters, digits, '-', '_' or '.', not starting with '.'"
        )))
    }
}

/// A fresh random secret: `alk_` and 64 hex digits (256 bits).
pub fn new_secret() -> SecretString {
    SecretString::from(format!("alk_{}", random_hex()))
}

/// 256 random bits as 64 lowercase hex digits.
pub(crate) fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    hex::encode(bytes)
}

impl App {
    /// Creates a token (operator) and returns its secret once.
    pub async fn create_token(
        &self,
        who: &Principal,
        name: &str,
        roles: RoleSet,
    ) -> Result<IssuedToken> {
        who.require(Action::ManageTokens)?;
        check_token_name(name)?;
        let token = new_secret();
        self.store()
            .create_token(NewToken {
                name: name.to_owned(),
                roles: roles.clone(),
                secret_sha256: sha256_hex(token.expose_secret().as_bytes()),
                now: self.now(),
            })
            .await?;
        Ok(IssuedToken {
            name: name.to_owned(),
            roles,
            token,
        })
    }

    /// All tokens, without secrets (operator).
    pub async fn list_tokens(&self, who: &Principal) -> Result<Vec<TokenRecord>> {
        who.require(Action::ManageTokens)?;
        Ok(self.store().tokens().await?)
    }

    /// All tokens, without secrets, each with its live drafts (operator): one read of
    /// the tokens and one of the drafts, however many tokens there are.
    pub async fn token_uses(&self, who: &Principal) -> Result<Vec<TokenUse>> {
        who.require(Action::ManageTokens)?;
        let tokens = self.store().tokens().await?;
        let drafts: std::collections::HashMap<String, i64> = self
            .store()
            .live_drafts_by_creator()
            .await?
            .into_iter()
            .collect();
        Ok(tokens
            .into_iter()
            .map(|record| {
                let actor = Actor::Token(record.name.clone()).to_string();
                TokenUse {
                    live_drafts: drafts.get(&actor).copied().unwrap_or(0),
                    record,
                }
            })
            .collect())
    }

    /// Revokes a token (operator). Its passes stand for nobody from now on
    /// ([`airlock_core::review::void_reason`]): every approved post whose approval no
    /// longer has `approvals_required` standing passes without it returns to draft, with
    /// a status event saying why. Returns those posts.
    pub async fn revoke_token(&self, who: &Principal, name: &str) -> Result<Vec<Withdrawn>> {
        who.require(Action::ManageTokens)?;
        // A token may not revoke the last active operator token: with `[cli]
        // require_token` nobody could make another. The local CLI may; it can always
        // make one.
        let keep_operator = who.actor != Actor::Cli;
        if !self
            .store()
            .revoke_token(name, self.now(), keep_operator)
            .await?
        {
            return Err(Error::NotFound(format!(
                "no active token named {name:?}: see `airlock token list`"
            )));
        }
        let actor = Actor::Token(name.to_owned()).to_string();
        let revoked = self.revoked().await?;
        let mut withdrawn = Vec::new();
        let mut before = None;
        loop {
            let page = self
                .store()
                .list_posts(&PostFilter {
                    status: Some(PostStatus::Approved),
                    before,
                    limit: Some(REVOKE_PAGE),
                    ..PostFilter::default()
                })
                .await?;
            before = page.last().map(|p| p.id);
            for post in &page {
                if let Some(done) = self.withdraw_unstood(who, post, &actor, &revoked).await? {
                    withdrawn.push(done);
                }
            }
            if page.len() < REVOKE_PAGE as usize {
                return Ok(withdrawn);
            }
        }
    }

    /// Withdraws `post`'s approval when it rests on `actor`'s pass, now revoked, and
    /// fewer than `approvals_required` passes stand without it. A post that changed since
    /// it was read is read again; one no longer approved (gone out, edited) is left alone.
    async fn withdraw_unstood(
        &self,
        who: &Principal,
        post: &Post,
        actor: &str,
        revoked: &[Revoked],
    ) -> Result<Option<Withdrawn>> {
        let mut post = post.clone();
        for _ in 0..3 {
            let names_actor = post
                .approved_by
                .as_deref()
                .is_some_and(|by| by.split(',').any(|a| a.trim() == actor));
            if post.status != PostStatus::Approved || !names_actor {
                return Ok(None);
            }
            let Ok(channel) = self.channel(post.content.channel.as_str()) else {
                return Ok(None);
            };
            let rules = channel.review.rules;
            let verdicts = self.store().verdicts(post.id).await?;
            let standing = review::current_passes(
                &review::standing(&verdicts, revoked, rules),
                post.review_round,
                &post.content_hash,
            );
            let required = rules.approvals_required.max(1);
            if standing.len() as u32 >= required {
                return Ok(None);
            }
            let reason = format!(
                "approval withdrawn: {actor} was revoked and its pass counts for nobody; {} of {required} required passes stand without it (approvals_required = {required})",
                standing.len()
            );
            let change = Change::Withdrawn {
                version: post.version,
                note: reason.clone(),
                error: None,
            };
            match self
                .store()
                .change_post(self.change_by(who, &post, change))
                .await
            {
                Ok(_) => {
                    return Ok(Some(Withdrawn {
                        id: post.id,
                        reason,
                    }));
                }
                Err(StoreError::Conflict(_) | StoreError::IllegalTransition { .. }) => {
                    post = self.store().get_post(post.id).await?;
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(Error::Conflict(format!(
            "post {} kept changing while its approval was checked after {actor} was revoked: look at it (`airlock post show {}`)",
            post.id, post.id
        )))
    }

    /// The principal behind a bearer secret, or [`Error::Unauthorized`].
    pub async fn authenticate(&self, secret: &str) -> Result<Principal> {
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(Error::Unauthorized);
        }
        let record = self
            .store()
            .authenticate(&sha256_hex(secret.as_bytes()), self.now())
            .await?
            .ok_or(Error::Unauthorized)?;
        Ok(Principal {
            actor: Actor::Token(record.name),
            roles: record.roles,
            sod_exempt: false,
        })
    }
}
