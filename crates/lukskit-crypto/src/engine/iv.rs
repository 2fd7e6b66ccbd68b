//! dm-crypt IV generators (`crypt_iv_*_gen` in drivers/md/dm-crypt.c, ESSIV in
//! crypto/essiv.c).

use super::cipher::CipherAlg;
use crate::hash::HashAlg;
use crate::{CryptoError, Result};
use zeroize::Zeroizing;

/// The hash of an `essiv:<hash>` generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EssivHash {
    /// A hash from [`HashAlg`].
    Std(HashAlg),
    /// Kernel `wp256`/`wp384`: Whirlpool truncated to 32/48 bytes (crypto/wp512.c).
    WhirlpoolTrunc(usize),
}

impl EssivHash {
    pub(crate) fn from_name(name: &str) -> Result<Self> {
        match name {
            "wp256" => Ok(EssivHash::WhirlpoolTrunc(32)),
            "wp384" => Ok(EssivHash::WhirlpoolTrunc(48)),
            _ => HashAlg::from_name(name)
                .map(EssivHash::Std)
                .map_err(|_| CryptoError::Unsupported(format!("ESSIV hash '{name}'"))),
        }
    }

    pub(crate) fn digest_size(self) -> usize {
        match self {
            EssivHash::Std(h) => h.digest_size(),
            EssivHash::WhirlpoolTrunc(n) => n,
        }
    }

    /// The ESSIV salt: hash of the whole (sub)key given to the `essiv(...)` instance.
    pub(crate) fn salt(self, key: &[u8]) -> Zeroizing<Vec<u8>> {
        match self {
            EssivHash::Std(h) => Zeroizing::new(h.digest(&[key])),
            EssivHash::WhirlpoolTrunc(n) => {
                let mut d = Zeroizing::new(HashAlg::Whirlpool.digest(&[key]));
                d.truncate(n);
                d
            }
        }
    }
}

/// Which IV generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IvKind {
    /// The mode takes no IV (ecb, cipher_null); any ivmode is ignored, as dm-crypt does.
    None,
    /// `plain`: LE32 of the low 32 bits of the sector.
    Plain,
    /// `plain64`: LE64 of the sector.
    Plain64,
    /// `plain64be`: BE64 of the sector in the last 8 bytes.
    Plain64Be,
    /// `essiv:<hash>`: `E_salt(LE64(sector))`; the per-tfm ESSIV cipher lives in the tfm.
    Essiv(EssivHash),
    /// `benbi`: BE64((sector << shift) + 1) in the last 8 bytes.
    Benbi { shift: u32 },
    /// `null`: all zero.
    Null,
    /// `eboiv`: encryption of LE64(sector · sector_size) with tfm 0 of the bulk cipher.
    Eboiv,
    /// `lmk`: loop-AES's MD5 of the sector's plaintext (see `engine::lmk`).
    Lmk,
    /// `elephant`: EBOIV's IV plus BitLocker's Elephant diffuser around the bulk cipher
    /// ([`super::elephant`]); the second half of the key is the elephant key.
    Elephant,
    /// `tcw`: TrueCrypt ≤ 4's IV seed and whitening ([`super::tcw`]); the key ends with the
    /// IV seed and 16 whitening bytes.
    Tcw,
}

impl IvKind {
    /// Resolve dm-crypt's ivmode/ivopts for a mode with kernel `ivsize` `iv_size` (before the
    /// 8-byte minimum) and block size `mode_block`.
    pub(crate) fn resolve(
        ivmode: Option<&str>,
        ivopts: Option<&str>,
        alg: CipherAlg,
        iv_size: usize,
        mode_block: usize,
    ) -> Result<Self> {
        if iv_size == 0 {
            // crypt_ctr_ivmode(): "Selected cipher does not support IVs" — ignored.
            return Ok(IvKind::None);
        }
        let Some(ivmode) = ivmode else {
            return Err(CryptoError::InvalidInput(
                "this chain mode needs an IV generator".into(),
            ));
        };
        Ok(match ivmode {
            "plain" => IvKind::Plain,
            "plain64" => IvKind::Plain64,
            "plain64be" => IvKind::Plain64Be,
            "null" => IvKind::Null,
            "essiv" => {
                let Some(hash) = ivopts else {
                    return Err(CryptoError::InvalidInput(
                        "ESSIV needs a hash (essiv:<hash>)".into(),
                    ));
                };
                let h = EssivHash::from_name(hash)?;
                // crypto/essiv.c essiv_supported_algorithms(): the digest is the key of the
                // bare block cipher, whose block size must equal the IV size.
                if !alg.key_len_ok(h.digest_size()) || alg.block_size() != iv_size {
                    return Err(CryptoError::Unsupported(format!(
                        "essiv:{hash} with {} ({}-byte digest is not a valid {} key)",
                        alg.name(),
                        h.digest_size(),
                        alg.name()
                    )));
                }
                IvKind::Essiv(h)
            }
            "benbi" => {
                // crypt_iv_benbi_ctr(): block size must be a power of two <= 512.
                if !mode_block.is_power_of_two() || mode_block > 512 {
                    return Err(CryptoError::Unsupported(
                        "benbi with this block size".into(),
                    ));
                }
                IvKind::Benbi {
                    shift: 9 - mode_block.trailing_zeros(),
                }
            }
            "eboiv" => {
                // crypt_iv_eboiv_ctr(): block size of the mode must equal the IV size.
                if mode_block != iv_size.max(8) {
                    return Err(CryptoError::Unsupported(
                        "eboiv needs a mode whose block size equals its IV size".into(),
                    ));
                }
                IvKind::Eboiv
            }
            "lmk" => {
                // crypt_iv_lmk_one() hashes 16-byte blocks 1-31 of a 512-byte sector.
                if mode_block != 16 || iv_size != 16 {
                    return Err(CryptoError::Unsupported(
                        "lmk needs a mode with 16-byte blocks and IVs".into(),
                    ));
                }
                IvKind::Lmk
            }
            "elephant" => {
                // crypt_iv_elephant_ctr(): EBOIV's rule, and an ecb(aes) for the diffuser.
                if mode_block != iv_size.max(8) {
                    return Err(CryptoError::Unsupported(
                        "elephant needs a mode whose block size equals its IV size".into(),
                    ));
                }
                IvKind::Elephant
            }
            // crypt_iv_tcw_ctr(): the sector size and key size are checked by the engine.
            "tcw" => IvKind::Tcw,
            "random" => return Err(CryptoError::Unsupported(format!("IV generator '{ivmode}'"))),
            other => {
                return Err(CryptoError::Unsupported(format!(
                    "unknown IV generator '{other}'"
                )))
            }
        })
    }
}

