//! The tickets' embedded store: one SQLite file (rusqlite, its library bundled) on one writer
//! thread. WAL, `synchronous=FULL`: a commit is on disk when it returns. Work arrives on a
//! bounded channel; the thread takes what is waiting (up to [`GROUP`] jobs) into one
//! transaction, each job under a savepoint of its own (a job that fails is rolled back alone),
//! and answers each job only once the transaction is committed: a caller never reads a result
//! that is not on disk, and a group of concurrent draws costs one fsync, not one each.
//!
//! A full channel, a thread that is gone or a commit that fails is [`StoreError`]: the caller
//! answers 503 and nothing of the job is kept (SQLite's commit either happened or not; there is
//! no acknowledgement to lose between this thread and the file). A job whose caller has stopped
//! waiting (its deadline passed while it was queued) is not run; one already running ends as
//! it would, and a read queued after it ([`TicketStore::settled`]) sees what it kept: the
//! thread takes jobs in the order they came.
//!
//! One file is one replica's: a fleet shares PostgreSQL ([`super::postgres`]) instead.

use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use futures_util::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use super::store::{Kept, Refused, StoreError, TicketStore, Use};
use super::ticket::{Bound, Ticket, TicketKind};

/// Jobs committed together at most.
const GROUP: usize = 64;
/// Jobs waiting for the thread at most (past it: [`StoreError`] at once, never a queue that
/// grows while the disk is slow).
const QUEUE: usize = 1024;

/// A job: run against the connection inside the group's transaction, saying whether it
/// succeeded (else its savepoint is rolled back), then told whether the transaction was
/// committed.
type Job = Box<dyn FnOnce(&Connection) -> (bool, Reply) + Send>;

/// A job's reply, given whether its transaction was committed.
type Reply = Box<dyn FnOnce(bool) + Send>;

/// The store's handle: the sending end of the writer thread's channel.
#[derive(Debug, Clone)]
pub struct Sqlite {
    jobs: SyncSender<Job>,
}

impl Sqlite {
    /// Opens (or creates, mode 0600) the file at `path`, with its schema, and starts the writer
    /// thread. Also the store's secret ([`secret`]), made from `fresh` the first time.
    ///
    /// # Errors
    /// The file cannot be opened or created, or its schema not made.
    pub fn open(path: &Path, fresh: &[u8]) -> anyhow::Result<(Sqlite, Vec<u8>)> {
        create_private(path)?;
        let connection = Connection::open(path)?;
        // Another process that holds the file a moment (a backup, the replica being replaced)
        // is waited for, not an error.
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        let mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        anyhow::ensure!(mode.eq_ignore_ascii_case("wal"), "{}: journal_mode stays {mode}", path.display());
        connection.execute_batch(SCHEMA)?;
        connection.execute(SERIALS_FROM_NOW, [super::store::serials_floor()])?;
        bind_rounds(&connection)?;
        let secret = secret(&connection, fresh)?;
        anyhow::ensure!(
            secret.len() >= 32,
            "{}: its secret is {} bytes, not 32",
            path.display(),
            secret.len()
        );
        let (jobs, queue) = sync_channel::<Job>(QUEUE);
        std::thread::Builder::new()
            .name("drbgd-tickets".into())
            .spawn(move || writer(&connection, &queue))?;
        Ok((Sqlite { jobs }, secret))
    }

    /// `job`'s answer, once the transaction it ran in is committed.
    ///
    /// # Errors
    /// [`StoreError`]: the queue full, the thread gone, the job's SQL or the commit failed.
    pub async fn call<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let run: Job = Box::new(move |connection| {
            // Nobody waits for it: not run (a use whose caller was answered 503 stays unused).
            if reply.is_closed() {
                return (false, Box::new(|_| {}) as Reply);
            }
            let done = job(connection);
            let ok = done.is_ok();
            let reply: Reply = Box::new(move |committed| {
                let _ = reply.send(done.ok().filter(|_| committed));
            });
            (ok, reply)
        });
        self.jobs.try_send(run).map_err(|e| match e {
            TrySendError::Full(_) | TrySendError::Disconnected(_) => StoreError::Unavailable,
        })?;
        // The writer answers every job it takes, after its commit or rollback: no answer lost.
        answer.await.ok().flatten().ok_or(StoreError::Unavailable)
    }
}

