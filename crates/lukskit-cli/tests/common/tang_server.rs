//! Debian's tang server for the token tests (tang.rs, clevis.rs): tangd run by socat on
//! 127.0.0.1 for each connection, keys made by tangd-keygen.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// tang's server program.
pub const TANGD: &str = "/usr/libexec/tangd";
/// tang's key generator.
pub const KEYGEN: &str = "/usr/libexec/tangd-keygen";

/// A tang server on 127.0.0.1: tangd run by socat for each connection, with a key
/// directory of its own. Stopped (its socat killed) when dropped or by [`Tang::stop`].
pub struct Tang {
    pub port: u16,
    pub db: String,
    child: Option<Child>,
}

impl Tang {
    pub fn start(dir: &Path) -> Tang {
        let db = dir.join("tang-db");
        std::fs::create_dir_all(&db).unwrap();
        let db = db.display().to_string();
        let st = Command::new(KEYGEN).arg(&db).status().unwrap();
        assert!(st.success(), "tangd-keygen");
        let port = free_port();
        let mut t = Tang {
            port,
            db,
            child: None,
        };
        t.restart();
        t
    }

    pub fn restart(&mut self) {
        let child = Command::new("socat")
            .arg(format!(
                "TCP-LISTEN:{},bind=127.0.0.1,reuseaddr,fork",
                self.port
            ))
            .arg(format!("EXEC:{TANGD} {}", self.db))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("socat");
        self.child = Some(child);
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("tang did not start listening on port {}", self.port);
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The signing key's thumbprint, as `tang-show-keys` prints it.
    pub fn thumbprint(&self) -> String {
        let out = Command::new("tang-show-keys")
            .arg(self.port.to_string())
            .output()
            .unwrap();
        assert!(out.status.success(), "tang-show-keys");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Nothing listens any more.
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("tang still listening");
    }
}

/// A free port below Linux's ephemeral range (32768-60999): tang is stopped and started
/// again on its port, which an ephemeral port of another test (a fake server) must not take
/// in between.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20000 + (std::process::id() % 1000) as u16 * 10;
    for _ in 0..10000 {
        let p = 20000 + (base - 20000 + NEXT.fetch_add(1, Ordering::Relaxed)) % 12000;
        if TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return p;
        }
    }
    panic!("no free port for tang");
}

impl Drop for Tang {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
