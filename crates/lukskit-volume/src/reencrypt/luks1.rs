//! LUKS1 re-encryption, offline, with the files and algorithm of cryptsetup 2.6's legacy
//! LUKS1 code (`cryptsetup reencrypt` on a LUKS1 device, formerly `cryptsetup-reencrypt`), so
//! that a run interrupted by either tool is resumed by the other:
//!
//! * in the current directory, `LUKS-<uuid>.log` (one 512-byte sector of text: version,
//!   UUID, direction, mode, offset, shift), `LUKS-<uuid>.org` (the old header, or a
//!   `cipher_null` one for an encryption) and `LUKS-<uuid>.new` (the new header, or a
//!   `cipher_null` one for a decryption); both headers are detached LUKS1 headers whose data
//!   offset points into the data device. An encryption uses the UUID [`NO_UUID`].
//! * while it runs, the device's LUKS1 magic is `LUKS\xde\xad` ([`NOMAGIC`]): nothing opens it.
//! * the data is copied from the old mapping to the new one in blocks, forward, or backward
//!   when the data offset grows (`--reduce-device-size`); the log's `offset` is the boundary.
//!
//! Crash safety, which cryptsetup's legacy code does not have (it updates the log only with
//! `--write-log`, and after the data is written): before a block is written, lukskit stores a
//! redo record of it in `LUKS-<uuid>.lukskit-journal` (the block as it will be written when
//! that is ciphertext, otherwise its old ciphertext, so that plaintext is never copied out of
//! the device) and `fsync`s it; after the write it `fdatasync`s the device and then moves the
//! log past the block (`fsync`). On resume a record that matches the log's offset is replayed
//! first. cryptsetup ignores that file; a run interrupted by a signal (both tools stop
//! between blocks and write the log) is resumed by either tool.

use crate::data::DataVolume;
use crate::device::{crash_before_sync, crash_before_write};
use crate::error::{IoOp, Result, VolumeError};
use lukskit_crypto::hash::HashAlg;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

/// The UUID cryptsetup gives the files of an encryption (the device has no UUID yet).
pub const NO_UUID: &str = "cafecafe-cafe-cafe-cafe-cafecafeeeee";
/// LUKS1 magic.
pub const MAGIC: [u8; 6] = *b"LUKS\xba\xbe";
/// The magic of a LUKS1 header under re-encryption.
pub const NOMAGIC: [u8; 6] = *b"LUKS\xde\xad";

/// What a legacy run does (the log's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyMode {
    /// New volume key and/or cipher.
    Reencrypt = 0,
    /// Encryption of a plaintext device.
    Encrypt = 1,
    /// Removal of the encryption.
    Decrypt = 2,
}

/// In which order the blocks are processed (the log's `direction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyDirection {
    /// From the start: the data offset does not grow.
    Forward = 0,
    /// From the end: the data offset grows (`--reduce-device-size`).
    Backward = 1,
}

/// The state in `LUKS-<uuid>.log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyLog {
    /// UUID of the device (or [`NO_UUID`]).
    pub uuid: String,
    /// Processing order.
    pub direction: LegacyDirection,
    /// Operation.
    pub mode: LegacyMode,
    /// Bytes done (forward) or the start of what is done (backward), in the new mapping;
    /// `u64::MAX` before a backward run starts.
    pub offset: u64,
    /// Data shift (not used by cryptsetup 2.6 either, kept as read).
    pub shift: u64,
}

/// The names of the three files of a run for `uuid` (in the current directory).
pub fn file_names(uuid: &str) -> (String, String, String) {
    (
        format!("LUKS-{uuid}.log"),
        format!("LUKS-{uuid}.org"),
        format!("LUKS-{uuid}.new"),
    )
}

/// The name of lukskit's redo journal of a run for `uuid`.
pub fn journal_name(uuid: &str) -> String {
    format!("LUKS-{uuid}.lukskit-journal")
}

