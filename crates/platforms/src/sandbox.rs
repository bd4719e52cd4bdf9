//! `sandbox`: publishes to a local JSON-lines file, for demos, dry runs and drills.
//!
//! One line per publish in `sandbox/<channel>.jsonl` beside the config (or `path`), one
//! per part of a thread (with `part`, `of` and `reply_to`); the id is random and the
//! permalink `sandbox://<channel>/<id>`. `simulate` acts out the
//! other outcomes: `reject` (a definite rejection) and `unknown` (a request whose fate
//! nobody knows). Reconcile finds a line by its idempotency key; it never claims to
//! know that nothing was published, because a drill must reach a person.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::json;

use airlock_core::{ChannelKind, ChannelName, Outcome, Published};

use crate::kind::{Common, KindConfig};
use crate::{
    Account, Evidence, Platform, Prepared, Proof, PublishRequest, ReconcileRequest, StepError,
    Verification,
};

/// Which outcome a sandbox acts out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Simulate {
    /// Publish (append the line).
    #[default]
    Ok,
    /// Answer with a definite rejection.
    Reject,
    /// Answer as if the request timed out after sending.
    Unknown,
}

/// A sandbox channel.
#[derive(Debug)]
pub struct Sandbox {
    channel: ChannelName,
    path: PathBuf,
    simulate: Simulate,
    // Appends from tasks of one process are serialized; across processes each line is
    // one O_APPEND write.
    lock: tokio::sync::Mutex<()>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Line {
    id: String,
    idempotency_key: String,
    post_id: i64,
    channel: String,
    #[serde(default)]
    title: Option<String>,
    text: String,
    #[serde(default)]
    media: serde_json::Value,
    #[serde(default)]
    link: Option<String>,
    published_at: String,
}

impl Sandbox {
    /// A sandbox writing to `path`.
    pub fn new(channel: ChannelName, path: PathBuf, simulate: Simulate) -> Self {
        Sandbox {
            channel,
            path,
            simulate,
            lock: tokio::sync::Mutex::new(()),
        }
    }

    fn permalink(&self, id: &str) -> String {
        format!("sandbox://{}/{id}", self.channel)
    }

    async fn lines(&self) -> std::io::Result<Vec<Line>> {
        let text = match tokio::fs::read_to_string(&self.path).await {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect())
    }

    /// Appends a line, creating the log (mode 0600) and its directory (0700) if missing:
    /// the log holds every post's text, readable only by the ledger's owner.
    fn append(&self, line: &str) -> std::io::Result<()> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        if let Some(dir) = self.path.parent()
            && !dir.as_os_str().is_empty()
            && !dir.exists()
        {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let existed = self.path.exists();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)?;
        if !existed {
            // Whatever the umask: exactly owner read and write.
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        file.write_all(line.as_bytes())
    }
}

fn random_id() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    hex::encode(bytes)
}

#[async_trait]
impl Platform for Sandbox {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Sandbox
    }

    fn prepares(&self) -> bool {
        false
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        Ok(None)
    }

    async fn publish(&self, req: &PublishRequest, _prepared: &Prepared) -> Outcome {
        match self.simulate {
            Simulate::Ok => {}
            Simulate::Reject => {
                return Outcome::Rejected {
                    reason: "sandbox: simulated rejection (simulate = \"reject\")".into(),
                    credential: false,
                };
            }
            Simulate::Unknown => {
                return Outcome::Unknown {
                    reason: "sandbox: simulated timeout after sending (simulate = \"unknown\")"
                        .into(),
                };
            }
        }
        let id = random_id();
        let line = json!({
            "id": id,
            "idempotency_key": req.idempotency_key,
            "post_id": req.post_id.0,
            "channel": req.channel.as_str(),
            "title": req.title,
            "text": req.text,
            "media": req.media,
            "link": req.link,
            "published_at": airlock_core::time::format_utc(chrono::Utc::now()),
        });
        let mut line = line;
        if req.part.of > 1 {
            // A part of a thread: which one, and the part it replies to.
            line["part"] = json!(req.part.number);
            line["of"] = json!(req.part.of);
            line["comment"] = json!(req.part.comment);
            line["reply_to"] = json!(req.part.parent().map(|p| &p.platform_post_id));
        }
        let _guard = self.lock.lock().await;
        match self.append(&format!("{line}\n")) {
            Ok(()) => Outcome::Published(Published {
                permalink: Some(self.permalink(&id)),
                platform_post_id: Some(id),
                pause: None,
                existing: None,
            }),
            // The line may be partly written: nobody knows whether the post "went out".
            Err(e) => Outcome::Unknown {
                reason: format!(
                    "sandbox: cannot append to {}: {}",
                    self.path.display(),
                    e.kind()
                ),
            },
        }
    }

    async fn verify(&self, platform_post_id: &str) -> Verification {
        match self.lines().await {
            Ok(lines) if lines.iter().any(|l| l.id == platform_post_id) => Verification::Verified {
                permalink: Some(self.permalink(platform_post_id)),
            },
            Ok(_) => Verification::Failed {
                reason: format!(
                    "sandbox: no line with id {platform_post_id} in {}",
                    self.path.display()
                ),
            },
            Err(e) => Verification::Failed {
                reason: format!("sandbox: cannot read {}: {}", self.path.display(), e.kind()),
            },
        }
    }

    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        let Ok(lines) = self.lines().await else {
            return Evidence::NoProof;
        };
        match lines
            .iter()
            .find(|l| l.idempotency_key == req.publish.idempotency_key)
        {
            Some(line) => Evidence::Published(Proof {
                platform_post_id: Some(line.id.clone()),
                permalink: Some(self.permalink(&line.id)),
                note: format!(
                    "sandbox log {} has the post (id {}, idempotency key {})",
                    self.path.display(),
                    line.id,
                    line.idempotency_key
                ),
                attempt: None,
            }),
            // Absence proves nothing: a frozen worker may still write its line.
            None => Evidence::NoProof,
        }
    }
}

