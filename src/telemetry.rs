//! Logging: human-readable text or JSON lines, filtered by `log.level` (or `RUST_LOG`).
//! Nothing in drbgd logs output bytes or key material.
//!
//! Lines go through a writer thread: request threads format a line and queue it; the thread
//! writes them to stderr through a 64 KiB buffer, flushed whenever the queue runs empty, so
//! under load many lines share one `write(2)` and no request makes one of its own. The queue is
//! bounded ([`QUEUE_LINES`] lines, so memory is bounded); when the sink is slower than the
//! traffic and the queue is full, request threads wait for room — back-pressure, never a lost
//! line (an access log with holes is no audit trail). Dropping the [`LogGuard`] at exit queues a
//! stop mark behind every line and joins the thread, without a time limit: every line queued
//! before it is written. ANSI colours only when stderr is a terminal.

use std::io::{BufWriter, IsTerminal, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::config::{LogFormat, LogSettings};

/// Lines the queue holds before request threads wait: a few seconds of peak traffic, about
/// 2 MiB of ~200-byte lines.
pub const QUEUE_LINES: usize = 10_000;
/// Bytes buffered by the writer thread between flushes.
const WRITE_BUFFER: usize = 64 << 10;

/// The queue: a line, or `None`, the stop mark.
type Queue = SyncSender<Option<Vec<u8>>>;

/// Keeps the writer thread; dropping it writes every queued line and stops the thread.
#[must_use = "dropping the guard stops the log writer"]
pub struct LogGuard(Option<(Queue, JoinHandle<()>)>);

impl Drop for LogGuard {
    fn drop(&mut self) {
        if let Some((queue, thread)) = self.0.take() {
            let _ = queue.send(None);
            let _ = thread.join();
        }
    }
}

/// One line's writer: what it is given, it queues as one message when dropped.
pub struct LineWriter {
    queue: Queue,
    line: Vec<u8>,
}

impl Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if !self.line.is_empty() {
            let _ = self.queue.send(Some(std::mem::take(&mut self.line)));
        }
    }
}

/// Makes a [`LineWriter`] per event.
#[derive(Clone)]
pub struct QueueWriter(Queue);

impl<'a> MakeWriter<'a> for QueueWriter {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> LineWriter {
        LineWriter { queue: self.0.clone(), line: Vec::with_capacity(256) }
    }
}

/// Writes queued lines until the stop mark (or until every sender is gone).
fn write_lines(queue: &Receiver<Option<Vec<u8>>>, sink: impl Write) {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, sink);
    while let Ok(Some(line)) = queue.recv() {
        let _ = out.write_all(&line);
        // Drain what is already queued into the same buffer, then flush once.
        while let Ok(next) = queue.try_recv() {
            match next {
                Some(line) => {
                    let _ = out.write_all(&line);
                }
                None => {
                    let _ = out.flush();
                    return;
                }
            }
        }
        let _ = out.flush();
    }
    let _ = out.flush();
}

/// Installs the global subscriber (once; later calls are ignored and return an inert guard).
pub fn init(log: &LogSettings) -> LogGuard {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&log.level));
    let ansi = std::io::stderr().is_terminal();
    let (queue, lines) = sync_channel(QUEUE_LINES);
    let writer = QueueWriter(queue.clone());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi);
    let installed = match log.format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    if installed.is_err() {
        return LogGuard(None);
    }
    let thread = std::thread::Builder::new()
        .name("drbgd-log".into())
        .spawn(move || write_lines(&lines, std::io::stderr()))
        .expect("spawn the log writer thread");
    LogGuard(Some((queue, thread)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_queued_line_is_written_once_in_order() {
        let (queue, lines) = sync_channel(4);
        let producer = std::thread::spawn(move || {
            for i in 0..1000 {
                let mut w = QueueWriter(queue.clone()).make_writer();
                writeln!(w, "line {i}").unwrap();
            }
            queue.send(None).unwrap();
        });
        let mut sink = Vec::new();
        write_lines(&lines, &mut sink);
        producer.join().unwrap();
        let text = String::from_utf8(sink).unwrap();
        let expected: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, expected, "a queue of 4 under 1000 lines: back-pressure, nothing lost");
    }
}
