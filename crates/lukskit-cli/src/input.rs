//! Reading passphrases and key files with cryptsetup's semantics.
//!
//! * Key file (`-d FILE`): the whole file (at most 8 MiB unless `--keyfile-size`), newlines
//!   are data; `--keyfile-offset` skips bytes; `-d -` reads standard input to its end.
//! * Terminal: a prompt, no echo, the line without its newline; `-y` asks twice.
//! * Standard input that is not a terminal: one line, without its newline.
//!
//! Everything read lands in [`SecretBuf`]s; temporary buffers are wiped.

use lukskit_crypto::SecretBuf;
use lukskit_volume::VolumeError;
use std::io::{IsTerminal, Read};
use std::os::unix::io::AsRawFd;
use zeroize::Zeroize;

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
        /// Exact number of bytes to read, or None for the whole file.
        size: Option<u64>,
    },
    /// A terminal prompt, or one line of standard input when it is not a terminal.
    Prompt,
}

/// Read a key file as cryptsetup does.
pub fn read_keyfile(path: &str, offset: u64, size: Option<u64>) -> Result<SecretBuf, VolumeError> {
    let fail = |what: &str| VolumeError::invalid(what.to_string());
    let mut data = Vec::new();
    let limit = size.unwrap_or(MAX_KEYFILE_SIZE);
    let read_res = if path == "-" {
        let mut stdin = std::io::stdin().lock();
        read_bounded(&mut stdin, offset, limit, &mut data)
    } else {
        let mut f = std::fs::File::open(path)
            .map_err(|_| VolumeError::invalid("Failed to open key file.".to_string()))?;
        read_bounded(&mut f, offset, limit, &mut data)
    };
    if let Err(e) = read_res {
        data.zeroize();
        return Err(fail(&format!("Error reading passphrase: {e}.")));
    }
    let over = data.len() as u64 > limit;
    if size.is_none() && over {
        data.zeroize();
        // cryptsetup 2.6.1's words exactly (`crypt_keyfile_device_read`).
        return Err(fail("Maximum keyfile size exceeded."));
    }
    data.truncate(limit as usize);
    if let Some(s) = size {
        if (data.len() as u64) < s {
            data.zeroize();
            return Err(fail("Cannot read requested amount of data."));
        }
    }
    if data.is_empty() && path == "-" {
        return Err(fail("Nothing to read on input."));
    }
    Ok(SecretBuf::from_vec(data))
}

fn read_bounded(
    r: &mut dyn Read,
    offset: u64,
    limit: u64,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    let mut skip = offset;
    let mut buf = [0u8; 4096];
    while skip > 0 {
        let n = r.read(&mut buf[..skip.min(4096) as usize])?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "Cannot seek to requested keyfile offset",
            ));
        }
        skip -= n as u64;
    }
    // Read one byte past the limit to detect oversized files.
    let mut take = r.take(limit + 1);
    let res = take.read_to_end(out);
    buf.zeroize();
    res.map(|_| ())
}

