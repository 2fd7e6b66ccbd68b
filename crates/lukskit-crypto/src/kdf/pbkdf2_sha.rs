//! PBKDF2-HMAC with SHA-1, SHA-256 and SHA-512, the hashes LUKS keyslots use, on the sha1/sha2
//! crates' block functions (SHA-NI on x86_64 and the ARMv8 SHA extensions where the CPU has
//! them, detected at run time; AVX2 for SHA-512).
//!
//! Faster than the generic `pbkdf2` + `hmac` path for the same result:
//! * the HMAC inner and outer states are computed once from the password; each iteration is
//!   then exactly two block compressions on one pre-padded block (the message `U` is shorter
//!   than a block, so its padding and length never change);
//! * the output blocks `T_i` of a key longer than the hash (a 512-bit key is 2 SHA-256
//!   chains, 4 SHA-1 chains) are independent: they run on separate threads, up to the number
//!   of online CPUs. A key of one hash length (SHA-512 for a 512-bit key) has one chain and
//!   no parallelism to gain.

use std::sync::atomic::{AtomicU32, Ordering};

use digest::{KeyInit, Mac};
use zeroize::{Zeroize, Zeroizing};

/// The longest digest here (SHA-512).
const MAX_HASH_LEN: usize = 64;

/// A SHA-family compression state with the block layout PBKDF2's inner loop needs.
trait ShaState: Copy + Zeroize + Send + Sync {
    /// A message block (64 or 128 bytes).
    type Block: AsRef<[u8]> + AsMut<[u8]> + Zeroize + Send;
    /// The HMAC for the first iteration (`U_1 = HMAC(P, S || INT(i))`).
    type Mac: Mac + KeyInit + Clone + Sync;
    /// Digest length in bytes.
    const OUT_LEN: usize;
    /// Width of the message-length field at the end of the padding (8 or 16 bytes).
    const LEN_FIELD: usize;
    fn iv() -> Self;
    fn zero_block() -> Self::Block;
    fn compress(&mut self, block: &Self::Block);
    /// The digest (`OUT_LEN` bytes, big-endian words) into `out`.
    fn write(&self, out: &mut [u8]);
    /// `self ^= other`, word by word (the running `T_i`).
    fn xor(&mut self, other: &Self);
    /// The state whose `write` gives the `OUT_LEN` bytes of `bytes`.
    fn from_bytes(bytes: &[u8]) -> Self;
}

#[derive(Clone, Copy, Zeroize)]
struct Sha1State([u32; 5]);
#[derive(Clone, Copy, Zeroize)]
struct Sha256State([u32; 8]);
#[derive(Clone, Copy, Zeroize)]
struct Sha512State([u64; 8]);

macro_rules! words {
    ($t:ty, $word:ty, $n:expr) => {
        fn write(&self, out: &mut [u8]) {
            const W: usize = std::mem::size_of::<$word>();
            for (chunk, w) in out[..$n * W].chunks_exact_mut(W).zip(self.0.iter()) {
                chunk.copy_from_slice(&w.to_be_bytes());
            }
        }
        fn xor(&mut self, other: &Self) {
            for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
                *a ^= *b;
            }
        }
        fn from_bytes(bytes: &[u8]) -> Self {
            const W: usize = std::mem::size_of::<$word>();
            let mut s = [0 as $word; $n];
            for (w, chunk) in s.iter_mut().zip(bytes.chunks_exact(W)) {
                let mut b = [0u8; W];
                b.copy_from_slice(chunk);
                *w = <$word>::from_be_bytes(b);
            }
            Self(s)
        }
    };
}

// The initial hash values are FIPS 180-4's (§5.3.1, §5.3.3, §5.3.5).
impl ShaState for Sha1State {
    type Block = [u8; 64];
    type Mac = hmac::Hmac<sha1::Sha1>;
    const OUT_LEN: usize = 20;
    const LEN_FIELD: usize = 8;
    fn iv() -> Self {
        Self([
            0x6745_2301,
            0xEFCD_AB89,
            0x98BA_DCFE,
            0x1032_5476,
            0xC3D2_E1F0,
        ])
    }
    fn zero_block() -> Self::Block {
        [0; 64]
    }
    fn compress(&mut self, block: &Self::Block) {
        sha1::block_api::compress(&mut self.0, std::slice::from_ref(block));
    }
    words!(Sha1State, u32, 5);
}

impl ShaState for Sha256State {
    type Block = [u8; 64];
    type Mac = hmac::Hmac<sha2::Sha256>;
    const OUT_LEN: usize = 32;
    const LEN_FIELD: usize = 8;
    fn iv() -> Self {
        Self([
            0x6a09_e667,
            0xbb67_ae85,
            0x3c6e_f372,
            0xa54f_f53a,
            0x510e_527f,
            0x9b05_688c,
            0x1f83_d9ab,
            0x5be0_cd19,
        ])
    }
    fn zero_block() -> Self::Block {
        [0; 64]
    }
    fn compress(&mut self, block: &Self::Block) {
        sha2::block_api::compress256(&mut self.0, std::slice::from_ref(block));
    }
    words!(Sha256State, u32, 8);
}

