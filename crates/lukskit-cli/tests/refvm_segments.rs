//! Segment tables against the kernel (reference VM, script tests/refvm/segments/table.sh): a
//! data area of five segments — crypt (AES-XTS, key A, 4096-byte sectors, IV offset 8,
//! `iv_large_sectors`) / linear / zero / crypt (AES-CBC-ESSIV, key B, 512-byte sectors, IV
//! offset 3) / crypt (Serpent-XTS, key C, 1024-byte sectors, IV offset 2), their device
//! extents out of order — is written through lukskit's userspace data path
//! ([`DataVolume`]) on the host; in the VM the dm table lukskit renders from the same segment
//! table ([`lukskit_activate::kernel::dm_targets`]) is loaded with `dmsetup create`. The
//! kernel must read back exactly lukskit's plaintext (zeros in the zero segment), report the
//! table lukskit rendered, and what the kernel then writes must read back through lukskit
//! (the zero segment's writes dropped, device bytes outside the segments untouched).

mod common;
mod refvm_common;

use lukskit_activate::kernel::dm_targets;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_dm::table::Target;
use lukskit_dm::{CryptFlags, CryptKey, DevT};
use lukskit_volume::data::DataVolume;
use lukskit_volume::segment::{CryptSegment, Segment, SegmentKind, SegmentTable};
use std::path::Path;

const K: u64 = 1024;
/// The data device (bytes).
const DEVICE: u64 = 1024 * K;
/// The plaintext size: the sum of the segment lengths.
const SIZE: u64 = 768 * K;
/// The zero segment's plaintext bytes.
const ZERO: std::ops::Range<usize> = (384 * K) as usize..(448 * K) as usize;
/// The device bytes no segment uses: `[0, 64K)`, `[384K, 512K)`, `[768K, 800K)`, `[928K, 1M)`.
const UNUSED: [(u64, u64); 4] = [
    (0, 64 * K),
    (384 * K, 512 * K),
    (768 * K, 800 * K),
    (928 * K, DEVICE),
];

fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    lukskit_crypto::random::fill(&mut v).unwrap();
    v
}

#[allow(clippy::too_many_arguments)]
fn crypt(
    start: u64,
    len: u64,
    cipher: &str,
    key: &[u8],
    ss: u32,
    iv: u64,
    large: bool,
    dev: u64,
) -> Segment {
    Segment {
        start,
        len,
        kind: SegmentKind::Crypt(CryptSegment {
            cipher: CipherSpec::parse(cipher).unwrap(),
            key: SecretBuf::from_slice(key),
            sector_size: ss,
            iv_offset: iv,
            iv_large_sectors: large,
            device_offset: dev,
            digest: None,
        }),
    }
}

fn table(keys: &[Vec<u8>; 3]) -> SegmentTable {
    SegmentTable::new(vec![
        crypt(
            0,
            256 * K,
            "aes-xts-plain64",
            &keys[0],
            4096,
            8,
            true,
            512 * K,
        ),
        Segment {
            start: 256 * K,
            len: 128 * K,
            kind: SegmentKind::Linear {
                device_offset: 64 * K,
            },
        },
        Segment {
            start: 384 * K,
            len: 64 * K,
            kind: SegmentKind::Zero,
        },
        crypt(
            448 * K,
            192 * K,
            "aes-cbc-essiv:sha256",
            &keys[1],
            512,
            3,
            false,
            192 * K,
        ),
        crypt(
            640 * K,
            128 * K,
            "serpent-xts-plain64",
            &keys[2],
            1024,
            2,
            false,
            800 * K,
        ),
    ])
    .unwrap()
}

fn file(dir: &Path, name: &str, data: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p.display().to_string()
}

#[test]
fn kernel_reads_and_writes_lukskit_segment_tables() {
    const T: &str = "refvm_segments";
    if !refvm_common::vm_ready(T) {
        return;
    }
    let dir = common::tmp();
    let keys = [random(64), random(32), random(64)];
    let t = table(&keys);
    assert_eq!(t.size(), SIZE);
    // The data device starts as noise, so that stray reads or writes show.
    let noise = random(DEVICE as usize);
    let data = file(dir.path(), "data.img", &noise);
    // lukskit writes plaintext P1 in unaligned pieces that cross every boundary.
    let p1 = random(SIZE as usize);
    let dv = DataVolume::open_table(&data, t.clone(), true).unwrap();
    let mut at = 0usize;
    while at < p1.len() {
        let n = 10_007.min(p1.len() - at);
        dv.write_at(&p1[at..at + n], at as u64).unwrap();
        at += n;
    }
    dv.flush().unwrap();
    drop(dv);
    let mut m1 = p1.clone();
    m1[ZERO].fill(0);
    // The table lukskit renders, on a placeholder device the guest replaces by the disk's.
    let targets = dm_targets(&t, DevT::new(4095, 4095), CryptFlags::default(), |c| {
        CryptKey::for_volume_key(&c.key, None, false)
    });
    let lines: Vec<String> = targets.iter().map(|x| x.to_line().to_string()).collect();
    let table_txt = file(
        dir.path(),
        "table.txt",
        (lines.join("\n") + "\n").as_bytes(),
    );
    let kread = file(dir.path(), "kread.img", &vec![0u8; SIZE as usize]);
    let p2 = random(SIZE as usize);
    let kwrite = file(dir.path(), "kwrite.img", &p2);

    let script = refvm_common::refvm_dir().join("segments/table.sh");
    let copy = format!("{table_txt}:/refvm/files/table.txt");
    let args: Vec<&std::ffi::OsStr> = vec![
        "--copy".as_ref(),
        copy.as_ref(),
        script.as_os_str(),
        data.as_ref(),
        kread.as_ref(),
        kwrite.as_ref(),
    ];
    let r = refvm_common::run_vm(T, refvm_common::timeout_for(60), &args, false);
    if !r.ran(T) {
        return;
    }
    assert_eq!(r.code, 0, "{T}: {}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("segments: done"), "{}", r.stdout);
    // The kernel's table is the one lukskit rendered (read back and re-rendered in lukskit's
    // option order: the kernel prints sector_size before iv_large_sectors).
    let kernel: Vec<String> = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("table: "))
        .map(|l| Target::parse_line(l, true).unwrap().to_line().to_string())
        .collect();
    assert_eq!(kernel, lines, "the kernel's table");
    assert!(
        r.stdout.contains(&format!("sectors: {}", SIZE / 512)),
        "{}",
        r.stdout
    );
    // The kernel read lukskit's plaintext, zeros in the zero segment.
    let got = std::fs::read(&kread).unwrap();
    assert!(got == m1, "the kernel reads what lukskit wrote");
    // lukskit reads what the kernel wrote; the zero segment's writes were dropped.
    let mut m2 = p2.clone();
    m2[ZERO].fill(0);
    let dv = DataVolume::open_table(&data, t, false).unwrap();
    let mut back = vec![0u8; SIZE as usize];
    dv.read_at(&mut back, 0).unwrap();
    assert!(back == m2, "lukskit reads what the kernel wrote");
    // The linear segment holds the plaintext itself; bytes of no segment are untouched.
    let disk = std::fs::read(&data).unwrap();
    assert!(
        disk[(64 * K) as usize..(192 * K) as usize] == p2[(256 * K) as usize..(384 * K) as usize]
    );
    for (a, b) in UNUSED {
        assert!(
            disk[a as usize..b as usize] == noise[a as usize..b as usize],
            "device bytes {a}..{b} untouched"
        );
    }
}
