//! Argon2's block compression G (RFC 9106 §3.5): the BLAKE2b round with multiplications
//! ("BlaMka") over the rows, then the columns, of a 1 KiB block. A portable version and, on
//! x86_64, AVX2 and AVX-512 versions chosen at run time.

use zeroize::Zeroize;

/// Words in a block.
const WORDS: usize = 128;

/// One Argon2 block: 128 little-endian 64-bit words.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Block(pub [u64; WORDS]);

impl Block {
    pub(crate) const fn zero() -> Self {
        Block([0; WORDS])
    }

    /// Load from 1024 little-endian bytes.
    pub(crate) fn load(&mut self, bytes: &[u8; 1024]) {
        for (w, c) in self.0.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            *w = u64::from_le_bytes(b);
        }
    }

    /// Store as 1024 little-endian bytes.
    pub(crate) fn store(&self, bytes: &mut [u8; 1024]) {
        for (w, c) in self.0.iter().zip(bytes.chunks_exact_mut(8)) {
            c.copy_from_slice(&w.to_le_bytes());
        }
    }

    pub(crate) fn xor_with(&mut self, other: &Block) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a ^= *b;
        }
    }
}

impl Zeroize for Block {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

/// The compression implementation for this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Plain 64-bit arithmetic (every CPU; the reference for the others).
    Portable,
    /// x86_64 AVX2: one row or column (4 × 64-bit lanes) per instruction.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// x86_64 AVX-512F: two rows or columns per instruction, native rotates.
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub(crate) fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx2")
            {
                return Kernel::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }

    /// Every kernel this CPU runs (for tests comparing them).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Kernel> {
        #[allow(unused_mut)]
        let mut v = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                v.push(Kernel::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx2")
            {
                v.push(Kernel::Avx512);
            }
        }
        v
    }
}

/// `out = G(x, y)`, or `out ^= G(x, y)` when `xor` (passes after the first, version 0x13).
pub(crate) fn compress(k: Kernel, x: &Block, y: &Block, out: &mut Block, xor: bool) {
    match k {
        Kernel::Portable => portable::compress(x, y, out, xor),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Kernel::Avx2` is only produced where AVX2 was detected.
        Kernel::Avx2 => unsafe { avx2::compress(x, y, out, xor) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Kernel::Avx512` is only produced where AVX-512F and AVX2 were detected.
        Kernel::Avx512 => unsafe { avx512::compress(x, y, out, xor) },
    }
}

mod portable {
    use super::{Block, WORDS};

    #[inline(always)]
    fn fblamka(a: u64, b: u64) -> u64 {
        let m = (a & 0xFFFF_FFFF).wrapping_mul(b & 0xFFFF_FFFF);
        a.wrapping_add(b).wrapping_add(m.wrapping_mul(2))
    }

    #[inline(always)]
    fn gb(v: &mut [u64; WORDS], a: usize, b: usize, c: usize, d: usize) {
        v[a] = fblamka(v[a], v[b]);
        v[d] = (v[d] ^ v[a]).rotate_right(32);
        v[c] = fblamka(v[c], v[d]);
        v[b] = (v[b] ^ v[c]).rotate_right(24);
        v[a] = fblamka(v[a], v[b]);
        v[d] = (v[d] ^ v[a]).rotate_right(16);
        v[c] = fblamka(v[c], v[d]);
        v[b] = (v[b] ^ v[c]).rotate_right(63);
    }

    /// P on the 16 words at indices `i[0..16]` of `v`.
    #[inline(always)]
    fn p(v: &mut [u64; WORDS], i: [usize; 16]) {
        gb(v, i[0], i[4], i[8], i[12]);
        gb(v, i[1], i[5], i[9], i[13]);
        gb(v, i[2], i[6], i[10], i[14]);
        gb(v, i[3], i[7], i[11], i[15]);
        gb(v, i[0], i[5], i[10], i[15]);
        gb(v, i[1], i[6], i[11], i[12]);
        gb(v, i[2], i[7], i[8], i[13]);
        gb(v, i[3], i[4], i[9], i[14]);
    }

