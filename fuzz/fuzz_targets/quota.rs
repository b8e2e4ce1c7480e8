//! The quota bucket against a reference model in exact integer arithmetic (nano-tokens and
//! nanoseconds): for arbitrary rates, bursts, costs and times (going backwards too), a take
//! the model clearly allows is allowed, one it clearly refuses is refused, and the tokens left
//! agree; and over the whole run no more was granted than the burst, the rate times the time
//! covered, and one request's excess over the burst.
//!
//! Input: per second (u16) and burst (u16), then steps of 5 bytes: a time step in
//! milliseconds (u16, its top bit: backwards), a cost (u16), a flags byte (bit 0: cost as a
//! fraction, in thousandths).
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]

use std::time::Duration;

use tokio::time::Instant;

use drbgd::callers::quota::{Bucket, Rate};
use libfuzzer_sys::fuzz_target;

const NANO: i128 = 1_000_000_000;

fuzz_target!(|data: &[u8]| {
    let [r0, r1, b0, b1, steps @ ..] = data else { return };
    let per_second = i128::from(u16::from_le_bytes([*r0, *r1]).max(1));
    let burst = i128::from(u16::from_le_bytes([*b0, *b1]).max(1));
    let rate = Rate { per_second: per_second as f64, burst: burst as f64 };
    let bucket = Bucket::default();
    let start = Instant::now() + Duration::from_secs(1 << 20);
    let mut now_ms: i64 = 0;
    // The model: nano-tokens, and the latest instant (ms) it was brought up to date at.
    let mut tokens: Option<(i128, i64)> = None;
    let (mut granted, mut excess, mut first_ms, mut last_ms) = (0i128, 0i128, None, i64::MIN);
    for step in steps.chunks_exact(5) {
        let dt = i64::from(u16::from_le_bytes([step[0], step[1]]) & 0x7fff);
        now_ms += if step[1] & 0x80 != 0 { -dt } else { dt };
        let raw = i128::from(u16::from_le_bytes([step[2], step[3]]));
        let cost_nano = if step[4] & 1 != 0 { raw * NANO / 1000 } else { raw * NANO };
        let at = match u64::try_from(now_ms) {
            Ok(ms) => start + Duration::from_millis(ms),
            Err(_) => start - Duration::from_millis(now_ms.unsigned_abs()),
        };
        // Refill: only forward in time, never above the burst.
        let (level, latest_ms) = match tokens {
            None => (burst * NANO, now_ms),
            Some((t, latest)) => {
                let refilled = t + i128::from((now_ms - latest).max(0)) * per_second * NANO / 1000;
                (refilled.min(burst * NANO), latest.max(now_ms))
            }
        };
        let need = cost_nano.min(burst * NANO);
        let cost = cost_nano as f64 / NANO as f64;
        let result = bucket.take(rate, cost, at);
        // The bucket starts full at the first attempt and refills only forward from it.
        let first = *first_ms.get_or_insert(now_ms);
        last_ms = last_ms.max(now_ms);
        // Clear margins only: within a millionth of a token either answer is right.
        let margin = NANO / 1_000_000 + (level.abs() + need) / 1_000_000_000;
        match &result {
            Ok(_) => assert!(level + margin >= need, "allowed: level {level} need {need}"),
            Err(_) => assert!(level < need + margin, "refused: level {level} need {need}"),
        }
        tokens = Some(match result {
            Ok(left) => {
                granted += cost_nano;
                excess = excess.max(cost_nano - burst * NANO);
                let allowance =
                    burst * NANO + i128::from(last_ms - first).max(0) * per_second * NANO / 1000 + excess;
                assert!(
                    granted <= allowance + granted / 1_000_000 + NANO / 1000,
                    "granted {granted} > {allowance}"
                );
                let model = level - cost_nano;
                let left_nano = (left * NANO as f64) as i128;
                assert!(
                    (left_nano - model).abs() <= margin + (model.abs() / 1_000_000_000),
                    "left {left_nano} model {model}"
                );
                (model, latest_ms)
            }
            Err(_) => (level, latest_ms),
        });
    }
});
