//! The text log line without colours, formatted cheaply: the same shape as tracing-subscriber's
//! default (`<time> <LEVEL> <target>: <message> key=value …`), with strings that need no
//! escaping written as they are (quoted) instead of through `Debug`, and no ANSI styling code
//! on the path at all. Strings that do need escaping (a client's `X-Request-Id` with a quote
//! or a control character, say) still go through `Debug`, so no line can be forged.

use std::cell::RefCell;
use std::fmt::{self, Write};
use std::thread::LocalKey;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The event formatter of `log.format = "text"` off a terminal.
#[derive(Debug, Default, Clone, Copy)]
pub struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        with_line(|line| {
            format_line(ctx, line, event)?;
            writer.write_str(line)
        })
    }
}

/// Runs `f` on this thread's empty line buffer: a line is built in one String (direct,
/// inlined pushes) and handed to the writer once, instead of a dynamic call per piece.
fn with_line<R>(f: impl FnOnce(&mut String) -> R) -> R {
    thread_local!(static LINE: RefCell<String> = const { RefCell::new(String::new()) });
    with_buffer(&LINE, |line| {
        line.clear();
        f(line)
    })
}

/// Queues the access line `access`, formatted as [`Plain`] formats its tracing event.
pub(super) fn write_access(writer: &super::writer::BatchWriter, access: &super::access::Access<'_>) {
    thread_local!(static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) });
    with_buffer(&LINE, |line| {
        line.clear();
        access_line(line, access);
        writer.push(line);
    });
}

/// Runs `f` on this thread's buffer in `key`, or on a fresh one when it is already borrowed
/// (a field's `Debug` that logs while a line is being written).
fn with_buffer<B: Default + 'static, R>(
    key: &'static LocalKey<RefCell<B>>,
    f: impl FnOnce(&mut B) -> R,
) -> R {
    key.with(|cell| {
        let (mut borrowed, mut fresh) = (cell.try_borrow_mut().ok(), B::default());
        f(borrowed.as_deref_mut().unwrap_or(&mut fresh))
    })
}

/// The access line of `a` as [`Plain`] writes the event of [`super::Access`]: the same
/// fields in the same order, strings quoted (or in `Debug` form when they need escaping).
/// Built as bytes from pieces inlined here, so the constant ones are copied without a call.
fn access_line(line: &mut Vec<u8>, a: &super::access::Access<'_>) {
    #[inline(always)]
    fn quoted(line: &mut Vec<u8>, name: &str, value: &str) {
        line.extend_from_slice(b" ");
        line.extend_from_slice(name.as_bytes());
        line.extend_from_slice(b"=");
        if plain(value) {
            line.extend_from_slice(b"\"");
            line.extend_from_slice(value.as_bytes());
            line.extend_from_slice(b"\"");
        } else {
            // Writing to a Vec cannot fail.
            let _ = std::io::Write::write_fmt(line, format_args!("{value:?}"));
        }
    }
    /// A string of ours (a route template, an algorithm's name, an error code): plain.
    #[inline(always)]
    fn known_value(line: &mut Vec<u8>, name: &str, value: &'static str) {
        debug_assert!(plain(value), "{value:?}");
        line.extend_from_slice(b" ");
        line.extend_from_slice(name.as_bytes());
        line.extend_from_slice(b"=\"");
        line.extend_from_slice(value.as_bytes());
        line.extend_from_slice(b"\"");
    }
    #[inline(always)]
    fn number(line: &mut Vec<u8>, name: &str, value: u64) {
        line.extend_from_slice(b" ");
        line.extend_from_slice(name.as_bytes());
        line.extend_from_slice(b"=");
        line.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    }
    line.reserve(256);
    push_now(line);
    line.extend_from_slice(level(Level::INFO).as_bytes());
    line.extend_from_slice(super::access::ACCESS_TARGET.as_bytes());
    line.extend_from_slice(b": request");
    quoted(line, "request_id", a.request_id);
    if !a.trace_id.is_empty() {
        quoted(line, "trace_id", a.trace_id);
    }
    quoted(line, "caller", a.caller);
    quoted(line, "method", a.method);
    known_value(line, "route", a.route);
    known_value(line, "alg", a.alg);
    number(line, "n", a.n);
    number(line, "status", u64::from(a.status));
    known_value(line, "code", a.code);
    number(line, "latency_us", a.latency_us);
    line.extend_from_slice(b"\n");
}

