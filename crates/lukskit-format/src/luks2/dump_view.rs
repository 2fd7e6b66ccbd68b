//! What cryptsetup's `luksDump` (`LUKS2_hdr_dump`) reads from the JSON metadata beyond the
//! typed views, read as it reads it: members a dump prints as they are stored (a KDF cost of
//! -1, a salt that is not Base64, a segment member of a type that has no use for it), which
//! the typed views, made for using the header, parse into what is usable.

use super::json::b64_decode;
use super::metadata::Luks2Header;
use crate::Result;
use serde_json::{Map, Value};

/// The length of a data segment as a dump prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpLength {
    /// `"dynamic"`: up to the end of the device.
    WholeDevice,
    /// A length in bytes (0 when the member is not a number).
    Bytes(u64),
}

/// One data segment as `hdr_dump_segments` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentDump {
    /// Segment number.
    pub id: u32,
    /// `type` as stored.
    pub kind: String,
    /// `offset` in bytes (0 when not a decimal string).
    pub offset: u64,
    /// `size`.
    pub length: DumpLength,
    /// `encryption`, when the segment has it (any segment type).
    pub cipher: Option<String>,
    /// `sector_size`, when the segment has it.
    pub sector_size: Option<u64>,
    /// `integrity.type`, when the segment has an `integrity` object.
    pub integrity: Option<String>,
    /// `flags` (the header's validation admits strings only).
    pub flags: Vec<String>,
}

/// The KDF members of a `luks2` keyslot as `hdr_dump_keyslots` prints them: costs as
/// `json_object_get_int64` reads them printed unsigned (a negative value wraps, one above
/// `i64::MAX` clamps to it), `None` for an absent member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KdfDump {
    /// `iterations`.
    pub iterations: Option<u64>,
    /// `time`.
    pub time: Option<u64>,
    /// `memory`.
    pub memory: Option<u64>,
    /// `cpus`.
    pub cpus: Option<u64>,
    /// `salt` as `hexprint_base64` decodes it: empty when absent or not a string, `None`
    /// when the text is not Base64 (then the dump prints nothing, not even the line end).
    pub salt: Option<Vec<u8>>,
}

/// A `reencrypt` keyslot as `reenc_keyslot_dump` prints it: every member as text as stored
/// (empty when absent or not a string).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReencryptKeyslotDump {
    /// `mode`.
    pub mode: String,
    /// `direction`.
    pub direction: String,
    /// `area.type` (the resilience).
    pub resilience: String,
    /// `area.hash` (resilience `checksum`).
    pub hash: String,
    /// `area.sector_size` (resilience `checksum`; 0 when absent).
    pub hash_block: u64,
    /// `area.shift_size` (resilience `datashift`).
    pub shift_size: String,
    /// `area.offset`.
    pub area_offset: String,
    /// `area.size`.
    pub area_size: String,
}

/// A `pbkdf2` digest's Base64 members as `hexprint_base64` decodes them (see
/// [`KdfDump::salt`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DigestDump {
    /// `salt`.
    pub salt: Option<Vec<u8>>,
    /// `digest`.
    pub digest: Option<Vec<u8>>,
}

/// The bytes cryptsetup's luksDump prints for a Base64 member (`hexprint_base64`): a string
/// decoded; an absent member or one that is not a string decodes to nothing (json-c gives
/// it a string length of 0), printed as an empty line; `None` for a string that is not
/// Base64, for which cryptsetup prints nothing at all, not even the line end.
fn dump_base64(v: Option<&Value>) -> Option<Vec<u8>> {
    match v {
        Some(Value::String(s)) => b64_decode(s),
        _ => Some(Vec::new()),
    }
}

/// `json_object_get_int64` of an integer printed with `PRIu64`.
fn int64_unsigned(v: &Value) -> u64 {
    v.as_i64()
        .map(|n| n as u64)
        .or_else(|| v.as_u64().map(|_| i64::MAX as u64))
        .unwrap_or(0)
}

/// A string member as text, empty when absent or not a string.
fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("").to_string()
}

impl Luks2Header {
    /// The object of member `id` of section `section`, if there is one.
    fn dump_member(&self, section: &str, id: u32) -> Option<&Map<String, Value>> {
        self.json.get(section)?.get(id.to_string())?.as_object()
    }