/// Read one line from standard input (not a terminal), byte by byte so that later reads see
/// the following lines (luksAddKey reads the old passphrase, then the new one).
fn read_stdin_line() -> Result<SecretBuf, VolumeError> {
    let mut line = Vec::new();
    let mut stdin = std::io::stdin().lock();
    let mut b = [0u8; 1];
    let mut got_any = false;
    loop {
        match stdin.read(&mut b) {
            Ok(0) => break,
            Ok(_) => {
                got_any = true;
                if b[0] == b'\n' {
                    break;
                }
                line.push(b[0]);
                if line.len() as u64 > MAX_KEYFILE_SIZE {
                    line.zeroize();
                    return Err(VolumeError::invalid("Maximum keyfile size exceeded."));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                line.zeroize();
                return Err(VolumeError::invalid(format!(
                    "Error reading passphrase: {e}."
                )));
            }
        }
    }
    b.zeroize();
    if !got_any {
        return Err(VolumeError::invalid("Nothing to read on input."));
    }
    Ok(SecretBuf::from_vec(line))
}

/// `--timeout` for interactive prompts, in seconds (0 = wait forever).
static PROMPT_TIMEOUT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Set the `--timeout` for terminal prompts.
pub fn set_prompt_timeout(seconds: u64) {
    PROMPT_TIMEOUT.store(seconds, std::sync::atomic::Ordering::Relaxed);
}

/// Wait until `fd` is readable or the prompt timeout expires (false on timeout).
fn wait_readable(fd: i32) -> bool {
    let secs = PROMPT_TIMEOUT.load(std::sync::atomic::Ordering::Relaxed);
    if secs == 0 {
        return true;
    }
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(secs.saturating_mul(1000)).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd for a descriptor we own, for the duration of the call.
    unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
}

/// Prompt on the terminal with echo off and read one line.
fn read_tty(prompt: &str) -> Result<SecretBuf, VolumeError> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|e| VolumeError::invalid(format!("Cannot open terminal: {e}.")))?;
    let fd = tty.as_raw_fd();
    // SAFETY: termios is plain old data; tcgetattr fills it for a valid fd.
    let mut old: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: fd is a valid open terminal descriptor and `old` is a valid termios.
    let have_termios = unsafe { libc::tcgetattr(fd, &mut old) } == 0;
    if have_termios {
        let mut new = old;
        new.c_lflag &= !(libc::ECHO);
        new.c_lflag |= libc::ECHONL;
        // SAFETY: as above; `new` is a modified copy of the current settings.
        unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &new) };
    }
    use std::io::Write;
    let mut t = &tty;
    let _ = t.write_all(prompt.as_bytes());
    let _ = t.flush();
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    let res = loop {
        if !wait_readable(fd) {
            break Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "timed out",
            ));
        }
        match t.read(&mut b) {
            Ok(0) => break Ok(()),
            Ok(_) if b[0] == b'\n' => break Ok(()),
            Ok(_) => {
                if line.len() >= MAX_PASSPHRASE {
                    continue;
                }
                line.push(b[0]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(e),
        }
    };
    if have_termios {
        // SAFETY: restores the settings saved above on the same descriptor.
        unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &old) };
    }
    b.zeroize();
    match res {
        Ok(()) => Ok(SecretBuf::from_vec(line)),
        Err(e) => {
            line.zeroize();
            Err(VolumeError::invalid(format!(
                "Error reading passphrase from terminal: {e}."
            )))
        }
    }
}

/// Whether a prompt would go to a terminal (so retries and verification make sense).
pub fn interactive() -> bool {
    std::io::stdin().is_terminal()
}

/// Obtain a secret from `source`. For prompts on a terminal `verify` asks a second time
/// ("Verify passphrase: ") and fails with "Passphrases do not match." on a mismatch.
pub fn get_secret(
    source: &KeySource,
    prompt: &str,
    verify: bool,
) -> Result<SecretBuf, VolumeError> {
    match source {
        KeySource::File { path, offset, size } => read_keyfile(path, *offset, *size),
        KeySource::Prompt => {
            if !interactive() {
                return read_stdin_line();
            }
            let first = read_tty(prompt)?;
            if verify {
                let second = read_tty("Verify passphrase: ")?;
                if !first.ct_eq(second.as_bytes()) {
                    return Err(VolumeError::permission("Passphrases do not match."));
                }
            }
            Ok(first)
        }
    }
}

/// Ask for confirmation before destroying data, as cryptsetup: on a terminal the user must
/// type exactly `YES`; without a terminal (or with `-q`) the answer is yes.
pub fn confirm(message: &str, batch: bool) -> Result<(), VolumeError> {
    if batch || !interactive() {
        return Ok(());
    }
    eprint!("\nWARNING!\n========\n{message}\n\nAre you sure? (Type 'yes' in capital letters): ");
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| VolumeError::invalid(format!("Error reading response from terminal: {e}.")))?;
    if answer.trim_end_matches('\n') == "YES" {
        Ok(())
    } else {
        Err(VolumeError::invalid("Operation aborted."))
    }
}
