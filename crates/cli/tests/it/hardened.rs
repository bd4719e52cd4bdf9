//! Hardened PostgreSQL through the binary (docs/deploy.md#hardened-postgresql): a login
//! role holding only the runtime role cannot bend the ledger's history or limits, and a
//! role that may only log in cannot freeze airlock with a lock.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use sqlx::Connection;

use crate::support::Workspace;

/// Roles that exist for one test, dropped at its end (after the database that uses them).
pub struct TestRoles(pub Vec<String>);

impl Drop for TestRoles {
    fn drop(&mut self) {
        for role in &self.0 {
            if let Err(e) =
                airlock_testkit::pg::admin_sql(&[&format!("DROP ROLE IF EXISTS {role}")])
            {
                eprintln!("could not drop test role {role}: {e}");
            }
        }
    }
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Runs statements on a database as a user, stopping at the first error.
pub fn sql_as(url: &str, statements: &[&str]) -> Result<(), String> {
    block_on(async {
        let mut conn = sqlx::PgConnection::connect(url)
            .await
            .map_err(|e| e.to_string())?;
        for statement in statements {
            sqlx::query(sqlx::AssertSqlSafe(statement.to_string()))
                .execute(&mut conn)
                .await
                .map_err(|e| format!("{statement}: {e}"))?;
        }
        conn.close().await.ok();
        Ok(())
    })
}

/// One query's first row as JSON (`SELECT to_jsonb(r) FROM (...) r`), as a user.
pub fn row_as(url: &str, query: &str) -> Result<serde_json::Value, String> {
    block_on(async {
        let mut conn = sqlx::PgConnection::connect(url)
            .await
            .map_err(|e| e.to_string())?;
        let row: serde_json::Value = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT to_jsonb(r) FROM ({query}) r"
        )))
        .fetch_one(&mut conn)
        .await
        .map_err(|e| format!("{query}: {e}"))?;
        conn.close().await.ok();
        Ok(row)
    })
}

/// A database owned by a role of its own, migrated by it, and a login role holding only
/// the runtime role that airlock runs as (the steps of docs/deploy.md).
pub struct Hardened {
    /// The app's workspace (runs as the runtime login).
    pub app: Workspace,
    /// The owner's workspace.
    pub owner: Workspace,
    /// The runtime login's URL.
    pub app_url: String,
    /// A superuser's URL of the same database.
    pub superuser: String,
    suffix: String,
    // Dropped after the database.
    _roles: TestRoles,
    db: airlock_testkit::pg::TestDb,
}

