//! crypttab(5): the table of encrypted volumes to set up at boot, read into typed entries.
//!
//! Both dialects are read: systemd-cryptsetup's (2 to 4 fields, the key field may be absent,
//! `-` or `none`; `key-slot=`, `nofail`, `_netdev`, `x-initrd.attach`, keyfiles and headers
//! on another device as `PATH:UUID=…`) and Debian's (always 4 fields, octal escapes `\0NNN`,
//! `keyslot=`, `initramfs`, `noearly`). Each line becomes a [`CrypttabEntry`] whose options
//! are typed ([`CrypttabOptions`]); options lukskit cannot honour are kept as
//! [`OptionIssue`]s, either ignored with a warning (tokens such as `fido2-device=`, which fall
//! back to the passphrase as in systemd) or refusing the entry (`fvault2`, `swap`,
//! `keyscript=`, …: they change what would be opened). Nothing here touches a device.
//!
//! Hostile input is bounded: at most [`MAX_TABLE_BYTES`] are read, lines longer than
//! [`MAX_LINE`] and entries past [`MAX_ENTRIES`] are reported and skipped, quotes have no
//! meaning (as in both dialects), and escapes that decode to NUL or to invalid UTF-8 reject
//! the line.

use std::fmt;

/// Most bytes of a crypttab that are read.
pub const MAX_TABLE_BYTES: u64 = 1 << 20;
/// Longest line accepted, in bytes.
pub const MAX_LINE: usize = 4096;
/// Most entries in one table.
pub const MAX_ENTRIES: usize = 1024;
/// Most options on one line.
pub const MAX_OPTIONS: usize = 64;
/// Most `tcrypt-keyfile=` options of one entry (cryptsetup's limit of key files, 32).
pub const MAX_TCRYPT_KEYFILES: usize = 32;

/// A block device named in a crypttab field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSpec {
    /// A path (a block device, or an image file).
    Path(String),
    /// `UUID=`: a LUKS or file-system UUID.
    Uuid(String),
    /// `PARTUUID=`: a GPT/MBR partition UUID.
    PartUuid(String),
    /// `LABEL=`: a LUKS2 or file-system label.
    Label(String),
    /// `PARTLABEL=`: a GPT partition name.
    PartLabel(String),
}

impl DeviceSpec {
    /// Parse `UUID=…`, `PARTUUID=…`, `LABEL=…`, `PARTLABEL=…` or a path.
    pub fn parse(s: &str) -> DeviceSpec {
        for (prefix, make) in [
            ("UUID=", DeviceSpec::Uuid as fn(String) -> DeviceSpec),
            ("PARTUUID=", DeviceSpec::PartUuid),
            ("LABEL=", DeviceSpec::Label),
            ("PARTLABEL=", DeviceSpec::PartLabel),
        ] {
            if let Some(v) = s.strip_prefix(prefix) {
                return make(v.to_string());
            }
        }
        DeviceSpec::Path(s.to_string())
    }

    /// Whether `s` reads as a device specifier (`UUID=`… or `/dev/…`), as after the `:` of
    /// `PATH:DEVICE`.
    fn is_device_like(s: &str) -> bool {
        ["UUID=", "PARTUUID=", "LABEL=", "PARTLABEL=", "/dev/"]
            .iter()
            .any(|p| s.starts_with(p) && s.len() > p.len())
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Path(p) => write!(f, "{p}"),
            DeviceSpec::Uuid(v) => write!(f, "UUID={v}"),
            DeviceSpec::PartUuid(v) => write!(f, "PARTUUID={v}"),
            DeviceSpec::Label(v) => write!(f, "LABEL={v}"),
            DeviceSpec::PartLabel(v) => write!(f, "PARTLABEL={v}"),
        }
    }
}

/// A file named in a crypttab field: a path, or a path on another device (`PATH:UUID=…`),
/// which is read with that device mounted read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    /// The path (on `device`, relative to its root, when there is one).
    pub path: String,
    /// The device holding the file.
    pub device: Option<DeviceSpec>,
}

impl FileRef {
    fn parse(s: &str) -> FileRef {
        if let Some((path, dev)) = s.split_once(':') {
            if !path.is_empty() && DeviceSpec::is_device_like(dev) {
                return FileRef {
                    path: path.to_string(),
                    device: Some(DeviceSpec::parse(dev)),
                };
            }
        }
        FileRef {
            path: s.to_string(),
            device: None,
        }
    }
}

impl fmt::Display for FileRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.device {
            Some(d) => write!(f, "{}:{d}", self.path),
            None => write!(f, "{}", self.path),
        }
    }
}

/// The third field: where the passphrase or key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySpec {
    /// `none`, `-` or no field: ask on the console.
    Prompt,
    /// A key file.
    File(FileRef),
}

/// What kind of volume the entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CryptKind {
    /// Neither `luks` nor `plain`: LUKS if the device (or `header=`) has a LUKS header,
    /// plain dm-crypt otherwise (both dialects fall back to plain).
    #[default]
    Auto,
    /// `luks`.
    Luks,
    /// `plain`.
    Plain,
    /// `tcrypt` (or one of the `tcrypt-*`/`veracrypt*` options): TrueCrypt or VeraCrypt.
    Tcrypt,
    /// `bitlk`: BitLocker.
    Bitlk,
}

impl CryptKind {
    /// The option that names the kind, for messages.
    fn option(self) -> &'static str {
        match self {
            CryptKind::Auto => "",
            CryptKind::Luks => "luks",
            CryptKind::Plain => "plain",
            CryptKind::Tcrypt => "tcrypt",
            CryptKind::Bitlk => "bitlk",
        }
    }
}

/// TrueCrypt/VeraCrypt options of an entry (systemd's `tcrypt-*`, Debian's `veracrypt`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TcryptEntryOptions {
    /// `tcrypt-hidden` (Debian's older `tcrypthidden`): the hidden volume.
    pub hidden: bool,
    /// `tcrypt-system`: system encryption.
    pub system: bool,
    /// `tcrypt-veracrypt` / `veracrypt`: VeraCrypt (tried anyway, as cryptsetup 2.6.1 does).
    pub veracrypt: bool,
    /// `veracrypt-pim=`.
    pub pim: Option<u32>,
    /// `tcrypt-keyfile=` (repeated): TrueCrypt key files, in order.
    pub key_files: Vec<FileRef>,
}