/// `kind = "sandbox"`: a local JSON-lines log instead of a platform.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// `ok`, `reject` or `unknown`: the outcome it acts out.
    #[serde(default)]
    pub simulate: Simulate,
    /// The log (default `sandbox/<channel>.jsonl` beside the config).
    pub path: Option<PathBuf>,
}

impl SandboxConfig {
    fn default_path(channel: &str) -> PathBuf {
        PathBuf::from("sandbox").join(format!("{channel}.jsonl"))
    }
}

impl KindConfig for SandboxConfig {
    fn resolve_paths(&mut self, channel: &str, resolve: &dyn Fn(&mut PathBuf)) {
        resolve(self.path.get_or_insert_with(|| Self::default_path(channel)));
    }

    fn build(&self, channel: &ChannelName, _: &Common) -> Result<Arc<dyn Platform>, String> {
        let path = self
            .path
            .clone()
            .unwrap_or_else(|| Self::default_path(channel.as_str()));
        Ok(Arc::new(Sandbox::new(channel.clone(), path, self.simulate)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::PostId;

    fn request() -> PublishRequest {
        PublishRequest {
            post_id: PostId(7),
            channel: ChannelName::parse("sandbox").unwrap(),
            title: None,
            text: "猫".into(),
            media: vec![],
            link: None,
            scheduled_at: chrono::Utc::now(),
            idempotency_key: "key-7".into(),
            now: chrono::Utc::now(),
            earlier: Vec::new(),
            part: crate::PartRequest::SINGLE,
        }
    }

    #[tokio::test]
    async fn publishes_a_line_verifies_and_reconciles_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sandbox/sandbox.jsonl");
        let sandbox = Sandbox::new(
            ChannelName::parse("sandbox").unwrap(),
            path.clone(),
            Simulate::Ok,
        );
        let Outcome::Published(published) = sandbox.publish(&request(), &Prepared::default()).await
        else {
            panic!("sandbox publish failed");
        };
        let id = published.platform_post_id.unwrap();
        assert_eq!(
            published.permalink.unwrap(),
            format!("sandbox://sandbox/{id}")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.contains("\"text\":\"猫\""));
        assert!(matches!(
            sandbox.verify(&id).await,
            Verification::Verified { .. }
        ));
        assert!(matches!(
            sandbox.verify("nope").await,
            Verification::Failed { .. }
        ));
        let evidence = sandbox
            .reconcile(&ReconcileRequest {
                publish: request(),
                platform_ref: None,
            })
            .await;
        assert!(
            matches!(evidence, Evidence::Published(Proof { platform_post_id: Some(found), .. }) if found == id)
        );
    }

    #[tokio::test]
    async fn simulated_outcomes_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        for (simulate, reject) in [(Simulate::Reject, true), (Simulate::Unknown, false)] {
            let sandbox = Sandbox::new(ChannelName::parse("s").unwrap(), path.clone(), simulate);
            let outcome = sandbox.publish(&request(), &Prepared::default()).await;
            assert_eq!(matches!(outcome, Outcome::Rejected { .. }), reject);
            assert_eq!(matches!(outcome, Outcome::Unknown { .. }), !reject);
            let evidence = sandbox
                .reconcile(&ReconcileRequest {
                    publish: request(),
                    platform_ref: None,
                })
                .await;
            assert_eq!(evidence, Evidence::NoProof);
        }
        assert!(!path.exists());
    }
}
