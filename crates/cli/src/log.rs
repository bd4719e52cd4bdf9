//! Where airlock's diagnostics go: stderr, as human-readable lines by default or, with
//! `AIRLOCK_LOG_FORMAT=json`, as one JSON object per line for log shippers.
//!
//! In JSON mode *every* stderr line is JSON, not only `tracing` events: the one-line
//! refusals and failures of docs/cli.md, the `serve` banner and panics go through
//! [`line()`] too. Each object has `time` (RFC 3339, UTC), `level`, `target` and
//! `message`, then the fields of the spans the event happened in (outermost first) and
//! of the event itself, flattened, so `post_id`, `channel`, `sink` and the like are
//! top-level keys wherever a span or an event carries them. `AIRLOCK_LOG` filters
//! either format (default `warn`).

use std::fmt;
use std::io::Write;
use std::sync::OnceLock;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Library targets held at a level that never prints message bodies.
pub const PINNED: [&str; 1] = ["rmcp=info"];

/// How stderr lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `airlock: ...` and tracing's human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

static FORMAT: OnceLock<Format> = OnceLock::new();

/// Reads `AIRLOCK_LOG_FORMAT` (`text`, the default, or `json`) once; a value it does not
/// know is refused with a message naming it.
pub fn choose_format() -> Result<Format, String> {
    let format = match std::env::var("AIRLOCK_LOG_FORMAT") {
        Err(_) => Format::Text,
        Ok(value) => match value.trim().to_ascii_lowercase().as_str() {
            "" | "text" => Format::Text,
            "json" => Format::Json,
            _ => {
                FORMAT.get_or_init(|| Format::Text);
                return Err(format!(
                    "AIRLOCK_LOG_FORMAT={value:?} is not a log format: use `json` (one JSON object per line) or `text`"
                ));
            }
        },
    };
    Ok(*FORMAT.get_or_init(|| format))
}

fn format() -> Format {
    *FORMAT.get_or_init(|| Format::Text)
}

/// Installs the `tracing` subscriber for the chosen format, and in JSON mode a panic
/// hook that reports panics as JSON lines too.
pub fn init() {
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("AIRLOCK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Libraries that log whole messages (the MCP SDK logs every request and answer, post
    // texts and verdicts included) stay at these levels whatever AIRLOCK_LOG asks, so no
    // level prints what agents and critics wrote; airlock's own lines carry ids.
    for directive in PINNED {
        filter = filter.add_directive(directive.parse().expect("a valid directive"));
    }
    match format() {
        // Colour only for a person at a terminal: a file or a pipe gets plain text.
        Format::Text => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        Format::Json => {
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .fmt_fields(JsonFields::new())
                .event_format(JsonLine)
                .init();
            std::panic::set_hook(Box::new(|info| {
                let location = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let payload = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                let mut object = base(Level::ERROR, "airlock::panic", format!("panic: {payload}"));
                object.insert("location".into(), Value::String(location));
                write_line(&Value::Object(object));
            }));
        }
    }
}

/// One line on stderr outside `tracing` (refusals, failures, the `serve` banner), in
/// the chosen format: `airlock: MESSAGE`, or a JSON object with `level` and `message`.
/// Never filtered: docs/cli.md promises the reason of a refusal on stderr whatever the
/// filter.
pub fn line(level: Level, message: &str) {
    let message = message.replace('\n', " ");
    match format() {
        Format::Text => eprintln!("airlock: {message}"),
        Format::Json => write_line(&Value::Object(base(level, "airlock", message))),
    }
}

fn base(level: Level, target: &str, message: String) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("time".into(), Value::String(now()));
    object.insert("level".into(), Value::String(level.to_string()));
    object.insert("target".into(), Value::String(target.to_owned()));
    object.insert("message".into(), Value::String(message));
    object
}

fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

fn write_line(value: &Value) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{value}");
}

/// The JSON event format: see the module docs.
struct JsonLine;

impl<S> FormatEvent<S, JsonFields> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut object = base(*meta.level(), meta.target(), String::new());
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let Some(fields) = extensions.get::<FormattedFields<JsonFields>>() else {
                    continue;
                };
                if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(fields) {
                    object.extend(fields);
                }
            }
        }
        event.record(&mut Fields(&mut object));
        writeln!(writer, "{}", Value::Object(object))
    }
}

/// Records an event's fields into the object; `message` is the event's text.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().into(), Value::String(value.into()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0
            .insert(field.name().into(), Value::String(value.to_string()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::String(format!("{value:?}")));
    }
}
