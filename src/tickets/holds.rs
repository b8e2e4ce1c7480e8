//! The tickets this process is drawing under, held one draw at a time: concurrent uses of one
//! ticket wait for each other, so an identical retry gets the first one's stored answer instead
//! of drawing again. (A chain cannot fork anyway: a ticket is used, and its one successor made,
//! by one conditional update, which also settles uses from other replicas.)
//!
//! A hold is keyed by the caller and the ticket's id. Only a ticket's own caller can use it
//! (every lookup names the caller), so uses that can succeed still wait for each other, while a
//! request naming another caller's ticket (ids are public: `GET /tickets/{id}`) holds a key of
//! its own and never queues behind the owner's draw, nor the owner behind it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// A held ticket: released when dropped.
pub type Held = tokio::sync::OwnedMutexGuard<()>;

/// One ticket's lock, kept while a draw holds or waits for it.
type Lock = tokio::sync::Mutex<()>;

/// The map's size below which it is never swept.
const SWEEP_FLOOR: usize = 1024;

/// The holds of one process, by caller and ticket id (entries no draw holds are swept as the
/// map grows).
#[derive(Debug)]
pub struct Holds {
    map: Mutex<HashMap<(String, String), Weak<Lock>>>,
    /// The map's size that triggers the next sweep.
    sweep_at: AtomicUsize,
}

impl Default for Holds {
    fn default() -> Self {
        Self { map: Mutex::new(HashMap::new()), sweep_at: AtomicUsize::new(SWEEP_FLOOR) }
    }
}

impl Holds {
    /// Holds ticket `id` for a draw of `caller`'s, once no other draw of `caller`'s holds it.
    pub async fn hold(&self, caller: &str, id: &str) -> Held {
        let lock = {
            let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
            if map.len() >= self.sweep_at.load(Ordering::Relaxed) {
                map.retain(|_, lock| lock.strong_count() > 0);
                self.sweep_at.store((2 * map.len()).max(SWEEP_FLOOR), Ordering::Relaxed);
            }
            let key = (caller.to_owned(), id.to_owned());
            match map.get(&key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(Lock::new(()));
                    map.insert(key, Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }

    /// How many entries the map keeps (held or not yet swept).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    /// Whether `hold` is taken at its first poll, outside tokio's cooperative budget (which
    /// would make a poll pending whatever the lock).
    fn taken_at_once(hold: impl std::future::Future<Output = Held>) -> Option<Held> {
        tokio::task::unconstrained(hold).now_or_never()
    }

    const ID: &str = "01938a4e-0000-7000-8000-000000000001";

    #[tokio::test]
    async fn one_callers_uses_wait_for_each_other_not_for_another_caller() {
        let holds = Holds::default();
        let owner = holds.hold("owner", ID).await;
        assert!(taken_at_once(holds.hold("owner", ID)).is_none(), "a second use of the owner's waits");
        let other = taken_at_once(holds.hold("intruder", ID));
        assert!(other.is_some(), "another caller naming the ticket does not queue behind the owner");
        let mut again = Box::pin(tokio::task::unconstrained(holds.hold("owner", ID)));
        assert!((&mut again).now_or_never().is_none());
        // The intruder holding its own key does not keep the owner's next use waiting.
        drop(owner);
        assert!(again.now_or_never().is_some(), "released, the owner's next use goes ahead");
        assert!(taken_at_once(holds.hold("owner", "01938a4e-0000-7000-8000-000000000002")).is_some());
    }

    #[tokio::test]
    async fn released_holds_are_swept_as_the_map_grows() {
        let holds = Holds::default();
        let kept = holds.hold("owner", ID).await;
        for i in 0..3 * SWEEP_FLOOR {
            drop(holds.hold("owner", &format!("id-{i}")).await);
        }
        assert!(holds.len() <= SWEEP_FLOOR + 1, "{} entries kept", holds.len());
        assert!(taken_at_once(holds.hold("owner", ID)).is_none(), "a held ticket survives the sweep");
        drop(kept);
    }
}
