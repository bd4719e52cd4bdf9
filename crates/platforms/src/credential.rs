//! Reading credentials from files, and only from files (docs/principles.md, 1.6).
//!
//! A credential file must be a regular file (not a symlink, not a directory) that
//! nobody but its owner can read or write (mode 0600 or stricter). A refusal names the
//! path and mode, never the content. The secret is returned as a [`SecretString`],
//! whose `Debug` is redacted.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub use secrecy::{ExposeSecret, SecretString};

/// The shortest secret a credential file may hold, in characters: the redactor
/// (`http::Redactor`) cannot scrub a shorter one from text without scrubbing ordinary
/// words, so such a secret could leak into error summaries.
pub const MIN_SECRET_CHARS: usize = 4;

/// Why a credential file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// The file does not exist.
    #[error("credential file {path} does not exist: create it with the secret and `chmod 600`")]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// The path is a symlink.
    #[error("credential file {path} is a symlink: point the config at the real file, mode 0600")]
    Symlink {
        /// The path.
        path: PathBuf,
    },
    /// The path is not a regular file.
    #[error("credential path {path} is a {kind}, not a regular file")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// Others can read or write the file.
    #[error(
        "credential file {path} has mode {mode:04o}, readable or writable by others: run `chmod 600 {path}`"
    )]
    TooOpen {
        /// The path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file is empty.
    #[error("credential file {path} is empty")]
    Empty {
        /// The path.
        path: PathBuf,
    },
    /// The secret is shorter than [`MIN_SECRET_CHARS`]: too short to be a real
    /// credential, and too short to be redacted from what platforms send back without
    /// redacting ordinary words.
    #[error(
        "credential file {path} holds a secret of fewer than {min} characters: that is not a real credential (and could not be kept out of error messages); put the whole secret in the file"
    )]
    TooShort {
        /// The path.
        path: PathBuf,
        /// The shortest secret accepted.
        min: usize,
    },
    /// The file could not be read.
    #[error("credential file {path} cannot be read: {reason}")]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// The IO error kind (never content).
        reason: String,
    },
}

/// Checks a credential file's type and permissions without reading it.
pub fn check_file(path: &Path) -> Result<(), CredentialError> {
    let owned = || path.to_path_buf();
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CredentialError::Missing { path: owned() });
        }
        Err(e) => {
            return Err(CredentialError::Unreadable {
                path: owned(),
                reason: e.kind().to_string(),
            });
        }
    };
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        return Err(CredentialError::Symlink { path: owned() });
    }
    if !file_type.is_file() {
        let kind = if file_type.is_dir() {
            "directory"
        } else {
            "special file"
        };
        return Err(CredentialError::NotRegular {
            path: owned(),
            kind,
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(CredentialError::TooOpen {
            path: owned(),
            mode,
        });
    }
    Ok(())
}

/// Reads a secret from a credential file after [`check_file`]; surrounding whitespace is trimmed.
///
/// The file is opened with the platform's `O_NOFOLLOW` (a symlink swapped in after the
/// check fails to open), and the opened file itself is checked again (regular, mode
/// 0600 or stricter), so what is read is what was checked.
pub fn read_secret(path: &Path) -> Result<SecretString, CredentialError> {
    check_file(path)?;
    let unreadable = |e: std::io::Error| CredentialError::Unreadable {
        path: path.to_path_buf(),
        reason: e.kind().to_string(),
    };
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| {
                // ELOOP: the path became a symlink between the check and the open.
                if e.raw_os_error() == Some(libc::ELOOP) {
                    CredentialError::Symlink {
                        path: path.to_path_buf(),
                    }
                } else {
                    unreadable(e)
                }
            })?
    };
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.file_type().is_file() {
        return Err(CredentialError::NotRegular {
            path: path.to_path_buf(),
            kind: if meta.is_dir() {
                "directory"
            } else {
                "special file"
            },
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(CredentialError::TooOpen {
            path: path.to_path_buf(),
            mode,
        });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(unreadable)?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(CredentialError::Empty {
            path: path.to_path_buf(),
        });
    }
    if secret.chars().count() < MIN_SECRET_CHARS {
        return Err(CredentialError::TooShort {
            path: path.to_path_buf(),
            min: MIN_SECRET_CHARS,
        });
    }
    Ok(SecretString::from(secret.to_owned()))
}

/// A short fingerprint of a secret that is safe to show: the first 8 hex digits of its SHA-256.
pub fn fingerprint(secret: &SecretString) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(secret.expose_secret().as_bytes()))[..8].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn write(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, "s3cret-canary\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn owner_only_files_are_read_and_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o600, 0o400] {
            let path = write(dir.path(), &format!("t{mode:o}"), mode);
            assert_eq!(read_secret(&path).unwrap().expose_secret(), "s3cret-canary");
        }
    }

    #[test]
    fn group_or_world_access_is_refused_naming_path_and_mode_but_not_content() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o640, 0o644, 0o604, 0o660, 0o602] {
            let path = write(dir.path(), &format!("t{mode:o}"), mode);
            let err = read_secret(&path).unwrap_err();
            assert_eq!(
                err,
                CredentialError::TooOpen {
                    path: path.clone(),
                    mode
                }
            );
            let msg = err.to_string();
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            assert!(msg.contains(&format!("{mode:04o}")), "{msg}");
            assert!(!msg.contains("canary"), "{msg}");
        }
    }

    #[test]
    fn symlinks_directories_and_missing_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = write(dir.path(), "real", 0o600);
        let link = dir.path().join("link");
        symlink(&target, &link).unwrap();
        assert!(matches!(
            read_secret(&link),
            Err(CredentialError::Symlink { .. })
        ));
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o700)).unwrap();
        assert!(matches!(
            read_secret(&sub),
            Err(CredentialError::NotRegular {
                kind: "directory",
                ..
            })
        ));
        assert!(matches!(
            read_secret(&dir.path().join("none")),
            Err(CredentialError::Missing { .. })
        ));
        let empty = dir.path().join("empty");
        fs::write(&empty, "  \n").unwrap();
        fs::set_permissions(&empty, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            read_secret(&empty),
            Err(CredentialError::Empty { .. })
        ));
    }

    #[test]
    fn a_secret_shorter_than_four_characters_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short");
        fs::write(&path, " abc \n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let err = read_secret(&path).unwrap_err();
        assert_eq!(
            err,
            CredentialError::TooShort {
                path: path.clone(),
                min: 4
            }
        );
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(!msg.contains("abc"), "{msg}");
        fs::write(&path, "abcd").unwrap();
        assert_eq!(read_secret(&path).unwrap().expose_secret(), "abcd");
    }

    #[test]
    fn the_open_uses_the_platforms_o_nofollow() {
        // The platform's constant, not a number that is right on one architecture only
        // (0o400000 is x86 Linux; aarch64 Linux and macOS differ).
        let dir = tempfile::tempdir().unwrap();
        let target = write(dir.path(), "real", 0o600);
        let link = dir.path().join("link");
        symlink(&target, &link).unwrap();
        use std::os::unix::fs::OpenOptionsExt;
        let opened = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&link);
        assert_eq!(
            opened.map(|_| ()).map_err(|e| e.raw_os_error()),
            Err(Some(libc::ELOOP))
        );
    }

    #[test]
    fn secrets_do_not_debug_print() {
        let secret = SecretString::from("s3cret-canary".to_owned());
        assert!(!format!("{secret:?}").contains("canary"));
        assert_eq!(fingerprint(&secret).len(), 8);
    }
}
