//! Adiantum with the Linux kernel's exact semantics (crypto/adiantum.c, crypto/nhpoly1305.c):
//! the `adiantum(xchacha12,aes)` / `adiantum(xchacha20,aes)` template that dm-crypt uses for
//! the cryptsetup spec `xchacha12,aes-adiantum-plain64`.
//!
//! One call encrypts a whole dm-crypt sector (at least 16 bytes, a multiple of 16 here) with a
//! 32-byte tweak (dm-crypt's IV: `plain64` puts the sector number in its first 8 bytes):
//!
//! * key setup: `K_E ‖ K_T ‖ K_M ‖ K_N = XChaCha(K_S, nonce 1 ‖ 0…)` (32 + 16 + 16 + 1072
//!   bytes): the block cipher key, the Poly1305 keys of the header and message hashes and the
//!   NH key;
//! * hash `H(T, L) = Poly1305_{K_T}(le128(8·|L|) ‖ T) + Poly1305_{K_M}(NH_{K_N}(L))` (both
//!   Poly1305s without the final key addition, sums mod 2¹²⁸), NH over 1024-byte chunks;
//! * encrypt: `P_M = P_R + H(T, P_L)`, `C_M = E_{K_E}(P_M)`,
//!   `C_L = P_L ⊕ XChaCha(K_S, nonce C_M ‖ 1 ‖ 0)`, `C_R = C_M − H(T, C_L)`; decryption runs
//!   the same steps backwards.
//!
//! Built on RustCrypto's `chacha20` (XChaCha12/20) and `poly1305`; the block cipher is the
//! engine's own [`BlockCipher`] (so AES gets its VAES/AES-NI backend); NH is written here.

use super::cipher::{BlockCipher, CipherAlg};
use crate::{CryptoError, Result};
use chacha20::cipher::{KeyIvInit, StreamCipher};
use chacha20::{XChaCha12, XChaCha20};
use poly1305::universal_hash::{KeyInit, UniversalHash};
use poly1305::Poly1305;
use zeroize::{Zeroize, Zeroizing};

/// Bytes of the XChaCha key (the whole Adiantum key).
pub(crate) const KEY_LEN: usize = 32;
/// Bytes of the tweak (the kernel's `TWEAK_SIZE`, dm-crypt's IV size for Adiantum).
pub(crate) const TWEAK_LEN: usize = 32;
/// Bytes hashed by one NH call (`NH_MESSAGE_BYTES`).
const NH_MESSAGE_BYTES: usize = 1024;
/// `NH_KEY_WORDS`: 256 message words + 4 · 3 for the Toeplitz passes.
const NH_KEY_WORDS: usize = NH_MESSAGE_BYTES / 4 + 4 * 3;
/// Sub-keys derived from the XChaCha key stream: `K_E ‖ K_T ‖ K_M ‖ K_N`.
const DERIVED_LEN: usize = 32 + 16 + 16 + NH_KEY_WORDS * 4;

/// The stream cipher of an Adiantum instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// XChaCha12 (the Adiantum paper's choice).
    XChaCha12,
    /// XChaCha20.
    XChaCha20,
}

impl StreamKind {
    /// The kernel's names: the only stream ciphers crypto/adiantum.c accepts.
    pub(crate) fn from_name(name: &str) -> Result<Self> {
        match name {
            "xchacha12" => Ok(StreamKind::XChaCha12),
            "xchacha20" => Ok(StreamKind::XChaCha20),
            _ => Err(CryptoError::Unsupported(format!(
                "stream cipher '{name}' for adiantum (xchacha12 or xchacha20)"
            ))),
        }
    }

    /// XOR the key stream of `key`/`nonce` (block counter 0) into `data`.
    fn apply(self, key: &[u8; KEY_LEN], nonce: &[u8; 24], data: &mut [u8]) {
        match self {
            StreamKind::XChaCha12 => XChaCha12::new(key.into(), nonce.into()).apply_keystream(data),
            StreamKind::XChaCha20 => XChaCha20::new(key.into(), nonce.into()).apply_keystream(data),
        }
    }
}

