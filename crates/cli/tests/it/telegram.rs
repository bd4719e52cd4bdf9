//! A Telegram channel through the real `airlock` binary, against the fake Bot API
//! (`airlock_testkit::fake::telegram`): the config, `doctor --online`, a post from draft
//! to `posted`, and a lost answer that waits for a person. Every command runs with
//! `AIRLOCK_LOG=trace`, and the bot token, which the Bot API takes in the URL path, is
//! then searched for in everything airlock wrote.

use std::os::unix::fs::PermissionsExt;

use airlock_testkit::CANARY;
use airlock_testkit::fake::telegram::{
    BOT_USERNAME, CHAT_ID, CHAT_USERNAME, CreateMode, Expect, TelegramFake, token,
};

use crate::support::*;

fn workspace(fake: &TelegramFake) -> Workspace {
    let ws = Workspace::new(&format!(
        r#"timezone = "Asia/Tokyo"
database = "sqlite://airlock.db"

[dispatcher]
stale_after = "1m"

[channels.tg-main]
kind = "telegram"
token_file = "credentials/telegram.token"
account = "{BOT_USERNAME}"
chat_id = {CHAT_ID}
base_url = "{}"
request_timeout = "1s"
daily_limit = 10
"#,
        fake.uri()
    ));
    std::fs::create_dir(ws.path("credentials")).unwrap();
    let file = ws.path("credentials/telegram.token");
    std::fs::write(&file, format!("{}\n", token())).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    ws
}

/// Runs with every log line on, and insists the token shows nowhere in what it printed.
fn traced(ws: &Workspace, args: &[&str]) -> Run {
    let run = finish(
        ws.command(args)
            .env("AIRLOCK_LOG", "trace")
            .output()
            .unwrap(),
    );
    for text in [&run.stdout, &run.stderr] {
        assert!(
            !text.contains(CANARY),
            "the token leaked from airlock {args:?}: {text}"
        );
    }
    run
}

fn approved(ws: &Workspace, text: &str) -> String {
    let run = traced(ws, &["post", "add", "--channel", "tg-main", "--text", text]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let id = run.stdout.trim().to_owned();
    assert_eq!(traced(ws, &["post", "approve", &id]).code, 0);
    id
}

#[tokio::test]
async fn a_telegram_post_goes_out_once_with_its_permalink_and_the_token_stays_hidden() {
    let fake = TelegramFake::start(Expect { get_me: 2, send: 1 }).await;
    let ws = workspace(&fake);
    let doctor = traced(&ws, &["doctor", "--online"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
    assert!(
        doctor.stdout.contains(&format!(
            "channel tg-main: token belongs to \"{BOT_USERNAME}\""
        )),
        "{}",
        doctor.stdout
    );
    let id = approved(&ws, "Mochi naps in the sun.");
    let dispatch = traced(&ws, &["dispatch", "--once"]);
    assert_eq!(dispatch.code, 0, "{}{}", dispatch.stdout, dispatch.stderr);
    let post = traced(&ws, &["post", "show", &id, "--json"]).json();
    assert_eq!(post["status"], "posted", "{post}");
    assert_eq!(
        post["permalink"],
        format!("https://t.me/{CHAT_USERNAME}/1"),
        "{post}"
    );
    assert_eq!(fake.with(|s| s.posts()), 1);
    let ledger = std::fs::read(ws.db()).unwrap();
    assert!(
        !ledger.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()),
        "the token is in the ledger"
    );
}

#[tokio::test]
async fn a_lost_telegram_answer_waits_for_a_person_and_is_not_sent_again() {
    let fake = TelegramFake::start_with(Expect { get_me: 1, send: 1 }, |s| {
        s.create_mode = CreateMode::CreateThenDelay(std::time::Duration::from_secs(3))
    })
    .await;
    let ws = workspace(&fake);
    let id = approved(&ws, "Mochi naps in the shade.");
    let dispatch = traced(&ws, &["dispatch", "--once"]);
    assert_eq!(dispatch.code, 1, "{}{}", dispatch.stdout, dispatch.stderr);
    let post = traced(&ws, &["post", "show", &id, "--json"]).json();
    assert_eq!(post["status"], "needs_review", "{post}");
    // The channel is paused and nothing goes again on its own.
    assert_eq!(traced(&ws, &["dispatch", "--once"]).code, 0);
    assert_eq!(fake.with(|s| s.posts()), 1);
}

#[test]
fn a_telegram_chat_id_is_checked_when_the_config_is_read() {
    let ws = Workspace::new(
        "[channels.tg]\nkind = \"telegram\"\ntoken_file = \"t\"\naccount = \"bot\"\nchat_id = \"inn_cats\"\ndaily_limit = 1\n",
    );
    let run = ws.run(&["channels"]);
    assert_refused(&run, "chat_id \"inn_cats\" is neither a numeric chat id");
    let ws = Workspace::new(
        "[channels.tg]\nkind = \"telegram\"\ntoken_file = \"t\"\naccount = \"bot\"\nchat_id = -100\ndaily_limit = 1\nvisibility = \"public\"\n",
    );
    assert_refused(
        &ws.run(&["channels"]),
        "channels.tg.visibility does not apply to a telegram channel",
    );
}
