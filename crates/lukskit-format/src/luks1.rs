//! The LUKS1 partition header (`phdr`), its eight keyslots and its layout rules.
//!
//! The on-disk structure is cryptsetup's `struct luks_phdr` (1024 bytes, big-endian integers):
//!
//! | offset | length | field |
//! |---|---|---|
//! | 0 | 6 | magic `LUKS\xba\xbe` |
//! | 6 | 2 | version (1) |
//! | 8 | 32 | cipher name, NUL padded |
//! | 40 | 32 | cipher mode, NUL padded |
//! | 72 | 32 | hash spec, NUL padded |
//! | 104 | 4 | payload offset (512-byte sectors) |
//! | 108 | 4 | key bytes |
//! | 112 | 20 | master-key digest |
//! | 132 | 32 | master-key digest salt |
//! | 164 | 4 | master-key digest iterations |
//! | 168 | 40 | UUID, NUL padded |
//! | 208 + 48·i | 48 | keyslot i: state, iterations, salt\[32\], key material offset, stripes |
//! | 592 | 432 | padding (cryptsetup writes zeroes) |
//!
//! What is checked where mirrors cryptsetup 2.6 (`lib/luks1/keymanage.c`):
//!
//! * [`Luks1Header::parse`]: magic, version, string fields (cryptsetup forces a NUL into the
//!   last byte of each string field; so do we), keyslot state words.
//! * [`Luks1Header::validate`]: what `LUKS_read_phdr` checks before anything uses the header
//!   (`crypt_load`, and therefore `luksDump`, `isLuks`, `open`, …): the hash is usable
//!   (`crypt_hmac_size(hash) >= 20`), `LUKS_check_keyslots`, a nonzero key size, and that the
//!   device the header was read from holds all keyslot material (`LUKS_check_device_size`).
//! * [`Luks1Header::check_data_device_size`]: the activation-time check that the payload
//!   offset lies inside the data device (`device_block_adjust`).
//! * [`Luks1Header::repair`]: `cryptsetup repair` (`_keyslot_repair`).

use crate::detect::LUKS_MAGIC;
use crate::error::{Luks1Error, Luks1Field, Luks1KeyslotProblem, Luks1RepairNote, NotLuks};
use crate::io::Storage;
use crate::{FormatError, Result, SECTOR_SIZE};
use lukskit_crypto::hash::HashAlg;

/// Size of the phdr as cryptsetup reads and writes it (`sizeof(struct luks_phdr)`, including
/// 432 bytes of zero padding).
pub const PHDR_SIZE: usize = 1024;
/// Number of bytes of the phdr that carry fields (everything before the padding).
pub const PHDR_FIELDS_SIZE: usize = 592;
/// Number of keyslots in a LUKS1 header.
pub const NUM_KEYSLOTS: usize = 8;
/// Anti-forensic stripes per keyslot; cryptsetup requires exactly this value.
pub const STRIPES: u32 = 4000;
/// Keyslot state word of an active keyslot.
pub const KEY_ENABLED: u32 = 0x00AC_71F3;
/// Keyslot state word of an inactive keyslot.
pub const KEY_DISABLED: u32 = 0x0000_DEAD;
/// Length of the master-key digest (PBKDF2 output, truncated to this length whatever the hash).
pub const DIGEST_SIZE: usize = 20;
/// Length of the master-key digest salt and of each keyslot salt.
pub const SALT_SIZE: usize = 32;
/// Length of the cipher-name field (at most 31 characters plus NUL).
pub const CIPHER_NAME_LEN: usize = 32;
/// Length of the cipher-mode field (at most 31 characters plus NUL).
pub const CIPHER_MODE_LEN: usize = 32;
/// Length of the hash-spec field (at most 31 characters plus NUL).
pub const HASH_SPEC_LEN: usize = 32;
/// Length of the UUID field (at most 39 characters plus NUL; a UUID string has 36).
pub const UUID_LEN: usize = 40;
/// Keyslot material alignment in sectors (`LUKS_ALIGN_KEYSLOTS` = 4096 bytes); keyslot 0 of a
/// new header starts here.
pub const ALIGN_KEYSLOTS_SECTORS: u32 = 8;
/// Largest key size this implementation accepts, in bytes: 32768 bits, the limit cryptsetup
/// documents for `LUKS_MAX_KEYSLOT_SIZE` (16 MiB of key material per keyslot). cryptsetup
/// itself does not reject larger values when loading; this bound keeps allocations sane.
pub const MAX_KEY_BYTES: u32 = 4096;

const OFF_VERSION: usize = 6;
const OFF_CIPHER_NAME: usize = 8;
const OFF_CIPHER_MODE: usize = 40;
const OFF_HASH_SPEC: usize = 72;
const OFF_PAYLOAD: usize = 104;
const OFF_KEY_BYTES: usize = 108;
const OFF_MK_DIGEST: usize = 112;
const OFF_MK_SALT: usize = 132;
const OFF_MK_ITER: usize = 164;
const OFF_UUID: usize = 168;
const OFF_KEYSLOTS: usize = 208;
const KEYSLOT_SIZE: usize = 48;

/// One of the eight LUKS1 keyslots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Luks1Keyslot {
    /// Whether the slot holds a key ([`KEY_ENABLED`]) or not ([`KEY_DISABLED`] or an unknown
    /// state word).
    pub active: bool,
    /// The state word when it is neither [`KEY_ENABLED`] nor [`KEY_DISABLED`]
    /// (`active` is then false). cryptsetup loads such a header, dumps the slot as `DISABLED`,
    /// never tries it when unlocking and refuses to fill or kill it (`CRYPT_SLOT_INVALID`);
    /// the word is written back unchanged.
    pub invalid_state: Option<u32>,
    /// PBKDF2 iterations for the passphrase (0 in a disabled slot written by cryptsetup).
    pub iterations: u32,
    /// PBKDF2 salt for the passphrase (zero in a disabled slot written by cryptsetup).
    pub salt: [u8; SALT_SIZE],
    /// Start of the key material, in 512-byte sectors from the start of the header device.
    pub key_material_offset: u32,
    /// Anti-forensic stripes (always [`STRIPES`] in a valid header).
    pub stripes: u32,
}

