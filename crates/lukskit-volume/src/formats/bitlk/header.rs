//! The typed BitLocker metadata, read as cryptsetup 2.6.1's `BITLK_read_sb`
//! (lib/bitlk/bitlk.c) reads it:
//!
//! * the volume header (boot sector): boot code, the `-FVE-FS-` signature at offset 3
//!   (`MSWIN4.1` for BitLocker To Go), the sector size at offset 11; at offset 160 (424 for To
//!   Go) the BitLocker GUID (normal / encrypt-on-write) and the three FVE metadata offsets;
//! * the first FVE metadata block: its 64-byte block header (signature, version 2, states,
//!   volume size) and the 48-byte metadata header (size, volume GUID, encryption method,
//!   creation time);
//! * the metadata entries after it, each `size, type, value type, version` then its value,
//!   VMK entries holding a nested list of properties (stretch key salt, AES-CCM encrypted
//!   key, name, …).
//!
//! Every length and offset read from the device is bounded before use (entries inside the
//! entries buffer, the buffer at most 64 KiB); what cryptsetup skips is skipped, what it
//! refuses is refused with its words.

use super::source::Source;

/// Offset of the GUID and metadata offsets in a BitLocker volume header.
const HEADER_METADATA_OFFSET: u64 = 160;
/// The same for BitLocker To Go.
const HEADER_METADATA_OFFSET_TOGO: u64 = 424;
/// The FVE metadata block header.
const FVE_BLOCK_HEADER_LEN: usize = 64;
/// The FVE metadata header after it.
const FVE_HEADER_LEN: usize = 48;
/// One FVE metadata area (what the dump shows and the mapping zeroes).
pub const FVE_METADATA_SIZE: u64 = 64 * 1024;
/// The header of every metadata entry (size, type, value type, version).
pub(super) const ENTRY_HEADER_LEN: usize = 8;
/// A VMK entry's own header after the entry header (GUID, modified time, unknown,
/// protection).
const VMK_HEADER_LEN: usize = 28;
/// AES-CCM nonce size.
pub(super) const NONCE_LEN: usize = 12;
/// AES-CCM tag size.
pub(super) const TAG_LEN: usize = 16;
/// The fixed part of an AES-CCM encrypted key entry (entry header, nonce, tag).
const ENCRYPTED_KEY_HEADER_LEN: usize = ENTRY_HEADER_LEN + NONCE_LEN + TAG_LEN;

/// Entry types (`BITLKFVEEntryType`).
pub(super) mod entry_type {
    pub const PROPERTY: u16 = 0x0000;
    pub const VMK: u16 = 0x0002;
    pub const FVEK: u16 = 0x0003;
    pub const STARTUP_KEY: u16 = 0x0006;
    pub const DESCRIPTION: u16 = 0x0007;
    pub const VOLUME_HEADER: u16 = 0x000f;
    pub const VOLUME_GUID: u16 = 0x0019;
}

/// Entry value types (`BITLKFVEEntryValue`).
pub(super) mod value_type {
    pub const KEY: u16 = 0x0001;
    pub const STRING: u16 = 0x0002;
    pub const STRETCH_KEY: u16 = 0x0003;
    pub const USE_KEY: u16 = 0x0004;
    pub const ENCRYPTED_KEY: u16 = 0x0005;
    pub const EXTERNAL_KEY: u16 = 0x0009;
    pub const RECOVERY_TIME: u16 = 0x0015;
    pub const GUID: u16 = 0x0017;
}

/// A GUID as stored (mixed-endian); `Display` gives cryptsetup's lower-case text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guid(pub [u8; 16]);

impl std::fmt::Display for Guid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-",
            b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9]
        )?;
        for x in &b[10..] {
            write!(f, "{x:02x}")?;
        }
        Ok(())
    }
}

/// The BitLocker GUID of the volume header: what kind of encryption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncryptionType {
    /// A normally encrypted volume.
    Normal,
    /// Encrypt-on-write (used space only, or still being encrypted).
    EncryptOnWrite,
    /// Neither GUID.
    Unknown,
}

impl EncryptionType {
    /// cryptsetup's word for it.
    pub fn name(self) -> &'static str {
        match self {
            EncryptionType::Normal => "normal",
            EncryptionType::EncryptOnWrite => "encrypt-on-write",
            EncryptionType::Unknown => "unknown",
        }
    }
}

