//! dm-crypt's `elephant` IV generator (`crypt_iv_elephant*` in drivers/md/dm-crypt.c):
//! BitLocker's AES-CBC with the Elephant diffuser (Windows Vista/7).
//!
//! The dm-crypt key is `bulk key ‖ elephant key` (two equal halves, `key_extra_size`); the
//! bulk half keys the CBC cipher, whose IV is EBOIV's (the encryption of the sector's byte
//! offset). Around it, each sector gets:
//!
//! * the sector key: `AES-ECB(elephant key, LE64(offset) ‖ 0⁸) ‖ AES-ECB(elephant key,
//!   LE64(offset) ‖ 0⁷ ‖ 0x80)` (32 bytes), XORed over the sector;
//! * diffusers A (5 rounds) and B (3 rounds) over the sector as little-endian 32-bit words.
//!
//! Reading: CBC decryption, then diffuser B and A "decrypt", then the sector key.
//! Writing: the sector key, diffuser A and B "encrypt", then CBC encryption.

use super::cipher::{BlockCipher, CipherAlg};
use crate::Result;
use zeroize::Zeroize;

/// The largest elephant key (`ELEPHANT_MAX_KEY_SIZE`).
pub(crate) const MAX_KEY: usize = 32;

/// The ECB AES instance keyed with the elephant half of the key.
pub(crate) struct Elephant {
    ecb: BlockCipher,
}

impl Elephant {
    /// Key the ECB cipher with the elephant half of the dm-crypt key (16, 24 or 32 bytes).
    pub(crate) fn new(key: &[u8], fast: bool) -> Result<Self> {
        Ok(Elephant {
            ecb: BlockCipher::new(CipherAlg::Aes, key, fast)?,
        })
    }

    /// The 32-byte sector key of the sector at byte offset `offset` (IV sector × sector
    /// size).
    fn sector_key(&self, offset: u64) -> [u8; 32] {
        let mut ks = [0u8; 32];
        ks[..8].copy_from_slice(&offset.to_le_bytes());
        ks[16..24].copy_from_slice(&offset.to_le_bytes());
        ks[31] = 0x80;
        self.ecb.ecb(&mut ks, true);
        ks
    }

    /// Undo the diffuser of a sector just CBC-decrypted in place (`post` of a read).
    pub(crate) fn after_decrypt(&self, unit: &mut [u8], offset: u64) {
        let mut words = load(unit);
        diffuser_b(&mut words, false);
        diffuser_a(&mut words, false);
        store(&words, unit);
        words.zeroize();
        self.xor_sector_key(unit, offset);
    }

    /// Apply the diffuser to a sector about to be CBC-encrypted in place (the generator of
    /// a write).
    pub(crate) fn before_encrypt(&self, unit: &mut [u8], offset: u64) {
        self.xor_sector_key(unit, offset);
        let mut words = load(unit);
        diffuser_a(&mut words, true);
        diffuser_b(&mut words, true);
        store(&words, unit);
        words.zeroize();
    }

    fn xor_sector_key(&self, unit: &mut [u8], offset: u64) {
        let mut ks = self.sector_key(offset);
        for chunk in unit.chunks_exact_mut(32) {
            for (b, k) in chunk.iter_mut().zip(ks.iter()) {
                *b ^= k;
            }
        }
        ks.zeroize();
    }
}