impl Hardened {
    /// Sets it up with `channels` (TOML after the database and `[postgres]` sections).
    pub fn new(channels: &str) -> Hardened {
        let suffix = format!(
            "{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        );
        let (owner, app, runtime) = (
            format!("airlock_owner_{suffix}"),
            format!("airlock_app_{suffix}"),
            format!("airlock_rt_{suffix}"),
        );
        let roles = TestRoles(vec![app.clone(), runtime.clone(), owner.clone()]);
        // Passwords, so that the test also works against a server without trust auth.
        // The owner may create roles: `migrate` creates the runtime role when missing.
        airlock_testkit::pg::admin_sql(&[
            &format!("CREATE ROLE {owner} LOGIN CREATEROLE PASSWORD 'pw-{owner}'"),
            &format!("CREATE ROLE {app} LOGIN PASSWORD 'pw-{app}'"),
        ])
        .unwrap();
        let db = airlock_testkit::pg::TestDb::create();
        airlock_testkit::pg::admin_sql(&[&format!(
            "ALTER DATABASE {} OWNER TO {owner}",
            db.name()
        )])
        .unwrap();
        let superuser =
            airlock_testkit::pg::with_database(&airlock_testkit::pg::server_url(), db.name());
        sql_as(
            &superuser,
            &[
                "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
                &format!("ALTER SCHEMA public OWNER TO {owner}"),
            ],
        )
        .unwrap();
        let hardened = |user: &str| Hardened::url_of(&superuser, user);
        let config = |user: &str| {
            format!(
                "database = \"{}\"\n\n[postgres]\nruntime_role = \"{runtime}\"\n\n{channels}",
                hardened(user)
            )
        };
        let (app_ws, owner_ws) = (
            Workspace::new(&config(&app)),
            Workspace::new(&config(&owner)),
        );
        Hardened {
            app_url: hardened(&app),
            app: app_ws,
            owner: owner_ws,
            superuser: superuser.clone(),
            suffix,
            _roles: roles,
            db,
        }
    }

    fn url_of(superuser: &str, user: &str) -> String {
        let mut url = url::Url::parse(superuser).unwrap();
        url.set_username(user).unwrap();
        url.set_password(Some(&format!("pw-{user}"))).unwrap();
        url.to_string()
    }

    /// The owner migrates, and the DBA grants the runtime role to the app's login.
    pub fn migrate(&self) {
        self.owner.ok(&["migrate"]);
        airlock_testkit::pg::admin_sql(&[&format!(
            "GRANT airlock_rt_{} TO airlock_app_{}",
            self.suffix, self.suffix
        )])
        .unwrap();
    }

    /// A login role for this database with no grants on airlock's objects.
    pub fn stranger(&mut self) -> String {
        let name = format!("airlock_stranger_{}", self.suffix);
        airlock_testkit::pg::admin_sql(&[&format!(
            "CREATE ROLE {name} LOGIN PASSWORD 'pw-{name}'"
        )])
        .unwrap();
        self._roles.0.insert(0, name.clone());
        Hardened::url_of(&self.superuser, &name)
    }

    /// The database's name.
    pub fn database(&self) -> &str {
        self.db.name()
    }
}

const CHANNELS: &str = "[quota]\nwindow = \"60m\"\nwindow_limit = 10\n\n[channels.sandbox]\nkind = \"sandbox\"\ndaily_limit = 1\n\n[channels.spare]\nkind = \"sandbox\"\ndaily_limit = 1\n";

/// What a statement run as `url` was refused with: the message and its detail.
fn refused(url: &str, statement: &str) -> String {
    block_on(async {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        let e = sqlx::query(sqlx::AssertSqlSafe(statement.to_owned()))
            .execute(&mut conn)
            .await
            .expect_err(statement);
        let detail = e
            .as_database_error()
            .and_then(|d| d.try_downcast_ref::<sqlx::postgres::PgDatabaseError>())
            .and_then(|d| d.detail())
            .unwrap_or_default()
            .to_owned();
        format!("{e} {detail}")
    })
}

fn draft(ws: &Workspace, text: &str) -> String {
    ws.ok(&[
        "post",
        "add",
        "--channel",
        "sandbox",
        "--text",
        text,
        "--json",
    ])
    .json()["id"]
        .to_string()
}

fn events(ws: &Workspace, id: &str) -> Vec<serde_json::Value> {
    ws.ok(&["post", "show", id, "--json"]).json()["events"]
        .as_array()
        .unwrap()
        .clone()
}

fn changed_notes(ws: &Workspace, id: &str) -> Vec<String> {
    events(ws, id)
        .iter()
        .filter(|e| e["kind"] == "changed")
        .map(|e| e["note"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Day starts in UTC, the channel's zone: what an honest caller sends.
const UTC_DAYS: &str = "ARRAY(SELECT (date_trunc('day', now() AT TIME ZONE 'UTC') \
     + i * interval '1 day') AT TIME ZONE 'UTC' FROM generate_series(-1, 7) i)";

#[test]
fn a_runtime_login_cannot_widen_limits_forge_approvals_or_rewrite_history() {
    let h = Hardened::new(CHANNELS);
    h.migrate();
    let ws = &h.app;
    let first = draft(ws, "The first post of the day.");
    ws.ok(&["post", "approve", &first]);
    ws.ok(&["post", "publish", &first]);
    let second = draft(ws, "A second post, over the daily limit.");
    ws.ok(&["post", "approve", &second]);
    let version = ws.ok(&["post", "show", &second, "--json"]).json()["version"].to_string();

    // The limits are the ledger's: asking for a thousand a day, or for none, is decided
    // against the owner's one.
    for (limits, days) in [
        ("3600000000, 1000, 1000", UTC_DAYS),
        ("NULL, NULL, NULL", UTC_DAYS),
    ] {
        let claim = row_as(
            &h.app_url,
            &format!(
                "SELECT outcome, denial_limit, denial_max FROM airlock_claim_post({second}, \
                 {version}, false, 'w', 'dispatcher', now(), now() + interval '10 minutes', \
                 'claimed', {limits}, {days}, NULL, NULL, NULL, NULL, NULL, NULL)"
            ),
        )
        .unwrap();
        assert_eq!(claim["outcome"], "over_quota", "{limits}: {claim}");
        assert_eq!(claim["denial_limit"], "daily", "{claim}");
        assert_eq!(claim["denial_max"], 1, "{claim}");
    }
    // Days that start at noon are not the channel's days.
    let noon = UTC_DAYS.replace(
        "i * interval '1 day'",
        "i * interval '1 day' + interval '12 hours'",
    );
    let moved = refused(
        &h.app_url,
        &format!(
            "SELECT * FROM airlock_claim_post({second}, {version}, false, 'w', 'dispatcher', \
             now(), now() + interval '10 minutes', 'claimed', 3600000000, 1000, 1000, {noon}, \
             NULL, NULL, NULL, NULL, NULL, NULL)"
        ),
    );
    assert!(moved.contains("not where a day starts"), "{moved}");
    // A lease into next year is refused.
    let lease = refused(
        &h.app_url,
        &format!(
            "SELECT * FROM airlock_claim_post({second}, {version}, false, 'w', 'dispatcher', \
             now(), now() + interval '400 days', 'claimed', NULL, NULL, NULL, {UTC_DAYS}, \
             NULL, NULL, NULL, NULL, NULL, NULL)"
        ),
    );
    assert!(lease.contains("the lease must be between"), "{lease}");

    // A claim made honestly cannot be stretched: its one part is the last, so no
    // "part out" keeps the claim going without counting; a slot whose request may have
    // left is not given back; and the store's own events cannot be added by hand.
    let spare = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "spare",
            "--text",
            "One part only.",
            "--json",
        ])
        .json()["id"]
        .to_string();
    ws.ok(&["post", "approve", &spare]);
    let version = ws.ok(&["post", "show", &spare, "--json"]).json()["version"].to_string();
    let claim = row_as(
        &h.app_url,
        &format!(
            "SELECT outcome, (post).generation AS generation FROM airlock_claim_post({spare}, \
             {version}, false, 'w', 'dispatcher', now(), now() + interval '10 minutes', \
             'claimed', NULL, NULL, NULL, {UTC_DAYS}, NULL, NULL, NULL, NULL, NULL, NULL)"
        ),
    )
    .unwrap();
    assert_eq!(claim["outcome"], "claimed", "{claim}");
    let generation = &claim["generation"];
    sql_as(
        &h.app_url,
        &[&format!(
            "SELECT airlock_record_intent({spare}, {generation}, 'k-1', 1, NULL, now(), 0)"
        )],
    )
    .unwrap();
    let part = refused(
        &h.app_url,
        &format!(
            "SELECT * FROM airlock_change_part_published({spare}, 'w', now(), '[]', \
             {generation}, 1, 'p-1', NULL, NULL, now() + interval '10 minutes', 'out')"
        ),
    );
    assert!(part.contains("the part must be between 1 and 0"), "{part}");
    let refund = refused(
        &h.app_url,
        &format!(
            "SELECT * FROM airlock_change_held({spare}, 'w', now(), '[]', {generation}, \
             'held', NULL)"
        ),
    );
    assert!(refund.contains("is not given back"), "{refund}");
    let fake = refused(
        &h.app_url,
        &format!(
            "SELECT airlock_add_event({spare}, 'status', 'approved by the chief', 'chief', \
             now(), '[]')"
        ),
    );
    assert!(fake.contains("the store's own record"), "{fake}");
    // An attempt the worker ended as not sent cannot take a later send's count back
    // into its own day.
    sql_as(
        &h.app_url,
        &[&format!(
            "SELECT * FROM airlock_change_not_sent({spare}, 'w', now(), '[]', {generation}, \
             'r', 'not sent', NULL, false, false, true)"
        )],
    )
    .unwrap();
    let version = ws.ok(&["post", "show", &spare, "--json"]).json()["version"].to_string();
    let again = row_as(
        &h.app_url,
        &format!(
            "SELECT outcome, (post).generation AS generation FROM airlock_claim_post({spare}, \
             {version}, false, 'w', 'dispatcher', now(), now() + interval '10 minutes', \
             'claimed', NULL, NULL, NULL, {UTC_DAYS}, NULL, NULL, NULL, 'k-2', 1, 0)"
        ),
    )
    .unwrap();
    assert_eq!(again["outcome"], "claimed", "{again}");
    let moved = refused(
        &h.app_url,
        &format!(
            "SELECT * FROM airlock_change_published({spare}, 'w', now(), '[]', {}, 1, now(), \
             'p-2', NULL, {generation}, 'out', NULL, NULL)",
            again["generation"]
        ),
    );
    assert!(
        moved.contains("no earlier attempt whose request may have left"),
        "{moved}"
    );

    // A negative maximum does not end every dashboard session.
    let sessions = refused(
        &h.app_url,
        "SELECT airlock_open_session(repeat('a', 64), repeat('b', 64), now(), \
         now() + interval '1 hour', -1)",
    );
    assert!(sessions.contains("the most sessions"), "{sessions}");

    // An approval names only critics whose passes stand.
    let third = draft(ws, "A draft nobody passed.");
    let post = ws.ok(&["post", "show", &third, "--json"]).json();
    let forged = refused(
        &h.app_url,
        &format!(
            "SELECT * FROM airlock_change_verdict({third}, 'token:critic', now(), '[]', {}, \
             jsonb_build_object('verdict', 'pass', 'content_hash', '{}', 'reasons', '[]'::jsonb, \
               'rubric_hash', 'r', 'actor', 'token:critic'), 'approve', \
             'token:critic, token:ghost', 'approved', NULL, false, false, NULL)",
            post["version"],
            post["content_hash"].as_str().unwrap()
        ),
    );
    assert!(forged.contains("only critics whose passes"), "{forged}");

    // What was sent and counted cannot be rewritten, even by the owner's hand.
    for statement in [
        format!(
            "UPDATE intents SET phase = 'not_sent', created_at = '2020-01-01' WHERE post_id = {first}"
        ),
        format!("UPDATE reservations SET state = 'released' WHERE post_id = {first}"),
        format!("DELETE FROM reservations WHERE post_id = {first}"),
        "TRUNCATE intents CASCADE".to_owned(),
    ] {
        let e = refused(&h.superuser, &statement);
        assert!(
            e.contains("permanent") || e.contains("never deleted"),
            "{statement}: {e}"
        );
    }

    // A change of a published post's ids, or of a draft's schedule or review counters,
    // leaves an event naming it, whoever's SQL made it.
    sql_as(
        &h.superuser,
        &[
            &format!(
                "UPDATE posts SET permalink = 'https://evil.example/1', platform_post_id = 'evil' \
                 WHERE id = {first}"
            ),
            &format!(
                "UPDATE posts SET scheduled_at = '2030-01-01T00:00:00Z', revisions = 2 \
                 WHERE id = {third}"
            ),
        ],
    )
    .unwrap();
    let notes = changed_notes(ws, &first).join("\n");
    assert!(
        notes.contains("by a hand-written SQL statement")
            && notes.contains("platform_post_id: ")
            && notes.contains("-> evil")
            && notes.contains("permalink: "),
        "{notes}"
    );
    let notes = changed_notes(ws, &third).join("\n");
    assert!(
        notes.contains("scheduled_at: ")
            && notes.contains("-> 2030-01-01T00:00:00.000Z")
            && notes.contains("revisions: 0 -> 2"),
        "{notes}"
    );

    // The owner's configuration is what the ledger holds; a runtime login with another
    // one is told, and the stricter decides.
    let doctor = ws.ok(&["doctor"]);
    assert!(
        doctor
            .stdout
            .contains("the ledger holds the configuration's limits"),
        "{}",
        doctor.stdout
    );
    std::fs::write(
        ws.config(),
        std::fs::read_to_string(ws.config())
            .unwrap()
            .replace("daily_limit = 1", "daily_limit = 50"),
    )
    .unwrap();
    let doctor = ws.run(&["doctor"]);
    assert!(
        doctor
            .stdout
            .contains("channel sandbox: the ledger holds daily_limit 1"),
        "{}",
        doctor.stdout
    );
    let run = ws.run(&["post", "publish", &second]);
    assert_ne!(
        run.code, 0,
        "published over the owner's daily limit: {}",
        run.stdout
    );
}

/// Holds airlock's former fixed advisory lock keys (and the event feed's) as a role that
/// may only log in, until the returned sender is dropped.
fn hold_locks(url: String) -> mpsc::Sender<()> {
    let (stop, stopped) = mpsc::channel::<()>();
    let (held, is_held) = mpsc::channel();
    std::thread::spawn(move || {
        block_on(async move {
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            for key in 1_095_912_449..=1_095_912_456 {
                sqlx::query("SELECT pg_advisory_lock($1, 0)")
                    .bind(key)
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
            held.send(()).unwrap();
            let _ = stopped.recv();
            conn.close().await.ok();
        })
    });
    is_held.recv().unwrap();
    stop
}

#[test]
fn a_strangers_locks_cannot_freeze_the_emergency_stop_or_hang_a_dispatch() {
    let mut h = Hardened::new(CHANNELS);
    h.migrate();
    let stranger = h.stranger();
    let ws = &h.app;
    let id = draft(ws, "Waiting while a stranger holds locks.");
    ws.ok(&["post", "approve", &id]);

    let stop = hold_locks(stranger);
    let started = Instant::now();
    ws.ok(&["pause", "--all", "--reason", "emergency"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "pause --all took {:?}",
        started.elapsed()
    );
    ws.ok(&["resume", "--all"]);
    let started = Instant::now();
    let run = ws.run(&["dispatch", "--once"]);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "dispatch took {:?}",
        started.elapsed()
    );
    assert_ne!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("gave up after waiting lock_timeout")
            && run.stderr.contains("airlock doctor"),
        "{}",
        run.stderr
    );
    let doctor = ws.run(&["doctor"]);
    assert!(
        doctor
            .stdout
            .contains("holds one of airlock's advisory locks longer than")
            && doctor.stdout.contains("PUBLIC may CONNECT"),
        "{}",
        doctor.stdout
    );
    drop(stop);
    let _ = h.database();
}
