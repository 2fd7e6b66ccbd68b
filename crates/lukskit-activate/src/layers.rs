//! The data of an activation plan: an [`ActivationPlan`] of [`Layer`]s, each a mapping and
//! what it maps ([`LayerTable`]). `plan` turns one into devices; see there for the kinds of
//! plans lukskit makes.

use crate::dif_mapping::dif_name;
use crate::request::MappingConfig;
use lukskit_crypto::SecretBuf;
use lukskit_dm::integrity::IntegrityMode;
use lukskit_volume::segment::SegmentTable;

/// What one layer maps.
#[derive(Debug)]
pub enum LayerTable {
    /// The volume's own layout (`config.layout`) under this volume key: one crypt segment
    /// from the data offset to the end of the device, which follows the device's size
    /// (dynamic size, `resize`). With `config.layout.integrity` set, the layer sits on an
    /// [`LayerTable::Integrity`] layer and is dm-crypt with the authenticated cipher.
    Volume(SecretBuf),
    /// A fixed segment table (each crypt segment with its own key).
    Segments(SegmentTable),
    /// dm-integrity over `config.device` from `config.layout.offset` on, sized by the
    /// superblock the format wrote (kernel only).
    Integrity(IntegrityLayer),
}

/// The parameters of a dm-integrity layer that do not come from its superblock.
#[derive(Debug, Clone)]
pub struct IntegrityLayer {
    /// The segment's integrity type (`hmac(sha256)`, `aead`, `poly1305`).
    pub kind: String,
    /// Journal, or direct for `--integrity-no-journal` and luksFormat's wipe.
    pub mode: IntegrityMode,
}

/// One device of a stacked activation: its mapping parameters (name, the device under it)
/// and what it maps.
#[derive(Debug)]
pub struct Layer {
    /// The mapping; `config.device` is the data device for the first layer and the layer
    /// below (`/dev/mapper/NAME_N`) for the others.
    pub config: MappingConfig,
    /// What it maps.
    pub table: LayerTable,
}

/// A stacked activation, the layer on the data device first and NAME last.
#[derive(Debug)]
pub struct ActivationPlan {
    /// The layers, bottom first.
    pub layers: Vec<Layer>,
}

impl ActivationPlan {
    /// A plan of one layer.
    pub fn single(config: MappingConfig, table: LayerTable) -> ActivationPlan {
        ActivationPlan {
            layers: vec![Layer { config, table }],
        }
    }

    /// The plan for volume `config` with volume key `key`: its own layout in one layer, or,
    /// for LUKS2 authenticated encryption, dm-integrity (`NAME_dif`, journal unless
    /// `no_journal`) with dm-crypt on it as cryptsetup 2.6.1 makes them.
    pub fn for_volume(config: &MappingConfig, key: &SecretBuf, no_journal: bool) -> ActivationPlan {
        let Some(kind) = config.layout.integrity.clone() else {
            return ActivationPlan::single(config.clone(), LayerTable::Volume(key.clone()));
        };
        let mode = if no_journal {
            IntegrityMode::Direct
        } else {
            IntegrityMode::Journal
        };
        ActivationPlan::integrity_stack(config, key, &kind, mode)
    }

    /// The names of the layers under the top one, top-most first (the order to close them
    /// in after the top mapping).
    pub fn lower_names(&self) -> Vec<String> {
        let n = self.layers.len();
        self.layers[..n.saturating_sub(1)]
            .iter()
            .rev()
            .map(|l| l.config.name.clone())
            .collect()
    }

    /// Whether a layer exists only in the kernel (dm-integrity and the authenticated
    /// dm-crypt on it have no userspace implementation).
    pub(crate) fn kernel_only(&self) -> bool {
        self.layers.iter().any(|l| {
            matches!(l.table, LayerTable::Integrity(_)) || l.config.layout.integrity.is_some()
        })
    }

    /// The activation plan of `config` (a LUKS2 volume whose segment has integrity type
    /// `integrity`) with volume key `key`, as cryptsetup 2.6.1 stacks it: `NAME_dif`
    /// (dm-integrity in `mode`: journal; direct for `--integrity-no-journal` and the format's
    /// wipe) on the data device, then `NAME` (dm-crypt with the `capi:` cipher and
    /// `integrity:<tag>:aead`) on `NAME_dif`.
    pub(crate) fn integrity_stack(
        config: &MappingConfig,
        key: &SecretBuf,
        integrity: &str,
        mode: IntegrityMode,
    ) -> ActivationPlan {
        let dif = dif_name(&config.name);
        let mut lower = config.clone();
        lower.name = dif.clone();
        let mut upper = config.clone();
        upper.device = lukskit_dm::node::mapper_path(&dif)
            .to_string_lossy()
            .into_owned();
        upper.layout.offset = 0;
        upper.layout.integrity = Some(integrity.to_string());
        ActivationPlan {
            layers: vec![
                Layer {
                    config: lower,
                    table: LayerTable::Integrity(IntegrityLayer {
                        kind: integrity.to_string(),
                        mode,
                    }),
                },
                Layer {
                    config: upper,
                    table: LayerTable::Volume(key.clone()),
                },
            ],
        }
    }
}