/// Why a legacy log was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// A line cryptsetup does not accept ("Wrong log format.").
    #[error("wrong log format: {0}")]
    Format(String),
    /// Shorter than its sector: the log was created but never written (a run stopped
    /// before it did anything).
    #[error("log never written")]
    Unwritten,
}

impl LegacyLog {
    /// The log sector as cryptsetup writes it (version 2, zero-padded to 512 bytes).
    pub fn to_sector(&self) -> [u8; 512] {
        let text = format!(
            "# LUKS reencryption log, DO NOT EDIT OR DELETE.\nversion = 2\nUUID = {}\n\
             direction = {}\nmode = {}\noffset = {}\nshift = {}\n# EOF\n",
            self.uuid, self.direction as i32, self.mode as i32, self.offset, self.shift
        );
        let mut s = [0u8; 512];
        let n = text.len().min(511);
        s[..n].copy_from_slice(&text.as_bytes()[..n]);
        s
    }

    /// Parse a log sector as cryptsetup does: every line is a comment or a known key; the
    /// UUID must be `uuid`.
    pub fn parse(sector: &[u8], uuid: &str) -> std::result::Result<Self, LogError> {
        let len = sector.len().min(511);
        let text = String::from_utf8_lossy(&sector[..len]);
        let text = text.split('\0').next().unwrap_or("");
        let mut log = LegacyLog {
            uuid: uuid.to_string(),
            direction: LegacyDirection::Forward,
            mode: LegacyMode::Reencrypt,
            offset: 0,
            shift: 0,
        };
        // Only complete lines count (cryptsetup stops at the last newline).
        let complete = match text.rfind('\n') {
            Some(i) => &text[..i],
            None => "",
        };
        let bad = |l: &str| LogError::Format(l.to_string());
        for line in complete.split('\n') {
            if line.starts_with('#') {
                continue;
            }
            let (key, val) = line.split_once('=').ok_or_else(|| bad(line))?;
            let (key, val) = (key.trim(), val.trim());
            let num = || val.parse::<i64>().map_err(|_| bad(line));
            match key {
                "version" => {
                    if !(1..=2).contains(&num()?) {
                        return Err(bad(line));
                    }
                }
                "UUID" => {
                    if val != uuid {
                        return Err(bad(line));
                    }
                }
                "direction" => {
                    log.direction = if num()? == 0 {
                        LegacyDirection::Forward
                    } else {
                        LegacyDirection::Backward
                    }
                }
                "offset" => log.offset = val.parse::<u64>().map_err(|_| bad(line))?,
                "shift" => log.shift = val.parse::<u64>().map_err(|_| bad(line))?,
                "mode" => {
                    log.mode = match num()? {
                        0 => LegacyMode::Reencrypt,
                        1 => LegacyMode::Encrypt,
                        2 => LegacyMode::Decrypt,
                        _ => return Err(bad(line)),
                    }
                }
                _ => return Err(bad(line)),
            }
        }
        Ok(log)
    }
}

/// The log file of a run, kept open.
pub struct LogFile {
    file: File,
    path: String,
}

impl LogFile {
    /// Create `path` exclusively (a new run) with `log`; None when it exists (a run to
    /// resume: open it with [`LogFile::open`]).
    pub fn create(path: &str, log: &LegacyLog) -> Result<Option<Self>> {
        match crate::private_file::create_new(path, 0o600) {
            Ok(file) => {
                let f = LogFile {
                    file,
                    path: path.to_string(),
                };
                f.write(log)?;
                Ok(Some(f))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
            Err(e) => Err(VolumeError::io(IoOp::Open, path, e)),
        }
    }

    /// Open an existing log and read its state (UUID `uuid`). Only a log this user made is
    /// opened (see [`crate::private_file::open_own`]): a symbolic link or another user's file
    /// planted under the log's predictable name fails with a permission error.
    pub fn open(
        path: &str,
        uuid: &str,
    ) -> Result<(Self, std::result::Result<LegacyLog, LogError>)> {
        let mut file = crate::private_file::open_own(path)
            .map_err(|e| VolumeError::io(IoOp::Open, path, e))?;
        let mut s = [0u8; 512];
        let parsed = match file
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.read_exact(&mut s))
        {
            Ok(()) => LegacyLog::parse(&s, uuid),
            // Shorter than a sector: created, never written (the first write of a run).
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(LogError::Unwritten),
            Err(e) => return Err(VolumeError::io(IoOp::Read, path, e)),
        };
        Ok((
            LogFile {
                file,
                path: path.to_string(),
            },
            parsed,
        ))
    }

