//! `crypttab open|close|list [NAME…] [--crypttab FILE]` and `rename OLD NEW`.
//!
//! The table is read, and each entry's open prepared, by crate `lukskit-crypttab` (typed
//! entries; the device found by `UUID=`, `LABEL=`, `PARTUUID=`, `PARTLABEL=`; key files and
//! headers on another device (`PATH:UUID=…`) mounted read-only for the time of the open).
//! Here each prepared entry becomes the command line `open` would be given for it — the same
//! options Debian's `cryptdisks_start` passes to cryptsetup — and is opened through
//! [`super::open::open`], so a crypttab entry and `lukskit open` set up the same mapping
//! through the same code. `list` prints that command line for every entry. A failed entry
//! does not stop the others; entries with `nofail` do not make the command fail.

use super::need_args;
use crate::args::Opts;
use crate::errors::{inactive, CliError, ExitClass, Result};
use lukskit_activate as activate;
use lukskit_crypto::SecretBuf;
use lukskit_crypttab::locate::resolve;
use lukskit_crypttab::mount::display_path;
use lukskit_crypttab::plan::{check_refused, key_file, not_for_kind};
use lukskit_crypttab::{
    Action, CryptKind, CrypttabEntry, CrypttabError, DeviceSpec, OpenPlan, PlanWarning, SealedKey,
    Selection, VolumeKind, DEFAULT_CRYPTTAB,
};
use lukskit_tokens::{SealedKeyError, SealedKeyFile};

/// `crypttab open|close|list [NAME…]`.
pub fn crypttab(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, usize::MAX, "<open|close|list> [<name>...]")?;
    let path = o.crypttab.as_deref().unwrap_or(DEFAULT_CRYPTTAB);
    let table = lukskit_crypttab::read_table(path).map_err(crypttab_error)?;
    let names = &args[1..];
    let sub = args[0].as_str();
    let Some(action) = Action::parse(sub) else {
        return Err(CliError::invalid(format!(
            "Unknown crypttab action {sub} (open, close or list)."
        )));
    };
    let mut worst: Option<ExitClass> = None;
    let mut fail = |kind: ExitClass| {
        worst.get_or_insert(kind);
    };
    let selection = Selection::new(&table, action, names);
    // Lines that are not entries: reported, and a failure whenever they could be one the
    // caller asked for.
    for p in &selection.problems {
        eprintln!(
            "{path}:{}: {}{}.",
            p.line,
            p.name
                .as_ref()
                .map(|n| format!("{n}: "))
                .unwrap_or_default(),
            p.message
        );
        fail(ExitClass::Invalid);
    }
    for n in &selection.missing {
        eprintln!("{n}: not found in {path}.");
        fail(ExitClass::Device);
    }
    for e in selection.entries {
        let res = match action {
            Action::Open => open_entry(o, e),
            Action::Close => close_entry(e),
            Action::List => {
                list_entry(e);
                Ok(())
            }
        };
        if let Err(err) = res {
            let nofail = if e.options.nofail {
                " (nofail: not counted as a failure)"
            } else {
                ""
            };
            eprintln!("{}: {}{nofail}", e.name, err.message);
            if !e.options.nofail {
                fail(err.class);
            }
        }
    }
    match worst {
        None => Ok(()),
        Some(class) => Err(CliError::new(class, "")),
    }
}

/// The command line's error for a failure of the crypttab library: a missing table, device
/// or mount is a device error, the rest invalid input.
fn crypttab_error(e: CrypttabError) -> CliError {
    let message = e.to_string();
    match e {
        CrypttabError::Read { .. }
        | CrypttabError::DeviceNotFound(_)
        | CrypttabError::FileDeviceNotFound { .. }
        | CrypttabError::Mount { .. } => CliError::device(message),
        _ => CliError::invalid(message),
    }
}

/// Warnings for the options an entry has that lukskit ignores; an error for those it
/// refuses.
fn check_options(e: &CrypttabEntry) -> Result<()> {
    for i in &e.options.ignored {
        eprintln!(
            "{}: WARNING: option '{}' ignored: {}.",
            e.name, i.option, i.reason
        );
    }
    check_refused(e).map_err(crypttab_error)
}

