//! `candidates` and `compose` as real processes against a site served by a local fake:
//! the JSON shapes, one post per slot across concurrent processes, dry runs, refusals.

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::*;

struct Site {
    ws: Workspace,
    _server: MockServer,
    uri: String,
}

async fn site() -> Site {
    let server = MockServer::start().await;
    let uri = server.uri();
    for slug in ["neko", "onsen"] {
        Mock::given(method("HEAD"))
            .and(path(format!("/{slug}/")))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server)
            .await;
    }
    let ws = Workspace::new(&format!(
        r##"timezone = "Asia/Tokyo"
database = "sqlite://airlock.db"

[quota]
window = "60m"
window_limit = 100

[sites.inn]
dir = "site"
base_url = "{uri}"
media_prefix = "{uri}/wp-content/uploads/"

[sites.blog]
dir = "blog"
base_url = "https://blog.example"

[channels.sandbox]
kind = "sandbox"
daily_limit = 100
required = ["猫のペースを尊重してください。"]
site = "inn"
slots = ["08:00", "19:00"]
template = "{{title}}\n{{description}}\n{{tags}}\n{{url}}"
auto_approve = "critic-bot"

[channels.plain]
kind = "sandbox"
daily_limit = 10
"##
    ));
    let article = |slug: &str, title: &str, updated: &str| {
        format!(
            "---\nstatus: publish\nslug: {slug}\ntitle: {title}\ndescription: 山あいの静かな宿です。\nfact_checked: 2026-11-01\nupdated: {updated}\ntags: [猫, 温泉]\n---\n本文\n"
        )
    };
    std::fs::create_dir_all(ws.path("site/2026")).unwrap();
    std::fs::write(
        ws.path("site/2026/neko.md"),
        article("neko", "猫の宿へようこそ", "2026-11-20"),
    )
    .unwrap();
    std::fs::write(
        ws.path("site/onsen.md"),
        article("onsen", "温泉のご案内", "2026-11-01"),
    )
    .unwrap();
    std::fs::write(
        ws.path("site/draft.md"),
        article("draft", "下書き", "2026-11-25").replace("status: publish", "status: draft"),
    )
    .unwrap();
    Site {
        ws,
        _server: server,
        uri,
    }
}

async fn run(ws: &Workspace, args: &[&str]) -> Run {
    let mut command = tokio::process::Command::from(ws.command(args));
    finish(command.output().await.unwrap())
}