    /// Write `log` over the log sector and make it durable.
    pub fn write(&self, log: &LegacyLog) -> Result<()> {
        crash_before_write();
        self.file
            .write_all_at(&log.to_sector(), 0)
            .and_then(|_| {
                crash_before_sync();
                self.file.sync_data()
            })
            .map_err(|e| VolumeError::io(IoOp::Write, &self.path, e))
    }
}

/// The magic and version at the start of a header device: whether it is a LUKS1 header
/// under legacy re-encryption, with the UUID it holds.
pub fn unusable_uuid(first: &[u8]) -> Option<String> {
    if first.len() < 0xa8 + 40 || first[..6] != NOMAGIC || first[6..8] != [0, 1] {
        return None;
    }
    let raw = &first[0xa8..0xa8 + 40];
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    Some(String::from_utf8_lossy(&raw[..end]).into_owned())
}

/// Replace the LUKS1 magic of the header at `path` by [`NOMAGIC`] (`fsync`ed), as
/// cryptsetup does before it touches the data. False when it is not a LUKS1 header.
pub fn mark_unusable(path: &str) -> Result<bool> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| VolumeError::io(IoOp::Open, path, e))?;
    let mut head = [0u8; 8];
    f.read_exact_at(&mut head, 0)
        .map_err(|e| VolumeError::io(IoOp::Read, path, e))?;
    if head[..6] != MAGIC || head[6..8] != [0, 1] {
        return Ok(false);
    }
    f.write_all_at(&NOMAGIC, 0)
        .and_then(|_| f.sync_all())
        .map_err(|e| VolumeError::io(IoOp::Write, path, e))?;
    Ok(true)
}

/// One side of the copy: the data as one header maps it (None key material for the
/// `cipher_null` side, whose bytes are the plaintext).
pub struct Side {
    /// The data device opened through this header's layout.
    pub data: DataVolume,
    /// Whether the stored bytes are plaintext (the `cipher_null` header of an encryption or
    /// a decryption).
    pub plain: bool,
}

/// What [`copy`] was asked to do.
pub struct CopyParams<'a> {
    /// Old mapping (read).
    pub old: &'a Side,
    /// New mapping (written).
    pub new: &'a Side,
    /// Bytes to process (the new mapping's size; the old one's for a decryption).
    pub size: u64,
    /// Block size in bytes.
    pub block: usize,
    /// The log (its `offset` is moved along).
    pub log: &'a LogFile,
    /// The redo journal path.
    pub journal: &'a str,
    /// What ties a journal record to this run ([`run_id`]): a record left by another run
    /// of the same volume (same UUID) is never replayed.
    pub run: [u8; 32],
}

/// The identity of a run: SHA-256 of its new header's LUKS1 header block (its key digest
/// salt is random for every run). A journal left by an earlier run of the same volume (one
/// cryptsetup finished, so lukskit could not remove its journal) has another identity.
pub fn run_id(new_header: &str) -> Result<[u8; 32]> {
    let mut head = vec![0u8; 592];
    File::open(new_header)
        .and_then(|mut f| f.read_exact(&mut head))
        .map_err(|e| VolumeError::io(IoOp::Read, new_header, e))?;
    let mut id = [0u8; 32];
    id.copy_from_slice(&HashAlg::Sha256.digest(&[&head]));
    Ok(id)
}

/// How [`copy`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyOutcome {
    /// Every block is done.
    Done,
    /// Stopped between two blocks (the progress callback returned false); the log says
    /// where.
    Interrupted,
}

