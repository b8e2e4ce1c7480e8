//! The tickets' fleet store: one PostgreSQL database every replica shares (`[results] store =
//! "postgres"`), through tokio-postgres, pooled by deadpool-postgres (a connection the database
//! closed, say by a restart, is dropped and replaced, not reused), TLS by rustls
//! ([`crate::tls_client`]).
//!
//! Each write is one transaction at READ COMMITTED: a ticket is used by one conditional
//! `UPDATE ... WHERE used_ms IS NULL`, which PostgreSQL's row lock serialises across replicas
//! (the second waits for the first to commit, then finds the row used and changes nothing), so
//! two replicas cannot both use one ticket, nor fork a chain. A use (the update, its result and
//! its successor) is one statement, its data-modifying parts in `WITH` clauses: one round trip,
//! atomic as a statement is, prepared once per connection. Concurrent commits share the WAL
//! flush (PostgreSQL's own group commit).
//!
//! The schema (tables `drbgd_tickets`, `drbgd_results`, `drbgd_meta`) is created at start-up
//! under an advisory lock, so replicas starting together do not race; its version is kept in
//! `drbgd_meta`, and a database a newer drbgd has migrated is refused rather than written with
//! an older meaning.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use futures_util::future::BoxFuture;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::store::{Kept, Refused, StoreError, TicketStore, Use};
use super::ticket::{Bound, Ticket, TicketKind};
use crate::config::results::ResultsSettings;

/// The schema's version this build writes.
const SCHEMA_VERSION: i64 = 2;
/// The advisory lock key schema changes are made under (any constant; "drbgd" in ASCII).
const SCHEMA_LOCK: i64 = 0x64_7262_6764;
/// How long start-up waits for the database.
const START_WITHIN: Duration = Duration::from_secs(30);

/// The schema, version 2 (version 1 had no `round`, `draw`, `commitment`, `label`:
/// [`BIND_ROUNDS`]; and [`LABEL_INDEX`]).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS drbgd_tickets (
    id TEXT PRIMARY KEY,
    caller TEXT NOT NULL,
    show_result BOOLEAN NOT NULL,
    created_ms BIGINT NOT NULL,
    expires_ms BIGINT,
    previous_id TEXT,
    next_id TEXT,
    used_ms BIGINT,
    digest BYTEA,
    serial TEXT,
    revealed BOOLEAN NOT NULL DEFAULT FALSE,
    round BIGINT,
    draw TEXT,
    commitment BYTEA,
    label TEXT
);
CREATE INDEX IF NOT EXISTS drbgd_tickets_by_caller ON drbgd_tickets (caller, id);
CREATE INDEX IF NOT EXISTS drbgd_tickets_unused ON drbgd_tickets (caller) WHERE used_ms IS NULL;
CREATE TABLE IF NOT EXISTS drbgd_results (
    serial TEXT PRIMARY KEY,
    caller TEXT NOT NULL,
    ticket_id TEXT UNIQUE,
    created_ms BIGINT NOT NULL,
    body BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS drbgd_results_by_age ON drbgd_results (created_ms);
CREATE TABLE IF NOT EXISTS drbgd_meta (
    name TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS drbgd_randomorg_serial;
";

/// Version 1 to 2: tickets bound to a beacon round (null on the tickets before, bound to none).
const BIND_ROUNDS: &str = "
ALTER TABLE drbgd_tickets ADD COLUMN IF NOT EXISTS round BIGINT;
ALTER TABLE drbgd_tickets ADD COLUMN IF NOT EXISTS draw TEXT;
ALTER TABLE drbgd_tickets ADD COLUMN IF NOT EXISTS commitment BYTEA;
ALTER TABLE drbgd_tickets ADD COLUMN IF NOT EXISTS label TEXT;
UPDATE drbgd_meta SET value = decode('0000000000000002', 'hex') WHERE name = 'schema_version';
";

/// One bound ticket a label per caller (made once the columns of version 2 are there, on a
/// database made at version 2 or migrated to it).
const LABEL_INDEX: &str = "DROP INDEX IF EXISTS drbgd_tickets_by_label; \
     CREATE UNIQUE INDEX IF NOT EXISTS drbgd_tickets_by_label_key ON drbgd_tickets \
     (caller, lower(label COLLATE \"C\")) WHERE label IS NOT NULL";

/// The columns of a ticket, in [`ticket_of`]'s order (`r`: its kept result).
const TICKET_COLUMNS: &str = "t.id, t.caller, t.show_result, t.created_ms, t.expires_ms, t.previous_id, \
     t.next_id, t.used_ms, t.serial, t.revealed, r.body, t.digest, t.round, t.draw, t.commitment, t.label";

/// The store's handle: a pool of connections.
#[derive(Clone)]
pub struct Postgres {
    pool: Pool,
}

/// Shows the pool's size, never the connection's settings (they hold the password).
impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").field("max_size", &self.pool.status().max_size).finish_non_exhaustive()
    }
}

