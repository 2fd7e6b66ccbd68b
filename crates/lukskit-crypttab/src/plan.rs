//! What an action does with a table: the entries it works on ([`Selection`]) and, for
//! `open`, what each entry's open needs ([`OpenPlan`]): the device found, the key file and
//! header (mounted from another device where they are on one), the volume type (the entry's
//! option, or what is on the device). The open itself is the caller's.

use crate::error::CrypttabError;
use crate::locate::{first_bytes, resolve};
use crate::mount::{file_path, ReadOnlyMount};
use crate::table::{
    self, CryptKind, Crypttab, CrypttabEntry, FileRef, KeySpec, LineProblem, MAX_TABLE_BYTES,
};
use lukskit_volume::formats::bitlk::Bitlk;
use lukskit_volume::formats::{OnDiskFormat, Probe, PROBE_BYTES};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The table read when no other is named.
pub const DEFAULT_CRYPTTAB: &str = "/etc/crypttab";

/// Where systemd-cryptsetup looks for the key of an entry whose key field is `none`, `-` or
/// absent: `NAME.key` in these directories.
pub const KEY_DIRS: [&str; 2] = ["/etc/cryptsetup-keys.d", "/run/cryptsetup-keys.d"];

/// Read at most [`MAX_TABLE_BYTES`] of the table at `path` and parse it.
pub fn read_table(path: &str) -> Result<Crypttab, CrypttabError> {
    let read = |source| CrypttabError::Read {
        path: path.to_string(),
        source,
    };
    let f = std::fs::File::open(path).map_err(read)?;
    let mut buf = Vec::new();
    f.take(MAX_TABLE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(read)?;
    if buf.len() as u64 > MAX_TABLE_BYTES {
        return Err(CrypttabError::TooLarge {
            path: path.to_string(),
        });
    }
    Ok(table::parse(&buf))
}

/// What is done with the entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Set the mappings up.
    Open,
    /// Take the mappings down (in reverse order: later entries may sit on earlier ones).
    Close,
    /// Say what `open` would do.
    List,
}

impl Action {
    /// `open`, `close` or `list`.
    pub fn parse(s: &str) -> Option<Action> {
        match s {
            "open" => Some(Action::Open),
            "close" => Some(Action::Close),
            "list" => Some(Action::List),
            _ => None,
        }
    }
}

/// The entries an action works on, with what the caller should report first.
#[derive(Debug)]
pub struct Selection<'t> {
    /// Lines that are not entries but could be ones the caller asked for (all of them when
    /// no name was given): each a failure of the action.
    pub problems: Vec<&'t LineProblem>,
    /// Names asked for that are neither an entry nor a line with a problem.
    pub missing: Vec<&'t str>,
    /// The entries, in the order to work on them.
    pub entries: Vec<&'t CrypttabEntry>,
}

impl<'t> Selection<'t> {
    /// The entries of `table` named in `names` (every entry when there is none, but for
    /// `open` those with `noauto`), in table order (reversed for [`Action::Close`]).
    pub fn new(table: &'t Crypttab, action: Action, names: &'t [String]) -> Selection<'t> {
        let problems = table
            .problems
            .iter()
            .filter(|p| names.is_empty() || p.name.as_ref().is_some_and(|n| names.contains(n)))
            .collect();
        let mut missing = Vec::new();
        let mut entries: Vec<&CrypttabEntry> = if names.is_empty() {
            table
                .entries
                .iter()
                .filter(|e| action != Action::Open || !e.options.noauto)
                .collect()
        } else {
            let mut v = Vec::new();
            for n in names {
                match table.entries.iter().find(|e| &e.name == n) {
                    Some(e) => v.push(e),
                    None if table.problems.iter().any(|p| p.name.as_ref() == Some(n)) => {}
                    None => missing.push(n.as_str()),
                }
            }
            v
        };
        if action == Action::Close {
            entries.reverse();
        }
        Selection {
            problems,
            missing,
            entries,
        }
    }
}

/// The type of volume an entry is opened as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeKind {
    /// LUKS1 or LUKS2.
    Luks,
    /// Plain dm-crypt.
    Plain,
    /// TrueCrypt or VeraCrypt.
    Tcrypt,
    /// BitLocker.
    Bitlk,
}

