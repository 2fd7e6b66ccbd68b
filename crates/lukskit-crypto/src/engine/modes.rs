//! Chaining modes with the kernel's exact semantics: `ecb`, `cbc`, `ctr` (crypto/ctr.c: the
//! whole IV block is one big-endian counter), `xts` (crypto/xts.c: key = Key1 ‖ Key2, tweak
//! `T = E_Key2(IV)`, multiplied by α per block in the "ble" convention) and `lrw`
//! (crypto/lrw.c: key = cipher key ‖ 16-byte tweak key, IV = 128-bit big-endian block index,
//! tweak `T = Key2 ⊗ index` in GF(2¹²⁸) in the "bbe" convention).
//!
//! Every function works in place on a buffer that is a multiple of the cipher block size and
//! uses a caller-provided scratch area, so nothing is allocated per sector. The bulk work goes
//! through [`BlockCipher::ecb`], which lets each cipher process many blocks at once.
//!
//! Runs of sectors are processed together ([`Mode::encrypt_sectors`]): the XTS tweaks of all
//! sectors are encrypted in one batch, and CBC encryption — serial inside a sector — runs one
//! chain per sector, up to [`MAX_LANES`] sectors in lockstep, so that the block cipher always
//! has independent blocks to work on.

use super::adiantum::{self, Adiantum, StreamKind};
use super::cipher::{BlockCipher, CipherAlg};
use crate::{CryptoError, Result};
use zeroize::Zeroize;

/// Size of the per-call scratch area (the largest dm-crypt sector).
pub(crate) const SCRATCH: usize = 4096;

/// Scratch memory for one thread of work (tweaks, key stream, shifted ciphertext), wiped on
/// drop.
#[repr(C, align(64))]
pub(crate) struct Scratch([u8; SCRATCH]);

impl Scratch {
    pub(crate) fn new() -> Self {
        Scratch([0; SCRATCH])
    }
}

impl std::ops::Deref for Scratch {
    type Target = [u8; SCRATCH];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Wipe 16 bytes per volatile store (the byte-wise `Zeroize` of `[u8; N]` costs a
        // store per byte, noticeable when a scratch area is set up per 64 KiB of work).
        // SAFETY: the buffer is 64-byte aligned and SCRATCH is a multiple of 16, so it is
        // exactly SCRATCH / 16 properly aligned `u128`s; every bit pattern is a valid `u128`;
        // the slice borrows `self` mutably for its whole (local) lifetime.
        let words = unsafe {
            std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast::<u128>(), SCRATCH / 16)
        };
        words.zeroize();
    }
}

/// A chaining mode by its kernel name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModeKind {
    Ecb,
    Cbc,
    Ctr,
    Xts,
    Lrw,
    /// `adiantum(<stream>,<block cipher>)` (crypto/adiantum.c); the block cipher is the
    /// spec's `CipherAlg`.
    Adiantum(StreamKind),
}

