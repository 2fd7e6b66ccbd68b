//! PBKDF2-HMAC-RIPEMD-160 output blocks eight at a time: one RIPEMD-160 compression per AVX2
//! lane (x86_64 with AVX2, detected at run time).
//!
//! A TrueCrypt/VeraCrypt header key is 192 bytes, ten RIPEMD-160 blocks of VeraCrypt's
//! 655 331 iterations each: independent chains of dependent compressions, which one core
//! otherwise runs one after the other. Here each lane carries one block's chain; the HMAC's
//! inner and outer messages are the previous 20-byte value plus fixed padding, so a lane's
//! message block is five variable words and eleven constant ones. RIPEMD-160 as ISO/IEC
//! 10118-3 and Dobbertin, Bosselaers and Preneel define it; checked against the `ripemd`
//! crate through the generic HMAC path (tests in `kdf.rs`).

// Only x86_64 has the eight-lane path; elsewhere `blocks` answers `None`.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

/// Blocks one call computes at once.
pub(crate) const LANES: usize = 8;
/// RIPEMD-160's digest (and PBKDF2 block) length in bytes.
const DIGEST: usize = 20;
/// Iterations between two looks at `stop`.
const STOP_CHECK_EVERY: u32 = 4096;

/// Whether this CPU runs the eight-lane path.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// PBKDF2-HMAC-RIPEMD-160 blocks `first, first + 1, …` into `out` (at most [`LANES`] blocks
/// of 20 bytes; the last may be partial). `Some(true)`: done; `Some(false)`: `stop` said so
/// (`out` untouched); `None`: this CPU has no eight-lane path (the caller computes the blocks
/// another way).
pub(crate) fn blocks(
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    first: u32,
    out: &mut [u8],
    stop: &dyn Fn() -> bool,
) -> Option<bool> {
    debug_assert!(!out.is_empty() && out.len() <= LANES * DIGEST && iterations >= 1);
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: AVX2 was detected on this CPU just above.
        return Some(unsafe { blocks_avx2(password, salt, iterations, first, out, stop) });
    }
    let _ = (password, salt, iterations, first, out, stop);
    None
}

