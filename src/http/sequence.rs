//! `/sequence?min=&max=&count=` (GET, and POST with a JSON body) and gRPC `GetSequence`:
//! `count` distinct integers of `[min, max]` in uniformly random order, a shuffle when `count`
//! is the range's size (its default, where that is at most `limits.max_count`), a draw without
//! replacement otherwise: card decks, lottery draws, assignment orders (RANDOM.ORG's
//! `generateIntegers` with `replacement=false`). The endpoint is written here whole: its
//! request, its draw, its receipt's form, its REST handler and its OpenAPI operation; the gRPC
//! method (`grpc.rs`) builds the same request and calls the same draw.
//!
//! The draw is [`crate::drbg::uniform::shuffle`], a partial Fisher–Yates shuffle of the range
//! kept sparse (memory is `count` entries whatever the range's size), each step one of the
//! service's unbiased integer draws: every ordered selection of `count` values is equally
//! likely (the same sampler serves draws bound to a beacon round, `tickets/bound.rs`). It is charged as `/int` is: 64 bits a value.

use axum::Json;
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::openapi::{Components, PathItem};
use utoipa::{PartialSchema, ToSchema};

use super::openapi::describe::{Context, RANDOM_ERRORS, get_and_post};
use super::receipt;
use super::respond::served;
use crate::callers::{Admission, Caller, Draw};
use crate::drbg::Algorithm;
use crate::drbg::uniform;
use crate::error::ApiError;
use crate::pipeline::params::{Accept, Param, Params, wants_json};
use crate::pipeline::{Answer, Describe};
use crate::receipts::Random;
use crate::route::Route;
use crate::service::{Rules, Service};
use crate::state::AppState;

/// The parameters of `/sequence` (with the receipt's).
const PARAMS: &[Param] = &[Param::Min, Param::Max, Param::Count, Param::Alg];

/// `count` distinct integers of `[min, max]` from `alg`, valid by construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceRequest {
    min: i64,
    max: i64,
    count: usize,
    alg: Algorithm,
    receipt: bool,
}

impl SequenceRequest {
    /// `count` values of `[min, max]`; without `count`, all of them (a shuffle) when they are at
    /// most `max_count`.
    ///
    /// # Errors
    /// `invalid_integer` (min or max absent), `invalid_range` (min > max), `invalid_count`
    /// (0, above `max_count`, or absent for a range of more values than that),
    /// `count_exceeds_range` (more than the range holds), `unknown_alg`, `alg_not_approved`,
    /// `alg_disabled`.
    pub fn new(
        rules: &Rules,
        min: Option<i64>,
        max: Option<i64>,
        count: Option<u64>,
        alg: Option<&str>,
    ) -> Result<Self, ApiError> {
        let (min, max) = Rules::bounds(min, max)?;
        // Up to 2^64 values: counted in i128, where it cannot overflow.
        let size = i128::from(max) - i128::from(min) + 1;
        let count = match count {
            Some(count) => count,
            None if size <= i128::from(rules.max_count) => size as u64,
            None => {
                let detail =
                    format!("count is required: [min, max] holds more than {} values", rules.max_count);
                return Err(ApiError::invalid("invalid_count", "count", detail));
            }
        };
        let count = rules.count(Some(count))?;
        if count as i128 > size {
            let detail = format!("count must be at most the {size} values of [min, max]");
            return Err(ApiError::invalid("count_exceeds_range", "count", detail));
        }
        Ok(SequenceRequest { min, max, count, alg: rules.algorithm(alg)?, receipt: false })
    }

    /// The same request, answered with a signed receipt or not.
    #[must_use]
    pub fn with_receipt(self, receipt: bool) -> Self {
        SequenceRequest { receipt, ..self }
    }

    /// How many values.
    pub fn count(&self) -> usize {
        self.count
    }

    /// `[min, max]`.
    pub fn bounds(&self) -> (i64, i64) {
        (self.min, self.max)
    }

    /// What it draws, as the caller's policy reads it: 64 bits a value.
    fn draw(&self) -> Draw {
        Draw { receipt: self.receipt, ..Draw::plain(self.alg, self.count as u64 * 64) }
    }
}

/// A drawn sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequence {
    /// The values, distinct, in the order drawn.
    pub values: Vec<i64>,
    /// The lower bound.
    pub min: i64,
    /// The upper bound (inclusive).
    pub max: i64,
    /// The generator.
    pub alg: Algorithm,
}

