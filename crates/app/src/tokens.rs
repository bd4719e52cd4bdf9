//! API tokens: secrets are shown once and stored only as SHA-256 hashes.

use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;

use airlock_core::hash::sha256_hex;
use airlock_core::{Action, Actor, RoleSet};
use airlock_store::{NewToken, TokenRecord};

use crate::{App, Error, Principal, Result};

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

/// Checks a token name: 1-64 of `a-z 0-9 - _ .`.
pub fn check_token_name(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "invalid token name {name:?}: use 1-64 lowercase letters, digits, '-', '_' or '.'"
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

    /// Revokes a token (operator).
    pub async fn revoke_token(&self, who: &Principal, name: &str) -> Result<()> {
        who.require(Action::ManageTokens)?;
        if self.store().revoke_token(name, self.now()).await? {
            Ok(())
        } else {
            Err(Error::NotFound(format!(
                "no active token named {name:?}: see `airlock token list`"
            )))
        }
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