async fn ok(ws: &Workspace, args: &[&str]) -> Run {
    let run = run(ws, args).await;
    assert_eq!(
        run.code, 0,
        "airlock {args:?} failed: {}{}",
        run.stdout, run.stderr
    );
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidates_prints_eligible_articles_in_order_and_skipped_ones_with_reasons() {
    let site = site().await;
    let found = ok(
        &site.ws,
        &[
            "candidates",
            "--site",
            "inn",
            "--channel",
            "sandbox",
            "--json",
        ],
    )
    .await
    .json();
    assert_eq!(
        found,
        serde_json::json!({
            "eligible": [
                {"slug": "neko", "path": "2026/neko.md", "url": format!("{}/neko/", site.uri), "title": "猫の宿へようこそ", "image": null},
                {"slug": "onsen", "path": "onsen.md", "url": format!("{}/onsen/", site.uri), "title": "温泉のご案内", "image": null},
            ],
            "skipped": [
                {"path": "draft.md", "reason": "`status` is \"draft\": only articles with `status: publish` are posted"},
            ],
        })
    );
    let text = ok(
        &site.ws,
        &["candidates", "--site", "inn", "--channel", "sandbox"],
    )
    .await;
    assert!(text.stdout.contains("2026/neko.md"), "{}", text.stdout);
    assert!(
        text.stdout.contains("draft.md: `status` is \"draft\""),
        "{}",
        text.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_fills_a_slot_once_and_prints_null_the_second_time() {
    let site = site().await;
    let args = [
        "compose",
        "--site",
        "inn",
        "--channel",
        "sandbox",
        "--slot",
        "08:00",
        "--json",
    ];
    let post = ok(&site.ws, &args).await.json();
    assert_eq!(post["status"], "approved");
    assert_eq!(post["approved_by"], "critic-bot");
    assert_eq!(post["created_by"], "scheduler");
    assert!(
        post["slot"].as_str().unwrap().ends_with("T08:00+09:00"),
        "{post}"
    );
    assert_eq!(post["source"]["path"], "2026/neko.md");
    assert_eq!(post["source"]["updated"], "2026-11-20");
    assert_eq!(
        post["text"],
        format!(
            "猫の宿へようこそ\n山あいの静かな宿です。\n#猫 #温泉\n{}/neko/\n猫のペースを尊重してください。",
            site.uri
        )
    );
    let again = ok(&site.ws, &args).await;
    assert_eq!(again.json(), serde_json::Value::Null);
    assert!(again.stderr.contains("already filled"), "{}", again.stderr);
    // Another slot of the day takes the next article.
    let evening = ok(
        &site.ws,
        &[
            "compose",
            "--site",
            "inn",
            "--channel",
            "sandbox",
            "--slot",
            "19:00",
            "--json",
        ],
    )
    .await
    .json();
    assert_eq!(evening["source"]["path"], "onsen.md");
    // Nothing is left: null, exit 0, and the reasons on request.
    let none = ok(
        &site.ws,
        &["compose", "--site", "inn", "--channel", "sandbox", "--json"],
    )
    .await;
    assert_eq!(none.json(), serde_json::Value::Null);
    let text = ok(
        &site.ws,
        &["compose", "--site", "inn", "--channel", "sandbox"],
    )
    .await;
    assert!(text.stdout.contains("nothing drafted"), "{}", text.stdout);
    assert!(text.stdout.contains("reuse_after"), "{}", text.stdout);
    let posts = ok(&site.ws, &["post", "list", "--json"]).await.json();
    assert_eq!(posts.as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_filling_one_slot_draft_one_post() {
    let site = site().await;
    // Create the store first so both processes race on drafting, not on migrations.
    ok(&site.ws, &["migrate"]).await;
    let args = [
        "compose",
        "--site",
        "inn",
        "--channel",
        "sandbox",
        "--slot",
        "19:00",
        "--json",
    ];
    let (first, second) = tokio::join!(run(&site.ws, &args), run(&site.ws, &args));
    for run in [&first, &second] {
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    }
    let printed: Vec<serde_json::Value> = [first.json(), second.json()]
        .into_iter()
        .filter(|v| !v.is_null())
        .collect();
    assert_eq!(printed.len(), 1, "exactly one process drafted: {printed:?}");
    let posts = ok(&site.ws, &["post", "list", "--json"]).await.json();
    let posts = posts.as_array().unwrap();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0]["id"], printed[0]["id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_shows_the_post_and_writes_nothing() {
    let site = site().await;
    let plan = ok(
        &site.ws,
        &[
            "compose",
            "--site",
            "inn",
            "--channel",
            "sandbox",
            "--slot",
            "08:00",
            "--dry-run",
            "--json",
        ],
    )
    .await
    .json();
    assert_eq!(plan["dry_run"], true);
    assert_eq!(plan["source"]["path"], "2026/neko.md");
    assert_eq!(plan["auto_approve"], "critic-bot");
    assert!(plan["slot"].as_str().unwrap().ends_with("T08:00+09:00"));
    let posts = ok(&site.ws, &["post", "list", "--json"]).await.json();
    assert!(posts.as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_one_line() {
    let site = site().await;
    let ws = &site.ws;
    assert_refused(
        &run(
            ws,
            &["candidates", "--site", "shop", "--channel", "sandbox"],
        )
        .await,
        "unknown site \"shop\"",
    );
    assert_refused(
        &run(ws, &["compose", "--site", "inn", "--channel", "nope"]).await,
        "unknown channel \"nope\"",
    );
    assert_refused(
        &run(ws, &["compose", "--site", "inn", "--channel", "plain"]).await,
        "draws from no site",
    );
    assert_refused(
        &run(
            ws,
            &["candidates", "--site", "blog", "--channel", "sandbox"],
        )
        .await,
        "draws from site \"inn\", not \"blog\"",
    );
    for bad in ["8:00", "25:00", "noon"] {
        assert_refused(
            &run(
                ws,
                &[
                    "compose",
                    "--site",
                    "inn",
                    "--channel",
                    "sandbox",
                    "--slot",
                    bad,
                ],
            )
            .await,
            "--slot",
        );
    }
    let posts = ok(ws, &["post", "list", "--json"]).await.json();
    assert!(posts.as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_template_or_slot_in_the_config_is_refused_by_key() {
    let site = site().await;
    let config = std::fs::read_to_string(site.ws.config()).unwrap();
    std::fs::write(site.ws.config(), config.replace("{url}\"", "{link}\"")).unwrap();
    assert_refused(
        &run(
            &site.ws,
            &["candidates", "--site", "inn", "--channel", "sandbox"],
        )
        .await,
        "channels.sandbox.template",
    );
    std::fs::write(site.ws.config(), config.replace("\"19:00\"", "\"7pm\"")).unwrap();
    assert_refused(
        &run(
            &site.ws,
            &["compose", "--site", "inn", "--channel", "sandbox"],
        )
        .await,
        "channels.sandbox.slots",
    );
}
