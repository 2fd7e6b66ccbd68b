//! Command-line options, spelled as cryptsetup spells them.
//!
//! cryptsetup takes `[options] <action> <action-specific arguments>` with options allowed
//! anywhere; so does lukskit. Options cryptsetup 2.6.1 has and lukskit does not implement are
//! parsed (so that `--test-args` and the checks of [`crate::checks`] judge a command line as
//! cryptsetup does) but an action run with one fails (exit 1); they are never silently ignored.
//! Anything else is an error (exit 1).

use clap::{ArgAction, Parser};

/// All options of all actions (each action checks which apply).
#[derive(Parser, Debug, Default, Clone)]
#[command(
    name = "lukskit",
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true,
    // A negative number is a (bad) value, as for cryptsetup: `-s -32` is "invalid numeric
    // value", not an unknown option `-3`.
    allow_negative_numbers = true,
    about = "lukskit: LUKS1/LUKS2 disk encryption, cryptsetup compatible"
)]
pub struct Opts {
    /// The action and its arguments.
    #[arg(value_name = "ACTION ARGS")]
    pub positional: Vec<String>,

    /// Show help.
    #[arg(short = '?', long = "help", action = ArgAction::SetTrue)]
    pub help: bool,
    /// Print the version.
    #[arg(short = 'V', long = "version", action = ArgAction::SetTrue)]
    pub version: bool,
    /// Print more information ("Command successful.").
    #[arg(short = 'v', long = "verbose", action = ArgAction::SetTrue)]
    pub verbose: bool,
    /// Debug output (never contains secrets).
    #[arg(long = "debug", action = ArgAction::SetTrue)]
    pub debug: bool,
    /// Do not ask for confirmation; no passphrase verification unless -y.
    #[arg(short = 'q', long = "batch-mode", action = ArgAction::SetTrue)]
    pub batch_mode: bool,
    /// Ask for the passphrase twice.
    #[arg(short = 'y', long = "verify-passphrase", action = ArgAction::SetTrue)]
    pub verify_passphrase: bool,

    /// Device type: luks, luks1, luks2, plain.
    #[arg(short = 'M', long = "type")]
    pub r#type: Option<String>,
    /// Cipher specification.
    #[arg(short = 'c', long = "cipher")]
    pub cipher: Option<String>,
    /// Key size in bits.
    #[arg(short = 's', long = "key-size")]
    pub key_size: Option<u32>,
    /// Hash for PBKDF2, AF and digests.
    #[arg(short = 'h', long = "hash")]
    pub hash: Option<String>,
    /// PBKDF algorithm: pbkdf2, argon2i, argon2id.
    #[arg(long = "pbkdf")]
    pub pbkdf: Option<String>,
    /// PBKDF benchmark time in ms.
    #[arg(short = 'i', long = "iter-time")]
    pub iter_time: Option<u32>,
    /// Argon2 maximum memory in KiB.
    #[arg(long = "pbkdf-memory")]
    pub pbkdf_memory: Option<u32>,
    /// Argon2 parallel threads.
    #[arg(long = "pbkdf-parallel")]
    pub pbkdf_parallel: Option<u32>,
    /// Fixed PBKDF iterations / Argon2 time cost (no benchmark).
    #[arg(long = "pbkdf-force-iterations")]
    pub pbkdf_force_iterations: Option<u32>,

