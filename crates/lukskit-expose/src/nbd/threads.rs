//! Starting threads without panicking: `std::thread::spawn` (and `Scope::spawn`) panic
//! when the system refuses a thread, and release builds abort on panic, so a client able
//! to make the server start threads could otherwise take the whole serving process down.
//! Every thread of the NBD server starts through [`Threads`], which returns the error.

use std::io;
use std::thread::{Builder, JoinHandle, Scope, ScopedJoinHandle};

/// Starts the server's threads, returning failures as errors.
#[derive(Default)]
pub(crate) struct Threads {
    /// Test seam: how many of the next starts fail as if the system were out of threads.
    #[cfg(test)]
    fail_next: std::sync::atomic::AtomicUsize,
}

impl Threads {
    /// Start a named thread.
    pub(crate) fn spawn<F, T>(&self, name: &str, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.check()?;
        Builder::new().name(name.into()).spawn(f)
    }

    /// Start a named thread in `scope`.
    pub(crate) fn spawn_scoped<'scope, 'env, F, T>(
        &self,
        scope: &'scope Scope<'scope, 'env>,
        name: &str,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        self.check()?;
        Builder::new().name(name.into()).spawn_scoped(scope, f)
    }

    /// Make the next `n` starts fail (tests only).
    #[cfg(test)]
    pub(crate) fn fail_next(&self, n: usize) {
        self.fail_next.store(n, std::sync::atomic::Ordering::SeqCst);
    }

    #[cfg(test)]
    fn check(&self) -> io::Result<()> {
        use std::sync::atomic::Ordering;
        let failed = self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failed {
            // What pthread_create reports when out of threads or memory (EAGAIN).
            return Err(io::Error::from_raw_os_error(libc::EAGAIN));
        }
        Ok(())
    }

    #[cfg(not(test))]
    fn check(&self) -> io::Result<()> {
        Ok(())
    }
}
