//! A software TPM (`swtpm socket`) for the token tests (tpm2.rs, clevis.rs): the TPM command
//! protocol on a Unix socket, its control channel beside it, as tpm2-tss's swtpm TCTI
//! (`swtpm:path=SOCKET`) and lukskit's `--tpm2-device` reach it.

use super::run;
use super::skip_or_fail;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A software TPM serving the TPM command protocol on a Unix socket in `dir`; killed when
/// dropped (or by [`Swtpm::stop`]).
pub struct Swtpm {
    pub sock: PathBuf,
    child: Option<Child>,
}

impl Swtpm {
    pub fn start(dir: &Path) -> Swtpm {
        let t = Swtpm::spawn(dir);
        let ctrl = PathBuf::from(format!("{}.ctrl", t.sock.display()));
        for _ in 0..400 {
            use std::os::unix::net::UnixStream;
            if UnixStream::connect(&ctrl).is_ok() && UnixStream::connect(&t.sock).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        // Room for the wrong-PIN tests (swtpm allows 3 failures by default), each failure
        // forgotten after a second.
        t.tools(&[
            "tpm2_dictionarylockout",
            "-s",
            "-n",
            "32",
            "-t",
            "1",
            "-l",
            "1",
        ]);
        t
    }

    /// swtpm on `dir`'s state and socket, started and not waited for (a TPM that appears
    /// while lukskit waits for it): the state of an earlier [`Swtpm::start`] in `dir`.
    pub fn spawn(dir: &Path) -> Swtpm {
        let state = dir.join("tpm-state");
        std::fs::create_dir_all(&state).unwrap();
        let sock = dir.join("tpm.sock");
        let child = Command::new("swtpm")
            .args(["socket", "--tpm2", "--flags", "startup-clear"])
            .arg("--tpmstate")
            .arg(format!("dir={}", state.display()))
            .arg("--server")
            .arg(format!("type=unixio,path={}", sock.display()))
            .arg("--ctrl")
            // tpm2-tss's swtpm TCTI finds the control channel at SOCKET.ctrl.
            .arg(format!("type=unixio,path={}.ctrl", sock.display()))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("swtpm.log")).unwrap())
            .spawn()
            .expect("swtpm");
        Swtpm {
            sock,
            child: Some(child),
        }
    }

    /// The device name, as systemd's and lukskit's `--tpm2-device` take it.
    pub fn tcti(&self) -> String {
        format!("swtpm:path={}", self.sock.display())
    }

    pub fn device_arg(&self) -> String {
        format!("--tpm2-device={}", self.tcti())
    }

    /// Run a tpm2-tools command against this TPM; its standard output.
    pub fn tools(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(args[0]);
        cmd.args(&args[1..]);
        let r = run(cmd, b"", &[("TPM2TOOLS_TCTI", &self.tcti())]);
        let log = self
            .sock
            .parent()
            .map(|d| std::fs::read_to_string(d.join("swtpm.log")).unwrap_or_default());
        assert_eq!(
            r.code, 0,
            "{args:?}: {}{}\nswtpm: {log:?}",
            r.stdout, r.stderr
        );
        r.stdout
    }

    /// The TPM's dictionary-attack failure counter.
    pub fn lockout_counter(&self) -> u32 {
        let out = self.tools(&["tpm2_getcap", "properties-variable"]);
        let line = out
            .lines()
            .find(|l| l.starts_with("TPM2_PT_LOCKOUT_COUNTER:"))
            .unwrap_or_else(|| panic!("no lockout counter in {out}"));
        let hex = line.rsplit("0x").next().unwrap().trim();
        u32::from_str_radix(hex, 16).unwrap()
    }

    pub fn extend_pcr7(&self) {
        self.tools(&[
            "tpm2_pcrextend",
            "7:sha256=00000000000000000000000000000000000000000000000000000000000000aa",
        ]);
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Swtpm {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether what a software TPM test needs is installed: swtpm, tpm2-tools'
/// `tpm2_pcrextend` and tpm2-tss's swtpm TCTI (tpm2-tools reach the socket through it);
/// otherwise [`skip_or_fail`] for `test` and false.
pub fn tools_present(test: &str) -> bool {
    let tcti = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
    ]
    .iter()
    .any(|d| Path::new(&format!("{d}/libtss2-tcti-swtpm.so.0")).exists());
    if !tcti {
        skip_or_fail(
            test,
            "libtss2-tcti-swtpm.so.0 is missing (apt-get install libtss2-tcti-swtpm0)",
        );
        return false;
    }
    super::mapping::have_tool(test, "swtpm") && super::mapping::have_tool(test, "tpm2_pcrextend")
}
