//! The log writer: request threads append each formatted line to one shared buffer and go on;
//! one background thread writes the buffer to the sink in batches. A batch starts with the
//! first line after the writer went idle and is written [`LINGER`] later, or as soon as it
//! holds [`HIGH_WATER`] bytes — so under load the sink sees a few hundred lines per `write`,
//! and a line written alone reaches it within [`LINGER`].
//!
//! Why not tracing-appender's non-blocking writer: its worker wakes for every line (a crossbeam
//! channel), and on a busy core that meant one `write` and one `sched_yield` per request — the
//! largest single cost of a `/token` request (benches/README.md).
//!
//! Bounded memory, and no logger ever waits (they are tokio's worker threads: a wait there
//! would freeze the API, the admin port and HTTP/2 pings behind a stalled stderr reader). When
//! the sink is slower than the traffic and the queue holds [`SOFT_LIMIT`] bytes, access and
//! diagnostic lines are dropped and counted ([`BatchWriter::lines_dropped`]). Audit lines are
//! never dropped: they go in past the soft limit too, and their number is bounded by the
//! requests in progress, since the request pipeline refuses new audited requests (503
//! `audit_unavailable`) while [`BatchWriter::backlogged`] says the queue is past it. A sink that
//! is full for now (`WouldBlock`) is waited for by the writer thread alone. A sink that fails
//! (stderr closed, disk full) loses the rest of the batch it failed on; the writer goes on with
//! the next. A line longer than the whole queue goes alone, into an empty queue. At exit,
//! dropping the [`WriterGuard`] writes everything queued, waiting at most [`EXIT_WAIT`] for a
//! stalled sink; lines logged after that are written directly.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// How long a batch gathers lines after its first one.
pub const LINGER: Duration = Duration::from_millis(5);
/// A batch this large is written without waiting for the rest of [`LINGER`].
pub const HIGH_WATER: usize = 256 << 10;
/// Past this many bytes queued, access and diagnostic lines are dropped and counted, and
/// [`BatchWriter::backlogged`] is true.
pub const SOFT_LIMIT: usize = 3 << 20;

/// Whether a line may be dropped when the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Access and diagnostic lines: dropped (and counted) past [`SOFT_LIMIT`].
    Droppable,
    /// Audit lines: never dropped.
    Audit,
}
/// How long the guard waits at exit for the queue to be written.
pub const EXIT_WAIT: Duration = Duration::from_secs(5);

/// What the loggers and the writer thread share.
#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// The writer waits here for lines (or for the end).
    lines: Condvar,
    /// The guard waits here for the end.
    room: Condvar,
    /// Bytes queued now, mirrored from the queue (read without the lock).
    queued: AtomicUsize,
    /// Lines dropped because the queue was past [`SOFT_LIMIT`].
    dropped: AtomicU64,
}

