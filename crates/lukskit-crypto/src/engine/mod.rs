//! The dm-crypt sector engine: ciphers, chaining modes and IV generators with the Linux
//! kernel's exact semantics (drivers/md/dm-crypt.c, crypto/xts.c, crypto/lrw.c,
//! crypto/essiv.c), used both for data segments and for LUKS keyslot areas (512-byte
//! sectors, sector 0 at the area start).
//!
//! Supported: ciphers `aes` (128/192/256), `serpent`, `twofish`, `cast5`, `camellia`,
//! `kuznyechik`, `blowfish`, `des3_ede`,
//! `cipher_null`; modes `xts`, `cbc`, `ecb`, `ctr`, `lrw`; IV generators `plain`, `plain64`,
//! `plain64be`, `essiv:<hash>`, `benbi`, `null`, `eboiv`, `elephant` (BitLocker's diffuser),
//! `lmk` (loop-AES, with its seed as an extra key part), `tcw` (TrueCrypt ≤ 4, with its IV
//! seed and whitening as extra key parts); `keycount` > 1 (`aes:2-…`).
//!
//! Sector numbering follows dm-crypt: for each encryption unit of `sector_size` bytes,
//! `cc_sector` (in 512-byte units) selects the key (`cc_sector & (keycount − 1)`) and gives the
//! IV sector (`cc_sector`, or `cc_sector >> log2(sector_size / 512)` with `iv_large_sectors`);
//! then `cc_sector += sector_size / 512`.
//!
//! # Speed
//!
//! Buffers are processed in runs of up to 32 sectors: their IVs are generated together
//! (ESSIV encrypts all of them in one multi-block call), XTS encrypts all their tweaks in one
//! call, and CBC encryption runs the sectors' chains in lockstep (16 at a time). Nothing is
//! allocated and no system call is made per sector. Backends (chosen once per key, at run
//! time): VAES assembly for AES when the CPU has it (else RustCrypto `aes`, which uses AES-NI
//! or constant-time software), eight-lane AVX2 (else four-lane SSE2) Serpent, table-driven
//! Twofish.
//! [`SectorCipher::new_portable`] builds the same engine from portable Rust only. The
//! `*_parallel` / `*_with_threads` entry points spread large buffers over a rayon pool in
//! 64 KiB pieces, like dm-crypt's per-CPU workers.

mod adiantum;
#[cfg(target_arch = "x86_64")]
mod aes_x86;
mod cipher;
pub mod drivers;
mod elephant;
mod iv;
pub mod kernel_api;
mod lmk;
mod modes;
pub mod own_kernels;
mod serpent;
pub mod speed;
mod tcw;
mod twofish;

use self::cipher::{BlockCipher, CipherAlg};
use self::iv::IvKind;
use self::modes::{Mode, ModeKind, Scratch};
use crate::spec::CipherSpec;
use crate::{CryptoError, Result};
use rayon::prelude::*;
use std::fmt;
use std::sync::{Arc, Mutex};
use zeroize::Zeroize;

/// Smallest work unit of the parallel entry points (a multiple of every sector size).
const PAR_CHUNK: usize = 64 * 1024;

/// Sectors whose IVs (and XTS tweaks / CBC chains) are processed together: two rounds of
/// lanes, so that the IV (XTS tweak, ESSIV) encryption of a run of 512-byte sectors fills
/// the 32 blocks of the 512-bit ECB kernel.
const BATCH: usize = 2 * modes::MAX_LANES;

/// The largest dm-crypt IV of any mode (Adiantum's 32-byte tweak).
const MAX_IV: usize = adiantum::TWEAK_LEN;

/// One kernel transform: the chaining mode keyed with one subkey, plus its ESSIV cipher.
struct Transform {
    mode: Mode,
    /// `essiv(...)` instance cipher keyed with hash(subkey).
    essiv: Option<BlockCipher>,
}

/// Everything derived from a spec, key length and sector size, before keying.
struct Plan {
    alg: CipherAlg,
    kind: ModeKind,
    iv: IvKind,
    /// dm-crypt's `cc->iv_size` (0 when the mode takes no IV).
    iv_size: usize,
    keycount: usize,
    subkey_len: usize,
    /// dm-crypt's `key_extra_size`: the last bytes of the key that are not split into
    /// subkeys (the elephant key, `lmk`'s seed of loop-AES version 3), else 0.
    extra_len: usize,
    sector_shift: u32,
}