/// A keyed Adiantum instance (the kernel's `adiantum_tfm_ctx`); every key is wiped on drop.
pub(crate) struct Adiantum {
    stream: StreamKind,
    stream_key: Zeroizing<[u8; KEY_LEN]>,
    block: BlockCipher,
    /// Poly1305 keyed with `K_T ‖ 0` (no final addition): the header hash.
    header_poly: Poly1305,
    /// Poly1305 keyed with `K_M ‖ 0`: the hash of the NH outputs.
    msg_poly: Poly1305,
    nh_key: Box<[u32; NH_KEY_WORDS]>,
}

impl Drop for Adiantum {
    fn drop(&mut self) {
        self.nh_key.zeroize();
    }
}

impl Adiantum {
    /// Check the key length and the block cipher (128-bit blocks, 256-bit key), as
    /// `adiantum_supported_algorithms()` and `crypto_skcipher_setkey()` do.
    pub(crate) fn validate(alg: CipherAlg, key_len: usize) -> Result<()> {
        if alg == CipherAlg::Null || alg.block_size() != 16 || !alg.key_len_ok(32) {
            return Err(CryptoError::Unsupported(format!(
                "adiantum needs a 128-bit block cipher with 256-bit keys, not {}",
                alg.name()
            )));
        }
        if key_len != KEY_LEN {
            return Err(CryptoError::InvalidKey(format!(
                "adiantum needs a {KEY_LEN}-byte key, got {key_len} bytes"
            )));
        }
        Ok(())
    }

    /// `adiantum_setkey()`: derive the sub-keys from the XChaCha key stream.
    pub(crate) fn new(stream: StreamKind, alg: CipherAlg, key: &[u8], fast: bool) -> Result<Self> {
        Self::validate(alg, key.len())?;
        let mut stream_key = Zeroizing::new([0u8; KEY_LEN]);
        stream_key.copy_from_slice(key);
        let mut derived = Zeroizing::new([0u8; DERIVED_LEN]);
        let mut nonce = [0u8; 24];
        nonce[0] = 1;
        stream.apply(&stream_key, &nonce, &mut derived[..]);
        let (k_e, rest) = derived.split_at(32);
        let (k_t, rest) = rest.split_at(16);
        let (k_m, k_n) = rest.split_at(16);
        let block = BlockCipher::new(alg, k_e, fast)?;
        let mut nh_key = Box::new([0u32; NH_KEY_WORDS]);
        for (w, b) in nh_key.iter_mut().zip(k_n.chunks_exact(4)) {
            *w = u32::from_le_bytes(b.try_into().expect("4 bytes"));
        }
        Ok(Adiantum {
            stream,
            stream_key,
            block,
            header_poly: poly_r_only(k_t),
            msg_poly: poly_r_only(k_m),
            nh_key,
        })
    }

    /// Encrypt (or decrypt) one message `data` in place with `tweak`. `data.len()` must be
    /// at least 16 and a multiple of 16 (dm-crypt sectors are), `tweak` [`TWEAK_LEN`] bytes.
    pub(crate) fn crypt(&self, tweak: &[u8], data: &mut [u8], encrypt: bool) {
        debug_assert!(data.len() >= 16 && data.len().is_multiple_of(16));
        debug_assert_eq!(tweak.len(), TWEAK_LEN);
        let bulk_len = data.len() - 16;
        let (bulk, right) = data.split_at_mut(bulk_len);
        let right: &mut [u8; 16] = right.try_into().expect("16 bytes");
        let header = self.header_hash(tweak, bulk_len);

        // First hash step: P_M = P_R + H(T, P_L) (or C_M = C_R + H(T, C_L)).
        let mut m = u128::from_le_bytes(*right)
            .wrapping_add(header)
            .wrapping_add(self.message_hash(bulk));
        let mut mb = m.to_le_bytes();
        if encrypt {
            self.block.encrypt_block(&mut mb);
        }
        // The stream cipher, keyed by C_M (nonce C_M ‖ le32(1) ‖ 0).
        let mut nonce = [0u8; 24];
        nonce[..16].copy_from_slice(&mb);
        nonce[16] = 1;
        self.stream.apply(&self.stream_key, &nonce, bulk);
        if !encrypt {
            self.block.decrypt_block(&mut mb);
        }
        // Second hash step: C_R = C_M − H(T, C_L) (or P_R = P_M − H(T, P_L)).
        m = u128::from_le_bytes(mb)
            .wrapping_sub(header)
            .wrapping_sub(self.message_hash(bulk));
        *right = m.to_le_bytes();
        nonce.zeroize();
        mb.zeroize();
        m.zeroize();
    }

