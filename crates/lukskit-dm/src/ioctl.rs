//! The device-mapper ioctl interface (version 4, `linux/dm-ioctl.h`), spoken directly.
//!
//! Every command sends one buffer that starts with a 312-byte `struct dm_ioctl` header and may
//! carry a payload after it (`data_start` = 312). The kernel writes its reply into the same
//! buffer; when the reply does not fit it sets `DM_BUFFER_FULL_FLAG` and the command is repeated
//! with a buffer twice the size, up to [`MAX_BUFFER`]. All buffers are zeroized when dropped
//! (table loads and `key set` messages carry keys; table status replies may carry them).
//!
//! [`Control`] is an open `/dev/mapper/control`; its methods are one ioctl each (`TABLE_LOAD`
//! plus nothing else, ...). The multi-step operations (create + load + resume with cleanup) are
//! in [`crate::mapping`].

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use zeroize::Zeroizing;

use crate::devt::DevT;
use crate::error::{DmError, Result};

/// The device-mapper control node.
pub const CONTROL_PATH: &str = "/dev/mapper/control";

/// `DM_NAME_LEN`: names are at most 127 bytes.
pub const NAME_LEN: usize = 128;
/// `DM_UUID_LEN`: DM UUIDs are at most 128 bytes.
pub const UUID_LEN: usize = 129;
/// `DM_MAX_TYPE_NAME`: target type names are at most 15 bytes.
pub const MAX_TYPE_NAME: usize = 16;

/// Size of `struct dm_ioctl`.
const HEADER_SIZE: usize = 312;
/// Size of `struct dm_target_spec`.
const SPEC_SIZE: usize = 40;
/// First reply buffer (libdevmapper starts with 16 KiB too).
const INITIAL_BUFFER: usize = 16 * 1024;
/// The largest reply buffer tried before giving up with [`DmError::ReplyTooLarge`].
pub const MAX_BUFFER: usize = 32 * 1024 * 1024;

// struct dm_ioctl field offsets.
const OFF_VERSION: usize = 0;
const OFF_DATA_SIZE: usize = 12;
const OFF_DATA_START: usize = 16;
const OFF_TARGET_COUNT: usize = 20;
const OFF_OPEN_COUNT: usize = 24;
const OFF_FLAGS: usize = 28;
const OFF_EVENT_NR: usize = 32;
const OFF_DEV: usize = 40;
const OFF_NAME: usize = 48;
const OFF_UUID: usize = OFF_NAME + NAME_LEN;
const _: () = assert!(OFF_UUID + UUID_LEN + 7 == HEADER_SIZE);

/// The interface version we speak: any 4.x kernel accepts a request that says 4.0.0.
const VERSION: [u32; 3] = [4, 0, 0];

/// Flags for the device-mapper udev rules (Debian's dmsetup: 55-dm.rules,
/// 60-persistent-storage-dm.rules, 95-dm-notify.rules), passed as libdevmapper passes them: in
/// the upper 16 bits of `dm_ioctl.event_nr`, which the kernel hands to udev as `DM_COOKIE` with
/// the uevent of a resume or remove. We put no semaphore in the lower 16 bits (the "cookie"
/// libdevmapper waits on, the usual source of its hangs): `dmsetup udevcomplete` returns at
/// once for such a flags-only cookie, exactly as for libdevmapper's own when it does not
/// synchronise with udev.
pub mod udev_flags {
    /// `DM_UDEV_DISABLE_LIBRARY_FALLBACK`: udev owns the nodes (cryptsetup sets it for every
    /// mapping).
    pub const DISABLE_LIBRARY_FALLBACK: u16 = 0x0020;
    /// `DM_UDEV_PRIMARY_SOURCE_FLAG`: this event comes from the tool that made the change.
    /// Without it 55-dm.rules takes the flags of the first (`add`) event from udev's database,
    /// which disable the disk rules: `/dev/mapper/NAME` is made but no `/dev/disk/by-id/dm-*`
    /// or `/dev/disk/by-uuid/*` link.
    pub const PRIMARY_SOURCE: u16 = 0x0040;
    /// Where the flags go in `event_nr` (`DM_UDEV_FLAGS_SHIFT`).
    pub const SHIFT: u32 = 16;
    /// The `event_nr` of our resume and remove requests: the flags libdevmapper sets for a
    /// cryptsetup mapping (`DM_UDEV_DISABLE_LIBRARY_FALLBACK | DM_UDEV_PRIMARY_SOURCE_FLAG`),
    /// no semaphore.
    pub const COOKIE: u32 = ((DISABLE_LIBRARY_FALLBACK | PRIMARY_SOURCE) as u32) << SHIFT;
}