    /// The data segments in segment-number order (as `hdr_dump_segments`, not in the order
    /// the JSON stores them), their members as stored.
    pub fn dump_segments(&self) -> Result<Vec<SegmentDump>> {
        Ok(self
            .segments()?
            .iter()
            .filter_map(|s| self.dump_member("segments", s.id).map(|o| (s, o)))
            .map(|(s, o)| {
                let number = |k: &str| {
                    o.get(k)
                        .and_then(Value::as_str)
                        .and_then(|s| s.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                SegmentDump {
                    id: s.id,
                    kind: text(o.get("type")),
                    offset: number("offset"),
                    length: match o.get("size").and_then(Value::as_str) {
                        Some("dynamic") => DumpLength::WholeDevice,
                        _ => DumpLength::Bytes(number("size")),
                    },
                    cipher: o
                        .get("encryption")
                        .and_then(Value::as_str)
                        .map(String::from),
                    sector_size: o.get("sector_size").and_then(Value::as_u64),
                    integrity: o
                        .get("integrity")
                        .and_then(|i| i.get("type"))
                        .and_then(Value::as_str)
                        .map(String::from),
                    flags: s.flags.clone(),
                }
            })
            .collect())
    }

    /// The KDF of keyslot `id` as a dump prints it (`None`: no such keyslot, or no `kdf`
    /// object).
    pub fn dump_kdf(&self, id: u32) -> Option<KdfDump> {
        let kdf = self.dump_member("keyslots", id)?.get("kdf")?;
        let cost = |k: &str| kdf.get(k).map(int64_unsigned);
        Some(KdfDump {
            iterations: cost("iterations"),
            time: cost("time"),
            memory: cost("memory"),
            cpus: cost("cpus"),
            salt: dump_base64(kdf.get("salt")),
        })
    }

    /// The `reencrypt` keyslot `id` as a dump prints it (`None`: no such keyslot).
    pub fn dump_reencrypt_keyslot(&self, id: u32) -> Option<ReencryptKeyslotDump> {
        let ks = self.dump_member("keyslots", id)?;
        let area = |k: &str| ks.get("area").and_then(|a| a.get(k));
        Some(ReencryptKeyslotDump {
            mode: text(ks.get("mode")),
            direction: text(ks.get("direction")),
            resilience: text(area("type")),
            hash: text(area("hash")),
            hash_block: area("sector_size").and_then(Value::as_u64).unwrap_or(0),
            shift_size: text(area("shift_size")),
            area_offset: text(area("offset")),
            area_size: text(area("size")),
        })
    }

    /// Digest `id`'s Base64 members as a dump prints them (`None`: no such digest).
    pub fn dump_digest(&self, id: u32) -> Option<DigestDump> {
        let d = self.dump_member("digests", id)?;
        Some(DigestDump {
            salt: dump_base64(d.get("salt")),
            digest: dump_base64(d.get("digest")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dump_base64_as_hexprint_base64() {
        assert_eq!(dump_base64(Some(&json!("AQID"))), Some(vec![1, 2, 3]));
        assert_eq!(dump_base64(Some(&json!("!!not base64!!"))), None);
        assert_eq!(dump_base64(Some(&json!(1234))), Some(vec![]));
        assert_eq!(dump_base64(None), Some(vec![]));
    }

    #[test]
    fn costs_print_as_cryptsetup_reads_them() {
        assert_eq!(int64_unsigned(&json!(-1)), u64::MAX);
        assert_eq!(int64_unsigned(&json!(u64::MAX)), i64::MAX as u64);
        assert_eq!(int64_unsigned(&json!(1000)), 1000);
        assert_eq!(int64_unsigned(&json!("12")), 0);
    }

    /// A header whose JSON is `json` (the binary part of a new header).
    fn header(json: Value) -> Luks2Header {
        let mut h = Luks2Header::new(&crate::luks2::metadata::tests::params()).unwrap();
        h.json = json.as_object().unwrap().clone();
        h
    }

    #[test]
    fn members_as_stored_in_segment_order() {
        let h = header(json!({
            "keyslots": {
                "0": {"type": "luks2", "kdf": {"type": "pbkdf2", "iterations": -1,
                      "salt": "!!not base64!!"}},
                "1": {"type": "reencrypt", "mode": "reencrypt", "direction": "forward",
                      "area": {"type": "checksum", "hash": "sha256", "sector_size": 4096,
                               "offset": "32768", "size": "8192"}}
            },
            "segments": {
                "1": {"type": "linear", "offset": "4194304", "size": "dynamic",
                      "encryption": "aes-xts-plain64", "flags": ["backup-previous", "x"]},
                "0": {"type": "crypt", "offset": "16777216", "size": "1048576",
                      "iv_tweak": "0", "encryption": "aes-cbc-essiv:sha256",
                      "sector_size": 512, "integrity": {"type": "hmac(sha256)"}}
            },
            "digests": {"0": {"type": "pbkdf2", "salt": "AQID", "digest": 5}},
            "tokens": {},
            "config": {"json_size": "12288", "keyslots_size": "16384"}
        }));
        let segs = h.dump_segments().unwrap();
        assert_eq!(segs.iter().map(|s| s.id).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(segs[0].length, DumpLength::Bytes(1048576));
        assert_eq!(segs[0].integrity.as_deref(), Some("hmac(sha256)"));
        assert_eq!(segs[0].sector_size, Some(512));
        assert_eq!(segs[1].kind, "linear");
        assert_eq!(segs[1].offset, 4194304);
        assert_eq!(segs[1].length, DumpLength::WholeDevice);
        assert_eq!(segs[1].cipher.as_deref(), Some("aes-xts-plain64"));
        assert_eq!(segs[1].sector_size, None);
        assert_eq!(segs[1].flags, ["backup-previous", "x"]);
        let kdf = h.dump_kdf(0).unwrap();
        assert_eq!(kdf.iterations, Some(u64::MAX));
        assert_eq!((kdf.time, kdf.salt), (None, None));
        let r = h.dump_reencrypt_keyslot(1).unwrap();
        assert_eq!((r.resilience.as_str(), r.hash_block), ("checksum", 4096));
        assert_eq!(
            (r.area_offset.as_str(), r.shift_size.as_str()),
            ("32768", "")
        );
        let d = h.dump_digest(0).unwrap();
        assert_eq!((d.salt, d.digest), (Some(vec![1, 2, 3]), Some(vec![])));
        assert!(h.dump_kdf(5).is_none() && h.dump_digest(1).is_none());
    }

    #[test]
    fn text_of_absent_or_other_members_is_empty() {
        assert_eq!(text(None), "");
        assert_eq!(text(Some(&json!(5))), "");
        assert_eq!(text(Some(&json!("journal"))), "journal");
    }
}
