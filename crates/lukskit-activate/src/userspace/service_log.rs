//! What a serving process tells the system log: that it started and stopped serving a
//! mapping, the errors of its backing store (a full disk, a dead NBD server), which the
//! programs using the mapping only see as "Input/output error", an NBD server lost and
//! reconnected, and the progress of an online re-encryption (its start, every 10 %, its
//! end).
//!
//! Messages go to the syslog socket `/dev/log` (journald or a syslog daemon) as
//! `lukskit[PID]: NAME: …` of facility `daemon`; where there is none (containers, an
//! initramfs without a logger), they are appended to `/run/lukskit/NAME/log` (mode 0600).
//! Errors are rate-limited: at most one per second is written, with the count of those left
//! out, so a failing disk cannot flood the log. Never a secret: messages name devices, sizes
//! and OS errors only.

use std::fs::File;
use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The syslog socket.
const SYSLOG_SOCKET: &str = "/dev/log";
/// syslog facility `daemon` (3), shifted as in a PRI value.
const FACILITY_DAEMON: u8 = 3 << 3;
/// The shortest interval between two error messages.
const ERROR_INTERVAL: Duration = Duration::from_secs(1);

enum Sink {
    Syslog(UnixDatagram),
    File(File),
}

struct Limiter {
    last: Option<Instant>,
    suppressed: u64,
}

/// The log of one mapping's serving process.
pub struct ServiceLog {
    name: String,
    sink: Mutex<Sink>,
    limiter: Mutex<Limiter>,
}

/// How serious a message is (syslog severities).
#[derive(Clone, Copy)]
enum Severity {
    Error = 3,
    Warning = 4,
    Info = 6,
}

impl ServiceLog {
    /// The log of mapping `name`: the syslog socket when one listens, else `file` (the
    /// mapping's `log` under its state directory). `None` when neither can be opened.
    pub fn open(name: &str, file: &Path) -> Option<ServiceLog> {
        Self::open_at(name, Path::new(SYSLOG_SOCKET), file)
    }

    fn open_at(name: &str, socket: &Path, file: &Path) -> Option<ServiceLog> {
        let sink = match UnixDatagram::unbound().and_then(|s| s.connect(socket).map(|()| s)) {
            Ok(s) => Sink::Syslog(s),
            Err(_) => {
                use std::os::unix::fs::OpenOptionsExt;
                let f = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(file)
                    .ok()?;
                Sink::File(f)
            }
        };
        Some(ServiceLog {
            name: name.to_string(),
            sink: Mutex::new(sink),
            limiter: Mutex::new(Limiter {
                last: None,
                suppressed: 0,
            }),
        })
    }

    /// An event of the mapping's life (started, stopped, reconnected).
    pub fn info(&self, message: &str) {
        self.write(Severity::Info, message);
    }

    /// Something went wrong that the serving process works around (a lost NBD server it
    /// reconnects to); not rate-limited: callers say it once per event.
    pub fn warning(&self, message: &str) {
        self.write(Severity::Warning, message);
    }

    /// An error of the backing store; at most one per second is written.
    pub fn error(&self, message: &str) {
        let suppressed = {
            let mut l = self.limiter.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            if l.last
                .is_some_and(|t| now.duration_since(t) < ERROR_INTERVAL)
            {
                l.suppressed += 1;
                return;
            }
            l.last = Some(now);
            std::mem::take(&mut l.suppressed)
        };
        if suppressed > 0 {
            self.write(
                Severity::Error,
                &format!("{message} ({suppressed} more errors since the last message)"),
            );
        } else {
            self.write(Severity::Error, message);
        }
    }

    fn write(&self, severity: Severity, message: &str) {
        // One line, printable: what a hostile device name could carry is escaped.
        let message: String = message
            .chars()
            .flat_map(|c| {
                if c.is_control() {
                    c.escape_default().collect::<Vec<_>>()
                } else {
                    vec![c]
                }
            })
            .collect();
        let pid = std::process::id();
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *sink {
            Sink::Syslog(s) => {
                let pri = FACILITY_DAEMON | severity as u8;
                let line = format!("<{pri}>lukskit[{pid}]: {}: {message}", self.name);
                let _ = s.send(line.as_bytes());
            }
            Sink::File(f) => {
                let when = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let level = match severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                    Severity::Info => "info",
                };
                let _ = writeln!(f, "{when} lukskit[{pid}] {level}: {}: {message}", self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syslog_lines_are_daemon_facility_escaped_and_errors_rate_limited() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("log");
        let server = UnixDatagram::bind(&sock).unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let log = ServiceLog::open_at("vol", &sock, &dir.path().join("unused")).unwrap();
        let recv = || {
            let mut buf = [0u8; 512];
            let n = server.recv(&mut buf).unwrap();
            String::from_utf8(buf[..n].to_vec()).unwrap()
        };
        let pid = std::process::id();
        log.info("serving /dev/sdb1\x1b[31m");
        assert_eq!(
            recv(),
            format!("<30>lukskit[{pid}]: vol: serving /dev/sdb1\\u{{1b}}[31m")
        );
        log.error("read failed");
        assert_eq!(recv(), format!("<27>lukskit[{pid}]: vol: read failed"));
        // Within the second: left out, then counted in the next one written.
        log.error("read failed again");
        log.error("and again");
        server.set_nonblocking(true).unwrap();
        assert!(
            server.recv(&mut [0u8; 64]).is_err(),
            "a second error within 1 s"
        );
        server.set_nonblocking(false).unwrap();
        std::thread::sleep(ERROR_INTERVAL);
        log.error("still failing");
        assert_eq!(
            recv(),
            format!(
                "<27>lukskit[{pid}]: vol: still failing (2 more errors since the last message)"
            )
        );
    }

    #[test]
    fn without_a_syslog_socket_messages_go_to_the_mapping_log_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("log");
        let log = ServiceLog::open_at("vol", &dir.path().join("no-socket"), &file).unwrap();
        log.info("started");
        log.error("write failed");
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].ends_with(" info: vol: started"), "{text}");
        assert!(lines[1].ends_with(" error: vol: write failed"), "{text}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
