//! The `reencrypt` keyslot: its typed view (mode, direction, resilience area), and the bytes
//! of its members and of the backup segments that cryptsetup's re-encryption metadata digest
//! covers (its fix for CVE-2021-4122, `reencrypt_assembly_verification_data`).

use super::edit::{ctx, keyslot_object, segment_by_flag, ReencryptArea};
use super::types::{ReencryptDirection, ReencryptMode};
use super::Luks2Header;
use crate::Result;
use serde_json::Value;

/// The `reencrypt` keyslot of a header in re-encryption, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReencryptKeyslot {
    /// Keyslot number.
    pub id: u32,
    /// `mode`: what the re-encryption does.
    pub mode: ReencryptMode,
    /// `direction`: the order the hot zones move in.
    pub direction: ReencryptDirection,
    /// `area`: where the hot zone's protection lives and what it is.
    pub area: ReencryptArea,
}

impl ReencryptKeyslot {
    /// Keyslot `id` of `hdr` read as a `reencrypt` keyslot: `mode` and `direction` must be
    /// strings (names this crate does not know are kept as `Other`), `area` as
    /// [`ReencryptArea::parse`] takes it.
    pub fn of(hdr: &Luks2Header, id: u32) -> Result<Self> {
        let ks = keyslot_object(hdr, id).ok_or_else(|| ctx("no reencrypt keyslot"))?;
        let text = |k: &str, what| ks.get(k).and_then(Value::as_str).ok_or_else(|| ctx(what));
        Ok(ReencryptKeyslot {
            id,
            mode: ReencryptMode::parse(text("mode", "invalid mode")?),
            direction: ReencryptDirection::parse(text("direction", "invalid direction")?),
            area: ReencryptArea::of(hdr, id)?,
        })
    }
}

/// How a member goes into the digested bytes.
enum Field {
    /// A string's bytes (1 to 64 of them).
    Str,
    /// A decimal string as a big-endian u64.
    U64,
    /// `"dynamic"` as the word, else as [`Field::U64`].
    Size,
    /// A JSON integer as a big-endian u32.
    U32,
}

fn field(out: &mut Vec<u8>, obj: &Value, key: &str, kind: Field) -> Option<()> {
    let v = obj.get(key)?;
    match kind {
        Field::Str => {
            let s = v.as_str()?;
            if s.len() > 64 || s.is_empty() {
                return None;
            }
            out.extend_from_slice(s.as_bytes());
        }
        Field::U64 => out.extend_from_slice(&v.as_str()?.parse::<u64>().ok()?.to_be_bytes()),
        Field::Size => match v.as_str()? {
            "dynamic" => out.extend_from_slice(b"dynamic"),
            s => out.extend_from_slice(&s.parse::<u64>().ok()?.to_be_bytes()),
        },
        Field::U32 => out.extend_from_slice(&u32::try_from(v.as_u64()?).ok()?.to_be_bytes()),
    }
    Some(())
}

fn segment_bytes(out: &mut Vec<u8>, seg: &Value) -> Option<()> {
    match seg.get("type")?.as_str()? {
        "crypt" => {
            field(out, seg, "type", Field::Str)?;
            field(out, seg, "offset", Field::U64)?;
            field(out, seg, "size", Field::Size)?;
            field(out, seg, "iv_tweak", Field::U64)?;
            field(out, seg, "encryption", Field::Str)?;
            field(out, seg, "sector_size", Field::U32)
        }
        "linear" => {
            field(out, seg, "type", Field::Str)?;
            field(out, seg, "offset", Field::U64)?;
            field(out, seg, "size", Field::Size)
        }
        _ => None,
    }
}

fn keyslot_bytes(out: &mut Vec<u8>, ks: &Value) -> Option<()> {
    let area = ks.get("area")?;
    let kind = area.get("type")?.as_str()?;
    field(out, ks, "mode", Field::Str)?;
    field(out, ks, "direction", Field::Str)?;
    field(out, area, "type", Field::Str)?;
    field(out, area, "offset", Field::U64)?;
    field(out, area, "size", Field::U64)?;
    let checksum = |out: &mut Vec<u8>| {
        field(out, area, "hash", Field::Str)?;
        field(out, area, "sector_size", Field::U32)
    };
    match kind {
        "checksum" => checksum(out),
        "datashift-checksum" => {
            checksum(out)?;
            field(out, area, "shift_size", Field::U64)
        }
        "datashift" | "datashift-journal" => field(out, area, "shift_size", Field::U64),
        _ => Some(()),
    }
}

/// The members of the `reencrypt` keyslot `keyslot` and of the backup segments
/// (`backup-previous`, `backup-final`, then `backup-moved-segment` if there is one) as the
/// re-encryption metadata digest covers them, after its version and the volume keys: the
/// stored members byte for byte (strings as their bytes, at most 64; u64 members as
/// big-endian u64; a `"dynamic"` size as the word; JSON integers as big-endian u32).
/// `None` when a member is missing or out of range, or a required backup segment is missing:
/// such metadata cannot be digested (cryptsetup fails the same way).
pub fn digest_binding(hdr: &Luks2Header, keyslot: u32) -> Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let Some(ks) = keyslot_object(hdr, keyslot) else {
        return Ok(None);
    };
    if keyslot_bytes(&mut out, &Value::Object(ks.clone())).is_none() {
        return Ok(None);
    }
    for (flag, required) in [
        ("backup-previous", true),
        ("backup-final", true),
        ("backup-moved-segment", false),
    ] {
        let taken = match segment_by_flag(hdr, flag)? {
            Some((_, seg)) => segment_bytes(&mut out, &seg.to_json()).is_some(),
            None => !required,
        };
        if !taken {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_as_the_digest_takes_them() {
        let obj = json!({"s": "crypt", "n": "4096", "d": "dynamic", "i": 512, "e": "",
                         "l": "x".repeat(65), "big": 4294967296u64});
        let mut out = Vec::new();
        field(&mut out, &obj, "s", Field::Str).unwrap();
        field(&mut out, &obj, "n", Field::U64).unwrap();
        field(&mut out, &obj, "d", Field::Size).unwrap();
        field(&mut out, &obj, "n", Field::Size).unwrap();
        field(&mut out, &obj, "i", Field::U32).unwrap();
        let mut want = b"crypt".to_vec();
        want.extend_from_slice(&4096u64.to_be_bytes());
        want.extend_from_slice(b"dynamic");
        want.extend_from_slice(&4096u64.to_be_bytes());
        want.extend_from_slice(&512u32.to_be_bytes());
        assert_eq!(out, want);
        for (k, kind) in [("e", Field::Str), ("l", Field::Str), ("big", Field::U32)] {
            assert!(field(&mut out, &obj, k, kind).is_none(), "{k}");
        }
        assert!(field(&mut out, &obj, "absent", Field::U64).is_none());
    }

    #[test]
    fn segments_of_other_types_cannot_be_digested() {
        let mut out = Vec::new();
        let seg = json!({"type": "linear", "offset": "0", "size": "dynamic"});
        assert!(segment_bytes(&mut out, &seg).is_some());
        assert!(segment_bytes(&mut out, &json!({"type": "x-other"})).is_none());
    }
}
