//! Serpent, eight blocks at a time.
//!
//! # Why not the `serpent` crate
//!
//! RustCrypto `serpent` 0.6 (used by the tests as the reference) encrypts one block at a time
//! in 32-bit words and picks the S-box of each round with a `match`: ~70–90 MiB/s on the
//! reference machine, below the 150 MiB/s per core this engine needs, and it has no
//! multi-block API to build on. Serpent is designed to be computed "bitsliced": the four
//! 32-bit words of a block feed 32 four-bit S-boxes through pure AND/OR/XOR/NOT logic, and its
//! linear layer is rotations, shifts and XORs. Every operation is therefore a 32-bit lane-wise
//! operation, so several blocks can go through the same instructions with word `k` of block
//! `j` in lane `j` of a vector — what the Linux kernel's `serpent-sse2`/`serpent-avx2` do.
//!
//! The cipher is written once, generic over a [`Lane`] type, and instantiated for
//! * eight lanes of AVX2 (`__m256i`, chosen at run time when the CPU has AVX2): ~350–500 MiB/s,
//! * four lanes of SSE2 (`__m128i`, every x86-64 CPU): ~160–240 MiB/s,
//! * portable `[u32; 8]` lanes for other CPUs and for [`super::SectorCipher::new_portable`]
//!   (LLVM does not vectorize those well: ~55 MiB/s),
//! * a single `u32` for the key schedule and tails of one or two blocks.
//!
//! The only `unsafe` is in the thin wrappers around the SSE2/AVX2 intrinsics (no assembly).
//! Their soundness is structural: a lane value can only be made by [`Lane::load`], which
//! takes the lane type's evidence that the CPU runs its instructions (`()` for the portable
//! and SSE2 lanes, which every x86-64 CPU runs; a `simd::Avx2Cpu`, made only by a run-time
//! AVX2 check, for the AVX2 lanes), and every other operation starts from an existing value.
//! The S-box circuits are derived at compile time from the S-box tables of the Serpent
//! specification by the Möbius transform (algebraic normal form: each output bit is an XOR of
//! products of input bits), so there are no hand-copied Boolean formulas to get wrong; the
//! decryption S-boxes are the table inverses.
//!
//! Tested against the `serpent` crate on random keys and blocks (every backend), and through
//! the modes against cryptsetup's Serpent vectors (NIST SP 800-38A plaintexts, CAVS XTS).

use std::ops::{BitAnd, BitOr, BitXor, Not};
use zeroize::Zeroize;

/// The eight S-boxes of the Serpent specification (S0..S7).
const SBOX: [[u8; 16]; 8] = [
    [3, 8, 15, 1, 10, 6, 5, 11, 14, 13, 4, 2, 7, 0, 9, 12],
    [15, 12, 2, 7, 9, 0, 5, 10, 1, 11, 14, 8, 6, 13, 3, 4],
    [8, 6, 7, 9, 3, 12, 10, 15, 13, 1, 14, 4, 0, 11, 5, 2],
    [0, 15, 11, 8, 12, 9, 6, 3, 13, 1, 2, 4, 10, 7, 5, 14],
    [1, 15, 8, 3, 12, 0, 11, 6, 2, 5, 4, 10, 9, 14, 7, 13],
    [15, 5, 2, 11, 4, 10, 9, 12, 0, 3, 14, 8, 13, 6, 7, 1],
    [7, 2, 12, 5, 8, 4, 6, 11, 14, 9, 1, 15, 13, 3, 10, 0],
    [1, 13, 15, 0, 14, 8, 2, 11, 7, 4, 12, 10, 9, 3, 5, 6],
];

const PHI: u32 = 0x9e37_79b9;

const fn invert(s: [u8; 16]) -> [u8; 16] {
    let mut inv = [0u8; 16];
    let mut x = 0;
    while x < 16 {
        inv[s[x] as usize] = x as u8;
        x += 1;
    }
    inv
}