const JOURNAL_MAGIC: &[u8; 8] = b"LKLJRNL2";
const JOURNAL_HEAD: usize = 4096;

/// A redo record of run `run`: `len` bytes for the block at new-mapping offset `at`, either
/// the new stored bytes (`kind` 0) or the old stored bytes (`kind` 1), with its SHA-256.
fn write_journal(
    path: &str,
    run: &[u8; 32],
    offset_log: u64,
    at: u64,
    kind: u8,
    bytes: &[u8],
) -> Result<()> {
    let mut head = vec![0u8; JOURNAL_HEAD];
    head[..8].copy_from_slice(JOURNAL_MAGIC);
    head[72..104].copy_from_slice(run);
    head[8..16].copy_from_slice(&offset_log.to_le_bytes());
    head[16..24].copy_from_slice(&at.to_le_bytes());
    head[24..32].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
    head[32] = kind;
    let digest = HashAlg::Sha256.digest(&[bytes]);
    head[40..72].copy_from_slice(&digest);
    // Never through a planted link or into another user's file (the name is predictable).
    let f = crate::private_file::open_own_or_create(path, 0o600)
        .map_err(|e| VolumeError::io(IoOp::Open, path, e))?;
    crash_before_write();
    f.write_all_at(&head, 0)
        .and_then(|_| f.write_all_at(bytes, JOURNAL_HEAD as u64))
        .and_then(|_| f.set_len((JOURNAL_HEAD + bytes.len()) as u64))
        .and_then(|_| {
            crash_before_sync();
            f.sync_all()
        })
        .map_err(|e| VolumeError::io(IoOp::Write, path, e))
}

/// The redo record in `path` if it is complete and belongs to run `run` at log offset
/// `offset_log`: (new-mapping offset, kind, bytes).
fn read_journal(
    path: &str,
    run: &[u8; 32],
    offset_log: u64,
    max: usize,
) -> Option<(u64, u8, Vec<u8>)> {
    let mut f = crate::private_file::open_own(path).ok()?;
    let mut head = vec![0u8; JOURNAL_HEAD];
    f.read_exact(&mut head).ok()?;
    if &head[..8] != JOURNAL_MAGIC || head[72..104] != run[..] {
        return None;
    }
    let word = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().unwrap_or([0; 8]));
    if word(8) != offset_log {
        return None;
    }
    let at = word(16);
    let len = usize::try_from(word(24)).ok().filter(|&l| l <= max)?;
    let mut bytes = vec![0u8; len];
    f.read_exact(&mut bytes).ok()?;
    (HashAlg::Sha256.digest(&[&bytes])[..] == head[40..72]).then_some((at, head[32], bytes))
}

/// Remove the redo journal (after a run is finished).
pub fn remove_journal(path: &str) {
    let _ = std::fs::remove_file(path);
}

fn transform(p: &CopyParams<'_>, buf: &mut [u8], at: u64) -> Result<()> {
    if !p.old.plain {
        p.old.data.decrypt_sectors(buf, at)?;
    }
    if !p.new.plain {
        p.new.data.encrypt_sectors(buf, at)?;
    }
    Ok(())
}

/// Process one block at new-mapping offset `at`: journal, write, sync.
fn do_block(p: &CopyParams<'_>, log_offset: u64, at: u64, buf: &mut [u8]) -> Result<()> {
    p.old.data.pread(buf, at)?;
    if p.new.plain {
        // The block becomes plaintext: journal the old ciphertext instead.
        write_journal(p.journal, &p.run, log_offset, at, 1, buf)?;
        transform(p, buf, at)?;
    } else {
        transform(p, buf, at)?;
        write_journal(p.journal, &p.run, log_offset, at, 0, buf)?;
    }
    crash_before_write();
    p.new.data.pwrite(buf, at)?;
    crash_before_sync();
    p.new.data.flush()
}