    pub(super) fn compress(x: &Block, y: &Block, out: &mut Block, xor: bool) {
        let mut r = [0u64; WORDS];
        for ((r, a), b) in r.iter_mut().zip(x.0.iter()).zip(y.0.iter()) {
            *r = a ^ b;
        }
        let mut q = r;
        for row in 0..8 {
            let b = 16 * row;
            p(&mut q, std::array::from_fn(|k| b + k));
        }
        for col in 0..8 {
            let b = 2 * col;
            p(&mut q, std::array::from_fn(|k| b + 16 * (k / 2) + k % 2));
        }
        for ((o, q), r) in out.0.iter_mut().zip(q.iter()).zip(r.iter()) {
            *o = if xor { *o ^ q ^ r } else { q ^ r };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::Block;
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "avx2")]
    fn fblamka(a: __m256i, b: __m256i) -> __m256i {
        let m = _mm256_mul_epu32(a, b);
        _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(m, m))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn rotr32(x: __m256i) -> __m256i {
        _mm256_shuffle_epi32::<0b10_11_00_01>(x)
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn rotr24(x: __m256i) -> __m256i {
        let m = _mm256_setr_epi8(
            3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10, 3, 4, 5, 6, 7, 0, 1, 2, 11, 12,
            13, 14, 15, 8, 9, 10,
        );
        _mm256_shuffle_epi8(x, m)
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn rotr16(x: __m256i) -> __m256i {
        let m = _mm256_setr_epi8(
            2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9, 2, 3, 4, 5, 6, 7, 0, 1, 10, 11,
            12, 13, 14, 15, 8, 9,
        );
        _mm256_shuffle_epi8(x, m)
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn rotr63(x: __m256i) -> __m256i {
        _mm256_xor_si256(_mm256_srli_epi64::<63>(x), _mm256_add_epi64(x, x))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn g(a: &mut __m256i, b: &mut __m256i, c: &mut __m256i, d: &mut __m256i) {
        *a = fblamka(*a, *b);
        *d = rotr32(_mm256_xor_si256(*d, *a));
        *c = fblamka(*c, *d);
        *b = rotr24(_mm256_xor_si256(*b, *c));
        *a = fblamka(*a, *b);
        *d = rotr16(_mm256_xor_si256(*d, *a));
        *c = fblamka(*c, *d);
        *b = rotr63(_mm256_xor_si256(*b, *c));
    }

    /// P on a 4×4 matrix of words held as rows a, b, c, d.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn p(a: &mut __m256i, b: &mut __m256i, c: &mut __m256i, d: &mut __m256i) {
        g(a, b, c, d);
        *b = _mm256_permute4x64_epi64::<0b00_11_10_01>(*b);
        *c = _mm256_permute4x64_epi64::<0b01_00_11_10>(*c);
        *d = _mm256_permute4x64_epi64::<0b10_01_00_11>(*d);
        g(a, b, c, d);
        *b = _mm256_permute4x64_epi64::<0b10_01_00_11>(*b);
        *c = _mm256_permute4x64_epi64::<0b01_00_11_10>(*c);
        *d = _mm256_permute4x64_epi64::<0b00_11_10_01>(*d);
    }

    /// Words [lo, lo+1] and [hi, hi+1] of `q` as one vector.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn load2(q: &[u64; 128], lo: usize, hi: usize) -> __m256i {
        let (a, b) = (&q[lo..lo + 2], &q[hi..hi + 2]);
        // SAFETY: a and b are 16 readable bytes each (bounds checked by the slicing).
        unsafe { _mm256_loadu2_m128i(b.as_ptr().cast(), a.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn store2(q: &mut [u64; 128], lo: usize, hi: usize, v: __m256i) {
        let b = q[hi..hi + 2].as_mut_ptr();
        let a = q[lo..lo + 2].as_mut_ptr();
        // SAFETY: a and b point to 16 writable bytes each of q (bounds checked above).
        unsafe { _mm256_storeu2_m128i(b.cast(), a.cast(), v) }
    }

    /// Words [o..o+4] of `q`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn load4(q: &[u64; 128], o: usize) -> __m256i {
        let a = &q[o..o + 4];
        // SAFETY: 32 readable bytes (bounds checked by the slicing).
        unsafe { _mm256_loadu_si256(a.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn store4(q: &mut [u64; 128], o: usize, v: __m256i) {
        let a = q[o..o + 4].as_mut_ptr();
        // SAFETY: 32 writable bytes of q (bounds checked by the slicing).
        unsafe { _mm256_storeu_si256(a.cast(), v) }
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn compress(x: &Block, y: &Block, out: &mut Block, xor: bool) {
        let mut r = Block::zero();
        for o in (0..128).step_by(4) {
            store4(
                &mut r.0,
                o,
                _mm256_xor_si256(load4(&x.0, o), load4(&y.0, o)),
            );
        }
        let mut q = r;
        let w = &mut q.0;
        // Rows: row i is words 16i..16i+16, four vectors.
        for row in 0..8 {
            let o = 16 * row;
            let (mut a, mut b) = (load4(w, o), load4(w, o + 4));
            let (mut c, mut d) = (load4(w, o + 8), load4(w, o + 12));
            p(&mut a, &mut b, &mut c, &mut d);
            store4(w, o, a);
            store4(w, o + 4, b);
            store4(w, o + 8, c);
            store4(w, o + 12, d);
        }
        // Columns: column j is words 2j, 2j+1 of each row.
        for col in 0..8 {
            let o = 2 * col;
            let (mut a, mut b) = (load2(w, o, o + 16), load2(w, o + 32, o + 48));
            let (mut c, mut d) = (load2(w, o + 64, o + 80), load2(w, o + 96, o + 112));
            p(&mut a, &mut b, &mut c, &mut d);
            store2(w, o, o + 16, a);
            store2(w, o + 32, o + 48, b);
            store2(w, o + 64, o + 80, c);
            store2(w, o + 96, o + 112, d);
        }
        for o in (0..128).step_by(4) {
            let mut v = _mm256_xor_si256(load4(&q.0, o), load4(&r.0, o));
            if xor {
                v = _mm256_xor_si256(v, load4(&out.0, o));
            }
            store4(&mut out.0, o, v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::Block;
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn fblamka(a: __m512i, b: __m512i) -> __m512i {
        let m = _mm512_mul_epu32(a, b);
        _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(m, m))
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn g(a: &mut __m512i, b: &mut __m512i, c: &mut __m512i, d: &mut __m512i) {
        *a = fblamka(*a, *b);
        *d = _mm512_ror_epi64::<32>(_mm512_xor_si512(*d, *a));
        *c = fblamka(*c, *d);
        *b = _mm512_ror_epi64::<24>(_mm512_xor_si512(*b, *c));
        *a = fblamka(*a, *b);
        *d = _mm512_ror_epi64::<16>(_mm512_xor_si512(*d, *a));
        *c = fblamka(*c, *d);
        *b = _mm512_ror_epi64::<63>(_mm512_xor_si512(*b, *c));
    }

    /// P on two 4×4 word matrices at once, one in each 256-bit half.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn p(a: &mut __m512i, b: &mut __m512i, c: &mut __m512i, d: &mut __m512i) {
        g(a, b, c, d);
        *b = _mm512_permutex_epi64::<0b00_11_10_01>(*b);
        *c = _mm512_permutex_epi64::<0b01_00_11_10>(*c);
        *d = _mm512_permutex_epi64::<0b10_01_00_11>(*d);
        g(a, b, c, d);
        *b = _mm512_permutex_epi64::<0b10_01_00_11>(*b);
        *c = _mm512_permutex_epi64::<0b01_00_11_10>(*c);
        *d = _mm512_permutex_epi64::<0b00_11_10_01>(*d);
    }

    /// Words [o..o+2] of `q`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load2(q: &[u64; 128], o: usize) -> __m128i {
        let a = &q[o..o + 2];
        // SAFETY: 16 readable bytes (bounds checked by the slicing).
        unsafe { _mm_loadu_si128(a.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store2(q: &mut [u64; 128], o: usize, v: __m128i) {
        let a = q[o..o + 2].as_mut_ptr();
        // SAFETY: 16 writable bytes of q (bounds checked by the slicing).
        unsafe { _mm_storeu_si128(a.cast(), v) }
    }

    /// Words [o..o+4] of `q`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load4(q: &[u64; 128], o: usize) -> __m256i {
        let a = &q[o..o + 4];
        // SAFETY: 32 readable bytes (bounds checked by the slicing).
        unsafe { _mm256_loadu_si256(a.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store4(q: &mut [u64; 128], o: usize, v: __m256i) {
        let a = q[o..o + 4].as_mut_ptr();
        // SAFETY: 32 writable bytes of q (bounds checked by the slicing).
        unsafe { _mm256_storeu_si256(a.cast(), v) }
    }

    /// Words [o..o+8] of `q`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load8(q: &[u64; 128], o: usize) -> __m512i {
        let a = &q[o..o + 8];
        // SAFETY: 64 readable bytes (bounds checked by the slicing).
        unsafe { _mm512_loadu_si512(a.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store8(q: &mut [u64; 128], o: usize, v: __m512i) {
        let a = q[o..o + 8].as_mut_ptr();
        // SAFETY: 64 writable bytes of q (bounds checked by the slicing).
        unsafe { _mm512_storeu_si512(a.cast(), v) }
    }

    /// Words [r0..r0+4] in the low half, [r1..r1+4] in the high half.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load_rows(q: &[u64; 128], r0: usize, r1: usize) -> __m512i {
        _mm512_inserti64x4::<1>(_mm512_castsi256_si512(load4(q, r0)), load4(q, r1))
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store_rows(q: &mut [u64; 128], r0: usize, r1: usize, v: __m512i) {
        store4(q, r0, _mm512_castsi512_si256(v));
        store4(q, r1, _mm512_extracti64x4_epi64::<1>(v));
    }

    /// Words [o, o+1, o+16, o+17] (column o/2) in the low half, [o+2, o+3, o+18, o+19]
    /// (column o/2 + 1) in the high half.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load_cols(q: &[u64; 128], o: usize) -> __m512i {
        let v = _mm512_castsi128_si512(load2(q, o));
        let v = _mm512_inserti32x4::<1>(v, load2(q, o + 16));
        let v = _mm512_inserti32x4::<2>(v, load2(q, o + 2));
        _mm512_inserti32x4::<3>(v, load2(q, o + 18))
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store_cols(q: &mut [u64; 128], o: usize, v: __m512i) {
        store2(q, o, _mm512_castsi512_si128(v));
        store2(q, o + 16, _mm512_extracti32x4_epi32::<1>(v));
        store2(q, o + 2, _mm512_extracti32x4_epi32::<2>(v));
        store2(q, o + 18, _mm512_extracti32x4_epi32::<3>(v));
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn compress(x: &Block, y: &Block, out: &mut Block, xor: bool) {
        let mut r = Block::zero();
        for o in (0..128).step_by(8) {
            store8(
                &mut r.0,
                o,
                _mm512_xor_si512(load8(&x.0, o), load8(&y.0, o)),
            );
        }
        let mut q = r;
        let w = &mut q.0;
        // Rows 2k and 2k+1 together.
        for k in 0..4 {
            let (r0, r1) = (32 * k, 32 * k + 16);
            let mut a = load_rows(w, r0, r1);
            let mut b = load_rows(w, r0 + 4, r1 + 4);
            let mut c = load_rows(w, r0 + 8, r1 + 8);
            let mut d = load_rows(w, r0 + 12, r1 + 12);
            p(&mut a, &mut b, &mut c, &mut d);
            store_rows(w, r0, r1, a);
            store_rows(w, r0 + 4, r1 + 4, b);
            store_rows(w, r0 + 8, r1 + 8, c);
            store_rows(w, r0 + 12, r1 + 12, d);
        }
        // Columns 2k and 2k+1 together.
        for k in 0..4 {
            let o = 4 * k;
            let mut a = load_cols(w, o);
            let mut b = load_cols(w, o + 32);
            let mut c = load_cols(w, o + 64);
            let mut d = load_cols(w, o + 96);
            p(&mut a, &mut b, &mut c, &mut d);
            store_cols(w, o, a);
            store_cols(w, o + 32, b);
            store_cols(w, o + 64, c);
            store_cols(w, o + 96, d);
        }
        for o in (0..128).step_by(8) {
            let mut v = _mm512_xor_si512(load8(&q.0, o), load8(&r.0, o));
            if xor {
                v = _mm512_xor_si512(v, load8(&out.0, o));
            }
            store8(&mut out.0, o, v);
        }
    }
}