/// `pkcs11-uri=`'s value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pkcs11Choice {
    /// `auto`: the volume's `systemd-pkcs11` token says which (tokens are tried anyway).
    Auto,
    /// A PKCS#11 URI (`pkcs11:…`): it decrypts the entry's key file.
    Uri(String),
}

/// What an entry's key file holds when it is not the passphrase itself, as systemd 252's
/// `systemd-cryptsetup` reads it for volumes without a token (LUKS1, plain, BitLocker, or
/// LUKS2 without one): `pkcs11-uri=` wins over `tpm2-device=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealedKey {
    /// The key file is a sealed TPM2 object (a `TPM2B_PRIVATE` then a `TPM2B_PUBLIC`, the
    /// base64-decoded `tpm2-blob` of a token): unsealed on `device` under the PCR policy of
    /// `pcr_mask`, with the PIN when `pin`.
    Tpm2 {
        /// `tpm2-device=` (`auto`, a path, `swtpm:path=…`).
        device: String,
        /// `tpm2-pcrs=`, else PCR 7.
        pcr_mask: u32,
        /// `tpm2-pin=`.
        pin: bool,
    },
    /// The key file is a key encrypted to the certificate of the security token `uri`
    /// names (the base64-decoded `pkcs11-key` of a token).
    Pkcs11 {
        /// `pkcs11-uri=`.
        uri: String,
    },
}

/// systemd 252's PCR mask for a TPM2-sealed key file without `tpm2-pcrs=`: PCR 7.
pub const DEFAULT_TPM2_PCR_MASK: u32 = 1 << 7;

/// An option lukskit does not honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionIssue {
    /// The option as written.
    pub option: String,
    /// Why, in a sentence for a warning.
    pub reason: String,
}

/// The fourth field, typed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CrypttabOptions {
    /// `luks` / `plain`.
    pub kind: CryptKind,
    /// `discard`: pass discards through (`--allow-discards`).
    pub discard: bool,
    /// `readonly` / `read-only`.
    pub readonly: bool,
    /// `noauto`: only opened when named.
    pub noauto: bool,
    /// `nofail`: a failure does not make the command fail.
    pub nofail: bool,
    /// `initramfs` (Debian) / `x-initrd.attach` (systemd): needed in the initramfs.
    pub initramfs: bool,
    /// `_netdev`: needs the network (ordering only; no effect on the command).
    pub netdev: bool,
    /// `verify`: ask for the passphrase twice.
    pub verify: bool,
    /// `tries=N`: passphrase attempts (0: unlimited).
    pub tries: Option<u32>,
    /// `timeout=`: prompt timeout in seconds (0: none).
    pub timeout: Option<u64>,
    /// `header=`: detached LUKS header.
    pub header: Option<FileRef>,
    /// `offset=`: data offset in 512-byte sectors.
    pub offset: Option<u64>,
    /// `skip=`: IV offset in 512-byte sectors (plain).
    pub skip: Option<u64>,
    /// `cipher=` (plain).
    pub cipher: Option<String>,
    /// `size=`: key size in bits (plain).
    pub key_size: Option<u32>,
    /// `hash=` (plain).
    pub hash: Option<String>,
    /// `sector-size=`.
    pub sector_size: Option<u32>,
    /// `keyfile-offset=`.
    pub keyfile_offset: Option<u64>,
    /// `keyfile-size=`.
    pub keyfile_size: Option<u64>,
    /// `key-slot=` / `keyslot=`.
    pub key_slot: Option<u32>,
    /// `tpm2-device=`: the TPM for systemd-tpm2 tokens (`auto`, a path, `swtpm:path=…`);
    /// with a key file, the TPM that unseals the key file ([`CrypttabOptions::sealed_key`]).
    pub tpm2_device: Option<String>,
    /// `tpm2-pcrs=`: the PCRs (bit n: PCR n) a TPM2-sealed key file is bound to (systemd's
    /// `7+…` list; repeated options add up, an empty value clears). `None`: systemd 252's
    /// default, PCR 7 ([`DEFAULT_TPM2_PCR_MASK`]). Tokens carry their own.
    pub tpm2_pcrs: Option<u32>,
    /// `tpm2-pin=`: whether a TPM2-sealed key file needs the PIN (tokens say it themselves).
    pub tpm2_pin: bool,
    /// `pkcs11-uri=`: the security token that decrypts a PKCS#11-encrypted key file.
    pub pkcs11_uri: Option<Pkcs11Choice>,
    /// `token-timeout=`: how long, in seconds, a token waits for its device (the TPM) to
    /// appear before the passphrase is asked (0: no limit). systemd's default, 30 s, applies
    /// to an entry with `tpm2-device=` ([`CrypttabOptions::token_wait`]).
    pub token_timeout: Option<u64>,
    /// `same-cpu-crypt`.
    pub same_cpu_crypt: bool,
    /// `submit-from-crypt-cpus`.
    pub submit_from_crypt_cpus: bool,
    /// `no-read-workqueue`.
    pub no_read_workqueue: bool,
    /// `no-write-workqueue`.
    pub no_write_workqueue: bool,
    /// TrueCrypt/VeraCrypt options.
    pub tcrypt: TcryptEntryOptions,
    /// `keyscript=decrypt_keyctl` (Debian's passphrase cache): lukskit caches the passphrase
    /// in the kernel keyring itself, the key field naming the cache entry.
    pub keyctl_cache: bool,
    /// Options ignored with a warning (the entry is still set up without them).
    pub ignored: Vec<OptionIssue>,
    /// Options lukskit cannot honour that change what would be set up: the entry fails.
    pub refused: Vec<OptionIssue>,
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrypttabEntry {
    /// Line number (1-based).
    pub line: usize,
    /// Mapping name.
    pub name: String,
    /// The encrypted device.
    pub source: DeviceSpec,
    /// The key.
    pub key: KeySpec,
    /// The options.
    pub options: CrypttabOptions,
}

