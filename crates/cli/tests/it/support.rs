//! Runs the real `airlock` binary against a config in a temp dir.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Workspace {
    pub dir: tempfile::TempDir,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", self.stdout))
    }
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_airlock")
}

impl Workspace {
    pub fn new(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("airlock.toml"), config).unwrap();
        Workspace { dir }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn config(&self) -> PathBuf {
        self.path("airlock.toml")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(binary());
        cmd.arg("--config")
            .arg(self.config())
            .args(args)
            .env_remove("AIRLOCK_CONFIG")
            .env("AIRLOCK_LOG", "warn")
            .stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        finish(self.command(args).output().unwrap())
    }

    /// Runs and insists on exit 0.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(
            run.code, 0,
            "airlock {args:?} failed: {}{}",
            run.stdout, run.stderr
        );
        run
    }

    pub fn db(&self) -> PathBuf {
        self.path("airlock.db")
    }
}

pub fn finish(output: Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A refusal: exit 2 and exactly one line on stderr.
pub fn assert_refused(run: &Run, needle: &str) {
    assert_eq!(
        run.code, 2,
        "expected a refusal: {}{}",
        run.stdout, run.stderr
    );
    assert_eq!(
        run.stderr.trim_end().lines().count(),
        1,
        "one line: {:?}",
        run.stderr
    );
    assert!(
        run.stderr.to_lowercase().contains(&needle.to_lowercase()),
        "{needle:?} not in {:?}",
        run.stderr
    );
}

pub fn sandbox_config(extra: &str) -> String {
    format!(
        r##"timezone = "Asia/Tokyo"
database = "sqlite://airlock.db"

[quota]
window = "60m"
window_limit = 100

[channels.sandbox]
kind = "sandbox"
daily_limit = 100
max_chars = 40
forbidden = ["guaranteed"]
required = ["#cats"]
{extra}"##
    )
}

pub fn count_lines_for(path: &Path, post_id: i64) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["post_id"] == post_id)
        .count()
}

/// A webhook endpoint that accepts requests and never answers, counting them.
pub fn silent_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let held = Arc::new(Mutex::new(Vec::new()));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut buf = [0u8; 8192];
            let mut got = Vec::new();
            while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            seen.fetch_add(1, Ordering::SeqCst);
            held.lock().unwrap().push(stream);
        }
    });
    (url, count)
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `airlock serve`, killed when dropped.
pub struct Serving {
    child: Child,
    address: String,
    log: PathBuf,
}

impl Serving {
    /// Starts `serve` for `ws` and waits until `/healthz` answers 200.
    pub fn start(ws: &Workspace) -> Serving {
        let config = std::fs::read_to_string(ws.config()).unwrap();
        let address = config
            .lines()
            .find_map(|l| l.strip_prefix("listen = "))
            .expect("the config has [server] listen")
            .trim_matches('"')
            .to_owned();
        let log = ws.path("serve.log");
        let child = ws
            .command(&["serve"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut serving = Serving {
            child,
            address,
            log,
        };
        let start = Instant::now();
        while !serving.healthy() {
            if let Some(status) = serving.child.try_wait().unwrap() {
                panic!("airlock serve exited ({status}): {}", serving.log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "airlock serve never answered /healthz on {}: {}",
                serving.address,
                serving.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        serving
    }

    fn healthy(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(&self.address) else {
            return false;
        };
        let request = format!(
            "GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.address
        );
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 200")
    }

    /// The address it listens on.
    pub fn address(&self) -> &str {
        &self.address
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}