fn format_line<S, N>(ctx: &FmtContext<'_, S, N>, line: &mut String, event: &Event<'_>) -> fmt::Result
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    write_now(line)?;
    // Events from the `log` crate (rustls logs through it) carry their real target and
    // level in `log.*` fields, as tracing-subscriber's own formatter reads them.
    let normalized = event.normalized_metadata();
    let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
    line.push_str(level(*meta.level()));
    if let Some(scope) = ctx.event_scope() {
        for span in scope.from_root() {
            line.push_str(span.name());
            if let Some(fields) = span.extensions().get::<FormattedFields<N>>()
                && !fields.is_empty()
            {
                write!(line, "{{{fields}}}")?;
            }
            line.push_str(": ");
        }
    }
    line.push_str(meta.target());
    line.push(':');
    let mut visitor = Fields { line, result: Ok(()) };
    event.record(&mut visitor);
    visitor.result?;
    line.push('\n');
    Ok(())
}

/// The time as tracing-subscriber's `SystemTime` writes it (`2026-11-25T09:51:46.494765Z`),
/// with the date and time of day worked out once per second per thread instead of through
/// `core::fmt` on every line (the largest part of a line's cost).
fn write_now(writer: &mut impl Write) -> fmt::Result {
    match now_text() {
        Some(text) => writer.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?),
        None => SystemTime.format_time(&mut Writer::new(writer)),
    }
}

/// [`write_now`] into bytes.
fn push_now(line: &mut Vec<u8>) {
    match now_text() {
        Some(text) => line.extend_from_slice(&text),
        None => {
            let mut text = String::new();
            let _ = SystemTime.format_time(&mut Writer::new(&mut text));
            line.extend_from_slice(text.as_bytes());
        }
    }
}

/// [`write_now`]'s text; `None` before 1970 or past year 9999, which tracing-subscriber's own
/// `SystemTime` writes its way.
fn now_text() -> Option<[u8; 27]> {
    use std::cell::Cell;
    thread_local! {
        /// The second last formatted on this thread, and its `YYYY-MM-DDTHH:MM:SS`.
        static SECOND: Cell<(u64, [u8; 19])> = const { Cell::new((u64::MAX, [0; 19])) };
    }
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?;
    let secs = since.as_secs();
    let prefix = match SECOND.get() {
        (cached, prefix) if cached == secs => prefix,
        _ => {
            let prefix = date_time(secs)?;
            SECOND.set((secs, prefix));
            prefix
        }
    };
    let mut line = [0u8; 27];
    line[..19].copy_from_slice(&prefix);
    line[19] = b'.';
    let micros = since.subsec_micros();
    for (i, place) in [100_000, 10_000, 1_000, 100, 10, 1].into_iter().enumerate() {
        line[20 + i] = b'0' + (micros / place % 10) as u8;
    }
    line[26] = b'Z';
    Some(line)
}

/// `YYYY-MM-DDTHH:MM:SS` of a Unix time in seconds (UTC), `None` past year 9999. The civil
/// date from the day count is Howard Hinnant's `civil_from_days`.
fn date_time(secs: u64) -> Option<[u8; 19]> {
    let (days, of_day) = (secs / 86_400, secs % 86_400);
    let z = days + 719_468;
    let (era, day_of_era) = (z / 146_097, z % 146_097);
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    if year > 9999 {
        return None;
    }
    let mut out = *b"0000-00-00T00:00:00";
    let mut put = |at: usize, value: u64, digits: u32| {
        for i in 0..digits as usize {
            out[at + i] = b'0' + (value / 10u64.pow(digits - 1 - i as u32) % 10) as u8;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, of_day / 3_600, 2);
    put(14, of_day / 60 % 60, 2);
    put(17, of_day % 60, 2);
    Some(out)
}

/// The level, padded as tracing-subscriber pads it, between single spaces.
fn level(level: Level) -> &'static str {
    match level {
        Level::TRACE => " TRACE ",
        Level::DEBUG => " DEBUG ",
        Level::INFO => "  INFO ",
        Level::WARN => "  WARN ",
        Level::ERROR => " ERROR ",
    }
}