/// dm-crypt compatible sector encryption for one spec + key.
///
/// The key schedules are wiped when the value is dropped; `Debug` never shows key material.
pub struct SectorCipher {
    spec: String,
    sector_size: u32,
    sector_shift: u32,
    iv_large_sectors: bool,
    iv: IvKind,
    iv_size: usize,
    tfms: Box<[Transform]>,
    /// `lmk`'s seed (set when `iv` is [`IvKind::Lmk`]).
    lmk: Option<lmk::LmkSeed>,
    /// The Elephant diffuser of an `elephant` IV generator (boxed: rarely used, and its
    /// key schedule would make every engine larger).
    elephant: Option<Box<elephant::Elephant>>,
    /// `tcw`'s IV seed and whitening (set when `iv` is [`IvKind::Tcw`]).
    tcw: Option<tcw::Tcw>,
    /// Set when the kernel's crypto API does the work ([`SectorCipher::new_kernel`]); `tfms`
    /// is then empty.
    kernel: Option<Box<kernel_api::KernelSectors>>,
}

/// Which implementation does a [`SectorCipher`]'s work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// lukskit's own engine (this module).
    Lukskit,
    /// The kernel's crypto API over AF_ALG ([`kernel_api`]).
    Kernel,
}

static DATA_ENGINE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Choose the engine of data segments built with [`SectorCipher::new_data`] in this process
/// (the CLI's `--engine`; default [`EngineKind::Lukskit`]).
pub fn set_data_engine(kind: EngineKind) {
    DATA_ENGINE.store(
        kind == EngineKind::Kernel,
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// The engine chosen with [`set_data_engine`].
pub fn data_engine() -> EngineKind {
    if DATA_ENGINE.load(std::sync::atomic::Ordering::Relaxed) {
        EngineKind::Kernel
    } else {
        EngineKind::Lukskit
    }
}

impl fmt::Debug for SectorCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SectorCipher")
            .field("spec", &self.spec)
            .field("keycount", &self.tfms.len())
            .field("sector_size", &self.sector_size)
            .field("iv_large_sectors", &self.iv_large_sectors)
            .field("engine", &self.engine())
            .finish_non_exhaustive()
    }
}

impl SectorCipher {
    fn plan(spec: &CipherSpec, key_len: usize, sector_size: u32) -> Result<Plan> {
        if !(512..=4096).contains(&sector_size) || !sector_size.is_power_of_two() {
            return Err(CryptoError::InvalidInput(format!(
                "sector size {sector_size} (must be a power of two from 512 to 4096)"
            )));
        }
        let (alg, kind) = if spec.chainmode == "adiantum" {
            // `xchacha12,aes-adiantum-plain64` is the kernel's `adiantum(xchacha12,aes)`.
            let (stream, block) = spec.cipher.split_once(',').ok_or_else(|| {
                CryptoError::Unsupported(format!(
                    "adiantum needs '<stream cipher>,<block cipher>', not '{}'",
                    spec.cipher
                ))
            })?;
            (
                CipherAlg::from_name(block)?,
                ModeKind::Adiantum(adiantum::StreamKind::from_name(stream)?),
            )
        } else {
            (
                CipherAlg::from_name(&spec.cipher)?,
                ModeKind::from_name(&spec.chainmode)?,
            )
        };
        let keycount = spec.keycount as usize;
        if keycount == 0 || !keycount.is_power_of_two() {
            return Err(CryptoError::InvalidInput(format!(
                "key count {keycount} is not a power of two"
            )));
        }
        let mode_iv = kind.iv_size(alg);
        let iv = IvKind::resolve(
            spec.ivmode.as_deref(),
            spec.ivopts.as_deref(),
            alg,
            mode_iv,
            kind.block_size(alg),
        )?;
        let extra_len = match iv {
            // crypt_ctr_ivmode(): elephant keeps the second half of the key for itself.
            IvKind::Elephant => {
                let extra = key_len / 2;
                if !matches!(extra, 16 | 24) && extra != elephant::MAX_KEY {
                    return Err(CryptoError::InvalidKey(format!(
                        "elephant needs a 32, 48 or 64-byte key, got {key_len} bytes"
                    )));
                }
                extra
            }
            // dm-crypt's lmk: a key of keycount + 1 equal parts carries the IV seed last.
            IvKind::Lmk if !key_len.is_multiple_of(keycount) => key_len / (keycount + 1),
            // crypt_ctr_ivmode(): tcw's IV seed and whitening follow the cipher keys;
            // crypt_iv_tcw_ctr() wants more key than that.
            IvKind::Tcw => {
                let extra = mode_iv.max(8) + tcw::WHITENING_SIZE;
                if key_len <= extra {
                    return Err(CryptoError::InvalidKey(format!(
                        "tcw needs the cipher key, a {}-byte IV seed and {} whitening bytes, \
                         got {key_len} bytes",
                        mode_iv.max(8),
                        tcw::WHITENING_SIZE
                    )));
                }
                extra
            }
            _ => 0,
        };
        if !(key_len - extra_len).is_multiple_of(keycount)
            || (iv == IvKind::Lmk && extra_len > 0 && extra_len * (keycount + 1) != key_len)
        {
            return Err(CryptoError::InvalidKey(format!(
                "{key_len}-byte key cannot be split into {keycount} equal subkeys"
            )));
        }
        if iv == IvKind::Lmk && sector_size != 512 {
            return Err(CryptoError::InvalidInput(
                "lmk works on 512-byte sectors only".into(),
            ));
        }
        if iv == IvKind::Tcw && sector_size != 512 {
            // crypt_iv_tcw_ctr(): "Unsupported sector size for TCW".
            return Err(CryptoError::InvalidInput(
                "tcw works on 512-byte sectors only".into(),
            ));
        }
        let subkey_len = (key_len - extra_len) / keycount;
        kind.validate(alg, subkey_len)?;
        Ok(Plan {
            alg,
            kind,
            iv,
            // crypt_ctr_ivmode(): at least a 64-bit sector number must fit.
            iv_size: if mode_iv == 0 { 0 } else { mode_iv.max(8) },
            keycount,
            subkey_len,
            extra_len,
            sector_shift: sector_size.trailing_zeros() - 9,
        })
    }