impl Sequence {
    /// Its receipt's `random` object: `min`, `max`, `count` and the values as decimal strings
    /// (as `/int`'s).
    pub fn receipt(&self) -> Random {
        Random::integers(Route::Sequence, self.alg, (self.min, self.max), &self.values)
    }
}

/// `req`'s sequence for `caller`, from the service's generator.
///
/// # Errors
/// As [`Service::draw_words`]: the caller's policy and quota, the generator.
pub fn draw(service: &Service, caller: &Caller, req: &SequenceRequest) -> Result<Sequence, ApiError> {
    let values = service.draw_words(caller, &req.draw(), |words| {
        uniform::shuffle(req.min, req.max, req.count, || words.next_u64())
    })?;
    // `count` is at most the range's size (the request's constructor): never fewer values.
    if values.len() != req.count {
        return Err(ApiError::Internal);
    }
    Ok(Sequence { values, min: req.min, max: req.max, alg: req.alg })
}

/// `/sequence?min=&max=&count=&alg=&receipt=&user_data=`.
pub fn answer(
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<Answer, ApiError> {
    params.allow(PARAMS)?;
    let ask = receipt::ask(state, params)?;
    let (min, max, count) = (params.i64(Param::Min)?, params.i64(Param::Max)?, params.u64(Param::Count)?);
    let req = SequenceRequest::new(state.service.rules(), min, max, count, params.get(Param::Alg))?
        .with_receipt(ask.is_some());
    if let Some(ask) = &ask {
        ask.check_size(req.count as u64 * 8)?;
    }
    let out = draw(&state.service, &admission.caller, &req)?;
    if let Some(ask) = ask {
        return receipt::respond(state, admission, &ask, out.receipt(), out.alg, 0);
    }
    let body = if wants_json(accept) {
        let count = out.values.len();
        let Sequence { values, min, max, alg } = out;
        Json(SequenceJson { values, min, max, count, alg: alg.name() }).into_response()
    } else {
        let mut text = String::with_capacity(out.values.len() * 8);
        for value in &out.values {
            text.push_str(itoa::Buffer::new().format(*value));
            text.push('\n');
        }
        text.into_response()
    };
    Ok(served(body, out.alg, 0))
}

/// `/sequence`'s JSON answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct SequenceJson {
    /// The values: distinct, each in [min, max], in the order drawn.
    values: Vec<i64>,
    /// The lower bound.
    min: i64,
    /// The upper bound (inclusive).
    max: i64,
    /// How many values.
    count: usize,
    /// The generator used.
    alg: &'static str,
}

