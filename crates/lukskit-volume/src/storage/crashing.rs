//! Crash injection as a storage wrapper: [`CrashingStorage`] passes everything to the storage
//! it wraps until the write or sync a [`CrashPlan`] names, and then does what the plan says
//! instead of it (fail it and everything after it, end the process, or raise SIGINT).

use lukskit_format::io::Storage;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The operation a crash point counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashOp {
    /// A write (`write_all_at`).
    Write,
    /// A sync (`sync` or `sync_data`).
    Sync,
}

/// What happens at a crash point, instead of the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashAction {
    /// The operation fails, and so does every write and sync after it (of every storage
    /// sharing the plan): the storage holds what a crash at that moment would leave (reads go
    /// on working, so that a test can look at it). For tests inside one process.
    Fail,
    /// The process ends at once with status [`CrashPlan::EXIT_STATUS`], running no
    /// destructors and flushing nothing (for tests that drive a process).
    Exit,
    /// SIGINT is raised in this process (a Ctrl-C typed at that moment), then the operation
    /// goes on.
    Interrupt,
}

/// One crash point: the `n`th operation `op` (counting from 1).
#[derive(Debug, Clone, Copy)]
struct Trigger {
    op: CrashOp,
    n: u64,
    action: CrashAction,
}

/// Where to crash: counts the writes and syncs of every [`CrashingStorage`] sharing it.
#[derive(Debug, Default)]
pub struct CrashPlan {
    triggers: Vec<Trigger>,
    writes: AtomicU64,
    syncs: AtomicU64,
    crashed: AtomicBool,
}

impl CrashPlan {
    /// Exit status of [`CrashAction::Exit`].
    pub const EXIT_STATUS: i32 = 86;

    /// A plan with no crash point (it only counts).
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a crash point: `action` instead of the `n`th operation `op` (from 1).
    pub fn at(mut self, op: CrashOp, n: u64, action: CrashAction) -> Self {
        self.triggers.push(Trigger { op, n, action });
        self
    }

    /// How many writes and syncs the storages of this plan were asked for so far (a
    /// crashed one included).
    pub fn counts(&self) -> (u64, u64) {
        (
            self.writes.load(Ordering::SeqCst),
            self.syncs.load(Ordering::SeqCst),
        )
    }

    /// Whether a [`CrashAction::Fail`] point was reached.
    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    /// Count one operation `op` and act on it: `Err` when it must not happen.
    pub fn point(&self, op: CrashOp) -> io::Result<()> {
        if self.crashed() {
            return Err(crashed());
        }
        let counter = match op {
            CrashOp::Write => &self.writes,
            CrashOp::Sync => &self.syncs,
        };
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        for t in self.triggers.iter().filter(|t| t.op == op && t.n == n) {
            match t.action {
                CrashAction::Fail => {
                    self.crashed.store(true, Ordering::SeqCst);
                    return Err(crashed());
                }
                CrashAction::Exit => exit_now(),
                CrashAction::Interrupt => interrupt(),
            }
        }
        Ok(())
    }
}

fn crashed() -> io::Error {
    io::Error::other("injected crash: the storage takes no more writes")
}

fn exit_now() -> ! {
    // SAFETY: _exit ends the process immediately without running destructors or flushing
    // buffers, which is exactly the crash being simulated; it takes no pointers.
    unsafe { libc::_exit(CrashPlan::EXIT_STATUS) }
}

fn interrupt() {
    // SAFETY: raise(3) only sends a signal to this process; whatever the process does with
    // SIGINT (its handler, or the default action) is what is being tested.
    unsafe { libc::raise(libc::SIGINT) };
}

/// A storage that crashes where its [`CrashPlan`] says (see the module documentation).
#[derive(Debug)]
pub struct CrashingStorage<S> {
    inner: S,
    plan: Arc<CrashPlan>,
}

impl<S: Storage> CrashingStorage<S> {
    /// Wrap `inner`; several storages may share one `plan` (their operations are counted
    /// together, as one process's writes to a header and to a file beside it).
    pub fn new(inner: S, plan: Arc<CrashPlan>) -> Self {
        CrashingStorage { inner, plan }
    }