/// The `open` command line for an entry (without the program name): the options Debian's
/// `unlock_mapping` passes to cryptsetup, as lukskit spells them. An entry whose key file
/// holds a sealed key ([`sealed_key`]) opens with the passphrase unsealed from it, asked
/// for when that fails, and without the volume's tokens (as systemd-cryptsetup).
fn open_argv(
    e: &CrypttabEntry,
    source: &str,
    kind: VolumeKind,
    key: Option<&str>,
    header: Option<&str>,
    tcrypt_keys: &[String],
) -> Vec<String> {
    let o = &e.options;
    let sealed = key.is_some() && sealed_key(e, kind).is_some();
    let key = key.filter(|_| !sealed);
    let mut a: Vec<String> = vec!["open".into(), "--type".into(), kind.as_str().into()];
    if sealed {
        a.push("--disable-external-tokens".into());
    }
    let mut opt = |name: &str, v: Option<String>| match v {
        // A value that starts with '-' must not read as an option.
        Some(v) if v.starts_with('-') => a.push(format!("--{name}={v}")),
        Some(v) => {
            a.push(format!("--{name}"));
            a.push(v);
        }
        None => {}
    };
    match kind {
        VolumeKind::Luks => {
            opt("header", header.map(str::to_string));
            opt("key-slot", o.key_slot.map(|v| v.to_string()));
            opt("keyfile-size", o.keyfile_size.map(|v| v.to_string()));
        }
        VolumeKind::Plain => {
            opt("cipher", o.cipher.clone());
            opt("key-size", o.key_size.map(|v| v.to_string()));
            opt("hash", o.hash.clone());
            opt("offset", o.offset.map(|v| v.to_string()));
            opt("skip", o.skip.map(|v| v.to_string()));
        }
        VolumeKind::Bitlk => opt("keyfile-size", o.keyfile_size.map(|v| v.to_string())),
        VolumeKind::Tcrypt => {}
    }
    if kind == VolumeKind::Tcrypt {
        let t = &o.tcrypt;
        opt("veracrypt-pim", t.pim.map(|v| v.to_string()));
        // TrueCrypt's key files are `-d`; the entry's key file holds the passphrase (its
        // first line, read by open_entry, as systemd reads it).
        for k in tcrypt_keys {
            opt("key-file", Some(k.clone()));
        }
    } else {
        opt("sector-size", o.sector_size.map(|v| v.to_string()));
        opt("keyfile-offset", o.keyfile_offset.map(|v| v.to_string()));
        opt("key-file", key.map(str::to_string));
    }
    // A key file is read once; a prompt is asked `tries=` times (0: until it is right).
    let tries = match (key, o.tries) {
        (Some(_), _) => 1,
        (None, Some(0)) => u32::MAX,
        (None, t) => t.unwrap_or(3),
    };
    opt("tries", Some(tries.to_string()));
    // `auto` is what open does without the option.
    opt(
        "tpm2-device",
        o.tpm2_device.clone().filter(|d| d.as_str() != "auto"),
    );
    // How long a systemd-tpm2 token waits for its TPM (token-timeout=, systemd's 30 s with
    // tpm2-device=): only where tokens are tried (LUKS, no key file).
    let tokens_tried = kind == VolumeKind::Luks && key.is_none();
    opt(
        "token-timeout",
        o.token_wait()
            .filter(|_| tokens_tried)
            .map(|v| v.to_string()),
    );
    opt("timeout", o.timeout.map(|v| v.to_string()));
    for (on, flag) in [
        (o.verify, "--verify-passphrase"),
        (o.readonly, "--readonly"),
        (o.discard, "--allow-discards"),
        (o.same_cpu_crypt, "--perf-same_cpu_crypt"),
        (o.submit_from_crypt_cpus, "--perf-submit_from_crypt_cpus"),
        (o.no_read_workqueue, "--perf-no_read_workqueue"),
        (o.no_write_workqueue, "--perf-no_write_workqueue"),
        (o.tcrypt.hidden, "--tcrypt-hidden"),
        (o.tcrypt.system, "--tcrypt-system"),
        (o.tcrypt.veracrypt, "--veracrypt"),
    ] {
        if on {
            a.push(flag.into());
        }
    }
    if source.starts_with('-') || e.name.starts_with('-') {
        a.push("--".into());
    }
    a.push(source.into());
    a.push(e.name.clone());
    a
}

