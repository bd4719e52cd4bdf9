//! A fresh PostgreSQL database per test: `CREATE DATABASE airlock_test_<random>` on the
//! server named by `AIRLOCK_TEST_PG` (default `postgres://postgres@127.0.0.1:5432`),
//! dropped with its connections when the handle goes, also when the test panicked.
//!
//! Creating and dropping run on a thread with a runtime of their own, so a [`TestDb`] can
//! be made and dropped from synchronous tests and from inside any async runtime alike.

use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::{Connection, Executor, PgConnection};

const DEFAULT_SERVER: &str = "postgres://postgres@127.0.0.1:5432";

/// The server tests create their databases on.
pub fn server_url() -> String {
    std::env::var("AIRLOCK_TEST_PG").unwrap_or_else(|_| DEFAULT_SERVER.to_owned())
}

/// `url` with its database replaced by `name` (query parameters kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let server = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

/// Runs statements, in order, on the server's `postgres` database.
pub fn admin_sql(statements: &[&str]) -> Result<(), String> {
    let url = with_database(&server_url(), "postgres");
    let statements: Vec<String> = statements.iter().map(|s| (*s).to_owned()).collect();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let mut conn = PgConnection::connect(&url).await.map_err(|e| {
                format!(
                    "PostgreSQL is not reachable at {url} ({e}): run scripts/test.sh, which \
                     starts it, or point AIRLOCK_TEST_PG at a server"
                )
            })?;
            for statement in &statements {
                conn.execute(sqlx::AssertSqlSafe(statement.clone()))
                    .await
                    .map_err(|e| format!("{statement}: {e}"))?;
            }
            conn.close().await.ok();
            Ok(())
        })
    })
    .join()
    .map_err(|_| "the admin connection thread panicked".to_owned())?
}

/// `url` with its user replaced by `user` (any password dropped).
pub fn with_user(url: &str, user: &str) -> String {
    let scheme_end = url.find("://").map(|i| i + 3).unwrap_or(0);
    let rest = &url[scheme_end..];
    let host_start = match (rest.find('@'), rest.find('/')) {
        (Some(at), Some(slash)) if at < slash => at + 1,
        (Some(at), None) => at + 1,
        _ => 0,
    };
    format!("{}{user}@{}", &url[..scheme_end], &rest[host_start..])
}

/// A `LOGIN` role that exists for one test, a member of the roles it was given (such as
/// `airlock_runtime`), dropped when the handle goes. Roles are the server's, not a
/// database's: the name is unique per test like a [`TestDb`]'s.
pub struct TestRole {
    /// Its name.
    pub name: String,
}

impl TestRole {
    /// Creates a role that may log in and holds only `member_of` (created `NOLOGIN` if
    /// missing, as `airlock migrate` would).
    pub fn create(member_of: &str) -> TestRole {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).expect("the OS random source works");
        let name = format!(
            "airlock_test_app_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst),
            hex::encode(bytes)
        );
        let group = format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{member_of}') \
             THEN CREATE ROLE {member_of} NOLOGIN; END IF; \
             EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
        );
        admin_sql(&[
            &group,
            &format!("CREATE ROLE {name} LOGIN"),
            &format!("GRANT {member_of} TO {name}"),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        TestRole { name }
    }

    /// `url` (a database's) as this role.
    pub fn url(&self, url: &str) -> String {
        with_user(url, &self.name)
    }
}

impl Drop for TestRole {
    fn drop(&mut self) {
        let dropped = admin_sql(&[&format!("DROP ROLE IF EXISTS {}", self.name)]);
        if let Err(e) = dropped {
            eprintln!("could not drop test role {}: {e}", self.name);
        }
    }
}

/// A database that exists for one test.
pub struct TestDb {
    name: String,
    /// Its URL.
    pub url: String,
}

impl TestDb {
    /// Creates an empty database with a name no other test (or process) uses.
    pub fn create() -> TestDb {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).expect("the OS random source works");
        let name = format!(
            "airlock_test_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst),
            hex::encode(bytes)
        );
        admin_sql(&[&format!("CREATE DATABASE {name}")]).unwrap_or_else(|e| panic!("{e}"));
        let url = with_database(&server_url(), &name);
        TestDb { name, url }
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A plain connection, for hand-written SQL.
    pub async fn conn(&self) -> PgConnection {
        PgConnection::connect(&self.url)
            .await
            .expect("connect to the test database")
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Never panic here: this may run while a failed test unwinds.
        let dropped = admin_sql(&[&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        )]);
        if let Err(e) = dropped {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{with_database, with_user};

    #[test]
    fn urls_get_their_user_replaced() {
        assert_eq!(
            with_user("postgres://root@127.0.0.1:5432/db", "app"),
            "postgres://app@127.0.0.1:5432/db"
        );
        assert_eq!(
            with_user("postgres://u:pw@h/db", "app"),
            "postgres://app@h/db"
        );
        assert_eq!(
            with_user("postgres://h:5432/db", "app"),
            "postgres://app@h:5432/db"
        );
        assert_eq!(with_user("postgres://h/a@b", "app"), "postgres://app@h/a@b");
    }

    #[test]
    fn urls_get_their_database_replaced() {
        assert_eq!(
            with_database("postgres://u@h:5432/postgres", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            with_database("postgres://u@h:5432", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            with_database("postgres://u@h/db?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
    }
}
