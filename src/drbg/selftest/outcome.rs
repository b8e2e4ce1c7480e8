//! One self-test's result: what every suite returns and the table's rows name. It names
//! nothing of `drbg`.

/// One self-test's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The test's name (`reseed`, `seeded round trip`, ...).
    pub name: &'static str,
    /// Whether it passed.
    pub passed: bool,
}

impl Outcome {
    /// The result `passed` of the test `name`.
    pub const fn of(name: &'static str, passed: bool) -> Self {
        Outcome { name, passed }
    }
}