impl ModeKind {
    pub(crate) fn from_name(name: &str) -> Result<Self> {
        Ok(match name {
            "ecb" => ModeKind::Ecb,
            "cbc" => ModeKind::Cbc,
            "ctr" => ModeKind::Ctr,
            "xts" => ModeKind::Xts,
            "lrw" => ModeKind::Lrw,
            _ => return Err(CryptoError::Unsupported(format!("chain mode '{name}'"))),
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            ModeKind::Ecb => "ecb",
            ModeKind::Cbc => "cbc",
            ModeKind::Ctr => "ctr",
            ModeKind::Xts => "xts",
            ModeKind::Lrw => "lrw",
            ModeKind::Adiantum(_) => "adiantum",
        }
    }

    /// Check that `alg` can be used in this mode and that `key_len` is a valid (sub)key
    /// length for `mode(alg)`.
    pub(crate) fn validate(self, alg: CipherAlg, key_len: usize) -> Result<()> {
        if let ModeKind::Adiantum(_) = self {
            return Adiantum::validate(alg, key_len);
        }
        if alg == CipherAlg::Null {
            return if self == ModeKind::Ecb {
                Ok(())
            } else {
                Err(CryptoError::Unsupported(format!(
                    "cipher_null in {} mode (only cipher_null-ecb)",
                    self.name()
                )))
            };
        }
        let bad = |what: String| {
            Err(CryptoError::InvalidKey(format!(
                "{}({}) {what}, got {key_len} bytes",
                self.name(),
                alg.name()
            )))
        };
        match self {
            ModeKind::Ecb | ModeKind::Cbc | ModeKind::Ctr => {
                if !alg.key_len_ok(key_len) {
                    return bad(format!("needs a key of {}", alg.key_lens_text()));
                }
            }
            ModeKind::Xts | ModeKind::Lrw if alg.block_size() != 16 => {
                return Err(CryptoError::Unsupported(format!(
                    "{} needs a 128-bit block cipher, {} has {}-bit blocks",
                    self.name(),
                    alg.name(),
                    alg.block_size() * 8
                )));
            }
            ModeKind::Xts => {
                if !key_len.is_multiple_of(2) || !alg.key_len_ok(key_len / 2) {
                    return bad(format!(
                        "needs two keys of {} (Key1 ‖ Key2)",
                        alg.key_lens_text()
                    ));
                }
            }
            ModeKind::Adiantum(_) => {}
            ModeKind::Lrw => {
                if key_len <= 16 || !alg.key_len_ok(key_len - 16) {
                    return bad(format!(
                        "needs a key of {} followed by a 16-byte tweak key",
                        alg.key_lens_text()
                    ));
                }
            }
        }
        Ok(())
    }

    /// The kernel's `crypto_skcipher_blocksize()` of `mode(alg)`.
    pub(crate) fn block_size(self, alg: CipherAlg) -> usize {
        match self {
            ModeKind::Ctr => 1,
            _ => alg.block_size(),
        }
    }

    /// The kernel's `crypto_skcipher_ivsize()` of `mode(alg)` (0 = no IV).
    pub(crate) fn iv_size(self, alg: CipherAlg) -> usize {
        match self {
            ModeKind::Ecb => 0,
            ModeKind::Adiantum(_) => adiantum::TWEAK_LEN,
            _ if alg == CipherAlg::Null => 0,
            _ => alg.block_size(),
        }
    }
}

/// Most sectors whose CBC chains are encrypted in lockstep.
pub(crate) const MAX_LANES: usize = 16;

/// A keyed chaining mode.
// Built once per key and stored in a boxed slice; the size difference between variants is
// irrelevant and boxing would add an indirection to the hot path.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Mode {
    /// `cipher_null-ecb`: the identity.
    Null,
    Ecb(BlockCipher),
    Cbc(BlockCipher),
    Ctr(BlockCipher),
    Xts {
        data: BlockCipher,
        tweak: BlockCipher,
    },
    Lrw {
        data: BlockCipher,
        tweak: LrwKey,
    },
    Adiantum(Box<Adiantum>),
}

impl Mode {
    /// Key `kind(alg)` with `key` (the whole per-tfm subkey, as the kernel's setkey gets it).
    /// `fast` allows the assembly / SIMD backends (see [`BlockCipher::new`]).
    pub(crate) fn new(kind: ModeKind, alg: CipherAlg, key: &[u8], fast: bool) -> Result<Self> {
        kind.validate(alg, key.len())?;
        if let ModeKind::Adiantum(stream) = kind {
            return Ok(Mode::Adiantum(Box::new(Adiantum::new(
                stream, alg, key, fast,
            )?)));
        }
        if alg == CipherAlg::Null {
            return Ok(Mode::Null);
        }
        Ok(match kind {
            ModeKind::Ecb => Mode::Ecb(BlockCipher::new(alg, key, fast)?),
            ModeKind::Cbc => Mode::Cbc(BlockCipher::new(alg, key, fast)?),
            ModeKind::Ctr => Mode::Ctr(BlockCipher::new(alg, key, fast)?),
            ModeKind::Xts => {
                // crypto/xts.c: first half is the data key, second half the tweak key.
                let (k1, k2) = key.split_at(key.len() / 2);
                Mode::Xts {
                    data: BlockCipher::new(alg, k1, fast)?,
                    tweak: BlockCipher::new(alg, k2, fast)?,
                }
            }
            ModeKind::Adiantum(_) => unreachable!("handled above"),
            ModeKind::Lrw => {
                // crypto/lrw.c: the tweak key is the last 16 bytes.
                let (k1, k2) = key.split_at(key.len() - 16);
                let k2: &[u8; 16] = k2.try_into().expect("16 bytes");
                Mode::Lrw {
                    data: BlockCipher::new(alg, k1, fast)?,
                    tweak: LrwKey::new(k2),
                }
            }
        })
    }

    /// Encrypt `data` in place with `iv` (ignored by ecb).
    pub(crate) fn encrypt(&self, iv: &[u8], data: &mut [u8], scratch: &mut Scratch) {
        self.crypt(iv, data, scratch, true)
    }