/// Copy the data from the old mapping to the new one from where `log` says, moving the log
/// after every block; `progress(done, total)` returning false stops the run between blocks.
pub fn copy(
    p: &CopyParams<'_>,
    log: &mut LegacyLog,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<CopyOutcome> {
    let size = p.size;
    let backward = log.direction == LegacyDirection::Backward;
    if backward && log.offset > size {
        log.offset = size;
    }
    // A block interrupted by a crash: replay its redo record.
    if let Some((at, kind, mut bytes)) = read_journal(p.journal, &p.run, log.offset, p.block) {
        let expected = if backward {
            log.offset.saturating_sub(bytes.len() as u64) == at
        } else {
            at == log.offset
        };
        if expected && at + bytes.len() as u64 <= size {
            if kind == 1 {
                transform(p, &mut bytes, at)?;
            }
            p.new.data.pwrite(&bytes, at)?;
            p.new.data.flush()?;
            log.offset = if backward {
                at
            } else {
                at + bytes.len() as u64
            };
            p.log.write(log)?;
        }
    }
    p.log.write(log)?;
    let mut buf = vec![0u8; p.block];
    let done = |l: &LegacyLog| if backward { size - l.offset } else { l.offset };
    if !progress(done(log), size) {
        return Ok(CopyOutcome::Interrupted);
    }
    loop {
        let (at, len) = if backward {
            if log.offset == 0 {
                break;
            }
            let len = (p.block as u64).min(log.offset);
            (log.offset - len, len)
        } else {
            if log.offset >= size {
                break;
            }
            (log.offset, (p.block as u64).min(size - log.offset))
        };
        let b = &mut buf[..len as usize];
        do_block(p, log.offset, at, b)?;
        log.offset = if backward { at } else { at + len };
        p.log.write(log)?;
        if !progress(done(log), size) && log.offset != if backward { 0 } else { size } {
            return Ok(CopyOutcome::Interrupted);
        }
    }
    Ok(CopyOutcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal record is replayed only by the run that wrote it: a record left by another
    /// run of the same volume (same UUID, same log offset) is ignored.
    #[test]
    fn journal_records_belong_to_their_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LUKS-x.lukskit-journal");
        let path = path.to_str().unwrap();
        let (a, b) = ([1u8; 32], [2u8; 32]);
        write_journal(path, &a, 4096, 8192, 0, &[7u8; 512]).unwrap();
        assert_eq!(
            read_journal(path, &a, 4096, 1 << 20),
            Some((8192, 0, vec![7u8; 512]))
        );
        assert_eq!(read_journal(path, &b, 4096, 1 << 20), None);
        assert_eq!(read_journal(path, &a, 0, 1 << 20), None);
    }

    #[test]
    fn log_round_trip_and_cryptsetup_text() {
        let l = LegacyLog {
            uuid: "0c6a7a3b-5b8a-4b4b-9b0c-1d2e3f405162".into(),
            direction: LegacyDirection::Backward,
            mode: LegacyMode::Encrypt,
            offset: 4194304,
            shift: 0,
        };
        let s = l.to_sector();
        let text = String::from_utf8_lossy(&s);
        assert!(text.starts_with(
            "# LUKS reencryption log, DO NOT EDIT OR DELETE.\nversion = 2\nUUID = \
             0c6a7a3b-5b8a-4b4b-9b0c-1d2e3f405162\ndirection = 1\nmode = 1\noffset = 4194304\n\
             shift = 0\n# EOF\n\0"
        ));
        assert_eq!(LegacyLog::parse(&s, &l.uuid).unwrap(), l);
        assert!(LegacyLog::parse(&s, NO_UUID).is_err());
        let mut bad = s;
        bad[50] = b'X';
        assert!(LegacyLog::parse(&bad, &l.uuid).is_err());
    }

    #[test]
    fn unusable_magic() {
        let mut h = vec![0u8; 592];
        h[..6].copy_from_slice(&NOMAGIC);
        h[7] = 1;
        h[0xa8..0xa8 + 4].copy_from_slice(b"abcd");
        assert_eq!(unusable_uuid(&h).as_deref(), Some("abcd"));
        h[..6].copy_from_slice(&MAGIC);
        assert_eq!(unusable_uuid(&h), None);
    }
}
