//! Reading passphrases and key files with cryptsetup 2.6's semantics.
//!
//! * Key file (`-d FILE`): the whole file (at most 8 MiB) unless `--keyfile-size` asks for an
//!   exact number of bytes (a size of 0 also means the whole file); newlines are data;
//!   `--keyfile-offset` skips bytes; `-d -` reads standard input to its end. An empty regular
//!   file is an empty passphrase (as in cryptsetup); a pipe or device that yields nothing
//!   (`/dev/null`, an empty pipe) is refused with "Nothing to read on input.".
//! * Terminal: a prompt, no echo, the line without its newline; `-y` asks twice.
//! * Standard input that is not a terminal: one line, without its newline (an empty line is
//!   an empty passphrase; no line at all is refused).
//!
//! Every byte of a secret goes straight from the `read(2)` of an unbuffered descriptor into
//! a locked, zeroizing [`SecretBuf`] ([`SecretAccumulator`] grows by moving into a new locked
//! buffer and wiping the old one): no `Vec` reallocation and no `BufReader` ever holds a copy.

use crate::errors::{CliError, Result};
use lukskit_crypto::SecretBuf;

use std::fs::File;
use std::io::{IsTerminal, Read, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::os::unix::io::AsRawFd;

/// cryptsetup's default maximum key file size (8192 KiB).
pub const MAX_KEYFILE_SIZE: u64 = 8192 * 1024;
/// cryptsetup's maximum interactive passphrase length.
pub const MAX_PASSPHRASE: usize = 512;

/// Where a secret comes from.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// A key file (or "-" for all of standard input), with offset and size.
    File {
        /// Path or "-".
        path: String,
        /// Bytes to skip.
        offset: u64,
        /// Exact number of bytes to read; None or 0 for the whole file.
        size: Option<u64>,
    },
    /// A terminal prompt, or one line of standard input when it is not a terminal.
    Prompt,
    /// One line of standard input (not a terminal) read to at most `size` bytes: a passphrase
    /// piped in with `--keyfile-size` (cryptsetup applies the limit there too).
    Line {
        /// Bytes skipped first (`--keyfile-offset`).
        offset: u64,
        /// The bytes the passphrase must have (`--keyfile-size`).
        size: u64,
    },
}

impl KeySource {
    /// The passphrase source without a key file: a prompt, or with `--keyfile-size` `limit`
    /// and standard input not a terminal, a line cut to that many bytes.
    pub fn prompt_limited(offset: Option<u64>, limit: Option<u64>) -> KeySource {
        match limit {
            Some(size) if size > 0 && !interactive() => KeySource::Line {
                offset: offset.unwrap_or(0),
                size,
            },
            _ => KeySource::Prompt,
        }
    }
}

/// A secret being read: a locked buffer with spare room that grows by moving into a larger
/// locked buffer (the old one is wiped when dropped), up to a fixed cap.
pub struct SecretAccumulator {
    buf: SecretBuf,
    len: usize,
    cap: usize,
}

impl SecretAccumulator {
    /// An empty accumulator with room for `initial` bytes that never grows beyond `cap`.
    pub fn new(initial: usize, cap: usize) -> Self {
        let initial = initial.min(cap);
        SecretAccumulator {
            buf: SecretBuf::zeroed(initial),
            len: 0,
            cap,
        }
    }

    /// Bytes held so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Spare room of at most `want` bytes after the data, growing the buffer when it is full
    /// (empty only at the cap).
    fn spare(&mut self, want: usize) -> &mut [u8] {
        if self.len == self.buf.len() && self.len < self.cap {
            let grown = self.len.saturating_mul(2).max(4096).min(self.cap);
            let mut next = SecretBuf::zeroed(grown);
            next.as_mut_bytes()[..self.len].copy_from_slice(&self.buf.as_bytes()[..self.len]);
            // The old buffer is wiped and unlocked as it is dropped here.
            self.buf = next;
        }
        let end = self.buf.len().min(self.len.saturating_add(want));
        &mut self.buf.as_mut_bytes()[self.len..end]
    }

    /// Read once from `r` into the spare room (at most `want` bytes); 0 at end of input or
    /// at the cap.
    fn read_from(&mut self, r: &mut File, want: usize) -> std::io::Result<usize> {
        let room = self.spare(want);
        if room.is_empty() {
            return Ok(0);
        }
        let n = read_retrying(r, room)?;
        self.len += n;
        Ok(n)
    }

