//! The text log line without colours, formatted cheaply: the same shape as tracing-subscriber's
//! default (`<time> <LEVEL> <target>: <message> key=value …`), with strings that need no
//! escaping written as they are (quoted) instead of through `Debug`, and no ANSI styling code
//! on the path at all. Strings that do need escaping (a client's `X-Request-Id` with a quote
//! or a control character, say) still go through `Debug`, so no line can be forged.

use std::fmt::{self, Write};

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
        SystemTime.format_time(&mut writer)?;
        // Events from the `log` crate (rustls logs through it) carry their real target and
        // level in `log.*` fields, as tracing-subscriber's own formatter reads them.
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        writer.write_str(level(*meta.level()))?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                writer.write_str(span.name())?;
                if let Some(fields) = span.extensions().get::<FormattedFields<N>>()
                    && !fields.is_empty()
                {
                    write!(writer, "{{{fields}}}")?;
                }
                writer.write_str(": ")?;
            }
        }
        writer.write_str(meta.target())?;
        writer.write_str(":")?;
        let mut visitor = Fields { writer: &mut writer, result: Ok(()) };
        event.record(&mut visitor);
        visitor.result?;
        writer.write_char('\n')
    }
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
struct Fields<'a, 'w> {
    writer: &'a mut Writer<'w>,
    result: fmt::Result,
}

impl Fields<'_, '_> {
    fn write(&mut self, field: &Field, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        // `log.*` fields were read into the normalized metadata.
        if self.result.is_err() || field.name().starts_with("log.") {
            return;
        }
        self.result = (|| {
            self.writer.write_char(' ')?;
            if field.name() != "message" {
                let name = field.name();
                self.writer.write_str(name.strip_prefix("r#").unwrap_or(name))?;
                self.writer.write_char('=')?;
            }
            value(self.writer)
        })();
    }
}

/// Whether `s` can be written between quotes as it is (printable ASCII, no quote or
/// backslash): then it reads exactly as its `Debug` form would.
fn plain(s: &str) -> bool {
    s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

impl Visit for Fields<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        let message = field.name() == "message";
        self.write(field, |w| match (message, plain(value)) {
            (true, _) => write_escaped(w, value),
            (false, true) => {
                w.write_char('"')?;
                w.write_str(value)?;
                w.write_char('"')
            }
            (false, false) => write!(w, "{value:?}"),
        });
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.write(field, |w| w.write_str(itoa::Buffer::new().format(value)));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.write(field, |w| w.write_str(itoa::Buffer::new().format(value)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.write(field, |w| w.write_str(if value { "true" } else { "false" }));
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
struct Escaping<'a, 'w>(&'a mut Writer<'w>);

impl Write for Escaping<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_escaped(self.0, s)
    }
}

/// Writes `s` with control characters (line breaks, ESC and the ANSI/C1 codes) escaped, so
/// that no text in a message can end the line or restyle a terminal.
fn write_escaped(w: &mut Writer<'_>, s: &str) -> fmt::Result {
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

    #[test]
    fn control_characters_in_messages_are_escaped() {
        let got = lines(true, || tracing::info!("evil {}", "\u{1b}[31mred\nforged line"));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(!got[0].contains('\u{1b}'), "{got:?}");
    }
}
