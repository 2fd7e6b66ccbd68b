//! A volume's header as typed data, and as the JSON document cryptsetup keeps (LUKS2) or an
//! equivalent one (LUKS1).

use crate::error::Result;
use base64::Engine;
use lukskit_format::luks1::Luks1Header;
use lukskit_format::luks2::{KdfParams, Luks2Header};
use lukskit_format::VolumeType;
use serde_json::{json, Map, Value};

/// The metadata of a LUKS header.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Metadata {
    /// LUKS1 or LUKS2.
    pub volume_type: VolumeType,
    /// The UUID.
    pub uuid: String,
    /// The LUKS2 label (`None` when empty, and for LUKS1).
    pub label: Option<String>,
    /// The LUKS2 subsystem (`None` when empty, and for LUKS1).
    pub subsystem: Option<String>,
    /// The data cipher (`aes-xts-plain64`).
    pub cipher: String,
    /// Byte offset of the data area on the data device.
    pub data_offset: u64,
    /// The active keyslots.
    pub keyslots: Vec<KeyslotInfo>,
    /// The LUKS2 tokens (none for LUKS1).
    pub tokens: Vec<TokenInfo>,
    document: Value,
}

/// One active keyslot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyslotInfo {
    /// Its number.
    pub id: u32,
    /// Its type (`luks2`, `reencrypt`; `luks1` for LUKS1 keyslots).
    pub kind: String,
    /// Size of the key it holds, in bytes.
    pub key_bytes: u32,
    /// Its PBKDF (`pbkdf2`, `argon2i`, `argon2id`; another name cryptsetup cannot run).
    pub pbkdf: String,
}

/// One LUKS2 token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenInfo {
    /// Its number.
    pub id: u32,
    /// Its type (`clevis`, `systemd-tpm2`, `luks2-keyring`, ...).
    pub kind: String,
    /// The keyslots it opens.
    pub keyslots: Vec<u32>,
}

impl Metadata {
    pub(crate) fn of(vol: &lukskit_volume::Volume) -> Result<Metadata> {
        if let Some(h) = vol.luks2() {
            return of_luks2(h);
        }
        match vol.luks1() {
            Some(h) => Ok(of_luks1(h)),
            None => unreachable!("a loaded LUKS volume has a LUKS1 or LUKS2 header"),
        }
    }

    /// The metadata as cryptsetup's JSON document: for LUKS2 the header's own JSON (members
    /// `keyslots`, `tokens`, `segments`, `digests`, `config`, as `cryptsetup luksDump
    /// --dump-json-metadata` prints it); for LUKS1 a document of the same shape built from
    /// the binary header (keyslots of type `luks1`, one `crypt` segment, one `pbkdf2` digest).
    pub fn json(&self) -> &Value {
        &self.document
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

fn of_luks2(h: &Luks2Header) -> Result<Metadata> {
    let map_err = |e| lukskit_volume::VolumeError::Format(e);
    let document = Value::Object(h.json().clone());
    let keyslots = h
        .keyslots()
        .map_err(map_err)?
        .into_iter()
        .map(|k| KeyslotInfo {
            id: k.id,
            kind: k.kind.to_string(),
            key_bytes: k.key_size,
            pbkdf: match k.kdf {
                KdfParams::Pbkdf2 { .. } => "pbkdf2".into(),
                KdfParams::Argon2 { variant, .. } => variant,
                KdfParams::Unknown { name, .. } => name,
            },
        })
        .collect();
    let tokens = h
        .tokens()
        .map_err(map_err)?
        .into_iter()
        .map(|t| TokenInfo {
            id: t.id,
            kind: t.kind.to_string(),
            keyslots: t.keyslots,
        })
        .collect();
    let cipher = h
        .segments()
        .map_err(map_err)?
        .into_iter()
        .find(|s| s.kind == lukskit_format::luks2::SegmentType::Crypt)
        .map(|s| s.encryption)
        .unwrap_or_default();
    Ok(Metadata {
        volume_type: VolumeType::Luks2,
        uuid: h.binary.uuid.clone(),
        label: non_empty(&h.binary.label),
        subsystem: non_empty(&h.binary.subsystem),
        cipher,
        data_offset: h.data_offset().map_err(map_err)?,
        keyslots,
        tokens,
        document,
    })
}

fn of_luks1(h: &Luks1Header) -> Metadata {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let cipher = format!("{}-{}", h.cipher_name, h.cipher_mode);
    let data_offset = u64::from(h.payload_offset) * 512;
    let mut keyslots = Vec::new();
    let mut slots_json = Map::new();
    for (id, k) in h.keyslots.iter().enumerate().filter(|(_, k)| k.active) {
        keyslots.push(KeyslotInfo {
            id: id as u32,
            kind: "luks1".into(),
            key_bytes: h.key_bytes,
            pbkdf: "pbkdf2".into(),
        });
        let area = u64::from(h.key_bytes) * u64::from(k.stripes);
        slots_json.insert(
            id.to_string(),
            json!({
                "type": "luks1",
                "key_size": h.key_bytes,
                "af": {"type": "luks1", "stripes": k.stripes, "hash": h.hash_spec},
                "area": {
                    "type": "raw",
                    "offset": (u64::from(k.key_material_offset) * 512).to_string(),
                    "size": area.div_ceil(512).saturating_mul(512).to_string(),
                    "encryption": cipher,
                    "key_size": h.key_bytes,
                },
                "kdf": {
                    "type": "pbkdf2",
                    "hash": h.hash_spec,
                    "iterations": k.iterations,
                    "salt": b64(&k.salt),
                },
            }),
        );
    }
    let active: Vec<String> = keyslots.iter().map(|k| k.id.to_string()).collect();
    let document = json!({
        "keyslots": slots_json,
        "tokens": {},
        "segments": {"0": {
            "type": "crypt",
            "offset": data_offset.to_string(),
            "size": "dynamic",
            "iv_tweak": "0",
            "encryption": cipher,
            "sector_size": 512,
        }},
        "digests": {"0": {
            "type": "pbkdf2",
            "keyslots": active,
            "segments": ["0"],
            "hash": h.hash_spec,
            "iterations": h.mk_digest_iterations,
            "salt": b64(&h.mk_digest_salt),
            "digest": b64(&h.mk_digest),
        }},
        "config": {},
    });
    Metadata {
        volume_type: VolumeType::Luks1,
        uuid: h.uuid.clone(),
        label: None,
        subsystem: None,
        cipher,
        data_offset,
        keyslots,
        tokens: Vec::new(),
        document,
    }
}