/// Creates `path` empty with mode 0600 if it does not exist (SQLite would make it 0644).
fn create_private(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(anyhow::anyhow!("{}: {e}", path.display())),
    }
}

/// The writer thread: groups of jobs, one transaction each, until every handle is dropped.
fn writer(connection: &Connection, queue: &Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        while group.len() < GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        // A transaction left open (a rollback that failed) would refuse every BEGIN from now on.
        if !connection.is_autocommit() && connection.execute_batch("ROLLBACK").is_err() {
            tracing::error!("the tickets' store is stuck in a transaction it cannot roll back");
        }
        if connection.execute_batch("BEGIN IMMEDIATE").is_err() {
            tracing::error!(
                "the tickets' store could not begin a transaction; the group's jobs are answered 503"
            );
            // Not run: a job runs inside a transaction or not at all (dropped, its caller sees
            // the store unavailable).
            drop(group);
            continue;
        }
        let mut replies = Vec::with_capacity(group.len());
        let mut whole = true;
        for job in group {
            match savepoint(connection, job) {
                Some(reply) => replies.push(reply),
                // The transaction is no longer whole (a rollback that failed, or one SQLite
                // made itself: a full disk, an I/O error): nothing of the group is kept.
                None => {
                    whole = false;
                    break;
                }
            }
        }
        let committed = whole && connection.execute_batch("COMMIT").is_ok();
        if !committed {
            tracing::error!("the tickets' store did not commit; the group's jobs are answered 503");
            if !connection.is_autocommit() {
                let _ = connection.execute_batch("ROLLBACK");
            }
        }
        for reply in replies {
            reply(committed);
        }
    }
}

/// `job` under a savepoint of its own: kept when it succeeds, rolled back alone when it fails
/// or panics (its reply then says so whatever the commit). `None` when the group's transaction
/// is no longer whole after it: every job of the group is then refused.
fn savepoint(connection: &Connection, job: Job) -> Option<Reply> {
    connection.execute_batch("SAVEPOINT job").ok()?;
    let (ok, reply) = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(connection))) {
        Ok(done) => done,
        Err(_) => {
            tracing::error!("panic in a job of the tickets' store; the job is answered 503");
            (false, Box::new(|_| {}) as Reply)
        }
    };
    // SQLite rolls a whole transaction back itself on some errors (SQLITE_FULL, IOERR, NOMEM):
    // the connection is then in autocommit, and nothing more may run as part of this group.
    if connection.is_autocommit() {
        reply(false);
        return None;
    }
    if ok && connection.execute_batch("RELEASE job").is_ok() {
        return Some(reply);
    }
    if connection.execute_batch("ROLLBACK TO job; RELEASE job").is_err() || connection.is_autocommit() {
        reply(false);
        return None;
    }
    Some(Box::new(move |_| reply(false)))
}