impl VolumeKind {
    /// The name, as `open --type` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            VolumeKind::Luks => "luks",
            VolumeKind::Plain => "plain",
            VolumeKind::Tcrypt => "tcrypt",
            VolumeKind::Bitlk => "bitlk",
        }
    }

    /// The kind of an entry: its `luks`/`plain`/`tcrypt`/`bitlk` option, or what is on
    /// `source` (a LUKS or BitLocker signature; plain otherwise, as both dialects fall
    /// back). An entry with a detached header is LUKS.
    pub fn of(e: &CrypttabEntry, source: Option<&Path>, header: Option<&str>) -> VolumeKind {
        match e.options.kind {
            CryptKind::Luks => VolumeKind::Luks,
            CryptKind::Plain => VolumeKind::Plain,
            CryptKind::Tcrypt => VolumeKind::Tcrypt,
            CryptKind::Bitlk => VolumeKind::Bitlk,
            CryptKind::Auto if header.is_some() => VolumeKind::Luks,
            CryptKind::Auto => {
                let head = source.and_then(|s| first_bytes(s, PROBE_BYTES));
                match head {
                    Some(b) if lukskit_format::detect::detect(&b).is_some() => VolumeKind::Luks,
                    Some(b) if Bitlk.probe(&b) == Probe::Mine => VolumeKind::Bitlk,
                    _ => VolumeKind::Plain,
                }
            }
        }
    }
}

impl fmt::Display for VolumeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Options of the entry that do not apply to its kind (dropped, as Debian's and systemd's
/// tools drop them), for a warning.
pub fn not_for_kind(e: &CrypttabEntry, kind: VolumeKind) -> Vec<&'static str> {
    let o = &e.options;
    let luks_only: [(bool, &str); 3] = [
        (o.header.is_some(), "header="),
        (o.key_slot.is_some(), "key-slot="),
        (
            o.keyfile_size.is_some() && kind != VolumeKind::Bitlk,
            "keyfile-size=",
        ),
    ];
    let plain_only: [(bool, &str); 5] = [
        (o.cipher.is_some(), "cipher="),
        (o.key_size.is_some(), "size="),
        (o.hash.is_some(), "hash="),
        (o.offset.is_some(), "offset="),
        (o.skip.is_some(), "skip="),
    ];
    let luks = luks_only.iter().filter(|_| kind != VolumeKind::Luks);
    let plain = plain_only.iter().filter(|_| kind != VolumeKind::Plain);
    luks.chain(plain)
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect()
}

/// The key of an entry: its key file, else systemd's `/etc/cryptsetup-keys.d/NAME.key` (or
/// `/run/…`) for an entry that asks for a passphrase; `None` to ask.
pub fn key_file(e: &CrypttabEntry) -> Option<FileRef> {
    if e.options.keyctl_cache {
        // decrypt_keyctl: the key field names the cached passphrase, it is no file.
        return None;
    }
    match &e.key {
        KeySpec::File(f) => Some(f.clone()),
        KeySpec::Prompt => KEY_DIRS
            .iter()
            .map(|d| Path::new(d).join(format!("{}.key", e.name)))
            .find(|p| p.is_file())
            .map(|p| FileRef {
                path: p.display().to_string(),
                device: None,
            }),
    }
}

/// Whether a key file is not root's own or can be read or written by others (its group or
/// anyone): Debian's `crypttab_key_check` warns then (the mode's last two octal digits not
/// 00, or an owner other than root; links followed). /dev/random and /dev/urandom are not
/// looked at.
pub fn insecure_key_file(path: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    if matches!(path, "/dev/random" | "/dev/urandom") {
        return false;
    }
    std::fs::metadata(path).is_ok_and(|m| m.uid() != 0 || m.mode() & 0o077 != 0)
}

/// The first option of the entry that lukskit refuses, as an error.
pub fn check_refused(e: &CrypttabEntry) -> Result<(), CrypttabError> {
    match e.options.refused.first() {
        Some(r) => Err(CrypttabError::Refused {
            option: r.option.clone(),
            reason: r.reason.clone(),
        }),
        None => Ok(()),
    }
}