    /// Validate spec + key length + sector size without building anything (e.g. aes-xts
    /// needs 32/48/64 bytes, the ESSIV hash must exist and fit the cipher, …).
    pub fn check(spec: &CipherSpec, key_len: usize, sector_size: u32) -> Result<()> {
        Self::plan(spec, key_len, sector_size).map(|_| ())
    }

    /// Build the engine. `key` is the whole dm-crypt key (for XTS: Key1 ‖ Key2), first split
    /// into `keycount` subkeys as dm-crypt does. `sector_size` is 512..=4096, a power of two;
    /// `iv_large_sectors` is dm-crypt's flag of that name.
    ///
    /// The fastest backend of the CPU is chosen (checked at run time).
    pub fn new(
        spec: &CipherSpec,
        key: &[u8],
        sector_size: u32,
        iv_large_sectors: bool,
    ) -> Result<Self> {
        Self::build(spec, key, sector_size, iv_large_sectors, true)
    }

    /// Like [`SectorCipher::new`], but using portable Rust code only: no assembly and no
    /// run-time selected SIMD (RustCrypto `aes` for AES, generic lanes for Serpent). The
    /// output is identical; this exists to compare backends and to test the code path that
    /// CPUs without VAES/AVX2 take.
    pub fn new_portable(
        spec: &CipherSpec,
        key: &[u8],
        sector_size: u32,
        iv_large_sectors: bool,
    ) -> Result<Self> {
        Self::build(spec, key, sector_size, iv_large_sectors, false)
    }

    /// Like [`SectorCipher::new`], but the kernel's crypto API (AF_ALG) does the chaining
    /// mode; the bytes are the same. Fails where the kernel lacks AF_ALG or the algorithm,
    /// and for IV generators this engine does not offer (see [`kernel_api`]).
    pub fn new_kernel(
        spec: &CipherSpec,
        key: &[u8],
        sector_size: u32,
        iv_large_sectors: bool,
    ) -> Result<Self> {
        let k = kernel_api::KernelSectors::new(spec, key, sector_size, iv_large_sectors)?;
        let plan = Self::plan(spec, key.len(), sector_size)?;
        Ok(SectorCipher {
            spec: spec.to_string(),
            sector_size,
            sector_shift: plan.sector_shift,
            iv_large_sectors,
            iv: plan.iv,
            iv_size: plan.iv_size,
            tfms: Box::new([]),
            lmk: None,
            elephant: None,
            tcw: None,
            kernel: Some(Box::new(k)),
        })
    }

    /// A data segment's engine: [`SectorCipher::new_kernel`] when [`data_engine`] is
    /// [`EngineKind::Kernel`], else [`SectorCipher::new`].
    pub fn new_data(
        spec: &CipherSpec,
        key: &[u8],
        sector_size: u32,
        iv_large_sectors: bool,
    ) -> Result<Self> {
        match data_engine() {
            EngineKind::Kernel => Self::new_kernel(spec, key, sector_size, iv_large_sectors),
            EngineKind::Lukskit => Self::new(spec, key, sector_size, iv_large_sectors),
        }
    }