/// Algebraic normal form of the four output bits of a 4-bit S-box: bit `m` of `anf[o]` says
/// whether the monomial ∏_{i ∈ m} x_i (x_0 = bit 0 of the input) appears in output bit `o`.
const fn anf(s: [u8; 16]) -> [u16; 4] {
    let mut out = [0u16; 4];
    let mut o = 0;
    while o < 4 {
        let mut a = [0u8; 16];
        let mut x = 0;
        while x < 16 {
            a[x] = (s[x] >> o) & 1;
            x += 1;
        }
        // Möbius transform over GF(2).
        let mut i = 0;
        while i < 4 {
            let mut x = 0;
            while x < 16 {
                if x & (1 << i) != 0 {
                    a[x] ^= a[x ^ (1 << i)];
                }
                x += 1;
            }
            i += 1;
        }
        let mut m = 0;
        while m < 16 {
            out[o] |= (a[m] as u16) << m;
            m += 1;
        }
        o += 1;
    }
    out
}

const fn anf_all(inverse: bool) -> [[u16; 4]; 8] {
    let mut out = [[0u16; 4]; 8];
    let mut i = 0;
    while i < 8 {
        out[i] = anf(if inverse { invert(SBOX[i]) } else { SBOX[i] });
        i += 1;
    }
    out
}

const ENC_ANF: [[u16; 4]; 8] = anf_all(false);
const DEC_ANF: [[u16; 4]; 8] = anf_all(true);

/// A vector of 32-bit lanes (or one `u32`) with the operations Serpent needs.
///
/// Values come only from [`Lane::load`], which needs a [`Lane::Cpu`]: the evidence that this
/// CPU runs the lane type's instructions. Every other operation takes an existing value, so
/// its existence carries that evidence.
trait Lane:
    Copy + BitXor<Output = Self> + BitAnd<Output = Self> + BitOr<Output = Self> + Not<Output = Self>
{
    /// Number of lanes (blocks processed together).
    const N: usize;
    /// Evidence that the CPU runs this lane type's instructions.
    type Cpu: Copy;
    /// Every lane set to `v` (`self` only vouches for the CPU; its lanes are not read).
    fn splat(self, v: u32) -> Self;
    fn rotl(self, n: u32) -> Self;
    fn shl(self, n: u32) -> Self;
    /// Lanes from the first `N` words of `w`.
    fn load(cpu: Self::Cpu, w: &[u32; 8]) -> Self;
    /// Lanes into the first `N` words of `w`.
    fn store(self, w: &mut [u32; 8]);
}

impl Lane for u32 {
    const N: usize = 1;
    type Cpu = ();
    #[inline(always)]
    fn splat(self, v: u32) -> Self {
        v
    }
    #[inline(always)]
    fn load((): (), w: &[u32; 8]) -> Self {
        w[0]
    }
    #[inline(always)]
    fn store(self, w: &mut [u32; 8]) {
        w[0] = self;
    }
    #[inline(always)]
    fn rotl(self, n: u32) -> Self {
        self.rotate_left(n)
    }
    #[inline(always)]
    fn shl(self, n: u32) -> Self {
        self << n
    }
}

/// Word `k` of eight blocks, in plain Rust (the portable lanes; LLVM does not vectorize
/// these well, so x86-64 uses the SIMD types below instead).
#[derive(Clone, Copy)]
#[repr(align(32))]
struct X8([u32; 8]);

macro_rules! x8_binop {
    ($tr:ident, $f:ident, $op:tt) => {
        impl $tr for X8 {
            type Output = X8;
            #[inline(always)]
            fn $f(self, o: X8) -> X8 {
                let mut r = self.0;
                for (a, b) in r.iter_mut().zip(o.0) {
                    *a $op b;
                }
                X8(r)
            }
        }
    };
}
x8_binop!(BitXor, bitxor, ^=);
x8_binop!(BitAnd, bitand, &=);
x8_binop!(BitOr, bitor, |=);

impl Not for X8 {
    type Output = X8;
    #[inline(always)]
    fn not(self) -> X8 {
        X8(self.0.map(|a| !a))
    }
}

