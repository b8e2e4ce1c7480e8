//! The shared quota store: callers' buckets in a Redis (or Valkey) server every replica of a
//! deployment uses, through the `redis` crate's connection manager (tokio, reconnecting on its
//! own, TLS with rustls for `rediss://`; chosen over `fred` for being the protocol's reference
//! Rust client, with the smaller dependency tree at the features used here).
//!
//! What is kept there, and nothing else (no key, no certificate, no output):
//! - `<prefix>:{<caller>}:requests` and `<prefix>:{<caller>}:bytes`: a hash `{tokens, at}`
//!   per bucket. The braces are a Cluster hash tag: one caller's keys share a slot, and each
//!   script call touches one key. A key expires once its bucket would be full again (an
//!   absent key is a full bucket), so a removed or renamed caller's keys go away by themselves.
//! - `<prefix>:replicas`: a sorted set of the replicas alive (score: last heartbeat, server
//!   time in ms), apart from the callers' slots.
//!
//! Buckets refill on the store's clock (`TIME` inside the script), so the replicas' clocks do
//! not matter. Replicas exchange tokens with a bucket through [`super::lease`]: a request
//! never waits for the store.
//!
//! A call that fails (unreachable, past `quota.timeout_ms`) marks the store down on this
//! replica: quota'd requests then meet `quota.on_store_failure` until a heartbeat succeeds
//! again (every [`PROBE`] while down). A reply that is not a bucket (a key of another type, a
//! value that is not a number) sets that caller's bucket aside for [`super::lease::BROKEN`]
//! instead: its requests meet the fallback, every other caller's stay global.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::time::Instant;

use super::lease::{Exchange, Exchanged};
use super::quota::{QuotaState, Rate};
use crate::config::quota::{OnStoreFailure, QuotaStoreSettings};
use crate::metrics::QuotaStoreSeries;

/// Heartbeats while the store is up.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// Heartbeats while it is down (how soon a store that came back is used again).
pub const PROBE: Duration = Duration::from_millis(250);
/// A replica not heard from for this long is no longer counted.
pub const REPLICA_TTL: Duration = Duration::from_secs(3);

/// Refills a bucket on the store's clock, settles credit, gives back or grants tokens.
/// KEYS[1]: the bucket. ARGV: rate per second, burst, settle, want, at_least.
/// Returns {granted, level} as strings (Lua numbers would come back truncated to integers).
const EXCHANGE_LUA: &str = r"
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local settle, want, at_least = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = burst, now
if v[1] or v[2] then
  tokens, at = tonumber(v[1]), tonumber(v[2])
  local function sane(x, low, high) return x ~= nil and x == x and x >= low and x <= high end
  if not sane(tokens, -1e15, 1e300) or not sane(at, 0, 1e17) then
    return redis.error_reply('DRBGD not a quota bucket: ' .. KEYS[1])
  end
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 1000000)
end
-- From now on in any case: a bucket whose time is ahead of the store's clock (the clock was
-- stepped back) refills from now, neither for the step nor never.
at = now
tokens = math.min(burst, tokens - settle)
local granted = 0
if want > 0 and tokens >= at_least and tokens > 0 then
  granted = math.min(want, tokens)
end
tokens = tokens - granted
local ttl = math.min(math.ceil((burst - tokens) / rate * 1000) + 1000, 1e12)
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.0f', at))
redis.call('PEXPIRE', KEYS[1], string.format('%d', ttl))
return {string.format('%.17g', granted), string.format('%.17g', tokens)}
";

/// Announces this replica (or its leaving) and counts the live ones.
/// KEYS[1]: the replica set. ARGV: replica id, ttl in ms, 1 to leave.
const HEARTBEAT_LUA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
if ARGV[3] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], now, ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return redis.call('ZCARD', KEYS[1])
";

/// Which of a caller's buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Requests.
    Requests,
    /// Raw random bytes.
    Bytes,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Requests => "requests",
            Kind::Bytes => "bytes",
        }
    }
}

/// Why a store call failed (the `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Past `quota.timeout_ms`.
    Timeout,
    /// Not connected, refused, reset.
    Unavailable,
    /// An error reply or one that is not what the script returns (a key of another type).
    Reply,
}

impl Failure {
    fn label(self) -> &'static str {
        match self {
            Failure::Timeout => "timeout",
            Failure::Unavailable => "unavailable",
            Failure::Reply => "reply",
        }
    }
}