    /// Which implementation does the work.
    pub fn engine(&self) -> EngineKind {
        if self.kernel.is_some() {
            EngineKind::Kernel
        } else {
            EngineKind::Lukskit
        }
    }

    /// The kernel algorithm name (`xts(aes)`) when the kernel engine does the work.
    pub fn kernel_name(&self) -> Option<&str> {
        self.kernel.as_ref().map(|k| k.name())
    }

    fn build(
        spec: &CipherSpec,
        key: &[u8],
        sector_size: u32,
        iv_large_sectors: bool,
        fast: bool,
    ) -> Result<Self> {
        let plan = Self::plan(spec, key.len(), sector_size)?;
        let mut tfms = Vec::with_capacity(plan.keycount);
        for i in 0..plan.keycount {
            let subkey = &key[i * plan.subkey_len..(i + 1) * plan.subkey_len];
            let mode = Mode::new(plan.kind, plan.alg, subkey, fast)?;
            let essiv = match plan.iv {
                IvKind::Essiv(h) => {
                    let salt = h.salt(subkey);
                    Some(BlockCipher::new(plan.alg, &salt, fast)?)
                }
                _ => None,
            };
            tfms.push(Transform { mode, essiv });
        }
        let elephant = match plan.iv {
            IvKind::Elephant => Some(Box::new(elephant::Elephant::new(
                &key[key.len() - plan.extra_len..],
                fast,
            )?)),
            _ => None,
        };
        Ok(SectorCipher {
            spec: spec.to_string(),
            sector_size,
            sector_shift: plan.sector_shift,
            iv_large_sectors,
            iv: plan.iv,
            iv_size: plan.iv_size,
            tfms: tfms.into_boxed_slice(),
            lmk: (plan.iv == IvKind::Lmk).then(|| {
                let at = plan.keycount * plan.subkey_len;
                lmk::LmkSeed::new((plan.extra_len > 0).then(|| &key[at..at + plan.extra_len]))
            }),
            elephant,
            tcw: (plan.iv == IvKind::Tcw)
                .then(|| tcw::Tcw::new(&key[key.len() - plan.extra_len..], plan.iv_size)),
            kernel: None,
        })
    }

    /// The encryption unit size in bytes.
    pub fn sector_size(&self) -> u32 {
        self.sector_size
    }

    /// Encrypt `data` in place. `data.len()` must be a multiple of the sector size. `sector`
    /// is dm-crypt's `cc_sector` of the first unit in 512-byte units (bio sector relative to
    /// the target start + iv_offset); it must be a multiple of `sector_size / 512`.
    pub fn encrypt(&self, data: &mut [u8], sector: u64) -> Result<()> {
        self.run(data, sector, true)
    }

    /// Decrypt `data` in place; same rules as [`SectorCipher::encrypt`].
    pub fn decrypt(&self, data: &mut [u8], sector: u64) -> Result<()> {
        self.run(data, sector, false)
    }

    /// Like [`SectorCipher::encrypt`], spreading large buffers over the threads of the current
    /// rayon pool (all cores unless called inside [`rayon::ThreadPool::install`]); the output
    /// is identical.
    pub fn encrypt_parallel(&self, data: &mut [u8], sector: u64) -> Result<()> {
        self.run_parallel(data, sector, true)
    }

    /// Like [`SectorCipher::decrypt`], spreading large buffers over the threads of the current
    /// rayon pool; the output is identical.
    pub fn decrypt_parallel(&self, data: &mut [u8], sector: u64) -> Result<()> {
        self.run_parallel(data, sector, false)
    }

    /// Like [`SectorCipher::encrypt_parallel`] with exactly `threads` worker threads (a
    /// rayon pool of that size, created on first use and kept); `threads` 0 means the current
    /// rayon pool (all cores), 1 means [`SectorCipher::encrypt`]. The output is identical.
    pub fn encrypt_with_threads(&self, data: &mut [u8], sector: u64, threads: usize) -> Result<()> {
        self.run_threads(data, sector, true, threads)
    }

    /// Like [`SectorCipher::decrypt_parallel`] with exactly `threads` worker threads; see
    /// [`SectorCipher::encrypt_with_threads`].
    pub fn decrypt_with_threads(&self, data: &mut [u8], sector: u64, threads: usize) -> Result<()> {
        self.run_threads(data, sector, false, threads)
    }