impl Lane for X8 {
    const N: usize = 8;
    type Cpu = ();
    #[inline(always)]
    fn splat(self, v: u32) -> Self {
        X8([v; 8])
    }
    #[inline(always)]
    fn load((): (), w: &[u32; 8]) -> Self {
        X8(*w)
    }
    #[inline(always)]
    fn store(self, w: &mut [u32; 8]) {
        *w = self.0;
    }
    #[inline(always)]
    fn rotl(self, n: u32) -> Self {
        X8(self.0.map(|a| a.rotate_left(n)))
    }
    #[inline(always)]
    fn shl(self, n: u32) -> Self {
        X8(self.0.map(|a| a << n))
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    //! SSE2 (4 lanes, always present on x86-64) and AVX2 (8 lanes, run-time detected) lanes.
    //! The operations are `#[inline(always)]` wrappers of the intrinsics, inlined into
    //! functions compiled with the matching target feature for speed.
    //!
    //! Soundness does not rest on that convention: the lane types' fields are private to this
    //! module, and a value is made only by [`Lane::load`], which takes the type's `Cpu`
    //! evidence — `()` for SSE2 (part of the x86-64 baseline), [`Avx2Cpu`] for AVX2, which
    //! only [`Avx2Cpu::detect`] makes after checking the CPU. Every other operation starts
    //! from an existing value, so the CPU is known to run its instructions.
    use crate::engine::serpent::Lane;
    use core::arch::x86_64::*;
    use std::ops::{BitAnd, BitOr, BitXor, Not};

    /// Evidence that this CPU runs AVX2 instructions.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) struct Avx2Cpu(());

    impl Avx2Cpu {
        /// The evidence, if the CPU has AVX2 (checked at run time).
        pub(super) fn detect() -> Option<Self> {
            std::is_x86_feature_detected!("avx2").then_some(Avx2Cpu(()))
        }
    }

    // SSE2 is part of the x86-64 baseline: every x86-64 CPU runs it.
    const _: () = assert!(cfg!(target_feature = "sse2"));

    macro_rules! simd_lane {
        ($t:ident, $cpu:ty, $v:ty, $n:literal, $xor:ident, $and:ident, $or:ident, $set1:ident,
         $sll:ident, $srl:ident, $loadu:ident, $storeu:ident) => {
            #[derive(Clone, Copy)]
            pub(super) struct $t($v);
            impl BitXor for $t {
                type Output = $t;
                #[inline(always)]
                fn bitxor(self, o: $t) -> $t {
                    // SAFETY: `self` exists, so `load` was shown this type's `Cpu` evidence:
                    // the CPU runs the instruction.
                    $t(unsafe { $xor(self.0, o.0) })
                }
            }
            impl BitAnd for $t {
                type Output = $t;
                #[inline(always)]
                fn bitand(self, o: $t) -> $t {
                    // SAFETY: as for `bitxor`.
                    $t(unsafe { $and(self.0, o.0) })
                }
            }
            impl BitOr for $t {
                type Output = $t;
                #[inline(always)]
                fn bitor(self, o: $t) -> $t {
                    // SAFETY: as for `bitxor`.
                    $t(unsafe { $or(self.0, o.0) })
                }
            }
            impl Not for $t {
                type Output = $t;
                #[inline(always)]
                fn not(self) -> $t {
                    self ^ self.splat(u32::MAX)
                }
            }
            impl Lane for $t {
                const N: usize = $n;
                type Cpu = $cpu;
                #[inline(always)]
                fn splat(self, v: u32) -> Self {
                    // SAFETY: as for `bitxor`.
                    $t(unsafe { $set1(v as i32) })
                }
                #[inline(always)]
                fn rotl(self, n: u32) -> Self {
                    // SAFETY: as for `bitxor`; the shift counts are constants after inlining.
                    unsafe {
                        let l = $sll(self.0, _mm_cvtsi32_si128(n as i32));
                        let r = $srl(self.0, _mm_cvtsi32_si128(32 - n as i32));
                        $t($or(l, r))
                    }
                }
                #[inline(always)]
                fn shl(self, n: u32) -> Self {
                    // SAFETY: as for `rotl`.
                    $t(unsafe { $sll(self.0, _mm_cvtsi32_si128(n as i32)) })
                }
                #[inline(always)]
                fn load(_cpu: $cpu, w: &[u32; 8]) -> Self {
                    // SAFETY: `_cpu` is the evidence that the CPU runs the instruction; an
                    // unaligned load of at most 32 bytes from an array of 32 bytes.
                    $t(unsafe { $loadu(w.as_ptr().cast()) })
                }
                #[inline(always)]
                fn store(self, w: &mut [u32; 8]) {
                    // SAFETY: as for `load`.
                    unsafe { $storeu(w.as_mut_ptr().cast(), self.0) }
                }
            }
        };
    }

    simd_lane!(
        Sse2,
        (),
        __m128i,
        4,
        _mm_xor_si128,
        _mm_and_si128,
        _mm_or_si128,
        _mm_set1_epi32,
        _mm_sll_epi32,
        _mm_srl_epi32,
        _mm_loadu_si128,
        _mm_storeu_si128
    );
    simd_lane!(
        Avx2,
        Avx2Cpu,
        __m256i,
        8,
        _mm256_xor_si256,
        _mm256_and_si256,
        _mm256_or_si256,
        _mm256_set1_epi32,
        _mm256_sll_epi32,
        _mm256_srl_epi32,
        _mm256_loadu_si256,
        _mm256_storeu_si256
    );
}

/// One output bit of an S-box: the XOR of the monomials selected by `m` (bit 0 = the constant
/// 1, i.e. a final NOT). `m` is always a compile-time constant (an inline `const` block at the
/// call site), so after inlining every `if` disappears.
#[inline(always)]
fn anf_bit<L: Lane>(m: u16, mono: &[L; 16]) -> L {
    let mut acc = mono[1].splat(0);
    macro_rules! term {
        ($($i:literal)*) => { $( if m & (1 << $i) != 0 { acc = acc ^ mono[$i]; } )* };
    }
    term!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    if m & 1 != 0 {
        !acc
    } else {
        acc
    }
}

/// Apply S-box `S` (its inverse if `INV`) to 32 (× lanes) nibbles: bit `i` of `x[j]` is bit
/// `j` of nibble `i`.
#[inline(always)]
fn sbox<L: Lane, const S: usize, const INV: bool>(x: [L; 4]) -> [L; 4] {
    let [a, b, c, d] = x;
    let ab = a & b;
    let ac = a & c;
    let bc = b & c;
    let abc = ab & c;
    // Monomial i = product of the inputs whose bit is set in i (the deg-4 one never occurs:
    // the S-boxes are permutations, so their degree is at most 3).
    let mono = [
        a.splat(0),
        a,
        b,
        ab,
        c,
        ac,
        bc,
        abc,
        d,
        a & d,
        b & d,
        ab & d,
        c & d,
        ac & d,
        bc & d,
        a.splat(0),
    ];
    macro_rules! out {
        ($o:literal) => {
            anf_bit(
                const {
                    if INV {
                        DEC_ANF[S][$o]
                    } else {
                        ENC_ANF[S][$o]
                    }
                },
                &mono,
            )
        };
    }
    [out!(0), out!(1), out!(2), out!(3)]
}

/// S-box `s` chosen at run time (key schedule only).
fn sbox_dyn(s: usize, x: [u32; 4]) -> [u32; 4] {
    match s {
        0 => sbox::<u32, 0, false>(x),
        1 => sbox::<u32, 1, false>(x),
        2 => sbox::<u32, 2, false>(x),
        3 => sbox::<u32, 3, false>(x),
        4 => sbox::<u32, 4, false>(x),
        5 => sbox::<u32, 5, false>(x),
        6 => sbox::<u32, 6, false>(x),
        _ => sbox::<u32, 7, false>(x),
    }
}

#[inline(always)]
fn lt<L: Lane>(x: [L; 4]) -> [L; 4] {
    let [mut x0, mut x1, mut x2, mut x3] = x;
    x0 = x0.rotl(13);
    x2 = x2.rotl(3);
    x1 = x1 ^ x0 ^ x2;
    x3 = x3 ^ x2 ^ x0.shl(3);
    x1 = x1.rotl(1);
    x3 = x3.rotl(7);
    x0 = x0 ^ x1 ^ x3;
    x2 = x2 ^ x3 ^ x1.shl(7);
    x0 = x0.rotl(5);
    x2 = x2.rotl(22);
    [x0, x1, x2, x3]
}

#[inline(always)]
fn lt_inv<L: Lane>(x: [L; 4]) -> [L; 4] {
    let [mut x0, mut x1, mut x2, mut x3] = x;
    x2 = x2.rotl(32 - 22);
    x0 = x0.rotl(32 - 5);
    x2 = x2 ^ x3 ^ x1.shl(7);
    x0 = x0 ^ x1 ^ x3;
    x3 = x3.rotl(32 - 7);
    x1 = x1.rotl(32 - 1);
    x3 = x3 ^ x2 ^ x0.shl(3);
    x1 = x1 ^ x0 ^ x2;
    x2 = x2.rotl(32 - 3);
    x0 = x0.rotl(32 - 13);
    [x0, x1, x2, x3]
}

#[inline(always)]
fn add_key<L: Lane>(x: [L; 4], k: &[u32; 4]) -> [L; 4] {
    [
        x[0] ^ x[0].splat(k[0]),
        x[1] ^ x[1].splat(k[1]),
        x[2] ^ x[2].splat(k[2]),
        x[3] ^ x[3].splat(k[3]),
    ]
}

type RoundKeys = [[u32; 4]; 33];

#[inline(always)]
fn encrypt<L: Lane>(rk: &RoundKeys, mut x: [L; 4]) -> [L; 4] {
    macro_rules! round {
        ($r:ident, $s:literal) => {
            x = sbox::<L, $s, false>(add_key(x, &rk[8 * $r + $s]));
            if 8 * $r + $s < 31 {
                x = lt(x);
            }
        };
    }
    for r in 0..4 {
        round!(r, 0);
        round!(r, 1);
        round!(r, 2);
        round!(r, 3);
        round!(r, 4);
        round!(r, 5);
        round!(r, 6);
        round!(r, 7);
    }
    add_key(x, &rk[32])
}

#[inline(always)]
fn decrypt<L: Lane>(rk: &RoundKeys, mut x: [L; 4]) -> [L; 4] {
    macro_rules! round {
        ($r:ident, $s:literal) => {
            if 8 * $r + $s < 31 {
                x = lt_inv(x);
            }
            x = add_key(sbox::<L, $s, true>(x), &rk[8 * $r + $s]);
        };
    }
    x = add_key(x, &rk[32]);
    for r in (0..4).rev() {
        round!(r, 7);
        round!(r, 6);
        round!(r, 5);
        round!(r, 4);
        round!(r, 3);
        round!(r, 2);
        round!(r, 1);
        round!(r, 0);
    }
    x
}

/// `L::N` blocks (`16 * L::N` bytes) in place.
#[inline(always)]
fn crypt_group<L: Lane>(cpu: L::Cpu, rk: &RoundKeys, b: &mut [u8], encrypt_: bool) {
    debug_assert_eq!(b.len(), 16 * L::N);
    let mut w = [[0u32; 8]; 4];
    for (j, blk) in b.chunks_exact(16).enumerate() {
        for (k, wk) in w.iter_mut().enumerate() {
            wk[j] = u32::from_le_bytes(blk[4 * k..4 * k + 4].try_into().expect("4 bytes"));
        }
    }
    let x = [
        L::load(cpu, &w[0]),
        L::load(cpu, &w[1]),
        L::load(cpu, &w[2]),
        L::load(cpu, &w[3]),
    ];
    let y = if encrypt_ {
        encrypt(rk, x)
    } else {
        decrypt(rk, x)
    };
    for (k, wk) in w.iter_mut().enumerate() {
        y[k].store(wk);
    }
    for (j, blk) in b.chunks_exact_mut(16).enumerate() {
        for (k, wk) in w.iter().enumerate() {
            blk[4 * k..4 * k + 4].copy_from_slice(&wk[j].to_le_bytes());
        }
    }
    for wk in w.iter_mut() {
        wk.zeroize();
    }
}

/// ECB over whole groups of `L::N` blocks, then the tail (padded to a group when it is long
/// enough for that to be faster than block-by-block scalar code).
#[inline(always)]
fn ecb_body<L: Lane>(cpu: L::Cpu, rk: &RoundKeys, data: &mut [u8], encrypt_: bool) {
    let g = 16 * L::N;
    let mut groups = data.chunks_exact_mut(g);
    for grp in &mut groups {
        crypt_group::<L>(cpu, rk, grp, encrypt_);
    }
    let tail = groups.into_remainder();
    if L::N > 1 && tail.len() > 32 {
        let mut tmp = [0u8; 128];
        tmp[..tail.len()].copy_from_slice(tail);
        crypt_group::<L>(cpu, rk, &mut tmp[..g], encrypt_);
        tail.copy_from_slice(&tmp[..tail.len()]);
        tmp.zeroize();
    } else {
        for b in tail.chunks_exact_mut(16) {
            crypt_group::<u32>((), rk, b, encrypt_);
        }
    }
}

/// ECB on AVX2 lanes, compiled for AVX2 so that the lane operations inline.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn ecb_avx2(cpu: simd::Avx2Cpu, rk: &RoundKeys, data: &mut [u8], encrypt_: bool) {
    ecb_body::<simd::Avx2>(cpu, rk, data, encrypt_)
}

