//! Formatting shared by the pages: times in a channel's calendar, relative times,
//! excerpts, status labels, and which links are safe to make clickable.
//!
//! Everything here returns plain strings; the templates escape them.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use airlock_core::PostStatus;

/// `2026-12-01 09:00 JST`: a time in a calendar, to the minute.
pub fn local(at: DateTime<Utc>, tz: Tz) -> String {
    at.with_timezone(&tz)
        .format("%Y-%m-%d %H:%M %Z")
        .to_string()
}

/// `09:00 JST`: a time of day in a calendar.
pub fn local_time(at: DateTime<Utc>, tz: Tz) -> String {
    at.with_timezone(&tz).format("%H:%M %Z").to_string()
}

/// `2026-12-01 09:00:05 JST`: a time to the second, for timelines and evidence.
pub fn local_precise(at: DateTime<Utc>, tz: Tz) -> String {
    at.with_timezone(&tz)
        .format("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

/// `2026-12-01T09:00:00+09:00`: RFC 3339 in a calendar, as the edit form takes it.
pub fn local_rfc3339(at: DateTime<Utc>, tz: Tz) -> String {
    at.with_timezone(&tz)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// `in 2 h 5 min`, `3 min ago`, `now`: how far `at` is from `now`, roughly.
pub fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (at - now).num_seconds();
    let span = seconds.unsigned_abs();
    if span < 60 {
        return "now".to_owned();
    }
    let minutes = span / 60;
    let text = if minutes < 60 {
        format!("{minutes} min")
    } else if minutes < 48 * 60 {
        let (h, m) = (minutes / 60, minutes % 60);
        if m == 0 {
            format!("{h} h")
        } else {
            format!("{h} h {m} min")
        }
    } else {
        format!("{} days", minutes / (24 * 60))
    };
    if seconds > 0 {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// The first `max` characters of a text on one line, with `…` when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max).collect();
    cut.push('…');
    cut
}

/// The words a person reads for a state: `needs review` for `needs_review`.
pub fn status_label(status: PostStatus) -> &'static str {
    match status {
        PostStatus::Draft => "draft",
        PostStatus::Approved => "approved",
        PostStatus::Posting => "posting",
        PostStatus::Posted => "posted",
        PostStatus::Failed => "failed",
        PostStatus::NeedsReview => "needs review",
    }
}

/// Whether a URL may be rendered as a clickable link: absolute `http` or `https` only,
/// so nothing an agent wrote can become a `javascript:` link.
pub fn is_web_link(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://"))
        && !url.contains(|c: char| c.is_whitespace() || c.is_control())
}

/// `48213 bytes (47.1 KiB)`: a size exactly, and roughly when it is over a KiB.
pub fn size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    if bytes >= MIB {
        format!("{bytes} bytes ({:.1} MiB)", bytes as f64 / MIB as f64)
    } else if bytes >= KIB {
        format!("{bytes} bytes ({:.1} KiB)", bytes as f64 / KIB as f64)
    } else if bytes == 1 {
        "1 byte".to_owned()
    } else {
        format!("{bytes} bytes")
    }
}

/// A local path to redirect back to after an action, or `fallback`. Only paths on this
/// site are accepted (no scheme, no `//host`, no backslashes), so a form cannot send
/// the browser elsewhere.
pub fn safe_back(back: Option<&str>, fallback: String) -> String {
    match back.map(str::trim) {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.contains('\\')
                && !path.contains(|c: char| c.is_control() || c.is_whitespace()) =>
        {
            path.to_owned()
        }
        _ => fallback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn tokyo() -> Tz {
        "Asia/Tokyo".parse().unwrap()
    }

    #[test]
    fn times_show_in_the_channel_calendar() {
        let at = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
        assert_eq!(local(at, tokyo()), "2026-12-01 09:00 JST");
        assert_eq!(local_time(at, tokyo()), "09:00 JST");
        assert_eq!(local_rfc3339(at, tokyo()), "2026-12-01T09:00:00+09:00");
    }

    #[test]
    fn relative_times_read_naturally() {
        let now = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
        assert_eq!(relative(now, now), "now");
        assert_eq!(
            relative(now + chrono::Duration::minutes(5), now),
            "in 5 min"
        );
        assert_eq!(
            relative(now - chrono::Duration::minutes(125), now),
            "2 h 5 min ago"
        );
        assert_eq!(relative(now + chrono::Duration::days(3), now), "in 3 days");
    }

    #[test]
    fn excerpts_cut_long_texts_on_one_line() {
        assert_eq!(excerpt("a\nb  c", 10), "a b c");
        assert_eq!(excerpt("abcdef", 3), "abc…");
    }

    #[test]
    fn sizes_read_exactly_and_roughly() {
        assert_eq!(size(1), "1 byte");
        assert_eq!(size(900), "900 bytes");
        assert_eq!(size(48_213), "48213 bytes (47.1 KiB)");
        assert_eq!(size(3 * 1024 * 1024), "3145728 bytes (3.0 MiB)");
    }

    #[test]
    fn only_local_paths_are_redirect_targets() {
        let fallback = || "/".to_owned();
        assert_eq!(safe_back(Some("/posts/3"), fallback()), "/posts/3");
        assert_eq!(
            safe_back(Some("/?status=draft"), fallback()),
            "/?status=draft"
        );
        for bad in [
            "//evil.example",
            "https://evil.example",
            "/\\evil",
            "posts",
            "",
        ] {
            assert_eq!(safe_back(Some(bad), fallback()), "/", "{bad}");
        }
        assert_eq!(safe_back(None, fallback()), "/");
    }

    #[test]
    fn only_http_links_are_clickable() {
        assert!(is_web_link("https://x.example/a"));
        assert!(!is_web_link("javascript:alert(1)"));
        assert!(!is_web_link("sandbox://cats/1"));
    }
}
