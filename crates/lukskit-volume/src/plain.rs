//! cryptsetup plain mode: dm-crypt without a header. Everything (cipher, key size, offsets)
//! comes from the command line and the key is derived from the passphrase on every use.
//!
//! Key derivation follows cryptsetup 2.6.1 (`src/cryptsetup.c` `action_open_plain`,
//! `lib/setup.c` `process_key`, `lib/crypt_plain.c`):
//!
//! * a passphrase (terminal, or standard input including `--key-file -`) is hashed:
//!   `key = H(p) ‖ H("A" ‖ p) ‖ H("AA" ‖ p) ‖ …` truncated to the key size;
//!   `--hash H:N` hashes only N bytes of key and zero-pads the rest;
//! * `--hash plain` uses the passphrase bytes directly, truncated or zero-padded to the key
//!   size; `--hash plain:N` copies exactly N bytes (an error if the passphrase is shorter)
//!   and zero-pads;
//! * a key file other than standard input is used directly as the key (the hash is
//!   ignored): exactly key-size bytes are read from it.
//!
//! Defaults are cryptsetup 2.6.1's compiled-in plain-mode parameters (`cryptsetup --help`:
//! "plain: aes-cbc-essiv:sha256, Key: 256 bits, Password hashing: ripemd160"); 2.7.0 changed
//! them to aes-xts-plain64/sha256, lukskit mirrors 2.6.1.

use crate::data_layout::DataLayout;
use crate::error::{ParamError, PlainValue, Result, VolumeError};
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use zeroize::Zeroizing;

/// cryptsetup 2.6.1's default plain-mode cipher.
pub const DEFAULT_CIPHER: &str = "aes-cbc-essiv:sha256";
/// cryptsetup 2.6.1's default plain-mode key size in bits (no XTS doubling in plain mode).
pub const DEFAULT_KEY_BITS: u32 = 256;
/// cryptsetup 2.6.1's default plain-mode passphrase hash.
pub const DEFAULT_HASH: &str = "ripemd160";

/// The passphrase hash of plain mode (`--hash NAME`, `NAME:N`, `plain`, `plain:N`), parsed
/// once. cryptsetup reports a bad hash only when it hashes a passphrase (with a key file the
/// hash is ignored), so the parts that do not parse are kept and reported by
/// [`Self::derive`], in cryptsetup's order (`crypt_plain_hash`): a bad length, a length
/// longer than the key, a passphrase shorter than `plain:N`, an unknown hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassphraseHash {
    /// The specification as given, for messages.
    spec: String,
    /// The hash (or `plain`) named before any `:`.
    name: HashName,
    /// The `:N` part.
    len: HashLen,
}

/// The name part of a [`PassphraseHash`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum HashName {
    /// `plain`: the passphrase itself.
    Plain,
    /// A hash lukskit implements.
    Digest(HashAlg),
    /// A name no hash answers to (reported when a passphrase is hashed).
    Unknown(String),
}

/// The `:N` part of a [`PassphraseHash`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HashLen {
    /// No `:N`: the whole key.
    Key,
    /// `:N` bytes (a negative N is `usize::MAX`, longer than any key, as in C).
    Bytes(usize),
    /// A `:` without a number after it.
    Malformed,
}

impl PassphraseHash {
    /// Parse a hash specification; never fails (see the type's documentation).
    pub fn parse(spec: &str) -> Self {
        let (name, len) = match spec.split_once(':') {
            Some((name, n)) => (
                name,
                parse_c_size(n).map_or(HashLen::Malformed, HashLen::Bytes),
            ),
            None => (spec, HashLen::Key),
        };
        let name = if name == "plain" {
            HashName::Plain
        } else {
            match HashAlg::from_name(name) {
                Ok(alg) => HashName::Digest(alg),
                Err(_) => HashName::Unknown(name.to_string()),
            }
        };
        PassphraseHash {
            spec: spec.to_string(),
            name,
            len,
        }
    }

    /// The specification as given.
    pub fn as_str(&self) -> &str {
        &self.spec
    }