/// What an entry's key file holds when it is not the passphrase (`tpm2-device=` or
/// `pkcs11-uri=URI` with a key file, as systemd 252 reads them for LUKS, plain and BitLocker
/// volumes); `None` for a plain key file.
fn sealed_key(e: &CrypttabEntry, kind: VolumeKind) -> Option<SealedKey> {
    match kind {
        VolumeKind::Tcrypt => None,
        _ => e.options.sealed_key(),
    }
}

/// What systemd-cryptsetup 252 gives the volume from an unsealed or decrypted key: its base64
/// text as the passphrase, except for a plain volume with `hash=plain`, which it activates with
/// the raw secret as the volume key (`pass_volume_key`): with that hash the passphrase bytes
/// are the key, so the raw bytes are given as the passphrase.
fn sealed_secret_as_given(kind: VolumeKind, hash: Option<&str>, raw: SecretBuf) -> SecretBuf {
    if kind == VolumeKind::Plain && hash == Some("plain") {
        raw
    } else {
        raw.to_base64()
    }
}

/// The secret in the sealed key file `path` of entry `e`; `None` after one line saying
/// why not, in systemd-cryptsetup's words (the passphrase is then asked).
fn sealed_secret(e: &CrypttabEntry, sealed: &SealedKey, path: &str) -> Option<SecretBuf> {
    let o = &e.options;
    let file = match crate::input::read_keyfile(path, o.keyfile_offset.unwrap_or(0), o.keyfile_size)
    {
        Ok(f) => f,
        Err(err) => {
            eprintln!(
                "{}: cannot read the sealed key file {path}: {}",
                e.name, err.message
            );
            return None;
        }
    };
    let wait = o.token_wait().map(|s| match s {
        0 => std::time::Duration::MAX,
        s => std::time::Duration::from_secs(s),
    });
    let key = match sealed {
        SealedKey::Tpm2 { pcr_mask, pin, .. } => SealedKeyFile::Tpm2 {
            blob: file.as_bytes(),
            pcr_mask: *pcr_mask,
            pin: *pin,
        },
        SealedKey::Pkcs11 { uri } => SealedKeyFile::Pkcs11 {
            encrypted_key: file.as_bytes(),
            uri,
        },
    };
    let device = match sealed {
        SealedKey::Tpm2 { device, .. } => Some(device.clone()),
        SealedKey::Pkcs11 { .. } => None,
    };
    match super::tokens::sealed_key_secret(key, device, wait, &e.name) {
        Ok(p) => Some(p),
        Err(err) => {
            let line = match (&err, sealed) {
                (SealedKeyError::Tpm2Pin, _) => {
                    "TPM2 PIN unlock failed, falling back to traditional unlocking.".to_string()
                }
                (_, SealedKey::Tpm2 { .. }) => {
                    format!("TPM2 operation failed, falling back to traditional unlocking: {err}.")
                }
                (_, SealedKey::Pkcs11 { .. }) => format!(
                    "PKCS#11 operation failed, falling back to traditional unlocking: {}.",
                    lukskit_tokens::printable(&err.to_string())
                ),
            };
            eprintln!("{line}");
            None
        }
    }
}