    /// Decrypt `data` in place with `iv` (ignored by ecb).
    pub(crate) fn decrypt(&self, iv: &[u8], data: &mut [u8], scratch: &mut Scratch) {
        self.crypt(iv, data, scratch, false)
    }

    fn crypt(&self, iv: &[u8], data: &mut [u8], scratch: &mut Scratch, encrypt: bool) {
        match self {
            Mode::Null => {}
            Mode::Ecb(c) => c.ecb(data, encrypt),
            Mode::Cbc(c) if encrypt => cbc_encrypt_lanes(c, iv, data, data.len()),
            Mode::Cbc(c) => cbc_decrypt_units(c, iv, data, data.len(), scratch),
            Mode::Ctr(c) => ctr_crypt(c, iv, data, scratch),
            Mode::Xts { data: c, tweak } => {
                let mut t = [0u8; 16];
                t.copy_from_slice(iv);
                tweak.encrypt_block(&mut t);
                xts_crypt(c, u128::from_le_bytes(t), data, scratch, encrypt);
                t.zeroize();
            }
            Mode::Lrw { data: c, tweak } => lrw_crypt(c, tweak, iv, data, scratch, encrypt),
            Mode::Adiantum(a) => a.crypt(iv, data, encrypt),
        }
    }

    /// Encrypt (or decrypt) consecutive sectors of `sector_size` bytes in place; `ivs` holds
    /// their IVs back to back (`iv_size` bytes each, so `ivs.len() / iv_size` sectors) and
    /// may be overwritten. Same result as [`Mode::encrypt`]/[`Mode::decrypt`] per sector.
    pub(crate) fn crypt_sectors(
        &self,
        ivs: &mut [u8],
        data: &mut [u8],
        sector_size: usize,
        scratch: &mut Scratch,
        encrypt: bool,
    ) {
        debug_assert!(data.len().is_multiple_of(sector_size));
        let n = data.len() / sector_size;
        match self {
            Mode::Null => {}
            Mode::Ecb(c) => c.ecb(data, encrypt),
            Mode::Xts { data: c, tweak } => {
                // All first tweaks T = E_K2(IV) in one batch.
                debug_assert_eq!(ivs.len(), 16 * n);
                tweak.ecb(ivs, true);
                #[cfg(target_arch = "x86_64")]
                if let BlockCipher::AesVaes(k) = c {
                    let mut first = [0u128; MAX_LANES];
                    for (chunk, ts) in data
                        .chunks_mut(MAX_LANES * sector_size)
                        .zip(ivs.chunks(16 * MAX_LANES))
                    {
                        let m = ts.len() / 16;
                        for (f, t) in first.iter_mut().zip(ts.chunks_exact(16)) {
                            *f = u128::from_le_bytes(t.try_into().expect("16 bytes"));
                        }
                        k.xts_units(&first[..m], chunk, sector_size, encrypt);
                    }
                    first.zeroize();
                    return;
                }
                for (unit, t) in data.chunks_exact_mut(sector_size).zip(ivs.chunks_exact(16)) {
                    let t = u128::from_le_bytes(t.try_into().expect("16 bytes"));
                    xts_crypt(c, t, unit, scratch, encrypt);
                }
            }
            Mode::Cbc(c) if encrypt => cbc_encrypt_lanes(c, ivs, data, sector_size),
            Mode::Cbc(c) => cbc_decrypt_units(c, ivs, data, sector_size, scratch),
            _ => {
                let iv_size = ivs.len() / n.max(1);
                for (k, unit) in data.chunks_exact_mut(sector_size).enumerate() {
                    self.crypt(&ivs[k * iv_size..(k + 1) * iv_size], unit, scratch, encrypt);
                }
            }
        }
    }
}

#[inline]
fn xor_in_place(dst: &mut [u8], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= *s;
    }
}