/// Logs a store error (never its parameters) and makes it a [`StoreError`]: the server's own
/// error is a statement refused or rolled back ([`StoreError::Unavailable`]); any other (a
/// connection that broke, while the statement was perhaps done) is [`StoreError::Unknown`], and
/// so is the server's word that the session itself is ending (severity FATAL or PANIC, class 57
/// "operator intervention", class 08 "connection exception"): a backend that notices its
/// postmaster gone says `57P01` even when the COMMIT it was running is already on disk (a CI
/// run of `ticket-crash.py` saw such a use answered 503 `store_unavailable`, then kept).
fn failed(op: &'static str) -> impl FnOnce(tokio_postgres::Error) -> StoreError {
    move |e| {
        tracing::warn!(op, error = %e, "the tickets' PostgreSQL store failed");
        match e.as_db_error() {
            Some(db) if session_ended(db) => StoreError::Unknown,
            Some(_) => StoreError::Unavailable,
            None => StoreError::Unknown,
        }
    }
}

/// Whether `db` says the session is ending rather than that a statement was refused.
fn session_ended(db: &tokio_postgres::error::DbError) -> bool {
    let class = db.code().code().get(..2);
    matches!(db.severity(), "FATAL" | "PANIC") || matches!(class, Some("57" | "08"))
}