/// The OpenAPI operations of `/sequence`: GET with a query, POST with the same parameters as a
/// JSON body.
pub(crate) fn doc(d: &Describe<'_>, components: &mut Components) -> PathItem {
    components.schemas.insert("SequenceJson".into(), SequenceJson::schema());
    let context = Context {
        count: Some((None, "How many (at most the range's size); absent: all of [min, max], a shuffle.")),
        ..Context::default()
    };
    let summary =
        "Distinct integers of [min, max] in uniformly random order: a shuffle, or a draw without replacement";
    let ok = |op: utoipa::openapi::path::OperationBuilder| {
        d.errors(op.response("200", d.text_or_json("SequenceJson")), RANDOM_ERRORS)
    };
    let get = ok(d.op("getSequence", summary).parameters(Some(d.query(PARAMS, &context))));
    let post = ok(d
        .op("postSequence", &format!("{summary}, parameters in a JSON body"))
        .request_body(Some(d.body(PARAMS, &context))));
    get_and_post(d, get, post)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::drbg::uniform::shuffle;

    /// Words from a seeded generator, for draws that tests can repeat.
    fn words(seed: u64) -> impl FnMut() -> Result<u64, ()> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        move || Ok(rng.next_u64())
    }

    /// Pearson's chi-square of `counts` against equal expectations.
    fn chi_square(counts: &[u64]) -> f64 {
        let total: u64 = counts.iter().sum();
        let expected = total as f64 / counts.len() as f64;
        counts.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum()
    }

    /// Every order of a 4-value range comes out equally often: chi-square over the 24 orders of
    /// 12,000 shuffles below the 0.999 quantile of chi-square with 23 degrees of freedom
    /// (49.73), and every order seen.
    #[test]
    fn every_permutation_of_four_is_equally_likely() {
        let mut next = words(1);
        let mut counts: HashMap<Vec<i64>, u64> = HashMap::new();
        for _ in 0..12_000 {
            let order = shuffle(-1, 2, 4, &mut next).unwrap();
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [-1, 0, 1, 2], "a permutation of the range");
            *counts.entry(order).or_default() += 1;
        }
        assert_eq!(counts.len(), 24);
        let counts: Vec<u64> = counts.into_values().collect();
        let chi = chi_square(&counts);
        assert!(chi < 49.73, "chi-square {chi} over the 24 orders");
    }

    /// A draw of 3 from 10: each value appears in each of the 3 places equally often, and each
    /// of the 120 unordered subsets equally often (chi-square below the 0.999 quantiles: 27.88
    /// for 9 degrees of freedom, 173.6 for 119).
    #[test]
    fn subsets_of_a_larger_range_are_uniform() {
        let mut next = words(2);
        let mut places = vec![[0u64; 10]; 3];
        let mut subsets: HashMap<Vec<i64>, u64> = HashMap::new();
        for _ in 0..24_000 {
            let drawn = shuffle(1, 10, 3, &mut next).unwrap();
            for (place, value) in drawn.iter().enumerate() {
                places[place][(value - 1) as usize] += 1;
            }
            let mut subset = drawn.clone();
            subset.sort_unstable();
            subset.dedup();
            assert_eq!(subset.len(), 3, "distinct: {drawn:?}");
            *subsets.entry(subset).or_default() += 1;
        }
        for counts in &places {
            let chi = chi_square(counts);
            assert!(chi < 27.88, "chi-square {chi} of a place");
        }
        assert_eq!(subsets.len(), 120);
        let counts: Vec<u64> = subsets.into_values().collect();
        let chi = chi_square(&counts);
        assert!(chi < 173.6, "chi-square {chi} over the subsets");
    }

    /// A range of 2^64 values and a range at the ends of i64: the values stay inside, distinct.
    #[test]
    fn the_widest_ranges_draw_without_overflow() {
        let mut next = words(3);
        for (min, max) in [(i64::MIN, i64::MAX), (i64::MAX - 4, i64::MAX), (i64::MIN, i64::MIN + 4)] {
            let count = if i128::from(max) - i128::from(min) == 4 { 5 } else { 1000 };
            let drawn = shuffle(min, max, count, &mut next).unwrap();
            let mut distinct = drawn.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), count, "[{min}, {max}]");
            assert!(drawn.iter().all(|v| (min..=max).contains(v)));
        }
        assert_eq!(shuffle(7, 7, 1, &mut next).unwrap(), [7]);
    }

    #[test]
    fn a_failing_source_ends_the_draw() {
        assert_eq!(shuffle(1, 6, 3, || Err::<u64, _>("down")), Err("down"));
    }

    #[test]
    fn each_refusal_has_its_code() {
        let rules = Rules::from_settings(&crate::config::Settings::defaults());
        let code = |r: Result<SequenceRequest, ApiError>| r.unwrap_err().code();
        let new = |min, max, count| SequenceRequest::new(&rules, min, max, count, None);
        assert_eq!(code(new(None, Some(3), None)), "invalid_integer");
        assert_eq!(code(new(Some(1), None, None)), "invalid_integer");
        assert_eq!(code(new(Some(3), Some(1), None)), "invalid_range");
        assert_eq!(code(new(Some(1), Some(6), Some(0))), "invalid_count");
        assert_eq!(code(new(Some(1), Some(6), Some(7))), "count_exceeds_range");
        let above = rules.max_count + 1;
        assert_eq!(code(new(Some(0), Some(i64::MAX), Some(above))), "invalid_count");
        assert_eq!(code(new(Some(0), Some(i64::MAX), None)), "invalid_count", "no default for a huge range");
        let unknown = SequenceRequest::new(&rules, Some(1), Some(6), None, Some("nope"));
        assert_eq!(code(unknown), "unknown_alg");
        // Without a count, the whole range: a shuffle.
        assert_eq!(new(Some(1), Some(52), None).unwrap().count(), 52);
        assert_eq!(new(Some(i64::MIN), Some(i64::MAX), Some(3)).unwrap().count(), 3);
    }
}