/// The shared store, as one replica sees it.
pub struct Store {
    conn: ConnectionManager,
    exchange_script: redis::Script,
    heartbeat_script: redis::Script,
    prefix: String,
    /// This replica's name in the replica set: the instance name and a random suffix, so two
    /// processes given one name are still two replicas.
    id: String,
    timeout: Duration,
    /// What quota'd requests meet while the store is down.
    pub on_failure: OnStoreFailure,
    /// The lease duration.
    pub lease_window: Duration,
    up: AtomicBool,
    replicas: AtomicU32,
    down_since: Mutex<Option<Instant>>,
    metrics: QuotaStoreSeries,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("prefix", &self.prefix).field("id", &self.id).finish_non_exhaustive()
    }
}

impl Store {
    /// A store for `settings`, not connected yet (the first call connects; an unreachable
    /// store at start-up is a fallback, not a failure to start). Starts down until the first
    /// heartbeat answers.
    ///
    /// # Errors
    /// The URL or the password file (both checked by the settings' validation already).
    pub fn new(
        settings: &QuotaStoreSettings,
        instance: &str,
        metrics: QuotaStoreSeries,
    ) -> anyhow::Result<Self> {
        let mut info = redis::IntoConnectionInfo::into_connection_info(settings.url.as_str())?;
        if let Some(password) = settings.password()? {
            let redis = info.redis_settings().clone().set_password(password.as_str());
            info = info.set_redis_settings(redis);
        }
        let client = match settings.ca_file() {
            None => redis::Client::open(info)?,
            Some(file) => {
                let root_cert = Some(std::fs::read(file)?);
                redis::Client::build_with_tls(info, redis::TlsCertificates { client_tls: None, root_cert })?
            }
        };
        let timeout = Duration::from_millis(settings.timeout_ms);
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout.max(Duration::from_millis(500))))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(PROBE);
        let conn = ConnectionManager::new_lazy_with_config(client, config)?;
        let mut suffix = [0u8; 4];
        getrandom::fill(&mut suffix).map_err(|e| anyhow::anyhow!("entropy source: {e}"))?;
        let name = if instance.is_empty() { "drbgd" } else { instance };
        metrics.up.set(0);
        Ok(Store {
            conn,
            exchange_script: redis::Script::new(EXCHANGE_LUA),
            heartbeat_script: redis::Script::new(HEARTBEAT_LUA),
            prefix: settings.prefix.clone(),
            id: format!("{name}-{}", data_encoding::HEXLOWER.encode(&suffix)),
            timeout,
            on_failure: settings.on_store_failure,
            lease_window: Duration::from_millis(settings.lease_ms),
            up: AtomicBool::new(false),
            replicas: AtomicU32::new(1),
            down_since: Mutex::new(Some(Instant::now())),
            metrics,
        })
    }

    /// Whether the store answered last.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// The deadline of each call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Replicas last seen alive (at least this one).
    pub fn replicas(&self) -> u32 {
        self.replicas.load(Ordering::Acquire).max(1)
    }

    fn key(&self, caller: &str, kind: Kind) -> String {
        format!("{}:{{{caller}}}:{}", self.prefix, kind.name())
    }

    async fn call<T: redis::FromRedisValue>(
        &self,
        op: &'static str,
        invocation: redis::ScriptInvocation<'_>,
    ) -> Result<T, Failure> {
        self.metrics.calls.with_label_values(&[op]).inc();
        let mut conn = self.conn.clone();
        let result = match tokio::time::timeout(self.timeout, invocation.invoke_async::<T>(&mut conn)).await {
            Err(_) => Err(Failure::Timeout),
            Ok(Err(e)) if e.is_timeout() => Err(Failure::Timeout),
            Ok(Err(e)) if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() => {
                Err(Failure::Unavailable)
            }
            Ok(Err(e)) => {
                tracing::warn!(op, error = %e, "quota store replied with an error");
                Err(Failure::Reply)
            }
            Ok(Ok(v)) => Ok(v),
        };
        if let Err(failure) = result {
            self.metrics.errors.with_label_values(&[op, failure.label()]).inc();
            // An error reply to an exchange is about its key (another type, not a bucket): that
            // caller's bucket is set aside, the store stays in use for the others.
            if !(op == "exchange" && failure == Failure::Reply) {
                self.down(op, failure);
            }
        }
        result
    }

    /// One exchange with `caller`'s `kind` bucket.
    ///
    /// # Errors
    /// [`Failure`]; the store is then marked down.
    pub async fn exchange(
        &self,
        caller: &str,
        kind: Kind,
        rate: Rate,
        e: Exchange,
    ) -> Result<Exchanged, Failure> {
        let mut invocation = self.exchange_script.key(self.key(caller, kind));
        invocation.arg(rate.per_second).arg(rate.burst).arg(e.settle).arg(e.want).arg(e.at_least);
        let reply: Vec<String> = self.call("exchange", invocation).await?;
        let number = |i: usize| reply.get(i).and_then(|s| s.parse::<f64>().ok()).filter(|v| v.is_finite());
        match (number(0), number(1)) {
            (Some(granted), Some(level)) if reply.len() == 2 && granted >= 0.0 => {
                Ok(Exchanged { granted, level })
            }
            _ => {
                self.metrics.errors.with_label_values(&["exchange", Failure::Reply.label()]).inc();
                tracing::warn!(
                    caller,
                    bucket = kind.name(),
                    "quota store answered something that is not a bucket"
                );
                Err(Failure::Reply)
            }
        }
    }

    /// Announces this replica (or, with `leave`, its going) and learns how many are alive.
    ///
    /// # Errors
    /// [`Failure`]; the store is then marked down. On success it is marked up.
    pub async fn heartbeat(&self, leave: bool) -> Result<u32, Failure> {
        let mut invocation = self.heartbeat_script.key(format!("{}:replicas", self.prefix));
        invocation.arg(&self.id).arg(REPLICA_TTL.as_millis() as u64).arg(if leave { "1" } else { "0" });
        let live: u32 = self.call("heartbeat", invocation).await?;
        if !leave {
            self.replicas.store(live.max(1), Ordering::Release);
            self.metrics.replicas.set(i64::from(live.max(1)));
            self.back_up();
        }
        Ok(live)
    }

    fn down(&self, op: &'static str, failure: Failure) {
        let mut since = self.down_since.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if since.is_none() {
            *since = Some(Instant::now());
            self.up.store(false, Ordering::Release);
            self.metrics.up.set(0);
            tracing::warn!(
                op,
                reason = failure.label(),
                on_store_failure = ?self.on_failure,
                "quota store unavailable: falling back"
            );
        }
    }

    fn back_up(&self) {
        let mut since = self.down_since.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = since.take() {
            self.metrics.fallback_seconds.inc_by(at.elapsed().as_secs_f64());
            self.up.store(true, Ordering::Release);
            self.metrics.up.set(1);
            tracing::info!(
                after_ms = at.elapsed().as_millis() as u64,
                "quota store reachable: quotas are global"
            );
        }
    }

    /// Counts the fallback time so far (for a scrape during a long outage).
    pub fn count_fallback(&self) {
        let mut since = self.down_since.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = since.as_mut() {
            let now = Instant::now();
            self.metrics.fallback_seconds.inc_by(now.saturating_duration_since(*at).as_secs_f64());
            *at = now;
        }
    }

    /// Starts `e` for `caller`'s `kind` lease in `state`, in the background; the lease learns
    /// the outcome. Without a runtime (never, in the server) the exchange fails at once.
    pub fn start(
        self: &Arc<Self>,
        caller: Arc<str>,
        state: Arc<QuotaState>,
        kind: Kind,
        rate: Rate,
        e: Exchange,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            state.lease(kind).failed(Instant::now());
            self.down("exchange", Failure::Unavailable);
            return;
        };
        let store = self.clone();
        runtime.spawn(async move { store.run(&caller, &state, kind, rate, e).await });
    }

    /// Carries out `e` and tells the lease, then the exchanges the lease asks for next.
    pub async fn run(&self, caller: &str, state: &QuotaState, kind: Kind, rate: Rate, e: Exchange) {
        let mut next = Some(e);
        while let Some(e) = next.take() {
            let result = self.exchange(caller, kind, rate, e).await;
            let mut lease = state.lease(kind);
            match result {
                Ok(reply) => next = lease.settled(rate, reply, Instant::now()),
                Err(Failure::Reply) => lease.broken(Instant::now()),
                Err(_) => lease.failed(Instant::now()),
            }
        }
    }
}
