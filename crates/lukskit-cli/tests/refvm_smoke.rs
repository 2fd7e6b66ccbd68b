//! The reference VM (`tests/refvm/run.sh`) boots Debian's kernel; its dm-crypt writes an
//! aes-xts-plain64 plain-mode volume whose bytes are checked on the host against OpenSSL
//! (AES-256 from the `openssl` command, the XTS tweak chain per IEEE 1619 written out here) and
//! against lukskit's own sector engine. A second boot checks the harness itself: only the
//! script's output comes back, and its exit status becomes run.sh's. A third checks that real
//! cryptsetup works in a VM without lukskit where it runs threads (an Argon2 keyslot with two
//! lanes): glibc then needs libgcc_s.so.1, which until 2026-11-25 came in only with lukskit.
//!
//! Fails where the VM cannot be had (run.sh exits 77: not x86_64 Linux, qemu neither
//! installed nor installable, the Debian mirror unreachable with nothing cached) or when
//! `LUKSKIT_REFVM=0`, unless `LUKSKIT_ALLOW_SKIP=1` lets it skip with a `SKIP:` line. The first
//! run downloads ~75 MB into the cache; later runs take two boots of ~10 s each (each given a
//! timeout of several minutes: see `refvm_common::timeout_for`).

mod refvm_common;

use refvm_common::{refvm_dir, run_vm, run_vm_env, timeout_for, vm_ready};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;

const SECTOR: usize = 512;
const PLAIN_SECTORS: usize = 64;

fn random_bytes(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    lukskit_crypto::random::fill(&mut v).expect("random bytes");
    v
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

/// `openssl enc -aes-256-ecb -nopad` over `data` (decrypting when `decrypt`); `None` when
/// there is no `openssl` command.
fn openssl_ecb(key: &[u8], data: &[u8], decrypt: bool) -> Option<Vec<u8>> {
    let mut cmd = Command::new("openssl");
    cmd.args(["enc", "-aes-256-ecb", "-nopad", "-K", &hex::encode(key)]);
    if decrypt {
        cmd.arg("-d");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take().unwrap();
    let input = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "openssl enc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(out.stdout)
}

/// XTS decryption of whole 512-byte sectors (IEEE 1619), the tweak of sector n being n as a
/// 128-bit little-endian number (dm-crypt's plain64), with AES-256 from OpenSSL.
fn openssl_xts_decrypt(key: &[u8], ct: &[u8]) -> Option<Vec<u8>> {
    let (k1, k2) = key.split_at(32);
    let sectors = ct.len() / SECTOR;
    let ivs: Vec<u8> = (0..sectors as u128).flat_map(|n| n.to_le_bytes()).collect();
    let first_tweaks = openssl_ecb(k2, &ivs, false)?;
    let mut tweaks = Vec::with_capacity(ct.len());
    for t0 in first_tweaks.chunks(16) {
        let mut t = u128::from_le_bytes(t0.try_into().unwrap());
        for _ in 0..SECTOR / 16 {
            tweaks.extend_from_slice(&t.to_le_bytes());
            // Multiply by the primitive element α of GF(2^128) (x^128 + x^7 + x^2 + x + 1).
            let carry = t >> 127;
            t = (t << 1) ^ (carry * 0x87);
        }
    }
    let masked: Vec<u8> = ct.iter().zip(&tweaks).map(|(c, t)| c ^ t).collect();
    let dec = openssl_ecb(k1, &masked, true)?;
    Some(dec.iter().zip(&tweaks).map(|(p, t)| p ^ t).collect())
}

#[test]
fn kernel_dm_crypt_agrees_with_openssl_and_lukskit() {
    const T: &str = "refvm_smoke";
    if !vm_ready(T) {
        return;
    }
    // One boot with a trivial script: ~10 s on an idle host here.
    let timeout = timeout_for(30);
    let dir = tempfile::tempdir().unwrap();

    // The harness: only the script's stdout on stdout, its stderr on stderr, its status.
    let script = write(
        dir.path(),
        "status.sh",
        b"echo out-line\necho err-line >&2\nexit 42\n",
    );
    let r = run_vm(T, timeout, &[script.as_os_str()], false);
    if !r.ran(T) {
        return;
    }
    assert_eq!(r.code, 42, "exit status not propagated: {}", r.stderr);
    assert_eq!(
        r.stdout, "out-line\n",
        "stdout carries more than the script's"
    );
    assert!(r.stderr.contains("err-line"), "stderr lost: {}", r.stderr);

    // The kernel encrypts PLAIN onto DATA with aes-xts-plain64 (AES-256-XTS).
    let key = random_bytes(64);
    assert_ne!(key[..32], key[32..]);
    let mut key_disk = key.clone();
    key_disk.resize(4096, 0);
    let plain = random_bytes(PLAIN_SECTORS * SECTOR);
    let data = write(dir.path(), "data.img", &vec![0u8; 1 << 20]);
    let keyf = write(dir.path(), "key.img", &key_disk);
    let plainf = write(dir.path(), "plain.img", &plain);
    let smoke = refvm_dir().join("smoke.sh");
    let r = run_vm(
        T,
        timeout,
        &[
            smoke.as_os_str(),
            data.as_os_str(),
            keyf.as_os_str(),
            plainf.as_os_str(),
        ],
        true,
    );
    if !r.ran(T) {
        return;
    }
    assert_eq!(
        r.code, 0,
        "smoke.sh failed in the VM: stdout={} stderr={}",
        r.stdout, r.stderr
    );
    for line in [
        "cipher: aes-xts-plain64",
        "keysize: 512 bits",
        "readback: ok (32768 bytes)",
        "smoke: ok",
    ] {
        assert!(r.stdout.contains(line), "no {line:?} in {}", r.stdout);
    }
    assert!(
        r.stdout.contains("lukskit: lukskit "),
        "lukskit did not run in the VM: {}",
        r.stdout
    );

    let disk = std::fs::read(&data).unwrap();
    let ct = &disk[..plain.len()];
    assert_ne!(ct, &plain[..], "the disk holds the plaintext");
    assert!(
        ct.chunks(SECTOR).all(|s| s.iter().any(|&b| b != 0)),
        "a sector was not written"
    );
    assert!(
        disk[plain.len()..].iter().all(|&b| b == 0),
        "the kernel wrote past the plaintext"
    );

    match openssl_xts_decrypt(&key, ct) {
        Some(p) => assert!(p == plain, "OpenSSL's AES-XTS disagrees with the kernel"),
        // With the opt-out, the comparison with lukskit's engine below still runs.
        None => lukskit_testkit::skip_or_fail(
            "refvm_smoke (kernel output against OpenSSL)",
            "the openssl command is not installed (apt-get install openssl)",
        ),
    }

    let spec = CipherSpec::parse("aes-xts-plain64").unwrap();
    let engine = SectorCipher::new(&spec, &key, SECTOR as u32, false).unwrap();
    let mut ours = ct.to_vec();
    engine.decrypt(&mut ours, 0).unwrap();
    assert!(ours == plain, "lukskit's engine disagrees with the kernel");
    let mut ours = plain.clone();
    engine.encrypt(&mut ours, 0).unwrap();
    assert!(ours == ct, "lukskit encrypts differently from the kernel");
}

/// A VM run stopped by its timeout is reported as one: run.sh exits 124 saying so, and the
/// test failure names the timeout and how long the run took (a 5 s timeout is shorter than
/// a boot, so this costs ~5-15 s).
#[test]
fn a_run_stopped_by_its_timeout_says_so() {
    const T: &str = "refvm_smoke timeout";
    if !vm_ready(T) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), "sleep.sh", b"sleep 600\n");
    let r = run_vm(T, 5, &[script.as_os_str()], false);
    assert!(r.timed_out(), "code {} stderr {}", r.code, r.stderr);
    assert!(
        r.stderr.contains("the VM timed out after 5s"),
        "{}",
        r.stderr
    );
    assert!(r.elapsed.as_secs() >= 5, "{:?}", r.elapsed);
    let failure = std::panic::catch_unwind(|| r.ran("t")).expect_err("a timeout must fail");
    let msg = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        msg.starts_with(
            "t: TIMEOUT: the reference VM was stopped by its timeout (5 s) after running"
        ),
        "{msg}"
    );
}