/// `dm_ioctl.flags` bits.
pub mod flags {
    /// In/out: read-only table / device.
    pub const READONLY: u32 = 1 << 0;
    /// In/out: suspend (DEV_SUSPEND); out: the device is suspended.
    pub const SUSPEND: u32 = 1 << 1;
    /// In: use the minor number given in `dev`.
    pub const PERSISTENT_DEV: u32 = 1 << 3;
    /// In: TABLE_STATUS returns the table instead of the status.
    pub const STATUS_TABLE: u32 = 1 << 4;
    /// Out: a live table is present.
    pub const ACTIVE_PRESENT: u32 = 1 << 5;
    /// Out: an inactive (loaded, not yet resumed) table is present.
    pub const INACTIVE_PRESENT: u32 = 1 << 6;
    /// Out: the reply did not fit the buffer.
    pub const BUFFER_FULL: u32 = 1 << 8;
    /// In: do not freeze filesystems when suspending.
    pub const SKIP_LOCKFS: u32 = 1 << 10;
    /// In: suspend without flushing queued I/O.
    pub const NOFLUSH: u32 = 1 << 11;
    /// In: status of the inactive table.
    pub const QUERY_INACTIVE_TABLE: u32 = 1 << 12;
    /// Out: a uevent was generated.
    pub const UEVENT_GENERATED: u32 = 1 << 13;
    /// In (RENAME): set the DM UUID instead of the name.
    pub const UUID: u32 = 1 << 14;
    /// In: the kernel wipes its copies of this ioctl's buffer (keys in tables and messages).
    pub const SECURE_DATA: u32 = 1 << 15;
    /// Out: TARGET_MSG returned data.
    pub const DATA_OUT: u32 = 1 << 16;
    /// In (REMOVE): remove when the last opener closes; out: a deferred remove is pending.
    pub const DEFERRED_REMOVE: u32 = 1 << 17;
    /// Out: suspended internally by the kernel.
    pub const INTERNAL_SUSPEND: u32 = 1 << 18;
}

/// The DM commands (`DM_*_CMD`), numbered as the kernel numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum Cmd {
    Version = 0,
    ListDevices = 2,
    DevCreate = 3,
    DevRemove = 4,
    DevRename = 5,
    DevSuspend = 6,
    DevStatus = 7,
    TableLoad = 9,
    TableClear = 10,
    TableStatus = 12,
    ListVersions = 13,
    TargetMsg = 14,
    GetTargetVersion = 17,
}

impl Cmd {
    /// `_IOWR(0xfd, cmd, struct dm_ioctl)`.
    fn request(self) -> u64 {
        (3u64 << 30) | ((HEADER_SIZE as u64) << 16) | (0xfdu64 << 8) | self as u64
    }

    fn name(self) -> &'static str {
        match self {
            Cmd::Version => "version",
            Cmd::ListDevices => "list",
            Cmd::DevCreate => "create",
            Cmd::DevRemove => "remove",
            Cmd::DevRename => "rename",
            Cmd::DevSuspend => "suspend",
            Cmd::DevStatus => "info",
            Cmd::TableLoad => "load",
            Cmd::TableClear => "clear",
            Cmd::TableStatus => "table",
            Cmd::ListVersions => "targets",
            Cmd::TargetMsg => "message",
            Cmd::GetTargetVersion => "target-version",
        }
    }
}

/// State flags of a mapping, from `DEV_STATUS` (what `dmsetup info` shows as `Stat`/`State`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceFlags {
    /// The device is read-only.
    pub readonly: bool,
    /// The device is suspended.
    pub suspended: bool,
    /// A live table is present.
    pub active_present: bool,
    /// An inactive table is loaded and waits for a resume.
    pub inactive_present: bool,
    /// A deferred remove is pending (removed when the last opener closes).
    pub deferred_remove: bool,
    /// Suspended internally by the kernel (e.g. by a thin pool).
    pub internal_suspend: bool,
}

impl DeviceFlags {
    fn from_bits(f: u32) -> DeviceFlags {
        DeviceFlags {
            readonly: f & flags::READONLY != 0,
            suspended: f & flags::SUSPEND != 0,
            active_present: f & flags::ACTIVE_PRESENT != 0,
            inactive_present: f & flags::INACTIVE_PRESENT != 0,
            deferred_remove: f & flags::DEFERRED_REMOVE != 0,
            internal_suspend: f & flags::INTERNAL_SUSPEND != 0,
        }
    }
}

/// What the kernel reports about one mapping (the `dm_ioctl` header of a reply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The mapping name.
    pub name: String,
    /// The DM UUID (`None` when the mapping has none).
    pub uuid: Option<String>,
    /// The block device number of the mapping (`253:N`).
    pub dev: DevT,
    /// How many openers the block device has.
    pub open_count: i32,
    /// The event counter.
    pub event_nr: u32,
    /// Number of targets in the live table.
    pub target_count: u32,
    /// State flags.
    pub flags: DeviceFlags,
    /// True when the kernel generated a uevent for this command (udev will act on it).
    pub uevent_generated: bool,
}

/// One entry of `LIST_DEVICES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedDevice {
    /// The mapping name.
    pub name: String,
    /// Its block device number.
    pub dev: DevT,
    /// Its event counter (kernels with DM interface >= 4.37; else 0).
    pub event_nr: u32,
    /// Its DM UUID, on kernels that report it (interface >= 4.45) and when it has one.
    pub uuid: Option<String>,
}

/// A target type the kernel knows, with its version (`LIST_VERSIONS`, `GET_TARGET_VERSION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetVersion {
    /// The target type (`crypt`, `linear`, ...).
    pub name: String,
    /// Its version `[major, minor, patch]`.
    pub version: [u32; 3],
}