    /// The wrapped storage (to look at what the crash left, bypassing the plan).
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: Storage> Storage for CrashingStorage<S> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.plan.point(CrashOp::Write)?;
        self.inner.write_all_at(buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        self.plan.point(CrashOp::Sync)?;
        self.inner.sync()
    }
    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
    fn sync_data(&self) -> io::Result<()> {
        self.plan.point(CrashOp::Sync)?;
        self.inner.sync_data()
    }
    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        self.plan.point(CrashOp::Write)?;
        self.inner.discard(offset, len)
    }
    fn local_file(&self) -> Option<&std::fs::File> {
        self.inner.local_file()
    }
}

/// The process-wide plan the crash tests of the command line set through the environment
/// (builds with the `crash-injection` feature, the test suite's, only: other builds never
/// read these variables).
#[cfg(feature = "crash-injection")]
pub(crate) mod env {
    use super::{CrashAction, CrashOp, CrashPlan};
    use std::sync::{Arc, OnceLock};

    /// `write:N` or `sync:N`: [`CrashAction::Exit`] at the Nth write or sync of a metadata
    /// device (and of the LUKS1 re-encryption's files and data).
    pub const CRASH_ENV: &str = "LUKSKIT_CRASH_AT";
    /// `write:N` or `sync:N`: [`CrashAction::Interrupt`] there.
    pub const SIGNAL_ENV: &str = "LUKSKIT_SIGINT_AT";

    /// The plan of the environment, `None` when neither variable is set.
    pub fn plan() -> Option<Arc<CrashPlan>> {
        static PLAN: OnceLock<Option<Arc<CrashPlan>>> = OnceLock::new();
        PLAN.get_or_init(|| {
            let mut plan = CrashPlan::new();
            let mut any = false;
            for (var, action) in [
                (CRASH_ENV, CrashAction::Exit),
                (SIGNAL_ENV, CrashAction::Interrupt),
            ] {
                if let Some((op, n)) = std::env::var(var).ok().as_deref().and_then(parse) {
                    plan = plan.at(op, n, action);
                    any = true;
                }
            }
            any.then(|| Arc::new(plan))
        })
        .clone()
    }

    fn parse(spec: &str) -> Option<(CrashOp, u64)> {
        let (k, v) = spec.split_once(':')?;
        let op = match k {
            "write" => CrashOp::Write,
            "sync" => CrashOp::Sync,
            _ => return None,
        };
        Some((op, v.parse().ok()?))
    }

    /// A crash point of the environment's plan before a write that does not go through a
    /// wrapped storage (the LUKS1 re-encryption's `O_DIRECT` data and its files).
    pub fn before_write() {
        if let Some(p) = plan() {
            let _ = p.point(CrashOp::Write);
        }
    }

    /// A crash point before such a sync (see [`before_write`]).
    pub fn before_sync() {
        if let Some(p) = plan() {
            let _ = p.point(CrashOp::Sync);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lukskit_format::io::MemStorage;

    #[test]
    fn fails_from_the_chosen_write_on_and_keeps_what_came_before() {
        let plan = Arc::new(CrashPlan::new().at(CrashOp::Write, 2, CrashAction::Fail));
        let s = CrashingStorage::new(MemStorage::new(4), Arc::clone(&plan));
        s.write_all_at(b"a", 0).unwrap();
        s.sync().unwrap();
        assert!(s.write_all_at(b"b", 1).is_err(), "the 2nd write crashes");
        assert!(
            s.write_all_at(b"c", 2).is_err(),
            "nothing is written after a crash"
        );
        assert!(s.sync().is_err(), "nor synced");
        assert!(plan.crashed());
        assert_eq!(s.inner().to_vec(), b"a\0\0\0");
        let mut b = [0u8; 1];
        s.read_exact_at(&mut b, 0).unwrap();
        assert_eq!(&b, b"a");
    }

    #[test]
    fn storages_sharing_a_plan_count_together() {
        let plan = Arc::new(CrashPlan::new().at(CrashOp::Sync, 2, CrashAction::Fail));
        let a = CrashingStorage::new(MemStorage::new(1), Arc::clone(&plan));
        let b = CrashingStorage::new(MemStorage::new(1), Arc::clone(&plan));
        a.sync().unwrap();
        assert!(
            b.sync_data().is_err(),
            "the 2nd sync of the plan, on the other storage"
        );
        assert!(a.write_all_at(b"x", 0).is_err());
        assert_eq!(plan.counts(), (0, 2));
    }
}