impl Postgres {
    /// Connects to the database of `settings` (within [`START_WITHIN`], retrying), creates or
    /// checks its schema, and reads the store's secret (made from `fresh` the first time).
    ///
    /// # Errors
    /// The URL, password or CA file; no database within the deadline; a schema of a newer
    /// drbgd.
    pub async fn open(settings: &ResultsSettings, fresh: &[u8]) -> anyhow::Result<(Postgres, Vec<u8>)> {
        let mut config = settings.postgres_config()?;
        // TLS is `sslmode=require`'s, verified; anything else is a plain connection: never an
        // unverified TLS one, and not tokio-postgres' `prefer` (its default), which tries TLS
        // and fails, without falling back, on a certificate it cannot verify.
        if config.get_ssl_mode() != tokio_postgres::config::SslMode::Require {
            config.ssl_mode(tokio_postgres::config::SslMode::Disable);
        }
        if let Some(password) = settings.password()? {
            config.password(password.as_bytes());
        }
        let timeout = Duration::from_millis(settings.timeout_ms);
        config.application_name("drbgd").connect_timeout(timeout.max(Duration::from_secs(1)));
        bound(&mut config, timeout);
        let tls = tokio_postgres_rustls::MakeRustlsConnect::new(crate::tls_client::client_config(
            settings.ca_file(),
            "results.ca_file",
        )?);
        let manager =
            Manager::from_config(config, tls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(settings.pool_size as usize)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout.max(Duration::from_secs(1))))
            .build()?;
        let store = Postgres { pool };
        let deadline = tokio::time::Instant::now() + START_WITHIN;
        loop {
            match store.prepare(fresh).await {
                Ok(secret) => return Ok((store, secret)),
                Err(e) if tokio::time::Instant::now() < deadline && not_up_yet(&e) => {
                    tracing::warn!(error = %e, "the tickets' PostgreSQL store is not ready; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e.context("the tickets' PostgreSQL store")),
            }
        }
    }

    /// The schema created (or found at this version) and the secret read, in one transaction
    /// under the schema lock.
    async fn prepare(&self, fresh: &[u8]) -> anyhow::Result<Vec<u8>> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // A migration waits for the table (replicas of before still serve from it) and builds an
        // index over all of it: not within one statement's usual bound. A replica that waits
        // for another's migration past the lock bound starts again (within START_WITHIN).
        tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = '20s'").await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await?;
        tx.batch_execute(SCHEMA).await?;
        // The serial sequence raised to at least now in microseconds: a new database, or one
        // restored from a backup, never gives a number the same signing key signed before.
        tx.execute(
            "SELECT setval('drbgd_randomorg_serial', \
             greatest((SELECT last_value FROM drbgd_randomorg_serial), $1::bigint))",
            &[&super::store::serials_floor()],
        )
        .await?;
        tx.execute(
            "INSERT INTO drbgd_meta (name, value) VALUES ('schema_version', $1) ON CONFLICT (name) DO NOTHING",
            &[&SCHEMA_VERSION.to_be_bytes().as_slice()],
        )
        .await?;
        let version: Vec<u8> =
            tx.query_one("SELECT value FROM drbgd_meta WHERE name = 'schema_version'", &[]).await?.get(0);
        let version = <[u8; 8]>::try_from(version.as_slice()).map(i64::from_be_bytes).unwrap_or(i64::MAX);
        // A version 2 database made by a build of before `label` (one day's) lacks it too.
        let labelled: i64 = tx
            .query_one(
                "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() \
                 AND table_name = 'drbgd_tickets' AND column_name = 'label'",
                &[],
            )
            .await?
            .get(0);
        if version == 1 || (version == SCHEMA_VERSION && labelled == 0) {
            tx.batch_execute(BIND_ROUNDS).await?;
            tracing::info!(
                "the tickets' PostgreSQL schema migrated from version 1 to 2 (tickets bound to a round)"
            );
        } else if version != SCHEMA_VERSION {
            return Err(Newer(version).into());
        }
        tx.batch_execute(LABEL_INDEX).await?;
        tx.execute(
            "INSERT INTO drbgd_meta (name, value) VALUES ('caller_hash_key', $1) ON CONFLICT (name) DO NOTHING",
            &[&fresh],
        )
        .await?;
        let secret: Vec<u8> =
            tx.query_one("SELECT value FROM drbgd_meta WHERE name = 'caller_hash_key'", &[]).await?.get(0);
        tx.commit().await?;
        anyhow::ensure!(secret.len() >= 32, "its secret is {} bytes, not 32", secret.len());
        Ok(secret)
    }

