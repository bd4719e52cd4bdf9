//! The audit export: who did what to posts, as every post event of the ledger (`GET /audit.csv`,
//! `GET /audit.jsonl`), oldest first, optionally from `since` and before `until`.
//!
//! The export is read through [`airlock_app::App::events_after`] a page of
//! [`AUDIT_PAGE`] events at a time and streamed as it is read, so memory holds one page
//! whatever the ledger's size; a failure after the first page cuts the download short
//! (the browser reports it failed) rather than passing off part of the ledger as all of
//! it.
//!
//! - `since`, `until`: a day (`2026-12-04`, read in the configured time zone: from its
//!   start, through its end) or an instant (RFC 3339: from it, before it). Either may be
//!   empty.
//! - CSV (RFC 4180, `\r\n` lines): `event_id,at,post_id,kind,from,to,actor,note`, a
//!   cell quoted when it holds a comma, a quote or a line break (its quotes doubled).
//!   A text cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a
//!   leading `'`, so a spreadsheet shows it as text instead of running it as a formula
//!   (an agent writes notes and reasons). JSON Lines carry the values as they are.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use serde::Deserialize;
use tokio::sync::mpsc;

use airlock_app::Principal;
use airlock_core::PostEvent;
use airlock_core::time::format_utc;

use crate::auth::Operator;
use crate::pages::error_page;
use crate::session::Dashboard;

/// Events read per page.
pub const AUDIT_PAGE: u32 = 1000;

/// The CSV header.
pub const CSV_HEADER: &str = "event_id,at,post_id,kind,from,to,actor,note";

/// `?since=&until=` on the export.
#[derive(Debug, Default, Deserialize)]
pub struct AuditQuery {
    /// A day or an RFC 3339 instant, or empty.
    #[serde(default)]
    pub since: String,
    /// A day or an RFC 3339 instant, or empty.
    #[serde(default)]
    pub until: String,
}

/// The two formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/csv`.
    Csv,
    /// `application/jsonl`, one event a line.
    JsonLines,
}

/// The time range an export covers: `[since, until)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Range {
    /// From (inclusive).
    pub since: Option<DateTime<Utc>>,
    /// Before (exclusive).
    pub until: Option<DateTime<Utc>>,
}

impl Range {
    /// Reads `since` and `until`; a day is read in `tz` (`until` names the last day).
    pub fn parse(query: &AuditQuery, tz: Tz) -> Result<Range, String> {
        let since = bound(&query.since, tz, false).map_err(|e| format!("From: {e}"))?;
        let until = bound(&query.until, tz, true).map_err(|e| format!("To: {e}"))?;
        if let (Some(since), Some(until)) = (since, until)
            && until <= since
        {
            return Err("the range is empty: the last day comes before the first".to_owned());
        }
        Ok(Range { since, until })
    }

    /// Whether an event at `at` is in the range.
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.since.is_none_or(|since| at >= since) && self.until.is_none_or(|until| at < until)
    }
}

fn bound(raw: &str, tz: Tz, end: bool) -> Result<Option<DateTime<Utc>>, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(raw) {
        return Ok(Some(at.with_timezone(&Utc)));
    }
    let day = NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .map_err(|_| format!("{raw:?} is neither a day (2026-12-04) nor an RFC 3339 time"))?;
    let day = if end {
        day.succ_opt()
            .ok_or_else(|| format!("{raw:?} is too far ahead"))?
    } else {
        day
    };
    Ok(Some(airlock_core::quota::local_day_start(day, tz)))
}

/// `GET /audit.csv`.
pub async fn csv(
    State(dash): State<Dashboard>,
    op: Operator,
    Query(query): Query<AuditQuery>,
) -> Response {
    export(dash, op, query, Format::Csv).await
}

/// `GET /audit.jsonl`.
pub async fn jsonl(
    State(dash): State<Dashboard>,
    op: Operator,
    Query(query): Query<AuditQuery>,
) -> Response {
    export(dash, op, query, Format::JsonLines).await
}

async fn export(dash: Dashboard, op: Operator, query: AuditQuery, format: Format) -> Response {
    let app = dash.app().clone();
    let range = match Range::parse(&query, app.settings().timezone) {
        Ok(range) => range,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, "Not understood", &e),
    };
    // The first page before the answer starts, so that a ledger that cannot be read
    // answers with an error page, not an empty file.
    let who = op.principal;
    let first = match app.events_after(&who, 0, AUDIT_PAGE).await {
        Ok(page) => page,
        Err(e) => {
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "The ledger is unavailable",
                &e.to_string(),
            );
        }
    };
    let time = |at: Option<DateTime<Utc>>| at.map(format_utc).unwrap_or_default();
    tracing::info!(actor = %who.actor, since = %time(range.since), until = %time(range.until), "audit export");
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(pump(app, who, range, format, first, tx));
    let (content_type, extension) = match format {
        Format::Csv => ("text/csv; charset=utf-8", "csv"),
        Format::JsonLines => ("application/jsonl; charset=utf-8", "jsonl"),
    };
    let name = format!(
        "attachment; filename=\"airlock-audit-{}.{extension}\"",
        dash.app().now().format("%Y%m%d-%H%M%S")
    );
    let mut response = Body::from_stream(Chunks(rx)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&name) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// Reads the ledger page by page and sends each page's lines; stops when the reader
