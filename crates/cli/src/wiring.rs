//! Wiring: the one place that names a concrete store backend and builds the channel
//! adapters from configuration (reading credential files, which may refuse).

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_app::App;
use airlock_core::{ChannelKind, ChannelName};
use airlock_platforms::credential::read_secret;
use airlock_platforms::sandbox::Sandbox;
use airlock_platforms::webhook::Webhook;
use airlock_platforms::{Platform, http};
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;

use crate::Failure;
use crate::config::{ChannelConfig, Config};

/// Opens the configured store, applying pending migrations.
pub async fn open_store(config: &Config) -> Result<Arc<dyn Store>, Failure> {
    let url = config.database.as_str();
    if url.starts_with("sqlite:") {
        let store = SqliteStore::open_url(url)
            .await
            .map_err(|e| Failure::failed(format!("{e}")))?;
        return Ok(Arc::new(store));
    }
    Err(Failure::refused(format!(
        "{}: database {url:?}: this build supports sqlite:// databases",
        config.path.display()
    )))
}

/// Builds every channel's adapter. Any credential problem refuses the whole command
/// before a single request is sent.
pub fn build_platforms(
    config: &Config,
) -> Result<BTreeMap<ChannelName, Arc<dyn Platform>>, Failure> {
    config
        .channels
        .values()
        .map(|channel| {
            build_platform(channel)
                .map(|platform| (channel.name.clone(), platform))
                .map_err(|e| Failure::refused(format!("channel {}: {e}", channel.name)))
        })
        .collect()
}

fn build_platform(channel: &ChannelConfig) -> Result<Arc<dyn Platform>, String> {
    let client = || http::client(channel.request_timeout.as_std());
    match channel.kind {
        ChannelKind::Sandbox => Ok(Arc::new(Sandbox::new(
            channel.name.clone(),
            channel.path.clone(),
            channel.simulate,
        ))),
        ChannelKind::Webhook => {
            let url = channel.url.clone().ok_or("webhook channel without url")?;
            let url = http::check_base_url(&url).map_err(|e| e.to_string())?;
            let secret = channel
                .secret_file
                .as_deref()
                .map(read_secret)
                .transpose()
                .map_err(|e| e.to_string())?;
            Ok(Arc::new(Webhook::new(url, secret, client())))
        }
        kind => Err(format!("{kind} channels are not available in this build")),
    }
}

/// The app without adapters: enough for commands that never publish.
pub async fn app_for_ledger(config: &Config) -> Result<App, Failure> {
    let store = open_store(config).await?;
    Ok(App::new(
        store,
        config.app_settings(),
        BTreeMap::new(),
        App::system_clock(),
    ))
}

/// The app with every channel's adapter, for commands that publish.
pub async fn app_for_publishing(config: &Config) -> Result<App, Failure> {
    let platforms = build_platforms(config)?;
    let store = open_store(config).await?;
    Ok(App::new(
        store,
        config.app_settings(),
        platforms,
        App::system_clock(),
    ))
}