const GUID_NORMAL: [u8; 16] = [
    0x3b, 0xd6, 0x67, 0x49, 0x29, 0x2e, 0xd8, 0x4a, 0x83, 0x99, 0xf6, 0xa3, 0x39, 0xe3, 0xd0, 0x01,
];
const GUID_EOW: [u8; 16] = [
    0x3b, 0x4d, 0xa8, 0x92, 0x80, 0xdd, 0x0e, 0x4d, 0x9e, 0x4e, 0xb1, 0xe3, 0x28, 0x4e, 0xae, 0xd8,
];

/// Whether `guid` is one of the BitLocker GUIDs of a volume header (normal or
/// encrypt-on-write).
pub fn is_bitlocker_guid(guid: &[u8; 16]) -> bool {
    *guid == GUID_NORMAL || *guid == GUID_EOW
}

/// The data cipher of the encryption method field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataCipher {
    /// cryptsetup's cipher mode (`cbc-elephant`, `cbc-eboiv`, `xts-plain64`).
    pub mode: &'static str,
    /// cryptsetup's key size in bits (the dm-crypt key: both halves for XTS and elephant).
    pub key_bits: u16,
}

impl DataCipher {
    /// The cipher of an encryption method, if cryptsetup knows it.
    fn from_method(method: u16) -> Option<Self> {
        let (mode, key_bits) = match method {
            0x8000 => ("cbc-elephant", 256),
            0x8001 => ("cbc-elephant", 512),
            0x8002 => ("cbc-eboiv", 128),
            0x8003 => ("cbc-eboiv", 256),
            0x8004 => ("xts-plain64", 256),
            0x8005 => ("xts-plain64", 512),
            _ => return None,
        };
        Some(DataCipher { mode, key_bits })
    }

    /// The cipher name (always `aes`).
    pub fn name(&self) -> &'static str {
        "aes"
    }

    /// The dm-crypt cipher spec (`aes-xts-plain64`).
    pub fn spec(&self) -> String {
        format!("aes-{}", self.mode)
    }
}

/// How a VMK is protected (`BITLKVMKProtection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// A clear key (a volume with BitLocker suspended or partly decrypted).
    ClearKey,
    /// TPM.
    Tpm,
    /// A startup key (a `.BEK` file).
    StartupKey,
    /// TPM and PIN.
    TpmPin,
    /// The 48-digit recovery password.
    RecoveryPassphrase,
    /// A password.
    Passphrase,
    /// A smart card.
    SmartCard,
    /// Anything else.
    Unknown,
}

impl Protection {
    fn from_raw(v: u16) -> Self {
        match v {
            0x0000 => Protection::ClearKey,
            0x0100 => Protection::Tpm,
            0x0200 => Protection::StartupKey,
            0x0500 => Protection::TpmPin,
            0x0800 => Protection::RecoveryPassphrase,
            0x1000 => Protection::SmartCard,
            0x2000 => Protection::Passphrase,
            _ => Protection::Unknown,
        }
    }

    /// cryptsetup's description.
    pub fn text(self) -> &'static str {
        match self {
            Protection::ClearKey => "VMK protected with clear key",
            Protection::Tpm => "VMK protected with TPM",
            Protection::StartupKey => "VMK protected with startup key",
            Protection::TpmPin => "VMK protected with TPM and PIN",
            Protection::Passphrase => "VMK protected with passphrase",
            Protection::RecoveryPassphrase => "VMK protected with recovery passphrase",
            Protection::SmartCard => "VMK protected with smart card",
            Protection::Unknown => "VMK with unknown protection",
        }
    }

    /// The protections cryptsetup can unlock (their VMK entries are parsed strictly).
    fn supported(self) -> bool {
        matches!(
            self,
            Protection::Passphrase | Protection::RecoveryPassphrase | Protection::StartupKey
        )
    }
}

/// An AES-CCM encrypted key: nonce, tag and the encrypted bytes.
#[derive(Debug, Clone)]
pub struct EncryptedKey {
    /// The nonce.
    pub nonce: [u8; NONCE_LEN],
    /// The tag.
    pub tag: [u8; TAG_LEN],
    /// The encrypted key data (its own 12-byte header, then the key).
    pub data: Vec<u8>,
}

/// One VMK entry.
#[derive(Debug, Clone)]
pub struct Vmk {
    /// Its GUID.
    pub guid: Guid,
    /// Its name (the first string property; `ExternalKey` for a startup key).
    pub name: Option<String>,
    /// How it is protected.
    pub protection: Protection,
    /// The stretch key's salt (zeros without one; the last one counts).
    pub salt: [u8; 16],
    /// The nonce of its encrypted key (the last encrypted-key property's, as cryptsetup).
    pub nonce: [u8; NONCE_LEN],
    /// The tag, likewise.
    pub tag: [u8; TAG_LEN],
    /// The encrypted key data of each encrypted-key property, in order (the first one is
    /// decrypted).
    pub keys: Vec<Vec<u8>>,
}