fn load(unit: &[u8]) -> Vec<u32> {
    unit.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn store(words: &[u32], unit: &mut [u8]) {
    for (c, w) in unit.chunks_exact_mut(4).zip(words) {
        c.copy_from_slice(&w.to_le_bytes());
    }
}

/// Diffuser A: 5 rounds of `d[i] ±= d[i−2] ^ f_i(d[i−5])` (indices modulo n), f rotating
/// left by 9 for i ≡ 0, by 13 for i ≡ 2 (mod 4), nothing else. "Decrypt" (`encrypt` false)
/// runs i upwards and adds; "encrypt" runs downwards and subtracts, its exact inverse.
fn diffuser_a(d: &mut [u32], encrypt: bool) {
    let n = d.len();
    let f = |i: usize, v: u32| match i % 4 {
        0 => v.rotate_left(9),
        2 => v.rotate_left(13),
        _ => v,
    };
    for _ in 0..5 {
        if encrypt {
            for i in (0..n).rev() {
                let t = d[(i + n - 2) % n] ^ f(i, d[(i + n - 5) % n]);
                d[i] = d[i].wrapping_sub(t);
            }
        } else {
            for i in 0..n {
                let t = d[(i + n - 2) % n] ^ f(i, d[(i + n - 5) % n]);
                d[i] = d[i].wrapping_add(t);
            }
        }
    }
}

/// Diffuser B: 3 rounds of `d[i] ±= d[i+2] ^ g_i(d[i+5])` (indices modulo n), g rotating
/// left by 10 for i ≡ 1, by 25 for i ≡ 3 (mod 4), nothing else.
fn diffuser_b(d: &mut [u32], encrypt: bool) {
    let n = d.len();
    let g = |i: usize, v: u32| match i % 4 {
        1 => v.rotate_left(10),
        3 => v.rotate_left(25),
        _ => v,
    };
    for _ in 0..3 {
        if encrypt {
            for i in (0..n).rev() {
                let t = d[(i + 2) % n] ^ g(i, d[(i + 5) % n]);
                d[i] = d[i].wrapping_sub(t);
            }
        } else {
            for i in 0..n {
                let t = d[(i + 2) % n] ^ g(i, d[(i + 5) % n]);
                d[i] = d[i].wrapping_add(t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's loops, transcribed index for index (with its wrap checks where it has
    /// them), to pin the modular form above to them.
    fn kernel_a_decrypt(d: &mut [u32]) {
        let n = d.len() as isize;
        for _ in 0..5 {
            let (mut i1, mut i2, mut i3) = (0isize, n - 2, n - 5);
            while i1 < n - 1 {
                let g = |d: &[u32], i: isize| d[i as usize];
                let v = g(d, i2) ^ g(d, i3).rotate_left(9);
                d[i1 as usize] = d[i1 as usize].wrapping_add(v);
                i1 += 1;
                i2 += 1;
                i3 += 1;
                if i3 >= n {
                    i3 -= n;
                }
                let v = g(d, i2) ^ g(d, i3);
                d[i1 as usize] = d[i1 as usize].wrapping_add(v);
                i1 += 1;
                i2 += 1;
                i3 += 1;
                if i2 >= n {
                    i2 -= n;
                }
                let v = g(d, i2) ^ g(d, i3).rotate_left(13);
                d[i1 as usize] = d[i1 as usize].wrapping_add(v);
                i1 += 1;
                i2 += 1;
                i3 += 1;
                let v = g(d, i2) ^ g(d, i3);
                d[i1 as usize] = d[i1 as usize].wrapping_add(v);
                i1 += 1;
                i2 += 1;
                i3 += 1;
            }
        }
    }

    fn kernel_b_decrypt(d: &mut [u32]) {
        let n = d.len() as isize;
        for _ in 0..3 {
            let (mut i1, mut i2, mut i3) = (0isize, 2isize, 5isize);
            while i1 < n - 1 {
                let g = |d: &[u32], i: isize| d[i as usize];
                let v = g(d, i2) ^ g(d, i3);
                d[i1 as usize] = d[i1 as usize].wrapping_add(v);
                i1 += 1;
                i2 += 1;
                i3 += 1;
                let v = g(d, i2) ^ g(d, i3).rotate_left(10);
                d[i1 as usize] = d[i1 as usize].wrapping_add(v);
                i1 += 1;
                i2 += 1;
                i3 += 1;
                if i2 >= n {
                    i2 -= n;
                }
                let v = g(d, i2) ^ g(d, i3);
                d[i1 as usize] = d[i1 as usize].wrapping_add(v);
                i1 += 1;
                i2 += 1;
                i3 += 1;
                if i3 >= n {
                    i3 -= n;
                }
                let v = g(d, i2) ^ g(d, i3).rotate_left(25);
                d[i1 as usize] = d[i1 as usize].wrapping_add(v);
                i1 += 1;
                i2 += 1;
                i3 += 1;
            }
        }
    }

    fn sample(n: usize) -> Vec<u32> {
        (0..n as u32)
            .map(|i| i.wrapping_mul(0x9e37_79b9) ^ 0x5a5a_1234)
            .collect()
    }

    #[test]
    fn diffusers_match_the_kernel_loops_and_invert() {
        for n in [128usize, 1024] {
            let orig = sample(n);
            let mut a = orig.clone();
            let mut k = orig.clone();
            diffuser_a(&mut a, false);
            kernel_a_decrypt(&mut k);
            assert_eq!(a, k, "A, {n} words");
            diffuser_a(&mut a, true);
            assert_eq!(a, orig);
            let mut b = orig.clone();
            let mut k = orig.clone();
            diffuser_b(&mut b, false);
            kernel_b_decrypt(&mut k);
            assert_eq!(b, k, "B, {n} words");
            diffuser_b(&mut b, true);
            assert_eq!(b, orig);
        }
    }

    #[test]
    fn sector_key_and_round_trip() {
        let e = Elephant::new(&[3u8; 16], false).unwrap();
        let ks = e.sector_key(0x1234);
        let mut want = [0u8; 32];
        want[..2].copy_from_slice(&[0x34, 0x12]);
        want[16..18].copy_from_slice(&[0x34, 0x12]);
        want[31] = 0x80;
        let aes = BlockCipher::new(CipherAlg::Aes, &[3u8; 16], false).unwrap();
        aes.ecb(&mut want, true);
        assert_eq!(ks, want);
        let plain: Vec<u8> = (0..512u32).map(|i| (i * 31) as u8).collect();
        let mut unit = plain.clone();
        e.before_encrypt(&mut unit, 4096);
        assert_ne!(unit, plain);
        e.after_decrypt(&mut unit, 4096);
        assert_eq!(unit, plain);
    }
}