/// Open one entry.
fn open_entry(o: &Opts, e: &CrypttabEntry) -> Result<()> {
    check_options(e)?;
    if activate::find(&e.name)?.is_some() {
        println!("{}: already active.", e.name);
        return Ok(());
    }
    let plan = OpenPlan::prepare(e, &mut |w| match w {
        // Debian's cryptdisks (crypttab_key_check) words.
        PlanWarning::InsecureKeyFile { path } => eprintln!(
            "WARNING: {}: key file {path} has insecure ownership, see \
             /usr/share/doc/cryptsetup/README.Debian.gz.",
            e.name
        ),
        PlanWarning::NotForKind { option, kind } => eprintln!(
            "{}: WARNING: option {option} has no effect on a {kind} volume; ignored.",
            e.name
        ),
    })
    .map_err(crypttab_error)?;
    let src = plan.source.display().to_string();
    let argv = open_argv(
        e,
        &src,
        plan.kind,
        plan.key.as_deref(),
        plan.header.as_deref(),
        &plan.tcrypt_keys,
    );
    let argv: Vec<std::ffi::OsString> = std::iter::once("lukskit".to_string())
        .chain(argv)
        .map(Into::into)
        .collect();
    let mut eo = crate::startup::parse(&argv).map_err(CliError::invalid)?;
    // A sealed key file: its passphrase answers the first prompt (the passphrase is asked
    // when it cannot be had, or does not open the volume).
    if let (Some(sealed), Some(path)) = (sealed_key(e, plan.kind), plan.key.as_deref()) {
        let secret = sealed_secret(e, &sealed, path)
            .map(|p| sealed_secret_as_given(plan.kind, e.options.hash.as_deref(), p));
        crate::input::preset_passphrase(secret);
    }
    if plan.kind == VolumeKind::Tcrypt {
        eo.passphrase_file = plan.key.clone();
    }
    // What the crypttab command line says for every entry.
    eo.verbose = o.verbose;
    eo.debug = o.debug;
    eo.batch_mode = o.batch_mode;
    eo.backend = o.backend.clone();
    eo.disable_locks = o.disable_locks;
    crate::input::set_prompt_timeout(eo.timeout.unwrap_or(0));
    let args = eo.positional[1..].to_vec();
    let res = if e.options.keyctl_cache {
        // One passphrase read per open; the cache decides when to ask again.
        eo.tries = Some(1);
        super::passphrase_cache::open_with_cache(e, || super::open::open(&eo, "open", &args))
    } else {
        super::open::open(&eo, "open", &args)
    };
    crate::input::set_prompt_timeout(o.timeout.unwrap_or(0));
    crate::input::preset_passphrase(None);
    plan.finish();
    res?;
    println!("{}: opened.", e.name);
    Ok(())
}

/// Close one entry's mapping, if it is active.
fn close_entry(e: &CrypttabEntry) -> Result<()> {
    match activate::find(&e.name)? {
        None => {
            println!("{}: not active.", e.name);
            Ok(())
        }
        Some(m) => {
            m.close(false)?;
            println!("{}: closed.", e.name);
            Ok(())
        }
    }
}