    /// `--hash plain` without a length: no hashing at all; the tool copies the secret
    /// (truncated or zero-padded to the key size) and reads key files from standard input
    /// to the key size.
    pub fn is_copy(&self) -> bool {
        self.name == HashName::Plain && self.len == HashLen::Key
    }

    /// `crypt_plain_hash`: derive `key_len` bytes from `passphrase`: `NAME` hashes
    /// (hashalot's rounds), `NAME:N` hashes N bytes and zero-pads the rest, `plain:N` copies N
    /// bytes of the passphrase (which must be at least that long), `plain` copies `key_len`.
    pub fn derive(&self, passphrase: &[u8], key_len: usize) -> Result<SecretBuf> {
        let processing = || {
            VolumeError::from(ParamError::KeyProcessing {
                hash: self.spec.clone(),
            })
        };
        let hash_len = match self.len {
            HashLen::Key => key_len,
            HashLen::Bytes(len) if len <= key_len => len,
            HashLen::Bytes(_) | HashLen::Malformed => return Err(processing()),
        };
        let mut key = SecretBuf::zeroed(key_len);
        let alg = match &self.name {
            HashName::Plain => {
                if passphrase.len() < hash_len {
                    return Err(processing());
                }
                key.as_mut_bytes()[..hash_len].copy_from_slice(&passphrase[..hash_len]);
                return Ok(key);
            }
            HashName::Unknown(name) => {
                return Err(VolumeError::HashUnsupported { hash: name.clone() })
            }
            HashName::Digest(alg) => *alg,
        };
        let out = &mut key.as_mut_bytes()[..hash_len];
        let mut prefix: Vec<u8> = Vec::new();
        let mut filled = 0;
        while filled < out.len() {
            // hashalot's trick: round r hashes r 'A' bytes before the passphrase.
            let d = Zeroizing::new(alg.digest(&[&prefix, passphrase]));
            let n = d.len().min(out.len() - filled);
            out[filled..filled + n].copy_from_slice(&d[..n]);
            filled += n;
            prefix.push(b'A');
        }
        Ok(key)
    }
}

/// `sscanf("%zd")` on the length after `hash:` — leading blanks and sign, decimal digits,
/// anything after them ignored; no digits is an error.
fn parse_c_size(s: &str) -> Option<usize> {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        return None;
    }
    let v: usize = digits.parse().ok()?;
    // A negative %zd stored in a size_t is huge: "longer than the key".
    Some(if neg && v != 0 { usize::MAX } else { v })
}

/// `process_key`: the volume key from a secret read by the tool. `hash` `None` (or
/// `plain`, which the tool turns into no hash) copies the secret, truncated or zero-padded
/// to `key_len`; otherwise [`PassphraseHash::derive`].
pub fn key_from_secret(
    hash: Option<&PassphraseHash>,
    secret: &[u8],
    key_len: usize,
) -> Result<SecretBuf> {
    if key_len == 0 {
        return Err(ParamError::KeySizeZero.into());
    }
    match hash {
        Some(h) if !h.is_copy() => h.derive(secret, key_len),
        _ => {
            let mut key = SecretBuf::zeroed(key_len);
            let n = secret.len().min(key_len);
            key.as_mut_bytes()[..n].copy_from_slice(&secret[..n]);
            Ok(key)
        }
    }
}

/// cryptsetup's first check of plain-mode options: `--iv-large-sectors` needs sectors larger
/// than 512 bytes.
pub fn check_iv_large_sectors(iv_large_sectors: bool, sector_size: u32) -> Result<()> {
    if iv_large_sectors && sector_size <= 512 {
        return Err(ParamError::LargeIvSectors.into());
    }
    Ok(())
}

/// The parameters of a plain-mode mapping (`open --type plain` options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainParams {
    /// `--cipher`.
    pub cipher: CipherSpec,
    /// `--key-size` in bits.
    pub key_bits: u32,
    /// `--hash` for passphrases (ignored for key files).
    pub hash: PassphraseHash,
    /// `--offset`: start of the data on the device in 512-byte sectors.
    pub offset_sectors: u64,
    /// `--skip`: IV offset in 512-byte sectors.
    pub skip_sectors: u64,
    /// `--size`: data length in 512-byte sectors (`None` = to the end of the device).
    pub size_sectors: Option<u64>,
    /// `--sector-size` in bytes.
    pub sector_size: u32,
    /// `--iv-large-sectors`.
    pub iv_large_sectors: bool,
}