    /// Read the passphrase from a file ("-" = stdin).
    #[arg(short = 'd', long = "key-file")]
    pub key_file: Option<String>,
    /// Every `-d`/`--key-file` given, in order (TrueCrypt/VeraCrypt take several; clap keeps
    /// only the last in `key_file`).
    #[arg(skip)]
    pub key_files: Vec<String>,
    /// A file whose first line is the TrueCrypt/VeraCrypt passphrase: crypttab's key field
    /// of a `tcrypt` entry, read as systemd-cryptsetup reads it (no command-line option;
    /// cryptsetup's `-d` of TCRYPT is a key file of the pool).
    #[arg(skip)]
    pub passphrase_file: Option<String>,
    /// `--veracrypt-pim` (a hidden argument of the TCRYPT options; filled in by the parser).
    #[arg(skip)]
    pub veracrypt_pim: Option<u32>,
    /// Bytes to skip at the start of the key file.
    #[arg(long = "keyfile-offset")]
    pub keyfile_offset: Option<u64>,
    /// Bytes to read from the key file.
    #[arg(short = 'l', long = "keyfile-size")]
    pub keyfile_size: Option<u64>,
    /// New key file (luksAddKey, luksChangeKey).
    #[arg(long = "new-keyfile")]
    pub new_keyfile: Option<String>,
    /// Bytes to skip in the new key file.
    #[arg(long = "new-keyfile-offset")]
    pub new_keyfile_offset: Option<u64>,
    /// Bytes to read from the new key file.
    #[arg(long = "new-keyfile-size")]
    pub new_keyfile_size: Option<u64>,
    /// Keyslot number.
    #[arg(short = 'S', long = "key-slot")]
    pub key_slot: Option<u32>,
    /// Keyslot number for the new key.
    #[arg(long = "new-key-slot")]
    pub new_key_slot: Option<u32>,
    /// Volume key from a file.
    #[arg(long = "volume-key-file", alias = "master-key-file")]
    pub volume_key_file: Option<String>,
    /// Print the volume key (luksDump).
    #[arg(long = "dump-volume-key", alias = "dump-master-key", action = ArgAction::SetTrue)]
    pub dump_volume_key: bool,
    /// Print the LUKS2 JSON metadata (luksDump).
    #[arg(long = "dump-json-metadata", action = ArgAction::SetTrue)]
    pub dump_json_metadata: bool,
    /// Unbound keyslot (no data segment).
    #[arg(long = "unbound", action = ArgAction::SetTrue)]
    pub unbound: bool,
    /// Only check the passphrase (open).
    #[arg(long = "test-passphrase", action = ArgAction::SetTrue)]
    pub test_passphrase: bool,