    /// `adiantum_hash_header()`: Poly1305 of `le64(8·bulk_len) ‖ 0^64 ‖ tweak`.
    fn header_hash(&self, tweak: &[u8], bulk_len: usize) -> u128 {
        let mut buf = [0u8; 16 + TWEAK_LEN];
        buf[..8].copy_from_slice(&((bulk_len as u64) * 8).to_le_bytes());
        buf[16..].copy_from_slice(tweak);
        let tag = self.header_poly.clone().compute_unpadded(&buf);
        buf.zeroize();
        u128::from_le_bytes(tag.into())
    }

    /// NHPoly1305 of `bulk` (a multiple of 16 bytes): NH of each 1024-byte chunk, the 32-byte
    /// NH outputs hashed with Poly1305.
    fn message_hash(&self, bulk: &[u8]) -> u128 {
        let mut poly = self.msg_poly.clone();
        for chunk in bulk.chunks(NH_MESSAGE_BYTES) {
            let mut h = nh(&self.nh_key, chunk);
            poly.update_padded(&h);
            h.zeroize();
        }
        u128::from_le_bytes(poly.finalize().into())
    }
}

/// Poly1305 keyed with `r` and a zero `s`: the finalization then emits `h mod 2¹²⁸`, the
/// kernel's `poly1305_core_emit()` without a nonce.
fn poly_r_only(r: &[u8]) -> Poly1305 {
    let mut key = Zeroizing::new([0u8; 32]);
    key[..16].copy_from_slice(r);
    Poly1305::new((&*key).into())
}

