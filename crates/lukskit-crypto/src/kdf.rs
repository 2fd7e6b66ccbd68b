//! Password-based key derivation: PBKDF2-HMAC and Argon2i/Argon2id, with
//! cryptsetup's limits, memory caps and benchmarks.
//!
//! * [`derive()`] is the entry point for keyslots and digests read from a header: it
//!   checks the parameters with [`Pbkdf::check_limits`] *before* allocating or
//!   computing anything, so a hostile header cannot make us allocate more than
//!   [`ARGON2_MAX_MEMORY_KIB`] (or more than the machine's RAM) or run a zero-cost KDF.
//! * [`Pbkdf::check_create_limits`] holds the stricter limits cryptsetup enforces
//!   for parameters it writes (`crypt_pbkdf_get_limits`).
//! * [`benchmark_pbkdf2`] and [`benchmark_argon2`] reproduce cryptsetup's
//!   `lib/crypto_backend/pbkdf_check.c` algorithms step by step.
//!
//! Argon2 is always version 0x13, without secret and without associated data
//! (LUKS2 `argon2i`/`argon2id` keyslots), computed by lukskit's own implementation
//! (`kdf/argon2_core.rs`): the `parallel` lanes of each slice on all cores, the block
//! compression in AVX-512, AVX2 or portable code as the CPU allows. PBKDF2 with SHA-1/
//! SHA-256/SHA-512 takes a fast path (`kdf/pbkdf2_sha.rs`), the other hashes the `pbkdf2`
//! crate.

use crate::{hash::HashAlg, CryptoError, Result, SecretBuf};
use zeroize::{Zeroize, Zeroizing};

mod argon2_blamka;
mod argon2_core;
mod argon2_memory;
mod pbkdf2_ripemd_x8;
mod pbkdf2_sha;
use pbkdf2_sha::{FastHash, Threads};

/// Minimum PBKDF2 iteration count cryptsetup uses for new keyslots and digests
/// (NIST SP 800-132 recommendation, `crypt_pbkdf_get_limits`).
pub const PBKDF2_MIN_ITERATIONS: u32 = 1000;
/// Minimum Argon2 time cost for new keyslots (`crypt_pbkdf_get_limits`).
pub const ARGON2_MIN_TIME: u32 = 4;
/// Maximum Argon2 time cost.
pub const ARGON2_MAX_TIME: u32 = u32::MAX;
/// Minimum Argon2 memory cost in KiB for new keyslots.
pub const ARGON2_MIN_MEMORY_KIB: u32 = 32;
/// Maximum Argon2 memory cost in KiB (4 GiB). Never exceeded, not even when reading.
pub const ARGON2_MAX_MEMORY_KIB: u32 = 4 * 1024 * 1024;
/// Maximum Argon2 parallelism (lanes and threads) for new keyslots.
pub const ARGON2_MAX_PARALLEL: u32 = 4;
/// Default maximum Argon2 memory cost in KiB (1 GiB, `--pbkdf-memory` default).
pub const ARGON2_DEFAULT_MEMORY_KIB: u32 = 1024 * 1024;

/// Memory cost (KiB) the Argon2 benchmark starts from when the cap allows it (64 MiB);
/// the benchmark never returns less unless the cap itself is lower (cryptsetup ≥ 2.4,
/// observed with cryptsetup 2.6.1: `benchmark --pbkdf argon2id --iter-time 20` gives 65536).
pub const ARGON2_BENCH_MIN_MEMORY_KIB: u32 = 64 * 1024;

/// Largest KDF output accepted, in bytes (a 4096-bit key; real LUKS keys are at most
/// a few hundred bytes). Bounds the work and allocation a hostile header can request.
pub const MAX_OUTPUT_LEN: usize = 512;

/// Smallest Argon2 tag length (libargon2 `ARGON2_MIN_OUTLEN`).
const ARGON2_MIN_OUTPUT_LEN: usize = 4;
/// Smallest Argon2 salt length (libargon2 `ARGON2_MIN_SALT_LENGTH`).
const ARGON2_MIN_SALT_LEN: usize = 8;
/// Argon2 sync points per pass; memory must hold at least 2 blocks per lane and slice.
const ARGON2_SYNC_POINTS: u32 = 4;
/// Largest lane count libargon2 accepts (`ARGON2_MAX_LANES`), the limit when reading.
const ARGON2_MAX_LANES: u32 = 0x00FF_FFFF;

/// The Argon2 variants LUKS2 uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Argon2Variant {
    /// Argon2i (data-independent addressing).
    I,
    /// Argon2id (hybrid; cryptsetup's default for LUKS2).
    Id,
}

impl Argon2Variant {
    /// The name used in LUKS2 headers and on the command line: `argon2i` / `argon2id`.
    pub fn name(self) -> &'static str {
        match self {
            Argon2Variant::I => "argon2i",
            Argon2Variant::Id => "argon2id",
        }
    }

    /// Parse `argon2i` / `argon2id` (exact, case-sensitive, as cryptsetup's `crypt_parse_pbkdf`).
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "argon2i" => Ok(Argon2Variant::I),
            "argon2id" => Ok(Argon2Variant::Id),
            _ => Err(CryptoError::Unsupported(format!("PBKDF {name}"))),
        }
    }
}

impl std::fmt::Display for Argon2Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A password-based KDF with its cost parameters (a LUKS2 keyslot `kdf` object, or the
/// PBKDF2 parameters of a LUKS1 keyslot or digest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pbkdf {
    /// PBKDF2 (RFC 8018) with HMAC-`hash`.
    Pbkdf2 {
        /// The HMAC hash.
        hash: HashAlg,
        /// Iteration count.
        iterations: u32,
    },
    /// Argon2 version 0x13 (RFC 9106) without secret or associated data.
    Argon2 {
        /// Argon2i or Argon2id.
        variant: Argon2Variant,
        /// Time cost (passes).
        time: u32,
        /// Memory cost in KiB.
        memory_kib: u32,
        /// Lanes and threads (LUKS2 `cpus`).
        parallel: u32,
    },
}

impl Pbkdf {
    /// The KDF type name used in LUKS2 headers: `pbkdf2`, `argon2i` or `argon2id`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Pbkdf::Pbkdf2 { .. } => "pbkdf2",
            Pbkdf::Argon2 { variant, .. } => variant.name(),
        }
    }

    /// Refuse parameters no conforming header can carry, before any work is done.
    ///
    /// These are the limits for *reading* (unlocking) existing keyslots, which are
    /// wider than those for creating them (see [`Pbkdf::check_create_limits`]):
    /// cryptsetup itself does not range-check KDF parameters read from a header
    /// (`luks2_keyslot_validate` only checks JSON types) and passes them to its
    /// backends, so what it unlocks is what those accept:
    ///
    /// * PBKDF2: iterations ≥ 1 (gcrypt/OpenSSL refuse 0; old LUKS1 headers may carry
    ///   counts below [`PBKDF2_MIN_ITERATIONS`]).
    /// * Argon2 (libargon2 `validate_inputs`): time ≥ 1; 1 ≤ parallel ≤ 2²⁴−1;
    ///   memory ≥ 8 × parallel KiB. In addition — deliberately stricter than
    ///   cryptsetup, which would try to allocate up to 4 TiB — memory must not exceed
    ///   [`ARGON2_MAX_MEMORY_KIB`], the most cryptsetup ever writes.
    ///
    /// Errors are [`CryptoError::Limit`].
    pub fn check_limits(&self) -> Result<()> {
        match *self {
            Pbkdf::Pbkdf2 { iterations, .. } => check_pbkdf2_iterations(iterations),
            Pbkdf::Argon2 {
                time,
                memory_kib,
                parallel,
                ..
            } => check_argon2_read_limits(time, memory_kib, parallel),
        }
    }

    /// The stricter limits cryptsetup enforces for parameters it *writes*
    /// (`crypt_pbkdf_get_limits`): PBKDF2 iterations ≥ [`PBKDF2_MIN_ITERATIONS`];
    /// Argon2 time ≥ [`ARGON2_MIN_TIME`], memory in
    /// [`ARGON2_MIN_MEMORY_KIB`]..=[`ARGON2_MAX_MEMORY_KIB`] and ≥ 8 × parallel,
    /// parallel in 1..=[`ARGON2_MAX_PARALLEL`]. Implies [`Pbkdf::check_limits`].
    pub fn check_create_limits(&self) -> Result<()> {
        self.check_limits()?;
        match *self {
            Pbkdf::Pbkdf2 { hash, iterations } => {
                if iterations < PBKDF2_MIN_ITERATIONS {
                    return Err(CryptoError::Limit(format!(
                        "PBKDF2-{hash} iteration count {iterations} is too low (minimum is {PBKDF2_MIN_ITERATIONS})"
                    )));
                }
            }
            Pbkdf::Argon2 {
                variant,
                time,
                memory_kib,
                parallel,
            } => {
                if time < ARGON2_MIN_TIME {
                    return Err(CryptoError::Limit(format!(
                        "{variant} time cost {time} is too low (minimum is {ARGON2_MIN_TIME})"
                    )));
                }
                if memory_kib < ARGON2_MIN_MEMORY_KIB {
                    return Err(CryptoError::Limit(format!(
                        "{variant} memory cost {memory_kib} KiB is too low (minimum is {ARGON2_MIN_MEMORY_KIB} KiB)"
                    )));
                }
                if parallel > ARGON2_MAX_PARALLEL {
                    return Err(CryptoError::Limit(format!(
                        "{variant} parallel threads {parallel} is too high (maximum is {ARGON2_MAX_PARALLEL})"
                    )));
                }
            }
        }
        Ok(())
    }
}

fn check_pbkdf2_iterations(iterations: u32) -> Result<()> {
    if iterations == 0 {
        return Err(CryptoError::Limit(
            "PBKDF2 iteration count must be at least 1".into(),
        ));
    }
    Ok(())
}