/// The parsed metadata of a BitLocker volume.
#[derive(Debug, Clone)]
pub struct Metadata {
    /// BitLocker To Go (FAT-looking volume header).
    pub togo: bool,
    /// The encryption sector size (512 or 4096).
    pub sector_size: u16,
    /// The kind of encryption of the volume header's GUID.
    pub encryption_type: EncryptionType,
    /// The three FVE metadata offsets (bytes).
    pub metadata_offsets: [u64; 3],
    /// Both encryption states are "normal" (fully encrypted, nothing in progress).
    pub state_normal: bool,
    /// The current and next state, as stored.
    pub states: (u16, u16),
    /// The volume size (bytes).
    pub volume_size: u64,
    /// The FVE metadata version (2).
    pub version: u16,
    /// The data cipher.
    pub cipher: DataCipher,
    /// The volume GUID.
    pub guid: Guid,
    /// Creation time, Unix seconds (cryptsetup's unsigned conversion of the FILETIME).
    pub creation_time: u64,
    /// The volume description (the first description entry).
    pub description: Option<String>,
    /// Where the encrypted original volume header is (bytes).
    pub volume_header_offset: u64,
    /// Its size (bytes).
    pub volume_header_size: u64,
    /// The VMKs, in metadata order.
    pub vmks: Vec<Vmk>,
    /// The encrypted FVEK (the first FVEK entry).
    pub fvek: Option<EncryptedKey>,
}

/// Why the metadata could not be loaded: cryptsetup's message, if it prints one (its
/// errors here, EINVAL, EIO or ENOTSUP, all give exit code 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// cryptsetup's `log_err` text, if any.
    pub message: Option<String>,
}

impl LoadError {
    fn silent() -> Self {
        LoadError { message: None }
    }

    fn say(m: impl Into<String>) -> Self {
        LoadError {
            message: Some(m.into()),
        }
    }
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

fn array<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut x = [0u8; N];
    x.copy_from_slice(&b[at..at + N]);
    x
}

/// January 1, 1970 as a FILETIME.
const EPOCH_AS_FILETIME: u64 = 116_444_736_000_000_000;

impl Metadata {
    /// Read and parse the metadata of the device `src` (`path` only names it in messages).
    pub fn read<S: Source + ?Sized>(src: &S, path: &str) -> Result<Self, LoadError> {
        let mut sig = [0u8; 13];
        if !src.read_at(&mut sig, 0) {
            return Err(LoadError::silent());
        }
        let (togo, sb_offset) = match &sig[3..11] {
            b"-FVE-FS-" => (false, HEADER_METADATA_OFFSET),
            b"MSWIN4.1" => (true, HEADER_METADATA_OFFSET_TOGO),
            _ => return Err(LoadError::silent()),
        };
        match &sig[..3] {
            b"\xeb\x52\x90" => {
                return Err(LoadError::say(
                    "BITLK version 1 is currently not supported.",
                ))
            }
            b"\xeb\x58\x90" => {}
            _ => {
                return Err(LoadError::say(
                    "Invalid or unknown boot signature for BITLK device.",
                ))
            }
        }
        let sector_size = match le16(&sig, 11) {
            0 => 512,
            s @ (512 | 4096) => s,
            s => return Err(LoadError::say(format!("Unsupported sector size {s}."))),
        };

        let mut sb = [0u8; 40];
        if !src.read_at(&mut sb, sb_offset) {
            return Err(LoadError::say(format!(
                "Failed to read BITLK header from {path}."
            )));
        }
        let encryption_type = match &sb[..16] {
            g if g == GUID_NORMAL => EncryptionType::Normal,
            g if g == GUID_EOW => EncryptionType::EncryptOnWrite,
            _ => EncryptionType::Unknown,
        };
        let metadata_offsets = [le64(&sb, 16), le64(&sb, 24), le64(&sb, 32)];

        let mut fve = [0u8; FVE_BLOCK_HEADER_LEN + FVE_HEADER_LEN];
        if !src.read_at(&mut fve, metadata_offsets[0])
            || &fve[..8] != b"-FVE-FS-"
            || le16(&fve, 10) != 2
        {
            return Err(LoadError::say(format!(
                "Failed to read BITLK FVE metadata from {path}."
            )));
        }
        let version = le16(&fve, 10);
        let states = (le16(&fve, 12), le16(&fve, 14));
        const STATE_NORMAL: u16 = 0x0004;
        let state_normal = states == (STATE_NORMAL, STATE_NORMAL);
        let volume_size = le64(&fve, 16);
        // The metadata header at 64: size, version, header size, size copy, GUID, next
        // nonce, encryption method, unknown, creation time.
        let h = FVE_BLOCK_HEADER_LEN;
        let cipher = DataCipher::from_method(le16(&fve, h + 36))
            .ok_or_else(|| LoadError::say("Unknown or unsupported encryption type."))?;
        let guid = Guid(array(&fve, h + 16));
        let creation_time = le64(&fve, h + 40).wrapping_sub(EPOCH_AS_FILETIME) / 10_000_000;
        let metadata_size = le32(&fve, h) as usize;
        if metadata_size < FVE_HEADER_LEN + 4 || metadata_size as u64 > FVE_METADATA_SIZE {
            return Err(LoadError::silent());
        }
        let mut entries = vec![0u8; metadata_size - FVE_HEADER_LEN];
        let entries_at =
            metadata_offsets[0].checked_add((FVE_BLOCK_HEADER_LEN + FVE_HEADER_LEN) as u64);
        if !entries_at.is_some_and(|at| src.read_at(&mut entries, at)) {
            return Err(LoadError::say(format!(
                "Failed to read BITLK metadata entries from {path}."
            )));
        }

        let mut md = Metadata {
            togo,
            sector_size,
            encryption_type,
            metadata_offsets,
            state_normal,
            states,
            volume_size,
            version,
            cipher,
            guid,
            creation_time,
            description: None,
            volume_header_offset: 0,
            volume_header_size: 0,
            vmks: Vec::new(),
            fvek: None,
        };
        md.parse_entries(&entries)?;
        Ok(md)
    }