/// Writes each field as ` key=value` (the message as itself).
struct Fields<'a> {
    line: &'a mut String,
    result: fmt::Result,
}

impl Fields<'_> {
    fn write(&mut self, field: &Field, value: impl FnOnce(&mut String) -> fmt::Result) {
        // `log.*` fields were read into the normalized metadata.
        if self.result.is_err() || field.name().starts_with("log.") {
            return;
        }
        self.line.push(' ');
        if field.name() != "message" {
            let name = field.name();
            self.line.push_str(name.strip_prefix("r#").unwrap_or(name));
            self.line.push('=');
        }
        self.result = value(self.line);
    }
}

/// Whether `s` can be written between quotes as it is (printable ASCII, no quote or
/// backslash): then it reads exactly as its `Debug` form would.
fn plain(s: &str) -> bool {
    // Every byte looked at (no early exit), so the loop vectorizes: these are short strings
    // that nearly always pass.
    s.bytes().fold(true, |ok, b| ok & (0x20..0x7f).contains(&b) & (b != b'"') & (b != b'\\'))
}

/// A string value as its `Debug` form reads: between quotes as it is when [`plain`], else
/// through `Debug` itself (escapes, so no value can end the line or forge a field).
fn quote(w: &mut String, value: &str) -> fmt::Result {
    if plain(value) {
        w.push('"');
        w.push_str(value);
        w.push('"');
        Ok(())
    } else {
        write!(w, "{value:?}")
    }
}

