//! The shared quota store ([`RedisStore`], `[quota] store = "redis"`): callers' buckets in a
//! Redis (or Valkey) server every replica of a deployment uses, through the `redis` crate's connection manager (tokio, reconnecting on its
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
//!
//! The store's replies are believed only within what was asked (`checked`): a grant is cut
//! to the tokens the exchange wanted, a level to the bucket's burst (and its debt to one
//! burst), so no reply, from a store that lies or a server that is not Redis, lifts a lease
//! past what it asked for; a reply that is not two numbers is a failure. The replica count a
//! heartbeat learns is never taken below `quota.replicas` ([`Remote::replicas`]).
//!
//! While the store is down, a request meets `quota.on_store_failure`: this replica's share of
//! the caller's rate from the local bucket (`local`; a refusal while the share is unknown: the
//! store never reached and `quota.replicas` 0), nothing (`open`), a refusal (`closed`).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::time::Instant;

use super::lease::{Exchange, Exchanged, Lease, Spend};
use super::state::QuotaState;
use super::store::{Holder, Holders, Owner, QuotaStore};
use super::types::{Kind, Rate, Refusal};
use crate::config::quota::{OnStoreFailure, QuotaStoreSettings};
use crate::metrics::QuotaStoreSeries;

/// Heartbeats while the store is up.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// Heartbeats while it is down (how soon a store that came back is used again).
pub const PROBE: Duration = Duration::from_millis(250);
/// A replica not heard from for this long is no longer counted.
pub const REPLICA_TTL: Duration = Duration::from_secs(3);
/// How long start-up waits for the store to answer before it serves without it.
pub const JOIN_DEADLINE: Duration = Duration::from_secs(2);

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

/// The divisor of a caller's bucket: `seen` (replicas last seen alive, 0 before the store
/// first answered), never fewer than `expected` (`quota.replicas`, 0: not said); none when
/// neither is known.
fn divisor(seen: u32, expected: u32) -> Option<u32> {
    let n = seen.max(expected);
    (n > 0).then_some(n)
}

/// The exchange script's reply to `e` on a bucket of `rate`, as far as it can be believed, and
/// whether it had to be cut back. Two finite numbers, the grant not negative, or none (a reply
/// that is not the script's: the exchange fails as one with an error reply does). The grant
/// is cut to what `e` wanted, the level to the burst (more is what a store that lies would
/// say to lift the caller's quota) and to one burst of debt (a level below zero is the bucket
/// in debt, which the script reports as it is: it only makes the replica more careful, but a
/// claimed debt of ages would hold the caller back, and its `Retry-After` out, for as long).
fn checked(reply: &[String], rate: Rate, e: Exchange) -> Option<(Exchanged, bool)> {
    let [granted, level] = reply else { return None };
    let number = |s: &String| s.parse::<f64>().ok().filter(|v| v.is_finite());
    let (granted, level) = (number(granted)?, number(level)?);
    if granted < 0.0 {
        return None;
    }
    let asked = e.want.max(0.0);
    let cut = granted > asked || level > rate.burst;
    let exchanged = Exchanged { granted: granted.min(asked), level: level.min(rate.burst).max(-rate.burst) };
    Some((exchanged, cut))
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

/// The shared store, as one replica sees it: the connection, and whether the store answers.
struct Remote {
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
    /// Replicas seen alive at the last heartbeat; 0 until the store first answers.
    replicas: AtomicU32,
    /// `quota.replicas`: the fewest the deployment runs (0: not said).
    expected: u32,
    down_since: Mutex<Option<Instant>>,
    metrics: QuotaStoreSeries,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("prefix", &self.prefix).field("id", &self.id).finish_non_exhaustive()
    }
}