/// What `open` would do for one entry.
fn list_entry(e: &CrypttabEntry) {
    let o = &e.options;
    let active = matches!(activate::find(&e.name), Ok(Some(_)));
    let source = resolve(&e.source);
    let mut flags = Vec::new();
    for (on, f) in [
        (o.noauto, "noauto"),
        (o.nofail, "nofail"),
        (o.initramfs, "initramfs"),
        (o.netdev, "_netdev"),
    ] {
        if on {
            flags.push(f);
        }
    }
    let state = if active {
        "active (open leaves it as it is)".to_string()
    } else if let Some(r) = o.refused.first() {
        format!("not opened: option '{}' is not supported", r.option)
    } else if source.is_none() {
        format!("fails: device {} not found", e.source)
    } else if o.noauto {
        "opened only when named (noauto)".to_string()
    } else {
        "opened".to_string()
    };
    println!("{} (line {}): {state}", e.name, e.line);
    match &source {
        Some(p) if DeviceSpec::Path(p.display().to_string()) != e.source => {
            println!("  source:  {} = {}", e.source, p.display())
        }
        Some(p) => println!("  source:  {}", p.display()),
        None => println!("  source:  {} (not found)", e.source),
    }
    let key_path = display_path;
    let (key_text, key) = match key_file(e) {
        None => {
            let t = match o.tries {
                Some(0) => "until right".to_string(),
                t => format!("{} tries", t.unwrap_or(3)),
            };
            let cache = if o.keyctl_cache {
                format!(
                    ", cached {} s in the kernel keyring as user key {} in @u (decrypt_keyctl)",
                    super::passphrase_cache::CACHE_SECONDS,
                    super::passphrase_cache::description(e)
                )
            } else {
                String::new()
            };
            (
                format!("passphrase asked on the console ({t}{cache})"),
                None,
            )
        }
        Some(f) => (format!("key file {f}"), Some(key_path(&f))),
    };
    let header = o.header.as_ref().map(key_path);
    let kind = if o.header.as_ref().is_some_and(|h| h.device.is_some()) {
        VolumeKind::Luks
    } else {
        VolumeKind::of(e, source.as_deref(), header.as_deref())
    };
    let key_text = match (sealed_key(e, kind), &key) {
        (
            Some(SealedKey::Tpm2 {
                device,
                pcr_mask,
                pin,
            }),
            Some(_),
        ) => format!(
            "TPM2-sealed {key_text}, unsealed on TPM {device} (PCRs {}{}), else passphrase asked",
            pcr_names(pcr_mask),
            if pin { ", with PIN" } else { "" }
        ),
        (Some(SealedKey::Pkcs11 { uri }), Some(_)) => format!(
            "PKCS#11-encrypted {key_text}, decrypted by {}, else passphrase asked",
            lukskit_tokens::printable(&uri)
        ),
        _ => key_text,
    };
    println!("  key:     {key_text}");
    let how = match o.kind {
        CryptKind::Auto => " (detected)",
        _ => "",
    };
    println!("  type:    {kind}{how}");
    if !flags.is_empty() {
        println!("  flags:   {}", flags.join(", "));
    }
    let src = source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| e.source.to_string());
    let tcrypt_keys: Vec<String> = o.tcrypt.key_files.iter().map(key_path).collect();
    let argv = open_argv(
        e,
        &src,
        kind,
        key.as_deref(),
        header.as_deref(),
        &tcrypt_keys,
    );
    // A TrueCrypt entry's key file is its passphrase's line on standard input.
    let stdin = match (&key, kind) {
        (Some(k), VolumeKind::Tcrypt) => format!(" < {}", shell_words(std::slice::from_ref(k))),
        _ => String::new(),
    };
    println!("  command: lukskit {}{stdin}", shell_words(&argv));
    for i in &o.ignored {
        println!("  warning: option '{}' ignored: {}", i.option, i.reason);
    }
    for n in not_for_kind(e, kind) {
        println!("  warning: option {n} has no effect on a {kind} volume; ignored");
    }
    for r in &o.refused {
        println!("  error:   option '{}': {}", r.option, r.reason);
    }
}

/// A PCR mask as systemd lists PCRs (`0+7`; `none` for no PCR).
fn pcr_names(mask: u32) -> String {
    let v: Vec<String> = (0..24)
        .filter(|n| mask & (1 << n) != 0)
        .map(|n: u32| n.to_string())
        .collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join("+")
    }
}