impl ShaState for Sha512State {
    type Block = [u8; 128];
    type Mac = hmac::Hmac<sha2::Sha512>;
    const OUT_LEN: usize = 64;
    const LEN_FIELD: usize = 16;
    fn iv() -> Self {
        Self([
            0x6a09_e667_f3bc_c908,
            0xbb67_ae85_84ca_a73b,
            0x3c6e_f372_fe94_f82b,
            0xa54f_f53a_5f1d_36f1,
            0x510e_527f_ade6_82d1,
            0x9b05_688c_2b3e_6c1f,
            0x1f83_d9ab_fb41_bd6b,
            0x5be0_cd19_137e_2179,
        ])
    }
    fn zero_block() -> Self::Block {
        [0; 128]
    }
    fn compress(&mut self, block: &Self::Block) {
        sha2::block_api::compress512(&mut self.0, std::slice::from_ref(block));
    }
    words!(Sha512State, u64, 8);
}

/// The hashes with a fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FastHash {
    Sha1,
    Sha256,
    Sha512,
}

impl FastHash {
    /// The fast path for `hash`, where it has one.
    pub(crate) fn of(hash: crate::hash::HashAlg) -> Option<FastHash> {
        use crate::hash::HashAlg;
        match hash {
            HashAlg::Sha1 => Some(FastHash::Sha1),
            HashAlg::Sha256 => Some(FastHash::Sha256),
            HashAlg::Sha512 => Some(FastHash::Sha512),
            _ => None,
        }
    }
}

/// How many threads may run independent output blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Threads {
    /// One per output block, up to the online CPUs.
    AllCores,
    /// The calling thread only (the benchmark, which measures this thread's CPU time).
    Calling,
}

/// PBKDF2-HMAC-`hash` of `password` and `salt` with `iterations` ≥ 1 rounds into `out`.
pub(crate) fn pbkdf2(
    hash: FastHash,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    out: &mut [u8],
    threads: Threads,
) {
    match hash {
        FastHash::Sha1 => run::<Sha1State>(password, salt, iterations, out, threads),
        FastHash::Sha256 => run::<Sha256State>(password, salt, iterations, out, threads),
        FastHash::Sha512 => run::<Sha512State>(password, salt, iterations, out, threads),
    }
}

/// HMAC keyed with the password: the states after the ipad and opad blocks, and the MAC
/// for `U_1`.
struct Keyed<S: ShaState> {
    inner: S,
    outer: S,
    mac: S::Mac,
}

impl<S: ShaState> Drop for Keyed<S> {
    fn drop(&mut self) {
        self.inner.zeroize();
        self.outer.zeroize();
    }
}

fn keyed<S: ShaState>(password: &[u8]) -> Keyed<S> {
    // HMAC accepts keys of any length (hashed when longer than a block).
    let mac = <S::Mac as KeyInit>::new_from_slice(password).expect("HMAC takes any key length");
    // The padded key K0 (RFC 2104): the password, or its hash when longer than a block.
    let mut k0 = S::zero_block();
    let block_len = k0.as_ref().len();
    if password.len() > block_len {
        let mut h = S::iv();
        let mut buf = S::zero_block();
        // Hash the password with the padding rule of FIPS 180-4 (one or more blocks).
        let mut chunks = password.chunks_exact(block_len);
        for c in &mut chunks {
            buf.as_mut().copy_from_slice(c);
            h.compress(&buf);
        }
        let rest = chunks.remainder();
        buf.as_mut().zeroize();
        buf.as_mut()[..rest.len()].copy_from_slice(rest);
        buf.as_mut()[rest.len()] = 0x80;
        if rest.len() + 1 + S::LEN_FIELD > block_len {
            h.compress(&buf);
            buf.as_mut().zeroize();
        }
        let bits = (password.len() as u128) * 8;
        let be = bits.to_be_bytes();
        buf.as_mut()[block_len - S::LEN_FIELD..].copy_from_slice(&be[16 - S::LEN_FIELD..]);
        h.compress(&buf);
        h.write(k0.as_mut());
        buf.zeroize();
        h.zeroize();
    } else {
        k0.as_mut()[..password.len()].copy_from_slice(password);
    }
    let mut pad = S::zero_block();
    let mut inner = S::iv();
    for (p, k) in pad.as_mut().iter_mut().zip(k0.as_ref()) {
        *p = k ^ 0x36;
    }
    inner.compress(&pad);
    let mut outer = S::iv();
    for (p, k) in pad.as_mut().iter_mut().zip(k0.as_ref()) {
        *p = k ^ 0x5c;
    }
    outer.compress(&pad);
    pad.zeroize();
    k0.zeroize();
    Keyed { inner, outer, mac }
}