    /// Append one byte, unless the cap is reached (returns whether it was kept).
    fn push(&mut self, b: u8) -> bool {
        let room = self.spare(1);
        if room.is_empty() {
            return false;
        }
        room[0] = b;
        self.len += 1;
        true
    }

    /// The bytes read, in a buffer of exactly their length.
    pub fn finish(self) -> SecretBuf {
        if self.len == self.buf.len() {
            return self.buf;
        }
        SecretBuf::from_slice(&self.buf.as_bytes()[..self.len])
    }
}

/// `read(2)` on an unbuffered file, retried on EINTR.
fn read_retrying(r: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Standard input as an unbuffered file (a duplicate of descriptor 0 sharing its offset):
/// `std::io::stdin()`'s buffer would keep a copy of what it reads for the life of the process
/// and would read ahead past the line that is ours.
fn raw_stdin() -> Result<File> {
    std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(File::from)
        .map_err(|e| CliError::invalid(format!("Error reading passphrase: {e}.")))
}

/// Read a key file as cryptsetup's `crypt_keyfile_device_read` does: `size` of None or 0 reads
/// to the end (failing beyond [`MAX_KEYFILE_SIZE`]), otherwise exactly `size` bytes.
pub fn read_keyfile(path: &str, offset: u64, size: Option<u64>) -> Result<SecretBuf> {
    let fail = |what: &str| CliError::invalid(what.to_string());
    let mut file = if path == "-" {
        raw_stdin()?
    } else {
        File::open(path).map_err(|_| fail("Failed to open key file."))?
    };
    let requested = size.filter(|&s| s != 0);
    // Unlimited reads take one byte more than allowed to notice an oversized file.
    let max = requested.unwrap_or(MAX_KEYFILE_SIZE + 1);
    let max_bytes =
        usize::try_from(max).map_err(|_| fail("Cannot read requested amount of data."))?;
    let regular = file.metadata().map(|m| m.is_file()).unwrap_or(false);
    let initial = if regular {
        let len = file
            .metadata()
            .map_err(|e| fail(&format!("Error reading passphrase: {e}.")))?
            .len();
        if offset > len {
            return Err(fail("Cannot seek to requested keyfile offset."));
        }
        file.seek(SeekFrom::Start(offset))
            .map_err(|_| fail("Cannot seek to requested keyfile offset."))?;
        // The file's size is known: one allocation of the right size.
        usize::try_from((len - offset).min(max)).unwrap_or(max_bytes)
    } else {
        // A block device seeks (and its skipped part may not even be readable: compat-test's
        // key file behind a dm "error" area); a pipe cannot, so its bytes are read and dropped.
        if offset == 0 || file.seek(SeekFrom::Start(offset)).is_err() {
            skip_bytes(&mut file, offset)?;
        }
        4096
    };
    let mut acc = SecretAccumulator::new(initial, max_bytes);
    loop {
        let left = max_bytes - acc.len();
        if left == 0 {
            break;
        }
        match acc.read_from(&mut file, left) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(fail(&format!("Error reading passphrase: {e}."))),
        }
    }
    if acc.len() == 0 && !regular {
        return Err(CliError::nothing_to_read());
    }
    if requested.is_none() && acc.len() == max_bytes {
        // cryptsetup 2.6.1's words exactly.
        return Err(fail("Maximum keyfile size exceeded."));
    }
    if requested.is_some() && acc.len() != max_bytes {
        return Err(fail("Cannot read requested amount of data."));
    }
    Ok(acc.finish())
}

/// Discard `offset` bytes of a pipe or device (which cannot seek).
fn skip_bytes(file: &mut File, mut offset: u64) -> Result<()> {
    let mut scratch = SecretBuf::zeroed(4096);
    while offset > 0 {
        let want = offset.min(scratch.len() as u64) as usize;
        match read_retrying(file, &mut scratch.as_mut_bytes()[..want]) {
            Ok(0) | Err(_) => {
                return Err(CliError::invalid(
                    "Cannot seek to requested keyfile offset.",
                ))
            }
            Ok(n) => offset -= n as u64,
        }
    }
    Ok(())
}

/// Read one line from standard input (not a terminal), byte by byte so that later reads see
/// the following lines (luksAddKey reads the old passphrase, then the new one).
fn read_stdin_line() -> Result<SecretBuf> {
    read_stdin_line_max(None)
}

/// A passphrase line from standard input (not a terminal) with `--keyfile-size`: at most
/// `limit` bytes are read, as cryptsetup reads them (so an endless pipe such as
/// `cat /dev/zero` gives the first `limit` bytes instead of "Maximum keyfile size exceeded.").
pub fn read_stdin_line_limited(limit: u64) -> Result<SecretBuf> {
    read_stdin_line_max(Some(limit.min(MAX_KEYFILE_SIZE) as usize))
}

