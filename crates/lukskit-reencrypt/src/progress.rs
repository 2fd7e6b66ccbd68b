//! How a run tells its caller how far it got.

/// The caller's side of a run: told how far it is, asked whether to go on.
pub trait Progress {
    /// `done` of `total` bytes processed (before the first hot zone and after each);
    /// `false` stops the run at the next safe point (it can be resumed).
    fn update(&mut self, done: u64, total: u64) -> bool;
}
