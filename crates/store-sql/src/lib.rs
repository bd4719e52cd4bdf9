//! What the two SQL backends share: the ledger's row decoding ([`rows`]) and its read
//! queries ([`reads`]), written once over [`Dialect`], the few building blocks each
//! backend supplies: running a query with its arguments bound the way its columns
//! store them, decoding one column, a read snapshot, and the fail-closed quota read.
//!
//! Queries are [`Sql`] values: text with `$n` placeholders (both drivers read them) and
//! the [`Arg`]s that fill them. The SQL here is the subset both databases read alike;
//! where they differ (a list argument) the dialect writes the fragment.
//! Writes stay in the backends: SQLite's are Rust transactions, PostgreSQL's are its
//! PL/pgSQL functions; the decisions both make live in `airlock_store::decide`.

use std::future::Future;

use chrono::{DateTime, Utc};

use airlock_store::{QuotaRows, Result, StoreError};

pub mod reads;
pub mod rows;

/// A database connection of the dialect.
pub type Conn<D> = <<D as Dialect>::Db as sqlx::Database>::Connection;
/// A result row of the dialect.
pub type Row<D> = <<D as Dialect>::Db as sqlx::Database>::Row;
/// A connection pool of the dialect.
pub type Pool<D> = sqlx::Pool<<D as Dialect>::Db>;

/// What a backend supplies so that the shared reads run on it.
pub trait Dialect: Send + Sync + 'static {
    /// The sqlx driver.
    type Db: sqlx::Database;

    /// The condition "`column` is one of the list bound at `param`" (`$n`).
    fn in_list(column: &str, param: &str) -> String;

    /// `posts` in a `FROM`, read through its partial `index` where the dialect's planner
    /// must be told: the claim path's reads stay the size of the backlog, never of the
    /// history, whatever statistics the database has.
    fn posts_by(index: &str) -> String;

    /// Every row `sql` returns.
    fn fetch_all<'a>(
        conn: &'a mut Conn<Self>,
        sql: &'a Sql,
    ) -> impl Future<Output = Result<Vec<Row<Self>>>> + Send + 'a;

    /// The first row `sql` returns, if any (for queries of one row at most).
    fn fetch_optional<'a>(
        conn: &'a mut Conn<Self>,
        sql: &'a Sql,
    ) -> impl Future<Output = Result<Option<Row<Self>>>> + Send + 'a {
        async move { Ok(Self::fetch_all(conn, sql).await?.into_iter().next()) }
    }

    /// Whether the dialect joins `LATERAL` subqueries over a bound array.
    const LATERAL: bool;

    /// A query whose one row's `n` is 1 when sqlx's migrations table exists, else 0.
    const MIGRATIONS_TABLE: &'static str;

    /// The query of the dashboard session whose id hashes to `$1`: `token_sha256,
    /// created_at, expires_at` (PostgreSQL's runtime role reads it through a function).
    const SESSION: &'static str;

    /// The query of the live dashboard sessions at `$1` of tokens not revoked, oldest
    /// first: `name, created_at, expires_at`.
    const LIVE_SESSIONS: &'static str;

    /// A read-only transaction whose reads all see one snapshot.
    fn snapshot(
        pool: &Pool<Self>,
    ) -> impl Future<Output = Result<sqlx::Transaction<'static, Self::Db>>> + Send + '_;

    /// Live reservations sent at or after `since`, and every unsent one, checked
    /// fail-closed ([`QuotaRows::check`]).
    fn live_reservations<'a>(
        conn: &'a mut Conn<Self>,
        since: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<QuotaRows>> + Send + 'a;

    /// Where counts the backend keeps beside the reservations, from `since` on, differ
    /// from a recount: one sentence each (none for a backend that keeps none).
    fn quota_count_drift<'a>(
        _conn: &'a mut Conn<Self>,
        _since: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'a {
        async { Ok(Vec::new()) }
    }

    /// A text column (`None` for NULL).
    fn text(row: &Row<Self>, column: &str) -> Result<Option<String>>;
    /// An integer column.
    fn int(row: &Row<Self>, column: &str) -> Result<Option<i64>>;
    /// A boolean column (an integer 0/1 in SQLite).
    fn flag(row: &Row<Self>, column: &str) -> Result<bool>;
    /// A time column.
    fn time(row: &Row<Self>, column: &str) -> Result<Option<DateTime<Utc>>>;
    /// A JSON column (text in SQLite, `jsonb` in PostgreSQL).
    fn json(row: &Row<Self>, column: &str) -> Result<Option<serde_json::Value>>;
    /// A list of texts (JSON text in SQLite, `text[]` in PostgreSQL).
    fn texts(row: &Row<Self>, column: &str) -> Result<Vec<String>>;
    /// A byte string column.
    fn bytes(row: &Row<Self>, column: &str) -> Result<Vec<u8>>;
}

