//! dm-crypt's `lmk` IV generator (loop-AES compatible, `crypt_iv_lmk_*` of
//! drivers/md/dm-crypt.c): the IV of a 512-byte sector is the MD5 state, without the final
//! padding, after hashing the 64-byte seed (version 3 only), the sector's plaintext blocks
//! 1–31 and 16 bytes of the sector number (LE32 low bits, LE32 of bits 32–55 | 0x80000000,
//! LE32 4024, 0). Writing: CBC with that IV from the plaintext. Reading: CBC with a zero
//! IV, then the IV (from the now decrypted blocks 1–31) is XORed into block 0.
//!
//! Version 2 (`aes:64-cbc-lmk` with 64 keys) has no seed; version 3 (65 keys: the last
//! "key" is the seed) hashes a 64-byte seed buffer holding the first 16 bytes of that key,
//! then zeros.

use zeroize::Zeroize;

/// Size of the seed buffer hashed first (`LMK_SEED_SIZE`).
pub(crate) const SEED_SIZE: usize = 64;
/// The bytes of the extra key that go into the seed buffer (MD5's digest size).
const SEED_KEY_BYTES: usize = 16;

/// The seed of version 3 (`None`: version 2).
#[derive(Clone)]
pub(crate) struct LmkSeed(Option<Box<[u8; SEED_SIZE]>>);

impl LmkSeed {
    /// The seed from dm-crypt's extra key part (`None` when the key has none).
    pub(crate) fn new(extra_key: Option<&[u8]>) -> Self {
        LmkSeed(extra_key.map(|k| {
            let mut s = Box::new([0u8; SEED_SIZE]);
            let n = k.len().min(SEED_KEY_BYTES);
            s[..n].copy_from_slice(&k[..n]);
            s
        }))
    }