    fn run_threads(
        &self,
        data: &mut [u8],
        sector: u64,
        encrypt: bool,
        threads: usize,
    ) -> Result<()> {
        match threads {
            0 => self.run_parallel(data, sector, encrypt),
            1 => self.run(data, sector, encrypt),
            n => match pool(n) {
                Some(p) => p.install(|| self.run_parallel(data, sector, encrypt)),
                None => self.run(data, sector, encrypt),
            },
        }
    }

    fn validate(&self, len: usize, sector: u64) -> Result<()> {
        let ss = self.sector_size as usize;
        if !len.is_multiple_of(ss) {
            return Err(CryptoError::InvalidInput(format!(
                "buffer of {len} bytes is not a multiple of the {ss}-byte sector size"
            )));
        }
        let step = u64::from(self.sector_size / 512);
        if !sector.is_multiple_of(step) {
            return Err(CryptoError::InvalidInput(format!(
                "sector {sector} is not aligned to the {ss}-byte sector size"
            )));
        }
        Ok(())
    }

    fn run(&self, data: &mut [u8], sector: u64, encrypt: bool) -> Result<()> {
        self.validate(data.len(), sector)?;
        if let Some(k) = &self.kernel {
            return k.crypt(data, sector, encrypt);
        }
        let mut scratch = Scratch::new();
        self.crypt_units(data, sector, encrypt, &mut scratch);
        Ok(())
    }

    fn run_parallel(&self, data: &mut [u8], sector: u64, encrypt: bool) -> Result<()> {
        self.validate(data.len(), sector)?;
        if let Some(k) = &self.kernel {
            if data.len() <= PAR_CHUNK || rayon::current_num_threads() < 2 {
                return k.crypt(data, sector, encrypt);
            }
            let piece =
                (data.len() / (4 * rayon::current_num_threads()) / PAR_CHUNK).max(1) * PAR_CHUNK;
            return data
                .par_chunks_mut(piece)
                .enumerate()
                .try_for_each(|(i, chunk)| {
                    k.crypt(
                        chunk,
                        sector.wrapping_add(((i * piece) / 512) as u64),
                        encrypt,
                    )
                });
        }
        if data.len() <= PAR_CHUNK || rayon::current_num_threads() < 2 {
            let mut scratch = Scratch::new();
            self.crypt_units(data, sector, encrypt, &mut scratch);
            return Ok(());
        }
        // About four pieces per thread (work stealing evens out a busy core), each a multiple
        // of PAR_CHUNK and so of every sector size.
        let piece =
            (data.len() / (4 * rayon::current_num_threads()) / PAR_CHUNK).max(1) * PAR_CHUNK;
        data.par_chunks_mut(piece)
            .enumerate()
            .for_each(|(i, chunk)| {
                let mut scratch = Scratch::new();
                let start = sector.wrapping_add(((i * piece) / 512) as u64);
                self.crypt_units(chunk, start, encrypt, &mut scratch);
            });
        Ok(())
    }

    /// Process whole units; `data` and `sector` are already validated.
    fn crypt_units(&self, data: &mut [u8], sector: u64, encrypt: bool, scratch: &mut Scratch) {
        if self.tfms.len() == 1
            && !matches!(
                self.iv,
                IvKind::Eboiv | IvKind::Lmk | IvKind::Elephant | IvKind::Tcw
            )
        {
            self.crypt_batched(data, sector, encrypt, scratch);
            return;
        }
        // keycount > 1 (consecutive sectors use different keys) or EBOIV / elephant (the IV
        // needs the bulk mode itself): one unit at a time.
        let ss = self.sector_size as usize;
        let step = u64::from(self.sector_size / 512);
        let key_mask = (self.tfms.len() - 1) as u64;
        let mut iv = [0u8; MAX_IV];
        let mut cc_sector = sector;
        for unit in data.chunks_exact_mut(ss) {
            let tfm = &self.tfms[(cc_sector & key_mask) as usize];
            if let Some(seed) = &self.lmk {
                // The IV depends on the plaintext: from it before encrypting; after decrypting
                // with a zero IV, XORed into the first block (crypt_iv_lmk_gen/_post).
                let s = self.iv_sector(cc_sector);
                let mut v = if encrypt { seed.iv(unit, s) } else { [0u8; 16] };
                if encrypt {
                    tfm.mode.encrypt(&v, unit, scratch);
                } else {
                    tfm.mode.decrypt(&v, unit, scratch);
                    v = seed.iv(unit, s);
                    for (d, x) in unit[..16].iter_mut().zip(v) {
                        *d ^= x;
                    }
                }
                v.zeroize();
                cc_sector = cc_sector.wrapping_add(step);
                continue;
            }
            let iv = &mut iv[..self.iv_size];
            let iv_sector = self.iv_sector(cc_sector);
            if let Some(t) = &self.tcw {
                // crypt_iv_tcw_gen/_post: the whitening is on the ciphertext.
                t.iv(iv_sector, iv);
                if encrypt {
                    tfm.mode.encrypt(iv, unit, scratch);
                    t.whiten(unit, iv_sector);
                } else {
                    t.whiten(unit, iv_sector);
                    tfm.mode.decrypt(iv, unit, scratch);
                }
                cc_sector = cc_sector.wrapping_add(step);
                continue;
            }
            // crypt_iv_elephant(): the diffuser works on the sector's byte offset.
            let offset = iv_sector.wrapping_mul(u64::from(self.sector_size));
            self.generate_iv(tfm, iv_sector, iv, scratch);
            if encrypt {
                if let Some(e) = &self.elephant {
                    e.before_encrypt(unit, offset);
                }
                tfm.mode.encrypt(iv, unit, scratch);
            } else {
                tfm.mode.decrypt(iv, unit, scratch);
                if let Some(e) = &self.elephant {
                    e.after_decrypt(unit, offset);
                }
            }
            cc_sector = cc_sector.wrapping_add(step);
        }
        iv.zeroize();
    }