/// has gone (the channel is closed) or a page cannot be read (an error ends the body).
async fn pump(
    app: airlock_app::App,
    who: Principal,
    range: Range,
    format: Format,
    mut page: Vec<PostEvent>,
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
) {
    if format == Format::Csv
        && tx
            .send(Ok(Bytes::from(format!("{CSV_HEADER}\r\n"))))
            .await
            .is_err()
    {
        return;
    }
    loop {
        let Some(last) = page.last().map(|e| e.id) else {
            return;
        };
        let mut chunk = String::new();
        for event in page.iter().filter(|e| range.contains(e.at)) {
            match format {
                Format::Csv => chunk.push_str(&csv_line(event)),
                Format::JsonLines => {
                    let line = serde_json::to_string(event).unwrap_or_default();
                    chunk.push_str(&line);
                    chunk.push('\n');
                }
            }
        }
        if !chunk.is_empty() && tx.send(Ok(Bytes::from(chunk))).await.is_err() {
            return;
        }
        // A reader gone while pages outside the range send nothing is noticed here.
        if page.len() < AUDIT_PAGE as usize || tx.is_closed() {
            return;
        }
        page = match app.events_after(&who, last, AUDIT_PAGE).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = %e, after = last, "the audit export stopped: a page of events could not be read");
                let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                return;
            }
        };
    }
}

/// One event as a CSV line, `\r\n` included.
pub fn csv_line(event: &PostEvent) -> String {
    let cells = [
        event.id.to_string(),
        format_utc(event.at),
        event.post_id.to_string(),
        text_cell(&event.kind),
        event
            .from
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        event.to.as_str().to_owned(),
        text_cell(&event.actor),
        text_cell(event.note.as_deref().unwrap_or_default()),
    ];
    let mut line = cells.join(",");
    line.push_str("\r\n");
    line
}

/// A text cell: defused against formulas (a leading `'` before `=`, `+`, `-`, `@`, a
/// tab or a carriage return), then quoted when it holds a comma, a quote or a line
/// break, its quotes doubled.
pub fn text_cell(value: &str) -> String {
    let defused = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_owned()
    };
    if defused.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", defused.replace('"', "\"\""))
    } else {
        defused
    }
}

/// The export's lines as a body stream.
struct Chunks(mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl futures_core::Stream for Chunks {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_and_defused() {
        assert_eq!(text_cell("plain"), "plain");
        assert_eq!(text_cell("a, b"), "\"a, b\"");
        assert_eq!(text_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(text_cell("two\nlines"), "\"two\nlines\"");
        assert_eq!(text_cell("=1+1"), "'=1+1");
        assert_eq!(text_cell("+1"), "'+1");
        assert_eq!(text_cell("-2"), "'-2");
        assert_eq!(text_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(text_cell("\t=x"), "'\t=x");
        assert_eq!(
            text_cell("=HYPERLINK(\"x\",\"y\")"),
            "\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\""
        );
        assert_eq!(text_cell(""), "");
    }

    #[test]
    fn days_cover_their_whole_day_in_the_zone() {
        let tz: Tz = "Asia/Tokyo".parse().unwrap();
        let query = AuditQuery {
            since: "2026-12-04".into(),
            until: "2026-12-04".into(),
        };
        let range = Range::parse(&query, tz).unwrap();
        let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        assert_eq!(range.since, Some(at("2026-12-03T15:00:00Z")));
        assert_eq!(range.until, Some(at("2026-12-04T15:00:00Z")));
        assert!(range.contains(at("2026-12-04T14:59:59Z")));
        assert!(!range.contains(at("2026-12-04T15:00:00Z")));
        let instant = AuditQuery {
            since: "2026-12-04T10:00:00+09:00".into(),
            until: String::new(),
        };
        assert_eq!(
            Range::parse(&instant, tz).unwrap(),
            Range {
                since: Some(at("2026-12-04T01:00:00Z")),
                until: None
            }
        );
        let backwards = AuditQuery {
            since: "2026-12-05".into(),
            until: "2026-12-04".into(),
        };
        assert!(Range::parse(&backwards, tz).is_err());
        let garbage = AuditQuery {
            since: "yesterday".into(),
            until: String::new(),
        };
        assert!(
            Range::parse(&garbage, tz)
                .unwrap_err()
                .contains("yesterday")
        );
    }
}
