//! The LUKS2 metadata of a LUKS1 header converted in place (`cryptsetup convert --type
//! luks2`), as cryptsetup's `json_luks1_object` and `move_keyslot_offset` write it
//! (`lib/luks2/luks2_luks1_convert.c`): the same member order, every salt, iteration count and
//! digest kept, the keyslot areas moved by the caller's shift.

use super::json::b64_encode;
use super::Luks2Header;
use crate::luks1::Luks1Header;
use crate::Result;
use serde_json::{Map, Value};

/// Bytes of a LUKS1 sector (key material offsets and the payload offset count them).
const SECTOR: u64 = 512;

fn b64(data: &[u8]) -> Value {
    Value::String(b64_encode(data))
}

fn u64_str(v: u64) -> Value {
    Value::String(v.to_string())
}

fn obj(pairs: Vec<(&str, Value)>) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(k.to_string(), v);
    }
    Value::Object(m)
}

impl Luks2Header {
    /// Make this header's metadata that of the LUKS1 header `h` converted to LUKS2: its
    /// keyslots (areas moved by `keyslots_shift` bytes), its one segment and digest, and a
    /// `config` with this header's JSON size and `keyslots_size` (rounded down to 4 KiB).
    /// Validated as any header is; on error the header is left as it was.
    pub fn set_json_from_luks1(
        &mut self,
        h: &Luks1Header,
        keyslots_shift: u64,
        keyslots_size: u64,
    ) -> Result<()> {
        let json_size = self.metadata_size() - super::BINARY_HEADER_SIZE as u64;
        self.replace_json(luks1_json(h, json_size, keyslots_shift, keyslots_size))
    }
}

/// The LUKS1 cipher as one spec, as cryptsetup writes it into the LUKS2 JSON.
fn luks1_cipher(h: &Luks1Header) -> String {
    if h.cipher_mode.is_empty() {
        h.cipher_name.clone()
    } else {
        format!("{}-{}", h.cipher_name, h.cipher_mode)
    }
}

/// The LUKS2 JSON of a converted LUKS1 header, with cryptsetup's member order
/// (`json_luks1_object`, then `move_keyslot_offset`).
fn luks1_json(
    h: &Luks1Header,
    json_size: u64,
    keyslots_shift: u64,
    keyslots_size: u64,
) -> Map<String, Value> {
    let cipher = luks1_cipher(h);
    let material = u64::from(Luks1Header::keyslot_material_sectors(h.key_bytes)) * SECTOR;
    let area_size = material.div_ceil(4096) * 4096;
    let mut keyslots = Map::new();
    let mut active = Vec::new();
    for (i, ks) in h.keyslots.iter().enumerate() {
        if !ks.active {
            continue;
        }
        active.push(Value::String(i.to_string()));
        let offset = u64::from(ks.key_material_offset) * SECTOR + keyslots_shift;
        let keyslot = obj(vec![
            ("type", "luks2".into()),
            ("key_size", h.key_bytes.into()),
            (
                "kdf",
                obj(vec![
                    ("type", "pbkdf2".into()),
                    ("hash", h.hash_spec.as_str().into()),
                    ("iterations", ks.iterations.into()),
                    ("salt", b64(&ks.salt)),
                ]),
            ),
            (
                "af",
                obj(vec![
                    ("type", "luks1".into()),
                    ("hash", h.hash_spec.as_str().into()),
                    ("stripes", crate::luks1::STRIPES.into()),
                ]),
            ),
            (
                "area",
                obj(vec![
                    ("type", "raw".into()),
                    ("encryption", cipher.as_str().into()),
                    ("key_size", h.key_bytes.into()),
                    ("offset", u64_str(offset)),
                    ("size", u64_str(area_size)),
                ]),
            ),
        ]);
        keyslots.insert(i.to_string(), keyslot);
    }
    let segment = obj(vec![
        ("type", "crypt".into()),
        ("offset", u64_str(u64::from(h.payload_offset) * SECTOR)),
        ("iv_tweak", "0".into()),
        ("size", "dynamic".into()),
        ("encryption", cipher.as_str().into()),
        ("sector_size", 512u32.into()),
    ]);
    let digest = obj(vec![
        ("type", "pbkdf2".into()),
        ("keyslots", Value::Array(active)),
        ("segments", Value::Array(vec!["0".into()])),
        ("hash", h.hash_spec.as_str().into()),
        ("salt", b64(&h.mk_digest_salt)),
        ("digest", b64(&h.mk_digest)),
        ("iterations", h.mk_digest_iterations.into()),
    ]);
    let mut json = Map::new();
    json.insert("keyslots".into(), Value::Object(keyslots));
    json.insert("tokens".into(), Value::Object(Map::new()));
    json.insert("segments".into(), obj(vec![("0", segment)]));
    json.insert("digests".into(), obj(vec![("0", digest)]));
    json.insert(
        "config".into(),
        obj(vec![
            ("json_size", u64_str(json_size)),
            (
                "keyslots_size",
                u64_str(keyslots_size - keyslots_size % 4096),
            ),
        ]),
    );
    json
}