/// CBC encryption of consecutive units of `unit` bytes, the IV of unit `i` being
/// `ivs[i * bs..(i + 1) * bs]`. A CBC chain is serial, so up to `c.lanes()` units are
/// processed in lockstep: block `j` of each of them is encrypted in one multi-block call.
fn cbc_encrypt_lanes(c: &BlockCipher, ivs: &[u8], data: &mut [u8], unit: usize) {
    if data.is_empty() {
        return;
    }
    let bs = c.block_size();
    let units = data.len() / unit;
    debug_assert_eq!(ivs.len(), units * bs);
    let lanes = c.lanes().clamp(1, MAX_LANES);
    let mut state = [[0u8; 16]; MAX_LANES];
    let mut first = 0;
    while first < units {
        let m = lanes.min(units - first);
        let base = first * unit;
        let group = &mut data[base..base + m * unit];
        #[cfg(target_arch = "x86_64")]
        if let (BlockCipher::AesVaes(k), 16) = (c, m) {
            for (s, iv) in state.iter_mut().zip(ivs[first * 16..].chunks_exact(16)) {
                s.copy_from_slice(iv);
            }
            k.cbc_encrypt_16(&mut state, group, unit);
            first += m;
            continue;
        }
        if bs == 16 {
            for (s, iv) in state
                .iter_mut()
                .zip(ivs[first * 16..(first + m) * 16].chunks_exact(16))
            {
                s.copy_from_slice(iv);
            }
            for off in (0..unit).step_by(16) {
                for (i, s) in state[..m].iter_mut().enumerate() {
                    let d: &[u8; 16] = group[i * unit + off..][..16].try_into().expect("16");
                    *s = (u128::from_ne_bytes(*s) ^ u128::from_ne_bytes(*d)).to_ne_bytes();
                }
                c.ecb(state[..m].as_flattened_mut(), true);
                for (i, s) in state[..m].iter().enumerate() {
                    group[i * unit + off..][..16].copy_from_slice(s);
                }
            }
        } else {
            let st = &mut state.as_flattened_mut()[..m * bs];
            st.copy_from_slice(&ivs[first * bs..(first + m) * bs]);
            for off in (0..unit).step_by(bs) {
                for (i, s) in st.chunks_exact_mut(bs).enumerate() {
                    xor_in_place(s, &group[i * unit + off..][..bs]);
                }
                c.ecb(st, true);
                for (i, s) in st.chunks_exact(bs).enumerate() {
                    group[i * unit + off..][..bs].copy_from_slice(s);
                }
            }
        }
        first += m;
    }
    for s in state.iter_mut() {
        s.zeroize();
    }
}

/// CBC decryption of consecutive units of `unit` bytes, the IV of unit `i` being
/// `ivs[i * bs..(i + 1) * bs]`. Decryption is parallel: the chunk is decrypted as ECB in one
/// call and XORed with the ciphertext shifted by one block (or the unit's IV).
fn cbc_decrypt_units(
    c: &BlockCipher,
    ivs: &[u8],
    data: &mut [u8],
    unit: usize,
    scratch: &mut Scratch,
) {
    if data.is_empty() {
        return;
    }
    let bs = c.block_size();
    debug_assert_eq!(ivs.len(), data.len() / unit * bs);
    let mut prev = [0u8; 16];
    let mut pos = 0usize;
    for chunk in data.chunks_mut(SCRATCH) {
        let n = chunk.len();
        // scratch[j] = the block the decryption of chunk block j is XORed with: the previous
        // ciphertext block, or the unit's IV at a unit start.
        let shifted = &mut scratch[..n];
        shifted[..bs].copy_from_slice(&prev[..bs]);
        shifted[bs..].copy_from_slice(&chunk[..n - bs]);
        prev[..bs].copy_from_slice(&chunk[n - bs..]);
        let first_unit = pos.div_ceil(unit);
        let mut u = first_unit * unit;
        while u < pos + n {
            let i = u / unit;
            shifted[u - pos..u - pos + bs].copy_from_slice(&ivs[i * bs..(i + 1) * bs]);
            u += unit;
        }
        c.ecb(chunk, false);
        xor_in_place(chunk, shifted);
        pos += n;
    }
}

/// kernel ctr(): the IV block is a big-endian counter over the whole block
/// (`crypto_inc(ctrblk, bsize)`), same as OpenSSL's 128-bit CTR for AES.
fn ctr_crypt(c: &BlockCipher, iv: &[u8], data: &mut [u8], scratch: &mut Scratch) {
    let bs = c.block_size();
    let mut ctr: u128 = iv.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b));
    let mask: u128 = if bs == 16 {
        u128::MAX
    } else {
        (1u128 << (bs * 8)) - 1
    };
    for chunk in data.chunks_mut(SCRATCH) {
        let ks = &mut scratch[..chunk.len()];
        for blk in ks.chunks_exact_mut(bs) {
            blk.copy_from_slice(&ctr.to_be_bytes()[16 - bs..]);
            ctr = ctr.wrapping_add(1) & mask;
        }
        c.ecb(ks, true);
        xor_in_place(chunk, ks);
    }
    ctr.zeroize();
}

