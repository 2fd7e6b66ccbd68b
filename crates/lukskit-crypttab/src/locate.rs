//! Finding the block device a crypttab field names: a path, or `UUID=`, `LABEL=`,
//! `PARTUUID=`, `PARTLABEL=` through `/dev/disk/by-*`, else by reading the first 4 KiB of
//! each block device (LUKS and ext2/3/4 headers; partition names from sysfs), else with
//! `blkid` where it is installed. The legs of md arrays are never taken for the array.

use crate::table::DeviceSpec;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Most block devices looked at when searching for a `UUID=`/`LABEL=`.
const MAX_SCANNED_DEVICES: usize = 4096;
/// Bytes read from each block device when searching (LUKS header start, ext superblock).
const SCAN_BYTES: usize = 4096;

/// The first `n` bytes of `path` (fewer when it is shorter), `None` when it cannot be read.
pub fn first_bytes(path: &Path, n: usize) -> Option<Vec<u8>> {
    let f = std::fs::File::open(path).ok()?;
    let mut b = Vec::with_capacity(n);
    f.take(n as u64).read_to_end(&mut b).ok()?;
    Some(b)
}

/// The device a crypttab field names, if it can be found.
pub fn resolve(spec: &DeviceSpec) -> Option<PathBuf> {
    let link = |dir: &str, v: &str| {
        let p = Path::new("/dev/disk").join(dir).join(v);
        std::fs::canonicalize(p).ok()
    };
    let found = match spec {
        DeviceSpec::Path(p) => {
            let m = std::fs::metadata(p).ok()?;
            return (m.file_type().is_block_device() || m.is_file()).then(|| PathBuf::from(p));
        }
        DeviceSpec::Uuid(v) => link("by-uuid", v).or_else(|| link("by-uuid", &v.to_lowercase())),
        DeviceSpec::PartUuid(v) => {
            link("by-partuuid", v).or_else(|| link("by-partuuid", &v.to_lowercase()))
        }
        DeviceSpec::Label(v) => link("by-label", &udev_escape(v)),
        DeviceSpec::PartLabel(v) => link("by-partlabel", &udev_escape(v)),
    };
    found
        .or_else(|| scan_block_devices(spec))
        .or_else(|| blkid(spec))
}

/// How udev names `/dev/disk/by-label` links: `/`, whitespace and `\` as `\xHH`.
pub fn udev_escape(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if c == '/' || c == '\\' || c.is_whitespace() {
            for b in c.to_string().bytes() {
                o.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            o.push(c);
        }
    }
    o
}

/// What the first 4 KiB of a device say about it: (UUID, label) of a LUKS or ext2/3/4 header.
pub fn probe_ids(b: &[u8]) -> (Option<String>, Option<String>) {
    let cstr = |s: &[u8]| {
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        std::str::from_utf8(&s[..end])
            .ok()
            .map(str::to_string)
            .filter(|t| !t.is_empty())
    };
    if b.len() >= 208 {
        if let Some(v) = lukskit_format::detect::detect(b) {
            let uuid = cstr(&b[168..208]);
            let label = match v {
                lukskit_format::VolumeType::Luks2 => cstr(&b[24..72]),
                _ => None,
            };
            return (uuid, label);
        }
    }
    // ext2/3/4: superblock at 1024, magic 0xEF53 at +56, UUID at +104, label at +120.
    if b.len() >= 1024 + 136 && b[1024 + 56..1024 + 58] == [0x53, 0xEF] {
        let u = &b[1024 + 104..1024 + 120];
        let uuid = format!(
            "{}-{}-{}-{}-{}",
            hex::encode(&u[0..4]),
            hex::encode(&u[4..6]),
            hex::encode(&u[6..8]),
            hex::encode(&u[8..10]),
            hex::encode(&u[10..16])
        );
        return (Some(uuid), cstr(&b[1024 + 120..1024 + 136]));
    }
    (None, None)
}

