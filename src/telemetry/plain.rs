//! The text log line without colours, formatted cheaply: the same shape as tracing-subscriber's
//! default (`<time> <LEVEL> <target>: <message> key=value …`), with strings that need no
//! escaping written as they are (quoted) instead of through `Debug`, and no ANSI styling code
//! on the path at all. Strings that do need escaping (a client's `X-Request-Id` with a quote
//! or a control character, say) still go through `Debug`, so no line can be forged.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
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
        let meta = event.metadata();
        writer.write_str(level(*meta.level()))?;
        writer.write_str(meta.target())?;
        writer.write_str(":")?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                write!(writer, " {}", span.name())?;
                if let Some(fields) = span.extensions().get::<FormattedFields<N>>()
                    && !fields.is_empty()
                {
                    write!(writer, "{{{fields}}}")?;
                }
                writer.write_char(':')?;
            }
        }
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
        if self.result.is_err() {
            return;
        }
        self.result = (|| {
            if field.name() == "message" {
                self.writer.write_char(' ')?;
            } else {
                write!(self.writer, " {}=", field.name())?;
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
            (true, _) => w.write_str(value),
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
        self.write(field, |w| write!(w, "{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.write(field, |w| write!(w, "{value:?}"));
    }
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
}