#[derive(Debug, Default)]
struct Queue {
    bytes: Vec<u8>,
    /// The guard asked the writer to finish.
    closing: bool,
    /// The writer thread has written everything and stopped: loggers write directly.
    stopped: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock cannot leave the queue half-updated (appends and
        // swaps only), so a poisoned lock is still good.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one line (or part of one: the fmt layer writes a whole line per call), or drops
    /// it (see the module documentation). Never waits for the writer.
    fn push(&self, line: &[u8], kind: Kind) {
        let mut queue = self.lock();
        if queue.stopped {
            drop(queue);
            let _ = io::stderr().write_all(line);
            return;
        }
        let before = queue.bytes.len();
        if kind == Kind::Droppable && before > 0 && before + line.len() > SOFT_LIMIT {
            drop(queue);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        queue.bytes.extend_from_slice(line);
        let after = queue.bytes.len();
        self.queued.store(after, Ordering::Relaxed);
        drop(queue);
        // The writer sleeps only on an empty queue, and lingers only below the high water.
        if before == 0 || (before < HIGH_WATER && after >= HIGH_WATER) {
            self.lines.notify_one();
        }
    }

    /// The writer thread: batches until the guard closes the queue and it is empty.
    fn run(&self, mut sink: impl Write) {
        let mut batch = Vec::new();
        loop {
            let mut queue = self.lock();
            queue = self.wait(queue, |q| q.bytes.is_empty() && !q.closing, None);
            if !queue.closing {
                queue = self.wait(queue, |q| q.bytes.len() < HIGH_WATER && !q.closing, Some(LINGER));
            }
            if queue.bytes.is_empty() {
                queue.stopped = true;
                drop(queue);
                self.room.notify_all();
                return;
            }
            std::mem::swap(&mut queue.bytes, &mut batch);
            self.queued.store(0, Ordering::Relaxed);
            drop(queue);
            self.room.notify_all();
            write_batch(&mut sink, &batch);
            batch.clear();
            batch.shrink_to(HIGH_WATER);
        }
    }

    fn wait<'a>(
        &self,
        queue: MutexGuard<'a, Queue>,
        condition: impl FnMut(&mut Queue) -> bool,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Queue> {
        match timeout {
            None => self.lines.wait_while(queue, condition).unwrap_or_else(PoisonError::into_inner),
            Some(timeout) => {
                self.lines
                    .wait_timeout_while(queue, timeout, condition)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
        }
    }
}

/// Writes one batch (on the writer's own thread). A sink that is full for now (a non-blocking
/// pipe: `WouldBlock`) is waited for here, and only here; one that fails (a closed stderr, a full disk) loses the rest
/// of this batch only — nothing can be reported about it but to the sink that failed — and a
/// line cut by the failure is ended, so the next batch starts on a line of its own.
fn write_batch(sink: &mut impl Write, batch: &[u8]) {
    let written = write_waiting(sink, batch);
    if written < batch.len() && written > 0 && batch[written - 1] != b'\n' {
        write_waiting(sink, b"\n");
    }
    let _ = sink.flush();
}

/// Writes `bytes`, waiting out `WouldBlock`; returns how many were written before a failure.
fn write_waiting(sink: &mut impl Write, bytes: &[u8]) -> usize {
    let mut written = 0;
    while written < bytes.len() {
        match sink.write(&bytes[written..]) {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(1)),
            Err(_) => break,
        }
    }
    written
}

/// The writer the fmt layers log through (cheap to clone): its lines are of one [`Kind`].
#[derive(Debug, Clone)]
pub struct BatchWriter(Arc<Shared>, Kind);

impl BatchWriter {
    /// Queues one whole line, or drops it if it may be and the queue is full.
    pub fn push(&self, line: &[u8]) {
        self.0.push(line, self.1);
    }

    /// The same queue, for audit lines (never dropped).
    pub fn for_audit(&self) -> BatchWriter {
        BatchWriter(Arc::clone(&self.0), Kind::Audit)
    }

    /// Lines dropped so far because the sink could not keep up.
    pub fn lines_dropped(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }

    /// Whether the queue is within 64 KiB of [`SOFT_LIMIT`] (where lines begin to be
    /// dropped): the sink is not keeping up, and a request whose audit line must be written
    /// should not be started.
    pub fn backlogged(&self) -> bool {
        self.0.queued.load(Ordering::Relaxed) >= SOFT_LIMIT - (64 << 10)
    }
}

/// Keeps the writer thread; dropping it writes what is queued (see the module documentation).
#[derive(Debug)]
pub struct WriterGuard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Starts the writer thread over `sink`.
pub fn spawn(sink: impl Write + Send + 'static) -> io::Result<(BatchWriter, WriterGuard)> {
    let shared = Arc::new(Shared::default());
    let worker = Arc::clone(&shared);
    let thread = std::thread::Builder::new().name("drbgd-log".into()).spawn(move || worker.run(sink))?;
    Ok((BatchWriter(Arc::clone(&shared), Kind::Droppable), WriterGuard { shared, thread: Some(thread) }))
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        queue.closing = true;
        self.shared.lines.notify_one();
        let (queue, _) = (self.shared.room)
            .wait_timeout_while(queue, EXIT_WAIT, |q| !q.stopped)
            .unwrap_or_else(PoisonError::into_inner);
        if !queue.stopped {
            // The sink is stalled: give up on what is queued rather than hang the exit.
            return;
        }
        drop(queue);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One logger's handle on the queue, for the length of one event.
#[derive(Debug)]
pub struct LineWriter<'a>(&'a BatchWriter);

impl Write for LineWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.push(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for BatchWriter {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A sink that records each `write` call.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn line(i: usize) -> String {
        format!("line {i:06} {}\n", "x".repeat(100))
    }

    #[test]
    fn many_lines_are_written_in_few_writes_in_order_and_all_by_the_guard() {
        let sink = Recorder::default();
        let (writer, guard) = spawn(sink.clone()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let writer = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        writer.make_writer().write_all(line(t * 10_000 + i).as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        drop(guard);
        let writes = sink.0.lock().unwrap();
        let all: Vec<u8> = writes.concat();
        let lines: Vec<&str> = std::str::from_utf8(&all).unwrap().lines().collect();
        assert_eq!(lines.len(), 20_000, "every line written once the guard is dropped");
        for t in 0..4 {
            let own: Vec<String> = lines
                .iter()
                .filter(|l| l[5..11].parse::<usize>().unwrap() / 10_000 == t)
                .map(|l| format!("{l}\n"))
                .collect();
            let want: Vec<String> = (0..5_000).map(|i| line(t * 10_000 + i)).collect();
            assert_eq!(own, want, "thread {t}'s lines whole and in its order");
        }
        assert!(writes.len() < 2_000, "{} writes for 20,000 lines: not batched", writes.len());
    }

    #[test]
    fn a_lone_line_is_written_within_the_linger() {
        let sink = Recorder::default();
        let (writer, _guard) = spawn(sink.clone()).unwrap();
        writer.make_writer().write_all(b"alone\n").unwrap();
        // LINGER is 5 ms; a second leaves room for a busy machine, not for a line left waiting.
        let deadline = Instant::now() + Duration::from_secs(1);
        while sink.0.lock().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "a lone line not written within a second");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(sink.0.lock().unwrap().concat(), b"alone\n");
    }

    /// Waits for `thread` at most `secs`: a broken writer fails the test instead of hanging it.
    fn join_within(thread: std::thread::JoinHandle<()>, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !thread.is_finished() {
            assert!(Instant::now() < deadline, "still blocked after {secs} s");
            std::thread::sleep(Duration::from_millis(5));
        }
        thread.join().unwrap();
    }

    /// A sink that blocks until released: the queue fills to its soft limit, then lines are
    /// dropped and counted, and no logger ever waits; audit lines still go in; once the sink
    /// moves, every line queued is written.
    #[test]
    fn a_stalled_sink_drops_lines_and_never_holds_loggers_back_but_keeps_audit_lines() {
        let gate = Arc::new(Mutex::new(()));
        struct Gated(Arc<Mutex<()>>, Recorder);
        impl Write for Gated {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let _open = self.0.lock().unwrap();
                self.1.write(buf)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let sink = Recorder::default();
        let closed = gate.lock().unwrap();
        let (writer, guard) = spawn(Gated(Arc::clone(&gate), sink.clone())).unwrap();

        // One line in the writer's hands (stuck in the sink), then a queue's worth and more.
        writer.make_writer().write_all(line(0).as_bytes()).unwrap();
        while !writer.0.lock().bytes.is_empty() {
            std::thread::yield_now();
        }
        let logger = {
            let writer = writer.clone();
            std::thread::spawn(move || {
                for i in 1..100_000 {
                    writer.make_writer().write_all(line(i).as_bytes()).unwrap();
                }
            })
        };
        join_within(logger, 30);
        let queued = writer.0.lock().bytes.len();
        assert!(queued <= SOFT_LIMIT, "queue at {queued} bytes, over its soft limit");
        assert!(writer.backlogged(), "the queue says it is backlogged");
        let dropped = writer.lines_dropped();
        assert!(dropped > 50_000, "{dropped} lines dropped");
        // An audit line is never dropped, even now.
        writer.for_audit().make_writer().write_all(b"audit line\n").unwrap();
        drop(closed);
        drop(guard);
        assert!(!writer.backlogged());
        let all = sink.0.lock().unwrap().concat();
        let text = String::from_utf8(all).unwrap();
        assert!(text.ends_with("audit line\n"), "the audit line was kept");
        let kept = text.lines().count() as u64 - 1;
        assert_eq!(kept + dropped, 100_000, "every line written or counted as dropped");
    }

    /// A sink that takes a few bytes at a time, says `WouldBlock` every other call (a full
    /// non-blocking pipe), and fails outright once: what it was given reads as whole lines,
    /// only the batch it failed on is lost, and later batches are written.
    #[test]
    fn a_slow_or_failing_sink_loses_at_most_the_batch_it_failed_on() {
        #[derive(Clone, Default)]
        struct Flaky(Arc<Mutex<(Vec<u8>, usize)>>);
        impl Write for Flaky {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let mut state = self.0.lock().unwrap();
                state.1 += 1;
                match state.1 {
                    5 => Err(io::Error::other("disk full")),
                    n if n % 2 == 0 => Err(io::ErrorKind::WouldBlock.into()),
                    _ => {
                        let n = buf.len().min(50);
                        state.0.extend_from_slice(&buf[..n]);
                        Ok(n)
                    }
                }
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let sink = Flaky::default();
        let (writer, guard) = spawn(sink.clone()).unwrap();
        writer.make_writer().write_all(line(1).as_bytes()).unwrap();
        // Line 2 in a batch of its own: logged once line 1's batch is over (its cut line ended).
        let deadline = Instant::now() + Duration::from_secs(5);
        while !sink.0.lock().unwrap().0.ends_with(b"\n") {
            assert!(Instant::now() < deadline, "line 1's batch not over within 5 s");
            std::thread::sleep(Duration::from_millis(1));
        }
        writer.make_writer().write_all(line(2).as_bytes()).unwrap();
        drop(guard);
        let text = String::from_utf8(sink.0.lock().unwrap().0.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // line 1 (113 bytes) went in 50-byte pieces; the failure cut it after 100 bytes.
        assert_eq!(lines.len(), 2, "{text:?}");
        assert_eq!(lines[0], &line(1)[..100], "the cut line is ended, not glued to the next");
        assert_eq!(format!("{}\n", lines[1]), line(2), "the next batch is whole");
    }

    /// A line longer than the whole queue still goes through, alone, into an empty queue.
    #[test]
    fn a_line_longer_than_the_queue_is_written_alone() {
        let sink = Recorder::default();
        let (writer, guard) = spawn(sink.clone()).unwrap();
        let big = vec![b'x'; SOFT_LIMIT + 10];
        writer.make_writer().write_all(b"before\n").unwrap();
        while !writer.0.lock().bytes.is_empty() {
            std::thread::yield_now();
        }
        writer.make_writer().write_all(&big).unwrap();
        // Behind it, a line waits for the big one to leave the queue, or is dropped: no wait.
        while !writer.0.lock().bytes.is_empty() {
            std::thread::yield_now();
        }
        writer.make_writer().write_all(b"after\n").unwrap();
        drop(guard);
        let all = sink.0.lock().unwrap().concat();
        assert_eq!(all.len(), 7 + big.len() + 6);
        assert!(all.starts_with(b"before\n") && all.ends_with(b"after\n"));
    }
}