    /// Detached header file.
    #[arg(long = "header")]
    pub header: Option<String>,
    /// Header backup file.
    #[arg(long = "header-backup-file")]
    pub header_backup_file: Option<String>,
    /// Data offset in 512-byte sectors.
    #[arg(short = 'o', long = "offset")]
    pub offset: Option<u64>,
    /// Encryption sector size in bytes.
    #[arg(long = "sector-size")]
    pub sector_size: Option<u32>,
    /// LUKS2 label.
    #[arg(long = "label")]
    pub label: Option<String>,
    /// LUKS2 subsystem.
    #[arg(long = "subsystem")]
    pub subsystem: Option<String>,
    /// UUID.
    #[arg(long = "uuid")]
    pub uuid: Option<String>,
    /// LUKS2 metadata size (bytes, with optional k/m suffix).
    #[arg(long = "luks2-metadata-size")]
    pub luks2_metadata_size: Option<String>,
    /// LUKS2 keyslots area size (bytes, with optional k/m suffix).
    #[arg(long = "luks2-keyslots-size")]
    pub luks2_keyslots_size: Option<String>,
    /// Keyslot priority: ignore, normal, prefer.
    #[arg(long = "priority")]
    pub priority: Option<String>,
    /// Number of passphrase attempts.
    #[arg(short = 'T', long = "tries")]
    pub tries: Option<u32>,
    /// Interactive passphrase prompt timeout in seconds.
    #[arg(short = 't', long = "timeout")]
    pub timeout: Option<u64>,
    /// Token id.
    #[arg(long = "token-id")]
    pub token_id: Option<u32>,
    /// Token whose passphrase the new keyslot takes, assigned to it (luksAddKey).
    #[arg(long = "new-token-id")]
    pub new_token_id: Option<u32>,
    /// Token JSON file (token import/export).
    #[arg(long = "json-file")]
    pub json_file: Option<String>,
    /// Keyring key description (token add).
    #[arg(long = "key-description")]
    pub key_description: Option<String>,
    /// Replace an existing token.
    #[arg(long = "token-replace", action = ArgAction::SetTrue)]
    pub token_replace: bool,
    /// open: do not ask for a passphrase; unlock with a token or fail.
    #[arg(long = "token-only", action = ArgAction::SetTrue)]
    pub token_only: bool,
    /// open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring).
    #[arg(long = "token-type")]
    pub token_type: Option<String>,
    /// open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET).
    #[arg(long = "tpm2-device")]
    pub tpm2_device: Option<String>,
    /// open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab's token-timeout=). Default: no wait.
    #[arg(long = "token-timeout")]
    pub token_timeout: Option<u64>,
    /// open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default).
    #[arg(long = "link-vk-to-keyring")]
    pub link_vk_to_keyring: Option<String>,
    /// open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7).
    #[arg(long = "volume-key-keyring")]
    pub volume_key_keyring: Option<String>,
    /// token enroll-tpm2: the PCRs to seal against, as systemd-cryptenroll takes them (7+8; "" for none; default 7).
    #[arg(long = "tpm2-pcrs")]
    pub tpm2_pcrs: Option<String>,
    /// token enroll-tpm2: the PCR bank (sha256, sha1; default sha256, else sha1).
    #[arg(long = "tpm2-pcr-bank")]
    pub tpm2_pcr_bank: Option<String>,
    /// token enroll-tpm2: ask for a PIN the TPM checks at unlock (yes|no).
    #[arg(long = "tpm2-with-pin")]
    pub tpm2_with_pin: Option<String>,
    /// token bind-tang: the tang server (`http://HOST[:PORT]`).
    #[arg(long = "tang-url")]
    pub tang_url: Option<String>,
    /// token bind-tang: thumbprint of the tang signing key to trust (tang-show-keys).
    #[arg(long = "tang-thumbprint", allow_hyphen_values = true)]
    pub tang_thumbprint: Option<String>,
    /// Do not use metadata locking (accepted for compatibility; lukskit always locks).
    #[arg(long = "disable-locks", action = ArgAction::SetTrue)]
    pub disable_locks: bool,
    /// open, refresh (kernel backend): give dm-crypt the LUKS2 volume key in the table, not
    /// through the kernel keyring.
    #[arg(long = "disable-keyring", action = ArgAction::SetTrue)]
    pub disable_keyring: bool,
    /// luksFormat (LUKS2): authenticated encryption through the kernel's dm-integrity
    /// (hmac-sha256, hmac-sha512, hmac-sha1, aead, poly1305).
    #[arg(short = 'I', long = "integrity")]
    pub integrity: Option<String>,
    /// luksFormat --integrity: do not wipe the device (tags stay invalid until written).
    #[arg(long = "integrity-no-wipe", action = ArgAction::SetTrue)]
    pub integrity_no_wipe: bool,
    /// luksFormat --integrity: the legacy dm-integrity metadata padding (old kernels).
    #[arg(long = "integrity-legacy-padding", action = ArgAction::SetTrue)]
    pub integrity_legacy_padding: bool,
    /// open: dm-integrity without its journal (faster, no crash consistency of tags).
    #[arg(long = "integrity-no-journal", action = ArgAction::SetTrue)]
    pub integrity_no_journal: bool,
    /// Skip the checks for existing signatures (file systems, LUKS): luksFormat's and plain
    /// open's warnings, reencrypt --encrypt's refusal of broken LUKS metadata (cryptsetup
    /// 2.7's option; lukskit reads signatures itself, without blkid).
    #[arg(long = "disable-blkid", action = ArgAction::SetTrue)]
    pub disable_blkid: bool,
    /// Accepted for compatibility: lukskit has no external token plugins.
    #[arg(long = "disable-external-tokens", action = ArgAction::SetTrue)]
    pub disable_external_tokens: bool,
    /// Keyslot cipher for new keyslots (LUKS2).
    #[arg(long = "keyslot-cipher")]
    pub keyslot_cipher: Option<String>,
    /// Keyslot key size in bits (LUKS2).
    #[arg(long = "keyslot-key-size")]
    pub keyslot_key_size: Option<u32>,
    /// IV offset in 512-byte sectors (plain mode).
    #[arg(short = 'p', long = "skip")]
    pub skip: Option<u64>,
    /// Data size in 512-byte sectors (plain mode, image decrypt).
    #[arg(short = 'b', long = "size")]
    pub size: Option<u64>,
    /// IV counts encryption sectors instead of 512-byte sectors (plain mode).
    #[arg(long = "iv-large-sectors", action = ArgAction::SetTrue)]
    pub iv_large_sectors: bool,
    /// Threads for the sector engine (benchmark, image; default: benchmark 1, image all).
    #[arg(long = "threads")]
    pub threads: Option<usize>,
    /// Open the mapping read-only.
    #[arg(short = 'r', long = "readonly", action = ArgAction::SetTrue)]
    pub readonly: bool,
    /// Pass discards (TRIM) through to the data device (open).
    #[arg(long = "allow-discards", action = ArgAction::SetTrue)]
    pub allow_discards: bool,
    /// open: only the FUSE plaintext file, no loop device and no /dev/mapper link.
    #[arg(long = "no-loop", action = ArgAction::SetTrue)]
    pub no_loop: bool,
    /// open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE).
    #[arg(long = "nbd")]
    pub nbd: Option<String>,
    /// open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit's serving process); by
    /// default the kernel wherever it has device-mapper with dm-crypt.
    #[arg(long = "backend")]
    pub backend: Option<String>,
    /// open (plain): the device may be shared with other mappings (non-overlapping segments).
    #[arg(long = "shared", action = ArgAction::SetTrue)]
    pub shared: bool,
    /// open: wait for the turn of a memory-hard (Argon2 above 32 MiB) key derivation, one
    /// process at a time, as cryptsetup (lock /run/cryptsetup/LN_memory-hard-access; an OOM
    /// workaround for many volumes unlocked at once).
    #[arg(long = "serialize-memory-hard-pbkdf", action = ArgAction::SetTrue)]
    pub serialize_memory_hard_pbkdf: bool,
    /// open: dm-crypt's `same_cpu_crypt`.
    #[arg(long = "perf-same_cpu_crypt", action = ArgAction::SetTrue)]
    pub perf_same_cpu_crypt: bool,
    /// open: dm-crypt's `submit_from_crypt_cpus`.
    #[arg(long = "perf-submit_from_crypt_cpus", action = ArgAction::SetTrue)]
    pub perf_submit_from_crypt_cpus: bool,
    /// open: dm-crypt's `no_read_workqueue`.
    #[arg(long = "perf-no_read_workqueue", action = ArgAction::SetTrue)]
    pub perf_no_read_workqueue: bool,
    /// open: dm-crypt's `no_write_workqueue`.
    #[arg(long = "perf-no_write_workqueue", action = ArgAction::SetTrue)]
    pub perf_no_write_workqueue: bool,
    /// resize: the new size in bytes (units K, M, G, ... as cryptsetup's `--device-size`).
    #[arg(long = "device-size", allow_hyphen_values = true)]
    pub device_size: Option<String>,
    /// open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2
    /// header, where every later open applies them.
    #[arg(long = "persistent", action = ArgAction::SetTrue)]
    pub persistent: bool,
    /// close: remove the mapping when its last user closes it.
    #[arg(long = "deferred", action = ArgAction::SetTrue)]
    pub deferred: bool,
    /// close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use.
    #[arg(long = "cancel-deferred", action = ArgAction::SetTrue)]
    pub cancel_deferred: bool,
    /// open --nbd: most NBD clients connected at once (default 8); more are refused.
    #[arg(long = "nbd-connections")]
    pub nbd_connections: Option<usize>,
    /// open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem,
    /// ca-cert.pem), as qemu-nbd's and nbdkit's.
    #[arg(long = "tls-creds")]
    pub tls_creds: Option<String>,
    /// open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered)
    /// or `off` (plain NBD: anyone who can connect reads the plaintext).
    #[arg(long = "tls")]
    pub tls: Option<String>,
    /// open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the
    /// default with TLS, as qemu-nbd's; the option alone also means yes) or `no` (any
    /// client that can connect reads and writes the plaintext).
    #[arg(
        long = "tls-verify-peer",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "yes"
    )]
    pub tls_verify_peer: Option<String>,
    /// Sector engine: `lukskit` (lukskit's own), `kernel` (the kernel's crypto API over
    /// AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side);
    /// open: the serving process of the userspace backends.
    #[arg(long = "engine")]
    pub engine: Option<String>,
    /// Machine-readable output (benchmark, engines).
    #[arg(long = "json", action = ArgAction::SetTrue)]
    pub json: bool,
    /// Display brief usage.
    #[arg(long = "usage", action = ArgAction::SetTrue)]
    pub usage: bool,
    /// Do not run the action, only check the command line (cryptsetup's `--test-args`).
    #[arg(long = "test-args", action = ArgAction::SetTrue)]
    pub test_args: bool,
    /// luksFormat: align the data at a multiple of this many 512-byte sectors (deprecated
    /// in cryptsetup, use --offset).
    #[arg(long = "align-payload", value_name = "SECTORS")]
    pub align_payload: Option<u32>,
    /// crypttab: the table to read instead of /etc/crypttab.
    #[arg(long = "crypttab")]
    pub crypttab: Option<String>,
    /// Accepted for compatibility: lukskit has no password quality check to disable.
    #[arg(long = "force-password", action = ArgAction::SetTrue)]
    pub force_password: bool,
    /// open: refresh the active device NAME (the same as the `refresh` action).
    #[arg(long = "refresh", action = ArgAction::SetTrue)]
    pub refresh: bool,
    /// luksFormat: accepted for compatibility: lukskit's keys always come from getrandom(2),
    /// which waits until the kernel's random pool is initialized (as /dev/random does).
    #[arg(long = "use-random", action = ArgAction::SetTrue)]
    pub use_random: bool,
    /// luksFormat: accepted for compatibility (see `--use-random`).
    #[arg(long = "use-urandom", action = ArgAction::SetTrue)]
    pub use_urandom: bool,
    /// Override device autodetection of dm device to be reencrypted
    #[arg(long = "active-name")]
    pub active_name: Option<String>,
    /// Encrypt LUKS2 device (in-place encryption).
    #[arg(verbatim_doc_comment, long = "encrypt", action = ArgAction::SetTrue)]
    pub encrypt: bool,
    /// Decrypt LUKS2 device (remove encryption).
    #[arg(verbatim_doc_comment, long = "decrypt", action = ArgAction::SetTrue)]
    pub decrypt: bool,
    /// Force offline LUKS2 reencryption and bypass active device detection.
    #[arg(verbatim_doc_comment, long = "force-offline-reencrypt", action = ArgAction::SetTrue)]
    pub force_offline_reencrypt: bool,
    /// Maximal reencryption hotzone size.
    #[arg(
        verbatim_doc_comment,
        long = "hotzone-size",
        allow_hyphen_values = true
    )]
    pub hotzone_size: Option<String>,
    /// Initialize LUKS2 reencryption in metadata only.
    #[arg(verbatim_doc_comment, long = "init-only", action = ArgAction::SetTrue)]
    pub init_only: bool,
    /// Resume initialized LUKS2 reencryption only.
    #[arg(verbatim_doc_comment, long = "resume-only", action = ArgAction::SetTrue)]
    pub resume_only: bool,
    /// Reduce data device size (move data offset). DANGEROUS!
    #[arg(
        verbatim_doc_comment,
        long = "reduce-device-size",
        allow_hyphen_values = true
    )]
    pub reduce_device_size: Option<String>,
    /// Reencryption hotzone resilience type (checksum,journal,none)
    #[arg(long = "resilience")]
    pub resilience: Option<String>,
    /// Reencryption hotzone checksums hash
    #[arg(long = "resilience-hash")]
    pub resilience_hash: Option<String>,
    /// Print progress data in json format (suitable for machine processing)
    #[arg(long = "progress-json", action = ArgAction::SetTrue)]
    pub progress_json: bool,
    /// Progress line update (in seconds)
    #[arg(long = "progress-frequency")]
    pub progress_frequency: Option<u32>,
    /// Do not change volume key.
    #[arg(verbatim_doc_comment, long = "keep-key", action = ArgAction::SetTrue)]
    pub keep_key: bool,
    /// Reencryption block size
    #[arg(short = 'B', long = "block-size")]
    pub block_size: Option<u32>,
    /// Create new header on not encrypted device
    #[arg(short = 'N', long = "new", action = ArgAction::SetTrue)]
    pub new: bool,
    /// Use direct-io when accessing devices
    #[arg(long = "use-directio", action = ArgAction::SetTrue)]
    pub use_directio: bool,
    /// Use fsync after each block
    #[arg(long = "use-fsync", action = ArgAction::SetTrue)]
    pub use_fsync: bool,
    /// Update log file after every block
    #[arg(long = "write-log", action = ArgAction::SetTrue)]
    pub write_log: bool,
    /// What the command line gave, for cryptsetup's checks (filled in by the parser).
    #[arg(skip)]
    pub given: crate::option_tables::Given,
}