/// How many iterations run between two looks at a job's stop condition.
const STOP_CHECK_EVERY: u32 = 4096;

/// `T_i` (1-based `index`) into `out` (at most `OUT_LEN` bytes). `stop` is asked every
/// [`STOP_CHECK_EVERY`] iterations; when it says so the block is abandoned (`out` untouched)
/// and `false` returned.
fn block<S: ShaState>(
    k: &Keyed<S>,
    salt: &[u8],
    index: u32,
    iterations: u32,
    out: &mut [u8],
    stop: &dyn Fn() -> bool,
) -> bool {
    let mut mac = k.mac.clone();
    mac.update(salt);
    mac.update(&index.to_be_bytes());
    let mut u1 = mac.finalize().into_bytes();
    let mut t = S::from_bytes(&u1);

    // The single block both hashes of an iteration compress: U (OUT_LEN bytes), 0x80, zeros,
    // and the message length — one block (the key pad) plus OUT_LEN bytes — in bits.
    let mut buf = S::zero_block();
    let block_len = buf.as_ref().len();
    buf.as_mut()[..S::OUT_LEN].copy_from_slice(&u1);
    u1.as_mut_slice().zeroize();
    buf.as_mut()[S::OUT_LEN] = 0x80;
    let bits = ((block_len + S::OUT_LEN) as u128 * 8).to_be_bytes();
    buf.as_mut()[block_len - S::LEN_FIELD..].copy_from_slice(&bits[16 - S::LEN_FIELD..]);

    let mut left = iterations - 1;
    while left > 0 {
        let run = left.min(STOP_CHECK_EVERY);
        for _ in 0..run {
            let mut s = k.inner;
            s.compress(&buf);
            s.write(buf.as_mut());
            s = k.outer;
            s.compress(&buf);
            s.write(buf.as_mut());
            t.xor(&s);
            s.zeroize();
        }
        left -= run;
        if left > 0 && stop() {
            buf.zeroize();
            t.zeroize();
            return false;
        }
    }
    let mut bytes = S::zero_block();
    t.write(bytes.as_mut());
    out.copy_from_slice(&bytes.as_ref()[..out.len()]);
    bytes.zeroize();
    buf.zeroize();
    t.zeroize();
    true
}

/// Never stop: the whole derivation is wanted.
fn never() -> bool {
    false
}

/// One output block `T_index` (1-based) of PBKDF2-HMAC-`hash` into `out` (at most the hash's
/// length), asking `stop` now and then; `false` when it stopped the work.
pub(crate) fn pbkdf2_block(
    hash: FastHash,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    index: u32,
    out: &mut [u8],
    stop: &dyn Fn() -> bool,
) -> bool {
    match hash {
        FastHash::Sha1 => block(
            &keyed::<Sha1State>(password),
            salt,
            index,
            iterations,
            out,
            stop,
        ),
        FastHash::Sha256 => block(
            &keyed::<Sha256State>(password),
            salt,
            index,
            iterations,
            out,
            stop,
        ),
        FastHash::Sha512 => block(
            &keyed::<Sha512State>(password),
            salt,
            index,
            iterations,
            out,
            stop,
        ),
    }
}

/// The digest length of `hash`.
pub(crate) fn output_len(hash: FastHash) -> usize {
    match hash {
        FastHash::Sha1 => Sha1State::OUT_LEN,
        FastHash::Sha256 => Sha256State::OUT_LEN,
        FastHash::Sha512 => Sha512State::OUT_LEN,
    }
}

fn run<S: ShaState>(password: &[u8], salt: &[u8], iterations: u32, out: &mut [u8], th: Threads) {
    let k = keyed::<S>(password);
    // out is at most MAX_OUTPUT_LEN bytes, so the block count fits in u32.
    let blocks = u32::try_from(out.len().div_ceil(S::OUT_LEN)).unwrap_or(u32::MAX);
    let workers = match th {
        Threads::Calling => 1,
        Threads::AllCores => super::online_cpus().min(blocks),
    };
    if workers <= 1 {
        for (c, i) in out.chunks_mut(S::OUT_LEN).zip(1u32..) {
            block(&k, salt, i, iterations, c, &never);
        }
        return;
    }
    // Each thread takes the next block index until none is left; a thread that cannot be
    // spawned just leaves its share to the others (this one included).
    let next = AtomicU32::new(1);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i > blocks {
                return done;
            }
            let mut t = Zeroizing::new([0u8; MAX_HASH_LEN]);
            block(&k, salt, i, iterations, &mut t[..S::OUT_LEN], &never);
            done.push((i, t));
        }
    };
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..workers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("lukskit-pbkdf2".into())
                    .spawn_scoped(scope, work)
                    .ok()
            })
            .collect();
        let mut all = work();
        for h in handles {
            match h.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    for (i, t) in results {
        let start = (i as usize - 1) * S::OUT_LEN;
        let end = (start + S::OUT_LEN).min(out.len());
        out[start..end].copy_from_slice(&t[..end - start]);
    }
}