/// Tickets and the results kept for them.
const SCHEMA: &str = "
PRAGMA synchronous = FULL;
CREATE TABLE IF NOT EXISTS tickets (
    id TEXT PRIMARY KEY,
    caller TEXT NOT NULL,
    show_result INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER,
    previous_id TEXT,
    next_id TEXT,
    used_ms INTEGER,
    digest BLOB,
    serial TEXT,
    revealed INTEGER NOT NULL DEFAULT 0,
    round INTEGER,
    draw TEXT,
    commitment BLOB,
    label TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS tickets_by_caller ON tickets (caller, id);
CREATE INDEX IF NOT EXISTS tickets_unused ON tickets (caller) WHERE used_ms IS NULL;
CREATE TABLE IF NOT EXISTS results (
    serial TEXT PRIMARY KEY,
    caller TEXT NOT NULL,
    ticket_id TEXT UNIQUE,
    created_ms INTEGER NOT NULL,
    body BLOB NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS results_by_age ON results (created_ms);
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS serials (
    name TEXT PRIMARY KEY,
    last INTEGER NOT NULL
) STRICT;
";

/// The serial counter raised to at least now in microseconds, as the store opens: a new file,
/// or one restored from a backup, never gives a number the same signing key signed before.
const SERIALS_FROM_NOW: &str = "INSERT INTO serials (name, last) VALUES ('randomorg', ?1) \
     ON CONFLICT (name) DO UPDATE SET last = max(last, excluded.last)";

/// The columns of tickets bound to a beacon round, added to a file made before them (each is
/// null on the tickets of that time, which are bound to none).
const ROUND_COLUMNS: [(&str, &str); 4] =
    [("round", "INTEGER"), ("draw", "TEXT"), ("commitment", "BLOB"), ("label", "TEXT")];

/// Adds [`ROUND_COLUMNS`] to a tickets table that lacks them, and the index that keeps a label
/// to one bound ticket a caller, in one transaction (another process opening the file at the
/// same moment waits for it, then finds them).
fn bind_rounds(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch("BEGIN IMMEDIATE")?;
    let added = (|| {
        let mut statement = connection.prepare("SELECT name FROM pragma_table_info('tickets')")?;
        let names =
            statement.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
        for (name, kind) in ROUND_COLUMNS {
            if !names.iter().any(|n| n == name) {
                connection.execute_batch(&format!("ALTER TABLE tickets ADD COLUMN {name} {kind}"))?;
            }
        }
        connection.execute_batch(
            "DROP INDEX IF EXISTS tickets_by_label; \
             CREATE UNIQUE INDEX IF NOT EXISTS tickets_by_label_key ON tickets (caller, lower(label)) \
             WHERE label IS NOT NULL",
        )
    })();
    match added {
        Ok(()) => connection.execute_batch("COMMIT"),
        Err(e) => {
            let _ = connection.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// The columns of a ticket, in [`ticket_of`]'s order.
const TICKET_COLUMNS: &str = "t.id, t.caller, t.show_result, t.created_ms, t.expires_ms, t.previous_id, \
     t.next_id, t.used_ms, t.serial, t.revealed, r.body, t.digest, t.round, t.draw, t.commitment, t.label";

/// The ticket with id `id`, its kept result joined.
fn ticket(connection: &Connection, id: &str) -> rusqlite::Result<Option<Ticket>> {
    let sql = format!(
        "SELECT {TICKET_COLUMNS} FROM tickets t LEFT JOIN results r ON r.serial = t.serial WHERE t.id = ?1"
    );
    connection.query_row(&sql, [id], ticket_of).optional()
}

/// A row of [`TICKET_COLUMNS`] as a ticket.
fn ticket_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<Ticket> {
    Ok(Ticket {
        id: row.get(0)?,
        caller: row.get(1)?,
        show_result: row.get::<_, i64>(2)? != 0,
        created_ms: row.get(3)?,
        expires_ms: row.get(4)?,
        previous_id: row.get(5)?,
        next_id: row.get(6)?,
        used_ms: row.get(7)?,
        serial: row.get(8)?,
        revealed: row.get::<_, i64>(9)? != 0,
        result: row.get(10)?,
        digest: row.get(11)?,
        bound: Bound::of_columns(row.get(12)?, row.get(13)?, row.get(14)?, row.get(15)?),
    })
}

/// The store's own secret, made from `fresh` the first time (what caller hashes are keyed with,
/// the same across restarts).
fn secret(connection: &Connection, fresh: &[u8]) -> rusqlite::Result<Vec<u8>> {
    connection.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('caller_hash_key', ?1)", [fresh])?;
    connection.query_row("SELECT value FROM meta WHERE name = 'caller_hash_key'", [], |r| r.get(0))
}

/// Unused, unexpired tickets `caller` holds at `now`.
fn unused(connection: &Connection, caller: &str, now: i64) -> rusqlite::Result<u64> {
    connection
        .query_row(
            "SELECT count(*) FROM tickets WHERE caller = ?1 AND used_ms IS NULL \
         AND (expires_ms IS NULL OR expires_ms > ?2)",
            params![caller, now],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| u64::try_from(n).unwrap_or(0))
}

/// Inserts a new, unused ticket.
fn insert(connection: &Connection, t: &Ticket) -> rusqlite::Result<()> {
    connection.execute(
        "INSERT INTO tickets (id, caller, show_result, created_ms, expires_ms, previous_id, round, draw, \
         commitment, label) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            t.id,
            t.caller,
            i64::from(t.show_result),
            t.created_ms,
            t.expires_ms,
            t.previous_id,
            t.bound.as_ref().map(|b| i64::try_from(b.round).unwrap_or(i64::MAX)),
            t.bound.as_ref().map(|b| &b.draw),
            t.bound.as_ref().map(|b| &b.commitment),
            t.bound.as_ref().map(|b| &b.label),
        ],
    )?;
    Ok(())
}

/// The tickets of `caller` of `kind`, ids after `after`, `limit` of them at most, by id.
fn list(
    connection: &Connection,
    caller: &str,
    kind: TicketKind,
    after: &str,
    limit: u32,
) -> rusqlite::Result<Vec<Ticket>> {
    let shape = match kind {
        TicketKind::Singleton => "t.previous_id IS NULL AND t.next_id IS NULL",
        TicketKind::Head => "t.previous_id IS NULL AND t.next_id IS NOT NULL",
        TicketKind::Tail => "t.previous_id IS NOT NULL AND t.next_id IS NULL",
    };
    // A page shows no results (they are fetched one at a time): no answer is read for it.
    let columns = TICKET_COLUMNS.replace("r.body", "NULL").replace("t.digest", "NULL");
    let sql = format!(
        "SELECT {columns} FROM tickets t LEFT JOIN results r ON r.serial = t.serial \
         WHERE t.caller = ?1 AND t.id > ?2 AND {shape} ORDER BY t.id LIMIT ?3"
    );
    let mut statement = connection.prepare(&sql)?;
    statement.query_map(params![caller, after, limit], ticket_of)?.collect()
}

impl TicketStore for Sqlite {
    fn create(
        &self,
        tickets: Vec<Ticket>,
        max_unused: u64,
        now: i64,
    ) -> BoxFuture<'_, Result<Option<Refused>, StoreError>> {
        Box::pin(self.call(move |c| {
            let Some(caller) = tickets.first().map(|t| t.caller.clone()) else { return Ok(None) };
            let held = unused(c, &caller, now)?;
            if held + tickets.len() as u64 > max_unused {
                return Ok(Some(Refused::TooMany(held)));
            }
            for label in tickets.iter().filter_map(|t| t.bound.as_ref()).map(|b| &b.label) {
                let taken: i64 = c.query_row(
                    "SELECT count(*) FROM tickets WHERE caller = ?1 AND label IS NOT NULL \
                     AND lower(label) = lower(?2)",
                    params![caller, label],
                    |r| r.get(0),
                )?;
                if taken > 0 {
                    return Ok(Some(Refused::LabelTaken(label.clone())));
                }
            }
            tickets.iter().try_for_each(|t| insert(c, t))?;
            Ok(None)
        }))
    }

    fn find(&self, id: String) -> BoxFuture<'_, Result<Option<Ticket>, StoreError>> {
        Box::pin(self.call(move |c| ticket(c, &id)))
    }

    fn settle(
        &self,
        used: Use,
        now: i64,
        next_expires: Option<i64>,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(self.call(move |c| {
            // Unused, the caller's, and not expired (a draw that crossed its expiry keeps
            // nothing: the ticket is then found expired).
            let marked = c.execute(
                "UPDATE tickets SET used_ms = ?2, digest = ?3, serial = ?4, next_id = ?5 \
                 WHERE id = ?1 AND caller = ?6 AND used_ms IS NULL AND (expires_ms IS NULL OR expires_ms > ?2)",
                params![used.id, now, used.digest, used.serial, used.next_id, used.caller],
            )?;
            if marked == 0 {
                return Ok(false);
            }
            c.execute(
                "INSERT INTO results (serial, caller, ticket_id, created_ms, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![used.serial, used.caller, used.id, now, used.result],
            )?;
            c.execute(
                "INSERT INTO tickets (id, caller, show_result, created_ms, expires_ms, previous_id) \
                 SELECT ?1, caller, show_result, ?2, ?3, id FROM tickets WHERE id = ?4",
                params![used.next_id, now, next_expires, used.id],
            )?;
            Ok(true)
        }))
    }

    fn settled(&self, id: String) -> BoxFuture<'_, Result<Option<Ticket>, StoreError>> {
        // Queued after any use of it: read once that use is committed or rolled back.
        self.find(id)
    }

    fn reveal(&self, id: String) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.call(move |c| {
            c.execute(
                "WITH RECURSIVE chain(id) AS (SELECT ?1 UNION SELECT t.previous_id FROM tickets t \
                 JOIN chain ON t.id = chain.id WHERE t.previous_id IS NOT NULL) \
                 UPDATE tickets SET revealed = 1 WHERE id IN chain AND used_ms IS NOT NULL \
                 AND show_result = 0 AND revealed = 0",
                [id],
            )
            .map(|n| n as u64)
        }))
    }

    fn list(
        &self,
        caller: String,
        kind: TicketKind,
        after: String,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<Ticket>, StoreError>> {
        Box::pin(self.call(move |c| list(c, &caller, kind, &after, limit)))
    }

    fn result(&self, caller: String, serial: String) -> BoxFuture<'_, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(self.call(move |c| {
            c.query_row("SELECT body FROM results WHERE serial = ?1 AND caller = ?2", [serial, caller], |r| {
                r.get(0)
            })
            .optional()
        }))
    }

    fn keep(&self, kept: Kept, now: i64) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.call(move |c| {
            c.execute(
                "INSERT INTO results (serial, caller, created_ms, body) VALUES (?1, ?2, ?3, ?4)",
                params![kept.serial, kept.caller, now, kept.result],
            )
            .map(drop)
        }))
    }

    fn next_serial(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.call(|c| {
            c.query_row(
                "INSERT INTO serials (name, last) VALUES ('randomorg', 1) \
                 ON CONFLICT (name) DO UPDATE SET last = last + 1 RETURNING last",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
        }))
    }

    fn sweep(&self, before: i64, batch: u32) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.call(move |c| {
            c.execute(
                "DELETE FROM results WHERE serial IN \
                 (SELECT serial FROM results WHERE created_ms < ?1 LIMIT ?2)",
                params![before, batch],
            )
            .map(|n| n as u64)
        }))
    }

    fn size(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.call(|c| {
            // Free pages (a sweep's) are reused before the file grows: not counted.
            let pages: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            let free: i64 = c.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
            let size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0))?;
            Ok(u64::try_from((pages - free).saturating_mul(size)).unwrap_or(0))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(tag: &str) -> (Sqlite, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("drbgd-sqlite-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.sqlite3");
        (Sqlite::open(&path, &[7; 32]).unwrap().0, path)
    }

    fn new_ticket(id: &str) -> Ticket {
        Ticket::new(id.into(), "alice", false, 1, None)
    }

    /// The file is its owner's alone, and its secret is made once.
    #[tokio::test]
    async fn the_file_is_private_and_its_secret_stays() {
        use std::os::unix::fs::PermissionsExt;
        let (store, path) = store("private");
        drop(store);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let (_, secret) = Sqlite::open(&path, &[9; 32]).unwrap();
        assert_eq!(secret, [7; 32], "the first secret is kept");
    }

    /// A job that fails keeps nothing of what it did before failing, and the jobs grouped with
    /// it are kept; its caller gets the store's error.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_job_is_rolled_back_alone() {
        let (store, _) = store("rollback");
        let mut calls = Vec::new();
        for i in 0..20 {
            let store = store.clone();
            calls.push(tokio::spawn(async move {
                store
                    .call(move |c| {
                        insert(c, &new_ticket(&format!("t{i}")))?;
                        if i % 4 == 0 {
                            // A second insert of the same id: the job fails after its first write.
                            insert(c, &new_ticket(&format!("t{i}")))?;
                        }
                        Ok(i)
                    })
                    .await
            }));
        }
        for (i, call) in calls.into_iter().enumerate() {
            let answer = call.await.unwrap();
            assert_eq!(answer.is_err(), i % 4 == 0, "job {i}");
        }
        let kept = store.call(|c| unused(c, "alice", 0)).await.unwrap();
        assert_eq!(kept, 15, "the 15 jobs that succeeded, none of the 5 that failed");
        let failed = store.call(|c| ticket(c, "t0").map(|t| t.is_some())).await.unwrap();
        assert!(!failed, "a failed job's first write is rolled back");
    }
}