    /// A pooled connection.
    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(|e| {
            tracing::warn!(error = %e, "no connection to the tickets' PostgreSQL store");
            StoreError::Unavailable
        })
    }

    /// Rows of `sql` with `params`, on a pooled connection (one statement: its own
    /// transaction), the statement prepared once per connection.
    async fn query(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await.map_err(failed(op))?;
        client.query(&statement, params).await.map_err(failed(op))
    }

    /// Rows changed by `sql` with `params`, as [`Postgres::query`].
    async fn execute(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await.map_err(failed(op))?;
        client.execute(&statement, params).await.map_err(failed(op))
    }

    async fn create_tickets(
        &self,
        tickets: Vec<Ticket>,
        max_unused: u64,
        now: i64,
    ) -> Result<Option<Refused>, StoreError> {
        let Some(caller) = tickets.first().map(|t| t.caller.clone()) else { return Ok(None) };
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(failed("create"))?;
        // One caller's creations one after the other (the count and the inserts must see the
        // same tickets, on every replica).
        tx.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &[&caller])
            .await
            .map_err(failed("create"))?;
        let held: i64 = tx
            .query_one(
                "SELECT count(*) FROM drbgd_tickets WHERE caller = $1 AND used_ms IS NULL \
                 AND (expires_ms IS NULL OR expires_ms > $2)",
                &[&caller, &now],
            )
            .await
            .map_err(failed("create"))?
            .get(0);
        let held = u64::try_from(held).unwrap_or(0);
        if held + tickets.len() as u64 > max_unused {
            return Ok(Some(Refused::TooMany(held)));
        }
        // Under the caller's lock: no other creation of its can take the label meanwhile.
        for label in tickets.iter().filter_map(|t| t.bound.as_ref()).map(|b| &b.label) {
            let taken: i64 = tx
                .query_one(
                    "SELECT count(*) FROM drbgd_tickets WHERE caller = $1 AND label IS NOT NULL \
                     AND lower(label COLLATE \"C\") = lower($2 COLLATE \"C\")",
                    &[&caller, label],
                )
                .await
                .map_err(failed("create"))?
                .get(0);
            if taken > 0 {
                return Ok(Some(Refused::LabelTaken(label.clone())));
            }
        }
        for t in &tickets {
            tx.execute(
                "INSERT INTO drbgd_tickets (id, caller, show_result, created_ms, expires_ms, previous_id, \
                 round, draw, commitment, label) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    &t.id,
                    &t.caller,
                    &t.show_result,
                    &t.created_ms,
                    &t.expires_ms,
                    &t.previous_id,
                    &t.bound.as_ref().map(|b| i64::try_from(b.round).unwrap_or(i64::MAX)),
                    &t.bound.as_ref().map(|b| b.draw.as_str()),
                    &t.bound.as_ref().map(|b| b.commitment.as_slice()),
                    &t.bound.as_ref().map(|b| b.label.as_str()),
                ],
            )
            .await
            .map_err(failed("create"))?;
        }
        tx.commit().await.map_err(failed("create"))?;
        Ok(None)
    }

    async fn settle_use(&self, used: Use, now: i64, next_expires: Option<i64>) -> Result<bool, StoreError> {
        let params: [&(dyn ToSql + Sync); 8] = [
            &used.id,
            &now,
            &used.digest,
            &used.serial,
            &used.next_id,
            &used.caller,
            &used.result,
            &next_expires,
        ];
        let rows = self.query("settle", SETTLE, &params).await?;
        let kept: i64 = rows.first().map_or(0, |r| r.get(0));
        Ok(kept == 1)
    }
}

/// A use, kept in one statement: the ticket marked used (only if unused, the caller's and not
/// expired at `$2`), its result stored and its successor created from the marked row; how many
/// were marked (1, or 0: used or expired already, and nothing kept). Every `WITH` part runs
/// whether read or not; they are read all the same.
const SETTLE: &str = "WITH used AS ( \
       UPDATE drbgd_tickets SET used_ms = $2, digest = $3, serial = $4, next_id = $5 \
       WHERE id = $1 AND caller = $6 AND used_ms IS NULL AND (expires_ms IS NULL OR expires_ms > $2) \
       RETURNING id, caller, show_result), \
     kept AS ( \
       INSERT INTO drbgd_results (serial, caller, ticket_id, created_ms, body) \
       SELECT $4, caller, id, $2, $7 FROM used RETURNING ticket_id), \
     successor AS ( \
       INSERT INTO drbgd_tickets (id, caller, show_result, created_ms, expires_ms, previous_id) \
       SELECT $5, caller, show_result, $2, $8, id FROM used RETURNING previous_id) \
     SELECT count(*) FROM used JOIN kept ON kept.ticket_id = used.id \
       JOIN successor ON successor.previous_id = used.id";

