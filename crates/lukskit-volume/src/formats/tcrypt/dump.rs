//! `tcryptDump`'s text: cryptsetup 2.6.1's `TCRYPT_dump`, and the `--dump-volume-key` form of
//! src/cryptsetup.c (`tcryptDump_with_volume_key`).

use super::header::Magic;
use super::Loaded;
use crate::formats::Description;
use lukskit_crypto::SecretBuf;
use std::fmt;

/// What `tcryptDump` prints about a volume whose header was decrypted.
#[derive(Debug, Clone)]
pub struct TcryptDump {
    /// `TRUE` or `VERA` (the first line says TCRYPT or VERACRYPT).
    pub magic: Magic,
    /// The metadata device as given.
    pub device: String,
    /// Header version.
    pub version: u16,
    /// Required program version.
    pub version_tc: u16,
    /// Sector size.
    pub sector_size: u32,
    /// Master-key scope offset in bytes.
    pub mk_offset: u64,
    /// PBKDF2 hash.
    pub hash: &'static str,
    /// Cipher chain (`serpent-twofish-aes`).
    pub cipher: &'static str,
    /// Mode (`xts-plain64`).
    pub mode: &'static str,
    /// Key bytes of the chain.
    pub key_size: usize,
}

impl TcryptDump {
    /// The description of a loaded header.
    pub fn new(loaded: &Loaded, device: &str) -> TcryptDump {
        let h = &loaded.header;
        TcryptDump {
            magic: h.magic,
            device: device.to_owned(),
            version: h.version,
            version_tc: h.version_tc,
            sector_size: h.sector_size,
            mk_offset: h.mk_offset,
            hash: loaded.kdf.hash,
            cipher: loaded.cascade.long_name,
            mode: loaded.cascade.mode.name(),
            key_size: loaded.cascade.chain_key_size,
        }
    }
}

impl fmt::Display for TcryptDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.magic {
            Magic::TrueCrypt => "TCRYPT",
            Magic::VeraCrypt => "VERACRYPT",
        };
        writeln!(f, "{kind} header information for {}", self.device)?;
        if self.version != 0 {
            writeln!(f, "Version:       \t{}", self.version)?;
            writeln!(
                f,
                "Driver req.:\t{:x}.{:x}",
                self.version_tc >> 8,
                self.version_tc & 0xff
            )?;
            writeln!(f, "Sector size:\t{}", self.sector_size)?;
            writeln!(f, "MK offset:\t{}", self.mk_offset)?;
            writeln!(f, "PBKDF2 hash:\t{}", self.hash)?;
        }
        writeln!(f, "Cipher chain:\t{}", self.cipher)?;
        writeln!(f, "Cipher mode:\t{}", self.mode)?;
        writeln!(f, "MK bits:       \t{}", self.key_size * 8)
    }
}

impl Description for TcryptDump {}

/// `tcryptDump --dump-volume-key`'s text (after the confirmation), in a zeroizing buffer (it
/// holds the key in hex).
pub fn volume_key_dump(
    device: &str,
    cipher: &str,
    mode: &str,
    payload_offset: u64,
    key: &SecretBuf,
) -> SecretBuf {
    use std::fmt::Write as _;
    // Room for everything up front: no reallocation leaves a copy of the key behind.
    let mut o =
        String::with_capacity(256 + device.len() + cipher.len() + mode.len() + key.len() * 4);
    o.push_str(&format!("TCRYPT header information for {device}\n"));
    o.push_str(&format!("Cipher chain:  \t{cipher}\n"));
    o.push_str(&format!("Cipher mode:   \t{mode}\n"));
    // cryptsetup prints the offset as an int.
    o.push_str(&format!("Payload offset:\t{}\n", payload_offset as i32));
    o.push_str(&format!("MK bits:       \t{}\n", key.len() * 8));
    o.push_str("MK dump:\t");
    for (i, b) in key.as_bytes().iter().enumerate() {
        if i != 0 && i % 16 == 0 {
            o.push_str("\n\t\t");
        }
        let _ = write!(o, "{b:02x} ");
    }
    o.push('\n');
    SecretBuf::from_vec(o.into_bytes())
}
