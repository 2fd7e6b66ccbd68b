//! `open` of the formats behind the seam that have no LUKS keyslots (TrueCrypt/VeraCrypt,
//! BitLocker, FileVault 2, loop-AES), and their `--test-passphrase`: the volume unlocked
//! through [`super::format_unlock`], its segment table activated as any other.

use super::absolute;
use super::format_unlock::attempt;
use super::tcrypt_secrets::layer_name;
use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::resolve::{activation, backend_choice, kernel_options, UnlockRequest};
use lukskit_activate::{self as activate, LayoutInfo, MappingConfig};
use lukskit_format::VolumeType;
use lukskit_volume::formats::Unlocked;
use lukskit_volume::segment::{SegmentKind, SegmentTable};

/// Unlock `device` as a volume of type `t`, asking again (`--tries`) after a wrong secret
/// typed on a terminal.
fn unlock(u: &UnlockRequest, t: VolumeType, device: &str) -> Result<Unlocked> {
    attempt(u, t, device, false, |f, r| f.unlock(r))
}

/// `open --type T DEVICE NAME` (or `tcryptOpen`, `bitlkOpen`, `fvault2Open`, `loopaesOpen`)
/// of a type other than LUKS and plain, unlocked as `u` asks and activated as `o`'s options
/// say; with `name` `None`, `--test-passphrase`.
pub fn open(
    o: &Opts,
    u: &UnlockRequest,
    t: VolumeType,
    device: &str,
    name: Option<&str>,
) -> Result<()> {
    let Some(name) = name else {
        return attempt(u, t, device, false, |f, r| f.test_secret(r));
    };
    let unlocked = unlock(u, t, device)?;
    let backend = activate::choose_backend(backend_choice(o)?, &activation(o, name, t))
        .map_err(CliError::from)?;
    // A cascade is stacked as cryptsetup stacks it: the table on the device is NAME_2 (of
    // three), the next NAME_1 on /dev/mapper/NAME_2, the last NAME.
    let n = unlocked.layers.len();
    let mut layers = Vec::with_capacity(n);
    for (i, table) in unlocked.layers.into_iter().enumerate() {
        let layer = layer_name(name, n - 1 - i);
        let mut config = activation(o, &layer, t);
        config.uuid = unlocked.uuid.clone();
        config.device = match i {
            0 => absolute(device)?,
            _ => format!("/dev/mapper/{}", layer_name(name, n - i)),
        };
        config.read_only |= unlocked.read_only;
        describe(&mut config, &table);
        layers.push(activate::Layer {
            config,
            table: activate::LayerTable::Segments(table),
        });
    }
    let plan = activate::ActivationPlan { layers };
    activate::activate_plan(backend, &plan, &kernel_options(o, None)).map_err(CliError::from)
}

/// What `status` shows of a mapping of `table`: its first crypt segment's parameters.
fn describe(config: &mut MappingConfig, table: &SegmentTable) {
    let crypt = table.segments().iter().find_map(|s| match &s.kind {
        SegmentKind::Crypt(c) => Some(c),
        _ => None,
    });
    if let Some(c) = crypt {
        config.layout = LayoutInfo {
            cipher: c.cipher.to_string(),
            offset: c.device_offset,
            size: Some(table.size()),
            sector_size: c.sector_size,
            iv_offset: c.iv_offset,
            iv_large_sectors: c.iv_large_sectors,
            integrity: None,
        };
        config.key_bits = (c.key.len() * 8) as u32;
    }
}
