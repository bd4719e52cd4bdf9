//! Quantities as the docs write them (`30 s`, `1 MiB`, `2,048 characters`, `an hour`,
//! `` `15m` ``) and as the code computes them, in one unit per dimension so that the two
//! compare.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

/// A number with its dimension: durations in seconds, everything else (bytes included,
/// in bytes) a plain count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A count, a size in bytes, a price, a ratio.
    Count(f64),
    /// A duration in seconds.
    Seconds(f64),
}

impl Value {
    /// Whether two values are the same quantity (equal up to rounding).
    pub fn same(self, other: Value) -> bool {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
        match (self, other) {
            (Value::Count(a), Value::Count(b)) | (Value::Seconds(a), Value::Seconds(b)) => {
                close(a, b)
            }
            _ => false,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Count(n) => write!(f, "{n}"),
            Value::Seconds(s) => write!(f, "{s} s"),
        }
    }
}

/// Units written after a number (`30 s`, `30s`, `2-minute`): seconds for time, bytes for
/// sizes. A unit that is not here (`posts`, `characters`) makes a plain count.
pub fn unit_factor(unit: &str) -> Option<Value> {
    let seconds = match unit {
        "ms" | "millisecond" | "milliseconds" => 0.001,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
        "d" | "day" | "days" => 86_400.0,
        "week" | "weeks" => 7.0 * 86_400.0,
        _ => {
            let bytes = match unit {
                "B" | "byte" | "bytes" => 1.0,
                "KB" | "kB" => 1e3,
                "KiB" => 1024.0,
                "MB" => 1e6,
                "MiB" => 1024.0 * 1024.0,
                "GB" => 1e9,
                "GiB" => 1024.0 * 1024.0 * 1024.0,
                _ => return None,
            };
            return Some(Value::Count(bytes));
        }
    };
    Some(Value::Seconds(seconds))
}

/// Numbers written as words, as the docs do for small ones (`one hour`, `twice`).
const WORDS: [(&str, f64); 14] = [
    ("a", 1.0),
    ("an", 1.0),
    ("one", 1.0),
    ("two", 2.0),
    ("three", 3.0),
    ("four", 4.0),
    ("five", 5.0),
    ("six", 6.0),
    ("seven", 7.0),
    ("eight", 8.0),
    ("nine", 9.0),
    ("ten", 10.0),
    ("eleven", 11.0),
    ("twelve", 12.0),
];

/// Reads the quantity a phrase states: its first number (digits, or a number word:
/// `ten media items`, `an hour`) and the unit after it, if any.
pub fn parse(phrase: &str) -> Option<Value> {
    if let Some((number, unit)) = numbers(phrase).into_iter().next() {
        return Some(scaled(number, unit.as_deref()));
    }
    let words: Vec<String> = phrase
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    // `an hour` is a quantity, `a title` is not: `a` and `an` only before a time unit.
    words.windows(2).find_map(|pair| {
        let (word, number) = WORDS.iter().find(|(w, _)| *w == pair[0])?;
        match unit_factor(&pair[1]) {
            Some(Value::Seconds(unit)) => Some(Value::Seconds(number * unit)),
            Some(Value::Count(unit)) => Some(Value::Count(number * unit)),
            None if !matches!(*word, "a" | "an") => Some(Value::Count(*number)),
            None => None,
        }
    })
}

/// Every number in a text with the word after it (`20 MB` → `(20, Some("MB"))`).
pub fn numbers(text: &str) -> Vec<(f64, Option<String>)> {
    // Not glued to a word or a number before it (`UTF-8`, `v2`, `1.5`); a range's
    // end is a number (`[..32]`).
    static DIGITS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?:^|[^\w.-]|\.\.)\$?(\d(?:[\d_]|,\d{3})*(?:\.\d+)?)(?:\s*-?\s*([A-Za-z]+))?")
            .expect("a valid pattern")
    });
    DIGITS
        .captures_iter(text)
        .filter_map(|found| {
            let number: f64 = found[1].replace([',', '_'], "").parse().ok()?;
            Some((number, found.get(2).map(|m| m.as_str().to_owned())))
        })
        .collect()
}

/// The value of a number and the word after it (a unit, or anything else: a count).
pub fn scaled(number: f64, unit: Option<&str>) -> Value {
    match unit.and_then(unit_factor) {
        Some(Value::Seconds(unit)) => Value::Seconds(number * unit),
        Some(Value::Count(unit)) => Value::Count(number * unit),
        None => Value::Count(number),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_read_as_their_quantity() {
        let cases = [
            ("reads up to 4 due posts", Value::Count(4.0)),
            ("at most 30 min", Value::Seconds(1800.0)),
            ("default `15m`", Value::Seconds(900.0)),
            ("0.5 s of slack", Value::Seconds(0.5)),
            ("the 2-minute delivery lease", Value::Seconds(120.0)),
            ("at most 1 MiB", Value::Count(1_048_576.0)),
            ("2,048 characters", Value::Count(2048.0)),
            (
                "one hour for a Meta publishing limit",
                Value::Seconds(3600.0),
            ),
            ("costs $0.015", Value::Count(0.015)),
            ("ten media items", Value::Count(10.0)),
            (
                "a regular UTF-8 file of at most 64 KiB",
                Value::Count(65_536.0),
            ),
            ("`10_000`", Value::Count(10_000.0)),
        ];
        for (phrase, expected) in cases {
            let value = parse(phrase).unwrap_or_else(|| panic!("{phrase}"));
            assert!(value.same(expected), "{phrase}: {value} is not {expected}");
        }
        assert_eq!(parse("no number here"), None);
        assert!(!Value::Count(60.0).same(Value::Seconds(60.0)));
    }
}
