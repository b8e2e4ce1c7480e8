//! A ticket as the store keeps it, and its place in its chain.

/// A ticket as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// Its id, a UUIDv7.
    pub id: String,
    /// The caller it belongs to (never shown: [`caller_hash`] is).
    pub caller: String,
    /// Whether `GET /tickets/{id}` shows its result (else only once revealed).
    pub show_result: bool,
    /// Created, Unix milliseconds.
    pub created_ms: i64,
    /// Unusable after, Unix milliseconds (none: never).
    pub expires_ms: Option<i64>,
    /// The ticket whose use created it (none: created by `POST /tickets`).
    pub previous_id: Option<String>,
    /// The ticket its use created (none: not used yet).
    pub next_id: Option<String>,
    /// Used, Unix milliseconds.
    pub used_ms: Option<i64>,
    /// The serial of its receipt, once used.
    pub serial: Option<String>,
    /// Revealed by its caller (`POST /tickets/{id}/reveal`).
    pub revealed: bool,
    /// The answer its draw was given, byte for byte, once used (and until its retention).
    pub result: Option<Vec<u8>>,
    /// The digest of the request that used it ([`super::request_digest`]).
    pub digest: Option<Vec<u8>>,
    /// The round and draw it is bound to, if any ([`super::bound`]).
    pub bound: Option<Bound>,
}

/// A ticket's binding to a beacon round, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The round whose randomness its draw's values come from.
    pub round: u64,
    /// The draw, in its stored form ([`super::bound::Draw::to_stored`]; read back when used,
    /// a form that does not read refusing the draw).
    pub draw: String,
    /// The signed commitment its creation answered (`{"random": ..., "signature": ...}`).
    pub commitment: Vec<u8>,
    /// What its draw is for, in the caller's words: one bound ticket a label, ever, per caller.
    pub label: String,
}

impl Ticket {
    /// A new, unused ticket of `caller`'s, created at `created_ms`, first of its chain.
    pub fn new(
        id: String,
        caller: &str,
        show_result: bool,
        created_ms: i64,
        expires_ms: Option<i64>,
    ) -> Ticket {
        Ticket {
            id,
            caller: caller.to_owned(),
            show_result,
            created_ms,
            expires_ms,
            previous_id: None,
            next_id: None,
            used_ms: None,
            serial: None,
            revealed: false,
            result: None,
            digest: None,
            bound: None,
        }
    }

    /// Whether anyone may see its result: shown from creation, or revealed.
    pub fn shows_result(&self) -> bool {
        self.show_result || self.revealed
    }
}

impl Bound {
    /// A ticket's binding of its `round`, `draw`, `commitment` and `label` columns: none when
    /// all are null; a binding whose draw does not read (refused when used, never drawn as a plain ticket)
    /// when only some are, or the round is negative.
    pub fn of_columns(
        round: Option<i64>,
        draw: Option<String>,
        commitment: Option<Vec<u8>>,
        label: Option<String>,
    ) -> Option<Bound> {
        if round.is_none() && draw.is_none() && commitment.is_none() && label.is_none() {
            return None;
        }
        let whole =
            round.is_some_and(|r| r >= 0) && draw.is_some() && commitment.is_some() && label.is_some();
        Some(Bound {
            round: round.and_then(|r| u64::try_from(r).ok()).unwrap_or(u64::MAX),
            draw: draw.filter(|_| whole).unwrap_or_default(),
            commitment: commitment.unwrap_or_default(),
            label: label.unwrap_or_default(),
        })
    }
}

/// A ticket's place in its chain (RANDOM.ORG's `ticketType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketKind {
    /// Neither a predecessor nor a successor: created, not used.
    Singleton,
    /// No predecessor, a successor: a chain's first, used.
    Head,
    /// A predecessor, no successor: a chain's newest.
    Tail,
}

impl TicketKind {
    /// The kind named `name` (`singleton`, `head`, `tail`).
    pub fn named(name: &str) -> Option<TicketKind> {
        match name {
            "singleton" => Some(TicketKind::Singleton),
            "head" => Some(TicketKind::Head),
            "tail" => Some(TicketKind::Tail),
            _ => None,
        }
    }
}