/// Left line: message word order (`r`) and rotation (`s`) of the 80 steps.
#[cfg_attr(not(test), allow(dead_code))] // written out in `compress`
const R_L: [usize; 80] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, //
    7, 4, 13, 1, 10, 6, 15, 3, 12, 0, 9, 5, 2, 14, 11, 8, //
    3, 10, 14, 4, 9, 15, 8, 1, 2, 7, 0, 6, 13, 11, 5, 12, //
    1, 9, 11, 10, 0, 8, 12, 4, 13, 3, 7, 15, 14, 5, 6, 2, //
    4, 0, 5, 9, 7, 12, 2, 10, 14, 1, 3, 8, 11, 6, 15, 13,
];
#[cfg_attr(not(test), allow(dead_code))] // written out in `compress`
const S_L: [u32; 80] = [
    11, 14, 15, 12, 5, 8, 7, 9, 11, 13, 14, 15, 6, 7, 9, 8, //
    7, 6, 8, 13, 11, 9, 7, 15, 7, 12, 15, 9, 11, 7, 13, 12, //
    11, 13, 6, 7, 14, 9, 13, 15, 14, 8, 13, 6, 5, 12, 7, 5, //
    11, 12, 14, 15, 14, 15, 9, 8, 9, 14, 5, 6, 8, 6, 5, 12, //
    9, 15, 5, 11, 6, 8, 13, 12, 5, 12, 13, 14, 11, 8, 5, 6,
];
/// Right line: message word order (`r'`) and rotation (`s'`).
#[cfg_attr(not(test), allow(dead_code))] // written out in `compress`
const R_R: [usize; 80] = [
    5, 14, 7, 0, 9, 2, 11, 4, 13, 6, 15, 8, 1, 10, 3, 12, //
    6, 11, 3, 7, 0, 13, 5, 10, 14, 15, 8, 12, 4, 9, 1, 2, //
    15, 5, 1, 3, 7, 14, 6, 9, 11, 8, 12, 2, 10, 0, 4, 13, //
    8, 6, 4, 1, 3, 11, 15, 0, 5, 12, 2, 13, 9, 7, 10, 14, //
    12, 15, 10, 4, 1, 5, 8, 7, 6, 2, 13, 14, 0, 3, 9, 11,
];
#[cfg_attr(not(test), allow(dead_code))] // written out in `compress`
const S_R: [u32; 80] = [
    8, 9, 9, 11, 13, 15, 15, 5, 7, 7, 8, 11, 14, 14, 12, 6, //
    9, 13, 15, 7, 12, 8, 9, 11, 7, 7, 12, 7, 6, 15, 13, 11, //
    9, 7, 15, 11, 8, 6, 6, 14, 12, 13, 5, 14, 13, 13, 7, 5, //
    15, 5, 8, 11, 14, 14, 6, 14, 6, 9, 12, 9, 12, 5, 15, 8, //
    8, 5, 12, 9, 12, 5, 14, 6, 8, 13, 6, 5, 15, 13, 11, 11,
];
/// Round constants of the left and the right line.
const K_L: [u32; 5] = [
    0x0000_0000,
    0x5a82_7999,
    0x6ed9_eba1,
    0x8f1b_bcdc,
    0xa953_fd4e,
];
const K_R: [u32; 5] = [
    0x50a2_8be6,
    0x5c4d_d124,
    0x6d70_3ef3,
    0x7a6d_76e9,
    0x0000_0000,
];
/// The initial chaining value.
const H0: [u32; 5] = [
    0x6745_2301,
    0xefcd_ab89,
    0x98ba_dcfe,
    0x1032_5476,
    0xc3d2_e1f0,
];

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn blocks_avx2(
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    first: u32,
    out: &mut [u8],
    stop: &dyn Fn() -> bool,
) -> bool {
    use hmac::{KeyInit, Mac};
    use zeroize::Zeroize;
    type HmacRipemd = hmac::Hmac<ripemd::Ripemd160>;

    let count = out.len().div_ceil(DIGEST);
    // The HMAC key block: the password, hashed first when longer than a block.
    let mut key = [0u8; 64];
    if password.len() > 64 {
        use ripemd::Digest;
        key[..DIGEST].copy_from_slice(&ripemd::Ripemd160::digest(password));
    } else {
        key[..password.len()].copy_from_slice(password);
    }
    // The chaining values after the ipad and opad blocks (every lane the same).
    let pad_state = |pad: u8| {
        let mut block = [_mm256_setzero_si256(); 16];
        for (w, chunk) in block.iter_mut().zip(key.chunks_exact(4)) {
            let word = u32::from_le_bytes([
                chunk[0] ^ pad,
                chunk[1] ^ pad,
                chunk[2] ^ pad,
                chunk[3] ^ pad,
            ]);
            *w = _mm256_set1_epi32(word as i32);
        }
        let mut h = H0.map(|v| _mm256_set1_epi32(v as i32));
        compress(&mut h, &block);
        block.zeroize_lanes();
        h
    };
    let inner = pad_state(0x36);
    let outer = pad_state(0x5c);
    key.zeroize();

    // U_1 of every lane: HMAC(password, salt || INT(index)).
    let mac = <HmacRipemd as KeyInit>::new_from_slice(password).expect("HMAC takes any key");
    let mut u_words = [[0u32; LANES]; 5];
    // Lanes past the last block repeat it (their results are not used).
    #[allow(clippy::needless_range_loop)] // `lane` indexes the second dimension
    for lane in 0..LANES {
        let index = first + lane.min(count - 1) as u32;
        let mut m = mac.clone();
        m.update(salt);
        m.update(&index.to_be_bytes());
        let mut u = m.finalize().into_bytes();
        for (w, chunk) in u.chunks_exact(4).enumerate() {
            u_words[w][lane] = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        u.as_mut_slice().zeroize();
    }
    let mut u = u_words.map(|lanes| {
        // SAFETY: `lanes` is 8 u32s, the 32 bytes an unaligned load reads.
        unsafe { _mm256_loadu_si256(lanes.as_ptr().cast()) }
    });
    u_words.zeroize();
    let mut t = u;

    // Message block of both HMAC passes: 20 bytes of value, then RIPEMD-160's padding for a
    // 84-byte message (the 64-byte pad block before it): 0x80, zeroes, the bit length.
    let mut block = [_mm256_setzero_si256(); 16];
    block[5] = _mm256_set1_epi32(0x80);
    block[14] = _mm256_set1_epi32((64 + DIGEST as i32) * 8);
    let mut left = iterations - 1;
    let mut stopped = false;
    while left > 0 {
        let run = left.min(STOP_CHECK_EVERY);
        for _ in 0..run {
            block[..5].copy_from_slice(&u);
            let mut h = inner;
            compress(&mut h, &block);
            block[..5].copy_from_slice(&h);
            let mut h = outer;
            compress(&mut h, &block);
            u = h;
            for (tw, uw) in t.iter_mut().zip(u.iter()) {
                *tw = _mm256_xor_si256(*tw, *uw);
            }
        }
        left -= run;
        if left > 0 && stop() {
            stopped = true;
            break;
        }
    }
    if !stopped {
        let mut lanes = [[0u32; LANES]; 5];
        for (w, v) in t.iter().enumerate() {
            // SAFETY: `lanes[w]` is 8 u32s, the 32 bytes an unaligned store writes.
            unsafe { _mm256_storeu_si256(lanes[w].as_mut_ptr().cast(), *v) };
        }
        for (b, chunk) in out.chunks_mut(DIGEST).enumerate() {
            let mut bytes = [0u8; DIGEST];
            for w in 0..5 {
                bytes[4 * w..4 * w + 4].copy_from_slice(&lanes[w][b].to_le_bytes());
            }
            chunk.copy_from_slice(&bytes[..chunk.len()]);
            bytes.zeroize();
        }
        lanes.zeroize();
    }
    block.zeroize_lanes();
    u.zeroize_lanes();
    t.zeroize_lanes();
    !stopped
}

/// Overwrite vectors that held secret values.
#[cfg(target_arch = "x86_64")]
trait ZeroizeLanes {
    fn zeroize_lanes(&mut self);
}

#[cfg(target_arch = "x86_64")]
impl ZeroizeLanes for [__m256i] {
    fn zeroize_lanes(&mut self) {
        for v in self.iter_mut() {
            // SAFETY: a volatile write of an all-zero value to a valid, aligned `&mut`.
            unsafe { core::ptr::write_volatile(v, core::mem::zeroed()) };
        }
    }
}

/// One RIPEMD-160 compression in each of the eight lanes: the 80 steps of both lines
/// unrolled, interleaved (left step j, right step j), with constant rotations. The step list
/// is the word order and rotation tables above, written out (a unit test checks that it
/// matches them).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
fn compress(h: &mut [__m256i; 5], x: &[__m256i; 16]) {
    let ones = _mm256_set1_epi32(-1);
    let add = |a: __m256i, b: __m256i| _mm256_add_epi32(a, b);
    macro_rules! rol {
        ($v:expr, $s:literal) => {
            _mm256_or_si256(
                _mm256_slli_epi32::<$s>($v),
                _mm256_srli_epi32::<{ 32 - $s }>($v),
            )
        };
    }
    // The five boolean functions, by round.
    let f0 = |x: __m256i, y: __m256i, z: __m256i| _mm256_xor_si256(_mm256_xor_si256(x, y), z);
    let f1 = |x: __m256i, y: __m256i, z: __m256i| {
        _mm256_or_si256(_mm256_and_si256(x, y), _mm256_andnot_si256(x, z))
    };
    let f2 = |x: __m256i, y: __m256i, z: __m256i| {
        _mm256_xor_si256(_mm256_or_si256(x, _mm256_xor_si256(y, ones)), z)
    };
    let f3 = |x: __m256i, y: __m256i, z: __m256i| {
        _mm256_or_si256(_mm256_and_si256(x, z), _mm256_andnot_si256(z, y))
    };
    let f4 = |x: __m256i, y: __m256i, z: __m256i| {
        _mm256_xor_si256(x, _mm256_or_si256(y, _mm256_xor_si256(z, ones)))
    };
    let kl = K_L.map(|k| _mm256_set1_epi32(k as i32));
    let kr = K_R.map(|k| _mm256_set1_epi32(k as i32));
    macro_rules! step {
        ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $x:expr, $s:literal, $k:expr) => {{
            let t = add(rol!(add(add($a, $f($b, $c, $d)), add($x, $k)), $s), $e);
            $a = $e;
            $e = $d;
            $d = rol!($c, 10);
            $c = $b;
            $b = t;
        }};
    }
    let [mut al, mut bl, mut cl, mut dl, mut el] = *h;
    let [mut ar, mut br, mut cr, mut dr, mut er] = *h;
    {
        step!(al, bl, cl, dl, el, f0, x[0], 11, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[5], 8, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[1], 14, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[14], 9, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[2], 15, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[7], 9, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[3], 12, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[0], 11, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[4], 5, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[9], 13, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[5], 8, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[2], 15, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[6], 7, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[11], 15, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[7], 9, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[4], 5, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[8], 11, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[13], 7, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[9], 13, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[6], 7, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[10], 14, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[15], 8, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[11], 15, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[8], 11, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[12], 6, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[1], 14, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[13], 7, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[10], 14, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[14], 9, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[3], 12, kr[0]);
        step!(al, bl, cl, dl, el, f0, x[15], 8, kl[0]);
        step!(ar, br, cr, dr, er, f4, x[12], 6, kr[0]);
        step!(al, bl, cl, dl, el, f1, x[7], 7, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[6], 9, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[4], 6, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[11], 13, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[13], 8, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[3], 15, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[1], 13, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[7], 7, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[10], 11, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[0], 12, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[6], 9, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[13], 8, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[15], 7, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[5], 9, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[3], 15, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[10], 11, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[12], 7, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[14], 7, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[0], 12, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[15], 7, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[9], 15, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[8], 12, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[5], 9, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[12], 7, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[2], 11, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[4], 6, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[14], 7, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[9], 15, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[11], 13, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[1], 13, kr[1]);
        step!(al, bl, cl, dl, el, f1, x[8], 12, kl[1]);
        step!(ar, br, cr, dr, er, f3, x[2], 11, kr[1]);
        step!(al, bl, cl, dl, el, f2, x[3], 11, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[15], 9, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[10], 13, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[5], 7, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[14], 6, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[1], 15, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[4], 7, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[3], 11, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[9], 14, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[7], 8, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[15], 9, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[14], 6, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[8], 13, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[6], 6, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[1], 15, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[9], 14, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[2], 14, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[11], 12, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[7], 8, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[8], 13, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[0], 13, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[12], 5, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[6], 6, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[2], 14, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[13], 5, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[10], 13, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[11], 12, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[0], 13, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[5], 7, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[4], 7, kr[2]);
        step!(al, bl, cl, dl, el, f2, x[12], 5, kl[2]);
        step!(ar, br, cr, dr, er, f2, x[13], 5, kr[2]);
        step!(al, bl, cl, dl, el, f3, x[1], 11, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[8], 15, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[9], 12, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[6], 5, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[11], 14, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[4], 8, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[10], 15, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[1], 11, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[0], 14, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[3], 14, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[8], 15, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[11], 14, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[12], 9, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[15], 6, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[4], 8, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[0], 14, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[13], 9, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[5], 6, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[3], 14, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[12], 9, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[7], 5, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[2], 12, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[15], 6, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[13], 9, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[14], 8, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[9], 12, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[5], 6, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[7], 5, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[6], 5, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[10], 15, kr[3]);
        step!(al, bl, cl, dl, el, f3, x[2], 12, kl[3]);
        step!(ar, br, cr, dr, er, f1, x[14], 8, kr[3]);
        step!(al, bl, cl, dl, el, f4, x[4], 9, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[12], 8, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[0], 15, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[15], 5, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[5], 5, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[10], 12, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[9], 11, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[4], 9, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[7], 6, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[1], 12, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[12], 8, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[5], 5, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[2], 13, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[8], 14, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[10], 12, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[7], 6, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[14], 5, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[6], 8, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[1], 12, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[2], 13, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[3], 13, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[13], 6, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[8], 14, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[14], 5, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[11], 11, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[0], 15, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[6], 8, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[3], 13, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[15], 5, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[9], 11, kr[4]);
        step!(al, bl, cl, dl, el, f4, x[13], 6, kl[4]);
        step!(ar, br, cr, dr, er, f0, x[11], 11, kr[4]);
    }
    let t = add(add(h[1], cl), dr);
    h[1] = add(add(h[2], dl), er);
    h[2] = add(add(h[3], el), ar);
    h[3] = add(add(h[4], al), br);
    h[4] = add(add(h[0], bl), cr);
    h[0] = t;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unrolled steps of `compress` are the word order and rotation tables.
    #[test]
    fn unrolled_steps_follow_the_tables() {
        let src = include_str!("pbkdf2_ripemd_x8.rs");
        let steps: Vec<(bool, usize, usize, u32)> = src
            .lines()
            .filter_map(|l| l.trim().strip_prefix("step!(a"))
            .map(|l| {
                let left = l.starts_with("l,");
                let parts: Vec<&str> = l.split(", ").collect();
                let f: usize = parts[5][1..].parse().unwrap();
                let x: usize = parts[6]
                    .trim_start_matches("x[")
                    .trim_end_matches(']')
                    .parse()
                    .unwrap();
                let s: u32 = parts[7].parse().unwrap();
                (left, f, x, s)
            })
            .collect();
        assert_eq!(steps.len(), 160);
        for j in 0..80 {
            let round = j / 16;
            assert_eq!(steps[2 * j], (true, round, R_L[j], S_L[j]), "left step {j}");
            assert_eq!(
                steps[2 * j + 1],
                (false, 4 - round, R_R[j], S_R[j]),
                "right step {j}"
            );
        }
    }
}