/// Multiply by α in GF(2¹²⁸), "ble" convention (`gf128mul_x_ble`): the block is a
/// little-endian 128-bit integer.
#[inline(always)]
fn mul_x_ble(t: u128) -> u128 {
    (t << 1) ^ ((t >> 127) * 0x87)
}

/// Multiply by α⁸ in GF(2¹²⁸), "ble" convention, without branches: the top byte `h` that
/// leaves is folded back as the carry-less product h·(x⁷ + x² + x + 1), at most 15 bits.
#[inline(always)]
fn mul_x8_ble(t: u128) -> u128 {
    let h = t >> 120;
    (t << 8) ^ h ^ (h << 1) ^ (h << 2) ^ (h << 7)
}

/// Multiply by x in GF(2¹²⁸), "bbe" convention (`gf128mul_x_bbe`): the block is a
/// big-endian 128-bit integer whose bit i is the coefficient of xⁱ.
#[inline(always)]
fn mul_x_bbe(t: u128) -> u128 {
    (t << 1) ^ ((t >> 127) * 0x87)
}

/// XTS over whole blocks, `t` being the (already encrypted) tweak of the first block.
fn xts_crypt(c: &BlockCipher, t: u128, data: &mut [u8], scratch: &mut Scratch, encrypt: bool) {
    #[cfg(target_arch = "x86_64")]
    if let BlockCipher::AesVaes(k) = c {
        return k.xts(t, data, encrypt);
    }
    // Tweaks eight at a time: T_{j+8} = T_j · α⁸.
    let mut tw = [0u128; 8];
    let mut x = t;
    for v in tw.iter_mut() {
        *v = x;
        x = mul_x_ble(x);
    }
    for chunk in data.chunks_mut(SCRATCH) {
        let buf = &mut scratch[..chunk.len()];
        for group in buf.chunks_mut(128) {
            for (blk, v) in group.chunks_exact_mut(16).zip(tw.iter_mut()) {
                blk.copy_from_slice(&v.to_le_bytes());
                *v = mul_x8_ble(*v);
            }
        }
        xor_in_place(chunk, buf);
        c.ecb(chunk, encrypt);
        xor_in_place(chunk, buf);
    }
    tw.zeroize();
    x.zeroize();
}

/// Precomputed multiples of the LRW tweak key (wiped on drop).
pub(crate) struct LrwKey {
    /// `table[16 * p + v] = Key2 ⊗ (v · x^(4p))`: a 4-bit window table, so `Key2 ⊗ I` costs
    /// 32 lookups indexed by the (public) block index.
    table: Box<[u128]>,
    /// `mulinc[i] = Key2 ⊗ (2^(i+1) − 1)`, the kernel's increment table: going from index I to
    /// I+1 flips the trailing ones of I and the following zero bit.
    mulinc: Box<[u128]>,
}

impl LrwKey {
    fn new(key2: &[u8; 16]) -> Self {
        let k = u128::from_be_bytes(*key2);
        let mut table = vec![0u128; 32 * 16].into_boxed_slice();
        let mut base = k;
        for p in 0..32 {
            let b = [base, mul_x_bbe(base), mul_x_bbe(mul_x_bbe(base))];
            let b3 = mul_x_bbe(b[2]);
            for v in 0..16usize {
                let mut acc = 0u128;
                for (bit, bv) in [b[0], b[1], b[2], b3].iter().enumerate() {
                    // Secret-independent selection (v is public, the key multiples are not).
                    let m = 0u128.wrapping_sub(((v >> bit) & 1) as u128);
                    acc ^= bv & m;
                }
                table[16 * p + v] = acc;
            }
            base = mul_x_bbe(b3);
        }
        let mut mulinc = vec![0u128; 128].into_boxed_slice();
        let mut acc = 0u128;
        let mut xp = k;
        for m in mulinc.iter_mut() {
            acc ^= xp;
            *m = acc;
            xp = mul_x_bbe(xp);
        }
        LrwKey { table, mulinc }
    }

    /// `Key2 ⊗ i`.
    fn mul(&self, i: u128) -> u128 {
        let mut acc = 0u128;
        for p in 0..32 {
            acc ^= self.table[16 * p + ((i >> (4 * p)) & 15) as usize];
        }
        acc
    }
}

impl Drop for LrwKey {
    fn drop(&mut self) {
        self.table.zeroize();
        self.mulinc.zeroize();
    }
}