    /// The 16-byte IV of the 512-byte sector `data` (its blocks 1–31 are read) for
    /// `iv_sector`.
    pub(crate) fn iv(&self, data: &[u8], iv_sector: u64) -> [u8; 16] {
        let mut state = [0x6745_2301u32, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
        // 64 (seed) + 496 + 16 = 576, or 496 + 16 = 512: whole MD5 blocks, no padding.
        let mut msg = [0u8; SEED_SIZE + 512];
        let mut n = 0;
        if let Some(seed) = &self.0 {
            msg[..SEED_SIZE].copy_from_slice(&seed[..]);
            n = SEED_SIZE;
        }
        msg[n..n + 496].copy_from_slice(&data[16..512]);
        n += 496;
        let hi = ((iv_sector >> 32) as u32 & 0x00FF_FFFF) | 0x8000_0000;
        msg[n..n + 4].copy_from_slice(&(iv_sector as u32).to_le_bytes());
        msg[n + 4..n + 8].copy_from_slice(&hi.to_le_bytes());
        msg[n + 8..n + 12].copy_from_slice(&4024u32.to_le_bytes());
        n += 16;
        let mut blocks = [[0u8; 64]; 9];
        for (b, chunk) in blocks.iter_mut().zip(msg[..n].chunks_exact(64)) {
            b.copy_from_slice(chunk);
        }
        md5::block_api::compress(&mut state, &blocks[..n / 64]);
        let mut iv = [0u8; 16];
        for (o, w) in iv.chunks_exact_mut(4).zip(state) {
            o.copy_from_slice(&w.to_le_bytes());
        }
        msg.zeroize();
        blocks.zeroize();
        state.zeroize();
        iv
    }
}

impl Drop for LmkSeed {
    fn drop(&mut self) {
        if let Some(s) = &mut self.0 {
            s.zeroize();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::SectorCipher;
    use crate::spec::CipherSpec;
    use lukskit_testkit::pattern;
    use sha2::{Digest, Sha256};

    #[test]
    fn raw_md5_state_is_md5s() {
        // With the padding block supplied by hand, the unpadded state is the digest of "".
        let mut state = [0x6745_2301u32, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
        let mut pad = [0u8; 64];
        pad[0] = 0x80;
        md5::block_api::compress(&mut state, &[pad]);
        let d: Vec<u8> = state.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(hex::encode(d), "d41d8cd98f00b204e9800998ecf8427e");
    }

    /// Vectors from an independent implementation: OpenSSL's MD5 (`MD5_Update` state read
    /// without `MD5_Final`, through Python ctypes) and python3-cryptography's AES-CBC,
    /// composed as dm-crypt's crypt_iv_lmk_one: `scripts/lmk-oracle.py 16 64` etc. Sectors 0, 1, 63, 64, 0x1_2345_6789 and 2^56 - 1 (cropped to 56 bits), each
    /// encrypted alone; the SHA-256 of the six ciphertexts.
    #[test]
    fn lmk_vectors_versions_2_and_3() {
        let cases = [
            (
                16,
                64,
                "24d88bbbef92e43a9896078955a894725808e327a9c8091fa416158a869a1b09",
            ),
            (
                16,
                65,
                "8f06c281f90d8c3d3990a9e6f2670d0c27decd4e069306476280436ac5dc6b62",
            ),
            (
                32,
                64,
                "c2a951616578f2536bd58d0fc17e79453b7dbb8c38152a7b3d862c1f32ec0f4b",
            ),
            (
                32,
                65,
                "1dcd2b575de2b8ebd6c40d06e0ac1706a147e874353bc4028597315c26b97ad3",
            ),
        ];
        let sectors = [0u64, 1, 63, 64, 0x1_2345_6789, 0xff_ffff_ffff_ffff];
        let spec = CipherSpec::parse("aes:64-cbc-lmk").unwrap();
        for (keysz, nkeys, want) in cases {
            let key = pattern(keysz * nkeys, 7);
            let c = SectorCipher::new(&spec, &key, 512, false).unwrap();
            let p = SectorCipher::new_portable(&spec, &key, 512, false).unwrap();
            let mut all = Vec::new();
            for (i, &s) in sectors.iter().enumerate() {
                let pt = pattern(512, 100 + i as u64);
                let mut ct = pt.clone();
                c.encrypt(&mut ct, s).unwrap();
                let mut ct2 = pt.clone();
                p.encrypt(&mut ct2, s).unwrap();
                assert_eq!(ct, ct2);
                let mut back = ct.clone();
                c.decrypt(&mut back, s).unwrap();
                assert_eq!(back, pt, "{keysz}x{nkeys} sector {s}");
                all.extend_from_slice(&ct);
            }
            assert_eq!(hex::encode(Sha256::digest(&all)), want, "{keysz}x{nkeys}");
        }
        // Several sectors at once take their keys and IVs in turn.
        let key = pattern(16 * 65, 7);
        let c = SectorCipher::new(&spec, &key, 512, false).unwrap();
        let pt = pattern(512 * 70, 3);
        let mut whole = pt.clone();
        c.encrypt(&mut whole, 60).unwrap();
        for k in 0..70 {
            let mut one = pt[k * 512..(k + 1) * 512].to_vec();
            c.encrypt(&mut one, 60 + k as u64).unwrap();
            assert_eq!(one, whole[k * 512..(k + 1) * 512]);
        }
        c.decrypt_parallel(&mut whole, 60).unwrap();
        assert_eq!(whole, pt);
    }

    #[test]
    fn lmk_refuses_other_sector_sizes_and_odd_keys() {
        let spec = CipherSpec::parse("aes:64-cbc-lmk").unwrap();
        assert!(SectorCipher::check(&spec, 64 * 16, 4096).is_err());
        assert!(SectorCipher::check(&spec, 64 * 16 + 5, 512).is_err());
        assert!(SectorCipher::check(&spec, 66 * 16, 512).is_err());
        assert!(SectorCipher::check(&spec, 65 * 16, 512).is_ok());
    }
}
