//! Choosing PBKDF parameters for a new keyslot from cryptsetup's options.

use crate::error::{ParamError, Result, VolumeError};
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::kdf::{self, Argon2Variant, Pbkdf};
use lukskit_format::VolumeType;

/// Default `--iter-time` in milliseconds (cryptsetup's compiled-in default).
pub const DEFAULT_ITER_TIME_MS: u32 = 2000;
/// Time spent on the volume-key digest PBKDF2 (cryptsetup `LUKS_MKD_ITERATIONS_MS`).
pub const DIGEST_ITER_TIME_MS: u32 = 125;

/// The PBKDF options of a command line (`--pbkdf`, `--hash`, `--iter-time`, …), unresolved.
#[derive(Debug, Clone, Default)]
pub struct PbkdfOptions {
    /// `--pbkdf`: `pbkdf2`, `argon2i` or `argon2id`.
    pub kind: Option<String>,
    /// `--hash` (PBKDF2 hash, also the AF hash and, for new volumes, the digest hash).
    pub hash: Option<String>,
    /// `--iter-time` in ms (0 or None = default).
    pub iter_time_ms: Option<u32>,
    /// `--pbkdf-force-iterations`: iterations (PBKDF2) or time cost (Argon2), no benchmark.
    pub force_iterations: Option<u32>,
    /// `--pbkdf-memory` in KiB (Argon2 maximum).
    pub max_memory_kib: Option<u32>,
    /// `--pbkdf-parallel` (Argon2 lanes and threads).
    pub parallel: Option<u32>,
    /// `--keyslot-cipher` (LUKS2 keyslot area encryption; default: the data cipher when
    /// usable for keyslots, else aes-xts-plain64).
    pub keyslot_cipher: Option<String>,
    /// `--keyslot-key-size` in bits.
    pub keyslot_key_size_bits: Option<u32>,
}

impl PbkdfOptions {
    /// For formatting a LUKS1 volume: when another PBKDF than PBKDF2 was asked for, the same
    /// options with PBKDF2 (cryptsetup's luksFormat warns "Requested PBKDF type is not
    /// supported for LUKS1." and goes on with PBKDF2); `None` when nothing changes.
    pub fn luks1_fallback(&self) -> Option<PbkdfOptions> {
        match self.kind.as_deref() {
            Some(k) if k != "pbkdf2" => Some(PbkdfOptions {
                kind: Some("pbkdf2".into()),
                ..self.clone()
            }),
            _ => None,
        }
    }

    /// The hash to use for PBKDF2, the AF splitter and new digests (default sha256).
    pub fn hash(&self) -> Result<HashAlg> {
        let name = self.hash.as_deref().unwrap_or("sha256");
        HashAlg::from_name(name).map_err(|_| VolumeError::HashUnsupported {
            hash: name.to_string(),
        })
    }

    /// Resolve to concrete KDF parameters for a key of `key_len` bytes, benchmarking as
    /// cryptsetup does unless iterations are forced.
    pub fn resolve(&self, kind: VolumeType, key_len: usize) -> Result<Pbkdf> {
        let hash = self.hash()?;
        let default = match kind {
            VolumeType::Luks1 => "pbkdf2",
            _ => "argon2id",
        };
        let name = self.kind.as_deref().unwrap_or(default);
        if kind == VolumeType::Luks1 && name != "pbkdf2" {
            // As cryptsetup's crypt_set_pbkdf_type for a LUKS1 device (luksAddKey and friends);
            // luksFormat falls back to PBKDF2 first (see `luks1_fallback`).
            return Err(ParamError::PbkdfForLuks1.into());
        }
        let iter_time = match self.iter_time_ms {
            None | Some(0) => DEFAULT_ITER_TIME_MS,
            Some(t) => t,
        };
        let pbkdf = match name {
            "pbkdf2" => {
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
            "argon2i" | "argon2id" => {
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
            other => {
                return Err(ParamError::UnknownPbkdf { name: other.into() }.into());
            }
        };
        pbkdf
            .check_create_limits()
            .map_err(ParamError::PbkdfLimits)?;
        Ok(pbkdf)
    }

    /// The explicit keyslot cipher and its key size in bytes, if `--keyslot-cipher` was given.
    pub fn keyslot_cipher(&self) -> Result<Option<(String, u32)>> {
        match (&self.keyslot_cipher, self.keyslot_key_size_bits) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(ParamError::KeyslotKeySizeNeedsCipher.into()),
            (Some(c), bits) => {
                let spec = lukskit_crypto::spec::CipherSpec::parse(c)?;
                let bytes = match bits {
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
        }
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