/// A line that is not an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProblem {
    /// Line number (1-based).
    pub line: usize,
    /// The first field, when it could be read (for `crypttab open NAME`).
    pub name: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// A parsed table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Crypttab {
    /// The entries, in order.
    pub entries: Vec<CrypttabEntry>,
    /// Lines that could not be read.
    pub problems: Vec<LineProblem>,
}

/// Parse a whole table (at most [`MAX_TABLE_BYTES`] of it should be passed in).
pub fn parse(text: &[u8]) -> Crypttab {
    let mut t = Crypttab::default();
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let problem = |name: Option<String>, message: String| LineProblem {
            line,
            name,
            message,
        };
        if raw.len() > MAX_LINE {
            t.problems.push(problem(
                None,
                format!("line longer than {MAX_LINE} bytes, skipped"),
            ));
            continue;
        }
        let Ok(s) = std::str::from_utf8(raw) else {
            t.problems
                .push(problem(None, "line is not valid UTF-8, skipped".into()));
            continue;
        };
        match parse_line(s) {
            Ok(None) => {}
            Ok(Some(_)) if t.entries.len() >= MAX_ENTRIES => {
                t.problems.push(problem(
                    None,
                    format!("more than {MAX_ENTRIES} entries, the rest is skipped"),
                ));
                break;
            }
            Ok(Some(mut e)) => {
                e.line = line;
                t.entries.push(e);
            }
            Err((name, message)) => t.problems.push(problem(name, message)),
        }
    }
    t
}

/// Parse one line: `Ok(None)` for blank lines and comments, the first field (when readable)
/// and a message for lines that are not entries.
pub fn parse_line(s: &str) -> Result<Option<CrypttabEntry>, (Option<String>, String)> {
    let t = s.trim_matches([' ', '\t']);
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let fields: Vec<&str> = t.split([' ', '\t']).filter(|f| !f.is_empty()).collect();
    let name = unescape(fields[0]).map_err(|m| (None, format!("name: {m}")))?;
    let named = |m: String| (Some(name.clone()), m);
    if name.contains('/') || name == "." || name == ".." {
        return Err(named(format!("invalid mapping name {name:?}")));
    }
    if fields.len() < 2 {
        return Err(named("no source device (see crypttab(5))".into()));
    }
    if fields.len() > 4 {
        return Err(named(format!(
            "{} fields, at most 4 (name, device, key, options)",
            fields.len()
        )));
    }
    let source = unescape(fields[1]).map_err(|m| named(format!("device: {m}")))?;
    let key = match fields.get(2) {
        None => KeySpec::Prompt,
        Some(&"none") | Some(&"-") => KeySpec::Prompt,
        Some(k) => KeySpec::File(FileRef::parse(
            &unescape(k).map_err(|m| named(format!("key file: {m}")))?,
        )),
    };
    let options = match fields.get(3) {
        None | Some(&"-") | Some(&"none") => CrypttabOptions::default(),
        Some(o) => parse_options(o).map_err(named)?,
    };
    Ok(Some(CrypttabEntry {
        line: 0,
        name,
        source: DeviceSpec::parse(&source),
        key,
        options,
    }))
}

/// Decode the escapes of a field: `\0NNN` (Debian), `\NNN` (three octal digits), `\xHH`,
/// `\\`. Other backslashes stay as they are.
pub fn unescape(s: &str) -> Result<String, String> {
    if !s.contains('\\') {
        return Ok(s.to_string());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let octal = |c: u8| (b'0'..=b'7').contains(&c);
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let rest = &b[i + 1..];
        let (value, used) = if rest[0] == b'\\' {
            (b'\\' as u32, 1)
        } else if rest[0] == b'x'
            && rest.len() >= 3
            && rest[1].is_ascii_hexdigit()
            && rest[2].is_ascii_hexdigit()
        {
            let v = u32::from_str_radix(std::str::from_utf8(&rest[1..3]).unwrap_or("0"), 16)
                .unwrap_or(0);
            (v, 3)
        } else if rest[0] == b'0' {
            // printf %b: \0 followed by up to three octal digits.
            let n = rest[1..].iter().take(3).take_while(|c| octal(**c)).count();
            let v = rest[1..1 + n]
                .iter()
                .fold(0u32, |a, c| a * 8 + u32::from(c - b'0'));
            (v, 1 + n)
        } else if rest.len() >= 3 && rest[..3].iter().all(|c| octal(*c)) {
            let v = rest[..3]
                .iter()
                .fold(0u32, |a, c| a * 8 + u32::from(c - b'0'));
            (v, 3)
        } else {
            out.push(b'\\');
            i += 1;
            continue;
        };
        if value == 0 || value > 255 {
            return Err("escape decodes to NUL or past one byte".into());
        }
        out.push(value as u8);
        i += 1 + used;
    }
    String::from_utf8(out).map_err(|_| "escapes decode to invalid UTF-8".into())
}

/// Split the options field at commas not escaped with a backslash (systemd's `\,`).
fn split_options(s: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                cur.push(',');
                chars.next();
            }
            ',' => v.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    v.push(cur);
    v
}

fn number<T>(opt: &str, v: Option<&str>, min: T) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + Copy,
{
    let v = v.ok_or_else(|| format!("option {opt}= needs a value"))?;
    match v.parse::<T>() {
        Ok(n) if n >= min && v.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(format!("invalid value for option {opt}: {v:?}")),
    }
}

/// systemd's default `token-timeout=` (crypttab(5)).
pub const DEFAULT_TOKEN_TIMEOUT_SECS: u64 = 30;