/// A passphrase line from standard input (not a terminal) with `--keyfile-size` `size` (and
/// `--keyfile-offset` `offset`) and no key file, as cryptsetup reads it: `offset` bytes are
/// skipped, then the line is read to at most `size` bytes; a line that ends (newline or end
/// of input) before `size` bytes is an error ("Cannot read requested amount of data.").
fn read_stdin_line_sized(offset: u64, size: u64) -> Result<SecretBuf> {
    let mut stdin = raw_stdin()?;
    let mut b = [0u8; 1];
    for _ in 0..offset {
        match read_retrying(&mut stdin, &mut b) {
            Ok(0) => return Err(CliError::invalid("Cannot read requested amount of data.")),
            Ok(_) => {}
            Err(e) => return Err(CliError::invalid(format!("Error reading passphrase: {e}."))),
        }
    }
    let secret = read_stdin_line_max(Some(size.min(MAX_KEYFILE_SIZE) as usize))?;
    if (secret.len() as u64) < size {
        return Err(CliError::invalid("Cannot read requested amount of data."));
    }
    Ok(secret)
}

fn read_stdin_line_max(limit: Option<usize>) -> Result<SecretBuf> {
    let mut stdin = raw_stdin()?;
    let mut acc = SecretAccumulator::new(64, MAX_KEYFILE_SIZE as usize);
    let mut b = SecretBuf::zeroed(1);
    let mut newline = false;
    loop {
        if limit.is_some_and(|l| acc.len() >= l) {
            break;
        }
        match read_retrying(&mut stdin, b.as_mut_bytes()) {
            Ok(0) => break,
            Ok(_) if b.as_bytes()[0] == b'\n' => {
                newline = true;
                break;
            }
            Ok(_) => {
                if !acc.push(b.as_bytes()[0]) {
                    return Err(CliError::invalid("Maximum keyfile size exceeded."));
                }
            }
            Err(e) => return Err(CliError::invalid(format!("Error reading passphrase: {e}."))),
        }
    }
    if acc.len() == 0 && !newline {
        return Err(CliError::nothing_to_read());
    }
    Ok(acc.finish())
}

/// `--timeout` for interactive prompts, in seconds (0 = wait forever).
static PROMPT_TIMEOUT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Set the `--timeout` for terminal prompts.
pub fn set_prompt_timeout(seconds: u64) {
    PROMPT_TIMEOUT.store(seconds, std::sync::atomic::Ordering::Relaxed);
}

/// What waiting for terminal input ended with.
enum Wait {
    /// Input is there (or no timeout is set).
    Readable,
    /// The prompt timeout expired.
    TimedOut,
    /// A caught signal cut the wait short.
    Interrupted,
}

/// Wait until `fd` is readable or the prompt timeout expires.
fn wait_readable(fd: i32) -> Wait {
    let secs = PROMPT_TIMEOUT.load(std::sync::atomic::Ordering::Relaxed);
    if secs == 0 {
        return Wait::Readable;
    }
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(secs.saturating_mul(1000)).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd for a descriptor we own, for the duration of the call.
    match unsafe { libc::poll(&mut pfd, 1, ms) } {
        n if n > 0 => Wait::Readable,
        n if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
            Wait::Interrupted
        }
        _ => Wait::TimedOut,
    }
}

/// One `read(2)` of a terminal or of standard input for a prompt: retried on `EINTR`,
/// unless SIGINT or SIGTERM was caught (then `Ok(None)`: the prompt ends).
fn read_unless_interrupted(r: &mut File, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
    loop {
        if crate::interrupt::interrupted() {
            return Ok(None);
        }
        match r.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other.map(Some),
        }
    }
}

/// Echo switched off on a terminal for as long as it lives: the saved settings are put back
/// when it is dropped, on every return path and when a panic unwinds.
struct EchoOff {
    fd: i32,
    saved: Option<libc::termios>,
}