fn check_argon2_read_limits(time: u32, memory_kib: u32, parallel: u32) -> Result<()> {
    if time == 0 {
        return Err(CryptoError::Limit(
            "Argon2 time cost must be at least 1".into(),
        ));
    }
    if parallel == 0 || parallel > ARGON2_MAX_LANES {
        return Err(CryptoError::Limit(format!(
            "Argon2 parallel threads {parallel} out of range (1..={ARGON2_MAX_LANES})"
        )));
    }
    if memory_kib > ARGON2_MAX_MEMORY_KIB {
        return Err(CryptoError::Limit(format!(
            "Argon2 memory cost {memory_kib} KiB exceeds the maximum of {ARGON2_MAX_MEMORY_KIB} KiB"
        )));
    }
    // parallel <= 2^24 - 1, so this product fits in u64 easily.
    let min_memory = u64::from(parallel) * u64::from(2 * ARGON2_SYNC_POINTS);
    if u64::from(memory_kib) < min_memory {
        return Err(CryptoError::Limit(format!(
            "Argon2 memory cost {memory_kib} KiB is too low for {parallel} lanes (minimum is {min_memory} KiB)"
        )));
    }
    Ok(())
}

fn check_output_len(len: usize, min: usize) -> Result<()> {
    if len < min {
        return Err(CryptoError::InvalidInput(format!(
            "KDF output length {len} is too short (minimum is {min})"
        )));
    }
    if len > MAX_OUTPUT_LEN {
        return Err(CryptoError::Limit(format!(
            "KDF output length {len} exceeds the maximum of {MAX_OUTPUT_LEN} bytes"
        )));
    }
    Ok(())
}

/// Derive `out_len` bytes from `password` and `salt` with `kdf`.
///
/// Argon2: version 0x13, no secret, no associated data, lanes = threads = `parallel`
/// (lanes computed in parallel). PBKDF2: PBKDF2-HMAC-`hash`.
///
/// Everything is checked before any allocation or computation: [`Pbkdf::check_limits`],
/// the output length (1..=[`MAX_OUTPUT_LEN`], at least 4 for Argon2), the Argon2
/// salt length (≥ 8), and that the Argon2 memory cost fits in the machine's physical
/// RAM ([`CryptoError::Limit`] otherwise), so a hostile header cannot make us OOM.
pub fn derive(kdf: &Pbkdf, password: &[u8], salt: &[u8], out_len: usize) -> Result<SecretBuf> {
    kdf.check_limits()?;
    match *kdf {
        Pbkdf::Pbkdf2 { .. } => check_output_len(out_len, 1)?,
        Pbkdf::Argon2 { memory_kib, .. } => {
            check_output_len(out_len, ARGON2_MIN_OUTPUT_LEN)?;
            check_argon2_salt(salt)?;
            check_physical_memory(memory_kib)?;
        }
    }
    let mut out = SecretBuf::zeroed(out_len);
    match *kdf {
        Pbkdf::Pbkdf2 { hash, iterations } => {
            pbkdf2(hash, password, salt, iterations, out.as_mut_bytes())?
        }
        Pbkdf::Argon2 {
            variant,
            time,
            memory_kib,
            parallel,
        } => argon2(
            variant,
            password,
            salt,
            time,
            memory_kib,
            parallel,
            out.as_mut_bytes(),
        )?,
    }
    Ok(out)
}

/// PBKDF2-HMAC-`hash` (RFC 8018 §5.2) of `password` and `salt` with `iterations`
/// rounds, filling `out` (1..=[`MAX_OUTPUT_LEN`] bytes). `iterations` must be ≥ 1.
///
/// SHA-1, SHA-256 and SHA-512 (LUKS's hashes) take a fast path: precomputed HMAC states,
/// the CPU's SHA instructions where it has them, and the independent output blocks of a
/// key longer than the hash computed on separate threads (up to the online CPUs).
///
/// The truncated kernel-only hashes `wp256`/`wp384` are refused with
/// [`CryptoError::Unsupported`], as by cryptsetup's userspace crypto backends.
pub fn pbkdf2(
    hash: HashAlg,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    out: &mut [u8],
) -> Result<()> {
    pbkdf2_on(hash, password, salt, iterations, out, Threads::AllCores)
}

/// [`pbkdf2`] with a choice of threads for the SHA fast path.
fn pbkdf2_on(
    hash: HashAlg,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    out: &mut [u8],
    threads: Threads,
) -> Result<()> {
    check_pbkdf2_iterations(iterations)?;
    check_output_len(out.len(), 1)?;
    if let Some(fast) = FastHash::of(hash) {
        pbkdf2_sha::pbkdf2(fast, password, salt, iterations, out, threads);
        return Ok(());
    }
    pbkdf2_generic(hash, password, salt, iterations, out)
}

/// PBKDF2 on the `pbkdf2` crate (every hash; the reference the fast path is tested against).
fn pbkdf2_generic(
    hash: HashAlg,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    out: &mut [u8],
) -> Result<()> {
    match hash {
        HashAlg::Sha1 => pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, iterations, out),
        HashAlg::Sha224 => pbkdf2::pbkdf2_hmac::<sha2::Sha224>(password, salt, iterations, out),
        HashAlg::Sha256 => pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, iterations, out),
        HashAlg::Sha384 => pbkdf2::pbkdf2_hmac::<sha2::Sha384>(password, salt, iterations, out),
        HashAlg::Sha512 => pbkdf2::pbkdf2_hmac::<sha2::Sha512>(password, salt, iterations, out),
        HashAlg::Ripemd160 => {
            pbkdf2::pbkdf2_hmac::<ripemd::Ripemd160>(password, salt, iterations, out)
        }
        HashAlg::Whirlpool => {
            pbkdf2::pbkdf2_hmac::<whirlpool::Whirlpool>(password, salt, iterations, out)
        }
        HashAlg::Sha3_224 => pbkdf2::pbkdf2_hmac::<sha3::Sha3_224>(password, salt, iterations, out),
        HashAlg::Sha3_256 => pbkdf2::pbkdf2_hmac::<sha3::Sha3_256>(password, salt, iterations, out),
        HashAlg::Sha3_384 => pbkdf2::pbkdf2_hmac::<sha3::Sha3_384>(password, salt, iterations, out),
        HashAlg::Sha3_512 => pbkdf2::pbkdf2_hmac::<sha3::Sha3_512>(password, salt, iterations, out),
        HashAlg::Sm3 => pbkdf2::pbkdf2_hmac::<sm3::Sm3>(password, salt, iterations, out),
        HashAlg::Wp256 | HashAlg::Wp384 => {
            return Err(CryptoError::Unsupported(format!("PBKDF2 with hash {hash}")))
        }
    }
    Ok(())
}

/// The pseudo-random function of a PBKDF2 derivation done block by block
/// ([`pbkdf2_block`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pbkdf2Prf {
    /// HMAC with one of the hashes of [`HashAlg`].
    Hmac(HashAlg),
    /// HMAC with Streebog-512 (see [`pbkdf2_stribog512`]).
    HmacStribog512,
}

impl Pbkdf2Prf {
    /// The length of one PBKDF2 output block `T_i`: the hash's digest length.
    pub fn block_len(self) -> usize {
        match self {
            Pbkdf2Prf::Hmac(hash) => hash.digest_size(),
            Pbkdf2Prf::HmacStribog512 => 64,
        }
    }

    /// How many consecutive output blocks one [`pbkdf2_blocks`] call computes side by side,
    /// in about the time of one (SIMD lanes): 8 for RIPEMD-160 on a CPU with AVX2, else 1.
    pub fn lanes(self) -> usize {
        match self {
            Pbkdf2Prf::Hmac(HashAlg::Ripemd160) if pbkdf2_ripemd_x8::available() => {
                pbkdf2_ripemd_x8::LANES
            }
            _ => 1,
        }
    }
}