impl CrypttabOptions {
    /// How long a token of this entry waits for its TPM, in seconds (0: no limit): the
    /// entry's `token-timeout=`; with `tpm2-device=` and no `token-timeout=`, systemd's
    /// default ([`DEFAULT_TOKEN_TIMEOUT_SECS`]); `None` (no wait, as cryptsetup) otherwise.
    pub fn token_wait(&self) -> Option<u64> {
        self.token_timeout.or(self
            .tpm2_device
            .is_some()
            .then_some(DEFAULT_TOKEN_TIMEOUT_SECS))
    }

    /// What a key file of this entry holds, as systemd 252 decides: a PKCS#11-encrypted key
    /// with `pkcs11-uri=URI`, else a TPM2-sealed key with `tpm2-device=`; `None` (the key
    /// file is the passphrase) otherwise. Only entries with a key file use it; without one,
    /// the volume's tokens are tried.
    pub fn sealed_key(&self) -> Option<SealedKey> {
        if let Some(Pkcs11Choice::Uri(uri)) = &self.pkcs11_uri {
            return Some(SealedKey::Pkcs11 { uri: uri.clone() });
        }
        self.tpm2_device.as_ref().map(|d| SealedKey::Tpm2 {
            device: d.clone(),
            pcr_mask: self.tpm2_pcrs.unwrap_or(DEFAULT_TPM2_PCR_MASK),
            pin: self.tpm2_pin,
        })
    }
}

/// systemd's PCR list (`tpm2_parse_pcr_argument`): PCR numbers 0-23 joined by `+` (a comma
/// would end the option), merged into `so_far`; an empty value is no PCR at all.
fn pcr_list(v: Option<&str>, so_far: Option<u32>) -> Result<u32, String> {
    let v = v.ok_or_else(|| "option tpm2-pcrs= needs a value".to_string())?;
    if v.is_empty() {
        return Ok(0);
    }
    let mut mask = 0u32;
    for p in v.split('+') {
        match p.parse::<u32>() {
            Ok(n) if n < 24 && p.bytes().all(|b| b.is_ascii_digit()) => mask |= 1 << n,
            _ => return Err(format!("invalid value for option tpm2-pcrs: {v:?}")),
        }
    }
    Ok(so_far.unwrap_or(0) | mask)
}

/// systemd's boolean (`parse_boolean`).
fn boolean(opt: &str, v: Option<&str>) -> Result<bool, String> {
    match v {
        Some("1" | "yes" | "y" | "true" | "t" | "on") => Ok(true),
        Some("0" | "no" | "n" | "false" | "f" | "off") => Ok(false),
        Some(v) => Err(format!("invalid value for option {opt}: {v:?}")),
        None => Err(format!("option {opt}= needs a value")),
    }
}

/// `pkcs11-uri=`: `auto` or a `pkcs11:` URI of printable characters (systemd's
/// `pkcs11_uri_valid`; the URI itself is read when it is used).
fn pkcs11_choice(v: Option<&str>) -> Result<Pkcs11Choice, String> {
    match v {
        Some("auto") => Ok(Pkcs11Choice::Auto),
        Some(u)
            if u.starts_with("pkcs11:")
                && u.bytes().all(|b| b.is_ascii_graphic())
                && u.len() <= 1024 =>
        {
            Ok(Pkcs11Choice::Uri(u.to_string()))
        }
        Some(_) => Err("pkcs11-uri= parameter expects a PKCS#11 URI".to_string()),
        None => Err("option pkcs11-uri= needs a value".to_string()),
    }
}

/// systemd's time span for `timeout=`: seconds, or a number with `s`, `sec`, `m`, `min`,
/// `h` or `ms` (rounded up to seconds).
fn timespan(opt: &str, v: Option<&str>) -> Result<u64, String> {
    let v = v.ok_or_else(|| format!("option {opt}= needs a value"))?;
    let bad = || format!("invalid value for option {opt}: {v:?}");
    let d = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let n: u64 = v[..d].parse().map_err(|_| bad())?;
    let mul = match v[d..].trim() {
        "" | "s" | "sec" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "ms" => return Ok(n.div_ceil(1000)),
        _ => return Err(bad()),
    };
    n.checked_mul(mul).ok_or_else(bad)
}

fn nonempty(opt: &str, v: Option<&str>) -> Result<String, String> {
    match v {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(format!("option {opt}= needs a value")),
    }
}

/// Options that change what would be set up, which lukskit does not have.
const REFUSED: &[(&str, &str)] = &[
    (
        "fvault2",
        "crypttab has no FileVault 2 type (neither systemd's nor Debian's): use fvault2Open",
    ),
    (
        "swap",
        "lukskit does not make swap areas (mkswap) on mappings",
    ),
    ("tmp", "lukskit does not make file systems on mappings"),
    ("keyscript", "key scripts are not run by lukskit"),
    ("check", "check scripts are not run by lukskit"),
    ("checkargs", "check scripts are not run by lukskit"),
    ("integrity", "LUKS2 integrity is not supported by lukskit"),
];

/// Options lukskit ignores with a warning: tokens (systemd falls back to the passphrase too)
/// and systemd's ordering and prompt tweaks.
const IGNORED: &[(&str, &str)] = &[
    (
        "tpm2-signature",
        "signed TPM2 PCR policies are not supported by lukskit (and systemd 252 uses none for a sealed key file)",
    ),
    (
        "tpm2-public-key",
        "signed TPM2 PCR policies are not supported by lukskit",
    ),
    (
        "tpm2-public-key-pcrs",
        "signed TPM2 PCR policies are not supported by lukskit",
    ),
    (
        "tpm2-pcrlock",
        "TPM2 pcrlock policies are not supported by lukskit",
    ),
    (
        "tpm2-measure-pcr",
        "TPM2 measurement is not supported by lukskit",
    ),
    (
        "tpm2-measure-bank",
        "TPM2 measurement is not supported by lukskit",
    ),
    (
        "fido2-device",
        "FIDO2 tokens are not supported by lukskit; the key field is used",
    ),
    ("fido2-cid", "FIDO2 tokens are not supported by lukskit"),
    ("fido2-rp", "FIDO2 tokens are not supported by lukskit"),
    (
        "try-empty-password",
        "lukskit does not try an empty passphrase",
    ),
    (
        "headless",
        "lukskit asks on the console whenever the key field is none",
    ),
    ("password-echo", "lukskit never echoes passphrases"),
    (
        "keyfile-timeout",
        "lukskit does not wait for key file devices",
    ),
    ("keyfile-erase", "lukskit does not erase key files"),
    (
        "link-volume-key",
        "lukskit does not link volume keys into a keyring",
    ),
    ("silent", "no effect in lukskit"),
];