#[cfg(target_arch = "x86_64")]
fn ecb_sse2(rk: &RoundKeys, data: &mut [u8], encrypt_: bool) {
    ecb_body::<simd::Sse2>((), rk, data, encrypt_)
}

fn ecb_portable(rk: &RoundKeys, data: &mut [u8], encrypt_: bool) {
    ecb_body::<X8>((), rk, data, encrypt_)
}

/// A keyed Serpent (round keys wiped on drop).
pub(crate) struct Serpent {
    rk: RoundKeys,
    backend: Backend,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    /// Plain Rust lanes (any CPU).
    Portable,
    /// 4 lanes of SSE2 (every x86-64 CPU).
    #[cfg(target_arch = "x86_64")]
    Sse2,
    /// 8 lanes of AVX2, with the evidence of the CPU check.
    #[cfg(target_arch = "x86_64")]
    Avx2(simd::Avx2Cpu),
}

impl Serpent {
    /// Key schedule for a key of 16..=32 bytes (shorter keys are padded with a single 1 bit,
    /// as the specification says). `simd` allows run-time selected AVX2 code.
    pub(crate) fn new(key: &[u8], simd: bool) -> Self {
        debug_assert!((16..=32).contains(&key.len()));
        let mut k = [0u8; 32];
        k[..key.len()].copy_from_slice(key);
        if key.len() < 32 {
            k[key.len()] = 1;
        }
        let mut w = [0u32; 140];
        for (i, c) in k.chunks_exact(4).enumerate() {
            w[i] = u32::from_le_bytes(c.try_into().expect("4 bytes"));
        }
        for i in 0..132 {
            w[i + 8] = (w[i] ^ w[i + 3] ^ w[i + 5] ^ w[i + 7] ^ PHI ^ i as u32).rotate_left(11);
        }
        let mut rk = [[0u32; 4]; 33];
        for (i, r) in rk.iter_mut().enumerate() {
            let x = [w[8 + 4 * i], w[9 + 4 * i], w[10 + 4 * i], w[11 + 4 * i]];
            *r = sbox_dyn((35 - i) % 8, x);
        }
        k.zeroize();
        w.zeroize();
        Serpent {
            rk,
            backend: Backend::select(simd),
        }
    }

