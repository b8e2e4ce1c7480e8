//! What a caller may ask for: algorithms, endpoints, bits per request, prediction resistance.
//! A request outside its caller's policy is refused with 403 and a stable code.

use crate::drbg::Algorithm;
use crate::error::ApiError;

pub use crate::route::Route;

/// A caller's policy, validated and clamped to the server's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Allowed algorithms (bit `alg.index()`).
    algs: u32,
    /// Allowed routes (bit `route as u16`).
    routes: u16,
    /// Most random bits per request.
    pub max_bits: u64,
    /// Whether `pr=true` is allowed.
    pub pr: bool,
    /// Whether signed receipts (`receipt=true`) are allowed.
    pub receipts: bool,
}

impl Policy {
    /// A policy allowing exactly these, and receipts.
    pub fn new(algs: &[Algorithm], routes: &[Route], max_bits: u64, pr: bool) -> Self {
        Policy {
            algs: algs.iter().fold(0, |m, a| m | 1 << a.index()),
            routes: routes.iter().fold(0, |m, r| m | r.bit()),
            max_bits,
            pr,
            receipts: true,
        }
    }

    /// The same policy, receipts allowed or not.
    #[must_use]
    pub fn with_receipts(self, receipts: bool) -> Self {
        Policy { receipts, ..self }
    }

    /// The allowed algorithms, in [`Algorithm::ALL`] order.
    pub fn algs(&self) -> impl Iterator<Item = Algorithm> + '_ {
        Algorithm::ALL.into_iter().filter(|a| self.algs & (1 << a.index()) != 0)
    }

    /// The allowed routes.
    pub fn routes(&self) -> impl Iterator<Item = Route> + '_ {
        Route::ALL.into_iter().filter(|r| self.routes & r.bit() != 0)
    }

    /// What this policy allows that `other` does not: `algs`, `routes`, `max_bits`, `pr`,
    /// `receipts` (the keys, in that order; empty when it is no wider).
    pub fn wider_than(&self, other: &Policy) -> Vec<&'static str> {
        [
            (self.algs & !other.algs != 0, "algs"),
            (self.routes & !other.routes != 0, "routes"),
            (self.max_bits > other.max_bits, "max_bits"),
            (self.pr && !other.pr, "pr"),
            (self.receipts && !other.receipts, "receipts"),
        ]
        .into_iter()
        .filter_map(|(wider, key)| wider.then_some(key))
        .collect()
    }

    /// 403 `route_not_allowed` unless `route` is allowed.
    ///
    /// # Errors
    /// As above.
    pub fn check_route(&self, route: Route) -> Result<(), ApiError> {
        if self.routes & route.bit() == 0 {
            return Err(ApiError::forbidden(
                "route_not_allowed",
                format!("this caller may not call {}", route.name()),
            ));
        }
        Ok(())
    }

    /// 403 `alg_not_allowed`, `n_not_allowed`, `pr_not_allowed` or `receipts_not_allowed`
    /// unless `draw` is within the policy: every rule of a policy but its routes (which the
    /// pipeline checks from the head, [`Policy::check_route`]), in one place, applied once a
    /// request's parameters are parsed.
    ///
    /// # Errors
    /// The first rule the draw breaks, in that order.
    pub fn check(&self, draw: &Draw) -> Result<(), ApiError> {
        let Draw { alg, n_bits, pr, receipt } = *draw;
        if self.algs & (1 << alg.index()) == 0 {
            let allowed: Vec<&str> = self.algs().map(Algorithm::name).collect();
            return Err(ApiError::forbidden(
                "alg_not_allowed",
                format!("this caller may not use {alg}; allowed: {}", allowed.join(", ")),
            ));
        }
        if n_bits > self.max_bits {
            return Err(ApiError::forbidden(
                "n_not_allowed",
                format!("this caller may draw at most {} bits per request, not {n_bits}", self.max_bits),
            ));
        }
        if pr && !self.pr {
            return Err(ApiError::forbidden(
                "pr_not_allowed",
                "this caller may not ask for prediction resistance (pr=true)".to_string(),
            ));
        }
        if receipt && !self.receipts {
            return Err(ApiError::forbidden(
                "receipts_not_allowed",
                "this caller may not ask for signed receipts (receipt=true)".to_string(),
            ));
        }
        Ok(())
    }
}

