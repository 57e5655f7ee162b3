//! The synchronisation primitives the concurrent core (DeltaFIFO, store, informer, listener)
//! uses: the real ones normally, the `shuttle` model checker's under `--cfg shuttle`.
//!
//! Why a shim: the interleaving checks (`src/cache/interleavings/`) run the real FIFO, store,
//! informer apply path and listener under a scheduler that controls every lock, wait, atomic
//! and thread switch, and so explore orders a timing-based test would almost never hit. That
//! needs the code to take its primitives from one place.
//!
//! In a normal build everything here is a plain re-export of `parking_lot`, `std` and
//! `crossbeam-channel`: no wrapper, no cost. Under `--cfg shuttle` (only ever used to run those
//! checks, see CONTRIBUTING.md) the same names are thin `parking_lot`-shaped wrappers around
//! shuttle's types, and the channel is a queue behind a shuttle mutex and condvar. A timed
//! wait is modelled as "either the deadline passes now (after the other threads had a chance
//! to run) or a notification comes", the choice made by shuttle's replayable randomness; a check
//! that uses a timed wait must therefore make sure a notification eventually comes.
//!
//! Only the primitives the core uses are provided; extend both halves together.

#[cfg(not(shuttle))]
mod imp {
    pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
    pub(crate) use std::sync::atomic;
    pub(crate) use std::thread;

    /// The listener's channel.
    pub(crate) mod channel {
        pub(crate) use crossbeam_channel::{unbounded, Receiver, Sender, TryRecvError};
    }
}

