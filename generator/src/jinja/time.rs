//! `strftime_now(format)`, pinned to a fixed instant.
//!
//! transformers exposes `strftime_now` so templates can print today's date (Llama 3.x,
//! Mistral, Granite, LFM2 do). Rendering here feeds template analysis, which must give
//! the same answer on every run, so the clock is pinned to **2026-01-01 00:00:00** (a
//! Thursday). The format codes are those of glibc's `strftime`, which is what Python
//! uses on Linux, including the `-` flag (`%-d` gives `1`); unknown codes are copied
//! through unchanged, as glibc does.

use std::fmt::Write;

/// The pinned instant, broken down the way `strftime` needs it.
struct Instant {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    /// 0 = Sunday.
    weekday: u32,
    /// 1-based day of the year.
    yday: u32,
    /// Seconds since the Unix epoch (the instant taken as UTC).
    epoch: i64,
    /// ISO 8601 week-numbering year and week.
    iso_year: i64,
    iso_week: u32,
}

const PINNED: Instant = Instant {
    year: 2026,
    month: 1,
    day: 1,
    hour: 0,
    minute: 0,
    second: 0,
    weekday: 4,
    yday: 1,
    epoch: 1_767_225_600,
    iso_year: 2026,
    iso_week: 1,
};

const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Formats the pinned instant with a `strftime` format string.
pub(crate) fn strftime_now(format: &str) -> String {
    format_instant(&PINNED, format)
}

fn format_instant(t: &Instant, format: &str) -> String {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let no_pad = chars.next_if_eq(&'-').is_some();
        let Some(code) = chars.next() else {
            out.push('%');
            if no_pad {
                out.push('-');
            }
            break;
        };
        match field(t, code) {
            Some(text) if no_pad && text.len() > 1 => {
                let trimmed = text.trim_start_matches(['0', ' ']);
                out.push_str(if trimmed.is_empty() { "0" } else { trimmed });
            }
            Some(text) => out.push_str(&text),
            None => {
                out.push('%');
                if no_pad {
                    out.push('-');
                }
                out.push(code);
            }
        }
    }
    out
}

/// The text of one conversion, or `None` for an unknown code.
fn field(t: &Instant, code: char) -> Option<String> {
    let weekday = WEEKDAYS.get(t.weekday as usize).copied().unwrap_or("");
    let month = MONTHS
        .get(t.month.wrapping_sub(1) as usize)
        .copied()
        .unwrap_or("");
    let hour12 = match t.hour % 12 {
        0 => 12,
        h => h,
    };
    let am_pm = if t.hour < 12 { "AM" } else { "PM" };
    // Week of the year with weeks starting on Sunday (%U) or Monday (%W); days before
    // the first such weekday are in week 0.
    let week_from = |first_weekday: u32| (t.yday + 6 - (t.weekday + 7 - first_weekday) % 7) / 7;
    let mut s = String::new();
    let _ = match code {
        'a' => write!(s, "{}", weekday.get(..3).unwrap_or("")),
        'A' => write!(s, "{weekday}"),
        'b' | 'h' => write!(s, "{}", month.get(..3).unwrap_or("")),
        'B' => write!(s, "{month}"),
        'c' => write!(
            s,
            "{} {} {:>2} {:02}:{:02}:{:02} {}",
            weekday.get(..3).unwrap_or(""),
            month.get(..3).unwrap_or(""),
            t.day,
            t.hour,
            t.minute,
            t.second,
            t.year
        ),
        'C' => write!(s, "{:02}", t.year / 100),
        'd' => write!(s, "{:02}", t.day),
        'D' | 'x' => write!(s, "{:02}/{:02}/{:02}", t.month, t.day, t.year % 100),
        'e' => write!(s, "{:>2}", t.day),
        'f' => s.write_str("000000"),
        'F' => write!(s, "{}-{:02}-{:02}", t.year, t.month, t.day),
        'g' => write!(s, "{:02}", t.iso_year % 100),
        'G' => write!(s, "{}", t.iso_year),
        'H' => write!(s, "{:02}", t.hour),
        'I' => write!(s, "{hour12:02}"),
        'j' => write!(s, "{:03}", t.yday),
        'k' => write!(s, "{:>2}", t.hour),
        'l' => write!(s, "{hour12:>2}"),
        'm' => write!(s, "{:02}", t.month),
        'M' => write!(s, "{:02}", t.minute),
        'n' => s.write_char('\n'),
        'p' => write!(s, "{am_pm}"),
        'P' => write!(s, "{}", am_pm.to_lowercase()),
        'r' => write!(s, "{hour12:02}:{:02}:{:02} {am_pm}", t.minute, t.second),
        'R' => write!(s, "{:02}:{:02}", t.hour, t.minute),
        's' => write!(s, "{}", t.epoch),
        'S' => write!(s, "{:02}", t.second),
        't' => s.write_char('\t'),
        'T' | 'X' => write!(s, "{:02}:{:02}:{:02}", t.hour, t.minute, t.second),
        'u' => write!(s, "{}", if t.weekday == 0 { 7 } else { t.weekday }),
        'U' => write!(s, "{:02}", week_from(0)),
        'V' => write!(s, "{:02}", t.iso_week),
        'w' => write!(s, "{}", t.weekday),
        'W' => write!(s, "{:02}", week_from(1)),
        'y' => write!(s, "{:02}", t.year % 100),
        'Y' => write!(s, "{}", t.year),
        // Python's naive datetime has no zone: both print nothing.
        'z' | 'Z' => Ok(()),
        '%' => s.write_char('%'),
        _ => return None,
    };
    Some(s)
}
