//! `dispatch --once` as real processes: cron overlaps, a dispatcher killed mid-request,
//! quotas shared by concurrent processes.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::support::*;

fn approve_many(ws: &Workspace, channel: &str, n: usize) -> Vec<i64> {
    (0..n)
        .map(|i| {
            let id: i64 = ws
                .ok(&[
                    "post",
                    "add",
                    "--channel",
                    channel,
                    "--text",
                    &format!("post {i} #cats"),
                ])
                .stdout
                .trim()
                .parse()
                .unwrap();
            ws.ok(&["post", "approve", &id.to_string()]);
            id
        })
        .collect()
}

#[test]
fn dispatch_once_publishes_what_is_due_and_reports_json() {
    let ws = Workspace::new(&sandbox_config(""));
    let ids = approve_many(&ws, "sandbox", 3);
    let later = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "later #cats",
            "--at",
            "2099-01-01T00:00:00+09:00",
        ])
        .stdout;
    ws.ok(&["post", "approve", later.trim()]);
    let report = ws.ok(&["dispatch", "--once", "--json"]).json();
    let published = report["published"].as_array().unwrap();
    assert_eq!(published.len(), 3);
    assert!(published.iter().all(|p| p["status"] == "posted"));
    for id in &ids {
        assert_eq!(count_lines_for(&ws.path("sandbox/sandbox.jsonl"), *id), 1);
    }
    let again = ws.ok(&["dispatch", "--once"]);
    assert!(again.stdout.contains("nothing due"), "{}", again.stdout);
    assert_refused(&ws.run(&["dispatch"]), "--once");
}

#[test]
fn dispatch_once_exits_1_when_a_publish_needs_review() {
    let ws = Workspace::new(&sandbox_config(
        "[channels.drill]\nkind = \"sandbox\"\nsimulate = \"unknown\"\ndaily_limit = 5\n",
    ));
    let id = ws
        .ok(&["post", "add", "--channel", "drill", "--text", "drill"])
        .stdout;
    ws.ok(&["post", "approve", id.trim()]);
    let run = ws.run(&["dispatch", "--once"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("needs_review"), "{}", run.stderr);
    let channels = ws.ok(&["channels", "--json"]).json();
    let drill = channels
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "drill")
        .unwrap();
    assert_eq!(drill["paused"], true);
    let publish = ws.run(&["post", "publish", id.trim()]);
    assert_refused(&publish, "settle it first");
}

#[test]
fn overlapping_dispatch_processes_publish_each_post_exactly_once() {
    let ws = Workspace::new(&sandbox_config(
        "[channels.second]\nkind = \"sandbox\"\ndaily_limit = 100\n",
    ));
    let mut ids = approve_many(&ws, "sandbox", 20);
    ids.extend(approve_many(&ws, "second", 20));
    let children: Vec<_> = (0..5)
        .map(|_| {
            ws.command(&["dispatch", "--once"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    for (n, id) in ids.iter().enumerate() {
        let file = if n < 20 {
            "sandbox/sandbox.jsonl"
        } else {
            "sandbox/second.jsonl"
        };
        assert_eq!(count_lines_for(&ws.path(file), *id), 1, "post {id}");
    }
    let posts = ws
        .ok(&["post", "list", "--status", "posted", "--json"])
        .json();
    assert_eq!(posts.as_array().unwrap().len(), 40);
}

#[test]
fn concurrent_dispatch_processes_never_exceed_the_quota() {
    let ws = Workspace::new(&sandbox_config("").replace("window_limit = 100", "window_limit = 4"));
    approve_many(&ws, "sandbox", 12);
    let children: Vec<_> = (0..5)
        .map(|_| {
            ws.command(&["dispatch", "--once"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        child.wait().unwrap();
    }
    let posted = ws
        .ok(&["post", "list", "--status", "posted", "--json"])
        .json();
    assert_eq!(posted.as_array().unwrap().len(), 4);
    let quota = ws.ok(&["quota", "--json"]).json();
    assert_eq!(quota["window"]["used"], 4);
    assert_eq!(quota["window"]["remaining"], 0);
    assert!(quota["window"]["next_free_at"].is_string());
    let approved = ws
        .ok(&["post", "list", "--status", "approved", "--json"])
        .json();
    assert_eq!(approved.as_array().unwrap().len(), 8);
}

#[test]
fn a_dispatcher_killed_mid_request_leaves_the_post_for_a_person() {
    let (url, requests) = silent_server();
    let ws = Workspace::new(&format!(
        r#"timezone = "UTC"
[dispatcher]
stale_after = "3s"
[channels.hook]
kind = "webhook"
url = "{url}"
request_timeout = "2s"
daily_limit = 10
"#
    ));
    let id = ws
        .ok(&["post", "add", "--channel", "hook", "--text", "once only"])
        .stdout;
    let id = id.trim();
    ws.ok(&["post", "approve", id]);
    let mut child = ws
        .command(&["dispatch", "--once"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while requests.load(Ordering::SeqCst) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the request never arrived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: no cleanup, no outcome write.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        ws.ok(&["post", "show", id, "--json"]).json()["status"],
        "posting"
    );
    std::thread::sleep(Duration::from_millis(3200));
    let run = ws.run(&["dispatch", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.json()["reaped"][0]["status"], "needs_review");
    let post = ws.ok(&["post", "show", id, "--json"]).json();
    assert_eq!(post["status"], "needs_review");
    assert_eq!(post["reservations"][0]["state"], "reserved");
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "the request was received exactly once"
    );
    // Later passes never send it again.
    ws.ok(&["dispatch", "--once"]);
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    // A person settles it.
    let resolved = ws
        .ok(&[
            "post",
            "resolve",
            id,
            "--published",
            "--permalink",
            "https://hooks.example/p/1",
            "--json",
        ])
        .json();
    assert_eq!(resolved["status"], "posted");
    assert_eq!(resolved["permalink"], "https://hooks.example/p/1");
}

/// Settling a post whose unknown outcome paused its channel says what is left (the
/// pause, and the command that lifts it), and `--resume` lifts it in the same step.
#[test]
fn resolve_names_the_pause_left_and_resume_lifts_it_in_the_same_step() {
    let ws = Workspace::new(&sandbox_config(
        "[channels.drill]\nkind = \"sandbox\"\nsimulate = \"unknown\"\ndaily_limit = 5\n",
    ));
    let paused = |ws: &Workspace| {
        ws.ok(&["channels", "--json"])
            .json()
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "drill")
            .unwrap()["paused"]
            .clone()
    };
    for resume in [false, true] {
        let id = ws
            .ok(&[
                "post",
                "add",
                "--channel",
                "drill",
                "--text",
                &format!("drill {resume}"),
            ])
            .stdout;
        ws.ok(&["post", "approve", id.trim()]);
        assert_eq!(ws.run(&["dispatch", "--once"]).code, 1);
        assert_eq!(paused(&ws), true);
        let mut args = vec!["post", "resolve", id.trim(), "--not-published"];
        if resume {
            args.push("--resume");
        }
        let run = ws.ok(&args);
        if resume {
            assert_eq!(paused(&ws), false, "{}", run.stderr);
            assert!(!run.stderr.contains("still paused"), "{}", run.stderr);
        } else {
            assert_eq!(paused(&ws), true);
            assert!(
                run.stderr.contains("drill is still paused")
                    && run.stderr.contains("airlock resume drill"),
                "{}",
                run.stderr
            );
            ws.ok(&["resume", "drill"]);
        }
    }
}
