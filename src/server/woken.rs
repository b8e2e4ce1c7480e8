//! A future polled only when it was woken: [`OnWake`] keeps its own waker, and a poll of the
//! task it is in passes it on to the inner future only after that waker fired (or on the
//! first poll). A connection's task selects over the connection and its side events (the
//! deadlines' timers, the shutdown phase, a late HTTP/2 GOAWAY); without this, every wake of
//! the connection (one or more per request) polled the five of them again, about 850
//! instructions of a `/token` request (callgrind, benches/README.md). This is the mechanism
//! `futures`' `FuturesUnordered` uses per future, for one future and without its queue.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// The wake flag of one [`OnWake`], reusable for the next future of the same task.
#[derive(Debug)]
pub struct Flag {
    woken: AtomicBool,
    /// The waker of the task the future is polled in.
    task: AtomicWaker,
}

impl Flag {
    /// A flag set: the first poll of a future under it polls the inner future.
    pub fn new() -> Arc<Flag> {
        Arc::new(Flag { woken: AtomicBool::new(true), task: AtomicWaker::new() })
    }
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

pin_project_lite::pin_project! {
    /// `inner`, polled only when its own waker fired since its last poll.
    pub struct OnWake<F> {
        #[pin]
        inner: F,
        flag: Arc<Flag>,
        waker: Waker,
    }
}

impl<F: Future> OnWake<F> {
    /// Wraps `inner`, whose first poll happens on this future's first poll. `flag` must not be
    /// shared with another live [`OnWake`]; it is set again here, so a flag left unset by the
    /// previous future of a loop does not keep this one from its first poll.
    pub fn new(inner: F, flag: &Arc<Flag>) -> OnWake<F> {
        flag.woken.store(true, Ordering::Relaxed);
        OnWake { inner, flag: Arc::clone(flag), waker: Waker::from(Arc::clone(flag)) }
    }
}

impl<F: Future> Future for OnWake<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        // Registered before the flag is read: a wake between the two is not lost.
        this.flag.task.register(cx.waker());
        if !this.flag.woken.swap(false, Ordering::Acquire) {
            return Poll::Pending;
        }
        this.inner.poll(&mut Context::from_waker(this.waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts its polls; ready once `ready` is set, after waking its waker.
    struct Probe {
        polls: Arc<AtomicUsize>,
        waker: Arc<std::sync::Mutex<Option<Waker>>>,
        ready: Arc<AtomicBool>,
    }

    impl Future for Probe {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::Relaxed);
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            if self.ready.load(Ordering::Relaxed) { Poll::Ready(()) } else { Poll::Pending }
        }
    }

    /// A task waker that counts its wakes.
    struct Counted(AtomicUsize);
    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            // Release: a test that sees the wake sees what the waker did before it.
            self.0.fetch_add(1, Ordering::Release);
        }
    }

    #[test]
    fn the_inner_future_is_polled_first_and_then_only_after_its_own_wake() {
        let (polls, inner_waker, ready) = Default::default();
        let probe =
            Probe { polls: Arc::clone(&polls), waker: Arc::clone(&inner_waker), ready: Arc::clone(&ready) };
        let flag = Flag::new();
        let mut future = Box::pin(OnWake::new(probe, &flag));
        let task = Arc::new(Counted(AtomicUsize::new(0)));
        let task_waker = Waker::from(Arc::clone(&task));
        let mut cx = Context::from_waker(&task_waker);
        let polls_now = |polls: &Arc<AtomicUsize>| polls.load(Ordering::Relaxed);

        assert!(future.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls_now(&polls), 1, "the first poll reaches the inner future");
        for _ in 0..10 {
            assert!(future.as_mut().poll(&mut cx).is_pending());
        }
        assert_eq!(polls_now(&polls), 1, "wakes of the task alone do not poll it again");

        // The inner future's waker wakes the task, and the next poll reaches it.
        ready.store(true, Ordering::Relaxed);
        inner_waker.lock().unwrap().take().unwrap().wake();
        assert_eq!(task.0.load(Ordering::Relaxed), 1, "the task was woken");
        assert!(future.as_mut().poll(&mut cx).is_ready());
        assert_eq!(polls_now(&polls), 2);
    }

    /// An inner future that wakes itself while polled (as tokio's cooperative budget does):
    /// the task is woken, and its next poll reaches the inner future again.
    #[test]
    fn a_wake_during_the_inner_poll_is_not_lost() {
        let polls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&polls);
        let inner = std::future::poll_fn(move |cx| {
            if counted.fetch_add(1, Ordering::Relaxed) == 0 {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        });
        let mut future = Box::pin(OnWake::new(inner, &Flag::new()));
        let task = Arc::new(Counted(AtomicUsize::new(0)));
        let task_waker = Waker::from(Arc::clone(&task));
        let mut cx = Context::from_waker(&task_waker);
        assert!(future.as_mut().poll(&mut cx).is_pending());
        assert_eq!(task.0.load(Ordering::Relaxed), 1, "the task was woken");
        assert!(future.as_mut().poll(&mut cx).is_ready());
        assert_eq!(polls.load(Ordering::Relaxed), 2);
    }

    /// A wake from another thread, racing the task's polls: every one is seen.
    #[test]
    fn wakes_from_another_thread_are_never_lost() {
        for _ in 0..200 {
            let (polls, inner_waker, ready) = Default::default();
            let probe = Probe { polls, waker: Arc::clone(&inner_waker), ready: Arc::clone(&ready) };
            let mut future = Box::pin(OnWake::new(probe, &Flag::new()));
            let task = Arc::new(Counted(AtomicUsize::new(0)));
            let task_waker = Waker::from(Arc::clone(&task));
            let mut cx = Context::from_waker(&task_waker);
            assert!(future.as_mut().poll(&mut cx).is_pending());
            let waker = inner_waker.lock().unwrap().take().unwrap();
            let (ready_there, task_there) = (Arc::clone(&ready), Arc::clone(&task));
            let waking = std::thread::spawn(move || {
                ready_there.store(true, Ordering::Relaxed);
                waker.wake();
            });
            // Poll while the other thread may be waking; once the task was woken, a poll
            // after it must reach the ready inner future.
            loop {
                let woken_before = task_there.0.load(Ordering::Acquire) > 0;
                if future.as_mut().poll(&mut cx).is_ready() {
                    break;
                }
                assert!(!woken_before, "a poll after the task's wake did not reach the inner future");
                std::hint::spin_loop();
            }
            waking.join().unwrap();
        }
    }

    #[test]
    fn a_reused_flag_polls_the_next_future_first() {
        let flag = Flag::new();
        let task_waker = Waker::from(Arc::new(Counted(AtomicUsize::new(0))));
        let mut cx = Context::from_waker(&task_waker);
        let mut first = Box::pin(OnWake::new(std::future::pending::<()>(), &flag));
        assert!(first.as_mut().poll(&mut cx).is_pending());
        drop(first);
        let mut second = Box::pin(OnWake::new(std::future::ready(7), &flag));
        assert_eq!(second.as_mut().poll(&mut cx), Poll::Ready(7));
    }
}
