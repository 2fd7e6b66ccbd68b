//! The PBKDF of a new keyslot: a typed request ([`PbkdfRequest`]) and cryptsetup's defaults
//! and benchmarks that turn it into concrete KDF parameters.

use crate::error::{ParamError, Result, VolumeError};
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::kdf::{self, Argon2Variant, Pbkdf};
use lukskit_format::VolumeType;

/// Default `--iter-time` in milliseconds (cryptsetup's compiled-in default).
pub const DEFAULT_ITER_TIME_MS: u32 = 2000;
/// Time spent on the volume-key digest PBKDF2 (cryptsetup `LUKS_MKD_ITERATIONS_MS`).
pub const DIGEST_ITER_TIME_MS: u32 = 125;

/// A password-based key derivation function cryptsetup offers for new keyslots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PbkdfKind {
    /// PBKDF2 (the only one LUKS1 has).
    Pbkdf2,
    /// Argon2i (LUKS2).
    Argon2i,
    /// Argon2id (LUKS2; cryptsetup's default there).
    Argon2id,
}

impl PbkdfKind {
    /// cryptsetup's name: `pbkdf2`, `argon2i`, `argon2id`.
    pub fn name(self) -> &'static str {
        match self {
            PbkdfKind::Pbkdf2 => "pbkdf2",
            PbkdfKind::Argon2i => "argon2i",
            PbkdfKind::Argon2id => "argon2id",
        }
    }

    /// The kind named `name` (as `--pbkdf` takes it), `None` for any other name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "pbkdf2" => Some(PbkdfKind::Pbkdf2),
            "argon2i" => Some(PbkdfKind::Argon2i),
            "argon2id" => Some(PbkdfKind::Argon2id),
            _ => None,
        }
    }

    /// cryptsetup's default for new keyslots of `kind` volumes.
    pub fn default_for(kind: VolumeType) -> Self {
        match kind {
            VolumeType::Luks1 => PbkdfKind::Pbkdf2,
            _ => PbkdfKind::Argon2id,
        }
    }
}

/// The hash asked for (`--hash`): parsed, or the name of one lukskit does not have. An
/// unsupported name is kept (not refused where it is parsed) because cryptsetup reports it
/// only once the device is open and the keyslot is about to be made; [`PbkdfRequest::hash`]
/// reports it then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashChoice {
    /// A hash lukskit implements.
    Known(HashAlg),
    /// A name no hash of lukskit has ([`VolumeError::HashUnsupported`] when used).
    Unsupported(String),
}

impl HashChoice {
    /// Parse a hash name (case-insensitive, as cryptsetup's crypto backend).
    pub fn parse(name: &str) -> Self {
        match HashAlg::from_name(name) {
            Ok(h) => HashChoice::Known(h),
            Err(_) => HashChoice::Unsupported(name.to_string()),
        }
    }

    /// The hash, or [`VolumeError::HashUnsupported`].
    pub fn get(&self) -> Result<HashAlg> {
        match self {
            HashChoice::Known(h) => Ok(*h),
            HashChoice::Unsupported(name) => {
                Err(VolumeError::HashUnsupported { hash: name.clone() })
            }
        }
    }
}

impl From<HashAlg> for HashChoice {
    fn from(h: HashAlg) -> Self {
        HashChoice::Known(h)
    }
}

/// The LUKS2 keyslot area encryption asked for (`--keyslot-cipher`, `--keyslot-key-size`).
/// The cipher stays text until the keyslot is written: cryptsetup checks it against its
/// crypto backend only then (after the device is open), and so does
/// [`PbkdfRequest::keyslot_cipher`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyslotCipherRequest {
    /// The cipher specification (`aes-xts-plain64`).
    pub cipher: String,
    /// The key size in bits (default: 512 for XTS, else 256).
    pub key_bits: Option<u32>,
}

/// How the keyslot a command makes derives its key from the passphrase: the typed form of
/// cryptsetup's `--pbkdf`, `--hash`, `--iter-time`, `--pbkdf-force-iterations`,
/// `--pbkdf-memory`, `--pbkdf-parallel` and `--keyslot-cipher`/`--keyslot-key-size`. Each
/// `None` is cryptsetup's default, applied by [`PbkdfRequest::resolve`] (and
/// [`PbkdfRequest::hash`], [`PbkdfRequest::digest_iterations`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PbkdfRequest {
    /// The PBKDF (default: PBKDF2 for LUKS1, Argon2id for LUKS2).
    pub kind: Option<PbkdfKind>,
    /// PBKDF2 hash, also the AF hash and, for new volumes, the digest hash (default sha256).
    pub hash: Option<HashChoice>,
    /// Benchmark target in ms (0 or None = [`DEFAULT_ITER_TIME_MS`]).
    pub iter_time_ms: Option<u32>,
    /// Iterations (PBKDF2) or time cost (Argon2), no benchmark.
    pub force_iterations: Option<u32>,
    /// Argon2 maximum memory in KiB.
    pub max_memory_kib: Option<u32>,
    /// Argon2 lanes and threads.
    pub parallel: Option<u32>,
    /// LUKS2 keyslot area encryption (default: the data cipher when usable for keyslots,
    /// else aes-xts-plain64).
    pub keyslot_cipher: Option<KeyslotCipherRequest>,
}