/// What a request draws, as its caller's policy reads it once the parameters are parsed: the
/// generator, the random bits, prediction resistance, and whether a signed receipt covers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Draw {
    /// The generator.
    pub alg: Algorithm,
    /// Random bits drawn (as charged: 64 an integer, 128 a UUID).
    pub n_bits: u64,
    /// Prediction resistance: a reseed first.
    pub pr: bool,
    /// Answered with a signed receipt.
    pub receipt: bool,
}

impl Draw {
    /// `n_bits` from `alg`, without prediction resistance or a receipt.
    pub fn plain(alg: Algorithm, n_bits: u64) -> Draw {
        Draw { alg, n_bits, pr: false, receipt: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_has_its_code() {
        let p = Policy::new(&[Algorithm::ChaCha20], &[Route::Token, Route::Bits], 4096, false);
        let draw = |alg, n_bits, pr, receipt| p.check(&Draw { alg, n_bits, pr, receipt });
        assert!(draw(Algorithm::ChaCha20, 4096, false, true).is_ok());
        assert!(p.check_route(Route::Bits).is_ok());
        let code = |r: Result<(), ApiError>| r.unwrap_err().code();
        assert_eq!(code(draw(Algorithm::Blake3, 8, false, false)), "alg_not_allowed");
        assert_eq!(code(draw(Algorithm::ChaCha20, 4097, false, false)), "n_not_allowed");
        assert_eq!(code(draw(Algorithm::ChaCha20, 8, true, false)), "pr_not_allowed");
        assert_eq!(code(p.check_route(Route::Int)), "route_not_allowed");
        let no_receipts = p.clone().with_receipts(false);
        assert!(no_receipts.check(&Draw::plain(Algorithm::ChaCha20, 8)).is_ok());
        let receipt = Draw { receipt: true, ..Draw::plain(Algorithm::ChaCha20, 8) };
        assert_eq!(code(no_receipts.check(&receipt)), "receipts_not_allowed");
        // The first rule broken is the one named.
        let all = Draw { alg: Algorithm::Blake3, n_bits: 1 << 20, pr: true, receipt: true };
        assert_eq!(code(no_receipts.check(&all)), "alg_not_allowed");
        assert_eq!(p.algs().collect::<Vec<_>>(), [Algorithm::ChaCha20]);
        assert_eq!(p.routes().collect::<Vec<_>>(), [Route::Bits, Route::Token]);
        let open = Policy::new(&Algorithm::ALL, &Route::ALL, 100, true);
        assert!(Route::ALL.iter().all(|r| open.check_route(*r).is_ok()));
        assert!(
            Algorithm::ALL.iter().all(|a| open.check(&Draw { pr: true, ..Draw::plain(*a, 100) }).is_ok())
        );
    }

    #[test]
    fn wider_names_what_a_policy_allows_beyond_another() {
        let narrow = Policy::new(&[Algorithm::ChaCha20], &[Route::Token], 4096, false);
        let open = Policy::new(&Algorithm::ALL, &Route::ALL, 8192, true);
        assert_eq!(open.wider_than(&narrow), ["algs", "routes", "max_bits", "pr"]);
        assert!(narrow.wider_than(&open).is_empty());
        assert!(narrow.wider_than(&narrow).is_empty());
        let other_alg = Policy::new(&[Algorithm::Blake3], &[Route::Token], 4096, false);
        assert_eq!(other_alg.wider_than(&narrow), ["algs"], "a different algorithm is a new one");
    }
}