impl Fields<'_> {
    /// Writes a value that needs no quoting or escaping (numbers, booleans).
    fn raw(&mut self, field: &Field, text: &str) {
        self.write(field, |w| {
            w.push_str(text);
            Ok(())
        });
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        let message = field.name() == "message";
        self.write(field, |w| if message { write_escaped(w, value) } else { quote(w, value) });
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.raw(field, itoa::Buffer::new().format(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.raw(field, itoa::Buffer::new().format(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.raw(field, if value { "true" } else { "false" });
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.write(field, |w| write_escaped(w, &value.to_string()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            // Messages are format strings of ours; their arguments may not be.
            self.write(field, |w| write!(Escaping(w), "{value:?}"));
        } else {
            self.write(field, |w| write!(w, "{value:?}"));
        }
    }
}

/// A writer that escapes control characters as [`write_escaped`] does.
struct Escaping<'a>(&'a mut String);

impl Write for Escaping<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_escaped(self.0, s)
    }
}

/// Writes `s` with control characters (line breaks, ESC and the ANSI/C1 codes) escaped, so
/// that no text in a message can end the line or restyle a terminal.
fn write_escaped(w: &mut String, s: &str) -> fmt::Result {
    if !s.chars().any(char::is_control) {
        return w.write_str(s);
    }
    for c in s.chars() {
        if c.is_control() {
            write!(w, "{}", c.escape_default())?;
        } else {
            w.write_char(c)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The date and time of day against httpdate's (an independent calendar), over four
    /// centuries of days and the edges: leap days, 1900/2000/2100 rules, year ends.
    #[test]
    fn date_time_reads_as_an_independent_calendar() {
        let check = |secs: u64| {
            let ours = String::from_utf8(date_time(secs).unwrap().to_vec()).unwrap();
            let http = httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
            // "Wed, 25 Nov 2026 09:52:50 GMT"
            let parts: Vec<&str> = http.split([' ', ':']).collect();
            let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
            let month = months.iter().position(|m| *m == parts[2]).unwrap() + 1;
            let want = format!("{}-{month:02}-{}T{}:{}:{}", parts[3], parts[1], parts[4], parts[5], parts[6]);
            assert_eq!(ours, want, "at {secs}");
        };
        let day = 86_400;
        for d in (0..146_097u64 * 2).step_by(7) {
            check(d * day + (d * 3_607) % day);
        }
        for edge in [0, 951_782_399, 951_782_400, 951_868_800, 4_107_542_399, 4_107_542_400, 253_402_300_799]
        {
            check(edge);
        }
        assert_eq!(date_time(253_402_300_800), None, "year 10000");
    }

    /// The live timestamp as tracing-subscriber's `SystemTime` writes it (same second).
    #[test]
    fn now_reads_as_tracing_subscribers_own() {
        let render = |f: &dyn Fn(&mut Writer<'_>) -> fmt::Result| {
            let mut s = String::new();
            f(&mut Writer::new(&mut s)).unwrap();
            s
        };
        for _ in 0..100 {
            let (ours, theirs) = (render(&|w| write_now(w)), render(&|w| SystemTime.format_time(w)));
            assert_eq!(ours.len(), theirs.len(), "{ours:?} {theirs:?}");
            assert!(ours.ends_with('Z'), "{ours:?}");
            if ours[..19] == theirs[..19] {
                return;
            }
        }
        panic!("never the same second in 100 tries");
    }

    #[test]
    fn only_printable_ascii_without_quotes_is_written_as_is() {
        assert!(plain("3f9c0a7e5b21d4c8-1a"));
        assert!(plain("/token"));
        assert!(!plain("a\"b"));
        assert!(!plain("a\\b"));
        assert!(!plain("line\nbreak"));
        assert!(!plain("é"));
    }

    /// Shared bytes a test subscriber writes into.
    #[derive(Clone, Default)]
    struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The lines `emit` logs through `layer`, without their timestamps.
    fn lines(plain: bool, emit: fn()) -> Vec<String> {
        use tracing_subscriber::layer::SubscriberExt;
        let sink = Sink::default();
        let writer = {
            let sink = sink.clone();
            move || sink.clone()
        };
        let layer = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false);
        if plain {
            tracing::subscriber::with_default(
                tracing_subscriber::registry().with(layer.event_format(Plain)),
                emit,
            );
        } else {
            tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), emit);
        }
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        text.lines().map(|l| l.split_once(' ').unwrap().1.to_owned()).collect()
    }

    #[test]
    fn lines_read_as_tracing_subscribers_own() {
        let emit = || {
            let span = tracing::info_span!("conn", peer = "10.0.0.1");
            let _entered = span.enter();
            tracing::info!(target: "drbgd::access", request_id = "3f-1a", n = 256u64, ok = true, delta = -3i64, "request");
            tracing::warn!(code = "entropy_unavailable", "aborting a streamed response");
            tracing::error!(r#type = "x", odd = "a\"b\nc", "with {} argument", 1);
        };
        assert_eq!(lines(true, emit), lines(false, emit));
    }

    /// The access line written directly reads exactly as its tracing event through [`Plain`],
    /// for plain values and for values that need escaping.
    #[test]
    fn access_lines_read_as_their_events() {
        use super::super::Access;
        const CASES: [Access<'static>; 3] = [
            Access {
                request_id: "3f9c0a7e5b21d4c8-1a",
                trace_id: "",
                caller: "anonymous",
                method: "GET",
                route: "/token",
                alg: "chacha20",
                n: 256,
                status: 200,
                code: "",
                latency_us: 66,
            },
            Access {
                request_id: "evil\"id\\ \u{1b}[31m\nforged",
                trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
                caller: "caf\u{e9}",
                method: "POST",
                route: "unmatched",
                alg: "none",
                n: 0,
                status: 404,
                code: "not_found",
                latency_us: u64::MAX,
            },
            Access {
                request_id: "",
                trace_id: "",
                caller: "",
                method: "DELETE",
                route: "/bits",
                alg: "aes256ctr",
                n: u64::MAX,
                status: 503,
                code: "entropy_unavailable",
                latency_us: 0,
            },
        ];
        for (i, access) in CASES.iter().enumerate() {
            let mut direct = Vec::new();
            access_line(&mut direct, access);
            let direct = String::from_utf8(direct).unwrap();
            assert!(direct.ends_with('\n') && direct.matches('\n').count() == 1, "{direct:?}");
            let direct = direct.trim_end().split_once(' ').unwrap().1.to_owned();
            let via_tracing = match i {
                0 => lines(true, || CASES[0].event()),
                1 => lines(true, || CASES[1].event()),
                _ => lines(true, || CASES[2].event()),
            };
            assert_eq!(vec![direct], via_tracing);
        }
    }

    #[test]
    fn control_characters_in_messages_are_escaped() {
        let got = lines(true, || tracing::info!("evil {}", "\u{1b}[31mred\nforged line"));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(!got[0].contains('\u{1b}'), "{got:?}");
    }
}