    /// ECB over `data` (a multiple of 16 bytes) in place.
    pub(crate) fn ecb(&self, data: &mut [u8], encrypt: bool) {
        match self.backend {
            Backend::Portable => ecb_portable(&self.rk, data, encrypt),
            #[cfg(target_arch = "x86_64")]
            Backend::Sse2 => ecb_sse2(&self.rk, data, encrypt),
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2(cpu) => {
                // SAFETY: `cpu` is the evidence (made only by the run-time check) that this
                // CPU runs AVX2, the target feature `ecb_avx2` is compiled with.
                unsafe { ecb_avx2(cpu, &self.rk, data, encrypt) }
            }
        }
    }

    /// Blocks worth processing together (lockstep CBC lanes).
    pub(crate) fn lanes(&self) -> usize {
        match self.backend {
            Backend::Portable => 8,
            #[cfg(target_arch = "x86_64")]
            Backend::Sse2 => 4,
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2(_) => 8,
        }
    }
}

impl Backend {
    /// The fastest backend of this CPU, or the portable one if `simd` is false.
    fn select(simd: bool) -> Self {
        #[cfg(target_arch = "x86_64")]
        if simd {
            return simd::Avx2Cpu::detect().map_or(Backend::Sse2, Backend::Avx2);
        }
        let _ = simd;
        Backend::Portable
    }
}