    /// The top-level entries (the loop of `BITLK_read_sb`).
    fn parse_entries(&mut self, e: &[u8]) -> Result<(), LoadError> {
        let total = e.len();
        let mut start = 0usize;
        while total - start >= 4 {
            let size = usize::from(le16(e, start));
            if size == 0 {
                break;
            }
            if size > total - start {
                return Err(LoadError::silent());
            }
            let kind = le16(e, start + 2);
            match kind {
                entry_type::VMK => {
                    if size < ENTRY_HEADER_LEN + VMK_HEADER_LEN {
                        return Err(LoadError::silent());
                    }
                    let v = start + ENTRY_HEADER_LEN;
                    let mut vmk = Vmk {
                        guid: Guid(array(e, v)),
                        name: None,
                        protection: Protection::from_raw(le16(e, v + 26)),
                        salt: [0; 16],
                        nonce: [0; NONCE_LEN],
                        tag: [0; TAG_LEN],
                        keys: Vec::new(),
                    };
                    parse_vmk_properties(e, v + VMK_HEADER_LEN, start + size, &mut vmk)?;
                    self.vmks.push(vmk);
                }
                entry_type::FVEK if self.fvek.is_none() => {
                    if size < ENCRYPTED_KEY_HEADER_LEN {
                        return Err(LoadError::silent());
                    }
                    self.fvek = Some(encrypted_key(e, start, size));
                }
                entry_type::VOLUME_HEADER => {
                    if total - start < ENTRY_HEADER_LEN + 16 {
                        return Err(LoadError::silent());
                    }
                    self.volume_header_offset = le64(e, start + ENTRY_HEADER_LEN);
                    self.volume_header_size = le64(e, start + ENTRY_HEADER_LEN + 8);
                }
                entry_type::DESCRIPTION if self.description.is_none() => {
                    if size < ENTRY_HEADER_LEN {
                        return Err(LoadError::silent());
                    }
                    self.description =
                        Some(utf16_to_utf8(&e[start + ENTRY_HEADER_LEN..start + size]));
                }
                _ => {}
            }
            start += size;
        }
        Ok(())
    }
}

/// The encrypted key of the entry at `start` of `size` bytes (at least
/// [`ENCRYPTED_KEY_HEADER_LEN`], inside `e`).
fn encrypted_key(e: &[u8], start: usize, size: usize) -> EncryptedKey {
    let at = start + ENTRY_HEADER_LEN;
    EncryptedKey {
        nonce: array(e, at),
        tag: array(e, at + NONCE_LEN),
        data: e[start + ENCRYPTED_KEY_HEADER_LEN..start + size].to_vec(),
    }
}