impl EchoOff {
    fn new(tty: &File) -> Self {
        let fd = tty.as_raw_fd();
        // SAFETY: termios is plain old data; an all-zero value is valid to pass for filling.
        let mut old: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: fd is an open terminal descriptor and `old` is a valid termios to fill.
        if unsafe { libc::tcgetattr(fd, &mut old) } != 0 {
            return EchoOff { fd, saved: None };
        }
        let mut quiet = old;
        quiet.c_lflag &= !libc::ECHO;
        quiet.c_lflag |= libc::ECHONL;
        // SAFETY: as above; `quiet` is a modified copy of the current settings.
        unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &quiet) };
        EchoOff {
            fd,
            saved: Some(old),
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(old) = &self.saved {
            // SAFETY: restores the settings saved in `new` on the same, still open descriptor
            // (the guard never outlives the terminal file it was made from).
            unsafe { libc::tcsetattr(self.fd, libc::TCSAFLUSH, old) };
        }
    }
}

/// Prompt on the terminal with echo off and read one line (bytes past
/// [`MAX_PASSPHRASE`] are dropped, as cryptsetup does).
fn read_tty(prompt: &str) -> Result<SecretBuf> {
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|e| CliError::invalid(format!("Cannot open terminal: {e}.")))?;
    let fd = tty.as_raw_fd();
    let echo = EchoOff::new(&tty);
    {
        use std::io::Write;
        let _ = tty.write_all(prompt.as_bytes());
        let _ = tty.flush();
    }
    let mut acc = SecretAccumulator::new(MAX_PASSPHRASE, MAX_PASSPHRASE);
    let mut b = SecretBuf::zeroed(1);
    // `None`: SIGINT or SIGTERM (Ctrl-C) ended the prompt.
    let res = loop {
        match wait_readable(fd) {
            Wait::Readable => {}
            Wait::Interrupted if crate::interrupt::interrupted() => break None,
            Wait::Interrupted => continue,
            Wait::TimedOut => {
                break Some(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "timed out",
                )))
            }
        }
        match read_unless_interrupted(&mut tty, b.as_mut_bytes()) {
            Ok(None) => break None,
            Ok(Some(0)) => break Some(Ok(())),
            Ok(Some(_)) if b.as_bytes()[0] == b'\n' => break Some(Ok(())),
            Ok(Some(_)) => {
                // Past the maximum length the rest of the line is read and dropped.
                acc.push(b.as_bytes()[0]);
            }
            Err(e) => break Some(Err(e)),
        }
    };
    // The terminal's settings are back (echo on) before anything is said; what was typed
    // is wiped with `acc` on every return path.
    drop(echo);
    match res {
        Some(Ok(())) => Ok(acc.finish()),
        // cryptsetup's words: its prompt ends the same way, without a newline.
        None => Err(CliError::invalid("Error reading passphrase from terminal.")),
        Some(Err(e)) => Err(CliError::invalid(format!(
            "Error reading passphrase from terminal: {e}."
        ))),
    }
}

/// Whether a prompt would go to a terminal (so retries and verification make sense).
pub fn interactive() -> bool {
    std::io::stdin().is_terminal()
}

/// Obtain a secret from `source`. For prompts on a terminal `verify` asks a second time
/// ("Verify passphrase: ") and fails with "Passphrases do not match." on a mismatch.
///
/// From here on SIGINT and SIGTERM are caught, as cryptsetup catches them (see
/// [`crate::interrupt`]): Ctrl-C at the prompt ends it with the terminal restored and
/// "Error reading passphrase from terminal." (exit 1); a secret read from a pipe or file is
/// read to its end, and the command then fails with exit code 1 if it succeeds.
pub fn get_secret(source: &KeySource, prompt: &str, verify: bool) -> Result<SecretBuf> {
    crate::interrupt::catch_interrupts_at_prompt();
    let secret = read_secret(source, prompt, verify);
    // Still caught, but I/O in flight is no longer cut short.
    crate::interrupt::catch_interrupts();
    secret
}

thread_local! {
    /// A passphrase the next prompt answers with instead of asking: set by `crypttab open`
    /// for entries whose passphrase is cached in the kernel keyring (`decrypt_keyctl`).
    static PRESET: std::cell::RefCell<Option<SecretBuf>> = const { std::cell::RefCell::new(None) };
}

/// Make the next passphrase prompt of this thread return `secret` without asking (`None`
/// clears it). Used once: the prompt after it asks again.
pub fn preset_passphrase(secret: Option<SecretBuf>) {
    PRESET.with(|p| *p.borrow_mut() = secret);
}

fn read_secret(source: &KeySource, prompt: &str, verify: bool) -> Result<SecretBuf> {
    match source {
        KeySource::File { path, offset, size } => read_keyfile(path, *offset, *size),
        KeySource::Line { offset, size } => read_stdin_line_sized(*offset, *size),
        KeySource::Prompt => {
            if let Some(p) = PRESET.with(|p| p.borrow_mut().take()) {
                return Ok(p);
            }
            if !interactive() {
                return read_stdin_line();
            }
            let first = read_tty(prompt)?;
            if verify {
                let second = read_tty("Verify passphrase: ")?;
                if !first.ct_eq(second.as_bytes()) {
                    return Err(CliError::permission("Passphrases do not match."));
                }
            }
            Ok(first)
        }
    }
}