    /// The sector number that feeds the IV generator for `cc_sector`.
    #[inline]
    fn iv_sector(&self, cc_sector: u64) -> u64 {
        if self.iv_large_sectors {
            cc_sector >> self.sector_shift
        } else {
            cc_sector
        }
    }

    /// One key: runs of up to [`BATCH`] sectors share one IV-generation pass and one call of
    /// the mode's multi-sector code.
    fn crypt_batched(&self, data: &mut [u8], sector: u64, encrypt: bool, scratch: &mut Scratch) {
        let ss = self.sector_size as usize;
        let step = u64::from(self.sector_size / 512);
        let tfm = &self.tfms[0];
        let n_iv = self.iv_size;
        let mut ivs = [0u8; BATCH * MAX_IV];
        let mut cc_sector = sector;
        for run in data.chunks_mut(BATCH * ss) {
            let n = run.len() / ss;
            let ivs = &mut ivs[..n * n_iv];
            if n_iv == 16 && matches!(self.iv, IvKind::Plain64 | IvKind::Essiv(_)) {
                // The common case (aes-xts-plain64, aes-cbc-essiv): the IV is the IV sector
                // as a little-endian 128-bit number, written whole.
                for (k, iv) in ivs.chunks_exact_mut(16).enumerate() {
                    let s = self.iv_sector(cc_sector.wrapping_add(k as u64 * step));
                    iv.copy_from_slice(&u128::from(s).to_le_bytes());
                }
            } else if n_iv > 0 {
                ivs.fill(0);
                for (k, iv) in ivs.chunks_exact_mut(n_iv).enumerate() {
                    let s = cc_sector.wrapping_add(k as u64 * step);
                    iv::fill_plain(self.iv, iv, self.iv_sector(s), u64::from(self.sector_size));
                }
            }
            if let (IvKind::Essiv(_), Some(e)) = (self.iv, &tfm.essiv) {
                // crypto/essiv.c: each IV is encrypted with the salt-keyed bare cipher.
                e.ecb(ivs, true);
            }
            tfm.mode.crypt_sectors(ivs, run, ss, scratch, encrypt);
            cc_sector = cc_sector.wrapping_add(n as u64 * step);
        }
        ivs.zeroize();
    }

    fn generate_iv(&self, tfm: &Transform, iv_sector: u64, iv: &mut [u8], scratch: &mut Scratch) {
        if iv.is_empty() {
            return;
        }
        iv.fill(0);
        iv::fill_plain(self.iv, iv, iv_sector, u64::from(self.sector_size));
        match self.iv {
            IvKind::Essiv(_) => {
                // crypto/essiv.c: the IV is encrypted with the salt-keyed bare cipher.
                if let Some(e) = &tfm.essiv {
                    e.encrypt_block(iv);
                }
            }
            IvKind::Eboiv | IvKind::Elephant => {
                // crypt_iv_eboiv_gen(): encrypt one zero block with tfm 0, IV = byte offset.
                let mut block = [0u8; MAX_IV];
                let block = &mut block[..iv.len()];
                self.tfms[0].mode.encrypt(iv, block, scratch);
                iv.copy_from_slice(block);
                block.zeroize();
            }
            _ => {}
        }
    }
}