impl Drop for Serpent {
    fn drop(&mut self) {
        for r in self.rk.iter_mut() {
            r.zeroize();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::cipher::{BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};

    fn rng_bytes(seed: &mut u64, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                *seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (*seed >> 33) as u8
            })
            .collect()
    }

    fn sbox_dyn_inv(s: usize, x: [u32; 4]) -> [u32; 4] {
        match s {
            0 => sbox::<u32, 0, true>(x),
            1 => sbox::<u32, 1, true>(x),
            2 => sbox::<u32, 2, true>(x),
            3 => sbox::<u32, 3, true>(x),
            4 => sbox::<u32, 4, true>(x),
            5 => sbox::<u32, 5, true>(x),
            6 => sbox::<u32, 6, true>(x),
            _ => sbox::<u32, 7, true>(x),
        }
    }

    /// Every backend this CPU can run.
    pub(super) fn backends() -> Vec<Backend> {
        // Only x86_64 adds SIMD backends.
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut v = vec![Backend::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            v.push(Backend::Sse2);
            if let Some(cpu) = simd::Avx2Cpu::detect() {
                v.push(Backend::Avx2(cpu));
            }
        }
        v
    }

    #[test]
    fn sbox_circuits_match_tables() {
        for (i, s) in SBOX.iter().enumerate() {
            let inv = invert(*s);
            for v in 0..16u32 {
                let x = [v & 1, (v >> 1) & 1, (v >> 2) & 1, (v >> 3) & 1];
                let y = sbox_dyn(i, x);
                let got = (y[0] & 1) | (y[1] & 1) << 1 | (y[2] & 1) << 2 | (y[3] & 1) << 3;
                assert_eq!(got, u32::from(s[v as usize]), "S{i}({v})");
                let y = sbox_dyn_inv(i, x);
                let got = (y[0] & 1) | (y[1] & 1) << 1 | (y[2] & 1) << 2 | (y[3] & 1) << 3;
                assert_eq!(got, u32::from(inv[v as usize]), "S{i}^-1({v})");
            }
        }
    }

