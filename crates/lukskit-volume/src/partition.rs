//! Kernel partitions of block devices, as sysfs describes them (cryptsetup's
//! `crypt_dev_is_partition`, `crypt_get_base_device`, `crypt_dev_partition_offset`): TrueCrypt
//! system encryption reads its header from the whole disk when given a partition, and counts
//! IVs from the disk's start.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A partition of a whole disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// The whole disk (`/dev/NAME` of the partition's parent in sysfs).
    pub disk: PathBuf,
    /// The partition's first sector on the disk, in 512-byte sectors.
    pub start: u64,
}

/// The partition `path` is, or None for a file, a whole disk, a device-mapper device (no
/// kernel partitions there), or anything sysfs does not describe.
pub fn partition_of(path: &str) -> Option<Partition> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let rdev = meta.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    partition_in_sysfs(&sys)
}

/// [`partition_of`] from the device's sysfs directory (for tests: any directory laid out as
/// sysfs lays out a partition: a `partition` and a `start` file, the disk its parent).
fn partition_in_sysfs(sys: &Path) -> Option<Partition> {
    if !sys.join("partition").is_file() {
        return None;
    }
    let start = read_u64(&sys.join("start"))?;
    let real = std::fs::canonicalize(sys).ok()?;
    let disk = real.parent()?.file_name()?.to_str()?.to_string();
    if disk.starts_with("dm-") {
        return None;
    }
    Some(Partition {
        disk: PathBuf::from("/dev").join(disk),
        start,
    })
}

fn read_u64(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_layout_of_a_partition() {
        let d = tempfile::tempdir().unwrap();
        let disk = d.path().join("loop7");
        let part = disk.join("loop7p1");
        std::fs::create_dir_all(&part).unwrap();
        std::fs::write(part.join("partition"), "1\n").unwrap();
        std::fs::write(part.join("start"), "63\n").unwrap();
        assert_eq!(
            partition_in_sysfs(&part),
            Some(Partition {
                disk: PathBuf::from("/dev/loop7"),
                start: 63
            })
        );
        // A whole disk has no `partition` file.
        assert_eq!(partition_in_sysfs(&disk), None);
        // Regular files are no partitions.
        assert_eq!(partition_of(part.join("start").to_str().unwrap()), None);
    }
}