impl Default for PlainParams {
    fn default() -> Self {
        PlainParams {
            cipher: CipherSpec::parse(DEFAULT_CIPHER).expect("the default cipher parses"),
            key_bits: DEFAULT_KEY_BITS,
            hash: PassphraseHash::parse(DEFAULT_HASH),
            offset_sectors: 0,
            skip_sectors: 0,
            size_sectors: None,
            sector_size: 512,
            iv_large_sectors: false,
        }
    }
}

impl PlainParams {
    /// Volume key length in bytes.
    pub fn key_len(&self) -> Result<usize> {
        if self.key_bits == 0 || !self.key_bits.is_multiple_of(8) {
            return Err(ParamError::KeySizeNotBytes.into());
        }
        Ok((self.key_bits / 8) as usize)
    }

    /// Check the options as cryptsetup does (`--iv-large-sectors`, sector size, cipher and
    /// key size, alignment of `--skip`/`--size`). cryptsetup refuses `--iv-large-sectors`
    /// with 512-byte sectors before it looks at the cipher: a caller parsing `--cipher` from
    /// text checks that first ([`check_iv_large_sectors`]).
    pub fn check(&self) -> Result<()> {
        self.check_for(false)
    }

    /// [`Self::check`] for a mapping the kernel (dm-crypt) will encrypt (`kernel`): a cipher
    /// lukskit's own engine does not implement (Adiantum, ...) is left to the kernel, which
    /// refuses the table if it lacks it, as with cryptsetup.
    pub fn check_for(&self, kernel: bool) -> Result<()> {
        check_iv_large_sectors(self.iv_large_sectors, self.sector_size)?;
        let spec = &self.cipher;
        let ss = self.sector_size;
        if !(512..=4096).contains(&ss) || !ss.is_power_of_two() {
            return Err(ParamError::SectorSize.into());
        }
        match SectorCipher::check(spec, self.key_len()?, ss) {
            Err(lukskit_crypto::CryptoError::Unsupported(_)) if kernel => {}
            r => r?,
        }
        self.layout()?.validate()
    }