/// Consecutive output blocks `T_first, T_first+1, …` of PBKDF2 (see [`pbkdf2_block`]) into
/// `out`: at most [`Pbkdf2Prf::lanes`] blocks, the last one possibly partial. Computed side by
/// side where the CPU allows it, else one after the other; `stop` and the result as for
/// [`pbkdf2_block`].
pub fn pbkdf2_blocks(
    prf: Pbkdf2Prf,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    first: u32,
    out: &mut [u8],
    stop: &dyn Fn() -> bool,
) -> Result<bool> {
    check_pbkdf2_iterations(iterations)?;
    let len = prf.block_len();
    let count = out.len().div_ceil(len);
    let last = u32::try_from(count)
        .ok()
        .and_then(|c| first.checked_add(c.saturating_sub(1)));
    if first == 0 || out.is_empty() || count > prf.lanes() || last.is_none() {
        return Err(CryptoError::InvalidInput(format!(
            "PBKDF2 blocks from {first}, {} bytes",
            out.len()
        )));
    }
    if count > 1 && prf == Pbkdf2Prf::Hmac(HashAlg::Ripemd160) {
        if let Some(done) = pbkdf2_ripemd_x8::blocks(password, salt, iterations, first, out, stop) {
            return Ok(done);
        }
    }
    for (chunk, index) in out.chunks_mut(len).zip(first..) {
        if !pbkdf2_block(prf, password, salt, iterations, index, chunk, stop)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One output block `T_index` (1-based, RFC 8018 §5.2) of PBKDF2 with `prf`, `password`,
/// `salt` and `iterations`, into `out` (1 to [`Pbkdf2Prf::block_len`] bytes: the first bytes of
/// the block). The blocks of one derivation are independent, so a caller can spread several
/// derivations' blocks over threads as it likes and abandon those it no longer needs: `stop`
/// is asked every few thousand iterations, and when it answers `true` the work ends with
/// `Ok(false)` (`out` untouched). `Ok(true)`: `out` holds the block.
pub fn pbkdf2_block(
    prf: Pbkdf2Prf,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    index: u32,
    out: &mut [u8],
    stop: &dyn Fn() -> bool,
) -> Result<bool> {
    check_pbkdf2_iterations(iterations)?;
    if index == 0 || out.is_empty() || out.len() > prf.block_len() {
        return Err(CryptoError::InvalidInput(format!(
            "PBKDF2 block {index} of {} bytes",
            out.len()
        )));
    }
    let fast = match prf {
        Pbkdf2Prf::Hmac(hash) => FastHash::of(hash),
        Pbkdf2Prf::HmacStribog512 => None,
    };
    if let Some(fast) = fast {
        debug_assert_eq!(pbkdf2_sha::output_len(fast), prf.block_len());
        return Ok(pbkdf2_sha::pbkdf2_block(
            fast, password, salt, iterations, index, out, stop,
        ));
    }
    let job = BlockJob {
        password,
        salt,
        iterations,
        index,
        stop,
    };
    Ok(match prf {
        Pbkdf2Prf::HmacStribog512 => job.run::<hmac::Hmac<streebog::Streebog512>>(out),
        Pbkdf2Prf::Hmac(hash) => match hash {
            HashAlg::Sha1 => job.run::<hmac::Hmac<sha1::Sha1>>(out),
            HashAlg::Sha224 => job.run::<hmac::Hmac<sha2::Sha224>>(out),
            HashAlg::Sha256 => job.run::<hmac::Hmac<sha2::Sha256>>(out),
            HashAlg::Sha384 => job.run::<hmac::Hmac<sha2::Sha384>>(out),
            HashAlg::Sha512 => job.run::<hmac::Hmac<sha2::Sha512>>(out),
            HashAlg::Ripemd160 => job.run::<hmac::Hmac<ripemd::Ripemd160>>(out),
            HashAlg::Whirlpool => job.run::<hmac::Hmac<whirlpool::Whirlpool>>(out),
            HashAlg::Sha3_224 => job.run::<hmac::Hmac<sha3::Sha3_224>>(out),
            HashAlg::Sha3_256 => job.run::<hmac::Hmac<sha3::Sha3_256>>(out),
            HashAlg::Sha3_384 => job.run::<hmac::Hmac<sha3::Sha3_384>>(out),
            HashAlg::Sha3_512 => job.run::<hmac::Hmac<sha3::Sha3_512>>(out),
            HashAlg::Sm3 => job.run::<hmac::Hmac<sm3::Sm3>>(out),
            HashAlg::Wp256 | HashAlg::Wp384 => {
                return Err(CryptoError::Unsupported(format!("PBKDF2 with hash {hash}")))
            }
        },
    })
}

/// One PBKDF2 output block on a generic HMAC (the hashes without a fast path).
struct BlockJob<'a> {
    password: &'a [u8],
    salt: &'a [u8],
    iterations: u32,
    index: u32,
    stop: &'a dyn Fn() -> bool,
}

impl BlockJob<'_> {
    /// Iterations between two looks at `stop`.
    const STOP_CHECK_EVERY: u32 = 4096;

    fn run<M: hmac::Mac + hmac::digest::KeyInit + Clone>(&self, out: &mut [u8]) -> bool {
        let keyed = <M as hmac::digest::KeyInit>::new_from_slice(self.password)
            .expect("HMAC takes any key length");
        let mut mac = keyed.clone();
        mac.update(self.salt);
        mac.update(&self.index.to_be_bytes());
        let mut u = mac.finalize().into_bytes();
        let mut t = u.clone();
        let mut left = self.iterations - 1;
        let mut stopped = false;
        while left > 0 {
            let run = left.min(Self::STOP_CHECK_EVERY);
            for _ in 0..run {
                let mut mac = keyed.clone();
                mac.update(&u);
                u.as_mut_slice().zeroize();
                u = mac.finalize().into_bytes();
                for (a, b) in t.iter_mut().zip(u.iter()) {
                    *a ^= b;
                }
            }
            left -= run;
            if left > 0 && (self.stop)() {
                stopped = true;
                break;
            }
        }
        if !stopped {
            out.copy_from_slice(&t[..out.len()]);
        }
        u.as_mut_slice().zeroize();
        t.as_mut_slice().zeroize();
        !stopped
    }
}

/// PBKDF2-HMAC with Streebog-512 (GOST R 34.11-2012), the `stribog512` of VeraCrypt's
/// header-key derivation (cryptsetup names it so; its hash is not a [`HashAlg`]: lukskit takes
/// it for TCRYPT only, where cryptsetup's gcrypt backend has it).
pub fn pbkdf2_stribog512(
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    out: &mut [u8],
) -> Result<()> {
    check_pbkdf2_iterations(iterations)?;
    check_output_len(out.len(), 1)?;
    pbkdf2::pbkdf2_hmac::<streebog::Streebog512>(password, salt, iterations, out);
    Ok(())
}

fn check_argon2_salt(salt: &[u8]) -> Result<()> {
    if salt.len() < ARGON2_MIN_SALT_LEN {
        return Err(CryptoError::InvalidInput(format!(
            "Argon2 salt of {} bytes is too short (minimum is {ARGON2_MIN_SALT_LEN})",
            salt.len()
        )));
    }
    Ok(())
}

/// Argon2 (`variant`, version 0x13, no secret, no associated data) of `password` and
/// `salt`, filling `out` (4..=[`MAX_OUTPUT_LEN`] bytes).
///
/// `parallel` lanes: the lanes of each slice run concurrently on min(`parallel`, online
/// CPUs) threads (the result does not depend on the thread count). The parameters are
/// checked as by [`Pbkdf::check_limits`] and against physical RAM before the memory
/// (exactly the Argon2 block array) is allocated; the memory is wiped afterwards.
pub fn argon2(
    variant: Argon2Variant,
    password: &[u8],
    salt: &[u8],
    time: u32,
    memory_kib: u32,
    parallel: u32,
    out: &mut [u8],
) -> Result<()> {
    check_argon2_read_limits(time, memory_kib, parallel)?;
    check_output_len(out.len(), ARGON2_MIN_OUTPUT_LEN)?;
    check_argon2_salt(salt)?;
    check_physical_memory(memory_kib)?;

    let params = argon2_core::Params {
        variant,
        time,
        memory_kib,
        lanes: parallel,
        threads: argon2_threads(parallel),
    };
    let mut memory = argon2_memory::BlockMemory::new(params.block_count())?;
    let result = argon2_core::derive(&params, password, salt, &mut memory, out);
    drop(memory);
    if result.is_err() {
        out.zeroize();
    }
    result
}

/// Threads used for `parallel` Argon2 lanes: one per online CPU, at most one per lane (each
/// thread fills its lanes two at a time in lockstep, so that one lane's memory fetch overlaps
/// the other's compression; libargon2 runs a thread per lane instead). A hostile lane count
/// cannot make us spawn more threads than CPUs.
fn argon2_threads(parallel: u32) -> usize {
    parallel.clamp(1, online_cpus()) as usize
}

// ---------------------------------------------------------------------------
// System information (sysconf, /proc/meminfo)
// ---------------------------------------------------------------------------

fn sysconf_positive(name: libc::c_int) -> Option<u64> {
    // SAFETY: sysconf takes no pointers and has no memory-safety preconditions; it only
    // queries a system configuration value.
    let v = unsafe { libc::sysconf(name) };
    u64::try_from(v).ok().filter(|&v| v > 0)
}

/// Physical RAM in KiB (`_SC_PHYS_PAGES × _SC_PAGESIZE`), if the system reports it.
pub fn physical_memory_kib() -> Option<u64> {
    let pages = sysconf_positive(libc::_SC_PHYS_PAGES)?;
    let page_size = sysconf_positive(libc::_SC_PAGESIZE)?;
    Some(pages.saturating_mul(page_size) / 1024)
}

/// Currently free physical RAM in KiB (`_SC_AVPHYS_PAGES × _SC_PAGESIZE`).
fn free_memory_kib() -> Option<u64> {
    let pages = sysconf_positive(libc::_SC_AVPHYS_PAGES)?;
    let page_size = sysconf_positive(libc::_SC_PAGESIZE)?;
    Some(pages.saturating_mul(page_size) / 1024)
}

/// Whether the system has swap configured (`SwapTotal` in /proc/meminfo > 0).
/// Unknown counts as available, as in cryptsetup.
fn swap_available() -> bool {
    let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") else {
        return true;
    };
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("SwapTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .is_none_or(|kib| kib > 0)
}

fn online_cpus() -> u32 {
    sysconf_positive(libc::_SC_NPROCESSORS_ONLN)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        .unwrap_or(1)
}

/// Refuse an Argon2 memory cost larger than the machine's physical RAM, or than the memory it
/// can give now (`MemAvailable` + `SwapFree`): the derivation touches every block, so such a
/// cost could only end in the OOM killer.
fn check_physical_memory(memory_kib: u32) -> Result<()> {
    if let Some(phys) = physical_memory_kib() {
        if u64::from(memory_kib) > phys {
            return Err(CryptoError::Limit(format!(
                "Argon2 memory cost {memory_kib} KiB exceeds the physical memory of this system ({phys} KiB)"
            )));
        }
    }
    if let Some(avail) = available_memory_kib() {
        if u64::from(memory_kib) > avail {
            return Err(CryptoError::Limit(format!(
                "Argon2 memory cost {memory_kib} KiB is more than this system can give now ({avail} KiB available with swap)"
            )));
        }
    }
    Ok(())
}

/// `MemAvailable` + `SwapFree` from /proc/meminfo in KiB, when the kernel reports them.
fn available_memory_kib() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some(field("MemAvailable:")?.saturating_add(field("SwapFree:").unwrap_or(0)))
}