/// Real cryptsetup in a VM without lukskit (`with_lukskit` false) formats and opens an Argon2
/// keyslot with two lanes, which libargon2 computes in two threads: glibc loads libgcc_s.so.1
/// when a thread ends, and without it cryptsetup aborts ("libgcc_s.so.1 must be installed for
/// pthread_exit to work", exit 134). The VM has 2 vCPUs here so that the threads do run
/// (cryptsetup uses no more lanes than online CPUs). ~10 s.
#[test]
fn real_cryptsetup_runs_argon2_threads_without_lukskit() {
    const T: &str = "refvm_smoke argon2 threads";
    if !vm_ready(T) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "argon2.sh",
        b"set -e\n\
          export DM_DISABLE_UDEV=1\n\
          if command -v lukskit >/dev/null; then echo lukskit is installed >&2; exit 3; fi\n\
          head -c 16777216 /dev/zero >/tmp/a.img\n\
          echo pw | cryptsetup luksFormat -q --type luks2 --pbkdf argon2id --pbkdf-memory 64 \\\n\
            --pbkdf-force-iterations 4 --pbkdf-parallel 2 /tmp/a.img\n\
          cryptsetup luksDump /tmp/a.img | grep -E 'PBKDF|Threads'\n\
          echo pw | cryptsetup open --test-passphrase /tmp/a.img\n\
          echo argon2: ok\n",
    );
    let r = run_vm_env(
        T,
        timeout_for(30),
        &[script.as_os_str()],
        false,
        &[("LUKSKIT_REFVM_CPUS", "2".to_string())],
    );
    if !r.ran(T) {
        return;
    }
    assert_eq!(
        (r.code, r.stdout.contains("argon2: ok")),
        (0, true),
        "real cryptsetup failed on an Argon2 keyslot in the VM: stdout={} stderr={}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stdout.contains("Threads:    2"),
        "the keyslot does not use two threads, so the check proves nothing: {}",
        r.stdout
    );
}
