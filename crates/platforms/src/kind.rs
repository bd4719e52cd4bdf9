//! Channel kinds on the adapter side, registered once.
//!
//! Each kind's module holds its adapter and its configuration type, which implements
//! [`KindConfig`]: the kind's own `[channels.NAME]` keys, what is checked beyond their
//! types, and how its adapter is built. The `kinds!` list in the crate root names every
//! kind with that type, and [`crate::PlatformConfig`] derives from it: the CLI reads,
//! checks, builds and doctors every channel through that enum and names no kind. A kind
//! in `airlock_core`'s list but missing here is a compile error.
//!
//! What a kind is to the domain (its name, content rules, requests per publish) is its
//! entry in `airlock_core::channel`.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use airlock_core::budget::Budget;
use airlock_core::{ChannelName, Span};

use crate::Platform;

/// The keys every kind's table has besides its own.
///
/// They are read beside the kind's own keys, not `#[serde(flatten)]`ed into its type: with
/// `deny_unknown_fields`, serde would then report a misspelt required key as the missing
/// one instead of naming what was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Common {
    /// Bound on each request (default [`Common::DEFAULT_REQUEST_TIMEOUT_SECS`] seconds).
    #[serde(default = "Common::default_request_timeout")]
    pub request_timeout: Span,
}

impl Common {
    /// The keys, as a channel's table writes them.
    pub const KEYS: [&str; 1] = ["request_timeout"];

    /// `request_timeout` when the table has none.
    pub const DEFAULT_REQUEST_TIMEOUT_SECS: i64 = 30;

    fn default_request_timeout() -> Span {
        Span::seconds(Self::DEFAULT_REQUEST_TIMEOUT_SECS)
    }
}

impl Default for Common {
    fn default() -> Self {
        Common {
            request_timeout: Self::default_request_timeout(),
        }
    }
}

/// One kind's own `[channels.NAME]` keys: what the rest of airlock asks of a channel's
/// configuration, answered per kind. Implemented by the kind's configuration type (a
/// `Deserialize` struct with `deny_unknown_fields`) and registered in `kinds!`.
///
/// `table` arguments are the table's name (`channels.NAME`), for messages that name a
/// key in full.
pub trait KindConfig: Debug + Send + Sync {
    /// The account the credential must belong to; `None` for kinds without accounts.
    fn account(&self) -> Option<&str> {
        None
    }

    /// The secret files it reads (credentials, signing secrets), for `doctor`.
    fn secret_files(&self) -> Vec<&Path> {
        Vec::new()
    }

    /// Makes its paths absolute with `resolve` (against the configuration's directory),
    /// first filling in defaults that depend on the `channel`'s name.
    fn resolve_paths(&mut self, channel: &str, resolve: &dyn Fn(&mut PathBuf)) {
        let _ = (channel, resolve);
    }

    /// Every URL it sends a credential or a post to, with the key naming it; each must
    /// pass [`crate::http::check_url`].
    fn urls(&self) -> Vec<(&'static str, &str)> {
        Vec::new()
    }

    /// How long container processing may take, for kinds that poll containers: a lease
    /// must outlast it.
    fn poll_timeout(&self) -> Option<Span> {
        None
    }

    /// What its types cannot check, right after the table is read.
    fn check(&self, table: &str, common: &Common) -> Result<(), String> {
        let _ = (table, common);
        Ok(())
    }

    /// The channel's monthly money budget, if it has one.
    fn budget(&self, table: &str) -> Result<Option<Budget>, String> {
        let _ = table;
        Ok(None)
    }

    /// The adapter, reading the credential files; an error says what to fix.
    fn build(&self, channel: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String>;

    /// What `doctor` checks beyond the secret files, each line passed (`Ok`) or failed.
    fn doctor(&self) -> Vec<Result<String, String>> {
        Vec::new()
    }
}

/// Reads a credential file for a kind's adapter ([`crate::credential::read_secret`]).
pub(crate) fn read_token(path: &Path) -> Result<secrecy::SecretString, String> {
    crate::credential::read_secret(path).map_err(|e| e.to_string())
}

/// The answers of a kind whose keys name a `token_file`, the `account` the token must
/// belong to and a `base_url` (`optional` or `required`), for use inside its
/// [`KindConfig`] impl.
macro_rules! token_keys {
    (base_url: optional) => {
        $crate::kind::token_keys!(@credential);

        fn urls(&self) -> Vec<(&'static str, &str)> {
            self.base_url
                .iter()
                .map(|u| ("base_url", u.as_str()))
                .collect()
        }
    };
    (base_url: required) => {
        $crate::kind::token_keys!(@credential);

        fn urls(&self) -> Vec<(&'static str, &str)> {
            vec![("base_url", &self.base_url)]
        }
    };
    (@credential) => {
        fn account(&self) -> Option<&str> {
            Some(&self.account)
        }

        fn secret_files(&self) -> Vec<&::std::path::Path> {
            vec![&self.token_file]
        }

        fn resolve_paths(&mut self, _: &str, resolve: &dyn Fn(&mut ::std::path::PathBuf)) {
            resolve(&mut self.token_file);
        }
    };
}

pub(crate) use token_keys;

/// Registers every channel kind: `Variant(ConfigType)`, one entry per `ChannelKind`
/// variant, and derives [`crate::PlatformConfig`] from the list.
macro_rules! kinds {
    ($($variant:ident($config:ty)),* $(,)?) => {
        /// A channel's own keys: one variant per kind, each with only that kind's keys
        /// ([`crate::KindConfig`]).
        #[derive(Debug, Clone)]
        pub enum PlatformConfig {
            $(
                #[doc = concat!("A `ChannelKind::", stringify!($variant), "` channel.")]
                $variant($config),
            )*
        }

        impl PlatformConfig {
            /// Reads the own keys of a channel of `kind` (its table without the
            /// [`crate::Common`] keys), refusing a key of another kind by its own name.
            pub fn read<'de, D: ::serde::Deserializer<'de>>(
                kind: ::airlock_core::ChannelKind,
                keys: D,
            ) -> Result<Self, D::Error> {
                Ok(match kind {
                    $(::airlock_core::ChannelKind::$variant => {
                        PlatformConfig::$variant(<$config as ::serde::Deserialize>::deserialize(keys)?)
                    })*
                })
            }

            /// Its kind.
            pub fn kind(&self) -> ::airlock_core::ChannelKind {
                match self {
                    $(PlatformConfig::$variant(_) => ::airlock_core::ChannelKind::$variant,)*
                }
            }

            /// Its kind's answers.
            pub fn keys(&self) -> &dyn $crate::KindConfig {
                match self {
                    $(PlatformConfig::$variant(config) => config,)*
                }
            }

            /// Its kind's answers, to resolve paths.
            pub fn keys_mut(&mut self) -> &mut dyn $crate::KindConfig {
                match self {
                    $(PlatformConfig::$variant(config) => config,)*
                }
            }
        }
    };
}

pub(crate) use kinds;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_keys_are_exactly_the_common_type() {
        let every_key: serde_json::Map<String, serde_json::Value> = Common::KEYS
            .iter()
            .map(|k| (k.to_string(), "45s".into()))
            .collect();
        // `deny_unknown_fields`: every listed key is a field.
        let common = Common::deserialize(serde_json::Value::Object(every_key)).unwrap();
        // And every field is listed (a new one must be added to both).
        let Common { request_timeout } = common;
        assert_eq!(request_timeout, Span::seconds(45));
        assert_eq!(
            Common::deserialize(serde_json::json!({})).unwrap(),
            Common::default()
        );
    }
}
