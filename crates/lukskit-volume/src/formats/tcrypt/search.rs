//! Finding the header key: every PBKDF2 variant (the output blocks of all of them shared by
//! the cores) with every cipher and cascade, until the decrypted header carries a magic. cryptsetup tries them one
//! after another; the answer is the same (the first variant in its order that decrypts,
//! and within it the first cascade), as later variants wait until no earlier one can still
//! win.

use super::ciphers::{decrypt_header, Cascade, CASCADES};
use super::header::{Magic, RawHeader};
use super::kdf::{self, KdfVariant};
use super::{ENC_LEN, HDR_KEY_LEN};
use lukskit_crypto::kdf::Pbkdf2Prf;
use lukskit_crypto::SecretBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What the trials are limited to.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    /// `-c`: only table entries whose chain name contains this.
    pub cipher: Option<&'a str>,
    /// VeraCrypt's `VERA` magic counts.
    pub veracrypt: bool,
    /// The PIM given.
    pub pim: Option<u32>,
}

/// A successful trial: the variant, the table entry and the decrypted header bytes.
pub struct Found {
    /// The KDF variant (index into the table, and the variant).
    pub kdf: (usize, KdfVariant),
    /// The cascade.
    pub cascade: &'static Cascade,
    /// The decrypted 448 bytes.
    pub decrypted: SecretBuf,
}

/// Try every table entry allowed by `limits` with one header key: the first whose
/// decryption shows a magic.
fn try_ciphers(
    raw: &RawHeader,
    key: &[u8],
    limits: &Limits<'_>,
) -> Option<(&'static Cascade, SecretBuf)> {
    for cascade in CASCADES {
        if limits
            .cipher
            .is_some_and(|c| !cascade.long_name.contains(c))
        {
            continue;
        }
        let mut buf = [0u8; ENC_LEN];
        buf.copy_from_slice(&raw.encrypted);
        let ok = decrypt_header(cascade, key, &mut buf).is_ok()
            && Magic::of(&buf, limits.veracrypt).is_some();
        let decrypted = SecretBuf::from_slice(&buf);
        zeroize::Zeroize::zeroize(&mut buf);
        if ok {
            return Some((cascade, decrypted));
        }
    }
    None
}

/// One KDF variant's derivation, filled block by block.
struct Trial {
    variant: (usize, KdfVariant),
    prf: Pbkdf2Prf,
    iterations: u32,
    key: Mutex<SecretBuf>,
    /// The trial's jobs: (first 1-based block index, blocks). A job is one block, or a run
    /// of blocks computed side by side (SIMD lanes), split so that every thread gets a share.
    jobs: Vec<(u32, usize)>,
    /// Jobs not yet done; the thread that does the last one tries the ciphers.
    jobs_left: AtomicUsize,
}

impl Trial {
    fn new(variant: (usize, KdfVariant), prf: Pbkdf2Prf, iterations: u32, threads: usize) -> Self {
        let blocks = HDR_KEY_LEN.div_ceil(prf.block_len());
        let per_job = blocks.div_ceil(threads).clamp(1, prf.lanes());
        let jobs: Vec<(u32, usize)> = (0..blocks)
            .step_by(per_job)
            .map(|b| (b as u32 + 1, per_job.min(blocks - b)))
            .collect();
        Trial {
            variant,
            prf,
            iterations,
            key: Mutex::new(SecretBuf::zeroed(HDR_KEY_LEN)),
            jobs_left: AtomicUsize::new(jobs.len()),
            jobs,
        }
    }
}

/// Run the trials of `variants` (in table order) on `threads` threads.
///
/// The work is the output blocks of every variant's PBKDF2 (a 192-byte header key is 3
/// SHA-512 blocks, 10 RIPEMD-160 blocks, …; RIPEMD-160's run side by side in SIMD lanes, a
/// share per thread), handed out in table order: the threads share the blocks of one variant, so the variants complete in cryptsetup's order, each about as
/// soon as the cores allow. Once a variant decrypts the header, the blocks of later variants
/// still running are abandoned and none is started: no later variant can win.
pub fn find(
    raw: &RawHeader,
    input: &SecretBuf,
    variants: &[(usize, KdfVariant)],
    limits: &Limits<'_>,
    threads: usize,
) -> Option<Found> {
    let threads = threads.max(1);
    let trials: Vec<Trial> = variants
        .iter()
        .filter_map(|&(index, variant)| {
            let iterations = variant.iterations_with(limits.pim);
            // cryptsetup skips a variant whose count is 0 (a PIM that wraps around to it)
            // and one its crypto backend lacks.
            let prf = kdf::prf(&variant)?;
            (iterations > 0).then(|| Trial::new((index, variant), prf, iterations, threads))
        })
        .collect();
    // Jobs: (trial, first 1-based block index, blocks), in table order.
    let jobs: Vec<(usize, u32, usize)> = trials
        .iter()
        .enumerate()
        .flat_map(|(t, trial)| trial.jobs.iter().map(move |&(b, n)| (t, b, n)))
        .collect();
    let next = AtomicUsize::new(0);
    // Position (in `trials`) of the earliest success so far.
    let best = AtomicUsize::new(usize::MAX);
    let results: Mutex<Vec<Option<Found>>> = Mutex::new((0..trials.len()).map(|_| None).collect());
    let worker = || loop {
        let j = next.fetch_add(1, Ordering::SeqCst);
        let Some(&(t, index, count)) = jobs.get(j) else {
            return;
        };
        // Jobs come in table order: once an earlier trial has won, nothing left can.
        if t > best.load(Ordering::SeqCst) {
            return;
        }
        let trial = &trials[t];
        let len = trial.prf.block_len();
        let start = (index as usize - 1) * len;
        let end = (start + count * len).min(HDR_KEY_LEN);
        let mut block = SecretBuf::zeroed(end - start);
        let stop = || best.load(Ordering::SeqCst) < t;
        let done = lukskit_crypto::kdf::pbkdf2_blocks(
            trial.prf,
            input.as_bytes(),
            &raw.salt,
            trial.iterations,
            index,
            block.as_mut_bytes(),
            &stop,
        );
        if !matches!(done, Ok(true)) {
            // Abandoned (an earlier trial won) or refused: this trial cannot complete.
            if done.is_err() {
                trial.jobs_left.store(usize::MAX, Ordering::SeqCst);
            }
            continue;
        }
        let Ok(mut key) = trial.key.lock() else {
            return;
        };
        key.as_mut_bytes()[start..end].copy_from_slice(block.as_bytes());
        drop(block);
        if trial.jobs_left.fetch_sub(1, Ordering::SeqCst) != 1 {
            continue;
        }
        if let Some((cascade, decrypted)) = try_ciphers(raw, key.as_bytes(), limits) {
            best.fetch_min(t, Ordering::SeqCst);
            if let Ok(mut r) = results.lock() {
                r[t] = Some(Found {
                    kdf: trial.variant,
                    cascade,
                    decrypted,
                });
            }
        }
    };
    let threads = threads.clamp(1, jobs.len().max(1));
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(worker);
        }
        worker();
    });
    let results = results.into_inner().ok()?;
    results.into_iter().flatten().next()
}