/// The kernel's `nh_generic()`: four passes over 16-byte message units, each unit using key
/// words `4·i .. 4·i + 16`; `msg.len()` is a multiple of 16 and at most 1024.
fn nh(key: &[u32; NH_KEY_WORDS], msg: &[u8]) -> [u8; 32] {
    debug_assert!(msg.len().is_multiple_of(16) && msg.len() <= NH_MESSAGE_BYTES);
    let mut sums = [0u64; 4];
    for (i, unit) in msg.chunks_exact(16).enumerate() {
        let w = |j: usize| u32::from_le_bytes(unit[4 * j..4 * j + 4].try_into().expect("4"));
        let (m0, m1, m2, m3) = (w(0), w(1), w(2), w(3));
        let k = &key[4 * i..4 * i + 16];
        for (pass, sum) in sums.iter_mut().enumerate() {
            let k = &k[4 * pass..4 * pass + 4];
            let a = u64::from(m0.wrapping_add(k[0])) * u64::from(m2.wrapping_add(k[2]));
            let b = u64::from(m1.wrapping_add(k[1])) * u64::from(m3.wrapping_add(k[3]));
            *sum = sum.wrapping_add(a).wrapping_add(b);
        }
    }
    let mut out = [0u8; 32];
    for (o, s) in out.chunks_exact_mut(8).zip(sums) {
        o.copy_from_slice(&s.to_le_bytes());
    }
    sums.zeroize();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Vector {
        stream: StreamKind,
        key: &'static str,
        tweak: &'static str,
        plaintext: &'static str,
        ciphertext: &'static str,
    }

    /// The 32-byte-tweak vectors of the Adiantum reference implementation
    /// (google/adiantum, test_vectors/ours/Adiantum/Adiantum_XChaCha{12,20}_32_AES256.json,
    /// "Random (1)" of each length); the kernel's crypto/testmgr.h
    /// `adiantum_xchacha{12,20}_aes_tv_template` were generated from the same reference code
    /// and start with the 16-byte XChaCha12 one.
    const VECTORS: &[Vector] = &[
        Vector {
            stream: StreamKind::XChaCha12,
            key: "9eebb2493c1cf5f46a99c2c4dfb1f4dd752057ea2c4fcdb2a53d7b491eabfd0f",
            tweak: "df63d4abd249f3d8338137607dfa7308d8496d80e82f6254eb0ea9395b457f8a",
            plaintext: "67c9f23084418e43fbf3b33e79367fe8",
            ciphertext: "6d32861867860f3f967c9d280d53ec9f",
        },
        Vector {
            stream: StreamKind::XChaCha12,
            key: "a52824341a3cd8f705918fee851f357f803dfc9b94f6fc9e190900a904314f11",
            tweak: "a1ba4995ff346db8cd875d5efdea85db8a7b5eb25d57dd62aca98c41429475b7",
            plaintext: concat!(
            "69b4e88c37e86782f1ec5d04e5149113dff2871b69811d71709e9c3bde497011a0a3db0d544f6669d7db80a7709268ce",
            "81042cc6abaee56015e96fefaa8fa7a7638ff2f077f1a8eae1b71f9eab9e4b3f07875b6fcda8afb9fa700b52b8a8a79e",
            "075fa60eb39b791379c33e8d1c2c68c8511d3c7b7d79772a5665c5542328b003",
        ),
            ciphertext: concat!(
            "9e16abed4ba7425ac6fb4e76ffbe03a00fe3adbae4982b0e2148a0b865482748845454b29a947be64b29e9cf0591801a",
            "3af34196851d9f74515663fa7c288549f72ff9f21846f53380a33cceb25793f5aebda9f57b30c49366e0307716e4a031",
            "ba70bc6813f5b09ac1fc7efe55805c4874a6aaa3acdcc2f58dde34867860758d",
        ),
        },
        Vector {
            stream: StreamKind::XChaCha12,
            key: "d381721823ff6f4a2574290d518a0e13c1535d308dee750d14d669c915a90c60",
            tweak: "659bd4a87d291df4c4d69b6a28ab64e2628197c581aaf944c1725982af16c82c",
            plaintext: concat!(
            "c76b526a10f0cc09c1121d6d21a678f505a3696091369857ba0c14ccf32d7303c6b25fc81627375dd00b87b250947b58",
            "04f4e07f6e578ec94184c1b17e4b91123a8b5d50827bcbd99ad94e1806239ed4a52098efb5dae5c08a6a837715841eae",
            "78949ddfb7d1ea67aab01415fa672184d3412aceba4b4ae89562a955f080adbdabafdd4fa57c1336ed5e4f72ad4bf1d0",
            "884eec2c88105eea12c0160129a3a055aa68f3e99d3b0d3b6decf8a02df0908d1ce288d42471f9b3c19fc5d67670c52e",
            "9cacdb90bd8372ba6eb5a55383a9a5bf7d060e3c2ad204b51e19380916d2821f751856b8960ba6f9cf62d9325da9d71d",
            "ece4df1bbef136eee37bb52feef8533d6ab770a9fc9c5725f28910d3b8a88c30ae234f0e13664fe1b6c0e4f8ef93bd6e",
            "15856be360811d68d731878909abd5961df36d6780ca07315da7e4fb3ef29b335218c830fe2dca1e79927a605cb65887",
            "a436a267928ba4b7f186dfdcc07e8f63d2a2dc78eb4fd89647cab891f9f794215f9a9f5bb840414b66696a72d0cb70b7",
            "93b5379605374fe58ca75a4e8bb784eac7fc196e1f5aa1ac187d523bb3346299e49e31043fc08d84177c254852671127",
            "67bb5a85ca56b25ce6ecd5963d15fcfb2225f413e5934b9a77f15218fa165e490345a808fab34192795033cad0d74255",
            "c39a0c4ed9a43c86809f53d1a42ed1bcf1546e93a465998edf29c0646307bbea",
        ),
            ciphertext: concat!(
            "1597d08618039c51c51136621392e6732979dea1003e0864171abcd5fe330e0c7c94a7c63cbeaca289e6bcdf0c332742",
            "46732fba4ea6468fe4ee39634265a3887aad3323a9a7207f0be66ac360da9eb4d6078a7726d1ab449955035eed8d7bbd",
            "c821b721303fc0b5c8ec6c23a6a36df1300ad0a6a92869ae2ae654ac829d6a956f0644c55a776eecf8f863b2e6aabd8e",
            "0e8a620003c884dd474ac355bab7e7df08bf62f5e8bcb611e4cbd0667432cfd4f8518039140512db8793e226309c3a21",
            "e5d038578015e4085805497de6927770fb1e2d6a8400c868f71addf07b381ed82c787861cfe3de691fd503d51ab4cf03",
            "c87a706835b4f6be9062b2289986f54499eb31cfcadfd021d660f70f40b480b7abe19b45ba66daeedd04124098e169e5",
            "2b9c5980e77bcc63a6c03aa9fe8af9621134619435fef299fdee19ea95b612bf1bdf021acc3e7e6578741050296328ea",
            "6babd4064d152431c70ac916b648f0bf49db6871318f87e2130564d6220cf83684243e695eb89e16736c831ee09f9eba",
            "e55921331ba926c2c7d93073b6a6738219fa444d408b69049474ea6eb30947012ab978344311edd68c95651b8567a540",
            "ac9c054b574aa9960fdd4fa1e0cf6ec71beda2b4568c096ea665d75581b7ed119b4075a86b56af168b3df4cbfed51d3d",
            "85c2c0de43394a96ba8897c0d6000e2721b02152baa737aaccbf95a8f4d091f6",
        ),
        },
        Vector {
            stream: StreamKind::XChaCha20,
            key: "9eebb2493c1cf5f46a99c2c4dfb1f4dd752057ea2c4fcdb2a53d7b491eabfd0f",
            tweak: "df63d4abd249f3d8338137607dfa7308d8496d80e82f6254eb0ea9395b457f8a",
            plaintext: "67c9f23084418e43fbf3b33e79367fe8",
            ciphertext: "f67897d6aa9401272e4d83e06e649adf",
        },
        Vector {
            stream: StreamKind::XChaCha20,
            key: "a52824341a3cd8f705918fee851f357f803dfc9b94f6fc9e190900a904314f11",
            tweak: "a1ba4995ff346db8cd875d5efdea85db8a7b5eb25d57dd62aca98c41429475b7",
            plaintext: concat!(
            "69b4e88c37e86782f1ec5d04e5149113dff2871b69811d71709e9c3bde497011a0a3db0d544f6669d7db80a7709268ce",
            "81042cc6abaee56015e96fefaa8fa7a7638ff2f077f1a8eae1b71f9eab9e4b3f07875b6fcda8afb9fa700b52b8a8a79e",
            "075fa60eb39b791379c33e8d1c2c68c8511d3c7b7d79772a5665c5542328b003",
        ),
            ciphertext: concat!(
            "b18ba00577a84d591b8e21fc3a49fad4eb36f3c4dfdcae67073f700ee966f50c304d66c9a42f739c13c84944cc0a909d",
            "7cdd193fea728d58abe7092cecb544d2caa62d7a5c9c2b15ec2aa66991f9f313f772c1c140d5e194f429a13e2502a83e",
            "94c19114a114cbbe674cb938fea7aa3229620db2f63c5857c1d55abbd6a62ae5",
        ),
        },
        Vector {
            stream: StreamKind::XChaCha20,
            key: "d381721823ff6f4a2574290d518a0e13c1535d308dee750d14d669c915a90c60",
            tweak: "659bd4a87d291df4c4d69b6a28ab64e2628197c581aaf944c1725982af16c82c",
            plaintext: concat!(
            "c76b526a10f0cc09c1121d6d21a678f505a3696091369857ba0c14ccf32d7303c6b25fc81627375dd00b87b250947b58",
            "04f4e07f6e578ec94184c1b17e4b91123a8b5d50827bcbd99ad94e1806239ed4a52098efb5dae5c08a6a837715841eae",
            "78949ddfb7d1ea67aab01415fa672184d3412aceba4b4ae89562a955f080adbdabafdd4fa57c1336ed5e4f72ad4bf1d0",
            "884eec2c88105eea12c0160129a3a055aa68f3e99d3b0d3b6decf8a02df0908d1ce288d42471f9b3c19fc5d67670c52e",
            "9cacdb90bd8372ba6eb5a55383a9a5bf7d060e3c2ad204b51e19380916d2821f751856b8960ba6f9cf62d9325da9d71d",
            "ece4df1bbef136eee37bb52feef8533d6ab770a9fc9c5725f28910d3b8a88c30ae234f0e13664fe1b6c0e4f8ef93bd6e",
            "15856be360811d68d731878909abd5961df36d6780ca07315da7e4fb3ef29b335218c830fe2dca1e79927a605cb65887",
            "a436a267928ba4b7f186dfdcc07e8f63d2a2dc78eb4fd89647cab891f9f794215f9a9f5bb840414b66696a72d0cb70b7",
            "93b5379605374fe58ca75a4e8bb784eac7fc196e1f5aa1ac187d523bb3346299e49e31043fc08d84177c254852671127",
            "67bb5a85ca56b25ce6ecd5963d15fcfb2225f413e5934b9a77f15218fa165e490345a808fab34192795033cad0d74255",
            "c39a0c4ed9a43c86809f53d1a42ed1bcf1546e93a465998edf29c0646307bbea",
        ),
            ciphertext: concat!(
            "e033f6e0b4a5dd2bddcefc121efc2df28bc7ebc1c42ae8440f3d97192e6da2389da6aae196b908e80b70485cedb59bcb",
            "8b40887e6973f71671bb5bfca3475da6ae3a64c4e7b8a8e7b13219dbe301b8f0a486b44cc2de5cd26c77d2e818b70ac9",
            "3d53b5c45cf08c06dc90e074471b0bf6d2716bc4f197002d6357441f8cf4e69be07addec327342327f3567600dcf1052",
            "6122538d8ebb337659d910cedfefc041d533296ada46a451f0993d9631ddb5cb3e2a1fc75c79d3c520a1b1391bc60a70",
            "26399507ad7ac969fe81c7880838afad9e8dfbe8240d22b80eedbe37537ca6c67862eca359d9c69db80e6977842d6a4c",
            "c5d9b2a02ba880cce91e9c5ac4a1b237069b303267f7e7d242c7df4ed4cba01294a1348593504b0a3c7d492501416b96",
            "a912bb0bc0d7d0931f7038b821eef6a7eeebe781a413b487fac1b0b5378b74a24ec7c2ad3d623ff83442e5ae451363fe",
            "fc2a174661a9d31c4caff0096226661e74cfd6683d7dd8b7e7e6f8f00820f7471c52aa0f3e21a3f2bf2f9516a8c8c88c",
            "990f5dfbfa2b588a7ed6740260f0d05b65a8acea8d684634269d4fb19a8ec01af1edc67a83fd8a57f2e6e4bafcc63cad",
            "5b19502f3acc064604513f9197f0d207e793897eb5320f03e5589e7472ebc238000c917269ed7d6dc871f0ecff80d91c",
            "9ed2fa15fc6c4ebcb1a6bdbd7040ca20b878d2a3c6f3799cc727e16a29ada403",
        ),
        },
    ];

    #[test]
    fn reference_vectors() {
        for (i, v) in VECTORS.iter().enumerate() {
            let key = hex::decode(v.key).unwrap();
            let tweak = hex::decode(v.tweak).unwrap();
            let pt = hex::decode(v.plaintext).unwrap();
            let ct = hex::decode(v.ciphertext).unwrap();
            for fast in [true, false] {
                let a = Adiantum::new(v.stream, CipherAlg::Aes, &key, fast).unwrap();
                let mut buf = pt.clone();
                a.crypt(&tweak, &mut buf, true);
                assert_eq!(hex::encode(&buf), v.ciphertext, "vector {i} encrypt");
                a.crypt(&tweak, &mut buf, false);
                assert_eq!(buf, pt, "vector {i} decrypt");
                let mut buf = ct.clone();
                a.crypt(&tweak, &mut buf, false);
                assert_eq!(buf, pt, "vector {i} decrypt of the reference ciphertext");
            }
        }
    }

    #[test]
    fn validation() {
        assert!(Adiantum::validate(CipherAlg::Aes, 32).is_ok());
        assert!(Adiantum::validate(CipherAlg::Serpent, 32).is_ok());
        assert!(Adiantum::validate(CipherAlg::Aes, 64).is_err());
        assert!(Adiantum::validate(CipherAlg::Aes, 16).is_err());
        assert!(Adiantum::validate(CipherAlg::Cast5, 32).is_err());
        assert!(Adiantum::validate(CipherAlg::Null, 32).is_err());
        assert!(StreamKind::from_name("xchacha8").is_err());
        assert!(StreamKind::from_name("chacha20").is_err());
    }
}