/// A rayon pool of exactly `n` threads, built on first use and kept for the process
/// lifetime (a handful of distinct sizes at most: benchmarks and `--threads` options).
fn pool(n: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = pools.iter().find(|(k, _)| *k == n) {
        return Some(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .ok()?,
    );
    pools.push((n, p.clone()));
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> CipherSpec {
        CipherSpec::parse(s).unwrap()
    }

    #[test]
    fn check_key_lengths() {
        let x = spec("aes-xts-plain64");
        for ok in [32, 48, 64] {
            assert!(SectorCipher::check(&x, ok, 512).is_ok(), "{ok}");
        }
        for bad in [0, 16, 24, 40, 63, 128] {
            assert!(SectorCipher::check(&x, bad, 512).is_err(), "{bad}");
        }
        assert!(SectorCipher::check(&x, 64, 1000).is_err());
        assert!(SectorCipher::check(&x, 64, 256).is_err());
        assert!(SectorCipher::check(&x, 64, 8192).is_err());
        assert!(SectorCipher::check(&spec("aes:2-xts-plain64"), 128, 512).is_ok());
        assert!(SectorCipher::check(&spec("aes:2-cbc-plain"), 33, 512).is_err());
        assert!(SectorCipher::check(&spec("aes-cbc-essiv:sha256"), 16, 512).is_ok());
        assert!(SectorCipher::check(&spec("aes-cbc-essiv:sha512"), 16, 512).is_err());
        assert!(SectorCipher::check(&spec("aes-cbc-essiv:nohash"), 16, 512).is_err());
        assert!(SectorCipher::check(&spec("aes-xts-essiv:wp256"), 32, 512).is_ok());
        assert!(SectorCipher::check(&spec("aes-lrw-benbi"), 32, 512).is_ok());
        assert!(SectorCipher::check(&spec("aes-ctr-eboiv"), 16, 512).is_err());
        // lmk (loop-AES) is supported; its tests are in engine::lmk.
        assert!(SectorCipher::check(&spec("aes-cbc-lmk"), 16, 512).is_ok());
        for ok in [32, 48, 64] {
            assert!(
                SectorCipher::check(&spec("aes-cbc-elephant"), ok, 512).is_ok(),
                "{ok}"
            );
        }
        for bad in [16, 24, 40, 128] {
            assert!(
                SectorCipher::check(&spec("aes-cbc-elephant"), bad, 512).is_err(),
                "{bad}"
            );
        }
        assert!(SectorCipher::check(&spec("aes-ecb"), 16, 512).is_ok());
        assert!(SectorCipher::check(&spec("aes-ecb-lmk"), 16, 512).is_ok());
        assert!(SectorCipher::check(&spec("cipher_null-ecb"), 0, 512).is_ok());
        assert!(SectorCipher::check(&spec("cipher_null-ecb"), 32, 512).is_ok());
        assert!(SectorCipher::check(&spec("cipher_null-cbc-plain"), 0, 512).is_err());
        assert!(SectorCipher::check(&spec("cast5-xts-plain64"), 32, 512).is_err());
        assert!(SectorCipher::check(&spec("blowfish-cbc-plain"), 16, 512).is_ok());
        assert!(SectorCipher::check(&spec("blowfish-cbc-plain"), 57, 512).is_err());
        assert!(SectorCipher::check(&spec("blowfish-xts-plain64"), 32, 512).is_err());
        assert!(SectorCipher::check(&spec("des3_ede-cbc-plain64"), 24, 512).is_ok());
        assert!(SectorCipher::check(&spec("des3_ede-cbc-plain64"), 16, 512).is_err());
        // tcw: cipher key ‖ IV seed (the IV size, at least 8) ‖ 16 whitening bytes, 512-byte
        // sectors only.
        assert!(SectorCipher::check(&spec("aes-cbc-tcw"), 64, 512).is_ok());
        assert!(SectorCipher::check(&spec("aes-cbc-tcw"), 48, 512).is_ok());
        assert!(SectorCipher::check(&spec("aes-cbc-tcw"), 32, 512).is_err());
        assert!(SectorCipher::check(&spec("aes-cbc-tcw"), 40, 512).is_err());
        assert!(SectorCipher::check(&spec("aes-cbc-tcw"), 64, 4096).is_err());
        assert!(SectorCipher::check(&spec("cast5-cbc-tcw"), 40, 512).is_ok());
        assert!(SectorCipher::check(&spec("des3_ede-cbc-tcw"), 48, 512).is_ok());
        assert!(SectorCipher::check(&spec("des3_ede-cbc-tcw"), 56, 512).is_err());
        assert!(SectorCipher::check(&spec("aes-ofb-plain"), 16, 512).is_err());
        assert!(SectorCipher::check(&spec("capi:xts(aes)-plain64"), 64, 4096).is_ok());
    }

    #[test]
    fn buffer_and_sector_validation() {
        let c = SectorCipher::new(&spec("aes-xts-plain64"), &[1u8; 32], 4096, false).unwrap();
        assert_eq!(c.sector_size(), 4096);
        let mut buf = vec![0u8; 4096];
        assert!(c.encrypt(&mut buf, 8).is_ok());
        assert!(c.encrypt(&mut buf, 9).is_err());
        assert!(c.encrypt(&mut buf[..512], 0).is_err());
        assert!(c.decrypt(&mut [], 0).is_ok());
    }

    #[test]
    fn debug_hides_key() {
        let key = [0xabu8; 32];
        let c = SectorCipher::new(&spec("aes-cbc-essiv:sha256"), &key[..16], 512, false).unwrap();
        let d = format!("{c:?}");
        assert!(d.contains("aes-cbc-essiv:sha256"));
        assert!(!d.to_lowercase().contains("abab"));
        assert!(!d.contains("171"));
    }

    #[test]
    fn cipher_null_is_identity() {
        let c = SectorCipher::new(&spec("null"), &[], 512, false).unwrap();
        let mut buf: Vec<u8> = (0..1024u32).map(|i| i as u8).collect();
        let orig = buf.clone();
        c.encrypt(&mut buf, 0).unwrap();
        assert_eq!(buf, orig);
    }

    #[test]
    fn adiantum_specs() {
        for name in ["xchacha12,aes", "xchacha20,aes"] {
            let s = spec(&format!("{name}-adiantum-plain64"));
            assert!(SectorCipher::check(&s, 32, 512).is_ok());
            assert!(SectorCipher::check(&s, 32, 4096).is_ok());
            for bad in [16, 48, 64] {
                assert!(SectorCipher::check(&s, bad, 512).is_err(), "{name} {bad}");
            }
        }
        assert!(SectorCipher::check(&spec("xchacha12,serpent-adiantum-plain64"), 32, 512).is_ok());
        assert!(SectorCipher::check(&spec("xchacha8,aes-adiantum-plain64"), 32, 512).is_err());
        assert!(SectorCipher::check(&spec("xchacha12,cast5-adiantum-plain64"), 32, 512).is_err());
        assert!(SectorCipher::check(&spec("aes-adiantum-plain64"), 32, 512).is_err());
        assert!(SectorCipher::check(&spec("xchacha12,aes-adiantum-eboiv"), 32, 512).is_err());
    }

    /// dm-crypt's IV for Adiantum is 32 bytes (`plain64`: the sector number in the first 8):
    /// every sector of a multi-sector buffer, serial or parallel, is the template applied to
    /// that sector alone.
    #[test]
    fn adiantum_sectors_use_32_byte_ivs() {
        let key: Vec<u8> = (0..32u8).collect();
        for ss in [512u32, 4096] {
            let s = spec("xchacha12,aes-adiantum-plain64");
            let c = SectorCipher::new(&s, &key, ss, false).unwrap();
            let a = adiantum::Adiantum::new(
                adiantum::StreamKind::XChaCha12,
                CipherAlg::Aes,
                &key,
                false,
            )
            .unwrap();
            let plain: Vec<u8> = (0..(PAR_CHUNK * 2) as u32).map(|i| (i * 7) as u8).collect();
            let start = 8u64 * 1000;
            let mut want = plain.clone();
            for (i, unit) in want.chunks_exact_mut(ss as usize).enumerate() {
                let mut iv = [0u8; 32];
                let sector = start + (i as u64) * u64::from(ss / 512);
                iv[..8].copy_from_slice(&sector.to_le_bytes());
                a.crypt(&iv, unit, true);
            }
            let mut got = plain.clone();
            c.encrypt(&mut got, start).unwrap();
            assert_eq!(got, want, "sector size {ss}");
            let mut par = plain.clone();
            c.encrypt_with_threads(&mut par, start, 2).unwrap();
            assert_eq!(par, want, "sector size {ss}, parallel");
            c.decrypt(&mut got, start).unwrap();
            assert_eq!(got, plain);
        }
    }

    #[test]
    fn send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SectorCipher>();
    }
}