/// Arguments quoted for a shell where they need it.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `rename OLD NEW`: give an active kernel mapping another name (DM_DEV_RENAME, as
/// `dmsetup rename`; the DM UUID keeps the name it was opened with, as after dmsetup).
pub fn rename(_o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 2, 2, "<name> <new name>")?;
    let old = activate::mapping_name(&args[0]);
    let new = activate::mapping_name(&args[1]);
    let m = activate::find(old)?.ok_or_else(|| inactive(old))?;
    Ok(m.rename(new)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_volume_with_hash_plain_gets_the_raw_secret() {
        let secret = || SecretBuf::from_slice(&[0, 1, 2, 0xff]);
        let raw = sealed_secret_as_given(VolumeKind::Plain, Some("plain"), secret());
        assert_eq!(raw.as_bytes(), &[0, 1, 2, 0xff]);
        for (kind, hash) in [
            (VolumeKind::Plain, None),
            (VolumeKind::Plain, Some("sha256")),
            (VolumeKind::Luks, Some("plain")),
            (VolumeKind::Bitlk, None),
        ] {
            let given = sealed_secret_as_given(kind, hash, secret());
            assert_eq!(given.as_bytes(), b"AAEC/w==", "{kind:?} {hash:?}");
        }
    }

    fn entry(line: &str) -> CrypttabEntry {
        lukskit_crypttab::parse_line(line).unwrap().unwrap()
    }

    /// `argv` parsed as lukskit's own command line, as open_entry parses it.
    fn parse_argv(argv: Vec<String>) -> Opts {
        let argv: Vec<std::ffi::OsString> = std::iter::once("lukskit".to_string())
            .chain(argv)
            .map(Into::into)
            .collect();
        crate::startup::parse(&argv).unwrap()
    }

    #[test]
    fn argv_as_debian_passes_it() {
        let e = entry("c2 /dev/vdb /k luks,header=/h,keyslot=1,keyfile-size=64,keyfile-offset=8,discard,readonly,cipher=x,offset=9,no-read-workqueue");
        let a = open_argv(
            &e,
            "/dev/vdb",
            VolumeKind::Luks,
            Some("/k"),
            Some("/h"),
            &[],
        );
        assert_eq!(
            shell_words(&a),
            "open --type luks --header /h --key-slot 1 --keyfile-size 64 --keyfile-offset 8 \
             --key-file /k --tries 1 --readonly --allow-discards --perf-no_read_workqueue \
             /dev/vdb c2"
        );
        // Each argument parses as lukskit's own command line.
        let o = parse_argv(a);
        assert_eq!(o.key_slot, Some(1));
        assert!(o.perf_no_read_workqueue && o.readonly && o.allow_discards);

        let e = entry("p /dev/vdc none plain,cipher=aes-xts-plain64,size=512,hash=sha256,offset=8,skip=4,sector-size=4096,tries=0,timeout=30,keyfile-size=9");
        let a = open_argv(&e, "/dev/vdc", VolumeKind::Plain, None, None, &[]);
        assert_eq!(
            shell_words(&a),
            "open --type plain --cipher aes-xts-plain64 --key-size 512 --hash sha256 --offset 8 \
             --skip 4 --sector-size 4096 --tries 4294967295 --timeout 30 /dev/vdc p"
        );
        let e = entry("-n -dev none cipher=-c,plain");
        let a = open_argv(&e, "-dev", VolumeKind::Plain, Some("-k"), None, &[]);
        let o = parse_argv(a);
        assert_eq!(o.positional, ["open", "-dev", "-n"]);
        assert_eq!(
            (o.cipher.as_deref(), o.key_file.as_deref()),
            (Some("-c"), Some("-k"))
        );
        // tpm2-device= waits systemd's 30 s for the TPM, token-timeout= says otherwise.
        let e = entry("t /dev/vdd none luks,tpm2-device=/dev/tpmrm1");
        let a = open_argv(&e, "/dev/vdd", VolumeKind::Luks, None, None, &[]);
        assert_eq!(
            shell_words(&a),
            "open --type luks --tries 3 --tpm2-device /dev/tpmrm1 --token-timeout 30 /dev/vdd t"
        );
        assert_eq!(parse_argv(a).token_timeout, Some(30));
        let e = entry("t /dev/vdd none luks,token-timeout=0");
        let a = open_argv(&e, "/dev/vdd", VolumeKind::Luks, None, None, &[]);
        assert_eq!(parse_argv(a).token_timeout, Some(0));
        let e = entry("q /dev/vdc - tries=5");
        assert!(
            shell_words(&open_argv(&e, "/x y", VolumeKind::Luks, None, None, &[]))
                .ends_with("--tries 5 '/x y' q")
        );
    }

    #[test]
    fn argv_of_truecrypt_entries() {
        let e = entry("vc /dev/sdb /p tcrypt-hidden,veracrypt-pim=7,tcrypt-keyfile=/a,tcrypt-keyfile=-b,discard");
        let a = open_argv(
            &e,
            "/dev/sdb",
            VolumeKind::Tcrypt,
            Some("/p"),
            None,
            &["/a".into(), "-b".into()],
        );
        assert_eq!(
            shell_words(&a),
            "open --type tcrypt --veracrypt-pim 7 --key-file /a --key-file=-b --tries 1 \
             --allow-discards --tcrypt-hidden /dev/sdb vc"
        );
        // The passphrase file is not a key file of the pool; every -d is, in order.
        let o = parse_argv(a);
        assert_eq!(o.key_files, ["/a", "-b"]);
        assert_eq!(o.veracrypt_pim, Some(7));
        assert!(o.given.has("tcrypt-hidden") && o.allow_discards);
        let e = entry("w /dev/sdc /pw bitlk,keyfile-size=8");
        let a = open_argv(&e, "/dev/sdc", VolumeKind::Bitlk, Some("/pw"), None, &[]);
        assert_eq!(
            shell_words(&a),
            "open --type bitlk --keyfile-size 8 --key-file /pw --tries 1 /dev/sdc w"
        );
    }
}