/// Something the caller should warn about while an entry's open is prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanWarning {
    /// The key file is not root's own or others may read or write it (Debian's
    /// `crypttab_key_check`).
    InsecureKeyFile {
        /// The key file's path (as it is read, under a mount for one on another device).
        path: String,
    },
    /// An option that does not apply to the entry's kind, dropped.
    NotForKind {
        /// The option (`cipher=`, …).
        option: &'static str,
        /// The kind the entry is opened as.
        kind: VolumeKind,
    },
}

/// What one entry's open needs; the devices of files on other devices stay mounted until it
/// is dropped.
#[derive(Debug)]
pub struct OpenPlan {
    /// The encrypted device.
    pub source: PathBuf,
    /// The kind of volume.
    pub kind: VolumeKind,
    /// The key file's path (`None`: ask for the passphrase).
    pub key: Option<String>,
    /// The detached header's path.
    pub header: Option<String>,
    /// TrueCrypt key files' paths, in order.
    pub tcrypt_keys: Vec<String>,
    mounts: Vec<ReadOnlyMount>,
}

impl OpenPlan {
    /// Find the entry's device, key file and header (mounting other devices holding them)
    /// and its kind; `warn` is told of what deserves a warning as it is found.
    pub fn prepare(
        e: &CrypttabEntry,
        warn: &mut dyn FnMut(PlanWarning),
    ) -> Result<OpenPlan, CrypttabError> {
        let source =
            resolve(&e.source).ok_or_else(|| CrypttabError::DeviceNotFound(e.source.clone()))?;
        let mut mounts = Vec::new();
        let key = match key_file(e) {
            None => None,
            Some(f) => Some(file_path(&f, &mut mounts)?),
        };
        if let Some(k) = key.as_deref().filter(|k| insecure_key_file(k)) {
            warn(PlanWarning::InsecureKeyFile {
                path: k.to_string(),
            });
        }
        let header = match &e.options.header {
            Some(h) => Some(file_path(h, &mut mounts)?),
            None => None,
        };
        let kind = VolumeKind::of(e, Some(&source), header.as_deref());
        for option in not_for_kind(e, kind) {
            warn(PlanWarning::NotForKind { option, kind });
        }
        let tcrypt_keys = e
            .options
            .tcrypt
            .key_files
            .iter()
            .map(|f| file_path(f, &mut mounts))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(OpenPlan {
            source,
            kind,
            key,
            header,
            tcrypt_keys,
            mounts,
        })
    }

    /// Unmount what [`OpenPlan::prepare`] mounted (also done when the plan is dropped).
    pub fn finish(self) {
        drop(self.mounts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(line: &str) -> CrypttabEntry {
        table::parse_line(line).unwrap().unwrap()
    }

    #[test]
    fn options_of_the_other_kind() {
        let e = entry("a /dev/x - cipher=x,size=256,keyslot=1,keyfile-size=8,header=/h");
        assert_eq!(not_for_kind(&e, VolumeKind::Luks), ["cipher=", "size="]);
        assert_eq!(
            not_for_kind(&e, VolumeKind::Plain),
            ["header=", "key-slot=", "keyfile-size="]
        );
        assert_eq!(
            not_for_kind(&e, VolumeKind::Tcrypt),
            ["header=", "key-slot=", "keyfile-size=", "cipher=", "size="]
        );
        assert_eq!(
            not_for_kind(&e, VolumeKind::Bitlk),
            ["header=", "key-slot=", "cipher=", "size="]
        );
    }

    #[test]
    fn selection_of_entries() {
        let t =
            table::parse(b"a /dev/x\nb /dev/y - noauto\nbad\nc /dev/z - luks,plain\nd /dev/w\n");
        let none: Vec<String> = Vec::new();
        let s = Selection::new(&t, Action::Open, &none);
        let names: Vec<&str> = s.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a", "d"]);
        assert_eq!(s.problems.len(), 2);
        let s = Selection::new(&t, Action::Close, &none);
        let names: Vec<&str> = s.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["d", "b", "a"]);
        let asked: Vec<String> = ["b", "c", "zz"].map(String::from).to_vec();
        let s = Selection::new(&t, Action::Open, &asked);
        let names: Vec<&str> = s.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["b"]);
        assert_eq!(s.missing, ["zz"]);
        assert_eq!(s.problems.len(), 1);
        assert_eq!(s.problems[0].name.as_deref(), Some("c"));
    }
}