/// One target of a table being loaded: the four fields of a table line. `params` may hold a
/// key, so it is a zeroizing string.
#[derive(Debug)]
pub struct TargetSpec {
    /// First sector of the target in the mapping.
    pub start: u64,
    /// Length in 512-byte sectors.
    pub length: u64,
    /// The target type (`crypt`, `linear`, `zero`, `error`).
    pub target_type: String,
    /// The target's parameter string.
    pub params: Zeroizing<String>,
}

/// One target of a `TABLE_STATUS` reply: for [`StatusType::Table`] the table line's fields,
/// for [`StatusType::Info`] the target's status string.
#[derive(Debug)]
pub struct TargetStatus {
    /// First sector.
    pub start: u64,
    /// Length in sectors.
    pub length: u64,
    /// Target type.
    pub target_type: String,
    /// The parameter or status string (zeroized on drop: it may hold a key).
    pub params: Zeroizing<String>,
}

/// Which text `TABLE_STATUS` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusType {
    /// `STATUSTYPE_INFO`: the target's run-time status (`dmsetup status`).
    Info,
    /// `STATUSTYPE_TABLE`: the table line as loaded (`dmsetup table`). dm-crypt prints its
    /// key here (hex, or `:<size>:<type>:<description>`); only `CAP_SYS_ADMIN` may call DM
    /// ioctls at all, and `dmsetup table` hides the key in userspace unless `--showkeys`.
    Table,
}

/// Options of `DEV_SUSPEND` when suspending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SuspendOptions {
    /// Do not flush queued I/O (`DM_NOFLUSH_FLAG`, `dmsetup suspend --noflush`).
    pub noflush: bool,
    /// Do not freeze a mounted filesystem (`DM_SKIP_LOCKFS_FLAG`, `--nolockfs`).
    pub skip_lockfs: bool,
}

/// An ioctl buffer: header plus payload, wiped on drop.
struct Buffer {
    bytes: Zeroizing<Vec<u8>>,
}

impl Buffer {
    fn new(size: usize) -> Buffer {
        let mut bytes = Zeroizing::new(vec![0u8; size.max(HEADER_SIZE)]);
        let n = bytes.len() as u32;
        for (i, v) in VERSION.iter().enumerate() {
            put_u32(&mut bytes, OFF_VERSION + 4 * i, *v);
        }
        put_u32(&mut bytes, OFF_DATA_SIZE, n);
        put_u32(&mut bytes, OFF_DATA_START, HEADER_SIZE as u32);
        Buffer { bytes }
    }

    fn set_name(&mut self, name: &str) -> Result<()> {
        check_name(name)?;
        self.bytes[OFF_NAME..OFF_NAME + name.len()].copy_from_slice(name.as_bytes());
        Ok(())
    }

    fn set_uuid(&mut self, uuid: &str) -> Result<()> {
        check_uuid(uuid)?;
        self.bytes[OFF_UUID..OFF_UUID + uuid.len()].copy_from_slice(uuid.as_bytes());
        Ok(())
    }

    fn flags(&self) -> u32 {
        get_u32(&self.bytes, OFF_FLAGS)
    }

    fn set_flags(&mut self, f: u32) {
        put_u32(&mut self.bytes, OFF_FLAGS, f);
    }

    fn data_start(&self) -> usize {
        get_u32(&self.bytes, OFF_DATA_START) as usize
    }

    /// The reply's payload: `data_start .. data_size`, bounded by the buffer.
    fn payload(&self, op: &'static str) -> Result<&[u8]> {
        let start = self.data_start();
        let end = get_u32(&self.bytes, OFF_DATA_SIZE) as usize;
        if start < HEADER_SIZE || start > end || end > self.bytes.len() {
            return Err(DmError::BadReply {
                op,
                what: "data_start/data_size out of range",
            });
        }
        Ok(&self.bytes[start..end])
    }

    fn info(&self) -> DeviceInfo {
        let f = self.flags();
        let uuid = cstr_field(&self.bytes[OFF_UUID..OFF_UUID + UUID_LEN]);
        DeviceInfo {
            name: cstr_field(&self.bytes[OFF_NAME..OFF_NAME + NAME_LEN]),
            uuid: (!uuid.is_empty()).then_some(uuid),
            dev: DevT::from_raw(get_u64(&self.bytes, OFF_DEV)),
            open_count: get_u32(&self.bytes, OFF_OPEN_COUNT) as i32,
            event_nr: get_u32(&self.bytes, OFF_EVENT_NR),
            target_count: get_u32(&self.bytes, OFF_TARGET_COUNT),
            flags: DeviceFlags::from_bits(f),
            uevent_generated: f & flags::UEVENT_GENERATED != 0,
        }
    }
}

/// An open `/dev/mapper/control`.
#[derive(Debug)]
pub struct Control {
    file: File,
}

impl Control {
    /// Open [`CONTROL_PATH`]. See [`crate::node::ensure_control`] to create it first.
    pub fn open() -> Result<Control> {
        Control::open_path(Path::new(CONTROL_PATH))
    }

