//! `dmctl` — a small driver of lukskit-dm for the reference-VM test (`tests/refvm_dm.rs`):
//! it makes and manages mappings through the crate's public API only, so the VM script can
//! compare them with what cryptsetup makes.
//!
//! ```text
//! dmctl features
//! dmctl list
//! dmctl create-crypt NAME --device DEV --cipher SPEC [--type T [--uuid U] | --dm-uuid X]
//!       [--key-file F [--keyring-digest N]] [--offset S] [--iv-offset S] [--size S]
//!       [--sector-size B] [--flags a,b,...] [--readonly]
//! dmctl create-linear NAME --device DEV --offset S --size S
//! dmctl create-zero NAME --size S     (first half zero, second half error)
//! dmctl remove NAME [--deferred] [--retry]
//! dmctl cancel-deferred NAME
//! dmctl info NAME
//! dmctl table NAME [--showkeys]
//! dmctl status NAME
//! dmctl suspend NAME [--noflush]
//! dmctl resume NAME
//! dmctl wipe-key NAME
//! dmctl set-key NAME --key-file F [--keyring-desc D]
//! dmctl rename NAME NEW
//! dmctl resize NAME --size S     (reload the single crypt target with a new length)
//! ```
//! Exit status: 0 ok, 1 usage, 3 busy, 4 not found, 5 exists, 2 other error.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use lukskit_crypto::SecretBuf;
use lukskit_dm::dm_uuid::crypt_dm_uuid;
use lukskit_dm::keyring::luks2_key_description;
use lukskit_dm::{
    CryptFlags, CryptKey, CryptTarget, DevT, DeviceMapper, DmError, KeyType, KeyringKey,
    LinearTarget, RemoveOptions, RemoveOutcome, SuspendOptions, Target,
};

struct Args {
    pos: Vec<String>,
    opts: HashMap<String, String>,
    switches: Vec<String>,
}

const SWITCHES: &[&str] = &[
    "--readonly",
    "--deferred",
    "--retry",
    "--showkeys",
    "--noflush",
];

fn parse_args() -> Args {
    let mut a = Args {
        pos: Vec::new(),
        opts: HashMap::new(),
        switches: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        if SWITCHES.contains(&x.as_str()) {
            a.switches.push(x);
        } else if x.starts_with("--") {
            let v = it.next().unwrap_or_default();
            a.opts.insert(x, v);
        } else {
            a.pos.push(x);
        }
    }
    a
}

impl Args {
    fn opt(&self, k: &str) -> Option<&str> {
        self.opts.get(k).map(String::as_str)
    }
    fn num(&self, k: &str) -> Result<Option<u64>, String> {
        self.opt(k)
            .map(|v| v.parse::<u64>().map_err(|_| format!("{k}: not a number")))
            .transpose()
    }
    fn has(&self, s: &str) -> bool {
        self.switches.iter().any(|x| x == s)
    }
    fn name(&self) -> Result<&str, String> {
        self.pos
            .get(1)
            .map(String::as_str)
            .ok_or("missing NAME".into())
    }
}