impl Luks1Keyslot {
    /// A disabled keyslot whose material starts at `key_material_offset` sectors.
    pub fn disabled(key_material_offset: u32) -> Self {
        Luks1Keyslot {
            active: false,
            invalid_state: None,
            iterations: 0,
            salt: [0; SALT_SIZE],
            key_material_offset,
            stripes: STRIPES,
        }
    }
}

/// A parsed LUKS1 phdr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Luks1Header {
    /// Cipher name, e.g. `aes`.
    pub cipher_name: String,
    /// Cipher mode, e.g. `xts-plain64` or `cbc-essiv:sha256`.
    pub cipher_mode: String,
    /// Hash used for PBKDF2, the AF splitter and the digest, as stored (cryptsetup lower-cases
    /// it when creating a header but keeps the stored case when reading).
    pub hash_spec: String,
    /// Start of the encrypted payload in 512-byte sectors; 0 for a detached header.
    pub payload_offset: u32,
    /// Volume (master) key length in bytes.
    pub key_bytes: u32,
    /// `PBKDF2(hash, volume_key, mk_digest_salt, mk_digest_iterations, 20)`.
    pub mk_digest: [u8; DIGEST_SIZE],
    /// Salt of the master-key digest.
    pub mk_digest_salt: [u8; SALT_SIZE],
    /// Iterations of the master-key digest.
    pub mk_digest_iterations: u32,
    /// UUID string as stored (normally 36 characters, lower case).
    pub uuid: String,
    /// The eight keyslots.
    pub keyslots: [Luks1Keyslot; NUM_KEYSLOTS],
}

/// Messages and outcome of [`Luks1Header::repair`].
#[derive(Debug)]
pub struct Luks1RepairReport {
    /// The messages cryptsetup prints on its error stream during the repair, in order
    /// (e.g. `Keyslot 3: offset repaired (3847 -> 776).`). cryptsetup additionally prints
    /// `Repairing keyslots.` (verbose) before fixing slots and `No known problems detected for
    /// LUKS header.` (verbose) when nothing needed repair.
    pub messages: Vec<Luks1RepairNote>,
    /// `Ok(true)` if the header was changed and must be written back, `Ok(false)` if nothing
    /// needed repair, or the error that made the repair fail (the header may then be partly
    /// modified and must not be written).
    pub result: Result<bool>,
}

fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

fn array<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[off..off + N]);
    a
}

/// Read a NUL-padded string field the way cryptsetup does: the last byte is forced to NUL
/// (so at most `len - 1` characters), and the value ends at the first NUL.
fn c_string(b: &[u8], off: usize, len: usize, field: Luks1Field) -> Result<String> {
    let bytes = &b[off..off + len - 1];
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    String::from_utf8(bytes[..end].to_vec()).map_err(|_| Luks1Error::NotUtf8 { field }.into())
}

/// Write a string field like `strncpy(field, s, len - 1)` into a zeroed buffer.
fn put_string(b: &mut [u8], off: usize, len: usize, s: &str) {
    let src = s.as_bytes();
    let n = src.len().min(len - 1);
    b[off..off + n].copy_from_slice(&src[..n]);
}

fn round_up(v: u64, align: u64) -> u64 {
    if align == 0 {
        v
    } else {
        v.div_ceil(align) * align
    }
}

fn sat_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Whether `s` is a UUID string libuuid's `uuid_parse` accepts (36 characters, hyphens at
/// 8, 13, 18 and 23, hex digits elsewhere).
fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

