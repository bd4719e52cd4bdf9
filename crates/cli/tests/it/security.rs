//! The security review's findings, tried as a new user would, through the real binary:
//! private files from `init` whatever the umask, no database password on screen,
//! oversized drafts refused naming the limit, `[cli] require_token`, a token revoked
//! while `airlock mcp` runs, `public_url` with `Secure` cookies, a foreign `Host` refused
//! on every route of `serve`, and a site that echoes the Basic credential it was sent,
//! whose echo is searched for (in every derived form) everywhere airlock keeps or sends
//! anything.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use base64::Engine;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use airlock_testkit::pg::TestDb;

use crate::support::*;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Runs the binary under `sh` with `umask 000`, the loosest there is.
fn with_open_umask(args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(r#"umask 000; exec "$@""#)
        .arg("sh")
        .arg(binary())
        .args(args)
        .env_remove("AIRLOCK_CONFIG")
        .env("AIRLOCK_LOG", "warn")
        .stdin(Stdio::null());
    cmd
}

#[test]
fn init_and_the_store_leave_every_file_private_whatever_the_umask() {
    let ws = Workspace::new("");
    std::fs::remove_file(ws.config()).unwrap();
    let dir = ws.dir.path().to_str().unwrap().to_owned();
    let init = finish(with_open_umask(&["init", "--dir", &dir]).output().unwrap());
    assert_eq!(init.code, 0, "{}{}", init.stdout, init.stderr);
    assert_eq!(mode(&ws.config()), 0o600, "airlock.toml");
    assert_eq!(mode(&ws.db()), 0o600, "airlock.db");

    // Directories init creates are 0700.
    let nested = ws.path("nested/site");
    let run = finish(
        with_open_umask(&["init", "--dir", nested.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mode(&ws.path("nested")), 0o700);
    assert_eq!(mode(&nested), 0o700);
    assert_eq!(mode(&nested.join("airlock.toml")), 0o600);

    // A publish writes the sandbox log.
    let port = free_port();
    let text: Vec<String> = std::fs::read_to_string(ws.config())
        .unwrap()
        .lines()
        .map(|line| {
            if line.starts_with("listen = ") {
                format!("listen = \"127.0.0.1:{port}\"")
            } else {
                line.to_owned()
            }
        })
        .collect();
    std::fs::write(ws.config(), text.join("\n")).unwrap();
    let config = ws.config();
    let config = config.to_str().unwrap();
    let add = finish(
        with_open_umask(&[
            "--config",
            config,
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "hello",
        ])
        .output()
        .unwrap(),
    );
    assert_eq!(add.code, 0, "{}", add.stderr);
    let id = add.stdout.trim().to_owned();
    for args in [
        vec!["--config", config, "post", "approve", &id],
        vec!["--config", config, "dispatch", "--once"],
    ] {
        let run = finish(with_open_umask(&args).output().unwrap());
        assert_eq!(run.code, 0, "{args:?}: {}{}", run.stdout, run.stderr);
    }
    let sandbox: Vec<_> = std::fs::read_dir(ws.path("sandbox"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!sandbox.is_empty());
    assert_eq!(mode(&ws.path("sandbox")), 0o700);
    for file in &sandbox {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }

    // A running server keeps the WAL and SHM on disk: they follow the database's mode.
    let serving = Serving::start(&ws);
    for suffix in ["-wal", "-shm"] {
        let file = ws.path(&format!("airlock.db{suffix}"));
        assert_eq!(mode(&file), 0o600, "{}: {}", file.display(), serving.log());
    }
}

#[test]
fn migrate_and_doctor_never_print_the_database_password() {
    let db = TestDb::create();
    // The test server trusts local connections, so a password in the URL is accepted
    // and ignored: what matters is that it never shows.
    let url = db
        .url
        .replacen("://postgres@", "://postgres:Pw-canary-7d2e@", 1);
    assert!(url.contains("Pw-canary-7d2e"), "{url}");
    let ws = Workspace::new(&format!(
        "database = \"{url}\"\n[channels.sandbox]\nkind = \"sandbox\"\ndaily_limit = 1\n"
    ));
    for args in [&["migrate"][..], &["doctor"][..]] {
        let run = ws.run(args);
        assert_eq!(run.code, 0, "{args:?}: {}{}", run.stdout, run.stderr);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(
            !all.contains("Pw-canary-7d2e"),
            "{args:?} printed the password: {all}"
        );
        assert!(
            all.contains("127.0.0.1"),
            "{args:?} names the server: {all}"
        );
    }
    // A database URL airlock cannot use names it without its credentials.
    let ws = Workspace::new("database = \"mysql://root:Pw-canary-7d2e@db.example/x\"\n");
    let run = ws.run(&["migrate"]);
    assert_refused(&run, "expected sqlite://");
    assert!(!run.stderr.contains("Pw-canary-7d2e"), "{}", run.stderr);
}

#[test]
fn a_one_megabyte_draft_is_refused_naming_the_limit_and_an_oversized_text_file_is_never_read() {
    let ws = Workspace::new(&sandbox_config(""));
    let huge = ws.path("huge.md");
    std::fs::write(&huge, "x".repeat(1_000_000)).unwrap();
    let run = ws.run(&[
        "post",
        "add",
        "--channel",
        "sandbox",
        "--text-file",
        huge.to_str().unwrap(),
    ]);
    assert_refused(&run, "larger than 400000 bytes");
    assert!(run.stderr.contains("100000 characters"), "{}", run.stderr);
    // Under the file limit but over the text limit: refused by the text limit.
    let long = ws.path("long.md");
    std::fs::write(&long, "y".repeat(300_000)).unwrap();
    let run = ws.run(&[
        "post",
        "add",
        "--channel",
        "sandbox",
        "--text-file",
        long.to_str().unwrap(),
    ]);
    assert_refused(&run, "at most 100000");
    let listed = ws.ok(&["post", "list", "--json"]).json();
    assert_eq!(listed, json!([]), "nothing written");
}

fn token(ws: &Workspace, name: &str, roles: &str) -> String {
    ws.ok(&["token", "create", "--name", name, "--role", roles, "--json"])
        .json()["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn require_token_makes_state_changing_commands_act_as_an_operator_token() {
    let ws = Workspace::new(&sandbox_config(""));
    let operator = token(&ws, "ops", "operator");
    let writer = token(&ws, "agent", "writer,critic");
    std::fs::write(
        ws.config(),
        sandbox_config("\n[cli]\nrequire_token = true\n"),
    )
    .unwrap();

    let add = ["post", "add", "--channel", "sandbox", "--text", "Hi #cats"];
    let run = finish(
        ws.command(&add)
            .env_remove("AIRLOCK_TOKEN")
            .output()
            .unwrap(),
    );
    assert_refused(&run, "require_token");
    let run = finish(
        ws.command(&add)
            .env("AIRLOCK_TOKEN", &writer)
            .output()
            .unwrap(),
    );
    assert_refused(&run, "not operator");
    assert!(!run.stderr.contains(&writer), "the token is never printed");
    let run = finish(
        ws.command(&["token", "create", "--name", "x", "--role", "operator"])
            .env_remove("AIRLOCK_TOKEN")
            .output()
            .unwrap(),
    );
    assert_refused(&run, "require_token");
    let run = finish(
        ws.command(&["pause", "--all", "--reason", "agent"])
            .env_remove("AIRLOCK_TOKEN")
            .output()
            .unwrap(),
    );
    assert_refused(&run, "require_token");

    // Reads stay open.
    ws.ok(&["post", "list"]);
    ws.ok(&["quota"]);

    // With the operator token the command runs as that token, held to separation of
    // duties like any token: it may not approve what it wrote.
    let added = finish(
        ws.command(&add)
            .env("AIRLOCK_TOKEN", &operator)
            .output()
            .unwrap(),
    );
    assert_eq!(added.code, 0, "{}", added.stderr);
    let id = added.stdout.trim().to_owned();
    let post = ws.ok(&["post", "show", &id, "--json"]).json();
    assert_eq!(post["created_by"], "token:ops");
    let run = finish(
        ws.command(&["post", "approve", &id])
            .env("AIRLOCK_TOKEN", &operator)
            .output()
            .unwrap(),
    );
    assert_refused(&run, "separation of duties");
}

#[test]
fn require_token_also_gates_serve_dispatch_backup_and_migrate() {
    let ws = Workspace::new(&sandbox_config(""));
    let operator = token(&ws, "ops", "operator");
    let writer = token(&ws, "agent", "writer");
    ws.ok(&["post", "add", "--channel", "sandbox", "--text", "Hi #cats"]);
    std::fs::write(
        ws.config(),
        sandbox_config("\n[cli]\nrequire_token = true\n"),
    )
    .unwrap();
    let to = ws.path("copy.db");
    let commands: [&[&str]; 4] = [
        &["dispatch", "--once"],
        &["backup", "--to", to.to_str().unwrap()],
        &["migrate"],
        &["serve"],
    ];
    for args in commands {
        let run = finish(
            ws.command(args)
                .env_remove("AIRLOCK_TOKEN")
                .output()
                .unwrap(),
        );
        assert_refused(&run, "require_token");
        let run = finish(
            ws.command(args)
                .env("AIRLOCK_TOKEN", &writer)
                .output()
                .unwrap(),
        );
        assert_refused(&run, "not operator");
    }
    assert!(!to.exists(), "a refused backup wrote nothing");
    for args in &commands[..3] {
        let run = finish(
            ws.command(args)
                .env("AIRLOCK_TOKEN", &operator)
                .output()
                .unwrap(),
        );
        assert_eq!(run.code, 0, "{args:?}: {}{}", run.stdout, run.stderr);
    }
    assert!(to.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_while_airlock_mcp_runs_stops_working_at_the_next_call() {
    let ws = Workspace::new(&sandbox_config(""));
    let secret = token(&ws, "stdio-agent", "writer");
    let command = tokio::process::Command::new(binary()).configure(|cmd| {
        cmd.arg("--config")
            .arg(ws.config())
            .arg("mcp")
            .env_remove("AIRLOCK_CONFIG")
            .env("AIRLOCK_LOG", "warn")
            .env("AIRLOCK_TOKEN", &secret);
    });
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let draft = |text: &str| {
        CallToolRequestParams::new("draft_post").with_arguments(
            json!({"channel": "sandbox", "text": text})
                .as_object()
                .cloned()
                .unwrap(),
        )
    };
    let first = client.call_tool(draft("before #cats")).await.unwrap();
    assert_ne!(first.is_error, Some(true), "{first:?}");

    ws.ok(&["token", "revoke", "stdio-agent"]);
    let after = client.call_tool(draft("after #cats")).await.unwrap();
    assert_eq!(after.is_error, Some(true), "a revoked token keeps drafting");
    let text: String = after
        .content
        .iter()
        .filter_map(|b| b.as_text().map(|t| t.text.clone()))
        .collect();
    assert!(text.contains("revoked"), "{text}");
    client.cancel().await.unwrap();
    let listed = ws.ok(&["post", "list", "--json"]).json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
}

/// One HTTP/1.1 exchange on a raw socket, so the `Host` header is exactly `host`.
fn http(
    address: &str,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

fn set_cookies(head: &str) -> Vec<String> {
    head.lines()
        .filter_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or_else(|| l.strip_prefix("Set-Cookie: "))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn serve_behind_tls_sets_secure_cookies_and_a_foreign_host_gets_no_answer_from_any_route() {
    let port = free_port();
    let ws = Workspace::new(&sandbox_config(&format!(
        "\n[server]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"https://airlock.example\"\n"
    )));
    let operator = token(&ws, "ops", "operator");
    let serving = Serving::start(&ws);
    let address = format!("127.0.0.1:{port}");
    let bearer = format!("Bearer {operator}");

    for path in [
        "/",
        "/login",
        "/live",
        "/review",
        "/posts/1",
        "/static/dashboard.css",
        "/api/v1/posts",
        "/api/v1/events",
        "/api/openapi.json",
        "/healthz",
        "/metrics",
        "/mcp",
    ] {
        for host in ["evil.example", "evil.example:80", "127.0.0.1.nip.io"] {
            let (status, _, body) = http(
                &address,
                "GET",
                path,
                host,
                &[("Authorization", &bearer)],
                "",
            );
            assert_eq!(status, 403, "{path} for {host}: {body}");
            assert!(body.contains("forbidden_host"), "{path}: {body}");
        }
    }
    let (status, _, body) = http(&address, "GET", "/healthz", "airlock.example", &[], "");
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));

    // Signing in through the public name: every cookie is __Host- and Secure.
    let (status, head, page) = http(&address, "GET", "/login", "airlock.example", &[], "");
    assert_eq!(status, 200, "{}", serving.log());
    let login_cookie = set_cookies(&head)
        .into_iter()
        .find(|c| c.starts_with("__Host-airlock_login="))
        .unwrap_or_else(|| panic!("no login cookie in {head}"));
    assert!(login_cookie.ends_with("; Secure"), "{login_cookie}");
    let marker = r#"name="csrf" value=""#;
    let start = page.find(marker).unwrap() + marker.len();
    let csrf = &page[start..start + page[start..].find('"').unwrap()];
    let cookie = login_cookie.split(';').next().unwrap();
    let form = format!("csrf={csrf}&token={operator}");
    let (status, head, _) = http(
        &address,
        "POST",
        "/login",
        "airlock.example",
        &[
            ("Cookie", cookie),
            ("Origin", "https://airlock.example"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &form,
    );
    assert_eq!(status, 303, "{head}");
    let session = set_cookies(&head)
        .into_iter()
        .find(|c| c.starts_with("__Host-airlock_session="))
        .unwrap_or_else(|| panic!("no session cookie in {head}"));
    assert!(
        session.contains("HttpOnly; SameSite=Strict; Path=/") && session.ends_with("; Secure"),
        "{session}"
    );
    // A form from a foreign page is refused before any handler runs.
    let (status, _, body) = http(
        &address,
        "POST",
        "/login",
        "airlock.example",
        &[
            ("Cookie", cookie),
            ("Origin", "https://evil.example"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &form,
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("forbidden_origin"), "{body}");
}

/// The WordPress application password of the echo test, with a space, a quote and a
/// backslash so that each derived form differs from the others.
const PASSWORD: &str = r#"Cn4ry "pw\9f3e xyz7"#;
const USERNAME: &str = "editor";

/// Every form the password may travel or be echoed in.
fn echoed_forms() -> Vec<String> {
    let compact: String = PASSWORD.chars().filter(|c| !c.is_whitespace()).collect();
    let json = serde_json::to_string(PASSWORD).unwrap();
    let basic =
        |pass: &str| base64::engine::general_purpose::STANDARD.encode(format!("{USERNAME}:{pass}"));
    let percent: String = url::form_urlencoded::byte_serialize(PASSWORD.as_bytes()).collect();
    vec![
        PASSWORD.to_owned(),
        compact.clone(),
        json[1..json.len() - 1].to_owned(),
        percent.clone(),
        percent.replace('+', "%20"),
        basic(PASSWORD),
        basic(&compact),
    ]
}

/// What is searched for: every echoed form, and pieces that would survive a cut
/// through one (the start of the Basic credential covers "editor:Cn4ry", and "Cn4ry"
/// starts every plain form).
fn needles() -> Vec<String> {
    let mut needles = echoed_forms();
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USERNAME}:{PASSWORD}"));
    needles.push(basic[..16].to_owned());
    needles.push("Cn4ry".to_owned());
    needles
}

/// A WordPress site that accepts the identity read and slug lookup, then refuses the
/// article and echoes the Authorization header it got, and the password in every form.
async fn echoing_site() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/wp-json/wp/v2/users/me"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"id": 3, "slug": "inn_cats"})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/wp-json/wp/v2/posts"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/wp-json/wp/v2/posts"))
        .respond_with(|request: &Request| {
            let auth = request
                .headers
                .get("authorization")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default();
            let forms = echoed_forms().join(" | ");
            ResponseTemplate::new(401).set_body_json(json!({
                "code": "rest_cannot_create",
                "message": format!("Sorry. Authorization: {auth}\nYou sent {forms}"),
                "data": {"status": 401, "headers": {"authorization": auth}},
            }))
        })
        .expect(1)
        .mount(&server)
        .await;
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_basic_credential_is_nowhere_in_the_ledger_its_answers_or_its_notifications() {
    let site = echoing_site().await;
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&receiver)
        .await;
    let port = free_port();
    let ws = Workspace::new(&format!(
        r#"timezone = "UTC"
database = "sqlite://airlock.db"

[server]
listen = "127.0.0.1:{port}"

[quota]
window_limit = 100

[notify.ops]
kind = "webhook"
url = "{receiver}/notify"
events = ["failed", "paused", "needs_review", "published"]

[channels.blog]
kind = "wordpress"
token_file = "credentials/blog.password"
username = "{USERNAME}"
account = "inn_cats"
base_url = "{site}"
request_timeout = "2s"
daily_limit = 10
"#,
        receiver = receiver.uri(),
        site = site.uri(),
    ));
    std::fs::create_dir(ws.path("credentials")).unwrap();
    let password_file = ws.path("credentials/blog.password");
    std::fs::write(&password_file, format!("{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let writer = token(&ws, "reader", "writer");

    let mut transcript = String::new();
    let mut run = |args: &[&str]| {
        let run = finish(
            ws.command(args)
                .env("AIRLOCK_LOG", "trace")
                .output()
                .unwrap(),
        );
        transcript.push_str(&run.stdout);
        transcript.push_str(&run.stderr);
        run
    };
    let id = run(&[
        "post",
        "add",
        "--channel",
        "blog",
        "--title",
        "Cats",
        "--text",
        "Our cats nap.",
    ])
    .stdout
    .trim()
    .to_owned();
    assert_eq!(run(&["post", "approve", &id]).code, 0);
    let dispatched = run(&["dispatch", "--once"]);
    assert_eq!(
        dispatched.code, 1,
        "{}{}",
        dispatched.stdout, dispatched.stderr
    );
    let shown = run(&["post", "show", &id, "--json"]);
    let post: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(post["status"], "failed", "{post}");
    let error = post["error"].as_str().unwrap();
    assert!(
        error.contains("rest_cannot_create") && error.contains("[redacted]"),
        "{error}"
    );

    let forms = needles();
    let leak = |haystack: &[u8]| {
        forms
            .iter()
            .find(|form| haystack.windows(form.len()).any(|w| w == form.as_bytes()))
            .cloned()
    };
    if let Some(form) = leak(transcript.as_bytes()) {
        panic!("the password ({form}) reached command output:\n{transcript}");
    }

    // While a server holds the ledger open, its WAL is on disk too.
    let serving = Serving::start(&ws);
    let mut searched = Vec::new();
    for entry in std::fs::read_dir(ws.dir.path()).unwrap() {
        let file = entry.unwrap().path();
        if file.is_file() {
            let bytes = std::fs::read(&file).unwrap();
            if let Some(form) = leak(&bytes) {
                panic!("the password ({form}) leaked into {}", file.display());
            }
            searched.push(file.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert!(
        searched.iter().any(|f| f == "airlock.db-wal"),
        "the WAL was searched: {searched:?}"
    );

    let address = format!("127.0.0.1:{port}");
    let bearer = format!("Bearer {writer}");
    for path in [
        format!("/api/v1/posts/{id}"),
        "/api/v1/posts".to_owned(),
        "/api/v1/events?after=0".to_owned(),
    ] {
        let (status, _, body) = http(
            &address,
            "GET",
            &path,
            &address,
            &[("Authorization", &bearer)],
            "",
        );
        assert_eq!(status, 200, "{path}: {body}{}", serving.log());
        if let Some(form) = leak(body.as_bytes()) {
            panic!("the password ({form}) is in the API answer of {path}: {body}");
        }
        assert!(
            path.contains("events") || body.contains("[redacted]"),
            "{path}: {body}"
        );
    }

    let command = tokio::process::Command::new(binary()).configure(|cmd| {
        cmd.arg("--config")
            .arg(ws.config())
            .arg("mcp")
            .env_remove("AIRLOCK_CONFIG")
            .env("AIRLOCK_TOKEN", &writer);
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    for (tool, args) in [
        ("get_post", json!({"id": id.parse::<i64>().unwrap()})),
        ("list_posts", json!({})),
    ] {
        let result = client
            .call_tool(
                CallToolRequestParams::new(tool).with_arguments(args.as_object().cloned().unwrap()),
            )
            .await
            .unwrap();
        let text: String = result
            .content
            .iter()
            .filter_map(|b| b.as_text().map(|t| t.text.clone()))
            .collect();
        assert!(text.contains("rest_cannot_create"), "{tool}: {text}");
        if let Some(form) = leak(text.as_bytes()) {
            panic!("the password ({form}) is in the MCP answer of {tool}");
        }
    }
    client.cancel().await.unwrap();

    let notifications = receiver.received_requests().await.unwrap();
    assert!(!notifications.is_empty(), "the failure was notified");
    for request in &notifications {
        if let Some(form) = leak(&request.body) {
            panic!("the password ({form}) is in a notification body");
        }
    }
    drop(serving);
}

#[test]
fn serving_off_loopback_without_public_url_warns_at_start() {
    let port = free_port();
    let ws = Workspace::new(&sandbox_config(&format!(
        "\n[server]\nlisten = \"0.0.0.0:{port}\"\n"
    )));
    let log = ws.path("serve.log");
    let mut child = ws
        .command(&["serve"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("airlock: serving")
            || started.elapsed() > std::time::Duration::from_secs(20)
        {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    child.kill().ok();
    child.wait().ok();
    assert!(
        text.contains("airlock: serving"),
        "serve did not start: {text}"
    );
    assert!(
        text.contains("public_url") && text.contains("non-loopback"),
        "no warning: {text}"
    );
}