/// Ask for confirmation before destroying data, as cryptsetup: on a terminal the user must
/// type exactly `YES`; without a terminal (or with `-q`) the answer is yes. The answer is read
/// unbuffered, so nothing after its line is consumed. Any other answer ends with
/// [`aborted`].
pub fn confirm(message: &str, batch: bool) -> Result<()> {
    confirm_or(message, batch, aborted())
}

/// [`confirm`] where another answer than `YES` ends with `refusal`: each of cryptsetup's
/// questions has its own message (or none) and exit code.
pub fn confirm_or(message: &str, batch: bool, refusal: CliError) -> Result<()> {
    if confirmed(message, batch)? {
        Ok(())
    } else if crate::interrupt::interrupted() {
        // Ctrl-C at the question: cryptsetup's dialog says nothing but this debug line, and
        // the command fails as refused.
        crate::debug::log("Query interrupted on signal.");
        Err(CliError::new(refusal.class, ""))
    } else {
        Err(refusal)
    }
}

/// cryptsetup's most common end of a question not answered `YES`: "Operation aborted.",
/// exit code 1. cryptsetup's refusal messages end with a newline of their own, to which its
/// error log adds one: an empty line follows, as here.
pub fn aborted() -> CliError {
    refused("Operation aborted.", false)
}

/// A refusal message as cryptsetup prints it after a question (followed by an empty line);
/// exit code 2 (cryptsetup's `-EPERM`) when `permission`, else 1.
pub fn refused(message: &str, permission: bool) -> CliError {
    let m = format!("{message}\n");
    if permission {
        CliError::permission(m)
    } else {
        CliError::invalid(m)
    }
}

/// [`confirm`]'s question: true when the user typed `YES` (or no question was asked).
pub fn confirmed(message: &str, batch: bool) -> Result<bool> {
    if batch || !interactive() {
        return Ok(true);
    }
    ask_yes(message)
}

/// cryptsetup's `noDialog`: the same question, but without a terminal the answer is no.
pub fn confirmed_default_no(message: &str) -> Result<bool> {
    if !interactive() {
        return Ok(false);
    }
    ask_yes(message)
}

/// The `YES` question on the terminal. Ctrl-C (SIGINT, or SIGTERM) ends it as not answered
/// `YES`, as cryptsetup's dialog does; the signals stay caught afterwards (see
/// [`crate::interrupt`]).
fn ask_yes(message: &str) -> Result<bool> {
    crate::interrupt::catch_interrupts_at_prompt();
    let answer = read_yes(message);
    crate::interrupt::catch_interrupts();
    answer
}

fn read_yes(message: &str) -> Result<bool> {
    eprint!("\nWARNING!\n========\n{message}\n\nAre you sure? (Type 'yes' in capital letters): ");
    let mut stdin = raw_stdin()?;
    let mut answer = Vec::with_capacity(8);
    let mut b = [0u8; 1];
    loop {
        match read_unless_interrupted(&mut stdin, &mut b) {
            Ok(None) => return Ok(false),
            Ok(Some(0)) => break,
            Ok(Some(_)) if b[0] == b'\n' => break,
            Ok(Some(_)) => {
                if answer.len() < 64 {
                    answer.push(b[0]);
                }
            }
            Err(e) => {
                return Err(CliError::invalid(format!(
                    "Error reading response from terminal: {e}."
                )))
            }
        }
    }
    Ok(answer == b"YES")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulator_grows_without_losing_bytes_and_stops_at_the_cap() {
        let mut acc = SecretAccumulator::new(1, 10_000);
        for i in 0..10_000u32 {
            assert!(acc.push(i as u8), "byte {i}");
        }
        assert!(!acc.push(0), "past the cap");
        let s = acc.finish();
        assert_eq!(s.len(), 10_000);
        assert!(s.as_bytes().iter().enumerate().all(|(i, &b)| b == i as u8));
    }

    #[test]
    fn accumulator_finish_is_exact_length() {
        let mut acc = SecretAccumulator::new(512, 512);
        for b in b"hunter2" {
            acc.push(*b);
        }
        assert_eq!(acc.finish().as_bytes(), b"hunter2");
    }
}
