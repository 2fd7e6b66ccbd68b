//! Starting a serving process, and the serving process's side of the start.
//!
//! [`start`] runs the current executable with [`SERVE_ARG`] (a fresh process: nothing is
//! forked while the engine's threads run), hands it the mapping and the volume key through
//! its standard input ([`super::wire::write_launch`]: never argv, the environment or a file)
//! and waits for its one reply line. The executable must call [`serve_main`] when it is
//! started with [`SERVE_ARG`], after its own process-wide hardening.

use super::runtime::MappingConfig;
use super::wire;
use crate::error::{ActivateError, Result};
use lukskit_crypto::SecretBuf;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::process::{Command, Stdio};

/// The first argument that makes the executable a serving process.
pub const SERVE_ARG: &str = "__serve";

/// The serving process's `argv[0]`: `ps` shows it as `lukskit: NAME`; serving the root file
/// system it is `@lukskit: NAME`, systemd's convention for root-storage daemons (an `argv[0]`
/// starting with `@` of a root-owned process: systemd and `systemd-shutdown` do not kill it
/// at shutdown, so the root stays readable until the very end).
pub fn serving_arg0(config: &MappingConfig) -> String {
    format!(
        "{}lukskit: {}",
        if config.root_storage_daemon { "@" } else { "" },
        config.name
    )
}

/// Start the serving process for `config` and wait until the device is usable (or the
/// serving process says why not).
pub fn start(config: &MappingConfig, key: &SecretBuf) -> Result<()> {
    launch(config, |w| wire::write_launch(w, config, key.as_bytes()))
}

/// [`start`] for a mapping of all the segments of `table` (`config.segments` set).
pub fn start_table(
    config: &MappingConfig,
    table: &lukskit_volume::segment::SegmentTable,
) -> Result<()> {
    let reload = wire::Reload::from_table(table);
    launch(config, |w| wire::write_launch_table(w, config, &reload))
}

fn launch(
    config: &MappingConfig,
    send: impl FnOnce(&mut std::process::ChildStdin) -> std::io::Result<()>,
) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("/proc/self/exe")
        .arg0(serving_arg0(config))
        .arg(SERVE_ARG)
        .arg(&config.name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .current_dir("/")
        .spawn()
        .map_err(|e| ActivateError::io("Cannot start the serving process", e))?;
    let sent = {
        let mut stdin = child.stdin.take().expect("piped stdin");
        send(&mut stdin)
    };
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    let line = line.trim_end_matches('\n');
    if line.is_empty() {
        let status = child.wait();
        return Err(ActivateError::Server(format!(
            "the serving process failed to start ({}{})",
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            sent.err().map_or(String::new(), |e| format!(", {e}"))
        )));
    }
    match wire::parse_reply(line) {
        Ok(_) => Ok(()), // it runs on in its own session; it is reparented when we exit
        Err(e) => {
            let _ = child.wait();
            Err(e)
        }
    }
}

/// The serving process: read the launch message from standard input, set the mapping up,
/// answer on standard output, detach from both and serve until `close`. Returns the exit
/// status for the process.
pub fn serve_main() -> i32 {
    // SAFETY: setsid has no memory effects; failing (already a session leader) is harmless.
    unsafe {
        libc::setsid();
    }
    // Started through /proc/self/exe, the process would be `exe` in top, pgrep and pidof:
    // it is `lukskit` there (its argv[0], `lukskit: NAME`, names the mapping in `ps`).
    // SAFETY: PR_SET_NAME copies at most 16 bytes from a NUL-terminated string that lives
    // through the call.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"lukskit".as_ptr(), 0, 0, 0);
    }
    // Read the pipe unbuffered (a duplicate of fd 0): the buffer of `std::io::stdin()`
    // would keep a copy of the volume key for the life of the process.
    let launch = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|mut f| wire::read_launch(&mut f));
    let (config, key, table) = match launch {
        Ok(x) => x,
        Err(e) => {
            answer(&Err(ActivateError::Server(format!(
                "bad parameters for the serving process: {e}"
            ))));
            return 1;
        }
    };
    super::serve::serve(config, key, table, |res| {
        answer(&res.map(|()| String::new()));
        detach_stdio();
    })
}

fn answer(reply: &wire::Reply) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(wire::reply_line(reply).as_bytes());
    let _ = out.flush();
}

/// Point standard input, output and error at /dev/null (the parent stops reading).
fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors with a valid open descriptor.
            unsafe {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
}