    /// Open a device-mapper control node at `path`.
    pub fn open_path(path: &Path) -> Result<Control> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|source| DmError::Unavailable {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Control { file })
    }

    /// Run `cmd` on `buf`. On `DM_BUFFER_FULL_FLAG`, `grow` decides whether to retry with a
    /// buffer twice the size (the request is rebuilt by `build`).
    fn run(
        &self,
        cmd: Cmd,
        name: &str,
        size: usize,
        build: &dyn Fn(usize) -> Result<Buffer>,
    ) -> Result<Buffer> {
        let mut size = size;
        loop {
            let mut buf = build(size)?;
            // SAFETY: `buf.bytes` is a live, exclusively borrowed allocation of
            // `buf.bytes.len()` bytes, and its header's data_size says exactly that length,
            // so the kernel reads and writes only inside it. The request number encodes the
            // size of struct dm_ioctl (312 bytes), which the buffer always covers.
            let rc = unsafe {
                libc::ioctl(
                    self.file.as_raw_fd(),
                    cmd.request() as _,
                    buf.bytes.as_mut_ptr(),
                )
            };
            if rc < 0 {
                return Err(DmError::from_os(
                    cmd.name(),
                    name,
                    io::Error::last_os_error(),
                ));
            }
            if buf.flags() & flags::BUFFER_FULL == 0 {
                return Ok(buf);
            }
            if size >= MAX_BUFFER {
                return Err(DmError::ReplyTooLarge {
                    op: cmd.name(),
                    name: name.to_string(),
                    limit: MAX_BUFFER,
                });
            }
            size = (size * 2).min(MAX_BUFFER);
        }
    }

    /// A command on mapping `name` with no payload.
    fn simple(&self, cmd: Cmd, name: &str, fl: u32) -> Result<Buffer> {
        self.simple_event(cmd, name, fl, 0)
    }

    /// A command on mapping `name` with no payload and `event_nr` set to `event` (the udev
    /// cookie of a resume or remove, see [`udev_flags`]).
    fn simple_event(&self, cmd: Cmd, name: &str, fl: u32, event: u32) -> Result<Buffer> {
        self.run(cmd, name, HEADER_SIZE, &|size| {
            let mut b = Buffer::new(size);
            if !name.is_empty() {
                b.set_name(name)?;
            }
            b.set_flags(fl);
            put_u32(&mut b.bytes, OFF_EVENT_NR, event);
            Ok(b)
        })
    }

    /// `DM_VERSION`: the kernel's ioctl interface version (e.g. `[4, 47, 0]` on Linux 6.1).
    pub fn version(&self) -> Result<[u32; 3]> {
        let b = self.simple(Cmd::Version, "", 0)?;
        Ok([
            get_u32(&b.bytes, OFF_VERSION),
            get_u32(&b.bytes, OFF_VERSION + 4),
            get_u32(&b.bytes, OFF_VERSION + 8),
        ])
    }

    /// `DM_LIST_DEVICES`: every mapping.
    pub fn list_devices(&self) -> Result<Vec<ListedDevice>> {
        let b = self.run(Cmd::ListDevices, "", INITIAL_BUFFER, &|size| {
            Ok(Buffer::new(size))
        })?;
        let kernel_minor = get_u32(&b.bytes, OFF_VERSION + 4);
        let data = b.payload("list")?;
        parse_name_list(data, kernel_minor)
    }

    /// `DM_LIST_VERSIONS`: the loaded target types and their versions.
    pub fn list_versions(&self) -> Result<Vec<TargetVersion>> {
        let b = self.run(Cmd::ListVersions, "", INITIAL_BUFFER, &|size| {
            Ok(Buffer::new(size))
        })?;
        parse_versions(b.payload("targets")?)
    }

    /// The version of target type `target` (`crypt`, ...). Uses `DM_GET_TARGET_VERSION`,
    /// which makes the kernel load the target's module (`dm-crypt`) first; falls back to
    /// `DM_LIST_VERSIONS` on kernels older than that command (DM interface < 4.41), which
    /// lists only loaded targets. `Ok(None)` when the kernel has no such target.
    pub fn target_version(&self, target: &str) -> Result<Option<TargetVersion>> {
        if target.is_empty() || target.len() >= MAX_TYPE_NAME {
            return Err(DmError::InvalidArgument(format!(
                "target type of {} bytes",
                target.len()
            )));
        }
        let r = self.run(Cmd::GetTargetVersion, "", INITIAL_BUFFER, &|size| {
            // The kernel reads the target type from the name field.
            let mut b = Buffer::new(size);
            b.set_name(target)?;
            Ok(b)
        });
        match r {
            Ok(b) => Ok(parse_versions(b.payload("target-version")?)?
                .into_iter()
                .find(|t| t.name == target)),
            // Kernels before the command answer ENOTTY: list what is loaded instead.
            Err(e) if e.raw_os_error() == Some(libc::ENOTTY) => {
                Ok(self.list_versions()?.into_iter().find(|t| t.name == target))
            }
            // No such target type (not even as a module).
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `DM_DEV_CREATE`: a new mapping with no table, named `name`, with DM UUID `uuid`.
    /// A name or DM UUID already in use is [`DmError::Exists`] (the kernel says `EBUSY`).
    pub fn create(&self, name: &str, uuid: Option<&str>) -> Result<DeviceInfo> {
        let r = self.run(Cmd::DevCreate, name, HEADER_SIZE, &|size| {
            let mut b = Buffer::new(size);
            b.set_name(name)?;
            if let Some(u) = uuid {
                b.set_uuid(u)?;
            }
            Ok(b)
        });
        match r {
            Ok(b) => Ok(b.info()),
            Err(DmError::Busy { op, name, source }) => Err(DmError::Exists { op, name, source }),
            Err(e) => Err(e),
        }
    }

    /// `DM_TABLE_LOAD`: load `targets` as the inactive table of `name` (a resume makes it
    /// live). `readonly` sets `DM_READONLY_FLAG`; `secure` sets `DM_SECURE_DATA_FLAG` so the
    /// kernel wipes its copy of the buffer (always set it for crypt tables). Our buffer is
    /// wiped on drop either way.
    pub fn load_table(
        &self,
        name: &str,
        targets: &[TargetSpec],
        readonly: bool,
        secure: bool,
    ) -> Result<DeviceInfo> {
        if targets.is_empty() {
            return Err(DmError::InvalidArgument("a table needs a target".into()));
        }
        let mut need = HEADER_SIZE;
        for t in targets {
            check_target_type(&t.target_type)?;
            if t.params.as_bytes().contains(&0) {
                return Err(DmError::InvalidArgument("NUL in target parameters".into()));
            }
            need += spec_stride(&t.params);
        }
        let fl = if readonly { flags::READONLY } else { 0 }
            | if secure { flags::SECURE_DATA } else { 0 };
        let b = self.run(Cmd::TableLoad, name, need, &|size| {
            let mut b = Buffer::new(size);
            b.set_name(name)?;
            b.set_flags(fl);
            put_u32(&mut b.bytes, OFF_TARGET_COUNT, targets.len() as u32);
            let mut off = HEADER_SIZE;
            for t in targets {
                let stride = spec_stride(&t.params);
                put_u64(&mut b.bytes, off, t.start);
                put_u64(&mut b.bytes, off + 8, t.length);
                // status (i32) stays 0; next = offset of the following spec from this one.
                put_u32(&mut b.bytes, off + 20, stride as u32);
                put_cstr(&mut b.bytes, off + 24, &t.target_type);
                put_cstr(&mut b.bytes, off + SPEC_SIZE, &t.params);
                off += stride;
            }
            Ok(b)
        })?;
        Ok(b.info())
    }

    /// `DM_TABLE_CLEAR`: drop the inactive table of `name`.
    pub fn clear_table(&self, name: &str) -> Result<DeviceInfo> {
        Ok(self.simple(Cmd::TableClear, name, 0)?.info())
    }

    /// `DM_DEV_SUSPEND` with `DM_SUSPEND_FLAG`: suspend `name`.
    pub fn suspend(&self, name: &str, opts: SuspendOptions) -> Result<DeviceInfo> {
        let mut fl = flags::SUSPEND;
        if opts.noflush {
            fl |= flags::NOFLUSH;
        }
        if opts.skip_lockfs {
            fl |= flags::SKIP_LOCKFS;
        }
        Ok(self.simple(Cmd::DevSuspend, name, fl)?.info())
    }

    /// `DM_DEV_SUSPEND` without `DM_SUSPEND_FLAG`: resume `name`, making a loaded inactive
    /// table live. `secure` sets `DM_SECURE_DATA_FLAG` (libdevmapper sets it on the resume of
    /// a crypt mapping too).
    /// Its uevent carries [`udev_flags::COOKIE`].
    pub fn resume(&self, name: &str, secure: bool) -> Result<DeviceInfo> {
        let fl = if secure { flags::SECURE_DATA } else { 0 };
        Ok(self
            .simple_event(Cmd::DevSuspend, name, fl, udev_flags::COOKIE)?
            .info())
    }

    /// `DM_DEV_REMOVE`. With `deferred`, a mapping that is still open is marked for removal
    /// when its last opener closes (the reply's flags then show `deferred_remove`) instead of
    /// failing with [`DmError::Busy`]. Its uevent carries [`udev_flags::COOKIE`].
    pub fn remove(&self, name: &str, deferred: bool) -> Result<DeviceInfo> {
        let fl = if deferred { flags::DEFERRED_REMOVE } else { 0 };
        Ok(self
            .simple_event(Cmd::DevRemove, name, fl, udev_flags::COOKIE)?
            .info())
    }

    /// Cancel a pending deferred remove (the `@cancel_deferred_remove` message).
    pub fn cancel_deferred_remove(&self, name: &str) -> Result<()> {
        self.message(name, 0, b"@cancel_deferred_remove", false)?;
        Ok(())
    }

    /// `DM_DEV_STATUS`: state of `name`.
    pub fn info(&self, name: &str) -> Result<DeviceInfo> {
        Ok(self.simple(Cmd::DevStatus, name, 0)?.info())
    }

    /// `DM_TABLE_STATUS`: the live table (or status) of `name`, target by target. `secure`
    /// sets `DM_SECURE_DATA_FLAG`, so the kernel wipes its copy of a reply that holds a key;
    /// our buffers are wiped on drop either way.
    pub fn table_status(
        &self,
        name: &str,
        kind: StatusType,
        secure: bool,
    ) -> Result<(DeviceInfo, Vec<TargetStatus>)> {
        let mut fl = if secure { flags::SECURE_DATA } else { 0 };
        if kind == StatusType::Table {
            fl |= flags::STATUS_TABLE;
        }
        let b = self.run(Cmd::TableStatus, name, INITIAL_BUFFER, &|size| {
            let mut b = Buffer::new(size);
            b.set_name(name)?;
            b.set_flags(fl);
            Ok(b)
        })?;
        let info = b.info();
        let targets = parse_specs(b.payload("table")?, info.target_count)?;
        Ok((info, targets))
    }

    /// `DM_TARGET_MSG`: send `message` to the target at `sector` of `name` (dm-crypt's
    /// `key wipe`, `key set <key>`). `secure` sets `DM_SECURE_DATA_FLAG` (use it for any
    /// message holding a key); the buffer is wiped on drop. Returns the target's reply text,
    /// if it gave one.
    pub fn message(
        &self,
        name: &str,
        sector: u64,
        message: &[u8],
        secure: bool,
    ) -> Result<Option<Zeroizing<String>>> {
        if message.is_empty() || message.contains(&0) {
            return Err(DmError::InvalidArgument(
                "a target message is non-empty text without NUL".into(),
            ));
        }
        let fl = if secure { flags::SECURE_DATA } else { 0 };
        let need = HEADER_SIZE + 8 + message.len() + 1;
        let b = self.run(Cmd::TargetMsg, name, need.max(INITIAL_BUFFER), &|size| {
            let mut b = Buffer::new(size);
            b.set_name(name)?;
            b.set_flags(fl);
            put_u64(&mut b.bytes, HEADER_SIZE, sector);
            b.bytes[HEADER_SIZE + 8..HEADER_SIZE + 8 + message.len()].copy_from_slice(message);
            Ok(b)
        })?;
        if b.flags() & flags::DATA_OUT == 0 {
            return Ok(None);
        }
        let data = b.payload("message")?;
        let end = data.iter().position(|&c| c == 0).unwrap_or(data.len());
        let text = String::from_utf8_lossy(&data[..end]).into_owned();
        Ok(Some(Zeroizing::new(text)))
    }

    /// `DM_DEV_RENAME`: rename `name` to `new_name`.
    pub fn rename(&self, name: &str, new_name: &str) -> Result<DeviceInfo> {
        check_name(new_name)?;
        self.rename_inner(name, new_name, 0)
    }

    /// `DM_DEV_RENAME` with `DM_UUID_FLAG`: give `name`, which has no DM UUID yet, one.
    pub fn set_uuid(&self, name: &str, uuid: &str) -> Result<DeviceInfo> {
        check_uuid(uuid)?;
        self.rename_inner(name, uuid, flags::UUID)
    }

    fn rename_inner(&self, name: &str, new: &str, fl: u32) -> Result<DeviceInfo> {
        let b = self.run(Cmd::DevRename, name, HEADER_SIZE + new.len() + 1, &|size| {
            let mut b = Buffer::new(size);
            b.set_name(name)?;
            b.set_flags(fl);
            put_cstr(&mut b.bytes, HEADER_SIZE, new);
            Ok(b)
        })?;
        Ok(b.info())
    }
}

/// Bytes one target spec takes in a TABLE_LOAD buffer: the struct, the NUL-terminated
/// parameters, padded to 8 bytes.
fn spec_stride(params: &str) -> usize {
    (SPEC_SIZE + params.len() + 1).next_multiple_of(8)
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() >= NAME_LEN
        || name.contains('/')
        || name.contains('\0')
        || name == "."
        || name == ".."
    {
        return Err(DmError::InvalidArgument(format!(
            "mapping name {name:?} (1..127 bytes, no '/', not . or ..)"
        )));
    }
    Ok(())
}

fn check_uuid(uuid: &str) -> Result<()> {
    if uuid.is_empty() || uuid.len() >= UUID_LEN || uuid.contains('\0') {
        return Err(DmError::InvalidArgument(format!(
            "DM UUID {uuid:?} (1..128 bytes)"
        )));
    }
    Ok(())
}

fn check_target_type(t: &str) -> Result<()> {
    if t.is_empty() || t.len() >= MAX_TYPE_NAME || t.contains('\0') {
        return Err(DmError::InvalidArgument(format!("target type {t:?}")));
    }
    Ok(())
}

/// Parse the `dm_target_spec` list of a TABLE_STATUS reply. There, `next` counts from the
/// start of the first spec.
fn parse_specs(data: &[u8], count: u32) -> Result<Vec<TargetStatus>> {
    const OP: &str = "table";
    let mut out = Vec::with_capacity(count as usize);
    let mut off = 0usize;
    for _ in 0..count {
        if off + SPEC_SIZE > data.len() {
            return Err(DmError::BadReply {
                op: OP,
                what: "target spec beyond the reply",
            });
        }
        let start = get_u64(data, off);
        let length = get_u64(data, off + 8);
        let next = get_u32(data, off + 20) as usize;
        let target_type = cstr_field(&data[off + 24..off + SPEC_SIZE]);
        let p = &data[off + SPEC_SIZE..];
        let end = p.iter().position(|&c| c == 0).ok_or(DmError::BadReply {
            op: OP,
            what: "unterminated target parameters",
        })?;
        let params = Zeroizing::new(
            std::str::from_utf8(&p[..end])
                .map_err(|_| DmError::BadReply {
                    op: OP,
                    what: "target parameters are not UTF-8",
                })?
                .to_string(),
        );
        out.push(TargetStatus {
            start,
            length,
            target_type,
            params,
        });
        if next <= off && out.len() < count as usize {
            return Err(DmError::BadReply {
                op: OP,
                what: "target spec offsets do not advance",
            });
        }
        off = next;
    }
    Ok(out)
}

/// Parse the `dm_name_list` records of LIST_DEVICES. Each record: `dev` (u64), `next` (u32,
/// from this record), the NUL-terminated name; since interface 4.37 (event_nr) and 4.45
/// (uuid) followed, 8-byte aligned, by `event_nr` (u32), `flags` (u32) and, when flags has
/// `DM_NAME_LIST_FLAG_HAS_UUID`, the NUL-terminated uuid.
fn parse_name_list(data: &[u8], kernel_minor: u32) -> Result<Vec<ListedDevice>> {
    const OP: &str = "list";
    const HAS_UUID: u32 = 1;
    let mut out = Vec::new();
    if data.len() < 12 || get_u64(data, 0) == 0 {
        return Ok(out); // dev == 0 marks an empty list
    }
    let mut off = 0usize;
    loop {
        if off + 12 > data.len() {
            return Err(DmError::BadReply {
                op: OP,
                what: "name record beyond the reply",
            });
        }
        let dev = DevT::from_raw(get_u64(data, off));
        let next = get_u32(data, off + 8) as usize;
        let name_bytes = &data[off + 12..];
        let nlen = name_bytes
            .iter()
            .position(|&c| c == 0)
            .ok_or(DmError::BadReply {
                op: OP,
                what: "unterminated name",
            })?;
        let name = String::from_utf8_lossy(&name_bytes[..nlen]).into_owned();
        let mut event_nr = 0;
        let mut uuid = None;
        if kernel_minor >= 37 {
            // Alignment is relative to the payload start, which the kernel keeps 8-aligned.
            let ev = (off + 12 + nlen + 1).next_multiple_of(8);
            let rec_end = if next == 0 { data.len() } else { off + next };
            if ev + 8 <= rec_end {
                event_nr = get_u32(data, ev);
                let fl = get_u32(data, ev + 4);
                if kernel_minor >= 45 && fl & HAS_UUID != 0 {
                    let u = &data[ev + 8..rec_end];
                    let ulen = u.iter().position(|&c| c == 0).unwrap_or(u.len());
                    uuid = Some(String::from_utf8_lossy(&u[..ulen]).into_owned());
                }
            }
        }
        out.push(ListedDevice {
            name,
            dev,
            event_nr,
            uuid,
        });
        if next == 0 {
            return Ok(out);
        }
        off += next;
    }
}

/// Parse `dm_target_versions` records: `next` (u32, from this record; 0 ends the list),
/// `version[3]`, the NUL-terminated name.
fn parse_versions(data: &[u8]) -> Result<Vec<TargetVersion>> {
    const OP: &str = "targets";
    let mut out = Vec::new();
    let mut off = 0usize;
    while off + 16 < data.len() {
        let next = get_u32(data, off) as usize;
        let version = [
            get_u32(data, off + 4),
            get_u32(data, off + 8),
            get_u32(data, off + 12),
        ];
        let n = &data[off + 16..];
        let len = n.iter().position(|&c| c == 0).ok_or(DmError::BadReply {
            op: OP,
            what: "unterminated target name",
        })?;
        out.push(TargetVersion {
            name: String::from_utf8_lossy(&n[..len]).into_owned(),
            version,
        });
        if next == 0 {
            break;
        }
        off += next;
    }
    Ok(out)
}

fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}

fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}

fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

/// Write `s` and a NUL at `off` (the caller sized the buffer).
fn put_cstr(b: &mut [u8], off: usize, s: &str) {
    b[off..off + s.len()].copy_from_slice(s.as_bytes());
    b[off + s.len()] = 0;
}

/// A NUL-terminated fixed-size field as a string.
fn cstr_field(f: &[u8]) -> String {
    let end = f.iter().position(|&c| c == 0).unwrap_or(f.len());
    String::from_utf8_lossy(&f[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udev_cookie_is_libdevmapper_flags_only() {
        // libdevmapper.h: DM_UDEV_DISABLE_LIBRARY_FALLBACK 0x0020, DM_UDEV_PRIMARY_SOURCE_FLAG
        // 0x0040, DM_UDEV_FLAGS_SHIFT 16; no semaphore in the low half.
        assert_eq!(udev_flags::COOKIE, 0x0060_0000);
        assert_eq!(udev_flags::COOKIE & 0xffff, 0);
    }

    #[test]
    fn request_numbers_match_linux_headers() {
        // _IOWR(0xfd, n, struct dm_ioctl) with sizeof = 312 (0x138), as in dm-ioctl.h.
        assert_eq!(Cmd::Version.request(), 0xc138_fd00);
        assert_eq!(Cmd::TableLoad.request(), 0xc138_fd09);
        assert_eq!(Cmd::TargetMsg.request(), 0xc138_fd0e);
        assert_eq!(Cmd::GetTargetVersion.request(), 0xc138_fd11);
    }

    #[test]
    fn header_is_filled_and_names_are_checked() {
        let mut b = Buffer::new(400);
        assert_eq!(get_u32(&b.bytes, OFF_DATA_SIZE), 400);
        assert_eq!(get_u32(&b.bytes, OFF_DATA_START), 312);
        assert_eq!(get_u32(&b.bytes, 0), 4);
        b.set_name("vol").unwrap();
        assert_eq!(&b.bytes[OFF_NAME..OFF_NAME + 4], b"vol\0");
        assert!(b.set_name("a/b").is_err());
        assert!(b.set_name(&"x".repeat(128)).is_err());
        assert!(b.set_name(&"x".repeat(127)).is_ok());
        assert!(b.set_uuid(&"u".repeat(129)).is_err());
        assert!(b.set_uuid(&"u".repeat(128)).is_ok());
    }

    #[test]
    fn spec_stride_is_8_aligned() {
        assert_eq!(spec_stride(""), 48);
        assert_eq!(spec_stride("1234567"), 48);
        assert_eq!(spec_stride("12345678"), 56);
    }

    fn spec(buf: &mut Vec<u8>, start: u64, len: u64, ty: &str, params: &str, next: u32) {
        let off = buf.len();
        buf.resize(off + spec_stride(params), 0);
        put_u64(buf, off, start);
        put_u64(buf, off + 8, len);
        put_u32(buf, off + 20, next);
        put_cstr(buf, off + 24, ty);
        put_cstr(buf, off + SPEC_SIZE, params);
    }

    #[test]
    fn table_status_specs_parse_with_next_from_first_spec() {
        let mut d = Vec::new();
        let first = spec_stride("254:0 0") as u32;
        spec(&mut d, 0, 8, "linear", "254:0 0", first);
        spec(&mut d, 8, 8, "zero", "", first + spec_stride("") as u32);
        let t = parse_specs(&d, 2).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].start, t[0].length, t[0].target_type.as_str()),
            (0, 8, "linear")
        );
        assert_eq!(t[0].params.as_str(), "254:0 0");
        assert_eq!((t[1].start, t[1].target_type.as_str()), (8, "zero"));
        assert!(parse_specs(&d, 3).is_err());
    }

    #[test]
    fn name_list_with_uuid_records() {
        // Two records as kernel 6.1 (interface 4.47) writes them.
        let mut d = vec![0u8; 0];
        let rec = |d: &mut Vec<u8>, dev: u64, name: &str, ev: u32, uuid: Option<&str>| {
            let off = d.len();
            d.resize(off + 12, 0);
            put_u64(d, off, dev);
            d.extend_from_slice(name.as_bytes());
            d.push(0);
            d.resize(d.len().next_multiple_of(8), 0);
            d.extend_from_slice(&ev.to_ne_bytes());
            d.extend_from_slice(&(if uuid.is_some() { 1u32 } else { 2u32 }).to_ne_bytes());
            if let Some(u) = uuid {
                d.extend_from_slice(u.as_bytes());
                d.push(0);
            }
            d.resize(d.len().next_multiple_of(8), 0);
            off
        };
        let a = rec(
            &mut d,
            DevT::new(253, 0).to_raw(),
            "alpha",
            3,
            Some("CRYPT-PLAIN-alpha"),
        );
        let b = rec(&mut d, DevT::new(253, 1).to_raw(), "b", 0, None);
        put_u32(&mut d, a + 8, (b - a) as u32);
        let l = parse_name_list(&d, 47).unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].name, "alpha");
        assert_eq!(l[0].dev, DevT::new(253, 0));
        assert_eq!(l[0].event_nr, 3);
        assert_eq!(l[0].uuid.as_deref(), Some("CRYPT-PLAIN-alpha"));
        assert_eq!(l[1].name, "b");
        assert_eq!(l[1].uuid, None);
        assert!(parse_name_list(&[0u8; 16], 47).unwrap().is_empty());
    }

    #[test]
    fn versions_parse() {
        let mut d = Vec::new();
        let rec = |d: &mut Vec<u8>, v: [u32; 3], name: &str| {
            let off = d.len();
            d.resize(off + 4, 0);
            for x in v {
                d.extend_from_slice(&x.to_ne_bytes());
            }
            d.extend_from_slice(name.as_bytes());
            d.push(0);
            d.resize(d.len().next_multiple_of(8), 0);
            off
        };
        let a = rec(&mut d, [1, 24, 0], "crypt");
        let b = rec(&mut d, [1, 4, 0], "linear");
        put_u32(&mut d, a, (b - a) as u32);
        let v = parse_versions(&d).unwrap();
        assert_eq!(v[0].name, "crypt");
        assert_eq!(v[0].version, [1, 24, 0]);
        assert_eq!(v[1].name, "linear");
        assert_eq!(v.len(), 2);
    }
}
