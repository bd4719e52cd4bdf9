//! The operator's desk in a real browser: headless Chromium driven by Playwright
//! (`tests/browser/desk.mjs`) signs in through a forwarded port, follows the page's
//! advice, then works the tokens page and the audit export.
//!
//! The dashboard is served behind the server's Host/Origin policy on one port and
//! reached only through a TCP proxy on another, as through `ssh -L 9000:localhost:8080`
//! or `docker run -p 9000:8080`: the browser's `Origin` names the proxy's port, which
//! the server was not told about. When the script prints the advice, the test
//! "restarts" the server with it (a new router with that `public_url`, the proxy's
//! connections dropped, as a restart drops them) and tells the script to go on.
//!
//! Needs what `browser.rs` needs. Screenshots land in `target/screenshots/`; the ones
//! `docs/dashboard.md` shows are copies of them in `docs/screenshots/`.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use airlock_app::Principal;
use airlock_app::posts::DraftOrigin;
use airlock_core::{Actor, Role, RoleSet};
use airlock_web::policy::{HostPolicy, PolicySettings};

use crate::browser::{browser_dir, require_browser_tools, screenshot_dir};
use crate::support::{Harness, PACE, draft};

/// Serves the dashboard behind the policy on a fresh loopback port, as `serve` would
/// with `public_url`; returns where it listens and its task.
async fn serve(h: &Harness, public_url: Option<&str>) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let mut settings = PolicySettings::new(address);
    settings.public_url = public_url.map(|u| url::Url::parse(u).unwrap());
    let policy = HostPolicy::new(&settings).with_page(airlock_dashboard::refusal_page);
    let router = airlock_web::guarded(h.router(), policy);
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    (address, task)
}

/// A TCP proxy to whatever `target` names; a new value of `restarts` drops every
/// connection it carries, as a server's restart does.
async fn proxy(
    listener: TcpListener,
    target: Arc<Mutex<SocketAddr>>,
    restarts: watch::Receiver<u32>,
) {
    loop {
        let Ok((mut inbound, _)) = listener.accept().await else {
            return;
        };
        let to = *target.lock().unwrap();
        let mut restarted = restarts.clone();
        restarted.mark_unchanged();
        tokio::spawn(async move {
            let Ok(mut outbound) = TcpStream::connect(to).await else {
                return;
            };
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                _ = restarted.changed() => {}
            }
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_signs_in_through_a_forwarded_port_and_manages_tokens_in_headless_chromium() {
    require_browser_tools();
    let h = Harness::new().await;
    // Two live drafts for the writer token, for the tokens page to count.
    let agent = Principal {
        actor: Actor::Token("agent".into()),
        roles: RoleSet::of(&[Role::Writer]),
        sod_exempt: false,
    };
    for text in ["Mochi naps by the stove.", "Kuro found the sun."] {
        h.app
            .create_post(
                &agent,
                draft("cats", &format!("{text} {PACE}")),
                None,
                DraftOrigin::default(),
            )
            .await
            .unwrap();
    }

    let (backend, server) = serve(&h, None).await;
    let target = Arc::new(Mutex::new(backend));
    let (restart, restarts) = watch::channel(0u32);
    let forwarded = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", forwarded.local_addr().unwrap());
    assert_ne!(forwarded.local_addr().unwrap().port(), backend.port());
    let proxy_task = tokio::spawn(proxy(forwarded, target.clone(), restarts));
    let shots = screenshot_dir();
    std::fs::create_dir_all(&shots).unwrap();

    let mut child = tokio::process::Command::new("node")
        .arg(browser_dir().join("desk.mjs"))
        .arg(&base_url)
        .arg(&h.operator)
        .arg(&shots)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = String::new();
    let mut servers = vec![server];
    let mut advised = None;
    let run = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            stdout.push_str(&line);
            stdout.push('\n');
            let Some(advice) = line.strip_prefix("ADVICE ") else {
                continue;
            };
            // `public_url = "http://127.0.0.1:PORT"`: the proxy's address.
            let url = advice
                .strip_prefix("public_url = \"")
                .and_then(|rest| rest.strip_suffix('"'))
                .unwrap_or_else(|| panic!("unexpected advice: {advice}"))
                .to_owned();
            assert_eq!(
                url, base_url,
                "the advice names the address the browser used"
            );
            // The restart: a new server with the setting, the old one stopped.
            let (backend, server) = serve(&h, Some(&url)).await;
            *target.lock().unwrap() = backend;
            for old in servers.drain(..) {
                old.abort();
            }
            servers.push(server);
            restart.send_modify(|n| *n += 1);
            stdin.write_all(b"restarted\n").await.unwrap();
            stdin.flush().await.unwrap();
            advised = Some(url);
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(300), run)
        .await
        .expect("the browser script finishes within 5 minutes");
    let status = child.wait().await.unwrap();
    let stderr = errors.await.unwrap();
    proxy_task.abort();
    for server in servers {
        server.abort();
    }
    println!("{stdout}");
    assert!(
        status.success(),
        "the browser script failed ({status}):\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("desk steps passed"), "{stdout}");
    assert!(advised.is_some(), "the script was refused and advised");

    // What the browser did is in the ledger: newsbot created with its roles, then
    // revoked; its secret was on one page only.
    let tokens = h.app.list_tokens(&Principal::cli()).await.unwrap();
    let newsbot = tokens.iter().find(|t| t.name == "newsbot").unwrap();
    assert_eq!(newsbot.roles, RoleSet::of(&[Role::Writer, Role::Critic]));
    assert!(newsbot.revoked_at.is_some());
    for name in [
        "desk-forwarded-login",
        "desk-forwarded-refused",
        "tokens-desktop",
        "tokens-created",
        "tokens-revoke",
        "tokens-phone",
    ] {
        assert!(shots.join(format!("{name}.png")).exists(), "{name}.png");
    }
}
