//! `Storage::size` of a `std::fs::File` reports the size without moving the file position
//! (the trait's contract: a `File` may be shared), for a regular file and for a block device
//! (a loop device over a file, checked against the kernel's own `blockdev --getsize64`).

use lukskit_format::io::Storage;
use lukskit_testkit::skip_or_fail;
use std::io::{Seek, SeekFrom, Write};
use std::process::Command;

#[test]
fn regular_file_size_keeps_the_position() {
    let dir = std::env::temp_dir().join(format!("lukskit-size-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("f");
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    f.write_all(&[7u8; 12345]).unwrap();
    f.seek(SeekFrom::Start(1000)).unwrap();
    assert_eq!(Storage::size(&f).unwrap(), 12345);
    assert_eq!(f.stream_position().unwrap(), 1000);
    f.set_len(1 << 20).unwrap();
    assert_eq!(Storage::size(&f).unwrap(), 1 << 20);
    assert_eq!(f.stream_position().unwrap(), 1000);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A loop device over a file, detached on drop.
struct Loop(String);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn block_device_size_keeps_the_position() {
    const T: &str = "block_device_size_keeps_the_position";
    // Root: the effective uid (second field of Uid:) of this process.
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2))
                == Some("0")
        })
        .unwrap_or(false);
    if !root {
        skip_or_fail(
            T,
            "needs root to attach a loop device (run the tests as root)",
        );
        return;
    }
    if Command::new("losetup").arg("--version").output().is_err() {
        skip_or_fail(T, "losetup is not installed (apt-get install mount)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("lukskit-bsize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let backing = dir.join("backing");
    // 3 MiB + 512: a size no default would produce.
    let len = (3 << 20) + 512;
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(len)
        .unwrap();
    let o = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&backing)
        .output()
        .unwrap();
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        std::fs::remove_dir_all(&dir).unwrap();
        skip_or_fail(
            T,
            &format!(
                "no loop device could be attached ({}); load the loop module",
                err.trim()
            ),
        );
        return;
    }
    let dev = Loop(String::from_utf8_lossy(&o.stdout).trim().to_string());
    let kernel: u64 = String::from_utf8_lossy(
        &Command::new("blockdev")
            .args(["--getsize64", &dev.0])
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .parse()
    .unwrap();
    assert_eq!(kernel, len);
    let mut f = std::fs::File::open(&dev.0).unwrap();
    f.seek(SeekFrom::Start(4096)).unwrap();
    assert_eq!(Storage::size(&f).unwrap(), kernel);
    assert_eq!(
        f.stream_position().unwrap(),
        4096,
        "size() moved the position"
    );
    drop(f);
    drop(dev);
    std::fs::remove_dir_all(&dir).unwrap();
}