/// Look through the block devices the kernel lists (at most [`MAX_SCANNED_DEVICES`], the
/// first [`SCAN_BYTES`] of each) for a LUKS or ext header with the UUID or label, or a
/// partition with the name (`PARTNAME` in sysfs).
fn scan_block_devices(spec: &DeviceSpec) -> Option<PathBuf> {
    let entries = std::fs::read_dir("/sys/class/block").ok()?;
    for ent in entries.take(MAX_SCANNED_DEVICES).flatten() {
        let name = ent.file_name();
        let name = name.to_string_lossy();
        let sys = ent.path();
        let size: u64 = std::fs::read_to_string(sys.join("size"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if size == 0 {
            continue;
        }
        let dev = Path::new("/dev").join(name.as_ref());
        if !std::fs::metadata(&dev).is_ok_and(|m| m.file_type().is_block_device()) {
            continue;
        }
        let hit = match spec {
            DeviceSpec::PartLabel(want) => std::fs::read_to_string(sys.join("uevent"))
                .ok()
                .is_some_and(|u| u.lines().any(|l| l.strip_prefix("PARTNAME=") == Some(want))),
            DeviceSpec::Uuid(want) => first_bytes(&dev, SCAN_BYTES)
                .and_then(|b| probe_ids(&b).0)
                .is_some_and(|u| u.eq_ignore_ascii_case(want)),
            DeviceSpec::Label(want) => first_bytes(&dev, SCAN_BYTES)
                .and_then(|b| probe_ids(&b).1)
                .is_some_and(|l| &l == want),
            _ => false,
        };
        // A leg of an md array (held by it, or with an md superblock at its end where the
        // array is not assembled) shows the array's header too: never the device meant.
        if hit && !held(&sys) && !md_member(&dev, size) {
            return Some(dev);
        }
    }
    None
}

/// Whether another device (md, dm) is built on this one.
fn held(sys: &Path) -> bool {
    std::fs::read_dir(sys.join("holders")).is_ok_and(|mut d| d.next().is_some())
}

/// md's superblock magic (little-endian on disk).
const MD_MAGIC: u32 = 0xa92b_4efc;

/// Whether `dev` (of `sectors` 512-byte sectors) carries an md superblock of format 0.90 or
/// 1.0 (at its end, where the data starts at sector 0 and so looks like the array's content).
fn md_member(dev: &Path, sectors: u64) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(f) = std::fs::File::open(dev) else {
        return false;
    };
    let at = |sector: u64| {
        let mut b = [0u8; 4];
        f.read_exact_at(&mut b, sector * 512).is_ok() && u32::from_le_bytes(b) == MD_MAGIC
    };
    // 0.90: the last 64 KiB-aligned 64 KiB block; 1.0: 8 KiB from the end, 4 KiB aligned.
    (sectors >= 128 && at((sectors & !127) - 128)) || (sectors >= 16 && at((sectors - 16) & !7))
}

/// `blkid -l -o device -t SPEC`, where blkid is installed (for what lukskit does not probe
/// itself, such as PARTUUID without udev).
fn blkid(spec: &DeviceSpec) -> Option<PathBuf> {
    if matches!(spec, DeviceSpec::Path(_)) {
        return None;
    }
    let out = std::process::Command::new("blkid")
        .args(["-l", "-o", "device", "-t", &spec.to_string()])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    let p = PathBuf::from(s.lines().next()?.trim());
    std::fs::metadata(&p)
        .is_ok_and(|m| m.file_type().is_block_device())
        .then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_luks_and_ext_headers() {
        let mut b = vec![0u8; 4096];
        b[..6].copy_from_slice(b"LUKS\xba\xbe");
        b[6..8].copy_from_slice(&[0, 2]);
        b[24..29].copy_from_slice(b"usb-b");
        let u = b"2505567a-9e27-4efe-a4d5-15ad146c258b";
        b[168..168 + u.len()].copy_from_slice(u);
        assert_eq!(
            probe_ids(&b),
            (
                Some(String::from_utf8(u.to_vec()).unwrap()),
                Some("usb-b".into())
            )
        );
        let mut x = vec![0u8; 4096];
        x[1024 + 56] = 0x53;
        x[1024 + 57] = 0xEF;
        x[1024 + 104..1024 + 120].copy_from_slice(&[
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
            0xcd, 0xef,
        ]);
        x[1024 + 120..1024 + 126].copy_from_slice(b"keydev");
        assert_eq!(
            probe_ids(&x),
            (
                Some("12345678-9abc-def0-0123-456789abcdef".into()),
                Some("keydev".into())
            )
        );
        assert_eq!(probe_ids(&[0u8; 100]), (None, None));
    }

    #[test]
    fn udev_escapes() {
        assert_eq!(udev_escape("my disk/x"), r"my\x20disk\x2fx");
    }
}