impl Luks1Header {
    /// Parse a phdr from `bytes` (at least [`PHDR_FIELDS_SIZE`] bytes; normally [`PHDR_SIZE`];
    /// the padding is ignored).
    ///
    /// Checks the magic, version 1, the string fields (each must be UTF-8 up to its NUL; as in
    /// cryptsetup the last byte of each field is treated as NUL, truncating an unterminated
    /// value). A keyslot state word that is neither [`KEY_ENABLED`] nor [`KEY_DISABLED`] is
    /// kept in [`Luks1Keyslot::invalid_state`]: cryptsetup loads such a header, shows the slot
    /// as `DISABLED` and refuses to use, fill or kill it (`CRYPT_SLOT_INVALID`).
    ///
    /// The layout is not checked here; call [`validate`](Self::validate) before using the header.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        if bytes.len() < LUKS_MAGIC.len() || bytes[..LUKS_MAGIC.len()] != LUKS_MAGIC {
            return Err(NotLuks::NoMagic.into());
        }
        if bytes.len() < PHDR_FIELDS_SIZE {
            return Err(Luks1Error::Truncated {
                len: bytes.len(),
                need: PHDR_FIELDS_SIZE,
            }
            .into());
        }
        let version = be16(bytes, OFF_VERSION);
        if version != 1 {
            return Err(Luks1Error::UnsupportedVersion { version }.into());
        }
        let keyslots = try_array(|i| {
            let o = OFF_KEYSLOTS + i * KEYSLOT_SIZE;
            let state = be32(bytes, o);
            let invalid_state = match state {
                KEY_ENABLED | KEY_DISABLED => None,
                other => Some(other),
            };
            Ok(Luks1Keyslot {
                active: state == KEY_ENABLED,
                invalid_state,
                iterations: be32(bytes, o + 4),
                salt: array(bytes, o + 8),
                key_material_offset: be32(bytes, o + 40),
                stripes: be32(bytes, o + 44),
            })
        })?;
        Ok(Luks1Header {
            cipher_name: c_string(
                bytes,
                OFF_CIPHER_NAME,
                CIPHER_NAME_LEN,
                Luks1Field::CipherName,
            )?,
            cipher_mode: c_string(
                bytes,
                OFF_CIPHER_MODE,
                CIPHER_MODE_LEN,
                Luks1Field::CipherMode,
            )?,
            hash_spec: c_string(bytes, OFF_HASH_SPEC, HASH_SPEC_LEN, Luks1Field::HashSpec)?,
            payload_offset: be32(bytes, OFF_PAYLOAD),
            key_bytes: be32(bytes, OFF_KEY_BYTES),
            mk_digest: array(bytes, OFF_MK_DIGEST),
            mk_digest_salt: array(bytes, OFF_MK_SALT),
            mk_digest_iterations: be32(bytes, OFF_MK_ITER),
            uuid: c_string(bytes, OFF_UUID, UUID_LEN, Luks1Field::Uuid)?,
            keyslots,
        })
    }

    /// Read the phdr from offset 0 of `storage` and [`parse`](Self::parse) it. A device shorter
    /// than [`PHDR_SIZE`] is reported as not LUKS (cryptsetup fails the read the same way).
    pub fn read(storage: &dyn Storage) -> Result<Self> {
        let mut buf = [0u8; PHDR_SIZE];
        match storage.read_exact_at(&mut buf, 0) {
            Ok(()) => Self::parse(&buf),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(NotLuks::TooSmall.into())
            }
            Err(e) => Err(FormatError::io("Cannot read LUKS header", e)),
        }
    }

    /// Serialise to exactly [`PHDR_SIZE`] bytes as `LUKS_write_phdr` writes them: big-endian
    /// integers, strings truncated to their field length minus one and NUL padded, padding zero.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; PHDR_SIZE];
        b[..LUKS_MAGIC.len()].copy_from_slice(&LUKS_MAGIC);
        b[OFF_VERSION..OFF_VERSION + 2].copy_from_slice(&1u16.to_be_bytes());
        put_string(&mut b, OFF_CIPHER_NAME, CIPHER_NAME_LEN, &self.cipher_name);
        put_string(&mut b, OFF_CIPHER_MODE, CIPHER_MODE_LEN, &self.cipher_mode);
        put_string(&mut b, OFF_HASH_SPEC, HASH_SPEC_LEN, &self.hash_spec);
        put32(&mut b, OFF_PAYLOAD, self.payload_offset);
        put32(&mut b, OFF_KEY_BYTES, self.key_bytes);
        b[OFF_MK_DIGEST..OFF_MK_DIGEST + DIGEST_SIZE].copy_from_slice(&self.mk_digest);
        b[OFF_MK_SALT..OFF_MK_SALT + SALT_SIZE].copy_from_slice(&self.mk_digest_salt);
        put32(&mut b, OFF_MK_ITER, self.mk_digest_iterations);
        put_string(&mut b, OFF_UUID, UUID_LEN, &self.uuid);
        for (i, ks) in self.keyslots.iter().enumerate() {
            let o = OFF_KEYSLOTS + i * KEYSLOT_SIZE;
            let state = match (ks.invalid_state, ks.active) {
                (Some(word), false) => word,
                (_, true) => KEY_ENABLED,
                (None, false) => KEY_DISABLED,
            };
            put32(&mut b, o, state);
            put32(&mut b, o + 4, ks.iterations);
            b[o + 8..o + 8 + SALT_SIZE].copy_from_slice(&ks.salt);
            put32(&mut b, o + 40, ks.key_material_offset);
            put32(&mut b, o + 44, ks.stripes);
        }
        b
    }

    /// The checks cryptsetup's `LUKS_read_phdr` makes before a header is used at all (so
    /// `luksDump`, `isLuks`, `open --test-passphrase`, `luksAddKey`, … all refuse a header
    /// that fails them), in cryptsetup's order:
    ///
    /// 1. the hash is usable with an HMAC size of at least 20 bytes
    ///    (`Requested LUKS hash X is not supported.`),
    /// 2. `LUKS_check_keyslots` ([`check_keyslots`](Self::check_keyslots)),
    /// 3. a nonzero key size (and at most [`MAX_KEY_BYTES`], a bound of this implementation),
    /// 4. when `device_size` (bytes) is given: the device the header was read from — the data
    ///    device, or the detached header file — holds the key material of every keyslot
    ///    (`Device is too small. (LUKS1 requires at least N bytes.)`).
    ///
    /// The payload offset is deliberately *not* compared with `device_size`: cryptsetup loads,
    /// dumps and test-unlocks headers whose payload lies beyond the device (e.g. a
    /// `luksHeaderBackup` file); only activation checks it, see
    /// [`check_data_device_size`](Self::check_data_device_size).
    pub fn validate(&self, device_size: Option<u64>) -> Result<()> {
        self.check_hash()?;
        self.check_keyslots()?;
        if self.key_bytes == 0 {
            return Err(Luks1Error::KeySizeZero.into());
        }
        if self.key_bytes > MAX_KEY_BYTES {
            return Err(Luks1Error::KeySizeTooLarge {
                key_bytes: self.key_bytes,
                max: MAX_KEY_BYTES,
            }
            .into());
        }
        if let Some(size) = device_size {
            let need = self.keyslots_end_bytes();
            // cryptsetup compares whole sectors; `need` is a multiple of the sector size, so
            // comparing bytes gives the same answer.
            if need > size {
                return Err(Luks1Error::DeviceTooSmall { need }.into());
            }
        }
        Ok(())
    }

    /// The hash check of `_check_and_convert_hdr`: the hash must be known and its digest
    /// (HMAC) size at least [`DIGEST_SIZE`] bytes. Names are matched case-insensitively, as
    /// cryptsetup's backend does. Hashes cryptsetup's crypto backend knows but lukskit does not
    /// implement (e.g. `sha3-256`, `blake2b-512`, `sm3`) are reported as unsupported.
    pub fn check_hash(&self) -> Result<()> {
        // The kernel-style whirlpool aliases (`wp256`, `wp384`, `wp512`) are not hash names
        // cryptsetup's crypto backend accepts for an HMAC; `rmd160` is.
        let kernel_alias = self.hash_spec.to_ascii_lowercase().starts_with("wp");
        match HashAlg::from_name(&self.hash_spec) {
            Ok(h) if !kernel_alias && h.digest_size() >= DIGEST_SIZE => Ok(()),
            _ => Err(Luks1Error::UnsupportedHash {
                hash: self.hash_spec.clone(),
            }
            .into()),
        }
    }

    /// cryptsetup's `LUKS_check_keyslots`, applied to every slot whether active or not:
    ///
    /// * stripes must be exactly [`STRIPES`];
    /// * key material must start after the phdr (offset·512 ≥ [`PHDR_SIZE`]);
    /// * unless the payload offset is 0 (detached header), the key material must start and end
    ///   at or before the payload offset;
    /// * no two keyslots' material may overlap (slots sorted by offset, stable, as cryptsetup's
    ///   insertion sort; the earlier one is reported).
    ///
    /// The message is cryptsetup's `LUKS keyslot N is invalid.` with the reason (cryptsetup's
    /// debug message) in parentheses. Arithmetic is 64-bit, where cryptsetup uses 32-bit
    /// sector arithmetic that can wrap for offsets near 2^32 sectors.
    pub fn check_keyslots(&self) -> Result<()> {
        let secs = u64::from(Self::keyslot_material_sectors(self.key_bytes));
        let payload = u64::from(self.payload_offset);
        let invalid = |slot: usize, problem: Luks1KeyslotProblem| {
            Err(Luks1Error::Keyslot { slot, problem }.into())
        };
        for (i, ks) in self.keyslots.iter().enumerate() {
            let off = u64::from(ks.key_material_offset);
            if ks.stripes != STRIPES {
                return invalid(
                    i,
                    Luks1KeyslotProblem::Stripes {
                        stripes: ks.stripes,
                    },
                );
            }
            if off * SECTOR_SIZE < PHDR_SIZE as u64 {
                return invalid(i, Luks1KeyslotProblem::InsideHeader { offset: off });
            }
            if payload == 0 {
                continue;
            }
            if payload <= off {
                return invalid(
                    i,
                    Luks1KeyslotProblem::StartBeyondData {
                        offset: off,
                        payload,
                    },
                );
            }
            if payload < off + secs {
                return invalid(
                    i,
                    Luks1KeyslotProblem::EndBeyondData {
                        offset: off,
                        end: off + secs,
                        payload,
                    },
                );
            }
        }
        let mut sorted: [usize; NUM_KEYSLOTS] = std::array::from_fn(|i| i);
        sorted.sort_by_key(|&i| self.keyslots[i].key_material_offset);
        for w in sorted.windows(2) {
            let (prev, next) = (w[0], w[1]);
            let prev_end = u64::from(self.keyslots[prev].key_material_offset) + secs;
            if u64::from(self.keyslots[next].key_material_offset) < prev_end {
                return invalid(prev, Luks1KeyslotProblem::Overlaps { other: next });
            }
        }
        Ok(())
    }

    /// The activation-time check of the data device (`device_block_adjust`): the payload
    /// offset must lie strictly inside the data device of `data_device_size` bytes, otherwise
    /// `Requested offset is beyond real size of device.` cryptsetup does not make this check
    /// for `luksDump` or `open --test-passphrase`. (The cryptsetup CLI additionally refuses to
    /// open a regular-file container with `LUKS file container X is too small for activation,
    /// there is no remaining space for data.` and a payload offset below 8 sectors without a
    /// detached header with `Reduced data offset is allowed only for detached LUKS header.`)
    pub fn check_data_device_size(&self, data_device_size: u64) -> Result<()> {
        if u64::from(self.payload_offset) >= data_device_size / SECTOR_SIZE {
            return Err(Luks1Error::OffsetBeyondDevice.into());
        }
        Ok(())
    }

    /// Number of 512-byte sectors of key material for a key of `key_bytes`
    /// (`ceil(key_bytes * 4000 / 512)`, cryptsetup's `AF_split_sectors`), saturating at
    /// `u32::MAX` for absurd key sizes.
    pub fn keyslot_material_sectors(key_bytes: u32) -> u32 {
        sat_u32((u64::from(key_bytes) * u64::from(STRIPES)).div_ceil(SECTOR_SIZE))
    }

    /// Byte offset and length of keyslot `slot`'s key material (`LUKS_keyslot_area`).
    ///
    /// # Panics
    /// If `slot >= NUM_KEYSLOTS`.
    pub fn keyslot_area(&self, slot: usize) -> (u64, u64) {
        (
            u64::from(self.keyslots[slot].key_material_offset) * SECTOR_SIZE,
            u64::from(Self::keyslot_material_sectors(self.key_bytes)) * SECTOR_SIZE,
        )
    }

    /// Geometry for a new header, as `LUKS_generate_phdr` computes it.
    ///
    /// Keyslot 0 starts at sector 8; each next slot starts at the end of the previous one
    /// rounded up to 8 sectors (4 KiB). The payload offset is:
    /// * detached header (`detached`): `offset_sectors.unwrap_or(0)` (cryptsetup uses
    ///   `--offset`, else `--align-payload` directly as the data offset; pass it here);
    /// * otherwise `offset_sectors` if given and nonzero, else the end of the keyslot area
    ///   (rounded to 8 sectors) rounded up to `align_sectors` (no rounding if 0; cryptsetup's
    ///   default alignment is 2048 sectors = 1 MiB; the topology alignment offset is not
    ///   added).
    ///
    /// The result is not checked: an explicit offset inside the keyslot area is returned as
    /// given (see [`layout_checked`](Self::layout_checked)). Values saturate at `u32::MAX`.
    pub fn layout(
        key_bytes: u32,
        align_sectors: u32,
        offset_sectors: Option<u32>,
        detached: bool,
    ) -> ([u32; NUM_KEYSLOTS], u32) {
        let (offsets, end) = Self::keyslot_offsets(key_bytes);
        let payload = if detached {
            offset_sectors.unwrap_or(0)
        } else {
            match offset_sectors {
                Some(o) if o != 0 => o,
                _ => sat_u32(round_up(end, u64::from(align_sectors))),
            }
        };
        (offsets, payload)
    }

    /// [`layout`](Self::layout), failing as `LUKS_generate_phdr` does when the payload offset is
    /// nonzero but inside the keyslot area (`Data offset for LUKS header must be either 0 or
    /// higher than header size.`), or when the key size is 0 or above [`MAX_KEY_BYTES`].
    pub fn layout_checked(
        key_bytes: u32,
        align_sectors: u32,
        offset_sectors: Option<u32>,
        detached: bool,
    ) -> Result<([u32; NUM_KEYSLOTS], u32)> {
        if key_bytes == 0 || key_bytes > MAX_KEY_BYTES {
            return Err(Luks1Error::InvalidKeySize { key_bytes }.into());
        }
        let (offsets, payload) = Self::layout(key_bytes, align_sectors, offset_sectors, detached);
        let (_, end) = Self::keyslot_offsets(key_bytes);
        if payload != 0 && u64::from(payload) < end {
            return Err(Luks1Error::DataOffsetInsideHeader.into());
        }
        Ok((offsets, payload))
    }

    /// Keyslot offsets of a fresh header and the end of the keyslot area (rounded up to
    /// [`ALIGN_KEYSLOTS_SECTORS`]), in sectors.
    fn keyslot_offsets(key_bytes: u32) -> ([u32; NUM_KEYSLOTS], u64) {
        let secs = u64::from(Self::keyslot_material_sectors(key_bytes));
        let align = u64::from(ALIGN_KEYSLOTS_SECTORS);
        let mut cur = align;
        let mut offsets = [0u32; NUM_KEYSLOTS];
        for o in offsets.iter_mut() {
            *o = sat_u32(cur);
            cur = round_up(cur + secs, align);
        }
        (offsets, cur)
    }

    /// End of the last keyslot's key material in bytes (`LUKS_device_sectors` · 512): the
    /// highest key material offset plus one keyslot's material. `luksHeaderBackup` copies this
    /// many bytes (then pads to the page size); the header device must be at least this large.
    pub fn keyslots_end_bytes(&self) -> u64 {
        let max_off = self
            .keyslots
            .iter()
            .map(|k| u64::from(k.key_material_offset))
            .max()
            .unwrap_or(0);
        (max_off + u64::from(Self::keyslot_material_sectors(self.key_bytes))) * SECTOR_SIZE
    }

    /// A new header with all keyslots disabled at `keyslot_offsets` (iterations 0, zero salt,
    /// [`STRIPES`] stripes), as `LUKS_generate_phdr` builds it: the hash spec and the UUID are
    /// lower-cased (cryptsetup writes `uuid_unparse` output, which is lower case); strings
    /// longer than their field are truncated when serialised.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cipher_name: &str,
        cipher_mode: &str,
        hash_spec: &str,
        key_bytes: u32,
        payload_offset: u32,
        keyslot_offsets: [u32; NUM_KEYSLOTS],
        mk_digest: [u8; DIGEST_SIZE],
        mk_digest_salt: [u8; SALT_SIZE],
        mk_digest_iterations: u32,
        uuid: &str,
    ) -> Self {
        Luks1Header {
            cipher_name: cipher_name.to_owned(),
            cipher_mode: cipher_mode.to_owned(),
            hash_spec: hash_spec.to_ascii_lowercase(),
            payload_offset,
            key_bytes,
            mk_digest,
            mk_digest_salt,
            mk_digest_iterations,
            uuid: uuid.to_ascii_lowercase(),
            keyslots: keyslot_offsets.map(Luks1Keyslot::disabled),
        }
    }

    /// `cryptsetup repair` for LUKS1: the repair branch of `_check_and_convert_hdr` followed by
    /// `_keyslot_repair`. Call it on a header that [`parse`](Self::parse) accepted.
    ///
    /// If the keyslots pass [`check_keyslots`](Self::check_keyslots) and the cipher mode does
    /// not start with `ecb-`, nothing is done (`Ok(false)`). Otherwise: the key size must be
    /// 16, 32 or 64 bytes and keyslot 0 must start at or after sector 8; an `ecb-…` mode is
    /// replaced by `ecb`; `check_cipher(name, mode, key_bytes)` must accept the cipher
    /// (cryptsetup test-decrypts one sector; its failure aborts silently); then every slot that
    /// is not active gets the offset and stripes of a freshly generated layout for the same
    /// payload offset and, if anything was wrong (or slot 6 carries an MS-DOS partition
    /// signature at phdr bytes 0x1fe/0x1ff), is disabled with salt and iterations cleared.
    /// The result must pass [`check_keyslots`](Self::check_keyslots) or the repair fails.
    ///
    /// The device-size check of `LUKS_read_phdr` is not part of the repair: call
    /// [`validate`](Self::validate) afterwards as cryptsetup does.
    pub fn repair(
        &mut self,
        check_cipher: &dyn Fn(&str, &str, u32) -> Result<()>,
    ) -> Luks1RepairReport {
        let mut messages = Vec::new();
        let result = self.repair_inner(check_cipher, &mut messages);
        Luks1RepairReport { messages, result }
    }

    fn repair_inner(
        &mut self,
        check_cipher: &dyn Fn(&str, &str, u32) -> Result<()>,
        msgs: &mut Vec<Luks1RepairNote>,
    ) -> Result<bool> {
        let problem = |e: FormatError| match e {
            FormatError::Luks1(l) => Ok(Luks1RepairNote::Problem(l)),
            other => Err(other),
        };
        if let Err(e) = self.check_hash() {
            if let FormatError::Luks1(l) = &e {
                msgs.push(Luks1RepairNote::Problem(l.clone()));
            }
            return Err(e);
        }
        let mut needs_repair = false;
        if let Err(e) = self.check_keyslots() {
            msgs.push(problem(e)?);
            needs_repair = true;
        }
        if self.cipher_mode.starts_with("ecb-") {
            msgs.push(Luks1RepairNote::InvalidCipherMode {
                mode: self.cipher_mode.clone(),
            });
            needs_repair = true;
        }
        if !needs_repair {
            return Ok(false);
        }
        let fail = |msgs: &mut Vec<Luks1RepairNote>, e: Luks1Error| {
            msgs.push(Luks1RepairNote::Problem(e.clone()));
            Err(e.into())
        };
        if ![16, 32, 64].contains(&self.key_bytes) {
            return fail(msgs, Luks1Error::RepairKeySize);
        }
        if self.keyslots[0].key_material_offset < ALIGN_KEYSLOTS_SECTORS {
            return fail(msgs, Luks1Error::RepairAlignment);
        }
        let mut need_write = false;
        if self.cipher_mode.starts_with("ecb-") {
            msgs.push(Luks1RepairNote::CipherModeRepaired {
                from: self.cipher_mode.clone(),
            });
            self.cipher_mode = "ecb".into();
            need_write = true;
        }
        check_cipher(&self.cipher_name, &self.cipher_mode, self.key_bytes)?;

        // LUKS_generate_phdr(data_offset = payload, no alignment): offsets, data-offset check,
        // hash check, UUID check.
        let (offsets, end) = Self::keyslot_offsets(self.key_bytes);
        if self.payload_offset != 0 && u64::from(self.payload_offset) < end {
            msgs.push(Luks1RepairNote::Problem(Luks1Error::DataOffsetInsideHeader));
            return fail(msgs, Luks1Error::RepairFailed);
        }
        if !is_uuid(&self.uuid) {
            msgs.push(Luks1RepairNote::Problem(Luks1Error::BadUuid));
            return fail(msgs, Luks1Error::RepairFailed);
        }

        // Partition-table signature: bytes 0x1fe/0x1ff of the phdr are bytes 6 and 7 of
        // keyslot 6's salt (keyslot 6 starts at 0x1f0, its salt at 0x1f8).
        const SIG: usize = 0x1fe - (OFF_KEYSLOTS + 6 * KEYSLOT_SIZE + 8);
        for (i, ks) in self.keyslots.iter_mut().enumerate() {
            if ks.active {
                continue;
            }
            let mut bad = false;
            if ks.key_material_offset != offsets[i] {
                msgs.push(Luks1RepairNote::OffsetRepaired {
                    slot: i,
                    from: ks.key_material_offset,
                    to: offsets[i],
                });
                ks.key_material_offset = offsets[i];
                bad = true;
            }
            if ks.stripes != STRIPES {
                msgs.push(Luks1RepairNote::StripesRepaired {
                    slot: i,
                    from: ks.stripes,
                });
                ks.stripes = STRIPES;
                bad = true;
            }
            if i == 6 && ks.salt[SIG] == 0x55 && ks.salt[SIG + 1] == 0xaa {
                msgs.push(Luks1RepairNote::BogusPartitionSignature { slot: i });
                bad = true;
            }
            if bad {
                msgs.push(Luks1RepairNote::SaltWiped { slot: i });
                ks.active = false;
                // cryptsetup writes the slot back as disabled, whatever its state word was.
                ks.invalid_state = None;
                ks.salt = [0; SALT_SIZE];
                ks.iterations = 0;
                need_write = true;
            }
        }
        if let Err(e) = self.check_keyslots() {
            msgs.push(problem(e)?);
            return fail(msgs, Luks1Error::RepairFailed);
        }
        Ok(need_write)
    }
}