/// cryptsetup's `pbkdf_adjusted_phys_memory_kb`: half of physical RAM (bogus values
/// below 128 MiB or above 2³² KiB give the 1 GiB default); on systems without swap
/// whose half-RAM is below 2 GiB, half of the currently free RAM when that is smaller
/// (and above 64 MiB).
fn adjusted_phys_memory_kib() -> u32 {
    let Some(memory_kib) = physical_memory_kib() else {
        return ARGON2_DEFAULT_MEMORY_KIB;
    };
    if !(128 * 1024..=u64::from(u32::MAX)).contains(&memory_kib) {
        return ARGON2_DEFAULT_MEMORY_KIB;
    }
    let half = memory_kib / 2;
    if half < 2 * 1024 * 1024 && !swap_available() {
        if let Some(free) = free_memory_kib() {
            let free_half = free / 2;
            if free_half > 64 * 1024 && free_half < half {
                return u32::try_from(free_half).unwrap_or(u32::MAX);
            }
        }
    }
    u32::try_from(half).unwrap_or(u32::MAX)
}

/// Default Argon2 memory cap in KiB, as cryptsetup: min(1 GiB, half of physical RAM)
/// (`pbkdf_adjusted_phys_memory_kb`; on swapless machines with less than 4 GiB of RAM,
/// half of the free RAM if lower).
pub fn default_argon2_memory_cap_kib() -> u32 {
    ARGON2_DEFAULT_MEMORY_KIB.min(adjusted_phys_memory_kib())
}

/// Default Argon2 parallelism: min(4, online CPUs) (`init_pbkdf_type`).
pub fn default_argon2_parallel() -> u32 {
    ARGON2_MAX_PARALLEL.min(online_cpus()).max(1)
}

// ---------------------------------------------------------------------------
// Benchmarks (lib/crypto_backend/pbkdf_check.c)
// ---------------------------------------------------------------------------

const BENCH_PASSWORD: &[u8] = b"foobarfo";
const BENCH_PBKDF2_SALT: &[u8] = b"0123456789abcdef";
const BENCH_ARGON2_SALT: &[u8] = b"0123456789abcdef0123456789abcdef";
const BENCH_MIN_MS: i64 = 250;
const BENCH_MIN_MS_FAST: i64 = 10;
const BENCH_PERCENT_ATLEAST: i64 = 95;
const BENCH_PERCENT_ATMOST: i64 = 110;
const BENCH_SAMPLES_FAST: usize = 3;
const BENCH_SAMPLES_SLOW: usize = 1;
/// Safety net against an (unlikely) endless refinement; cryptsetup has none.
const BENCH_MAX_ROUNDS: usize = 64;

fn bench_key_len(key_len: usize) -> Result<()> {
    if key_len == 0 || key_len > MAX_OUTPUT_LEN {
        return Err(CryptoError::InvalidInput(format!(
            "benchmark key length {key_len} out of range (1..={MAX_OUTPUT_LEN})"
        )));
    }
    Ok(())
}

/// CPU time used so far by the calling thread (`getrusage`): (user, system).
///
/// cryptsetup measures `RUSAGE_SELF`; the PBKDF2 computation runs on the calling
/// thread, so `RUSAGE_THREAD` gives the same figure in a single-threaded program
/// and stays correct when other threads of this process are busy.
fn thread_cpu_time() -> Result<(libc::timeval, libc::timeval)> {
    // SAFETY: `rusage` is a plain C struct for which all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage` owned by this frame; getrusage only
    // writes into it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc < 0 {
        return Err(CryptoError::InvalidInput("getrusage failed".into()));
    }
    Ok((ru.ru_utime, ru.ru_stime))
}

// `time_t`/`suseconds_t` are not i64 on every target.
#[allow(clippy::unnecessary_cast)]
fn tv_diff_ms(start: &libc::timeval, end: &libc::timeval) -> i64 {
    (end.tv_sec as i64 - start.tv_sec as i64) * 1000
        + (end.tv_usec as i64 - start.tv_usec as i64) / 1000
}

/// cryptsetup's `time_ms`: user time; system time is added only when no user time
/// was recorded at all (a getrusage quirk of some hypervisors).
fn cpu_ms(start: &(libc::timeval, libc::timeval), end: &(libc::timeval, libc::timeval)) -> i64 {
    let no_user =
        start.0.tv_sec == 0 && start.0.tv_usec == 0 && end.0.tv_sec == 0 && end.0.tv_usec == 0;
    let mut ms = tv_diff_ms(&start.0, &end.0);
    if no_user {
        ms += tv_diff_ms(&start.1, &end.1);
    }
    ms
}

/// cryptsetup's PBKDF2 benchmark (`crypt_pbkdf_check`): PBKDF2-HMAC-`hash` iterations
/// per second for a `key_len`-byte output, measured in CPU time.
///
/// Password `foobarfo`, salt `0123456789abcdef`; starts at 2¹⁵ iterations and
/// multiplies them by 16/8/4/2 while a run takes ≤ 62/≤ 125/≤ 250/≤ 500 ms, stopping
/// after the first run longer than 500 ms; the result is `iterations × 1000 / ms` of
/// the last run that took measurable time.
pub fn benchmark_pbkdf2(hash: HashAlg, key_len: usize) -> Result<u32> {
    bench_key_len(key_len)?;
    let mut key = Zeroizing::new(vec![0u8; key_len]);
    let target_ms: f64 = 1000.0;
    let mut iterations: u32 = 1 << 15;
    let mut iter_secs: u32 = 0;
    let mut step = 0;
    loop {
        let start = thread_cpu_time()?;
        // On this thread only: the figure is this thread's CPU time, as cryptsetup's
        // (single-threaded) `RUSAGE_SELF`.
        pbkdf2_on(
            hash,
            BENCH_PASSWORD,
            BENCH_PBKDF2_SALT,
            iterations,
            &mut key,
            Threads::Calling,
        )?;
        let end = thread_cpu_time()?;
        let ms = cpu_ms(&start, &end);
        if ms > 0 {
            let per_sec = f64::from(iterations) * target_ms / ms as f64;
            if per_sec > f64::from(u32::MAX) {
                return Err(CryptoError::Limit(
                    "PBKDF2 benchmark result does not fit in 32 bits".into(),
                ));
            }
            iter_secs = per_sec as u32;
        }
        if ms > 500 {
            break;
        }
        let shift = match ms {
            ..=62 => 4,
            63..=125 => 3,
            126..=250 => 2,
            _ => 1,
        };
        // Bits shifted out are lost as with C's unsigned shift; zero is caught below.
        iterations <<= shift;
        step += 1;
        if step > 10 || iterations == 0 {
            return Err(CryptoError::InvalidInput(
                "PBKDF2 benchmark did not converge".into(),
            ));
        }
    }
    Ok(iter_secs)
}

/// Scale an iterations-per-second benchmark to `time_ms`, at least
/// [`PBKDF2_MIN_ITERATIONS`] (`crypt_benchmark_pbkdf_internal`).
fn scale_pbkdf2_iterations(iter_secs: u32, time_ms: u32) -> Result<u32> {
    let iterations = f64::from(iter_secs) * f64::from(time_ms) / 1000.0;
    if iterations > f64::from(u32::MAX) {
        return Err(CryptoError::Limit(format!(
            "PBKDF2 iteration count for {time_ms} ms does not fit in 32 bits"
        )));
    }
    Ok((iterations as u32).max(PBKDF2_MIN_ITERATIONS))
}

/// PBKDF2 iterations that take `time_ms` for a `key_len`-byte output:
/// `benchmark_pbkdf2 × time_ms / 1000`, at least [`PBKDF2_MIN_ITERATIONS`].
pub fn pbkdf2_iterations_for(hash: HashAlg, key_len: usize, time_ms: u32) -> Result<u32> {
    let iter_secs = benchmark_pbkdf2(hash, key_len)?;
    scale_pbkdf2_iterations(iter_secs, time_ms)
}

/// Monotonic wall clock in the form cryptsetup uses (`CLOCK_MONOTONIC_RAW`).
fn monotonic_raw() -> Result<libc::timespec> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec owned by this frame; clock_gettime
    // only writes into it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    if rc < 0 {
        return Err(CryptoError::InvalidInput("clock_gettime failed".into()));
    }
    Ok(ts)
}

// `time_t`/`c_long` are not i64 on every target.
#[allow(clippy::unnecessary_cast)]
fn timespec_ms(start: &libc::timespec, end: &libc::timespec) -> i64 {
    (end.tv_sec as i64 - start.tv_sec as i64) * 1000
        + (end.tv_nsec as i64 - start.tv_nsec as i64) / 1_000_000
}

/// cryptsetup's `measure_argon2`: the fastest of up to `samples` wall-clock runs,
/// stopping early at the first run faster than `ms_atleast`.
fn measure_argon2(
    variant: Argon2Variant,
    time: u32,
    memory_kib: u32,
    parallel: u32,
    key: &mut [u8],
    samples: usize,
    ms_atleast: i64,
) -> Result<i64> {
    let mut ms_min = i64::MAX;
    for _ in 0..samples {
        let start = monotonic_raw()?;
        argon2(
            variant,
            BENCH_PASSWORD,
            BENCH_ARGON2_SALT,
            time,
            memory_kib,
            parallel,
            key,
        )?;
        let end = monotonic_raw()?;
        let ms = timespec_ms(&start, &end);
        if ms < 0 {
            return Err(CryptoError::InvalidInput(
                "clock went backwards during the Argon2 benchmark".into(),
            ));
        }
        if ms < ms_atleast {
            ms_min = ms;
            break;
        }
        ms_min = ms_min.min(ms);
    }
    Ok(ms_min)
}

/// Outcome of one refinement step of the Argon2 benchmark.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Continue,
    Final,
}

