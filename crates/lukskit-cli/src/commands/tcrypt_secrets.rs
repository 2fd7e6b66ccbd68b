//! What unlocking a TrueCrypt/VeraCrypt volume reads (the passphrase, the key-file pool's
//! files, the PIM asked for, as its [`UnlockRequest`] says), cryptsetup
//! 2.6.1's words when its header does not open, and the names of a cascade's mappings: shared
//! by `open --type tcrypt` ([`super::open_format`]), `tcryptDump` ([`super::tcrypt`]) and
//! `image`.

use crate::errors::{CliError, ExitClass, Result};
use crate::input::{self, KeySource};
use crate::resolve::UnlockRequest;
use lukskit_crypto::SecretBuf;
use lukskit_volume::formats::OtherFormatError;
use lukskit_volume::VolumeError;

/// The mapping name of layer `index` of a cascade mapped as `name` (0 is the top one, which
/// is `name` itself; cryptsetup's `NAME_1`, `NAME_2` below it).
pub fn layer_name(name: &str, index: usize) -> String {
    if index == 0 {
        name.to_string()
    } else {
        format!("{name}_{index}")
    }
}

/// Most bytes of a crypttab passphrase file read: VeraCrypt's longest passphrase (128),
/// its newline, and one more so that a longer one is refused.
const MAX_PASSPHRASE_LINE: u64 = 130;

/// The first line of the file at `path` (without its newline), read straight into a locked
/// buffer: at most [`MAX_PASSPHRASE_LINE`] bytes.
fn first_line(path: &str) -> Result<SecretBuf> {
    use std::io::Read;
    let mut f =
        std::fs::File::open(path).map_err(|_| CliError::invalid("Failed to open key file."))?;
    let mut buf = SecretBuf::zeroed(MAX_PASSPHRASE_LINE as usize);
    let mut len = 0;
    while len < buf.len() {
        match f.read(&mut buf.as_mut_bytes()[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(CliError::invalid("Failed to read key file.")),
        }
    }
    let b = &buf.as_bytes()[..len];
    let end = b.iter().position(|&c| c == b'\n').unwrap_or(len);
    Ok(SecretBuf::from_slice(&b[..end]))
}

/// What one TCRYPT attempt reads.
pub struct TcryptSecrets {
    /// The passphrase (may be empty).
    pub passphrase: SecretBuf,
    /// The key files' contents.
    pub key_files: Vec<SecretBuf>,
    /// The PIM asked for with `--veracrypt-query-pim`.
    pub pim: Option<u32>,
}

/// The PIM typed at the prompt, checked as cryptsetup checks it (`strtoull`, then 0 and
/// 32-bit range).
fn parse_pim(typed: &[u8]) -> Result<u32> {
    let text = std::str::from_utf8(typed).unwrap_or("\u{0}");
    let t = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if text.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CliError::invalid("Invalid PIM value: parse error."));
    }
    // strtoull saturates at its maximum; a minus sign negates (modulo 2^64).
    let v = digits.parse::<u64>().unwrap_or(u64::MAX);
    let v = if negative { v.wrapping_neg() } else { v };
    match v {
        0 => Err(CliError::invalid("Invalid PIM value: 0.")),
        v => {
            u32::try_from(v).map_err(|_| CliError::invalid("Invalid PIM value: outside of range."))
        }
    }
}

/// The passphrase and the key files' contents of one attempt, as cryptsetup reads them for
/// TCRYPT: `-d -` makes standard input the passphrase (read whole, as a key file), every
/// other `-d` is a file of the key-file pool; without `-d -` the passphrase is prompted for
/// (a line of standard input when it is not a terminal; it may be empty). With
/// `--veracrypt-query-pim` the PIM is asked for after it.
pub fn secrets(u: &UnlockRequest, prompt: &str) -> Result<TcryptSecrets> {
    let stdin = u.key_files.iter().any(|p| p == "-");
    let source = if stdin {
        KeySource::File {
            path: "-".into(),
            offset: 0,
            size: None,
        }
    } else {
        KeySource::Prompt
    };
    let passphrase = match &u.passphrase_file {
        // Its first line (systemd's read_one_line_file), at most what VeraCrypt takes and a
        // newline: a longer line is refused as a typed one is.
        Some(path) => first_line(path)?,
        None => input::get_secret(&source, prompt, false)?,
    };
    let key_files = u
        .key_files
        .iter()
        .filter(|p| p.as_str() != "-")
        .map(|p| input::read_keyfile(p, 0, None))
        .collect::<Result<_>>()?;
    let pim = if u.query_pim {
        let typed = input::get_secret(&source, "Enter VeraCrypt PIM: ", false)?;
        Some(parse_pim(typed.as_bytes())?)
    } else {
        None
    };
    Ok(TcryptSecrets {
        passphrase,
        key_files,
        pim,
    })
}

/// cryptsetup's words for a failed header load.
pub fn load_error(e: VolumeError) -> CliError {
    match e {
        VolumeError::OtherFormat(OtherFormatError::NoKey) => no_header(),
        VolumeError::OtherFormat(OtherFormatError::PassphraseTooLong { max }) => CliError::new(
            ExitClass::Permission,
            format!(
                "Maximum TCRYPT passphrase length ({max}) exceeded.\n\
                 No device header detected with this passphrase."
            ),
        ),
        // A device too small for the header: cryptsetup fails (-EIO) without a word.
        VolumeError::OtherFormat(OtherFormatError::NotThisFormat { .. }) => CliError::invalid(""),
        other => other.into(),
    }
}

fn no_header() -> CliError {
    CliError::new(
        ExitClass::Permission,
        "No device header detected with this passphrase.",
    )
}
