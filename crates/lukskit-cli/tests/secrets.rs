//! Secrets hygiene of the serving process: after `luksSuspend` no copy of the volume key is
//! left in its memory, and it cannot dump core.
//!
//! The test formats a LUKS2 volume (aes-xts-plain64, 512-bit key) with a known random volume
//! key, opens it (FUSE file + loop device, as root), does I/O, then reads every readable
//! mapping of the server through `/proc/PID/mem` and looks for the key:
//!
//! * AES-256-XTS uses two AES-256 keys (the two 32-byte halves of the volume key). The first
//!   two round keys of an AES-256 schedule are the raw key, 16 bytes each; the VAES engine
//!   stores every round key twice in a 32-byte row (`k0‖k0`, `k1‖k1`), so a 32-byte half is
//!   not contiguous there, while each 16-byte quarter is. The scan therefore looks for the
//!   four 16-byte quarters (and reports the 32-byte halves too).
//! * Positive control: before the suspend every quarter must be found (else the scan proves
//!   nothing); after it, none may be found anywhere; after `luksResume` I/O works again.
//!   A second suspend/resume round checks that the key `luksResume` sends over the control
//!   socket leaves no copy either.
//!
//! Needs root, /dev/fuse and loop devices; fails without them unless `LUKSKIT_ALLOW_SKIP=1`
//! lets it skip with a SKIP line.

mod common;
use common::mapping::*;
use common::*;
use std::io::Read;
use std::os::unix::fs::FileExt;

/// `len` random bytes from the kernel.
fn random(len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut b)
        .unwrap();
    b
}

/// What a scan of a process found.
struct Scan {
    /// Bytes read.
    bytes: u64,
    /// For each needle, the places it was found ("ADDRESS in MAPPING").
    hits: Vec<Vec<String>>,
}

/// Read every readable mapping of `pid` through `/proc/PID/mem` and find `needles`.
fn scan(pid: i32, needles: &[&[u8]]) -> Scan {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("maps");
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).expect("open /proc/PID/mem");
    let mut first = [false; 256];
    for n in needles {
        first[n[0] as usize] = true;
    }
    let longest = needles.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut out = Scan {
        bytes: 0,
        hits: vec![Vec::new(); needles.len()],
    };
    const CHUNK: u64 = 4 << 20;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        let what = line.split_whitespace().nth(5).unwrap_or("[anon]");
        if !perms.starts_with('r') || what == "[vvar]" || what == "[vvar_vclock]" {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        // Overlapping chunks so that a needle crossing a chunk boundary is still found.
        let mut at = start;
        let mut buf = vec![0u8; (CHUNK as usize) + longest];
        while at < end {
            let n = (end - at).min(CHUNK + longest as u64) as usize;
            let Ok(got) = mem.read_at(&mut buf[..n], at) else {
                break; // unreadable (e.g. a guard page): skip the rest of the mapping
            };
            let data = &buf[..got];
            out.bytes += got.min(CHUNK as usize) as u64;
            for (i, &byte) in data.iter().enumerate() {
                if !first[byte as usize] {
                    continue;
                }
                for (k, needle) in needles.iter().enumerate() {
                    if (i as u64) < CHUNK && data[i..].starts_with(needle) {
                        out.hits[k].push(format!("{:#x} in {what}", at + i as u64));
                    }
                }
            }
            if got < n {
                break;
            }
            at += CHUNK;
        }
    }
    out
}

#[test]
fn suspend_wipes_the_volume_key_from_the_server() {
    let t = "secrets_suspend";
    if !capable(t) || !have_tool(t, "losetup") {
        return;
    }
    if !std::arch::is_x86_feature_detected!("aes") {
        // The software AES of RustCrypto keeps bitsliced schedules, in which the raw key
        // bytes do not appear: the positive control could not work.
        skip_or_fail(
            t,
            "this CPU has no AES-NI (run on an x86-64 CPU with AES-NI): the raw key is not \
             part of the software key schedule, so the positive control cannot work",
        );
        return;
    }
    let d = tmp();
    let img = sparse(d.path(), "img", 32 << 20);
    let pass = write_file(d.path(), "pass", b"secret pass");
    let vk = random(64);
    let vk_file = write_file(d.path(), "vk", &vk);
    lukskit(
        &[
            "luksFormat",
            "-q",
            "--type",
            "luks2",
            "-c",
            "aes-xts-plain64",
            "-s",
            "512",
            "--volume-key-file",
            &vk_file,
            "--pbkdf",
            "pbkdf2",
            "--pbkdf-force-iterations",
            "1000",
            &img,
            &pass,
        ],
        b"",
    )
    .ok("luksFormat --volume-key-file");
    std::fs::remove_file(&vk_file).unwrap();
    // The header must really hold this key (checked by real cryptsetup where installed).
    if cryptsetup_path().is_some() {
        let dumped = volume_key_with("cryptsetup", &img, &pass, &[]);
        assert_eq!(dumped, hex(&vk), "cryptsetup reads another volume key");
    }

    let m = Mapping::new("secrets");
    lukskit(&["open", &img, &m.name, "-d", &pass], b"").ok("open");
    let data = random(64 << 10);
    write_direct(&m.dev(), 1 << 20, &data).unwrap();
    assert!(read_direct(&m.dev(), 1 << 20, data.len()) == data);
    let pid = m.pid();

    // Core dumps are off for the server.
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let core = limits
        .lines()
        .find(|l| l.starts_with("Max core file size"))
        .expect("core limit line");
    let fields: Vec<&str> = core.split_whitespace().collect();
    assert_eq!(&fields[4..6], &["0", "0"], "server may dump core: {core}");

    let quarters: Vec<&[u8]> = vk.chunks(16).collect();
    let halves: Vec<&[u8]> = vk.chunks(32).collect();
    let mut needles = quarters.clone();
    needles.extend_from_slice(&halves);
    let describe = |s: &Scan| -> String {
        let names = ["q0", "q1", "q2", "q3", "half0", "half1"];
        names
            .iter()
            .zip(&s.hits)
            .map(|(n, h)| format!("{n}: {} {:?}", h.len(), &h[..h.len().min(4)]))
            .collect::<Vec<_>>()
            .join("; ")
    };

    let before = scan(pid, &needles);
    eprintln!(
        "{t}: before luksSuspend, {} MiB scanned: {}",
        before.bytes >> 20,
        describe(&before)
    );
    for (q, hits) in before.hits[..4].iter().enumerate() {
        assert!(
            !hits.is_empty(),
            "positive control: key quarter {q} not found in the running server ({} bytes \
             scanned); the scan cannot see the key",
            before.bytes
        );
    }

    // Twice: the second suspend also checks that luksResume (the key sent over the control
    // socket) leaves no copy behind.
    for round in 1..=2 {
        lukskit(&["luksSuspend", &m.name], b"").ok("luksSuspend");
        let after = scan(pid, &needles);
        eprintln!(
            "{t}: after luksSuspend #{round}, {} MiB scanned: {}",
            after.bytes >> 20,
            describe(&after)
        );
        assert!(
            after.hits.iter().all(Vec::is_empty),
            "volume key still in the suspended server's memory (suspend #{round}): {}",
            describe(&after)
        );

        lukskit(&["luksResume", &m.name, "-d", &pass], b"").ok("luksResume");
        assert!(read_direct(&m.dev(), 1 << 20, data.len()) == data);
        let more = random(8192);
        write_direct(&m.dev(), 0, &more).unwrap();
        assert!(read_direct(&m.dev(), 0, more.len()) == more);
    }
    lukskit(&["close", &m.name], b"").ok("close");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
