//! dm-crypt's `tcw` IV generator (TrueCrypt ≤ 4.0's CBC with whitening, `crypt_iv_tcw_*` of
//! drivers/md/dm-crypt.c), for 512-byte sectors only.
//!
//! The key given to dm-crypt is the cipher key ‖ an IV seed of the IV size ‖ 16 whitening
//! bytes (`key_extra_size` = IV size + 16). For a sector with IV sector number `s`:
//!
//! * IV: the seed with each of its 8-byte halves XORed with LE64(s) (an 8-byte IV: one half).
//! * Whitening: the 16 whitening bytes, each half XORed with LE64(s); the CRC-32 of each of
//!   its four 4-byte words (the kernel's `crc32` shash: reflected polynomial 0xEDB88320,
//!   initial value 0, no final inversion, stored little-endian) replaces that word; words 0
//!   and 3, and 1 and 2, are XORed into an 8-byte value, and that value is XORed into every
//!   8 bytes of the sector.
//! * Writing: CBC-encrypt with the IV, then whiten the ciphertext. Reading: remove the
//!   whitening from the ciphertext, then CBC-decrypt.

use zeroize::Zeroize;

/// `TCW_WHITENING_SIZE`.
pub(crate) const WHITENING_SIZE: usize = 16;

/// The kernel's `crc32` (crc32_le) lookup table.
const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// `crc32_le(0, word, 4)`, as the kernel's `crc32` shash computes it (no inversions).
fn crc32_le0(word: &[u8]) -> u32 {
    word.iter().fold(0u32, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

/// The IV seed and whitening of one key (`iv_tcw_private`), wiped on drop.
pub(crate) struct Tcw {
    /// The IV seed (first `iv_size` bytes used).
    seed: [u8; 16],
    iv_size: usize,
    whitening: [u8; WHITENING_SIZE],
}

impl Tcw {
    /// From dm-crypt's extra key part: the IV seed (`iv_size` bytes) ‖ 16 whitening bytes.
    pub(crate) fn new(extra: &[u8], iv_size: usize) -> Self {
        debug_assert_eq!(extra.len(), iv_size + WHITENING_SIZE);
        let mut seed = [0u8; 16];
        seed[..iv_size].copy_from_slice(&extra[..iv_size]);
        let mut whitening = [0u8; WHITENING_SIZE];
        whitening.copy_from_slice(&extra[iv_size..iv_size + WHITENING_SIZE]);
        Tcw {
            seed,
            iv_size,
            whitening,
        }
    }

    /// `crypt_iv_tcw_gen`'s IV for `iv_sector` into `iv` (`iv_size` bytes).
    pub(crate) fn iv(&self, iv_sector: u64, iv: &mut [u8]) {
        let s = iv_sector.to_le_bytes();
        for (i, (o, k)) in iv.iter_mut().zip(&self.seed[..self.iv_size]).enumerate() {
            *o = k ^ s[i % 8];
        }
    }

    /// `crypt_iv_tcw_whitening`: XOR the sector's whitening into the 512-byte `sector` (its
    /// own inverse: applied after encryption and before decryption).
    pub(crate) fn whiten(&self, sector: &mut [u8], iv_sector: u64) {
        let s = iv_sector.to_le_bytes();
        let mut buf = [0u8; WHITENING_SIZE];
        for (i, (b, w)) in buf.iter_mut().zip(&self.whitening).enumerate() {
            *b = w ^ s[i % 8];
        }
        let mut crc = [0u32; 4];
        for (c, word) in crc.iter_mut().zip(buf.chunks_exact(4)) {
            *c = crc32_le0(word);
        }
        let lo = crc[0] ^ crc[3];
        let hi = crc[1] ^ crc[2];
        let mut w = [0u8; 8];
        w[..4].copy_from_slice(&lo.to_le_bytes());
        w[4..].copy_from_slice(&hi.to_le_bytes());
        let w = u64::from_ne_bytes(w);
        for chunk in sector[..512].chunks_exact_mut(8) {
            let v = u64::from_ne_bytes(chunk.try_into().expect("8 bytes")) ^ w;
            chunk.copy_from_slice(&v.to_ne_bytes());
        }
        buf.zeroize();
        crc.zeroize();
    }
}

impl Drop for Tcw {
    fn drop(&mut self) {
        self.seed.zeroize();
        self.whitening.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_is_the_kernels_crc32_le_from_zero() {
        // crc32_le(0, ...) of the standard check string is the CRC-32 of it with the initial
        // and final inversions undone: CRC-32("123456789") = 0xCBF43926.
        let full = b"123456789".iter().fold(!0u32, |c, &b| {
            CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
        });
        assert_eq!(!full, 0xCBF4_3926);
        assert_eq!(crc32_le0(&[0, 0, 0, 0]), 0);
        // One set bit: the table entry shifted through the remaining bytes.
        assert_eq!(crc32_le0(&[0, 0, 0, 1]), CRC_TABLE[1]);
    }

    #[test]
    fn iv_and_whitening_layout() {
        let extra: Vec<u8> = (0u8..32).collect();
        let t = Tcw::new(&extra, 16);
        let mut iv = [0u8; 16];
        t.iv(0x0102, &mut iv);
        assert_eq!(hex::encode(iv), "02000203040506070a080a0b0c0d0e0f");
        let t8 = Tcw::new(&extra[..24], 8);
        let mut iv = [0u8; 8];
        t8.iv(1, &mut iv);
        assert_eq!(hex::encode(iv), "0101020304050607");
        // Whitening twice is the identity, and it is one 8-byte value repeated.
        let mut sector = vec![0u8; 512];
        t.whiten(&mut sector, 77);
        assert!(sector.chunks_exact(8).all(|c| c == &sector[..8]));
        assert_ne!(&sector[..8], &[0u8; 8]);
        t.whiten(&mut sector, 77);
        assert!(sector.iter().all(|&b| b == 0));
    }
}