    /// Random keys of every accepted length, every block count 0..=20 (8-block groups, padded
    /// and scalar tails), both code paths, against the RustCrypto `serpent` crate.
    #[test]
    fn matches_serpent_crate() {
        let mut seed = 3;
        for klen in [16, 20, 24, 31, 32] {
            for nblocks in 0..=20 {
                let key = rng_bytes(&mut seed, klen);
                let pt = rng_bytes(&mut seed, nblocks * 16);
                let reference = serpent::Serpent::new_from_slice(&key).unwrap();
                let mut expect = pt.clone();
                for b in expect.chunks_exact_mut(16) {
                    reference.encrypt_block(b.try_into().unwrap());
                }
                for backend in backends() {
                    let mut s = Serpent::new(&key, false);
                    s.backend = backend;
                    let simd = format!("{backend:?}");
                    let mut a = pt.clone();
                    s.ecb(&mut a, true);
                    assert_eq!(a, expect, "key {klen} blocks {nblocks} simd {simd}");
                    s.ecb(&mut a, false);
                    assert_eq!(a, pt, "decrypt key {klen} blocks {nblocks} simd {simd}");
                }
                let mut back = expect.clone();
                for b in back.chunks_exact_mut(16) {
                    reference.decrypt_block(b.try_into().unwrap());
                }
                assert_eq!(back, pt);
            }
        }
    }
}