/// Bounds every call on the server, not only in drbgd: a statement, or a wait for a lock, ends
/// at `timeout` (so a call abandoned at its deadline does not hold its connection or a ticket's
/// row for long, and a use still running when its answer was lost ends soon); a transaction
/// left idle ends at twice that; a peer gone silent is found by TCP keepalives and the kernel's
/// user timeout rather than after minutes of retransmission. And each statement is planned
/// with its values (`plan_cache_mode = force_custom_plan`): a prepared statement's generic plan,
/// made while a new database's tables still had no statistics (before their first
/// autoanalyze), could scan them whole, and a bench swung between 345 and 3,974 draws/s from
/// one run to the next; planned each time, ~2,650 draws/s every run (benches/README.md).
/// Options the URL set come first.
fn bound(config: &mut tokio_postgres::Config, timeout: Duration) {
    let ms = timeout.as_millis();
    let ours = format!(
        "-c statement_timeout={ms} -c lock_timeout={ms} -c idle_in_transaction_session_timeout={} \
         -c plan_cache_mode=force_custom_plan",
        2 * ms
    );
    let options = match config.get_options() {
        Some(theirs) if !theirs.is_empty() => format!("{theirs} {ours}"),
        _ => ours,
    };
    config
        .options(options)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(5))
        .keepalives_interval(Duration::from_secs(1))
        .tcp_user_timeout(timeout.max(Duration::from_secs(1)) * 2);
}

/// Whether start-up's error is a database not up yet (nothing listening, a connection cut or
/// timed out, a server still starting: retried), rather than one waiting will not mend (a
/// certificate that does not verify, a refused password, a missing database, a newer schema:
/// start-up stops at once, naming it).
fn not_up_yet(error: &anyhow::Error) -> bool {
    use std::io::ErrorKind;
    error.chain().any(|cause| {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::TimedOut
                    | ErrorKind::NotFound
            );
        }
        if let Some(pool) = cause.downcast_ref::<deadpool_postgres::PoolError>() {
            return matches!(pool, deadpool_postgres::PoolError::Timeout(_));
        }
        // 57P03: the server is starting up (or shutting down); 55P03: another replica's
        // migration held the schema lock past the lock bound.
        cause
            .downcast_ref::<tokio_postgres::Error>()
            .and_then(tokio_postgres::Error::as_db_error)
            .is_some_and(|db| {
                let code = db.code();
                code == &tokio_postgres::error::SqlState::CANNOT_CONNECT_NOW
                    || code == &tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE
            })
    })
}

/// A schema version this build does not know (a newer drbgd's).
#[derive(Debug, thiserror::Error)]
#[error(
    "its schema is version {0}, this drbgd writes version {SCHEMA_VERSION}: run the drbgd that migrated it"
)]
struct Newer(i64);

/// A row of [`TICKET_COLUMNS`] as a ticket.
fn ticket_of(row: &Row) -> Ticket {
    Ticket {
        id: row.get(0),
        caller: row.get(1),
        show_result: row.get(2),
        created_ms: row.get(3),
        expires_ms: row.get(4),
        previous_id: row.get(5),
        next_id: row.get(6),
        used_ms: row.get(7),
        serial: row.get(8),
        revealed: row.get(9),
        result: row.get(10),
        digest: row.get(11),
        bound: Bound::of_columns(row.get(12), row.get(13), row.get(14), row.get(15)),
    }
}