#[cfg(shuttle)]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    use shuttle::rand::{thread_rng, Rng};

    pub(crate) use shuttle::sync::atomic;
    pub(crate) use shuttle::thread;

    /// A mutex without poisoning, locked by `lock()`, like `parking_lot::Mutex`.
    #[derive(Default)]
    pub(crate) struct Mutex<T: ?Sized>(shuttle::sync::Mutex<T>);

    /// The guard of a locked [`Mutex`]; a [`Condvar`] wait releases and retakes it in place.
    pub(crate) struct MutexGuard<'a, T: ?Sized> {
        mutex: &'a shuttle::sync::Mutex<T>,
        guard: Option<shuttle::sync::MutexGuard<'a, T>>,
    }

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(shuttle::sync::Mutex::new(value))
        }
    }

    impl<T: ?Sized> Mutex<T> {
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard {
                mutex: &self.0,
                guard: Some(lock_unpoisoned(&self.0)),
            }
        }
    }

    impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for Mutex<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_tuple("Mutex").field(&&*self.lock()).finish()
        }
    }

    fn lock_unpoisoned<T: ?Sized>(m: &shuttle::sync::Mutex<T>) -> shuttle::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    impl<T: ?Sized> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.guard
                .as_deref()
                .expect("the guard is held outside a wait")
        }
    }

    impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.guard
                .as_deref_mut()
                .expect("the guard is held outside a wait")
        }
    }

    /// What a timed wait ended with, like `parking_lot::WaitTimeoutResult`.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct WaitTimeoutResult(bool);

    impl WaitTimeoutResult {
        pub(crate) fn timed_out(self) -> bool {
            self.0
        }
    }

    /// A condition variable waited on with a `&mut MutexGuard`, like `parking_lot::Condvar`.
    #[derive(Default)]
    pub(crate) struct Condvar(shuttle::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(shuttle::sync::Condvar::new())
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }

        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let g = guard.guard.take().expect("the guard is held");
            guard.guard = Some(self.0.wait(g).unwrap_or_else(|e| e.into_inner()));
        }

        /// Either times out now (the lock released and retaken, so others may run in
        /// between) or waits for a notification; shuttle's randomness picks which.
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            _deadline: Instant,
        ) -> WaitTimeoutResult {
            if thread_rng().gen_bool(0.5) {
                drop(guard.guard.take());
                thread::yield_now();
                guard.guard = Some(lock_unpoisoned(guard.mutex));
                WaitTimeoutResult(true)
            } else {
                self.wait(guard);
                WaitTimeoutResult(false)
            }
        }
    }

    /// A reader-writer lock without poisoning, like `parking_lot::RwLock`.
    #[derive(Default)]
    pub(crate) struct RwLock<T: ?Sized>(shuttle::sync::RwLock<T>);

    impl<T> RwLock<T> {
        pub(crate) fn new(value: T) -> Self {
            RwLock(shuttle::sync::RwLock::new(value))
        }
    }

    impl<T: ?Sized> RwLock<T> {
        pub(crate) fn read(&self) -> shuttle::sync::RwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(|e| e.into_inner())
        }

        pub(crate) fn write(&self) -> shuttle::sync::RwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(|e| e.into_inner())
        }
    }

    /// The listener's channel: crossbeam-channel's unbounded channel, as far as the listener
    /// uses it (send, try_recv, recv, len, disconnection when every sender is dropped).
    pub(crate) mod channel {
        use std::collections::VecDeque;
        use std::sync::Arc;

        pub(crate) use crossbeam_channel::{RecvError, SendError, TryRecvError};

        struct State<T> {
            queue: VecDeque<T>,
            senders: usize,
            receivers: usize,
        }

        struct Shared<T> {
            state: shuttle::sync::Mutex<State<T>>,
            ready: shuttle::sync::Condvar,
        }

        impl<T> Shared<T> {
            fn lock(&self) -> shuttle::sync::MutexGuard<'_, State<T>> {
                self.state.lock().unwrap_or_else(|e| e.into_inner())
            }
        }

        /// The sending half; cloneable.
        pub(crate) struct Sender<T>(Arc<Shared<T>>);

        /// The receiving half; cloneable.
        pub(crate) struct Receiver<T>(Arc<Shared<T>>);

        /// A channel without a bound.
        pub(crate) fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
            let shared = Arc::new(Shared {
                state: shuttle::sync::Mutex::new(State {
                    queue: VecDeque::new(),
                    senders: 1,
                    receivers: 1,
                }),
                ready: shuttle::sync::Condvar::new(),
            });
            (Sender(Arc::clone(&shared)), Receiver(shared))
        }

        impl<T> Sender<T> {
            pub(crate) fn send(&self, value: T) -> Result<(), SendError<T>> {
                let mut st = self.0.lock();
                if st.receivers == 0 {
                    return Err(SendError(value));
                }
                st.queue.push_back(value);
                drop(st);
                self.0.ready.notify_one();
                Ok(())
            }
        }

        impl<T> Clone for Sender<T> {
            fn clone(&self) -> Self {
                self.0.lock().senders += 1;
                Sender(Arc::clone(&self.0))
            }
        }

        impl<T> Drop for Sender<T> {
            fn drop(&mut self) {
                let mut st = self.0.lock();
                st.senders -= 1;
                let last = st.senders == 0;
                drop(st);
                if last {
                    self.0.ready.notify_all();
                }
            }
        }

        impl<T> Receiver<T> {
            pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
                let mut st = self.0.lock();
                match st.queue.pop_front() {
                    Some(v) => Ok(v),
                    None if st.senders == 0 => Err(TryRecvError::Disconnected),
                    None => Err(TryRecvError::Empty),
                }
            }

            pub(crate) fn recv(&self) -> Result<T, RecvError> {
                let mut st = self.0.lock();
                loop {
                    if let Some(v) = st.queue.pop_front() {
                        return Ok(v);
                    }
                    if st.senders == 0 {
                        return Err(RecvError);
                    }
                    st = self.0.ready.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            }

            pub(crate) fn len(&self) -> usize {
                self.0.lock().queue.len()
            }
        }

        impl<T> Clone for Receiver<T> {
            fn clone(&self) -> Self {
                self.0.lock().receivers += 1;
                Receiver(Arc::clone(&self.0))
            }
        }

        impl<T> Drop for Receiver<T> {
            fn drop(&mut self) {
                self.0.lock().receivers -= 1;
            }
        }
    }
}

pub(crate) use imp::*;