/// One bound value, as a backend binds it (times as canonical text in SQLite, lists as
/// JSON text there and arrays in PostgreSQL).
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// An integer or NULL.
    Int(Option<i64>),
    /// A text or NULL.
    Text(Option<String>),
    /// A time or NULL.
    Time(Option<DateTime<Utc>>),
    /// A boolean.
    Bool(bool),
    /// A list of integers, for [`Dialect::in_list`].
    Ints(Vec<i64>),
    /// A list of texts, for [`Dialect::in_list`].
    Texts(Vec<String>),
}

impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}
impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}
impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Text(Some(v.to_owned()))
    }
}
impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(Some(v))
    }
}
impl From<DateTime<Utc>> for Arg {
    fn from(v: DateTime<Utc>) -> Self {
        Arg::Time(Some(v))
    }
}
impl From<bool> for Arg {
    fn from(v: bool) -> Self {
        Arg::Bool(v)
    }
}
impl From<Vec<i64>> for Arg {
    fn from(v: Vec<i64>) -> Self {
        Arg::Ints(v)
    }
}
impl From<Vec<String>> for Arg {
    fn from(v: Vec<String>) -> Self {
        Arg::Texts(v)
    }
}

/// A query: SQL text with `$n` placeholders and the arguments that fill them, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sql {
    text: String,
    args: Vec<Arg>,
}

impl Sql {
    /// A query whose text names its placeholders itself (`$1`, `$2`, …); add the
    /// arguments in that order with [`Sql::arg`].
    pub fn new(text: impl Into<String>) -> Self {
        Sql {
            text: text.into(),
            args: Vec::new(),
        }
    }

    /// Adds the next argument.
    pub fn arg(mut self, arg: impl Into<Arg>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends text.
    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends a placeholder for `arg`, numbered after the arguments before it.
    pub fn bind(&mut self, arg: impl Into<Arg>) -> &mut Self {
        self.args.push(arg.into());
        let n = self.args.len();
        self.text.push_str(&format!("${n}"));
        self
    }

    /// The SQL text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The arguments, in placeholder order.
    pub fn args(&self) -> &[Arg] {
        &self.args
    }
}

/// A row's columns read through its dialect, with NULL where a value must be refused as
/// a corrupt row.
pub struct Cols<'r, D: Dialect>(pub &'r Row<D>);

impl<D: Dialect> Cols<'_, D> {
    /// A text column that must not be NULL.
    pub fn text(&self, column: &str) -> Result<String> {
        D::text(self.0, column)?.ok_or_else(|| null(column))
    }
    /// A text column.
    pub fn opt_text(&self, column: &str) -> Result<Option<String>> {
        D::text(self.0, column)
    }
    /// An integer column that must not be NULL.
    pub fn int(&self, column: &str) -> Result<i64> {
        D::int(self.0, column)?.ok_or_else(|| null(column))
    }
    /// An integer column.
    pub fn opt_int(&self, column: &str) -> Result<Option<i64>> {
        D::int(self.0, column)
    }
    /// A boolean column.
    pub fn flag(&self, column: &str) -> Result<bool> {
        D::flag(self.0, column)
    }
    /// A time column that must not be NULL.
    pub fn time(&self, column: &str) -> Result<DateTime<Utc>> {
        D::time(self.0, column)?.ok_or_else(|| null(column))
    }
    /// A time column.
    pub fn opt_time(&self, column: &str) -> Result<Option<DateTime<Utc>>> {
        D::time(self.0, column)
    }
    /// A JSON column decoded into `T`; `what` names it in the error.
    pub fn json<T: serde::de::DeserializeOwned>(&self, column: &str, what: &str) -> Result<T> {
        let value = D::json(self.0, column)?.ok_or_else(|| null(column))?;
        serde_json::from_value(value).map_err(|e| corrupt(format!("{what}: {e}")))
    }
    /// A nullable JSON column decoded into `T`; `what` names it in the error.
    pub fn opt_json<T: serde::de::DeserializeOwned>(
        &self,
        column: &str,
        what: &str,
    ) -> Result<Option<T>> {
        D::json(self.0, column)?
            .map(|value| serde_json::from_value(value).map_err(|e| corrupt(format!("{what}: {e}"))))
            .transpose()
    }
    /// A list-of-texts column.
    pub fn texts(&self, column: &str) -> Result<Vec<String>> {
        D::texts(self.0, column)
    }
}

/// A value the ledger holds that airlock cannot read.
pub fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

fn null(column: &str) -> StoreError {
    corrupt(format!("{column} is NULL"))
}

/// Maps an error from reading a column: a value that does not decode is a corrupt row,
/// anything else the store being unavailable.
pub fn column_error(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => corrupt(e),
        e => StoreError::Unavailable(Box::new(e)),
    }
}