/// Write the plain part of the IV for `kind` into `iv` (already zeroed, `iv.len()` = the
/// dm-crypt IV size). ESSIV and EBOIV are finished by the caller (they need ciphers).
#[inline]
pub(crate) fn fill_plain(kind: IvKind, iv: &mut [u8], iv_sector: u64, sector_size: u64) {
    let n = iv.len();
    match kind {
        IvKind::None | IvKind::Null | IvKind::Lmk | IvKind::Tcw => {}
        IvKind::Plain => iv[..4].copy_from_slice(&(iv_sector as u32).to_le_bytes()),
        IvKind::Plain64 | IvKind::Essiv(_) => iv[..8].copy_from_slice(&iv_sector.to_le_bytes()),
        IvKind::Plain64Be => iv[n - 8..].copy_from_slice(&iv_sector.to_be_bytes()),
        IvKind::Benbi { shift } => {
            let v = (iv_sector << shift).wrapping_add(1);
            iv[n - 8..].copy_from_slice(&v.to_be_bytes());
        }
        IvKind::Eboiv | IvKind::Elephant => {
            iv[..8].copy_from_slice(&iv_sector.wrapping_mul(sector_size).to_le_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let mut iv = [0u8; 16];
        fill_plain(IvKind::Plain, &mut iv, 0x1_0000_0002, 512);
        assert_eq!(hex::encode(iv), "02000000000000000000000000000000");
        let mut iv = [0u8; 16];
        fill_plain(IvKind::Plain64, &mut iv, 0x1_0000_0002, 512);
        assert_eq!(hex::encode(iv), "02000000010000000000000000000000");
        let mut iv = [0u8; 16];
        fill_plain(IvKind::Plain64Be, &mut iv, 0x1_0000_0002, 512);
        assert_eq!(hex::encode(iv), "00000000000000000000000100000002");
        let mut iv = [0u8; 16];
        fill_plain(IvKind::Benbi { shift: 5 }, &mut iv, 3, 512);
        assert_eq!(hex::encode(iv), "00000000000000000000000000000061");
        let mut iv = [0u8; 8];
        fill_plain(IvKind::Plain64Be, &mut iv, 7, 512);
        assert_eq!(hex::encode(iv), "0000000000000007");
        let mut iv = [0u8; 16];
        fill_plain(IvKind::Eboiv, &mut iv, 3, 4096);
        assert_eq!(hex::encode(iv), "00300000000000000000000000000000");
    }

    #[test]
    fn resolve_rules() {
        use CipherAlg::*;
        assert_eq!(
            IvKind::resolve(Some("lmk"), None, Aes, 0, 16).unwrap(),
            IvKind::None
        );
        assert!(IvKind::resolve(None, None, Aes, 16, 16).is_err());
        assert!(IvKind::resolve(Some("essiv"), Some("sha256"), Aes, 16, 16).is_ok());
        assert!(IvKind::resolve(Some("essiv"), Some("sha512"), Aes, 16, 16).is_err());
        assert!(IvKind::resolve(Some("essiv"), Some("wp256"), Aes, 16, 16).is_ok());
        assert!(IvKind::resolve(Some("essiv"), Some("md4"), Aes, 16, 16).is_err());
        assert!(IvKind::resolve(Some("essiv"), Some("sha256"), Cast5, 8, 8).is_err());
        assert_eq!(
            IvKind::resolve(Some("benbi"), None, Aes, 16, 16).unwrap(),
            IvKind::Benbi { shift: 5 }
        );
        assert_eq!(
            IvKind::resolve(Some("benbi"), None, Aes, 16, 1).unwrap(),
            IvKind::Benbi { shift: 9 }
        );
        assert!(IvKind::resolve(Some("eboiv"), None, Aes, 16, 1).is_err());
        assert_eq!(
            IvKind::resolve(Some("tcw"), None, Aes, 16, 16).unwrap(),
            IvKind::Tcw
        );
        assert!(IvKind::resolve(Some("random"), None, Aes, 16, 16).is_err());
        assert_eq!(
            IvKind::resolve(Some("elephant"), None, Aes, 16, 16).unwrap(),
            IvKind::Elephant
        );
        assert!(IvKind::resolve(Some("elephant"), None, Aes, 16, 1).is_err());
        assert!(IvKind::resolve(Some("bogus"), None, Aes, 16, 16).is_err());
    }
}
