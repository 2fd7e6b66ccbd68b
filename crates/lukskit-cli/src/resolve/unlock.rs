//! The unlock request of `open` (`luksOpen`, `tcryptOpen`, `bitlkOpen`, `fvault2Open`,
//! `loopaesOpen`, `--test-passphrase`), `tcryptDump` and `image`: where the secret comes from
//! (a prompt, a key file with its offset and size, TrueCrypt's key-file pool, a volume key,
//! the LUKS2 tokens), which keyslot, how many tries, and the per-format options (TCRYPT's
//! PIM, hidden/system/backup headers, hash and cipher limits; loop-AES's), read from the
//! options once.

use crate::args::Opts;
use crate::input::KeySource;
use lukskit_tokens::TokenRequest;
use lukskit_volume::formats::{FormatOptions, TcryptOptions};

/// Where the volume key comes from instead of a keyslot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeKeySource {
    /// `--volume-key-file PATH` (its size from the header, else `--key-size`).
    File {
        /// The file.
        path: String,
        /// `--key-size` in bits: the key's size when the header has no bound keyslot.
        key_bits: Option<u32>,
    },
    /// `--volume-key-keyring SPEC`: a key in the kernel keyring.
    Keyring(String),
}

/// The LUKS2 token step: which tokens to try and whether a passphrase may follow.
#[derive(Debug, Clone)]
pub struct TokenSelection {
    /// `--token-id`, `--token-type`, `--key-slot`, `--disable-external-tokens`,
    /// `--tpm2-device`, `--token-timeout` and the volume's name for PIN prompts.
    pub request: TokenRequest,
    /// `--token-only`: no passphrase after the tokens.
    pub only: bool,
}

/// What unlocking a volume needs, resolved from the command line.
#[derive(Debug, Clone)]
pub struct UnlockRequest {
    /// `--header`: the device the metadata is read from, when not the data device.
    pub header: Option<String>,
    /// The passphrase (or password, recovery key, loop-AES key file): `--key-file` with
    /// `--keyfile-offset`/`--keyfile-size`, else the prompt.
    pub key_source: KeySource,
    /// Every `-d` given (TrueCrypt's key-file pool; `-` is standard input).
    pub key_files: Vec<String>,
    /// `--passphrase-file` (crypttab's TCRYPT passphrase: its first line).
    pub passphrase_file: Option<String>,
    /// A volume key instead of a keyslot.
    pub volume_key: Option<VolumeKeySource>,
    /// The token step.
    pub tokens: TokenSelection,
    /// `--key-slot`.
    pub key_slot: Option<u32>,
    /// `--unbound`: an unbound keyslot (`--test-passphrase`).
    pub unbound: bool,
    /// `--tries` (attempts on a terminal prompt; default 3).
    pub tries: Option<u32>,
    /// The per-format options (TCRYPT and loop-AES).
    pub formats: FormatOptions,
    /// `--veracrypt-query-pim`: ask for the PIM after the passphrase.
    pub query_pim: bool,
}

impl UnlockRequest {
    /// How many secrets are asked for from `src`: `--tries` (default 3, at least 1) on a
    /// terminal prompt, else one.
    pub fn attempts(&self, src: &KeySource) -> u32 {
        attempts(self.tries, src)
    }
}

/// Number of passphrase attempts from `src` with `--tries` `tries`: on a terminal prompt
/// `tries` (default 3, at least 1); 1 without a terminal or with a key file.
pub fn attempts(tries: Option<u32>, src: &KeySource) -> u32 {
    match src {
        KeySource::Prompt if crate::input::interactive() => tries.unwrap_or(3).max(1),
        _ => 1,
    }
}

/// The source of an existing passphrase: `positional_keyfile` or `--key-file` (with
/// `--keyfile-offset` and `--keyfile-size`), else the prompt.
pub fn key_source(o: &Opts, positional_keyfile: Option<&String>) -> KeySource {
    match positional_keyfile.or(o.key_file.as_ref()) {
        Some(p) => KeySource::File {
            path: p.clone(),
            offset: o.keyfile_offset.unwrap_or(0),
            size: o.keyfile_size,
        },
        None => KeySource::prompt_limited(o.keyfile_offset, o.keyfile_size),
    }
}

/// The token options of the command line.
fn token_request(o: &Opts) -> TokenRequest {
    TokenRequest {
        token_id: o.token_id,
        token_type: o.token_type.clone(),
        key_slot: o.key_slot,
        disable_external: o.disable_external_tokens,
        tpm2_device: o.tpm2_device.clone(),
        // `--token-timeout 0` waits as long as it takes (systemd's `token-timeout=0`).
        device_wait: match o.token_timeout {
            None => std::time::Duration::ZERO,
            Some(0) => std::time::Duration::MAX,
            Some(s) => std::time::Duration::from_secs(s),
        },
        volume_name: friendly_name(o),
    }
}

/// The name systemd-cryptsetup gives the volume in its PIN prompts: the mapping's name for
/// `open DEVICE NAME`, else the device.
fn friendly_name(o: &Opts) -> String {
    let p = &o.positional;
    let open = matches!(p.first().map(String::as_str), Some("open" | "luksOpen"));
    let name = if open && p.len() >= 3 {
        p.get(2)
    } else {
        p.get(1)
    };
    name.cloned().unwrap_or_default()
}

/// The token step of the command line.
pub fn tokens(o: &Opts) -> TokenSelection {
    TokenSelection {
        request: token_request(o),
        only: o.token_only,
    }
}