fn lrw_crypt(
    c: &BlockCipher,
    key: &LrwKey,
    iv: &[u8],
    data: &mut [u8],
    scratch: &mut Scratch,
    encrypt: bool,
) {
    let iv: [u8; 16] = iv.try_into().expect("16-byte LRW IV");
    let mut index = u128::from_be_bytes(iv);
    let mut t = key.mul(index);
    for chunk in data.chunks_mut(SCRATCH) {
        let tw = &mut scratch[..chunk.len()];
        for blk in tw.chunks_exact_mut(16) {
            blk.copy_from_slice(&t.to_be_bytes());
            // lrw_next_index(): the all-ones index wraps to zero using entry 127.
            let ones = (index.trailing_ones() as usize).min(127);
            t ^= key.mulinc[ones];
            index = index.wrapping_add(1);
        }
        xor_in_place(chunk, tw);
        c.ecb(chunk, encrypt);
        xor_in_place(chunk, tw);
    }
    t.zeroize();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    /// Known-answer check with both the fast and the portable backends.
    fn run(kind: ModeKind, alg: CipherAlg, key: &[u8], iv: &[u8], pt: &[u8], ct: &[u8]) {
        for fast in [true, false] {
            let m = Mode::new(kind, alg, key, fast).unwrap();
            let mut scratch = Scratch::new();
            let mut buf = pt.to_vec();
            m.encrypt(iv, &mut buf, &mut scratch);
            assert_eq!(
                hex::encode(&buf),
                hex::encode(ct),
                "{kind:?} {alg:?} encrypt fast={fast}"
            );
            m.decrypt(iv, &mut buf, &mut scratch);
            assert_eq!(
                hex::encode(&buf),
                hex::encode(pt),
                "{kind:?} {alg:?} decrypt fast={fast}"
            );
        }
    }

    /// IEEE P1619/D16 Annex B vectors 1–3 (golang.org/x/crypto xts_test.go; the data-unit
    /// number is the little-endian tweak input). Vector 1 has identical key halves, which the
    /// kernel accepts outside FIPS mode.
    #[test]
    fn ieee1619_short_vectors() {
        let cases = [
            (
                "0000000000000000000000000000000000000000000000000000000000000000",
                0u64,
                "0000000000000000000000000000000000000000000000000000000000000000",
                "917cf69ebd68b2ec9b9fe9a3eadda692cd43d2f59598ed858c02c2652fbf922e",
            ),
            (
                "1111111111111111111111111111111122222222222222222222222222222222",
                0x3333333333,
                "4444444444444444444444444444444444444444444444444444444444444444",
                "c454185e6a16936e39334038acef838bfb186fff7480adc4289382ecd6d394f0",
            ),
            (
                "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f022222222222222222222222222222222",
                0x3333333333,
                "4444444444444444444444444444444444444444444444444444444444444444",
                "af85336b597afc1a900b2eb21ec949d292df4c047e0b21532186a5971a227a89",
            ),
        ];
        for (key, sector, pt, ct) in cases {
            let mut iv = [0u8; 16];
            iv[..8].copy_from_slice(&sector.to_le_bytes());
            run(ModeKind::Xts, CipherAlg::Aes, &h(key), &iv, &h(pt), &h(ct));
        }
    }

    /// cryptsetup tests/crypto-vectors.c, CAVS XTSGenAES128/256 #101 (raw 16-byte tweak),
    /// for AES and Serpent.
    #[test]
    fn cavs_xts_vectors_aes_serpent() {
        let key128 = h("b7b93f516aef295eff3a29d837cf1f135347e8a21dae616ff5062b2e8d78ce5e");
        let iv128 = h("873edea653b643bd8bcf51403197ed14");
        let pt128 = h("236f8a5b58dd55f6194ed70c4ac1a17f1fe60ec9a6c454d087ccb77d6b638c47");
        run(
            ModeKind::Xts,
            CipherAlg::Aes,
            &key128,
            &iv128,
            &pt128,
            &h("22e6a3c6379dcf7599b052b5a749c7f78ad8a11b9f1aa9430cf3aef445682e19"),
        );
        run(
            ModeKind::Xts,
            CipherAlg::Serpent,
            &key128,
            &iv128,
            &pt128,
            &h("6da2a42b187157dc03af8b8228663df1708b7598d2ddbf729eb3b4c23f18dfa1"),
        );
        let key256 = h(concat!(
            "266c336b3b01489f3267f52835fd92f674374b88b4e1ebd2d36a5f457581d9d0",
            "42c3eef7b0b7e5137b086496b4d9e6ac658d7196a23f23f036172fdb8faee527"
        ));
        let iv256 = h("06b209a7a22f486ecbfadb0f3137ba42");
        let pt256 = h(concat!(
            "ca7d65ef8d3dfad345b61ccddca1ad81de830b9e86c7b426d76cb7db766852d9",
            "81c6b21409399d78f42cc0b33a7bbb06"
        ));
        run(
            ModeKind::Xts,
            CipherAlg::Aes,
            &key256,
            &iv256,
            &pt256,
            &h(concat!(
                "c73256870cc2f4dd57acc74b5456dbd776912a128bc1f77d72cdebbf270044b7",
                "a43ceed29025e1e8be211fa3c3ed002d"
            )),
        );
        run(
            ModeKind::Xts,
            CipherAlg::Serpent,
            &key256,
            &iv256,
            &pt256,
            &h(concat!(
                "37e4c0a9f149e53e73b91fecdce0bdc531d7ef086520e3add98460dc616f2686",
                "b8d5294b044152590500b0c29b30da48"
            )),
        );
    }

    /// cryptsetup tests/crypto-vectors.c: NIST SP 800-38A ECB/CBC for AES and Serpent.
    #[test]
    fn sp800_38a_aes_serpent() {
        let pt = h(concat!(
            "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51",
            "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710"
        ));
        let iv = h("000102030405060708090a0b0c0d0e0f");
        let k128 = h("2b7e151628aed2a6abf7158809cf4f3c");
        let k256 = h("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
        let cases: [(&[u8], ModeKind, CipherAlg, &str); 8] = [
            (&k128, ModeKind::Ecb, CipherAlg::Aes, "3ad77bb40d7a3660a89ecaf32466ef97f5d3d58503b9699de785895a96fdbaaf43b1cd7f598ece23881b00e3ed0306887b0c785e27e8ad3f8223207104725dd4"),
            (&k128, ModeKind::Ecb, CipherAlg::Serpent, "f7a721e6c756b655cbdf533fc3b31ac44bc604293a81a6a6e4cba78d1a32a29ecfc28e5097dd6b49a938b1515ebc5aacfed2c49592f91c0c9f17cd86386529eb"),
            (&k128, ModeKind::Cbc, CipherAlg::Aes, "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b273bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7"),
            (&k128, ModeKind::Cbc, CipherAlg::Serpent, "dd73691ab566b638e3b96236c8c8a1dda9b5d9db20fb8b825140bfe64df21ca85f48bc29ff6227da097caa22756f43ff31d83e834d9248eb491cf826804eb902"),
            (&k256, ModeKind::Ecb, CipherAlg::Aes, "f3eed1bdb5d2a03c064b5a7e3db181f8591ccb10d410ed26dc5ba74a31362870b6ed21b99ca6f4f9f153e7b1beafed1d23304b7a39f9f3ff067d8d8f9e24ecc7"),
            (&k256, ModeKind::Ecb, CipherAlg::Serpent, "78e5848ed9d5de2d4db02f53616afdf2505df16892408ef69c3b9ea667d9ddb8b95fc82076521dce60e4fcace3d39151092262de626dc57b4c870c65e71fc713"),
            (&k256, ModeKind::Cbc, CipherAlg::Aes, "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b"),
            (&k256, ModeKind::Cbc, CipherAlg::Serpent, "b893c8dec5c85f0301ac3274dfc6719d3761c5f8344de91091d3878042cc70954095a32cdb38e26f0391f5d3517e52b08a1c2d7f0459139331a982c94ed9110c"),
        ];
        for (key, kind, alg, ct) in cases {
            run(kind, alg, key, &iv, &pt, &h(ct));
        }
    }

    /// IEEE P1619 LRW-32-AES vectors 1–7 as carried by the kernel's crypto/testmgr.h
    /// (`aes_lrw_tv_template`): key = AES key ‖ tweak key, IV = 128-bit big-endian index.
    #[test]
    fn lrw_aes_vectors() {
        let pt = h("30313233343536373839414243444546");
        let cases = [
            (
                "4562ac25f828176d4c268414b5680185",
                "258e2a05e73e9d03ee5a830ccc094c87",
                "00000000000000000000000000000001",
                "f1b273cd65a3df5fe95d489254634eb8",
            ),
            (
                "59704714f557478cd779e80f54887944",
                "0d48f0b7b15a53ea1caa6b29c2cafbaf",
                "00000000000000000000000000000002",
                "00c82bae95bbcde5274f0769b260e136",
            ),
            (
                "d82a9134b26a565030fe69e2377f9847",
                "cdf90b160c648fb6b00d0d1bae85871f",
                "00000000000000000000000200000000",
                "76322183ed8ff182f9596203690e5e01",
            ),
            (
                "0f6aeff8d3d2bb152583f73c1f012874cac6bc354d4a6554",
                "90ae61cf7baebdccade494c54a29ae70",
                "00000000000000000000000000000001",
                "9c0f152f55a2d8f0d67b8f9e2822bc41",
            ),
            (
                "8ad4ee102fbd81fff886ceac93c5adc6a01907c09df7bbdd",
                "5213b2b7f0ff11d8d608d0cd2eb1176f",
                "00000000000000000000000200000000",
                "d4276a7f14913d65c860480287e33406",
            ),
            (
                "f8d476ffd646ee6c2384cb1c77d6195dfef1a9f37bbc8d21a79c21f8cb900289",
                "a845348ec8c5b5f126f50e76fefd1b1e",
                "00000000000000000000000000000001",
                "bd06b8e1db98899ec498e491cf1c702b",
            ),
            (
                "fb7615b23d80891dd470980bc79584c8b2fb64ce6097878d17fce45a49e830b7",
                "6e7817e72d5e12d46064047af12f9e0c",
                "00000000000000000000000200000000",
                "5b908ec1abdd675f3d698a9553c89ce5",
            ),
        ];
        for (k1, k2, iv, ct) in cases {
            let key = [h(k1), h(k2)].concat();
            run(ModeKind::Lrw, CipherAlg::Aes, &key, &h(iv), &pt, &h(ct));
        }
    }

    /// Slow bit-by-bit bbe multiplication (the definition in include/crypto/gf128mul.h).
    fn slow_mul_bbe(a: u128, b: u128) -> u128 {
        let mut r = 0u128;
        for i in (0..128).rev() {
            r = mul_x_bbe(r);
            if (b >> i) & 1 == 1 {
                r ^= a;
            }
        }
        r
    }

    /// The LRW tweak of block j must be Key2 ⊗ (I + j) however the incremental update walks
    /// the counter (carries across 32-bit words, wrap-around of the all-ones index).
    #[test]
    fn lrw_incremental_tweaks_match_definition() {
        let key = [7u8; 32];
        let k2 = u128::from_be_bytes([7u8; 16]);
        let m = Mode::new(ModeKind::Lrw, CipherAlg::Aes, &key, true).unwrap();
        let Mode::Lrw { data, .. } = &m else {
            unreachable!()
        };
        for start in [
            0u128,
            0xffff_fffd,
            (1u128 << 64) - 3,
            u128::MAX - 2,
            0x1234_5678_9abc_def0_0fed_cba9_8765_4321,
        ] {
            let mut buf = [0u8; 96];
            let mut scratch = Scratch::new();
            m.encrypt(&start.to_be_bytes(), &mut buf, &mut scratch);
            for (j, blk) in buf.chunks_exact_mut(16).enumerate() {
                let t = slow_mul_bbe(k2, start.wrapping_add(j as u128)).to_be_bytes();
                xor_in_place(blk, &t);
                data.decrypt_block(blk);
                xor_in_place(blk, &t);
                assert_eq!(blk, &[0u8; 16], "start {start:#x} block {j}");
            }
        }
    }

    #[test]
    fn mode_key_validation() {
        use CipherAlg::*;
        use ModeKind::*;
        assert!(Xts.validate(Aes, 32).is_ok());
        assert!(Xts.validate(Aes, 48).is_ok());
        assert!(Xts.validate(Aes, 64).is_ok());
        assert!(Xts.validate(Aes, 16).is_err());
        assert!(Xts.validate(Aes, 40).is_err());
        assert!(Xts.validate(Cast5, 32).is_err());
        assert!(Lrw.validate(Aes, 32).is_ok());
        assert!(Lrw.validate(Aes, 40).is_ok());
        assert!(Lrw.validate(Aes, 48).is_ok());
        assert!(Lrw.validate(Aes, 16).is_err());
        assert!(Cbc.validate(Cast5, 10).is_ok());
        assert!(Cbc.validate(Null, 0).is_err());
        assert!(Ecb.validate(Null, 0).is_ok());
        assert_eq!(Ctr.block_size(Aes), 1);
        assert_eq!(Cbc.iv_size(Cast5), 8);
        assert_eq!(Ecb.iv_size(Aes), 0);
    }
}