/// Size of a block device in 512-byte sectors.
fn device_sectors(path: &str) -> Result<u64, String> {
    let f = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut bytes: u64 = 0;
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: BLKGETSIZE64 writes one u64 to the pointer, which points at `bytes`.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64 as _, &mut bytes as *mut u64) };
    if r != 0 {
        return Err(format!(
            "{path}: BLKGETSIZE64: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(bytes / 512)
}

fn read_key(path: &str) -> Result<SecretBuf, String> {
    std::fs::read(path)
        .map(SecretBuf::from_vec)
        .map_err(|e| format!("{path}: {e}"))
}

fn flags(list: Option<&str>) -> Result<CryptFlags, String> {
    let mut f = CryptFlags::default();
    for w in list.unwrap_or("").split(',').filter(|w| !w.is_empty()) {
        match w {
            "allow_discards" => f.allow_discards = true,
            "same_cpu_crypt" => f.same_cpu_crypt = true,
            "submit_from_crypt_cpus" => f.submit_from_crypt_cpus = true,
            "no_read_workqueue" => f.no_read_workqueue = true,
            "no_write_workqueue" => f.no_write_workqueue = true,
            "iv_large_sectors" => f.iv_large_sectors = true,
            "high_priority" => f.high_priority = true,
            _ => return Err(format!("unknown flag {w}")),
        }
    }
    Ok(f)
}

fn dm_uuid(a: &Args, name: &str) -> Result<Option<String>, String> {
    if let Some(x) = a.opt("--dm-uuid") {
        return Ok(Some(x.to_string()));
    }
    match a.opt("--type") {
        Some(t) => crypt_dm_uuid(t, a.opt("--uuid"), name)
            .map(Some)
            .map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

fn print_info(i: &lukskit_dm::DeviceInfo) {
    let b = |x: bool| u8::from(x);
    println!(
        "name={} uuid={} dev={} open={} event={} targets={} readonly={} suspended={} live={} inactive={} deferred={}",
        i.name,
        i.uuid.as_deref().unwrap_or("-"),
        i.dev,
        i.open_count,
        i.event_nr,
        i.target_count,
        b(i.flags.readonly),
        b(i.flags.suspended),
        b(i.flags.active_present),
        b(i.flags.inactive_present),
        b(i.flags.deferred_remove),
    );
}

enum Fail {
    Usage(String),
    Dm(DmError),
}

impl From<DmError> for Fail {
    fn from(e: DmError) -> Fail {
        Fail::Dm(e)
    }
}

impl From<String> for Fail {
    fn from(e: String) -> Fail {
        Fail::Usage(e)
    }
}

impl From<&str> for Fail {
    fn from(e: &str) -> Fail {
        Fail::Usage(e.to_string())
    }
}

fn run(a: &Args) -> Result<(), Fail> {
    let cmd = a.pos.first().map(String::as_str).unwrap_or("");
    let dm = DeviceMapper::open()?;
    match cmd {
        "features" => {
            let v = dm.version()?;
            println!("dm-ioctl {}.{}.{}", v[0], v[1], v[2]);
            match dm.crypt_features()? {
                Some(f) => println!(
                    "crypt {}.{}.{} keyring={} sector_size={} no_workqueue={}",
                    f.version[0],
                    f.version[1],
                    f.version[2],
                    f.keyring(),
                    f.sector_size(),
                    f.no_workqueue()
                ),
                None => println!("crypt none"),
            }
        }
        "list" => {
            for d in dm.list()? {
                println!("{} {} {}", d.name, d.dev, d.uuid.as_deref().unwrap_or("-"));
            }
        }
        "create-crypt" => {
            let name = a.name()?;
            let dev_path = a.opt("--device").ok_or("--device")?;
            let device = DevT::of_block_device(Path::new(dev_path))?;
            let cipher = a.opt("--cipher").ok_or("--cipher")?;
            let offset = a.num("--offset")?.unwrap_or(0);
            let sector_size = a.num("--sector-size")?.unwrap_or(512) as u32;
            let unit = u64::from(sector_size / 512);
            let sectors = match a.num("--size")? {
                Some(s) => s,
                None => {
                    let total = device_sectors(dev_path)?;
                    let s = total
                        .checked_sub(offset)
                        .ok_or("offset beyond the device")?;
                    s - s % unit
                }
            };
            let key = match a.opt("--key-file") {
                None => CryptKey::Empty,
                Some(f) => {
                    let vk = read_key(f)?;
                    let desc = match a.opt("--keyring-digest") {
                        Some(d) => {
                            let uuid = a.opt("--uuid").ok_or("--keyring-digest needs --uuid")?;
                            let d = d.parse().map_err(|_| "--keyring-digest".to_string())?;
                            Some(luks2_key_description(uuid, d))
                        }
                        None => None,
                    };
                    let keyring =
                        desc.is_some() && dm.crypt_features()?.is_some_and(|f| f.keyring());
                    CryptKey::for_volume_key(&vk, desc.as_deref(), keyring)
                }
            };
            let mut t = CryptTarget::new(sectors, cipher, key, device, offset);
            t.iv_offset = a.num("--iv-offset")?.unwrap_or(0);
            t.sector_size = sector_size;
            t.flags = flags(a.opt("--flags"))?;
            let uuid = dm_uuid(a, name)?;
            let m = dm.create(
                name,
                uuid.as_deref(),
                &[Target::Crypt(t)],
                a.has("--readonly"),
            )?;
            print_info(&m.info);
            println!("node={} {:?}", m.node.display(), m.node_outcome);
        }
        "create-linear" => {
            let name = a.name()?;
            let device = DevT::of_block_device(Path::new(a.opt("--device").ok_or("--device")?))?;
            let t = Target::Linear(LinearTarget {
                start: 0,
                sectors: a.num("--size")?.ok_or("--size")?,
                device,
                offset: a.num("--offset")?.unwrap_or(0),
            });
            let uuid = dm_uuid(a, name)?;
            print_info(
                &dm.create(name, uuid.as_deref(), &[t], a.has("--readonly"))?
                    .info,
            );
        }
        "create-zero" => {
            let name = a.name()?;
            let size = a.num("--size")?.ok_or("--size")?;
            let half = size / 2;
            // Two targets (a multi-target load): zeros, then an error area.
            let t = [
                Target::Zero {
                    start: 0,
                    sectors: half,
                },
                Target::Error {
                    start: half,
                    sectors: size - half,
                },
            ];
            print_info(&dm.create(name, None, &t, false)?.info);
        }
        "remove" => {
            let opts = RemoveOptions {
                deferred: a.has("--deferred"),
                retry_busy: a.has("--retry").then_some(Duration::from_secs(5)),
            };
            match dm.remove(a.name()?, opts)? {
                RemoveOutcome::Removed => println!("removed"),
                RemoveOutcome::Deferred => println!("deferred"),
            }
        }
        "cancel-deferred" => dm.cancel_deferred_remove(a.name()?)?,
        "info" => print_info(&dm.info(a.name()?)?),
        "table" => {
            let (_, targets) = dm.table(a.name()?, a.has("--showkeys"))?;
            for t in targets {
                println!("{}", t.to_line().as_str());
            }
        }
        "status" => {
            for (start, len, ty, status) in dm.status(a.name()?)? {
                println!("{start} {len} {ty} {status}");
            }
        }
        "suspend" => print_info(&dm.suspend(
            a.name()?,
            SuspendOptions {
                noflush: a.has("--noflush"),
                skip_lockfs: false,
            },
        )?),
        "resume" => print_info(&dm.resume(a.name()?)?),
        "wipe-key" => dm.wipe_key(a.name()?, 0)?,
        "set-key" => {
            let vk = read_key(a.opt("--key-file").ok_or("--key-file")?)?;
            let key = match a.opt("--keyring-desc") {
                Some(d) => CryptKey::Keyring(KeyringKey {
                    size: vk.len(),
                    key_type: KeyType::Logon,
                    description: d.to_string(),
                    payload: Some(vk),
                }),
                None => CryptKey::Hex(vk),
            };
            dm.set_key(a.name()?, 0, &key)?;
        }
        "resize" => {
            let name = a.name()?;
            let size = a.num("--size")?.ok_or("--size")?;
            let (info, mut targets) = dm.table(name, true)?;
            match targets.as_mut_slice() {
                [Target::Crypt(c)] => c.sectors = size,
                _ => return Err("resize needs a single crypt target".into()),
            }
            print_info(&dm.reload(name, &targets, info.flags.readonly)?);
        }
        "rename" => {
            let new = a.pos.get(2).ok_or("missing NEW")?;
            print_info(&dm.rename(a.name()?, new)?);
        }
        _ => return Err(Fail::Usage(format!("unknown command {cmd:?}"))),
    }
    Ok(())
}

fn main() -> ExitCode {
    let a = parse_args();
    match run(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail::Usage(m)) => {
            eprintln!("dmctl: {m}");
            ExitCode::from(1)
        }
        Err(Fail::Dm(e)) => {
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            eprintln!("dmctl: {msg}");
            ExitCode::from(match e {
                DmError::Busy { .. } => 3,
                DmError::NotFound { .. } => 4,
                DmError::Exists { .. } => 5,
                _ => 2,
            })
        }
    }
}