/// The per-format options of the command line: TCRYPT's (`--tcrypt-hidden`,
/// `--tcrypt-system`, `--tcrypt-backup`, `--disable-veracrypt`, `--veracrypt-pim`, `-h` and
/// `-c` limiting the tries) and loop-AES's (`--key-size`, `--offset`, `--skip`, `-h`, `-c`).
fn format_options(o: &Opts) -> FormatOptions {
    let mut f = FormatOptions {
        tcrypt: TcryptOptions {
            hidden: o.given.has("tcrypt-hidden"),
            system: o.given.has("tcrypt-system"),
            backup: o.given.has("tcrypt-backup"),
            no_veracrypt: o.given.has("disable-veracrypt"),
            pim: o.veracrypt_pim,
            hash: o.hash.clone(),
            cipher: o.cipher.clone(),
        },
        ..FormatOptions::default()
    };
    f.loopaes.key_bits = o.key_size;
    f.loopaes.offset = o.offset.unwrap_or(0);
    f.loopaes.skip = o.skip.or(o.offset).unwrap_or(0);
    f.loopaes.hash = o.hash.clone();
    f.loopaes.cipher = o.cipher.clone();
    f
}

/// The unlock request of the command line.
pub fn unlock(o: &Opts) -> UnlockRequest {
    let volume_key = match (&o.volume_key_file, &o.volume_key_keyring) {
        (Some(path), _) => Some(VolumeKeySource::File {
            path: path.clone(),
            key_bits: o.key_size,
        }),
        (None, Some(spec)) => Some(VolumeKeySource::Keyring(spec.clone())),
        (None, None) => None,
    };
    UnlockRequest {
        header: o.header.clone(),
        key_source: key_source(o, None),
        key_files: o.key_files.clone(),
        passphrase_file: o.passphrase_file.clone(),
        volume_key,
        tokens: tokens(o),
        key_slot: o.key_slot,
        unbound: o.unbound,
        tries: o.tries,
        formats: format_options(o),
        query_pim: o.given.has("veracrypt-query-pim"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(args: &[&str]) -> UnlockRequest {
        let argv: Vec<std::ffi::OsString> = std::iter::once("cryptsetup")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        unlock(&crate::startup::parse(&argv).expect("the command line parses"))
    }

    #[test]
    fn key_file_with_offset_and_size() {
        let u = request(&[
            "open",
            "--key-file",
            "k",
            "--keyfile-offset",
            "5",
            "--keyfile-size",
            "7",
            "d",
            "n",
        ]);
        match u.key_source {
            KeySource::File { path, offset, size } => {
                assert_eq!((path.as_str(), offset, size), ("k", 5, Some(7)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(u.key_files, ["k"]);
    }

    #[test]
    fn tokens_and_timeouts() {
        let u = request(&[
            "open",
            "--token-only",
            "--token-id",
            "3",
            "--token-timeout",
            "0",
            "--key-slot",
            "2",
            "d",
            "n",
        ]);
        assert!(u.tokens.only);
        assert_eq!(u.tokens.request.token_id, Some(3));
        assert_eq!(u.tokens.request.key_slot, Some(2));
        assert_eq!(u.tokens.request.device_wait, std::time::Duration::MAX);
        assert_eq!(u.tokens.request.volume_name, "n");
        assert_eq!(u.key_slot, Some(2));
        let u = request(&["open", "--token-timeout", "4", "d", "n"]);
        assert!(!u.tokens.only);
        assert_eq!(u.tokens.request.device_wait.as_secs(), 4);
        assert_eq!(
            request(&["open", "d", "n"]).tokens.request.device_wait,
            std::time::Duration::ZERO
        );
    }

    #[test]
    fn volume_key_file_wins_over_keyring() {
        let u = request(&[
            "open",
            "--volume-key-file",
            "vk",
            "--key-size",
            "512",
            "d",
            "n",
        ]);
        assert_eq!(
            u.volume_key,
            Some(VolumeKeySource::File {
                path: "vk".into(),
                key_bits: Some(512)
            })
        );
        assert_eq!(request(&["open", "d", "n"]).volume_key, None);
    }

    #[test]
    fn tcrypt_options() {
        let u = request(&[
            "tcryptOpen",
            "--tcrypt-hidden",
            "--veracrypt-pim",
            "485",
            "--veracrypt-query-pim",
            "-h",
            "sha512",
            "-d",
            "a",
            "-d",
            "-",
            "d",
            "n",
        ]);
        let t = &u.formats.tcrypt;
        assert!(t.hidden && !t.system && !t.backup && !t.no_veracrypt);
        assert_eq!(t.pim, Some(485));
        assert_eq!(t.hash.as_deref(), Some("sha512"));
        assert!(u.query_pim);
        assert_eq!(u.key_files, ["a", "-"]);
    }

    #[test]
    fn loopaes_skip_defaults_to_offset() {
        let u = request(&["loopaesOpen", "--key-file", "k", "--offset", "8", "d", "n"]);
        assert_eq!((u.formats.loopaes.offset, u.formats.loopaes.skip), (8, 8));
        let u = request(&[
            "loopaesOpen",
            "--key-file",
            "k",
            "--offset",
            "8",
            "--skip",
            "2",
            "d",
            "n",
        ]);
        assert_eq!((u.formats.loopaes.offset, u.formats.loopaes.skip), (8, 2));
    }
}