fn to_u32_saturating(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// cryptsetup's `next_argon2_params`: scale (time, memory) towards `target_ms` given
/// that the current pair took `ms`. Decreasing lowers time first, then memory;
/// increasing raises memory first, then time.
fn next_argon2_params(
    t_cost: &mut u32,
    m_cost: &mut u32,
    min_t: u32,
    min_m: u32,
    max_m: u32,
    ms: i64,
    target_ms: u32,
) -> Step {
    let (old_t, old_m) = (*t_cost, *m_cost);
    // cryptsetup divides by `ms` unguarded; a 0 ms run cannot reach here in practice.
    let ms_u = u64::try_from(ms).unwrap_or(0).max(1);
    let target = u64::from(target_ms);
    if ms_u as u32 > target_ms {
        let new_t = to_u32_saturating(u64::from(*t_cost) * target / ms_u);
        if new_t < min_t {
            let num = u64::from(*t_cost) * u64::from(*m_cost) * target;
            let denom = u64::from(min_t) * ms_u;
            *t_cost = min_t;
            *m_cost = to_u32_saturating(num / denom);
            if *m_cost < min_m {
                *m_cost = min_m;
                return Step::Final;
            }
        } else {
            *t_cost = new_t;
        }
    } else {
        let new_m = to_u32_saturating(u64::from(*m_cost) * target / ms_u);
        if new_m > max_m {
            let num = u64::from(*t_cost) * u64::from(*m_cost) * target;
            let denom = u64::from(max_m) * ms_u;
            *t_cost = to_u32_saturating(num / denom);
            *m_cost = max_m;
            if *t_cost <= min_t {
                *t_cost = min_t;
                return Step::Final;
            }
        } else if new_m < min_m {
            *m_cost = min_m;
            return Step::Final;
        } else {
            *m_cost = new_m;
        }
    }
    if old_t == *t_cost && old_m == *m_cost {
        Step::Final
    } else {
        Step::Continue
    }
}

/// Phase 1 of cryptsetup's Argon2 benchmark: the next (time, memory) after a run of
/// `ms` < 250 ms — memory grows first (×16 below 10 ms, else scaled to 250 ms, capped
/// at `max_m`), time once memory is at its cap. `None` when scaling changes nothing.
fn bench_grow(t: u32, m: u32, max_m: u32, ms: i64) -> Option<(u32, u32)> {
    let scale = |v: u32| to_u32_saturating(u64::from(v) * BENCH_MIN_MS as u64 / ms.max(1) as u64);
    if m == max_m {
        let new_t = if ms < BENCH_MIN_MS_FAST {
            t.saturating_mul(16)
        } else {
            scale(t)
        };
        (new_t != t).then_some((new_t, m))
    } else {
        let new_m = if ms < BENCH_MIN_MS_FAST {
            m.saturating_mul(16)
        } else {
            let new_m = scale(m);
            if new_m == m {
                return None;
            }
            new_m
        };
        Some((t, new_m.min(max_m)))
    }
}

/// cryptsetup's Argon2 benchmark (`crypt_argon2_check`): returns `(time, memory_kib)`
/// such that one derivation of a `key_len`-byte key with `parallel` lanes takes about
/// `target_ms` of wall-clock time (95 %–110 %), with memory ≤ `max_memory_kib`.
///
/// Starts at time [`ARGON2_MIN_TIME`] and memory min(64 MiB, `max_memory_kib`)
/// (at least 8 × `parallel`), which is also the lowest memory it returns; first grows
/// memory (×16 while a run takes < 10 ms), then time once memory is at its cap, until
/// a run takes ≥ 250 ms (best of 3), then refines with cryptsetup's `next_argon2_params` steps.
/// Password `foobarfo`, 32-byte salt `0123456789abcdef0123456789abcdef`.
///
/// `parallel` must be in 1..=[`ARGON2_MAX_PARALLEL`] and `max_memory_kib` at most
/// [`ARGON2_MAX_MEMORY_KIB`] (and at least 8 × `parallel`).
pub fn benchmark_argon2(
    variant: Argon2Variant,
    target_ms: u32,
    max_memory_kib: u32,
    parallel: u32,
    key_len: usize,
) -> Result<(u32, u32)> {
    bench_key_len(key_len)?;
    if target_ms == 0 {
        return Err(CryptoError::InvalidInput(
            "PBKDF target time cannot be zero".into(),
        ));
    }
    if parallel == 0 || parallel > ARGON2_MAX_PARALLEL {
        return Err(CryptoError::Limit(format!(
            "Argon2 parallel threads {parallel} out of range (1..={ARGON2_MAX_PARALLEL})"
        )));
    }
    if max_memory_kib == 0 || max_memory_kib > ARGON2_MAX_MEMORY_KIB {
        return Err(CryptoError::Limit(format!(
            "Argon2 maximum memory {max_memory_kib} KiB out of range (1..={ARGON2_MAX_MEMORY_KIB})"
        )));
    }
    let min_t = ARGON2_MIN_TIME;
    let max_m = max_memory_kib;
    let min_m = max_m
        .min(ARGON2_BENCH_MIN_MEMORY_KIB)
        .max(parallel * 2 * ARGON2_SYNC_POINTS);
    if max_m < min_m {
        return Err(CryptoError::InvalidInput(format!(
            "Argon2 maximum memory {max_m} KiB is too low for {parallel} lanes"
        )));
    }
    let ms_atleast = i64::from(target_ms) * BENCH_PERCENT_ATLEAST / 100;
    let ms_atmost = i64::from(target_ms) * BENCH_PERCENT_ATMOST / 100;
    let mut key = Zeroizing::new(vec![0u8; key_len]);

    let (mut t, mut m) = (min_t, min_m);
    let mut result;
    // 1. Find small parameters that take at least BENCH_MIN_MS.
    let mut ms;
    let mut rounds = 0;
    loop {
        ms = measure_argon2(
            variant,
            t,
            m,
            parallel,
            &mut key,
            BENCH_SAMPLES_FAST,
            BENCH_MIN_MS,
        )?;
        result = (t, m);
        rounds += 1;
        if ms >= BENCH_MIN_MS || rounds >= BENCH_MAX_ROUNDS {
            break;
        }
        match bench_grow(t, m, max_m, ms) {
            Some((new_t, new_m)) => (t, m) = (new_t, new_m),
            None => break,
        }
    }
    // 2./3. Estimate the target parameters and refine until within 95 %–110 %.
    for _ in 0..BENCH_MAX_ROUNDS {
        if next_argon2_params(&mut t, &mut m, min_t, min_m, max_m, ms, target_ms) == Step::Final {
            result = (t, m);
            break;
        }
        ms = measure_argon2(
            variant,
            t,
            m,
            parallel,
            &mut key,
            BENCH_SAMPLES_SLOW,
            ms_atleast,
        )?;
        result = (t, m);
        if (ms_atleast..=ms_atmost).contains(&ms) {
            break;
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openssl_oracle::openssl_md;

    /// Blocks computed one by one are the whole derivation's (cut at a block boundary, the
    /// last block truncated), for every hash and Streebog; a stopped block leaves `out` alone.
    /// `pbkdf2_blocks` (side by side where the CPU allows: RIPEMD-160 in AVX2 lanes) gives
    /// the bytes of the whole derivation for any run of blocks, short or long passwords,
    /// a partial last block, and stops as `pbkdf2_block` does.
    #[test]
    fn pbkdf2_blocks_side_by_side_make_the_whole_derivation() {
        let salt: Vec<u8> = (0..64u8).collect();
        let long = [0x5au8; 100];
        for prf in [
            Pbkdf2Prf::Hmac(HashAlg::Ripemd160),
            Pbkdf2Prf::Hmac(HashAlg::Sha256),
        ] {
            let len = prf.block_len();
            let lanes = prf.lanes();
            for password in [&b"pass phrase"[..], &b""[..], &long[..]] {
                for iterations in [1u32, 2, 4097, 5000] {
                    let mut whole = [0u8; 192];
                    pbkdf2(HashAlg::Ripemd160, password, &salt, iterations, &mut whole).unwrap();
                    if prf != Pbkdf2Prf::Hmac(HashAlg::Ripemd160) {
                        let Pbkdf2Prf::Hmac(h) = prf else {
                            unreachable!()
                        };
                        pbkdf2(h, password, &salt, iterations, &mut whole).unwrap();
                    }
                    for first in 1..=3u32 {
                        for count in 1..=lanes {
                            let start = (first as usize - 1) * len;
                            // The run ends with a partial block where the derivation does.
                            let end =
                                (start + count * len).min(whole.len()) - usize::from(count == 3);
                            if end <= start {
                                continue;
                            }
                            let mut out = vec![0u8; end - start];
                            let done = pbkdf2_blocks(
                                prf,
                                password,
                                &salt,
                                iterations,
                                first,
                                &mut out,
                                &|| false,
                            )
                            .unwrap();
                            assert!(done);
                            assert_eq!(
                                out,
                                &whole[start..end],
                                "{prf:?} {iterations} from {first}, {count}"
                            );
                        }
                    }
                    let mut out = vec![0xa5u8; lanes * len];
                    let done =
                        pbkdf2_blocks(prf, password, &salt, iterations, 1, &mut out, &|| true)
                            .unwrap();
                    assert_eq!(done, iterations <= 4097, "{prf:?} {iterations}");
                    if !done {
                        assert!(out.iter().all(|&b| b == 0xa5));
                    }
                }
            }
            let mut out = vec![0u8; lanes * len + 1];
            assert!(pbkdf2_blocks(prf, b"p", &salt, 1, 1, &mut out, &|| false).is_err());
            assert!(pbkdf2_blocks(prf, b"p", &salt, 1, 0, &mut out[..1], &|| false).is_err());
            assert!(
                pbkdf2_blocks(prf, b"p", &salt, 1, u32::MAX, &mut out[..len + 1], &|| {
                    false
                })
                .is_err()
            );
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            assert_eq!(Pbkdf2Prf::Hmac(HashAlg::Ripemd160).lanes(), 8);
        }
    }

    #[test]
    fn pbkdf2_blocks_make_the_whole_derivation() {
        let prfs = [
            Pbkdf2Prf::Hmac(HashAlg::Sha1),
            Pbkdf2Prf::Hmac(HashAlg::Sha256),
            Pbkdf2Prf::Hmac(HashAlg::Sha512),
            Pbkdf2Prf::Hmac(HashAlg::Ripemd160),
            Pbkdf2Prf::Hmac(HashAlg::Whirlpool),
            Pbkdf2Prf::Hmac(HashAlg::Sha3_256),
            Pbkdf2Prf::HmacStribog512,
        ];
        let salt: Vec<u8> = (0..64u8).collect();
        for prf in prfs {
            for iterations in [1u32, 2, 4097, 9000] {
                let mut whole = [0u8; 192];
                match prf {
                    Pbkdf2Prf::Hmac(h) => pbkdf2(h, b"pass phrase", &salt, iterations, &mut whole),
                    Pbkdf2Prf::HmacStribog512 => {
                        pbkdf2_stribog512(b"pass phrase", &salt, iterations, &mut whole)
                    }
                }
                .unwrap();
                let len = prf.block_len();
                for (chunk, index) in whole.chunks(len).zip(1u32..) {
                    let mut out = vec![0u8; chunk.len()];
                    let done = pbkdf2_block(
                        prf,
                        b"pass phrase",
                        &salt,
                        iterations,
                        index,
                        &mut out,
                        &|| false,
                    )
                    .unwrap();
                    assert!(done);
                    assert_eq!(out, chunk, "{prf:?} {iterations} block {index}");
                }
                let mut out = vec![0xa5u8; len];
                let done =
                    pbkdf2_block(prf, b"pass phrase", &salt, iterations, 1, &mut out, &|| {
                        true
                    })
                    .unwrap();
                // Stopping is looked at only between runs of 4096 iterations.
                assert_eq!(done, iterations <= 4097, "{prf:?} {iterations}");
                if !done {
                    assert!(out.iter().all(|&b| b == 0xa5));
                }
            }
            let mut out = vec![0u8; prf.block_len() + 1];
            assert!(pbkdf2_block(prf, b"p", &salt, 1, 1, &mut out, &|| false).is_err());
            assert!(pbkdf2_block(prf, b"p", &salt, 1, 0, &mut out[..1], &|| false).is_err());
            assert!(pbkdf2_block(prf, b"p", &salt, 0, 1, &mut out[..1], &|| false).is_err());
        }
    }

    fn pbkdf2_hex(hash: HashAlg, pwd: &[u8], salt: &[u8], iter: u32, len: usize) -> String {
        let kdf = Pbkdf::Pbkdf2 {
            hash,
            iterations: iter,
        };
        hex::encode(derive(&kdf, pwd, salt, len).unwrap().as_bytes())
    }

    /// RFC 6070 (PBKDF2-HMAC-SHA1), as also listed in cryptsetup tests/crypto-vectors.c.
    #[test]
    fn pbkdf2_sha1_rfc6070() {
        let s = HashAlg::Sha1;
        let cases: &[(&[u8], &[u8], u32, &str)] = &[
            (
                b"password",
                b"salt",
                1,
                "0c60c80f961f0e71f3a9b524af6012062fe037a6",
            ),
            (
                b"password",
                b"salt",
                2,
                "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957",
            ),
            (
                b"password",
                b"salt",
                4096,
                "4b007901b765489abead49d926f721d065a429c1",
            ),
            (
                b"passwordPASSWORDpassword",
                b"saltSALTsaltSALTsaltSALTsaltSALTsalt",
                4096,
                "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038",
            ),
            (
                b"pass\0word",
                b"sa\0lt",
                4096,
                "56fa6aa75548099dcc37d7f03425e0c3",
            ),
        ];
        for (pwd, salt, iter, want) in cases {
            assert_eq!(pbkdf2_hex(s, pwd, salt, *iter, want.len() / 2), *want);
        }
    }

    /// RFC 6070 case 4 (2^24 iterations: about 1.3 s here).
    #[test]
    fn pbkdf2_sha1_rfc6070_16m() {
        assert_eq!(
            pbkdf2_hex(HashAlg::Sha1, b"password", b"salt", 16_777_216, 20),
            "eefe3d61cd4da4e4e9945b3d6ba2158c2634e984"
        );
    }

    /// RFC 3962 Appendix B and the empty-password case, from cryptsetup tests/crypto-vectors.c.
    #[test]
    fn pbkdf2_sha1_rfc3962_and_cryptsetup() {
        let s = HashAlg::Sha1;
        let realm: &[u8] = b"ATHENA.MIT.EDUraeburn";
        let cases: &[(&[u8], &[u8], u32, &str)] = &[
            (
                b"password",
                realm,
                1,
                "cdedb5281bb2f801565a1122b25635150ad1f7a04bb9f3a333ecc0e2e1f70837",
            ),
            (
                b"password",
                realm,
                2,
                "01dbee7f4a9e243e988b62c73cda935da05378b93244ec8f48a99e61ad799d86",
            ),
            (
                b"password",
                realm,
                1200,
                "5c08eb61fdf71e4e4ec3cf6ba1f5512ba7e52ddbc5e5142f708a31e2e62b1e13",
            ),
            (
                b"password",
                b"\x12\x34\x56\x78\x78\x56\x34\x12",
                5,
                "d1daa78615f287e6a1c8b120d7062a493f98d203e6be49a6adf4fa574b6e64ee",
            ),
            (
                &[b'X'; 64],
                b"pass phrase equals block size",
                1200,
                "139c30c0966bc32ba55fdbf212530ac9c5ec59f1a452f5cc9ad940fea0598ed1",
            ),
            (
                &[b'X'; 65],
                b"pass phrase exceeds block size",
                1200,
                "9ccad6d468770cd51b10e6a68721be611a8b4d282601db3b36be9246915ec82a",
            ),
            (
                b"\xf0\x9d\x84\x9e",
                b"EXAMPLE.COMpianist",
                50,
                "6b9cf26d45455a43a5b8bb276a403b39e7fe37a0c41e02c281ff3069e1e94f52",
            ),
            (b"", b"salt", 2, "133a4ce837b4d2521ee2bf03e11c71ca794e0797"),
        ];
        for (pwd, salt, iter, want) in cases {
            assert_eq!(pbkdf2_hex(s, pwd, salt, *iter, want.len() / 2), *want);
        }
    }

    /// RFC 7914 §11 (PBKDF2-HMAC-SHA256), including the 80000-iteration vector.
    #[test]
    fn pbkdf2_sha256_rfc7914() {
        assert_eq!(
            pbkdf2_hex(HashAlg::Sha256, b"passwd", b"salt", 1, 64),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc\
             49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
        );
        assert_eq!(
            pbkdf2_hex(HashAlg::Sha256, b"Password", b"NaCl", 80000, 64),
            "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56\
             a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"
        );
    }

    /// Block-size edge cases for sha256, sha512 and whirlpool from cryptsetup
    /// tests/crypto-vectors.c (password one byte longer than the HMAC block).
    #[test]
    fn pbkdf2_cryptsetup_block_size_vectors() {
        let salt: &[u8] = b"pass phrase exceeds block size";
        assert_eq!(
            pbkdf2_hex(HashAlg::Sha256, &[b'X'; 65], salt, 1200, 32),
            "22344bc4b6e32675a8090f3ea80be01d5f95126a2cddc3facc4a5e6dca04ec58"
        );
        assert_eq!(
            pbkdf2_hex(HashAlg::Sha512, &[b'X'; 129], salt, 1200, 32),
            "0fb2ed2c0e6efb7d7d8edd5801b45972999216305ea4368d761480f3e37a22b9"
        );
        assert_eq!(
            pbkdf2_hex(HashAlg::Whirlpool, &[b'X'; 65], salt, 1200, 32),
            "9c1c74f58826e76a5358f40c39e7808907c031199a50a248f1d9fe7864e58450"
        );
    }

    /// PBKDF2 with the SHA-3 family and SM3 (hashes cryptsetup 2.6.1 takes through its
    /// OpenSSL backend) agrees with OpenSSL's.
    #[test]
    fn pbkdf2_sha3_and_sm3_match_openssl() {
        let salt = b"saltSALTsaltSALT";
        for hash in [
            HashAlg::Sha3_224,
            HashAlg::Sha3_256,
            HashAlg::Sha3_384,
            HashAlg::Sha3_512,
            HashAlg::Sm3,
        ] {
            let md = openssl_md(hash).expect("OpenSSL has the hash");
            for len in [20usize, 32, 64] {
                let mut ours = vec![0u8; len];
                pbkdf2(hash, b"passphrase", salt, 1000, &mut ours).unwrap();
                let mut theirs = vec![0u8; len];
                openssl::pkcs5::pbkdf2_hmac(b"passphrase", salt, 1000, md, &mut theirs).unwrap();
                assert_eq!(ours, theirs, "{hash} {len}");
            }
        }
    }

    /// The SHA fast path (precomputed HMAC states, CPU SHA instructions, output blocks on
    /// several threads) against OpenSSL's PKCS5_PBKDF2_HMAC, which cryptsetup 2.6.1 uses:
    /// passwords around the HMAC block size (hashed keys whose padding needs a second
    /// block), output lengths around the digest size and up to the maximum, on all cores
    /// and on the calling thread only.
    #[test]
    fn pbkdf2_sha_fast_path_matches_openssl() {
        let salt: Vec<u8> = (0u8..32).collect();
        for (hash, block) in [
            (HashAlg::Sha1, 64usize),
            (HashAlg::Sha256, 64),
            (HashAlg::Sha512, 128),
        ] {
            let md = openssl_md(hash).expect("OpenSSL has SHA-1/SHA-2");
            let h = hash.digest_size();
            let pwd_lens = [
                0,
                1,
                13,
                block - 9,
                block - 1,
                block,
                block + 1,
                2 * block + 60,
                300,
            ];
            for pwd_len in pwd_lens {
                let pwd: Vec<u8> = (0..pwd_len).map(|i| (i * 7 + 3) as u8).collect();
                for (iter, len) in [
                    (1u32, h),
                    (2, 1),
                    (3, h - 1),
                    (1000, h + 1),
                    (1000, 64),
                    (17, 100),
                    (5, MAX_OUTPUT_LEN),
                ] {
                    let mut want = vec![0u8; len];
                    openssl::pkcs5::pbkdf2_hmac(&pwd, &salt, iter as usize, md, &mut want).unwrap();
                    for threads in [Threads::AllCores, Threads::Calling] {
                        let mut got = vec![0u8; len];
                        pbkdf2_on(hash, &pwd, &salt, iter, &mut got, threads).unwrap();
                        assert_eq!(got, want, "{hash} pwd {pwd_len} iter {iter} len {len}");
                    }
                }
            }
        }
    }

    #[test]
    fn pbkdf2_refuses_truncated_whirlpool() {
        for hash in [HashAlg::Wp256, HashAlg::Wp384] {
            let mut out = [0u8; 32];
            assert!(matches!(
                pbkdf2(hash, b"p", b"s", 1000, &mut out),
                Err(CryptoError::Unsupported(_))
            ));
        }
    }

    /// All hashes (including ripemd160, sha224, sha384 which have no published PBKDF2
    /// vectors in crypto-vectors.c) against OpenSSL's PKCS5_PBKDF2_HMAC, with output
    /// lengths that are not multiples of the digest size.
    #[test]
    fn pbkdf2_all_hashes_match_openssl() {
        let salt = b"0123456789abcdef0123456789abcdef";
        for hash in HashAlg::ALL {
            let Some(md) = openssl_md(hash) else {
                lukskit_testkit::skip_or_fail(
                    "pbkdf2_all_hashes_match_openssl",
                    &format!(
                        "OpenSSL has no {hash} here (whirlpool is in OpenSSL 3's legacy \
                         provider: apt-get install openssl libssl3)"
                    ),
                );
                continue;
            };
            for (pwd, iter, len) in [
                (&b"compatkey"[..], 1000u32, 32usize),
                (&[0x55u8; 200][..], 3, 100),
                (&b""[..], 1, 20),
                (&b"x"[..], 17, 64),
            ] {
                let mut want = vec![0u8; len];
                openssl::pkcs5::pbkdf2_hmac(pwd, salt, iter as usize, md, &mut want).unwrap();
                let mut got = vec![0u8; len];
                pbkdf2(hash, pwd, salt, iter, &mut got).unwrap();
                assert_eq!(got, want, "{hash} iter {iter} len {len}");
            }
        }
    }

    fn argon2_hex(v: Argon2Variant, pwd: &[u8], salt: &[u8], t: u32, m: u32, p: u32) -> String {
        let kdf = Pbkdf::Argon2 {
            variant: v,
            time: t,
            memory_kib: m,
            parallel: p,
        };
        hex::encode(derive(&kdf, pwd, salt, 32).unwrap().as_bytes())
    }

    /// cryptsetup tests/crypto-vectors.c: the RFC 9106 inputs without secret and
    /// associated data (the LUKS2 call shape), plus the empty-password vectors.
    #[test]
    fn argon2_cryptsetup_vectors() {
        let pwd = [1u8; 32];
        let salt = [2u8; 16];
        assert_eq!(
            argon2_hex(Argon2Variant::I, &pwd, &salt, 3, 32, 4),
            "a9a7510e6db4d588ba3414cd0e094d480d683f97b9ccb612a544fe8ef65ba8e0"
        );
        assert_eq!(
            argon2_hex(Argon2Variant::Id, &pwd, &salt, 3, 32, 4),
            "03aab965c12001c9d7d0d2de33192c0494b684bb148196d73c1df1acaf6d0c2e"
        );
        let salt: Vec<u8> = (0u8..16).collect();
        assert_eq!(
            argon2_hex(Argon2Variant::I, b"", &salt, 3, 128, 1),
            "bb1ff2b99fd44ad9df7fb954559eb8ebb59dabce2e629f9b8909fede57cc6386"
        );
        assert_eq!(
            argon2_hex(Argon2Variant::Id, b"", &salt, 3, 128, 1),
            "092f3835acb2439293ebcde804166a31ce14d455dbd8f7e6b4f59d648ed03adb"
        );
    }

    /// The result does not depend on the number of threads (lanes are fixed by
    /// `parallel`), and the raw function agrees with `derive`.
    #[test]
    fn argon2_raw_matches_derive() {
        let mut out = [0u8; 32];
        argon2(
            Argon2Variant::Id,
            &[1u8; 32],
            &[2u8; 16],
            3,
            32,
            4,
            &mut out,
        )
        .unwrap();
        assert_eq!(
            hex::encode(out),
            "03aab965c12001c9d7d0d2de33192c0494b684bb148196d73c1df1acaf6d0c2e"
        );
    }

    /// lukskit's Argon2 (every compression kernel this CPU has, one thread and several)
    /// against the RustCrypto `argon2` crate on parameter sets around the edges: lanes 1..=5,
    /// memory not a multiple of 4 × lanes, more than one address block per segment (Argon2i
    /// addressing), tag lengths up to 512 bytes (H' with several BLAKE2b rounds).
    #[test]
    fn argon2_matches_rustcrypto_argon2() {
        let kernels = argon2_blamka::Kernel::available();
        let cases: &[(Argon2Variant, u32, u32, u32, usize)] = &[
            (Argon2Variant::Id, 1, 8, 1, 32),
            (Argon2Variant::Id, 2, 100, 3, 64),
            (Argon2Variant::I, 3, 1100, 2, 65),
            (Argon2Variant::Id, 1, 2051, 4, 4),
            (Argon2Variant::I, 2, 333, 5, 512),
            (Argon2Variant::Id, 4, 4096, 4, 100),
        ];
        for &(variant, t, m, p, len) in cases {
            let alg = match variant {
                Argon2Variant::I => argon2::Algorithm::Argon2i,
                Argon2Variant::Id => argon2::Algorithm::Argon2id,
            };
            let params = argon2::Params::new(m, t, p, Some(len)).unwrap();
            let mut want = vec![0u8; len];
            argon2::Argon2::new(alg, argon2::Version::V0x13, params)
                .hash_password_into(b"pass phrase", b"saltsaltsalt", &mut want)
                .unwrap();
            for &kernel in &kernels {
                for threads in [1usize, 2, p as usize] {
                    let params = argon2_core::Params {
                        variant,
                        time: t,
                        memory_kib: m,
                        lanes: p,
                        threads,
                    };
                    let mut mem = argon2_memory::BlockMemory::new(params.block_count()).unwrap();
                    let mut got = vec![0u8; len];
                    argon2_core::derive_with(
                        &params,
                        b"pass phrase",
                        b"saltsaltsalt",
                        &mut mem,
                        &mut got,
                        kernel,
                    )
                    .unwrap();
                    assert_eq!(
                        got, want,
                        "{variant} t={t} m={m} p={p} len={len} {kernel:?} threads={threads}"
                    );
                }
            }
        }
    }

    /// Each compression kernel gives the portable one's blocks (both modes: overwrite and
    /// XOR into the output) on pseudo-random inputs.
    #[test]
    fn argon2_kernels_agree() {
        use argon2_blamka::{compress, Block, Kernel};
        let mut x = Block::zero();
        let mut y = Block::zero();
        let mut s = 0x0123_4567_89ab_cdefu64;
        for w in x.0.iter_mut().chain(y.0.iter_mut()) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            *w = s;
        }
        for xor in [false, true] {
            let mut want = y;
            compress(Kernel::Portable, &x, &y, &mut want, xor);
            for k in Kernel::available() {
                let mut got = y;
                compress(k, &x, &y, &mut got, xor);
                assert_eq!(got.0, want.0, "{k:?} xor={xor}");
            }
        }
    }

    #[test]
    fn variant_names() {
        assert_eq!(
            Argon2Variant::from_name("argon2i").unwrap(),
            Argon2Variant::I
        );
        assert_eq!(
            Argon2Variant::from_name("argon2id").unwrap(),
            Argon2Variant::Id
        );
        assert!(Argon2Variant::from_name("argon2d").is_err());
        assert!(Argon2Variant::from_name("Argon2id").is_err());
        assert_eq!(Argon2Variant::Id.name(), "argon2id");
        assert_eq!(Argon2Variant::I.to_string(), "argon2i");
        let p = Pbkdf::Pbkdf2 {
            hash: HashAlg::Sha256,
            iterations: 1000,
        };
        assert_eq!(p.type_name(), "pbkdf2");
    }

    fn a2(time: u32, memory_kib: u32, parallel: u32) -> Pbkdf {
        Pbkdf::Argon2 {
            variant: Argon2Variant::Id,
            time,
            memory_kib,
            parallel,
        }
    }

    fn is_limit<T>(r: Result<T>) -> bool {
        matches!(r, Err(CryptoError::Limit(_)))
    }

    #[test]
    fn check_limits_refuses_hostile_parameters() {
        assert!(is_limit(a2(4, ARGON2_MAX_MEMORY_KIB + 1, 4).check_limits()));
        assert!(is_limit(a2(4, u32::MAX, 1).check_limits()));
        assert!(is_limit(a2(4, 65536, 0).check_limits()));
        assert!(is_limit(a2(0, 65536, 4).check_limits()));
        assert!(is_limit(a2(4, 31, 4).check_limits())); // < 8 * lanes
        assert!(is_limit(a2(4, 65536, ARGON2_MAX_LANES + 1).check_limits()));
        let p0 = Pbkdf::Pbkdf2 {
            hash: HashAlg::Sha256,
            iterations: 0,
        };
        assert!(is_limit(p0.check_limits()));
        // Accepted when reading, as cryptsetup (libargon2 / PBKDF2 backends) does.
        assert!(a2(4, ARGON2_MAX_MEMORY_KIB, 4).check_limits().is_ok());
        assert!(a2(1, 8, 1).check_limits().is_ok());
        assert!(a2(3, 32, 4).check_limits().is_ok());
        assert!(a2(4, 65536, 8).check_limits().is_ok());
        let p1 = Pbkdf::Pbkdf2 {
            hash: HashAlg::Sha1,
            iterations: 1,
        };
        assert!(p1.check_limits().is_ok());
    }

    #[test]
    fn check_create_limits_are_cryptsetups() {
        assert!(a2(4, 32, 4).check_create_limits().is_ok());
        assert!(a2(4, ARGON2_MAX_MEMORY_KIB, 1)
            .check_create_limits()
            .is_ok());
        assert!(is_limit(a2(3, 65536, 4).check_create_limits()));
        assert!(is_limit(a2(4, 31, 1).check_create_limits()));
        assert!(is_limit(a2(4, 65536, 5).check_create_limits()));
        let p = |iterations| Pbkdf::Pbkdf2 {
            hash: HashAlg::Sha256,
            iterations,
        };
        assert!(is_limit(p(999).check_create_limits()));
        assert!(p(1000).check_create_limits().is_ok());
    }

    /// derive() refuses before allocating: 4 GiB + 1 KiB would otherwise be a 4 GiB
    /// allocation; u32::MAX KiB is 4 TiB. Both return at once with Limit.
    #[test]
    fn derive_refuses_before_allocating() {
        let t0 = std::time::Instant::now();
        assert!(is_limit(derive(
            &a2(4, ARGON2_MAX_MEMORY_KIB + 1, 4),
            b"p",
            &[0; 32],
            32
        )));
        assert!(is_limit(derive(&a2(4, u32::MAX, 4), b"p", &[0; 32], 32)));
        assert!(is_limit(derive(&a2(0, 64, 1), b"p", &[0; 32], 32)));
        assert!(is_limit(derive(&a2(4, 64, 0), b"p", &[0; 32], 32)));
        let p0 = Pbkdf::Pbkdf2 {
            hash: HashAlg::Sha256,
            iterations: 0,
        };
        assert!(is_limit(derive(&p0, b"p", b"s", 32)));
        // Absurd output lengths (e.g. a hostile key_size).
        let p1 = Pbkdf::Pbkdf2 {
            hash: HashAlg::Sha256,
            iterations: 1,
        };
        assert!(is_limit(derive(&p1, b"p", b"s", MAX_OUTPUT_LEN + 1)));
        assert!(is_limit(derive(&p1, b"p", b"s", usize::MAX)));
        assert!(derive(&p1, b"p", b"s", 0).is_err());
        assert!(derive(&a2(4, 64, 1), b"p", &[0; 32], 3).is_err());
        // Argon2 needs an 8-byte salt (libargon2 ARGON2_MIN_SALT_LENGTH).
        assert!(matches!(
            derive(&a2(4, 64, 1), b"p", &[0; 7], 32),
            Err(CryptoError::InvalidInput(_))
        ));
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    }

    /// A memory cost within format limits but above this machine's RAM is refused
    /// with Limit before allocation. Through `derive` only where RAM < 4 GiB (a larger
    /// cost is outside the format); the check `derive` runs first is tested on any machine.
    #[test]
    fn physical_memory_check() {
        let phys = physical_memory_kib().expect("sysconf reports physical memory");
        assert!(phys > 0);
        if phys < u64::from(ARGON2_MAX_MEMORY_KIB) {
            let m = u32::try_from(phys + 1).unwrap();
            assert!(is_limit(derive(&a2(4, m, 1), b"p", &[0; 32], 32)));
        }
        assert!(check_physical_memory(64).is_ok());
        // More than the memory available now is refused before allocating, saying so.
        let avail = available_memory_kib().expect("/proc/meminfo has MemAvailable");
        if let Ok(m) = u32::try_from(avail + avail / 2 + 1024) {
            match check_physical_memory(m) {
                Err(CryptoError::Limit(msg)) => assert!(
                    msg.contains("available") || msg.contains("physical memory"),
                    "{msg}"
                ),
                other => panic!("{m} KiB accepted: {other:?}"),
            }
        }
        if let Ok(m) = u32::try_from(phys + 1) {
            assert!(is_limit(check_physical_memory(m)));
        }
    }

    #[test]
    fn defaults() {
        let cap = default_argon2_memory_cap_kib();
        assert!(cap <= ARGON2_DEFAULT_MEMORY_KIB);
        assert!(cap > 0);
        let phys = physical_memory_kib().unwrap();
        if (128 * 1024..=u64::from(u32::MAX)).contains(&phys) {
            assert!(u64::from(cap) <= phys / 2);
        }
        let p = default_argon2_parallel();
        assert!((1..=ARGON2_MAX_PARALLEL).contains(&p));
        assert!(p <= online_cpus());
    }

    #[test]
    fn scale_iterations_as_cryptsetup() {
        assert_eq!(scale_pbkdf2_iterations(2_000_000, 2000).unwrap(), 4_000_000);
        assert_eq!(scale_pbkdf2_iterations(1_000_000, 125).unwrap(), 125_000);
        // at least PBKDF2_MIN_ITERATIONS
        assert_eq!(
            scale_pbkdf2_iterations(5000, 100).unwrap(),
            PBKDF2_MIN_ITERATIONS
        );
        assert!(is_limit(scale_pbkdf2_iterations(u32::MAX, 2000)));
    }

    #[test]
    fn next_params_steps() {
        // Worked example observed with cryptsetup 2.6.1 `benchmark --pbkdf argon2id
        // --iter-time 20 --pbkdf-memory 40000 --debug`: after t=7, m=40000 took 245 ms
        // the result is t=4, m=40000.
        let (mut t, mut m) = (7, 40000);
        assert_eq!(
            next_argon2_params(&mut t, &mut m, 4, 40000, 40000, 245, 20),
            Step::Final
        );
        assert_eq!((t, m), (4, 40000));
        // Increasing: memory first. Observed with cryptsetup 2.6.1 `benchmark --pbkdf
        // argon2i --iter-time 300 --debug`: t=4 m=121362 took 268 ms -> m=135852.
        let (mut t, mut m) = (4, 121362);
        assert_eq!(
            next_argon2_params(&mut t, &mut m, 4, 65536, 1 << 20, 268, 300),
            Step::Continue
        );
        assert_eq!((t, m), (4, 135852));
        // Increasing beyond the memory cap: time takes over.
        let (mut t, mut m) = (4, 65536);
        assert_eq!(
            next_argon2_params(&mut t, &mut m, 4, 65536, 65536, 250, 2000),
            Step::Continue
        );
        assert_eq!((t, m), (32, 65536));
        // Decreasing: time first.
        let (mut t, mut m) = (10, 65536);
        assert_eq!(
            next_argon2_params(&mut t, &mut m, 4, 65536, 1 << 20, 1000, 500),
            Step::Continue
        );
        assert_eq!((t, m), (5, 65536));
    }

    #[test]
    fn bench_grow_steps() {
        // Same cryptsetup trace: t=4 m=65536 took 135 ms -> m=121362.
        assert_eq!(bench_grow(4, 65536, 1 << 20, 135), Some((4, 121362)));
        // Memory capped at its maximum.
        assert_eq!(bench_grow(4, 65536, 100_000, 135), Some((4, 100_000)));
        // --pbkdf-memory 40000 trace: t=4 took 150 ms -> t=6; t=6 214 ms -> t=7; then
        // t=7 245 ms gives t=7 again: stop.
        assert_eq!(bench_grow(4, 40000, 40000, 150), Some((6, 40000)));
        assert_eq!(bench_grow(6, 40000, 40000, 214), Some((7, 40000)));
        assert_eq!(bench_grow(7, 40000, 40000, 245), None);
        // Very fast runs multiply by 16.
        assert_eq!(bench_grow(4, 32, 65536, 3), Some((4, 512)));
        assert_eq!(bench_grow(4, 65536, 65536, 3), Some((64, 65536)));
    }

    #[test]
    fn benchmark_pbkdf2_sanity() {
        let ips = benchmark_pbkdf2(HashAlg::Sha256, 32).unwrap();
        assert!(ips > 1000, "{ips}");
        assert!(benchmark_pbkdf2(HashAlg::Sha256, 0).is_err());
    }

    #[test]
    fn benchmark_argon2_sanity() {
        let (t, m) = benchmark_argon2(Argon2Variant::Id, 100, 64 * 1024, 2, 32).unwrap();
        assert!(t >= ARGON2_MIN_TIME, "{t}");
        assert!((ARGON2_MIN_MEMORY_KIB..=64 * 1024).contains(&m), "{m}");
        let kdf = a2(t, m, 2);
        kdf.check_create_limits().unwrap();
        assert!(benchmark_argon2(Argon2Variant::Id, 100, 64 * 1024, 0, 32).is_err());
        assert!(benchmark_argon2(Argon2Variant::Id, 100, 64 * 1024, 5, 32).is_err());
        assert!(benchmark_argon2(Argon2Variant::Id, 0, 64 * 1024, 1, 32).is_err());
        assert!(
            benchmark_argon2(Argon2Variant::Id, 100, ARGON2_MAX_MEMORY_KIB + 1, 1, 32).is_err()
        );
    }
}