impl Remote {
    /// A store for `settings`, not connected yet (the first call connects; an unreachable
    /// store at start-up is a fallback, not a failure to start). Starts down until the first
    /// heartbeat answers.
    ///
    /// # Errors
    /// The URL or the password file (both checked by the settings' validation already), or a
    /// password bound for a plain `redis://` store without `quota.allow_plaintext_password`.
    pub fn new(
        settings: &QuotaStoreSettings,
        instance: &str,
        metrics: QuotaStoreSeries,
    ) -> anyhow::Result<Self> {
        let mut info = redis::IntoConnectionInfo::into_connection_info(settings.url.as_str())?;
        let password = settings.password()?;
        // Checked again here, where the password is attached: settings built without
        // validation never send it in clear either.
        settings.check_password_transport(password.is_some())?;
        if settings.password_in_clear(password.is_some()) {
            tracing::warn!(
                "quota.allow_plaintext_password: the quota store's password goes over plain redis://, \
                 readable by anyone on the path to the store; use rediss://"
            );
        }
        if let Some(password) = password {
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
        Ok(Remote {
            conn,
            exchange_script: redis::Script::new(EXCHANGE_LUA),
            heartbeat_script: redis::Script::new(HEARTBEAT_LUA),
            prefix: settings.prefix.clone(),
            id: format!("{name}-{}", data_encoding::HEXLOWER.encode(&suffix)),
            timeout,
            on_failure: settings.on_store_failure,
            lease_window: Duration::from_millis(settings.lease_ms),
            up: AtomicBool::new(false),
            replicas: AtomicU32::new(0),
            expected: settings.replicas,
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

    /// Replicas to divide a caller's bucket among: those last seen alive, never fewer than
    /// `quota.replicas` (a count that dropped for a moment, or a store that says 1, does not
    /// widen each replica's share past the deployment's size), at least this one.
    pub fn replicas(&self) -> u32 {
        divisor(self.replicas.load(Ordering::Acquire), self.expected).unwrap_or(1)
    }

    /// What the `local` fallback divides a caller's bucket by: [`Remote::replicas`], or none
    /// when this replica has never reached the store and `quota.replicas` is 0 (it has seen no
    /// other replica, so dividing by itself alone would let it serve the whole fleet's rate:
    /// quota'd requests are refused as under `closed` instead).
    pub fn fallback_replicas(&self) -> Option<u32> {
        divisor(self.replicas.load(Ordering::Acquire), self.expected)
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
        match checked(&reply, rate, e) {
            Some((exchanged, cut)) => {
                if cut {
                    tracing::warn!(
                        caller,
                        bucket = kind.name(),
                        "quota store granted more than asked or a level above the burst: cut back"
                    );
                }
                Ok(exchanged)
            }
            None => {
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
            // A store that reports more replicas than any fleet has would shrink every share
            // and lease to nothing: taken at most as the configuration's bound.
            let live = live.clamp(1, crate::config::quota::MAX_REPLICAS);
            self.replicas.store(live, Ordering::Release);
            self.metrics.replicas.set(i64::from(live));
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

/// The shared store: a caller's buckets are the store's, leased by each replica; while the
/// store is down, `quota.on_store_failure` decides.
#[derive(Debug)]
pub struct RedisStore {
    remote: Arc<Remote>,
}

impl RedisStore {
    /// A store for `settings`, not connected yet (the first call connects; an unreachable
    /// store at start-up is a fallback, not a failure to start). Starts down until the first
    /// heartbeat answers.
    ///
    /// # Errors
    /// The URL or the password file (both checked by the settings' validation already), or a
    /// password bound for a plain `redis://` store without `quota.allow_plaintext_password`.
    pub fn new(
        settings: &QuotaStoreSettings,
        instance: &str,
        metrics: QuotaStoreSeries,
    ) -> anyhow::Result<Self> {
        Ok(RedisStore { remote: Arc::new(Remote::new(settings, instance, metrics)?) })
    }

    /// What a request meets while the store is down (or has answered garbage for this
    /// bucket): this replica's share of `rate` from the local bucket, nothing, or a refusal.
    fn fallback(
        &self,
        state: &QuotaState,
        kind: Kind,
        rate: Rate,
        cost: f64,
        now: Instant,
    ) -> Result<(), Refusal> {
        match (self.remote.on_failure, self.remote.fallback_replicas()) {
            (OnStoreFailure::Open, _) => Ok(()),
            // Under `local`, a replica that never reached the store and was given no
            // `quota.replicas` does not know its share: refused as under `closed`.
            (OnStoreFailure::Closed, _) | (OnStoreFailure::Local, None) => Err(Refusal::StoreUnavailable),
            (OnStoreFailure::Local, Some(replicas)) => {
                let share = share(rate, replicas);
                state.bucket(kind).take(share, cost, now).map(drop).map_err(Refusal::Wait)
            }
        }
    }

    /// Whether the `kind` bucket of `state` is the store's now: the store is up and has not
    /// answered garbage for that bucket.
    fn global(&self, state: &QuotaState, kind: Kind, now: Instant) -> bool {
        self.remote.is_up() && !state.lease(kind).is_broken(now)
    }
}

impl QuotaStore for RedisStore {
    /// The lease on the global bucket while the store is up, else the fallback.
    fn take(&self, owner: Owner<'_>, kind: Kind, rate: Rate, cost: f64, now: Instant) -> Result<(), Refusal> {
        let state = owner.state;
        if !self.remote.is_up() {
            return self.fallback(state, kind, rate, cost, now);
        }
        let mut lease = state.lease(kind);
        if lease.is_broken(now) {
            drop(lease);
            return self.fallback(state, kind, rate, cost, now);
        }
        let (spend, exchange) =
            lease.spend(rate, cost, (self.remote.replicas(), self.remote.lease_window), now);
        drop(lease);
        if let Some(exchange) = exchange {
            self.remote.start(owner.name.clone(), state.clone(), kind, rate, exchange);
        }
        match spend {
            Spend::Spent => Ok(()),
            Spend::Refused(wait) => Err(Refusal::Wait(wait)),
        }
    }

    /// The tokens in hand plus the global level as of this replica's last exchange with the
    /// store (at most about a lease old while the caller is active here), or this replica's
    /// share while the store is down.
    fn remaining(&self, state: &QuotaState, kind: Kind, rate: Rate, now: Instant) -> f64 {
        if self.remote.is_up() {
            let lease = state.lease(kind);
            if !lease.is_broken(now) {
                return lease.remaining(rate, now);
            }
        }
        state.bucket(kind).peek(share(rate, self.remote.replicas()), now)
    }

    fn scope(&self, state: &QuotaState) -> &'static str {
        if Kind::ALL.iter().all(|&kind| self.global(state, kind, Instant::now())) {
            return "global";
        }
        match (self.remote.on_failure, self.remote.fallback_replicas()) {
            (OnStoreFailure::Local, Some(_)) => "replica_share",
            (OnStoreFailure::Open, _) => "unlimited",
            (OnStoreFailure::Closed, _) | (OnStoreFailure::Local, None) => "unavailable",
        }
    }

    /// Announces this replica, so the store is up before the first request when it can be
    /// reached. Tried every [`PROBE`] for up to [`JOIN_DEADLINE`]: a first call also connects
    /// (TCP, TLS, AUTH), which may take longer than one call's deadline (`quota.timeout_ms`).
    fn join(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let remote = &self.remote;
            let deadline = Instant::now() + JOIN_DEADLINE;
            let mut joined = remote.heartbeat(false).await.is_ok();
            while !joined && Instant::now() + PROBE < deadline {
                tokio::time::sleep(PROBE).await;
                joined = remote.heartbeat(false).await.is_ok();
            }
            if !joined {
                tracing::warn!(
                    on_store_failure = ?remote.on_failure,
                    replicas = remote.fallback_replicas().unwrap_or(0),
                    "quota store unreachable at start-up: falling back until it answers"
                );
                if remote.on_failure == OnStoreFailure::Local && remote.fallback_replicas().is_none() {
                    tracing::warn!(
                        "quota.replicas is 0 and this replica has seen no other: quota'd requests are \
                         refused (503 quota_store_unavailable) until the store answers; set \
                         quota.replicas to the fewest replicas the deployment runs to serve a share"
                    );
                }
            }
        })
    }

    /// For ever: a heartbeat every [`HEARTBEAT`] (every [`PROBE`] while the store is down, so
    /// quotas are global again soon after it comes back), and leases idle for
    /// [`super::lease::IDLE`] given back.
    fn keep<'a>(&'a self, holders: &'a Holders<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let remote = &self.remote;
            loop {
                let pause = if remote.is_up() { HEARTBEAT } else { PROBE };
                tokio::time::sleep(pause).await;
                let _ = remote.heartbeat(false).await;
                if remote.is_up() {
                    let now = Instant::now();
                    each_lease(
                        &holders(),
                        |lease| lease.give_back(now),
                        |holder, kind, rate, e| {
                            remote.start(holder.name.clone(), holder.state.clone(), kind, rate, e);
                        },
                    );
                } else {
                    remote.count_fallback();
                }
            }
        })
    }

    /// Gives every lease's unspent tokens back to the store and settles what is owed, then
    /// leaves the replica set.
    fn leave<'a>(&'a self, holders: &'a Holders<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let remote = &self.remote;
            if remote.is_up() {
                // Exchanges the last requests started (and the follow-ups they chain) end
                // within a few of the store's deadlines: waited for, so that what they grant is
                // given back.
                let deadline = Instant::now() + 5 * remote.timeout();
                loop {
                    let mut under_way = false;
                    each_lease(
                        &holders(),
                        |lease| {
                            under_way |= lease.is_exchanging();
                            None
                        },
                        |_, _, _, _| {},
                    );
                    if !under_way || Instant::now() >= deadline {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                let mut exchanges: Vec<(Holder, Kind, Rate, Exchange)> = Vec::new();
                each_lease(&holders(), Lease::give_back_now, |holder, kind, rate, e| {
                    exchanges.push((holder.clone(), kind, rate, e));
                });
                let returns = exchanges
                    .iter()
                    .map(|(holder, kind, rate, e)| remote.run(&holder.name, &holder.state, *kind, *rate, *e));
                futures_util::future::join_all(returns).await;
            }
            let _ = remote.heartbeat(true).await;
        })
    }
}

/// Calls `decide` on each limited bucket's lease of each of `holders`, and `then` with each
/// exchange it asks for (outside the lease's lock).
fn each_lease(
    holders: &[Holder],
    mut decide: impl FnMut(&mut Lease) -> Option<Exchange>,
    mut then: impl FnMut(&Holder, Kind, Rate, Exchange),
) {
    for holder in holders {
        for kind in Kind::ALL {
            let Some(rate) = holder.quota.rate(kind) else { continue };
            let exchange = decide(&mut holder.state.lease(kind));
            if let Some(e) = exchange {
                then(holder, kind, rate, e);
            }
        }
    }
}

/// `rate` divided among `replicas` (the burst at least one token).
fn share(rate: Rate, replicas: u32) -> Rate {
    let n = f64::from(replicas.max(1));
    Rate { per_second: rate.per_second / n, burst: (rate.burst / n).max(1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Rate = Rate { per_second: 50.0, burst: 10.0 };
    const E: Exchange = Exchange { settle: 0.0, want: 3.0, at_least: 1.0 };

    fn reply(granted: &str, level: &str) -> Vec<String> {
        vec![granted.to_string(), level.to_string()]
    }

    #[test]
    fn an_honest_reply_is_taken_as_sent() {
        let ok = |granted, level| Some((Exchanged { granted, level }, false));
        assert_eq!(checked(&reply("3", "7"), R, E), ok(3.0, 7.0));
        assert_eq!(checked(&reply("1.5", "0"), R, E), ok(1.5, 0.0));
        // In debt (credit settled beyond what was there): as sent, down to one burst.
        assert_eq!(checked(&reply("0", "-4.25"), R, E), ok(0.0, -4.25));
        assert_eq!(checked(&reply("0", "10"), R, E), ok(0.0, 10.0));
    }

    #[test]
    fn a_grant_is_cut_to_what_was_asked_and_a_level_to_the_burst() {
        let (x, cut) = checked(&reply("1e300", "1e300"), R, E).unwrap();
        assert!(cut);
        assert_eq!(x, Exchanged { granted: 3.0, level: 10.0 });
        // A give-back asks for nothing: nothing is granted whatever the reply says.
        let back = Exchange { settle: -2.0, want: 0.0, at_least: 0.0 };
        assert_eq!(checked(&reply("5", "8"), R, back), Some((Exchanged { granted: 0.0, level: 8.0 }, true)));
        // A debt of ages is taken as one burst (not a lift: the level stays below zero).
        assert_eq!(
            checked(&reply("0", "-1e15"), R, E),
            Some((Exchanged { granted: 0.0, level: -10.0 }, false))
        );
    }

    #[test]
    fn a_reply_that_is_not_the_scripts_is_a_failure() {
        let three = vec!["1".to_string(), "2".to_string(), "3".to_string()];
        let bad = [
            vec![],
            vec!["3".to_string()],
            three,
            reply("NaN", "1"),
            reply("inf", "1"),
            reply("1", "-inf"),
            reply("-1", "5"),
            reply("lots", "5"),
            reply("1", ""),
        ];
        for r in bad {
            assert_eq!(checked(&r, R, E), None, "{r:?}");
        }
    }

    /// A lease fed a lying store's answer (through the check) spends what it asked for and its
    /// credit within a bucket taken as full: the burst and two, where the unchecked grant of
    /// 10^12 tokens would have let everything through.
    #[test]
    fn a_lying_store_lifts_a_lease_no_further_than_it_asked() {
        let t0 = Instant::now();
        let window = Duration::from_millis(100);
        let mut lease = Lease::new(t0);
        let (spend, e) = lease.spend(R, 1.0, (1, window), t0);
        assert_eq!(spend, Spend::Spent);
        let (lie, cut) = checked(&reply("1e12", "1e12"), R, e.expect("a first exchange")).unwrap();
        assert!(cut);
        let _ = lease.settled(R, lie, t0);
        let mut served = 1;
        while served < 1000 && lease.spend(R, 1.0, (1, window), t0).0 == Spend::Spent {
            served += 1;
        }
        assert!(served <= 12, "served {served}");
    }

    #[test]
    fn the_divisor_is_never_below_the_configured_fleet() {
        assert_eq!(divisor(0, 0), None, "never reached, no count configured");
        assert_eq!(divisor(0, 3), Some(3), "never reached: the configured count");
        assert_eq!(divisor(2, 3), Some(3), "fewer seen than configured");
        assert_eq!(divisor(5, 3), Some(5), "more seen than configured");
        assert_eq!(divisor(1, 0), Some(1));
    }
}