impl PbkdfRequest {
    /// For formatting a LUKS1 volume: when another PBKDF than PBKDF2 was asked for, the same
    /// request with PBKDF2 (cryptsetup's luksFormat warns "Requested PBKDF type is not
    /// supported for LUKS1." and goes on with PBKDF2); `None` when nothing changes.
    pub fn luks1_fallback(&self) -> Option<PbkdfRequest> {
        match self.kind {
            Some(k) if k != PbkdfKind::Pbkdf2 => Some(PbkdfRequest {
                kind: Some(PbkdfKind::Pbkdf2),
                ..self.clone()
            }),
            _ => None,
        }
    }

    /// The hash to use for PBKDF2, the AF splitter and new digests (default sha256).
    pub fn hash(&self) -> Result<HashAlg> {
        match &self.hash {
            Some(h) => h.get(),
            None => Ok(HashAlg::Sha256),
        }
    }

    /// Resolve to concrete KDF parameters for a key of `key_len` bytes, benchmarking as
    /// cryptsetup does unless iterations are forced.
    pub fn resolve(&self, kind: VolumeType, key_len: usize) -> Result<Pbkdf> {
        let hash = self.hash()?;
        let pbkdf_kind = self.kind.unwrap_or(PbkdfKind::default_for(kind));
        if kind == VolumeType::Luks1 && pbkdf_kind != PbkdfKind::Pbkdf2 {
            // As cryptsetup's crypt_set_pbkdf_type for a LUKS1 device (luksAddKey and friends);
            // luksFormat falls back to PBKDF2 first (see `luks1_fallback`).
            return Err(ParamError::PbkdfForLuks1.into());
        }
        let name = pbkdf_kind.name();
        let iter_time = match self.iter_time_ms {
            None | Some(0) => DEFAULT_ITER_TIME_MS,
            Some(t) => t,
        };
        let pbkdf = match pbkdf_kind {
            PbkdfKind::Pbkdf2 => {
                let iterations = match self.force_iterations {
                    Some(i) if i < kdf::PBKDF2_MIN_ITERATIONS => {
                        return Err(ParamError::IterationsTooLow {
                            pbkdf: "pbkdf2".into(),
                            min: kdf::PBKDF2_MIN_ITERATIONS,
                        }
                        .into())
                    }
                    Some(i) => i,
                    None => kdf::pbkdf2_iterations_for(hash, key_len, iter_time)?,
                };
                Pbkdf::Pbkdf2 { hash, iterations }
            }
            PbkdfKind::Argon2i | PbkdfKind::Argon2id => {
                let variant = Argon2Variant::from_name(name)?;
                let cap = kdf::default_argon2_memory_cap_kib();
                let max_memory = self
                    .max_memory_kib
                    .unwrap_or(kdf::ARGON2_DEFAULT_MEMORY_KIB)
                    .min(cap.max(kdf::ARGON2_MIN_MEMORY_KIB));
                let parallel = self
                    .parallel
                    .unwrap_or_else(kdf::default_argon2_parallel)
                    .min(kdf::ARGON2_MAX_PARALLEL);
                if max_memory < kdf::ARGON2_MIN_MEMORY_KIB {
                    return Err(ParamError::MemoryTooLow {
                        pbkdf: name.into(),
                        min_kib: kdf::ARGON2_MIN_MEMORY_KIB,
                    }
                    .into());
                }
                let (time, memory_kib) = match self.force_iterations {
                    Some(t) if t < kdf::ARGON2_MIN_TIME => {
                        return Err(ParamError::IterationsTooLow {
                            pbkdf: name.into(),
                            min: kdf::ARGON2_MIN_TIME,
                        }
                        .into())
                    }
                    Some(t) => (t, max_memory),
                    None => {
                        kdf::benchmark_argon2(variant, iter_time, max_memory, parallel, key_len)?
                    }
                };
                Pbkdf::Argon2 {
                    variant,
                    time,
                    memory_kib,
                    parallel,
                }
            }
        };
        pbkdf
            .check_create_limits()
            .map_err(ParamError::PbkdfLimits)?;
        Ok(pbkdf)
    }

    /// The explicit keyslot cipher and its key size in bytes, if one was asked for.
    pub fn keyslot_cipher(&self) -> Result<Option<(String, u32)>> {
        let Some(KeyslotCipherRequest {
            cipher: c,
            key_bits,
        }) = &self.keyslot_cipher
        else {
            return Ok(None);
        };
        let spec = lukskit_crypto::spec::CipherSpec::parse(c)?;
        let bytes = match *key_bits {
            Some(b) if b % 8 == 0 && b > 0 => b / 8,
            Some(_) => return Err(ParamError::KeySizeNotBytes.into()),
            None if spec.chainmode == "xts" => 64,
            None => 32,
        };
        lukskit_crypto::engine::SectorCipher::check(&spec, bytes as usize, 512)?;
        if spec.capi || spec.cipher == "cipher_null" {
            return Err(ParamError::KeyslotCipher { cipher: c.clone() }.into());
        }
        Ok(Some((spec.to_string(), bytes)))
    }

    /// Iterations for a new volume-key digest: benchmarked for 125 ms (at least 1000), or the
    /// minimum when iterations are forced (as cryptsetup does with `--pbkdf-force-iterations`).
    pub fn digest_iterations(&self, key_len: usize) -> Result<u32> {
        if self.force_iterations.is_some() {
            return Ok(kdf::PBKDF2_MIN_ITERATIONS);
        }
        Ok(
            kdf::pbkdf2_iterations_for(self.hash()?, key_len, DIGEST_ITER_TIME_MS)?
                .max(kdf::PBKDF2_MIN_ITERATIONS),
        )
    }
}