/// The nested properties of a VMK entry in `e[start..end]` (`parse_vmk_entry`).
fn parse_vmk_properties(
    e: &[u8],
    mut start: usize,
    end: usize,
    vmk: &mut Vmk,
) -> Result<(), LoadError> {
    let supported = vmk.protection.supported();
    while end.saturating_sub(start) >= 6 {
        let size = usize::from(le16(e, start));
        if size == 0 {
            break;
        }
        if size > end - start {
            return Err(LoadError::silent());
        }
        let kind = le16(e, start + 2);
        let value = le16(e, start + 4);
        if kind != entry_type::PROPERTY && supported {
            return Err(LoadError::say(format!(
                "Unexpected metadata entry type '{kind}' found when parsing supported Volume Master Key."
            )));
        }
        match value {
            value_type::STRETCH_KEY => {
                // Salt after the entry header and 4 bytes of encryption method; bounded by
                // the VMK's end, not the property's (as cryptsetup).
                if end - start < ENTRY_HEADER_LEN + 16 + 4 {
                    return Err(LoadError::silent());
                }
                vmk.salt = array(e, start + ENTRY_HEADER_LEN + 4);
            }
            value_type::ENCRYPTED_KEY => {
                if size < ENCRYPTED_KEY_HEADER_LEN {
                    return Err(LoadError::silent());
                }
                let k = encrypted_key(e, start, size);
                vmk.nonce = k.nonce;
                vmk.tag = k.tag;
                vmk.keys.push(k.data);
            }
            // A clear key (partly decrypted volume), timestamps of a recovery VMK: skipped.
            value_type::KEY | value_type::RECOVERY_TIME => {}
            value_type::STRING => {
                if size < ENTRY_HEADER_LEN {
                    return Err(LoadError::silent());
                }
                let s = utf16_to_utf8(&e[start + ENTRY_HEADER_LEN..start + size]);
                if vmk.name.is_none() {
                    vmk.name = Some(s);
                } else if supported {
                    return Err(LoadError::say(format!(
                        "Unexpected string ('{s}') found when parsing supported Volume Master Key."
                    )));
                }
            }
            value_type::USE_KEY if vmk.protection == Protection::StartupKey => {}
            other => {
                if supported {
                    return Err(LoadError::say(format!(
                        "Unexpected metadata entry value '{other}' found when parsing supported Volume Master Key."
                    )));
                }
            }
        }
        start += size;
    }
    Ok(())
}

/// cryptsetup's `crypt_utf16_to_utf8`, cut at the first NUL as C prints it: UTF-16LE units
/// (an odd last byte ignored), surrogate pairs joined, lone surrogates dropped.
pub(super) fn utf16_to_utf8(b: &[u8]) -> String {
    let units: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < units.len() {
        let w1 = units[i];
        i += 1;
        let c = if !(0xd800..=0xdfff).contains(&w1) {
            u32::from(w1)
        } else if w1 >= 0xdc00 {
            continue;
        } else {
            let Some(&w2) = units.get(i) else { break };
            if !(0xdc00..=0xdfff).contains(&w2) {
                continue;
            }
            i += 1;
            ((u32::from(w1) - 0xd800) << 10) + (u32::from(w2) - 0xdc00) + 0x1_0000
        };
        if c == 0 {
            break;
        }
        if let Some(ch) = char::from_u32(c) {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_text() {
        let g = Guid([
            0x09, 0x52, 0x59, 0x8f, 0xb9, 0xf5, 0xa0, 0x49, 0x85, 0xd4, 0xcb, 0x8f, 0x80, 0x25,
            0x8c, 0x27,
        ]);
        assert_eq!(g.to_string(), "8f595209-f5b9-49a0-85d4-cb8f80258c27");
    }

    #[test]
    fn utf16_as_cryptsetup() {
        let enc = |s: &[u16]| s.iter().flat_map(|u| u.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(utf16_to_utf8(&enc(&[0x41, 0x42, 0x43])), "ABC");
        assert_eq!(utf16_to_utf8(&enc(&[0x41, 0, 0x42])), "A");
        assert_eq!(utf16_to_utf8(&enc(&[0xd83d, 0xde00])), "😀");
        // Lone surrogates are dropped; a lead surrogate followed by a non-trail keeps it.
        assert_eq!(utf16_to_utf8(&enc(&[0xdc00, 0x41])), "A");
        assert_eq!(utf16_to_utf8(&enc(&[0xd800, 0x41])), "A");
        assert_eq!(utf16_to_utf8(&enc(&[0x41, 0xd800])), "A");
        let mut odd = enc(&[0x41]);
        odd.push(0x42);
        assert_eq!(utf16_to_utf8(&odd), "A");
    }
}