/// Parse the options field.
pub fn parse_options(field: &str) -> Result<CrypttabOptions, String> {
    let mut o = CrypttabOptions::default();
    let parts = split_options(field);
    if parts.len() > MAX_OPTIONS {
        return Err(format!("more than {MAX_OPTIONS} options"));
    }
    for raw in parts {
        if raw.is_empty() {
            continue;
        }
        let (key, value) = match raw.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(unescape(v)?)),
            None => (raw.clone(), None),
        };
        let v = value.as_deref();
        let flag = |o: &mut bool| -> Result<(), String> {
            match v {
                None => {
                    *o = true;
                    Ok(())
                }
                Some(_) => Err(format!("option {key} takes no value")),
            }
        };
        // The kind an option names: one per entry.
        let kind = |o: &mut CrypttabOptions, k: CryptKind| -> Result<(), String> {
            if o.kind != CryptKind::Auto && o.kind != k {
                return Err(format!(
                    "options {} and {} cannot be combined",
                    o.kind.option(),
                    k.option()
                ));
            }
            o.kind = k;
            Ok(())
        };
        match key.as_str() {
            "luks" => {
                flag(&mut false)?;
                kind(&mut o, CryptKind::Luks)?;
            }
            "plain" => {
                flag(&mut false)?;
                kind(&mut o, CryptKind::Plain)?;
            }
            "bitlk" => {
                flag(&mut false)?;
                kind(&mut o, CryptKind::Bitlk)?;
            }
            "tcrypt" => {
                flag(&mut false)?;
                kind(&mut o, CryptKind::Tcrypt)?;
            }
            "tcrypt-hidden" | "tcrypthidden" => {
                flag(&mut o.tcrypt.hidden)?;
                kind(&mut o, CryptKind::Tcrypt)?;
            }
            "tcrypt-system" => {
                flag(&mut o.tcrypt.system)?;
                kind(&mut o, CryptKind::Tcrypt)?;
            }
            "tcrypt-veracrypt" | "veracrypt" => {
                flag(&mut o.tcrypt.veracrypt)?;
                kind(&mut o, CryptKind::Tcrypt)?;
            }
            "veracrypt-pim" => {
                o.tcrypt.pim = Some(number("veracrypt-pim", v, 0u32)?);
                kind(&mut o, CryptKind::Tcrypt)?;
            }
            "tcrypt-keyfile" => {
                if o.tcrypt.key_files.len() >= MAX_TCRYPT_KEYFILES {
                    return Err(format!(
                        "more than {MAX_TCRYPT_KEYFILES} tcrypt-keyfile= options"
                    ));
                }
                let f = FileRef::parse(&nonempty("tcrypt-keyfile", v)?);
                o.tcrypt.key_files.push(f);
                kind(&mut o, CryptKind::Tcrypt)?;
            }
            "discard" => flag(&mut o.discard)?,
            "readonly" | "read-only" => flag(&mut o.readonly)?,
            "noauto" => flag(&mut o.noauto)?,
            "nofail" => flag(&mut o.nofail)?,
            "initramfs" | "x-initrd.attach" => flag(&mut o.initramfs)?,
            "_netdev" => flag(&mut o.netdev)?,
            "verify" => flag(&mut o.verify)?,
            "same-cpu-crypt" => flag(&mut o.same_cpu_crypt)?,
            "submit-from-crypt-cpus" => flag(&mut o.submit_from_crypt_cpus)?,
            "no-read-workqueue" => flag(&mut o.no_read_workqueue)?,
            "no-write-workqueue" => flag(&mut o.no_write_workqueue)?,
            // Debian's: only about when (early boot, messages); nothing to do here.
            "noearly" | "loud" | "quiet" => flag(&mut false)?,
            "tries" => o.tries = Some(number("tries", v, 0u32)?),
            "tpm2-device" => o.tpm2_device = Some(nonempty("tpm2-device", v)?),
            "tpm2-pcrs" => o.tpm2_pcrs = Some(pcr_list(v, o.tpm2_pcrs)?),
            "tpm2-pin" => o.tpm2_pin = boolean("tpm2-pin", v)?,
            "pkcs11-uri" => o.pkcs11_uri = Some(pkcs11_choice(v)?),
            "timeout" => o.timeout = Some(timespan("timeout", v)?),
            "token-timeout" => o.token_timeout = Some(timespan("token-timeout", v)?),
            "header" => o.header = Some(FileRef::parse(&nonempty("header", v)?)),
            "offset" => o.offset = Some(number("offset", v, 0u64)?),
            "skip" => o.skip = Some(number("skip", v, 0u64)?),
            "cipher" => o.cipher = Some(nonempty("cipher", v)?),
            "hash" => o.hash = Some(nonempty("hash", v)?),
            "size" => o.key_size = Some(number("size", v, 1u32)?),
            "sector-size" => o.sector_size = Some(number("sector-size", v, 1u32)?),
            "keyfile-offset" => o.keyfile_offset = Some(number("keyfile-offset", v, 0u64)?),
            "keyfile-size" => o.keyfile_size = Some(number("keyfile-size", v, 1u64)?),
            "key-slot" | "keyslot" => o.key_slot = Some(number("key-slot", v, 0u32)?),
            // Debian's passphrase cache, by name or as its path: done natively.
            "keyscript"
                if v.is_some_and(|s| s == "decrypt_keyctl" || s.ends_with("/decrypt_keyctl")) =>
            {
                o.keyctl_cache = true
            }
            k => {
                let issue = |reason: &str| OptionIssue {
                    option: raw.clone(),
                    reason: reason.to_string(),
                };
                if let Some((_, r)) = REFUSED.iter().find(|(n, _)| *n == k) {
                    o.refused.push(issue(r));
                } else if let Some((_, r)) = IGNORED.iter().find(|(n, _)| *n == k) {
                    o.ignored.push(issue(r));
                } else if k.starts_with("x-systemd.") || k.starts_with("x-") {
                    o.ignored
                        .push(issue("no effect in lukskit (ordering for systemd)"));
                } else {
                    o.ignored.push(issue("unknown option, ignored"));
                }
            }
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> CrypttabEntry {
        parse_line(line).unwrap().unwrap()
    }

    #[test]
    fn sealed_key_options_are_typed_as_systemd_252_reads_them() {
        // A TPM2-sealed key file: PCRs joined by '+', repeated options add up, PIN boolean.
        let e =
            one("vol /dev/sdb1 /etc/blob tpm2-device=auto,tpm2-pcrs=0+7,tpm2-pcrs=4,tpm2-pin=yes");
        assert!(e.options.ignored.is_empty(), "{:?}", e.options.ignored);
        assert_eq!(
            e.options.sealed_key(),
            Some(SealedKey::Tpm2 {
                device: "auto".into(),
                pcr_mask: (1 << 0) | (1 << 4) | (1 << 7),
                pin: true
            })
        );
        // Without tpm2-pcrs=: PCR 7; an empty value: no PCR.
        let o = parse_options("tpm2-device=/dev/tpmrm0,tpm2-pin=false").unwrap();
        assert_eq!(
            o.sealed_key(),
            Some(SealedKey::Tpm2 {
                device: "/dev/tpmrm0".into(),
                pcr_mask: DEFAULT_TPM2_PCR_MASK,
                pin: false
            })
        );
        let o = parse_options("tpm2-device=auto,tpm2-pcrs=7,tpm2-pcrs=").unwrap();
        assert_eq!(o.tpm2_pcrs, Some(0));
        for bad in [
            "tpm2-pcrs=24",
            "tpm2-pcrs=7+",
            "tpm2-pcrs=a",
            "tpm2-pcrs=+7",
            "tpm2-pcrs=99999999999",
            "tpm2-pin=maybe",
            "tpm2-pin",
            "pkcs11-uri=http://x",
            "pkcs11-uri=pkcs11:a b",
            "pkcs11-uri",
        ] {
            assert!(parse_options(bad).is_err(), "{bad}");
        }
        // pkcs11-uri= wins over tpm2-device=; auto is the token's business.
        let o = parse_options("tpm2-device=auto,pkcs11-uri=pkcs11:token=t;id=%01").unwrap();
        assert_eq!(
            o.sealed_key(),
            Some(SealedKey::Pkcs11 {
                uri: "pkcs11:token=t;id=%01".into()
            })
        );
        let o = parse_options("pkcs11-uri=auto").unwrap();
        assert_eq!(o.pkcs11_uri, Some(Pkcs11Choice::Auto));
        assert_eq!(o.sealed_key(), None);
        assert_eq!(parse_options("luks").unwrap().sealed_key(), None);
        // tpm2-signature= stays a warning.
        let o = parse_options("tpm2-signature=/s.json").unwrap();
        assert_eq!(o.ignored.len(), 1);
    }

    #[test]
    fn decrypt_keyctl_is_the_one_key_script_honoured() {
        for script in ["decrypt_keyctl", "/lib/cryptsetup/scripts/decrypt_keyctl"] {
            let e = one(&format!("a /dev/sda2 main luks,keyscript={script}"));
            assert!(e.options.keyctl_cache, "{script}");
            assert!(e.options.refused.is_empty(), "{script}");
            assert_eq!(e.key, KeySpec::File(FileRef::parse("main")));
        }
        for script in ["decrypt_gnupg", "/tmp/decrypt_keyctl.sh", "passdev"] {
            let e = one(&format!("a /dev/sda2 main luks,keyscript={script}"));
            assert!(!e.options.keyctl_cache, "{script}");
            assert_eq!(e.options.refused[0].option, format!("keyscript={script}"));
        }
    }

    // The examples of systemd's crypttab(5) (systemd 252).
    #[test]
    fn systemd_examples() {
        let e = one("luks       UUID=2505567a-9e27-4efe-a4d5-15ad146c258b");
        assert_eq!(e.name, "luks");
        assert_eq!(
            e.source,
            DeviceSpec::Uuid("2505567a-9e27-4efe-a4d5-15ad146c258b".into())
        );
        assert_eq!(e.key, KeySpec::Prompt);
        assert_eq!(e.options, CrypttabOptions::default());

        let e = one("swap       /dev/sda7       /dev/urandom             swap");
        assert_eq!(e.source, DeviceSpec::Path("/dev/sda7".into()));
        assert_eq!(
            e.key,
            KeySpec::File(FileRef {
                path: "/dev/urandom".into(),
                device: None
            })
        );
        assert_eq!(e.options.refused.len(), 1);
        assert_eq!(e.options.refused[0].option, "swap");

        let e = one("truecrypt  /dev/sda2       /etc/container_password  tcrypt");
        assert_eq!(e.options.kind, CryptKind::Tcrypt);
        assert!(e.options.refused.is_empty());
        let e = one(
            "hidden     /mnt/tc_hidden  /dev/null    tcrypt-hidden,tcrypt-keyfile=/etc/keyfile",
        );
        assert!(e.options.refused.is_empty());
        assert_eq!(e.options.kind, CryptKind::Tcrypt);
        assert!(e.options.tcrypt.hidden);
        assert_eq!(e.options.tcrypt.key_files[0].path, "/etc/keyfile");
        let e = one("vc /dev/sdb - tcrypt-veracrypt,veracrypt-pim=1234,tcrypt-keyfile=/k1,tcrypt-keyfile=/k2:UUID=AB");
        let t = &e.options.tcrypt;
        assert!(t.veracrypt && !t.hidden && !t.system);
        assert_eq!(t.pim, Some(1234));
        assert_eq!(t.key_files.len(), 2);
        assert_eq!(t.key_files[1].device, Some(DeviceSpec::Uuid("AB".into())));
        let e = one("win /dev/sdc1 /etc/bitlocker.pw bitlk,discard");
        assert_eq!(e.options.kind, CryptKind::Bitlk);
        // One kind per entry.
        for opts in [
            "luks,tcrypt",
            "bitlk,tcrypt-hidden",
            "plain,veracrypt-pim=5",
            "bitlk,luks",
        ] {
            let t = parse(format!("x /dev/sda none {opts}\n").as_bytes());
            assert!(t.entries.is_empty(), "{opts}");
            assert!(
                t.problems[0].message.contains("cannot be combined"),
                "{opts}: {:?}",
                t.problems
            );
        }

        let e = one("external   /dev/sda3       keyfile:LABEL=keydev keyfile-timeout=10s");
        assert_eq!(
            e.key,
            KeySpec::File(FileRef {
                path: "keyfile".into(),
                device: Some(DeviceSpec::Label("keydev".into()))
            })
        );
        assert_eq!(e.options.ignored[0].option, "keyfile-timeout=10s");

        let e = one("cryptroot  /dev/sda2       none                     tpm2-device=auto");
        assert_eq!(e.key, KeySpec::Prompt);
        assert!(e.options.refused.is_empty());
        assert!(e.options.ignored.is_empty());
        assert_eq!(e.options.tpm2_device.as_deref(), Some("auto"));
        assert_eq!(e.options.token_wait(), Some(DEFAULT_TOKEN_TIMEOUT_SECS));
        let e = one("cryptroot /dev/sda2 none tpm2-device=auto,token-timeout=2min");
        assert_eq!(e.options.token_wait(), Some(120));
        let e = one("cryptroot /dev/sda2 none token-timeout=0");
        assert_eq!(e.options.token_wait(), Some(0));
        assert!(e.options.ignored.is_empty(), "{:?}", e.options.ignored);
        assert_eq!(
            one("cryptroot /dev/sda2 none luks").options.token_wait(),
            None
        );
        assert!(parse_options("token-timeout=soon").is_err());

        let e =
            one("mytoken    /dev/sdb1       -                        fido2-device=auto,discard");
        assert_eq!(e.key, KeySpec::Prompt);
        assert!(e.options.discard);

        let e = one("data /dev/sda4 - key-slot=3,header=/boot/hdr.img:UUID=1234-ABCD,nofail,_netdev,timeout=1min,tries=0");
        let o = &e.options;
        assert_eq!(o.key_slot, Some(3));
        assert_eq!(
            o.header,
            Some(FileRef {
                path: "/boot/hdr.img".into(),
                device: Some(DeviceSpec::Uuid("1234-ABCD".into()))
            })
        );
        assert!(o.nofail && o.netdev);
        assert_eq!(o.timeout, Some(60));
        assert_eq!(o.tries, Some(0));
    }

    // The examples of Debian's crypttab(5) (cryptsetup 2:2.6.1-4).
    #[test]
    fn debian_examples() {
        let t = parse(
            b"# Encrypted swap device\n\
cswap /dev/sda6 /dev/urandom plain,cipher=aes-xts-plain64,size=256,hash=sha1,swap\n\
\n\
# Encrypted LUKS disk with interactive password, identified by UUID, discarding\n\
cdisk0 UUID=12345678-9abc-def0-fedc-ba9876543210 none luks,discard\n\
\n\
# Encrypted TrueCrypt disk with interactive password, discarding\n\
tdisk0 /dev/sr0 none tcrypt,discard\n\
\n\
# Encrypted ext4 disk with interactive password, discarding\n\
# - retry 5 times if the check fails\n\
cdisk1 /dev/sda2 none luks,discard,tries=5\n\
\n\
# Encrypted disk with a keyfile and a detached header\n\
cdisk2 /dev/sdb1 /etc/keys/cdisk2.key luks,header=/etc/keys/cdisk2.hdr,keyslot=1,keyfile-size=512,keyfile-offset=16\n\
# Plain mode with the old defaults spelled out\n\
cdisk3 /dev/sdc /etc/keys/plain.key plain,cipher=aes-cbc-essiv:sha256,size=256,hash=sha256,offset=2048,skip=8,sector-size=4096,readonly,noauto,initramfs\n",
        );
        assert!(t.problems.is_empty(), "{:?}", t.problems);
        assert_eq!(t.entries.len(), 6);
        let sw = &t.entries[0];
        assert_eq!(sw.line, 2);
        assert_eq!(sw.options.kind, CryptKind::Plain);
        assert_eq!(sw.options.cipher.as_deref(), Some("aes-xts-plain64"));
        assert_eq!(sw.options.key_size, Some(256));
        assert_eq!(sw.options.refused[0].option, "swap");
        let c0 = &t.entries[1];
        assert_eq!(c0.options.kind, CryptKind::Luks);
        assert!(c0.options.discard);
        assert_eq!(t.entries[2].options.kind, CryptKind::Tcrypt);
        assert!(t.entries[2].options.discard);
        assert_eq!(t.entries[3].options.tries, Some(5));
        let c2 = t.entries.iter().find(|e| e.name == "cdisk2").unwrap();
        assert_eq!(c2.options.key_slot, Some(1));
        assert_eq!(c2.options.keyfile_size, Some(512));
        assert_eq!(c2.options.keyfile_offset, Some(16));
        assert_eq!(
            c2.options.header.as_ref().unwrap().path,
            "/etc/keys/cdisk2.hdr"
        );
        let c3 = t.entries.iter().find(|e| e.name == "cdisk3").unwrap();
        let o = &c3.options;
        assert_eq!(
            (
                o.offset,
                o.skip,
                o.sector_size,
                o.readonly,
                o.noauto,
                o.initramfs
            ),
            (Some(2048), Some(8), Some(4096), true, true, true)
        );
        assert_eq!(o.hash.as_deref(), Some("sha256"));
    }

    // Debian crypttab(5) EXAMPLES, verbatim (cryptsetup 2:2.6.1-4~deb12u2).
    #[test]
    fn debian_man_page_lines() {
        let e = one("cdisk0 UUID=12345678-9abc-def012345-6789abcdef01 none luks,discard");
        assert_eq!(
            e.source,
            DeviceSpec::Uuid("12345678-9abc-def012345-6789abcdef01".into())
        );
        assert_eq!((e.options.kind, e.options.discard), (CryptKind::Luks, true));
        let e = one("cdisk1 /dev/sda2 none plain,cipher=aes-xts-plain64,size=256,hash=sha1,check,checkargs=ext4,tries=5,discard");
        assert_eq!(e.options.tries, Some(5));
        let refused: Vec<&str> = e
            .options
            .refused
            .iter()
            .map(|r| r.option.as_str())
            .collect();
        assert_eq!(refused, ["check", "checkargs=ext4"]);
        let e = one("cdisk2 /dev/sdc1 none plain,cipher=aes-xts-plain64,size=256,hash=sha1,check=customscript,tries=1,discard");
        assert_eq!(e.options.refused[0].option, "check=customscript");
        let e = one("cdisk3 /dev/sda3 none plain,cipher=twofish,size=256,hash=ripemd160,discard");
        let o = &e.options;
        assert!(o.refused.is_empty() && o.ignored.is_empty());
        assert_eq!(
            (o.kind, o.cipher.as_deref(), o.key_size, o.hash.as_deref()),
            (
                CryptKind::Plain,
                Some("twofish"),
                Some(256),
                Some("ripemd160")
            )
        );
    }

    #[test]
    fn escapes() {
        // Debian's octal escapes: a name with a space, a comma inside an option value.
        let e = one(r"my\0040disk /dev/disk/by-id/usb\x2dX none luks,header=/etc/a\054b");
        assert_eq!(e.name, "my disk");
        assert_eq!(e.source, DeviceSpec::Path("/dev/disk/by-id/usb-X".into()));
        assert_eq!(e.options.header.unwrap().path, "/etc/a,b");
        assert_eq!(unescape(r"a\040b").unwrap(), "a b");
        assert_eq!(unescape(r"a\\b").unwrap(), r"a\b");
        assert_eq!(unescape(r"a\qb").unwrap(), r"a\qb");
        assert_eq!(unescape(r"trailing\").unwrap(), r"trailing\");
        assert!(unescape(r"nul\000").is_err());
        assert!(unescape(r"nul\0").is_err());
        assert!(unescape(r"bad\377").is_err()); // a lone 0xff is not UTF-8
                                                // systemd's escaped comma.
        let o = parse_options(r"cipher=a\,b,discard").unwrap();
        assert_eq!(o.cipher.as_deref(), Some("a,b"));
        assert!(o.discard);
    }

    #[test]
    fn bad_lines() {
        assert_eq!(parse_line("   ").unwrap(), None);
        assert_eq!(parse_line("  # comment").unwrap(), None);
        let (n, m) = parse_line("onlyname").unwrap_err();
        assert_eq!(n.as_deref(), Some("onlyname"));
        assert!(m.contains("no source"));
        assert!(parse_line("a b c d e").unwrap_err().1.contains("5 fields"));
        assert!(parse_line("a/b /dev/x").is_err());
        assert!(parse_line("a /dev/x none tries=x").is_err());
        assert!(parse_line("a /dev/x none tries=-1").is_err());
        assert!(parse_line("a /dev/x none size=0").is_err());
        assert!(parse_line("a /dev/x none keyfile-size=0").is_err());
        assert!(parse_line("a /dev/x none cipher=").is_err());
        assert!(parse_line("a /dev/x none luks,plain").is_err());
        assert!(parse_line("a /dev/x none discard=yes").is_err());
        assert!(parse_line("a /dev/x none timeout=5years").is_err());
        assert!(parse_line("a /dev/x none tries=99999999999").is_err());
        let e = one("a /dev/x none frobnicate,x-systemd.device-timeout=5");
        assert_eq!(e.options.ignored.len(), 2);
        assert!(e.options.ignored[0].reason.contains("unknown"));
    }

    #[test]
    fn quotes_are_literal() {
        // Neither dialect has quoting: quotes are part of the field.
        let e = one(r#""my disk" /dev/x"#);
        assert_eq!(e.name, "\"my");
        assert_eq!(e.source, DeviceSpec::Path("disk\"".into()));
        let e = one("a '/dev/x' \"key\" 'luks'");
        assert_eq!(e.source, DeviceSpec::Path("'/dev/x'".into()));
        assert_eq!(e.options.ignored[0].option, "'luks'");
    }

    #[test]
    fn hostile_input_is_bounded() {
        let mut t = Vec::new();
        t.extend(std::iter::repeat_n(b'a', MAX_LINE + 1));
        t.extend(b"\nok /dev/x\n");
        t.extend(b"b /dev/x none ");
        t.extend(std::iter::repeat_n(b',', 3_000));
        t.extend(b"\n\xff\xfe /dev/x\n");
        let p = parse(&t);
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.entries[0].name, "ok");
        assert_eq!(p.entries[0].line, 2);
        assert_eq!(p.problems.len(), 3);
        assert!(p.problems[0].message.contains("longer"));
        assert!(p.problems[1].message.contains("options"));
        assert!(p.problems[2].message.contains("UTF-8"));
        // Too many entries.
        let many: Vec<u8> = (0..MAX_ENTRIES + 5)
            .flat_map(|i| format!("n{i} /dev/x\n").into_bytes())
            .collect();
        let p = parse(&many);
        assert_eq!(p.entries.len(), MAX_ENTRIES);
        assert_eq!(p.problems.len(), 1);
        // CRLF line ends and tabs.
        let p = parse(b"a\t/dev/x\t-\tluks\r\n");
        assert_eq!(p.entries[0].options.kind, CryptKind::Luks);
    }
}