/// Build an array from a fallible function of the index (`std::array::try_from_fn` is
/// unstable).
fn try_array<T, const N: usize>(mut f: impl FnMut(usize) -> Result<T>) -> Result<[T; N]> {
    let mut v = Vec::with_capacity(N);
    for i in 0..N {
        v.push(f(i)?);
    }
    Ok(v.try_into()
        .unwrap_or_else(|_| unreachable!("exactly N elements")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemStorage;

    /// A header laid out as in the reference table for a 256-bit key with slot 0 active.
    fn sample() -> Luks1Header {
        let (offs, payload) = Luks1Header::layout(32, 2048, None, false);
        let mut h = Luks1Header::new(
            "aes",
            "xts-plain64",
            "sha256",
            32,
            payload,
            offs,
            [0x11; 20],
            [0x22; 32],
            1000,
            "ee5b9743-bfe9-4bcc-9e83-d177ae4d591a",
        );
        h.keyslots[0].active = true;
        h.keyslots[0].iterations = 1234;
        h.keyslots[0].salt = [0x33; 32];
        h
    }

    #[test]
    fn material_sectors_follow_af_split_sectors() {
        // ceil(key_bytes * 4000 / 512): 16 → 125, 32 → 250, 64 → 500 (LUKS1 spec §2.4).
        assert_eq!(Luks1Header::keyslot_material_sectors(16), 125);
        assert_eq!(Luks1Header::keyslot_material_sectors(32), 250);
        assert_eq!(Luks1Header::keyslot_material_sectors(64), 500);
        assert_eq!(Luks1Header::keyslot_material_sectors(1), 8); // 4000/512 = 7.8
        assert_eq!(Luks1Header::keyslot_material_sectors(u32::MAX), u32::MAX);
    }

    #[test]
    fn field_offsets_follow_the_spec() {
        let b = sample().to_bytes();
        assert_eq!(b.len(), PHDR_SIZE);
        assert_eq!(&b[0..8], b"LUKS\xba\xbe\x00\x01");
        assert_eq!(&b[8..12], b"aes\0");
        assert_eq!(&b[40..52], b"xts-plain64\0");
        assert_eq!(&b[72..79], b"sha256\0");
        assert_eq!(&b[104..112], &[0, 0, 0x10, 0, 0, 0, 0, 32]);
        assert_eq!(&b[112..132], &[0x11; 20]);
        assert_eq!(&b[132..164], &[0x22; 32]);
        assert_eq!(&b[164..168], &1000u32.to_be_bytes());
        assert_eq!(&b[168..205], b"ee5b9743-bfe9-4bcc-9e83-d177ae4d591a\0");
        assert_eq!(&b[208..216], &[0, 0xac, 0x71, 0xf3, 0, 0, 0x04, 0xd2]);
        assert_eq!(&b[216..248], &[0x33; 32]);
        assert_eq!(&b[248..256], &[0, 0, 0, 8, 0, 0, 0x0f, 0xa0]);
        assert_eq!(&b[256..260], &[0, 0, 0xde, 0xad]);
        assert!(b[592..].iter().all(|&x| x == 0));
        assert_eq!(Luks1Header::parse(&b).unwrap(), sample());
    }

    #[test]
    fn unknown_keyslot_state_loads_as_invalid_and_round_trips() {
        // cryptsetup loads a header whose keyslot state word is neither ENABLED nor
        // DISABLED (it dumps the slot as DISABLED and never tries it).
        let b = sample().to_bytes();
        for word in [0u32, 0x0000_deae, 0xdead_beef] {
            let mut x = b.clone();
            x[208 + 48 * 3..208 + 48 * 3 + 4].copy_from_slice(&word.to_be_bytes());
            let h = Luks1Header::parse(&x).unwrap();
            assert!(!h.keyslots[3].active);
            assert_eq!(h.keyslots[3].invalid_state, Some(word));
            assert_eq!(h.to_bytes(), x);
        }
        let h = Luks1Header::parse(&b).unwrap();
        assert!(h.keyslots.iter().all(|k| k.invalid_state.is_none()));
    }

    #[test]
    fn parse_rejects_bad_magic_version_and_short_input() {
        let b = sample().to_bytes();
        let mut x = b.clone();
        x[5] = 0;
        assert!(matches!(
            Luks1Header::parse(&x),
            Err(FormatError::NotLuks(_))
        ));
        let mut x = b.clone();
        x[7] = 2;
        assert!(matches!(
            Luks1Header::parse(&x),
            Err(FormatError::Luks1(Luks1Error::UnsupportedVersion {
                version: 2
            }))
        ));
        assert!(Luks1Header::parse(&b[..591]).is_err());
        assert!(Luks1Header::parse(&b[..4]).is_err());
        let mut x = b.clone();
        x[8] = 0xff;
        assert!(Luks1Header::parse(&x).is_err());
    }

    #[test]
    fn strings_are_truncated_like_cryptsetup() {
        let mut h = sample();
        h.cipher_mode = "m".repeat(40);
        h.uuid = "u".repeat(45);
        let b = h.to_bytes();
        assert_eq!(b[71], 0);
        assert_eq!(b[207], 0);
        let p = Luks1Header::parse(&b).unwrap();
        assert_eq!(p.cipher_mode, "m".repeat(31));
        assert_eq!(p.uuid, "u".repeat(39));
    }

    #[test]
    fn validate_reports_each_keyslot_rule() {
        sample().validate(Some(4096 * 512)).unwrap();
        let check = |f: &dyn Fn(&mut Luks1Header), want: Luks1Error| {
            let mut h = sample();
            f(&mut h);
            match h.validate(None) {
                Err(FormatError::Luks1(e)) => assert_eq!(e, want),
                other => panic!("{other:?}"),
            }
        };
        let slot =
            |slot: usize, problem: Luks1KeyslotProblem| Luks1Error::Keyslot { slot, problem };
        check(
            &|h| h.keyslots[4].stripes = 3999,
            slot(4, Luks1KeyslotProblem::Stripes { stripes: 3999 }),
        );
        check(
            &|h| h.keyslots[2].key_material_offset = 1,
            slot(2, Luks1KeyslotProblem::InsideHeader { offset: 1 }),
        );
        check(
            &|h| h.keyslots[7].key_material_offset = 4096,
            slot(
                7,
                Luks1KeyslotProblem::StartBeyondData {
                    offset: 4096,
                    payload: 4096,
                },
            ),
        );
        check(
            &|h| h.keyslots[7].key_material_offset = 3847,
            slot(
                7,
                Luks1KeyslotProblem::EndBeyondData {
                    offset: 3847,
                    end: 4097,
                    payload: 4096,
                },
            ),
        );
        check(
            &|h| h.keyslots[5].key_material_offset = 1100,
            slot(4, Luks1KeyslotProblem::Overlaps { other: 5 }),
        );
        check(
            &|h| h.hash_spec = "md5".into(),
            Luks1Error::UnsupportedHash { hash: "md5".into() },
        );
        check(&|h| h.key_bytes = 0, Luks1Error::KeySizeZero);
        // A detached header (payload 0) skips the payload checks but not the others.
        let mut h = sample();
        h.payload_offset = 0;
        h.keyslots[7].key_material_offset = 100_000;
        h.validate(None).unwrap();
        assert!(matches!(
            h.validate(Some(100_000 * 512)),
            Err(FormatError::Luks1(Luks1Error::DeviceTooSmall {
                need: 51_328_000
            }))
        ));
        h.validate(Some(100_250 * 512)).unwrap();
    }

    #[test]
    fn data_device_check_is_strict() {
        let h = sample();
        assert!(h.check_data_device_size(4096 * 512).is_err());
        assert!(h.check_data_device_size(4097 * 512 - 1).is_err());
        h.check_data_device_size(4097 * 512).unwrap();
    }

    #[test]
    fn layout_variants() {
        // Explicit offset wins; 0 means "not given".
        assert_eq!(Luks1Header::layout(32, 2048, Some(5000), false).1, 5000);
        assert_eq!(Luks1Header::layout(32, 2048, Some(0), false).1, 4096);
        assert_eq!(Luks1Header::layout(32, 0, None, false).1, 2056);
        assert_eq!(Luks1Header::layout(32, 2048, None, true).1, 0);
        assert_eq!(Luks1Header::layout(32, 2048, Some(16), true).1, 16);
        assert!(Luks1Header::layout_checked(32, 2048, Some(16), true).is_err());
        assert!(Luks1Header::layout_checked(32, 2048, Some(2056), false).is_ok());
        assert!(Luks1Header::layout_checked(32, 2048, Some(2055), false).is_err());
        assert!(Luks1Header::layout_checked(0, 2048, None, false).is_err());
    }

    #[test]
    fn read_through_storage() {
        let mut dev = sample().to_bytes();
        dev.resize(4096 * 512, 0);
        let s = MemStorage::from_vec(dev);
        assert_eq!(Luks1Header::read(&s).unwrap(), sample());
        assert!(matches!(
            Luks1Header::read(&MemStorage::new(100)),
            Err(FormatError::NotLuks(_))
        ));
    }

    #[test]
    fn repair_fixes_disabled_slots_only() {
        let mut h = sample();
        h.keyslots[3].key_material_offset = 3847;
        h.keyslots[3].iterations = 5;
        h.keyslots[5].stripes = 1;
        let r = h.repair(&|_, _, _| Ok(()));
        assert!(matches!(r.result, Ok(true)), "{r:?}");
        assert_eq!(
            r.messages[1..],
            [
                Luks1RepairNote::OffsetRepaired {
                    slot: 3,
                    from: 3847,
                    to: 776
                },
                Luks1RepairNote::SaltWiped { slot: 3 },
                Luks1RepairNote::StripesRepaired { slot: 5, from: 1 },
                Luks1RepairNote::SaltWiped { slot: 5 },
            ]
        );
        assert_eq!(h, sample());
        // Nothing to do on a valid header.
        let r = h.repair(&|_, _, _| Ok(()));
        assert!(matches!(r.result, Ok(false)) && r.messages.is_empty());
        // ecb- modes are rewritten; a failing cipher check aborts.
        h.cipher_mode = "ecb-plain".into();
        let r = h
            .clone()
            .repair(&|_, _, _| Err(Luks1Error::RepairFailed.into()));
        assert!(r.result.is_err());
        let r = h.repair(&|_, m, _| {
            assert_eq!(m, "ecb");
            Ok(())
        });
        assert!(matches!(r.result, Ok(true)));
        assert_eq!(
            r.messages,
            [
                Luks1RepairNote::InvalidCipherMode {
                    mode: "ecb-plain".into()
                },
                Luks1RepairNote::CipherModeRepaired {
                    from: "ecb-plain".into()
                }
            ]
        );
        // Non-standard key size.
        let mut h = sample();
        h.key_bytes = 24;
        h.keyslots[1].stripes = 0;
        let r = h.repair(&|_, _, _| Ok(()));
        assert!(r.result.is_err());
        assert_eq!(
            r.messages.last().unwrap(),
            &Luks1RepairNote::Problem(Luks1Error::RepairKeySize)
        );
        // Partition signature in slot 6's salt.
        let mut h = sample();
        h.keyslots[6].salt[6] = 0x55;
        h.keyslots[6].salt[7] = 0xaa;
        h.keyslots[1].stripes = 0;
        let r = h.repair(&|_, _, _| Ok(()));
        assert!(matches!(r.result, Ok(true)));
        assert!(r
            .messages
            .contains(&Luks1RepairNote::BogusPartitionSignature { slot: 6 }));
        assert_eq!(h.keyslots[6].salt, [0; 32]);
        // The signature really is at phdr bytes 0x1fe/0x1ff.
        let mut s = sample();
        s.keyslots[6].salt[6] = 0x55;
        s.keyslots[6].salt[7] = 0xaa;
        assert_eq!(&s.to_bytes()[0x1fe..0x200], &[0x55, 0xaa]);
    }
}
