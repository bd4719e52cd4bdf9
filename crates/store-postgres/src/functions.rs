//! airlock's functions (`sql/functions.sql`): every write transaction of the store as one
//! `SECURITY DEFINER` function, the runtime role and its grants (docs/stores.md#hardened-postgresql).
//!
//! They are code, not schema history: the file is applied after the migrations with
//! `CREATE OR REPLACE`, whenever the ledger's owner opens a store whose functions are
//! not this binary's (`airlock_functions_version()` tells). A store opened as the
//! runtime role never runs DDL: it finds the ledger current or refuses to start.

use sqlx::{PgConnection, PgPool};

use airlock_store::{Result, StoreError};

use crate::{db, sqlstate};

const FUNCTIONS_SQL: &str = include_str!("../sql/functions.sql");

/// The runtime role's default name.
pub const DEFAULT_RUNTIME_ROLE: &str = "airlock_runtime";

/// The version of the functions this binary installs for `role`: a hash of the file, the
/// role and the duplicate key's version, so a new binary or another role re-applies them,
/// and a binary that computes duplicate keys otherwise has the owner migrate (and rekey,
/// `rekey`) before a runtime role starts.
pub(crate) fn version(role: &str) -> String {
    // FNV-1a: stable across builds and platforms, and enough to tell files apart.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let key_version = airlock_core::review::TEXT_KEY_VERSION.to_string();
    let bytes = FUNCTIONS_SQL.bytes().chain([0]).chain(role.bytes());
    for byte in bytes.chain([0]).chain(key_version.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Installs the functions and grants on `conn` (as the ledger's owner), in one
/// transaction.
pub(crate) async fn install(conn: &mut PgConnection, role: &str) -> Result<()> {
    let (schema, schema_literal, role_ident, role_literal): (String, String, String, String) =
        sqlx::query_as(
            "SELECT quote_ident(current_schema()), quote_literal(quote_ident(current_schema())), \
             quote_ident($1), quote_literal($1)",
        )
        .bind(role)
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    let version_literal = format!("'{}'", version(role));
    let sql = FUNCTIONS_SQL
        .replace("{{schema_literal}}", &schema_literal)
        .replace("{{schema}}", &schema)
        .replace("{{runtime_role_literal}}", &role_literal)
        .replace("{{runtime_role}}", &role_ident)
        .replace("{{version_literal}}", &version_literal);
    // One simple query: PostgreSQL runs its statements in one implicit transaction.
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut *conn)
        .await
        .map_err(|e| {
            StoreError::Unavailable(
                format!("installing airlock's functions (sql/functions.sql): {e}").into(),
            )
        })?;
    Ok(())
}

/// The version of the installed functions, if any are.
pub(crate) async fn installed(pool: &PgPool) -> Result<Option<String>> {
    match sqlx::query_scalar::<_, String>("SELECT airlock_functions_version()")
        .fetch_one(pool)
        .await
    {
        Ok(version) => Ok(Some(version)),
        // Undefined function, or no EXECUTE on it.
        Err(e) if matches!(sqlstate(&e).as_deref(), Some("42883" | "42501")) => Ok(None),
        Err(e) => Err(db(e)),
    }
}

/// Whether the connected role may migrate: it can create in the schema and owns the
/// ledger's tables (or there are none yet).
pub(crate) async fn can_migrate(pool: &PgPool) -> Result<bool> {
    sqlx::query_scalar(
        "SELECT has_schema_privilege(current_schema(), 'CREATE') AND \
         (to_regclass('posts') IS NULL OR pg_has_role( \
            (SELECT relowner FROM pg_class WHERE oid = to_regclass('posts')), 'USAGE'))",
    )
    .fetch_one(pool)
    .await
    .map_err(db)
}

/// How a store is connected, for `airlock doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgMode {
    /// The role connected.
    pub user: String,
    /// Whether it owns the ledger (and may migrate it).
    pub owner: bool,
    /// Whether it may write tables directly (an owner, or a role granted more than the
    /// runtime role holds).
    pub writes_tables: bool,
    /// Whether the installed functions are this binary's.
    pub functions_current: bool,
    /// The installed functions' version, if any.
    pub functions_version: Option<String>,
    /// Whether the runtime role (or PUBLIC), or the connected role when it is not the
    /// owner, may create objects in the ledger's schema, which would let it replace what
    /// airlock's functions call.
    pub schema_open: bool,
}

impl PgMode {
    /// One line for people.
    pub fn describe(&self) -> String {
        let mode = if self.owner {
            format!(
                "connected as {:?}, the ledger's owner (writes go through airlock's functions; run `serve` as a role granted only the runtime role to harden it, docs/deploy.md#hardened-postgresql)",
                self.user
            )
        } else if self.writes_tables {
            format!(
                "connected as {:?}, not the owner but allowed to write the ledger's tables directly: grant it only the runtime role (docs/deploy.md#hardened-postgresql)",
                self.user
            )
        } else if self.schema_open {
            format!(
                "not hardened: connected as {:?}, which writes only through airlock's functions but (as the runtime role or PUBLIC) may create objects in the ledger's schema, and so replace what those functions call: run `REVOKE CREATE ON SCHEMA <schema> FROM PUBLIC` as the schema's owner, then `airlock migrate` (docs/deploy.md#hardened-postgresql)",
                self.user
            )
        } else {
            format!(
                "hardened: connected as {:?}, which writes only through airlock's functions",
                self.user
            )
        };
        let functions = match (&self.functions_version, self.functions_current) {
            (_, true) => "functions current".to_owned(),
            (Some(v), false) => format!(
                "functions {v} are not this binary's: run `airlock migrate` with the owner's URL"
            ),
            (None, false) => {
                "functions missing: run `airlock migrate` with the owner's URL".to_owned()
            }
        };
        format!("{mode}; {functions}")
    }
}

pub(crate) async fn mode(pool: &PgPool, role: &str) -> Result<PgMode> {
    let (user, writes_tables, schema_open): (String, bool, bool) = sqlx::query_as(
        "SELECT current_user::text, to_regclass('posts') IS NOT NULL AND \
         (has_table_privilege('posts', 'UPDATE') OR has_table_privilege('post_events', 'DELETE') \
          OR has_table_privilege('reservations', 'INSERT')), \
         COALESCE((SELECT (EXISTS (SELECT FROM pg_roles WHERE rolname = $1) \
                   AND has_schema_privilege($1, c.relnamespace, 'CREATE')) \
                  OR (NOT pg_has_role(c.relowner, 'USAGE') \
                   AND has_schema_privilege(c.relnamespace, 'CREATE')) \
                  FROM pg_class c WHERE c.oid = to_regclass('posts')), false)",
    )
    .bind(role)
    .fetch_one(pool)
    .await
    .map_err(db)?;
    let owner = can_migrate(pool).await?;
    let installed = installed(pool).await?;
    Ok(PgMode {
        user,
        owner,
        writes_tables,
        functions_current: installed.as_deref() == Some(version(role).as_str()),
        functions_version: installed,
        schema_open,
    })
}