    /// The data layout these options describe.
    pub fn layout(&self) -> Result<DataLayout> {
        let bytes =
            |s: u64, what: PlainValue| s.checked_mul(512).ok_or(ParamError::Overflow { what });
        Ok(DataLayout {
            cipher: self.cipher.to_string(),
            offset: bytes(self.offset_sectors, PlainValue::Offset)?,
            size: match self.size_sectors {
                Some(s) => Some(bytes(s, PlainValue::Size)?),
                None => None,
            },
            sector_size: self.sector_size,
            iv_offset: self.skip_sectors,
            iv_large_sectors: self.iv_large_sectors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cipher lukskit's engine lacks (SM4; the kernel has it) passes the check of a kernel
    /// mapping (dm-crypt decides) but not of a userspace one; other errors stay errors.
    /// Adiantum, which mode-test maps, is in the engine now and passes both.
    #[test]
    fn kernel_mappings_leave_unknown_ciphers_to_the_kernel() {
        let adiantum = PlainParams {
            cipher: CipherSpec::parse("xchacha12,aes-adiantum-plain64").unwrap(),
            ..PlainParams::default()
        };
        adiantum.check().unwrap();
        let p = PlainParams {
            cipher: CipherSpec::parse("sm4-xts-plain64").unwrap(),
            ..PlainParams::default()
        };
        assert!(p.check().is_err());
        p.check_for(true).unwrap();
        let bad_key = PlainParams {
            cipher: CipherSpec::parse("aes-xts-plain64").unwrap(),
            key_bits: 200,
            ..PlainParams::default()
        };
        assert!(bad_key.check_for(true).is_err());
        let bad_sector = PlainParams {
            sector_size: 1000,
            ..p.clone()
        };
        assert!(bad_sector.check_for(true).is_err());
    }

    fn hx(k: &SecretBuf) -> String {
        hex::encode(k.as_bytes())
    }

    /// Expected keys from cryptsetup's tests/password-hash-test, where they are checked
    /// against the key the kernel received (`dmsetup table --showkeys`).
    #[test]
    fn cryptsetup_password_hash_vectors() {
        let cases: &[(&str, usize, &[u8], &str)] = &[
            (
                "ripemd160",
                32,
                b"xxx",
                "aeb26d1f69eb6dddfb9381eed4d7299f091e99aa5d3ff06866d4ce9f620f7aca",
            ),
            ("ripemd160", 16, b"xxx", "aeb26d1f69eb6dddfb9381eed4d7299f"),
            (
                "sha1",
                32,
                b"xxx",
                "b60d121b438a380c343d5ec3c2037564b82ffef30b1e0a6ad9af7a73aa91c197",
            ),
            ("sha1", 16, b"xxx", "b60d121b438a380c343d5ec3c2037564"),
            (
                "sha256",
                32,
                b"xxx",
                "cd2eb0837c9b4c962c22d2ff8b5441b7b45805887f051d39bf133b583baf6860",
            ),
            ("sha256", 16, b"xxx", "cd2eb0837c9b4c962c22d2ff8b5441b7"),
            (
                "sha256",
                32,
                b"xxx\n",
                "042aea10a0f14f2d391373599be69d53a75dde9951fc3d3cd10b6100aa7a9f24",
            ),
            (
                "ripemd160",
                32,
                b"xxx\n",
                "625ce2a8dbdf08f1de400dba7ab9fab246f2a55ad6136e6cafd6703732dab8cf",
            ),
            (
                "sha256:20",
                32,
                b"xxx",
                "cd2eb0837c9b4c962c22d2ff8b5441b7b4580588000000000000000000000000",
            ),
            (
                "sha256:32",
                32,
                b"xxx",
                "cd2eb0837c9b4c962c22d2ff8b5441b7b45805887f051d39bf133b583baf6860",
            ),
            (
                "plain:2",
                32,
                b"xxxxxxxx",
                "7878000000000000000000000000000000000000000000000000000000000000",
            ),
            (
                "sha256",
                16,
                b"0123456789abcdef",
                "9f9f5111f7b27a781f1f1ddde5ebc2dd",
            ),
            ("sha256", 16, b"0123", "1be2e452b46d7a0d9656bbb1f768e824"),
            (
                "sha1",
                32,
                b"0123456789abcdef",
                "fe5567e8d769550852182cdf69d74bb16dff8e295e4b6077d6d3fc73e7fe33b0",
            ),
            (
                "sha224",
                32,
                b"0123456789abcdef",
                "7330215f6741fd2bacbd3658681a70f65e2e90a02887989018974ce83775a568",
            ),
            (
                "sha256",
                32,
                b"0123456789abcdef",
                "9f9f5111f7b27a781f1f1ddde5ebc2dd2b796bfc7365c9c28b548e564176929f",
            ),
            (
                "sha384",
                32,
                b"0123456789abcdef",
                "fc6304023487cb6f85ac80e47817760c6b153c02da46c6429649e963b031e525",
            ),
            (
                "sha512",
                32,
                b"0123456789abcdef",
                "1c043fbe4bca7c7920dae536c680fd44c15d71ec12cd82a2a9491b0043b57f4d",
            ),
            (
                "ripemd160",
                32,
                b"0123456789abcdef",
                "edf4e38018cd71dd489b9c1e54b32054eb42dfad9fdcc22d629d756391a24982",
            ),
            (
                "whirlpool",
                32,
                b"0123456789abcdef",
                "b21fc274d47d79ba45f94d67077f0846f75a7acc1a4dc560eacca300179cc142",
            ),
        ];
        for (hash, len, pass, want) in cases {
            let k = key_from_secret(Some(&PassphraseHash::parse(hash)), pass, *len)
                .unwrap_or_else(|e| panic!("{hash}: {e}"));
            assert_eq!(hx(&k), *want, "{hash} {len}");
        }
        // `--hash plain` (no hash at all): copied, zero-padded.
        let k = key_from_secret(Some(&PassphraseHash::parse("plain")), b"xxxxxxxx", 32).unwrap();
        assert_eq!(
            hx(&k),
            "7878787878787878000000000000000000000000000000000000000000000000"
        );
        // Key files: used directly (80-byte file, 64-byte key).
        let file = b"0123456789abcdef\n\x01\x00\x03\xff\xff\r\xff\xff\n\r 2352j3rkjhadcfasc823rqaw7e1 3dq sdq3d 2dkjqw3h2=====";
        let k = key_from_secret(None, &file[..64], 64).unwrap();
        assert_eq!(hx(&k), "303132333435363738396162636465660a010003ffff0dffff0a0d20323335326a33726b6a686164636661736338323372716177376531203364712073647133");
        // stdin `-d -` with sha256 and -l 14 / offset 2 (hash applies to what was read).
        let k = key_from_secret(Some(&PassphraseHash::parse("sha256")), &file[..14], 16).unwrap();
        assert_eq!(hx(&k), "a82c9227cc54c7475620ce85ba1fca1e");
        let k = key_from_secret(Some(&PassphraseHash::parse("sha256")), &file[2..16], 16).unwrap();
        assert_eq!(hx(&k), "7df3f4a41a33805596be85c781cac3b4");
        let k = key_from_secret(Some(&PassphraseHash::parse("sha256")), &file[40..80], 16).unwrap();
        assert_eq!(hx(&k), "ebbe65a178e886ddbb778e0a5538db72");
        let k = key_from_secret(Some(&PassphraseHash::parse("sha256")), file, 16).unwrap();
        assert_eq!(hx(&k), "f3b827c8a6f159ad8c8ed5bd5ab3f8c5");
        let k =
            key_from_secret(Some(&PassphraseHash::parse("sha256:14")), &file[..14], 16).unwrap();
        assert_eq!(hx(&k), "a82c9227cc54c7475620ce85ba1f0000");
    }

    #[test]
    fn hash_spec_errors() {
        for bad in [
            "sha256:",
            "sha256:xx",
            "plain:9",
            "sha256:33",
            "nohash",
            "sha256:-1",
        ] {
            assert!(
                key_from_secret(Some(&PassphraseHash::parse(bad)), b"xxxxxxxx", 32).is_err(),
                "{bad} accepted"
            );
        }
        assert!(key_from_secret(None, b"x", 0).is_err());
    }

    #[test]
    fn params_checks() {
        let p = PlainParams::default();
        assert_eq!(p.cipher.to_string(), "aes-cbc-essiv:sha256");
        assert_eq!(p.hash.as_str(), "ripemd160");
        p.check().unwrap();
        let l = p.layout().unwrap();
        assert_eq!((l.offset, l.iv_offset, l.sector_size), (0, 0, 512));
        let mut q = p.clone();
        q.iv_large_sectors = true;
        assert!(q.check().is_err());
        q.sector_size = 4096;
        q.cipher = CipherSpec::parse("aes-xts-plain64").unwrap();
        q.key_bits = 512;
        q.skip_sectors = 8;
        q.offset_sectors = 3;
        q.check().unwrap();
        let l = q.layout().unwrap();
        assert_eq!((l.offset, l.iv_offset, l.iv_large_sectors), (1536, 8, true));
        q.skip_sectors = 3;
        assert!(q.check().is_err(), "skip not aligned to 4096-byte sectors");
        q.skip_sectors = 8;
        q.size_sectors = Some(9);
        assert!(q.check().is_err(), "size not aligned");
        q.size_sectors = Some(16);
        q.check().unwrap();
        q.key_bits = 100;
        assert!(q.check().is_err());
        q.key_bits = 256;
        q.cipher = CipherSpec::parse("aes-xts-plain64").unwrap();
        q.check().unwrap();
        q.key_bits = 8;
        assert!(q.check().is_err());
        assert!(CipherSpec::parse("foo(").is_err());
    }
}