impl TicketStore for Postgres {
    fn create(
        &self,
        tickets: Vec<Ticket>,
        max_unused: u64,
        now: i64,
    ) -> BoxFuture<'_, Result<Option<Refused>, StoreError>> {
        Box::pin(self.create_tickets(tickets, max_unused, now))
    }

    fn find(&self, id: String) -> BoxFuture<'_, Result<Option<Ticket>, StoreError>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT {TICKET_COLUMNS} FROM drbgd_tickets t LEFT JOIN drbgd_results r ON r.serial = t.serial \
                 WHERE t.id = $1"
            );
            Ok(self.query("find", &sql, &[&id]).await?.first().map(ticket_of))
        })
    }

    fn settle(
        &self,
        used: Use,
        now: i64,
        next_expires: Option<i64>,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(self.settle_use(used, now, next_expires))
    }

    fn settled(&self, id: String) -> BoxFuture<'_, Result<Option<Ticket>, StoreError>> {
        Box::pin(async move {
            // FOR SHARE waits for the row lock of a use still in progress on another connection
            // (its statement bounded by statement_timeout), then reads what it kept.
            let sql = format!(
                "SELECT {TICKET_COLUMNS} FROM drbgd_tickets t LEFT JOIN drbgd_results r ON r.serial = t.serial \
                 WHERE t.id = $1 FOR SHARE OF t"
            );
            Ok(self.query("settled", &sql, &[&id]).await?.first().map(ticket_of))
        })
    }

    fn reveal(&self, id: String) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let sql = "WITH RECURSIVE chain(id) AS (SELECT $1::TEXT UNION SELECT t.previous_id FROM drbgd_tickets t \
                 JOIN chain ON t.id = chain.id WHERE t.previous_id IS NOT NULL) \
                 UPDATE drbgd_tickets SET revealed = TRUE WHERE id IN (SELECT id FROM chain) \
                 AND used_ms IS NOT NULL AND NOT show_result AND NOT revealed";
            self.execute("reveal", sql, &[&id]).await
        })
    }

    fn list(
        &self,
        caller: String,
        kind: TicketKind,
        after: String,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<Ticket>, StoreError>> {
        Box::pin(async move {
            let shape = match kind {
                TicketKind::Singleton => "t.previous_id IS NULL AND t.next_id IS NULL",
                TicketKind::Head => "t.previous_id IS NULL AND t.next_id IS NOT NULL",
                TicketKind::Tail => "t.previous_id IS NOT NULL AND t.next_id IS NULL",
            };
            // A page shows no results (they are fetched one at a time): no answer is read for it.
            let columns = TICKET_COLUMNS.replace("r.body", "NULL::BYTEA").replace("t.digest", "NULL::BYTEA");
            let sql = format!(
                "SELECT {columns} FROM drbgd_tickets t \
                 WHERE t.caller = $1 AND t.id > $2 AND {shape} ORDER BY t.id LIMIT $3"
            );
            let rows = self.query("list", &sql, &[&caller, &after, &i64::from(limit)]).await?;
            Ok(rows.iter().map(ticket_of).collect())
        })
    }

    fn result(&self, caller: String, serial: String) -> BoxFuture<'_, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            let sql = "SELECT body FROM drbgd_results WHERE serial = $1 AND caller = $2";
            Ok(self.query("result", sql, &[&serial, &caller]).await?.first().map(|r| r.get(0)))
        })
    }

    fn keep(&self, kept: Kept, now: i64) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let sql = "INSERT INTO drbgd_results (serial, caller, created_ms, body) VALUES ($1, $2, $3, $4)";
            self.execute("keep", sql, &[&kept.serial, &kept.caller, &now, &kept.result]).await.map(drop)
        })
    }

    fn next_serial(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let rows = self.query("serial", "SELECT nextval('drbgd_randomorg_serial')", &[]).await?;
            let next: i64 = rows.first().map(|r| r.get(0)).ok_or(StoreError::Unavailable)?;
            Ok(next as u64)
        })
    }

    fn sweep(&self, before: i64, batch: u32) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let sql = "DELETE FROM drbgd_results WHERE serial IN \
                 (SELECT serial FROM drbgd_results WHERE created_ms < $1 LIMIT $2)";
            self.execute("sweep", sql, &[&before, &i64::from(batch)]).await
        })
    }

    fn size(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let sql =
                "SELECT pg_total_relation_size('drbgd_tickets') + pg_total_relation_size('drbgd_results')";
            let rows = self.query("size", sql, &[]).await?;
            let bytes: i64 = rows.first().map_or(0, |r| r.get(0));
            Ok(u64::try_from(bytes).unwrap_or(0))
        })
    }
}