/// Parse `--device-size` as cryptsetup does: a number of bytes with an optional unit, `S` for
/// 512-byte sectors, `K`/`KiB`, `M`/`MiB`, ... (powers of 1024) or `KB`, `MB`, ... (powers of
/// 1000).
pub fn parse_device_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits);
    let n: u64 = num.parse().ok()?;
    let unit = unit.to_ascii_uppercase();
    let (prefix, base) = match unit.as_str() {
        "" => return Some(n),
        "S" => return n.checked_mul(512),
        u if u.ends_with("IB") => (&u[..u.len() - 2], 1024u64),
        u if u.ends_with('B') => (&u[..u.len() - 1], 1000u64),
        u => (u, 1024u64),
    };
    let exp = match prefix {
        "K" => 1,
        "M" => 2,
        "G" => 3,
        "T" => 4,
        "P" => 5,
        "E" => 6,
        _ => return None,
    };
    n.checked_mul(base.checked_pow(exp)?)
}

/// Parse a size like cryptsetup's metadata/keyslots sizes: bytes with an optional unit
/// (k, m, g; powers of 1024).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1024u64),
        'm' | 'M' => (&s[..s.len() - 1], 1024 * 1024),
        'g' | 'G' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_sizes() {
        assert_eq!(parse_device_size("4096"), Some(4096));
        assert_eq!(parse_device_size("8S"), Some(4096));
        assert_eq!(parse_device_size("1M"), Some(1 << 20));
        assert_eq!(parse_device_size("1MiB"), Some(1 << 20));
        assert_eq!(parse_device_size("1MB"), Some(1_000_000));
        assert_eq!(parse_device_size("2g"), Some(2 << 30));
        assert_eq!(parse_device_size("1X"), None);
        assert_eq!(parse_device_size("M"), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16384"), Some(16384));
        assert_eq!(parse_size("16k"), Some(16384));
        assert_eq!(parse_size("4m"), Some(4 << 20));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn options_anywhere() {
        let o = Opts::try_parse_from([
            "lukskit",
            "luksFormat",
            "-q",
            "img",
            "--type",
            "luks1",
            "-s",
            "256",
        ])
        .unwrap();
        assert_eq!(o.positional, vec!["luksFormat", "img"]);
        assert_eq!(o.r#type.as_deref(), Some("luks1"));
        assert_eq!(o.key_size, Some(256));
        assert!(o.batch_mode);
    }
}
