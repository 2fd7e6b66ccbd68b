//! The LUKS2 JSON metadata: typed views and cryptsetup-ordered mutators.

use super::binary::BinaryHeader;
use super::json::{self, as_u32, b64_decode, b64_encode, get_u64_str, key_id, u64_value};
use super::types::{ConfigFlag, DigestType, KeyslotType, SegmentType, TokenType};
use super::{
    BINARY_HEADER_SIZE, MAX_DIGESTS, MAX_KEYSLOTS, MAX_KEYSLOTS_SIZE, MAX_TOKENS, METADATA_SIZES,
    SALT_SIZE,
};
use crate::{
    DigestProblem, FormatError, JsonKind, JsonObject, JsonProblem, JsonType, KeyslotProblem,
    Luks2Error, Result,
};
use serde_json::{Map, Value};

/// Requirement names known to cryptsetup 2.6.1 (`requirements_flags[]`). `opal` (hardware
/// OPAL encryption, cryptsetup 2.7) is not among them: 2.6.1 refuses such a header as having
/// unmet requirements, and lukskit, which does not drive OPAL drives, does the same.
pub const KNOWN_REQUIREMENTS: [&str; 4] = [
    "offline-reencrypt",
    "online-reencrypt",
    "online-reencrypt-v2",
    "online-reencrypt-v3",
];

/// KDF parameters of a keyslot (`kdf` object).
#[derive(Clone, Debug, PartialEq)]
pub enum KdfParams {
    /// PBKDF2-HMAC.
    Pbkdf2 {
        /// Hash name (`sha256`).
        hash: String,
        /// Iteration count.
        iterations: u32,
        /// Salt (32 bytes in a usable keyslot).
        salt: Vec<u8>,
    },
    /// Argon2i / Argon2id.
    Argon2 {
        /// `argon2i` or `argon2id`.
        variant: String,
        /// Time cost (passes).
        time: u32,
        /// Memory cost in KiB.
        memory: u32,
        /// Lanes and threads.
        cpus: u32,
        /// Salt (32 bytes in a usable keyslot).
        salt: Vec<u8>,
    },
    /// A KDF type cryptsetup 2.6.1 cannot run: `argon2` (the pre-release name in the
    /// headers of early cryptsetup 2.0 builds) or any other string. As in cryptsetup the
    /// header still loads and dumps, and only this keyslot cannot be opened
    /// ([`Keyslot::check_usable`] refuses it).
    Unknown {
        /// The `type` string as stored.
        name: String,
        /// `time`, `memory` and `cpus` as cryptsetup reads them for any type other than
        /// `pbkdf2` (`json_object_get_int64`: a string's leading number, 0 when absent).
        costs: UnknownKdfCosts,
        /// Salt (empty when absent or not Base64).
        salt: Vec<u8>,
    },
}

/// The Argon2-style cost members of a keyslot whose KDF type is unknown, read as
/// cryptsetup's dump reads them (`json_object_get_int64`); `None` = member absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnknownKdfCosts {
    /// `time`.
    pub time: Option<i64>,
    /// `memory`.
    pub memory: Option<i64>,
    /// `cpus`.
    pub cpus: Option<i64>,
}

impl KdfParams {
    /// The KDF salt.
    pub fn salt(&self) -> &[u8] {
        match self {
            KdfParams::Pbkdf2 { salt, .. }
            | KdfParams::Argon2 { salt, .. }
            | KdfParams::Unknown { salt, .. } => salt,
        }
    }

    /// The `kdf` JSON object in cryptsetup's member order (`luks2_keyslot_update_json`).
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        match self {
            KdfParams::Pbkdf2 {
                hash,
                iterations,
                salt,
            } => {
                m.insert("type".into(), "pbkdf2".into());
                m.insert("hash".into(), hash.as_str().into());
                m.insert("iterations".into(), (*iterations).into());
                m.insert("salt".into(), b64_encode(salt).into());
            }
            KdfParams::Argon2 {
                variant,
                time,
                memory,
                cpus,
                salt,
            } => {
                m.insert("type".into(), variant.as_str().into());
                m.insert("time".into(), (*time).into());
                m.insert("memory".into(), (*memory).into());
                m.insert("cpus".into(), (*cpus).into());
                m.insert("salt".into(), b64_encode(salt).into());
            }
            KdfParams::Unknown { name, costs, salt } => {
                m.insert("type".into(), name.as_str().into());
                for (k, v) in [
                    ("time", costs.time),
                    ("memory", costs.memory),
                    ("cpus", costs.cpus),
                ] {
                    if let Some(v) = v {
                        m.insert(k.into(), v.into());
                    }
                }
                m.insert("salt".into(), b64_encode(salt).into());
            }
        }
        Value::Object(m)
    }
}

/// A keyslot (typed view of one `keyslots` member).
///
/// For keyslots whose type is not `luks2` (e.g. cryptsetup's `reencrypt` keyslot) only `id`,
/// `kind`, `key_size`, the area fields and `priority` are meaningful; `af_*` are empty/zero
/// and `kdf` is an empty `Pbkdf2` placeholder.
#[derive(Clone, Debug, PartialEq)]
pub struct Keyslot {
    /// Keyslot number (0..32).
    pub id: u32,
    /// Keyslot type (`luks2`).
    pub kind: KeyslotType,
    /// Size of the stored key (volume key) in bytes.
    pub key_size: u32,
    /// Anti-forensic stripes (4000).
    pub af_stripes: u32,
    /// Anti-forensic hash.
    pub af_hash: String,
    /// Byte offset of the keyslot area on the device.
    pub area_offset: u64,
    /// Size of the keyslot area in bytes.
    pub area_size: u64,
    /// Cipher spec used to encrypt the area.
    pub area_encryption: String,
    /// Size of the area encryption key (= KDF output) in bytes.
    pub area_key_size: u32,
    /// KDF parameters.
    pub kdf: KdfParams,
    /// Priority (0 ignore, 2 prefer); `None` = normal (field absent).
    pub priority: Option<u32>,
}

impl Keyslot {
    /// The checks cryptsetup makes before it uses a `luks2` keyslot
    /// (`luks2_keyslot_get_pbkdf_params`, `luks2_keyslot_validate`): a `luks1` AF, a `raw` area,
    /// a KDF salt of exactly 32 bytes. A header with such a broken keyslot still loads (as in
    /// cryptsetup); only this keyslot is unusable.
    pub fn check_usable(&self) -> Result<()> {
        if self.kind != KeyslotType::Luks2 {
            return Err(Luks2Error::KeyslotUnusable {
                id: self.id,
                problem: KeyslotProblem::Type {
                    kind: self.kind.to_string(),
                },
            }
            .into());
        }
        if let KdfParams::Unknown { name, .. } = &self.kdf {
            return Err(Luks2Error::KeyslotUnusable {
                id: self.id,
                problem: KeyslotProblem::UnknownKdf { name: name.clone() },
            }
            .into());
        }
        if self.kdf.salt().len() != SALT_SIZE {
            return Err(Luks2Error::KeyslotUnusable {
                id: self.id,
                problem: KeyslotProblem::KdfSaltSize {
                    len: self.kdf.salt().len(),
                },
            }
            .into());
        }
        // cryptsetup ignores the "stripes" value when it opens a keyslot (it always uses
        // 4000, `LUKS_STRIPES`), so only the sizes are checked here.
        if self.key_size == 0 || self.area_key_size == 0 {
            return Err(Luks2Error::KeyslotUnusable {
                id: self.id,
                problem: KeyslotProblem::KeySize,
            }
            .into());
        }
        // A KDF cost outside u32 (e.g. -1) reads as 0. cryptsetup would truncate it into a
        // cost of billions of iterations (or fail on 0); this keyslot is refused instead.
        let zero_cost = match &self.kdf {
            KdfParams::Pbkdf2 { iterations, .. } => *iterations == 0,
            KdfParams::Argon2 {
                time, memory, cpus, ..
            } => *time == 0 || *memory == 0 || *cpus == 0,
            // Refused above.
            KdfParams::Unknown { .. } => false,
        };
        if zero_cost {
            return Err(Luks2Error::KeyslotUnusable {
                id: self.id,
                problem: KeyslotProblem::KdfCost,
            }
            .into());
        }
        Ok(())
    }

    /// The keyslot JSON object in cryptsetup's member order (`luks2_keyslot_alloc` followed by
    /// `luks2_keyslot_update_json`; `priority` appended only when it is not "normal").
    fn to_json(&self) -> Value {
        let mut af = Map::new();
        af.insert("type".into(), "luks1".into());
        af.insert("stripes".into(), self.af_stripes.into());
        af.insert("hash".into(), self.af_hash.as_str().into());
        let mut area = Map::new();
        area.insert("type".into(), "raw".into());
        area.insert("offset".into(), u64_value(self.area_offset));
        area.insert("size".into(), u64_value(self.area_size));
        area.insert("encryption".into(), self.area_encryption.as_str().into());
        area.insert("key_size".into(), self.area_key_size.into());
        let mut m = Map::new();
        m.insert("type".into(), self.kind.as_str().into());
        m.insert("key_size".into(), self.key_size.into());
        m.insert("af".into(), Value::Object(af));
        m.insert("area".into(), Value::Object(area));
        m.insert("kdf".into(), self.kdf.to_json());
        if let Some(p) = self.priority.filter(|&p| p != 1) {
            m.insert("priority".into(), p.into());
        }
        Value::Object(m)
    }
}

/// A data segment (typed view of one `segments` member). For non-`crypt` segments
/// `iv_tweak`, `encryption` and `sector_size` are 0/empty when absent.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Segment number.
    pub id: u32,
    /// Segment type (`crypt`, `linear`, …).
    pub kind: SegmentType,
    /// Byte offset of the data on the device.
    pub offset: u64,
    /// Length in bytes; `None` = `"dynamic"` (up to the end of the device).
    pub size: Option<u64>,
    /// IV offset in 512-byte sectors.
    pub iv_tweak: u64,
    /// dm-crypt cipher spec.
    pub encryption: String,
    /// Encryption sector size in bytes.
    pub sector_size: u32,
    /// Segment flags (`in-reencryption`, `backup-final`, …).
    pub flags: Vec<String>,
    /// Whether an `integrity` object is present.
    pub has_integrity: bool,
}

/// A key digest (typed view of one `digests` member).
#[derive(Clone, Debug, PartialEq)]
pub struct Digest {
    /// Digest number.
    pub id: u32,
    /// Digest type (`pbkdf2`).
    pub kind: DigestType,
    /// Keyslots whose key this digest verifies.
    pub keyslots: Vec<u32>,
    /// Segments this key encrypts (empty = unbound key).
    pub segments: Vec<u32>,
    /// PBKDF2 hash.
    pub hash: String,
    /// PBKDF2 iterations.
    pub iterations: u32,
    /// Salt (32 bytes).
    pub salt: Vec<u8>,
    /// The digest value.
    pub digest: Vec<u8>,
}

impl Digest {
    /// The checks `PBKDF2_digest_verify` makes before using the digest: type `pbkdf2`, a
    /// 32-byte salt and a digest of 20 bytes (LUKS1-converted) or of the hash's size.
    pub fn check_usable(&self) -> Result<()> {
        if self.kind != DigestType::Pbkdf2 {
            return Err(Luks2Error::DigestUnusable {
                id: self.id,
                problem: DigestProblem::Type {
                    kind: self.kind.to_string(),
                },
            }
            .into());
        }
        if self.salt.len() != SALT_SIZE {
            return Err(Luks2Error::DigestUnusable {
                id: self.id,
                problem: DigestProblem::SaltSize {
                    len: self.salt.len(),
                },
            }
            .into());
        }
        let hash = lukskit_crypto::hash::HashAlg::from_name(&self.hash)?;
        let n = self.digest.len();
        if n != 20 && n != hash.digest_size() {
            return Err(Luks2Error::DigestUnusable {
                id: self.id,
                problem: DigestProblem::DigestSize { len: n },
            }
            .into());
        }
        Ok(())
    }

    /// The digest JSON object in cryptsetup's member order (`PBKDF2_digest_store`).
    fn to_json(&self) -> Value {
        let ids =
            |v: &[u32]| Value::Array(v.iter().map(|i| Value::String(i.to_string())).collect());
        let mut m = Map::new();
        m.insert("type".into(), self.kind.as_str().into());
        m.insert("keyslots".into(), ids(&self.keyslots));
        m.insert("segments".into(), ids(&self.segments));
        m.insert("hash".into(), self.hash.as_str().into());
        m.insert("iterations".into(), self.iterations.into());
        m.insert("salt".into(), b64_encode(&self.salt).into());
        m.insert("digest".into(), b64_encode(&self.digest).into());
        Value::Object(m)
    }
}

/// A token (typed view of one `tokens` member).
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// Token number.
    pub id: u32,
    /// Token type (`luks2-keyring`, `systemd-tpm2`, …).
    pub kind: TokenType,
    /// Keyslots the token unlocks.
    pub keyslots: Vec<u32>,
    /// The whole token object, including type-specific members.
    pub json: Value,
}

/// Keyslot ids as a token's or digest's `keyslots` array: decimal strings.
fn keyslot_ids(keyslots: &[u32]) -> Value {
    Value::Array(
        keyslots
            .iter()
            .map(|k| Value::String(k.to_string()))
            .collect(),
    )
}

/// A `luks2-keyring` token (`token add --key-description`): exactly the three members
/// cryptsetup's builtin token has, `type`, `keyslots` and `key_description`, in its order.
pub fn keyring_token(key_description: &str, keyslots: &[u32]) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("luks2-keyring".into()));
    m.insert("keyslots".into(), keyslot_ids(keyslots));
    m.insert(
        "key_description".into(),
        Value::String(key_description.into()),
    );
    Value::Object(m)
}

/// `token import --key-slot N`: name keyslot `slot` in an imported token's `keyslots` (an
/// empty array is created when the member is missing; a token that is not an object or whose
/// `keyslots` is not an array is left as it is, for [`Luks2Header::add_token`] to refuse).
pub fn token_with_keyslot(mut token: Value, slot: u32) -> Value {
    if let Some(obj) = token.as_object_mut() {
        let ks = obj
            .entry("keyslots")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(a) = ks.as_array_mut() {
            let s = Value::String(slot.to_string());
            if !a.contains(&s) {
                a.push(s);
            }
        }
    }
    token
}

/// Parameters for a brand-new header (luksFormat).
#[derive(Clone, Debug)]
pub struct NewHeaderParams {
    /// Size of one metadata copy (one of [`super::METADATA_SIZES`]).
    pub metadata_size: u64,
    /// Size of the keyslots area (4 KiB aligned, at most 128 MiB).
    pub keyslots_size: u64,
    /// Data offset in bytes (0 = detached header).
    pub data_offset: u64,
    /// Data size in bytes; `None` = dynamic.
    pub data_size: Option<u64>,
    /// Segment cipher spec (`aes-xts-plain64`).
    pub encryption: String,
    /// Encryption sector size.
    pub sector_size: u32,
    /// Text UUID.
    pub uuid: String,
    /// Label (at most 47 bytes).
    pub label: String,
    /// Subsystem (at most 47 bytes).
    pub subsystem: String,
    /// Digest 0 bound to segment 0, no keyslots yet.
    pub digest: Digest,
}

/// A LUKS2 header: the binary header of the copy that was read and the JSON metadata.
#[derive(Clone, Debug)]
pub struct Luks2Header {
    /// Binary header of the copy read, in its primary (`hdr_offset` 0) form; `salt` is the
    /// salt the primary copy is written with.
    pub binary: BinaryHeader,
    /// The JSON metadata, member order preserved: written only by this crate's mutators
    /// (here and in [`super::edit`]); read through the typed views or [`Luks2Header::json`].
    pub(crate) json: Map<String, Value>,
    /// Salt the secondary copy is written with.
    pub(crate) secondary_salt: [u8; 64],
}

fn json_err(object: JsonObject, problem: JsonProblem) -> FormatError {
    Luks2Error::Json { object, problem }.into()
}

fn missing(ctx: &JsonObject, key: &str, kind: JsonType) -> FormatError {
    json_err(
        *ctx,
        JsonProblem::Missing {
            member: key.into(),
            kind,
        },
    )
}

/// Members of a section object with their numeric ids, sorted by id.
fn numbered_members(
    section: &Map<String, Value>,
    what: JsonKind,
) -> Result<Vec<(u32, &Map<String, Value>)>> {
    let mut v = Vec::with_capacity(section.len());
    let object = JsonObject {
        kind: what,
        id: None,
    };
    for (k, val) in section {
        let id = key_id(k)
            .ok_or_else(|| json_err(object, JsonProblem::NotNumbered { key: k.clone() }))?;
        let obj = val
            .as_object()
            .ok_or_else(|| json_err(object, JsonProblem::NotAnObject { key: k.clone() }))?;
        v.push((id, obj));
    }
    v.sort_by_key(|(id, _)| *id);
    Ok(v)
}

/// Ids referenced by an array of decimal strings.
fn id_array(obj: &Map<String, Value>, key: &str, ctx: &JsonObject) -> Result<Vec<u32>> {
    let arr = obj
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| missing(ctx, key, JsonType::Array))?;
    arr.iter()
        .map(|e| {
            e.as_str().and_then(key_id).ok_or_else(|| {
                json_err(*ctx, JsonProblem::IllegalArrayValue { member: key.into() })
            })
        })
        .collect()
}

fn str_member<'a>(obj: &'a Map<String, Value>, key: &str, ctx: &JsonObject) -> Result<&'a str> {
    obj.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| missing(ctx, key, JsonType::String))
}

fn u64_member(obj: &Map<String, Value>, key: &str, ctx: &JsonObject) -> Result<u64> {
    obj.get(key)
        .and_then(get_u64_str)
        .ok_or_else(|| missing(ctx, key, JsonType::Uint64String))
}

fn obj_member<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    ctx: &JsonObject,
) -> Result<&'a Map<String, Value>> {
    obj.get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| missing(ctx, key, JsonType::Object))
}

/// A Base64 string member. A string that is not valid Base64 reads as empty (the header
/// still loads and dumps, as in cryptsetup, whose `hexprint_base64` prints nothing for it);
/// the `check_usable` of the keyslot or digest then refuses the empty value.
fn b64_member(obj: &Map<String, Value>, key: &str, ctx: &JsonObject) -> Result<Vec<u8>> {
    Ok(b64_decode(str_member(obj, key, ctx)?).unwrap_or_default())
}

/// A keyslot `priority` value as cryptsetup reads it (`json_object_get_int`: integers clamped
/// to `i32`, doubles truncated, a string's leading decimal number, `true` = 1, anything else
/// 0). A negative value reads as `u32::MAX`: like every value other than 0, 1 and 2 it is an
/// "invalid" priority, which cryptsetup dumps as such and never tries unless asked for the
/// keyslot by number.
fn priority_of(v: &Value) -> u32 {
    let n = json_c_int64(v).clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A value as json-c's `json_object_get_int64` reads it: integers as they are (above
/// `i64::MAX`: `i64::MAX`), doubles truncated (saturating), a string's leading decimal
/// number, `true` = 1, anything else 0.
fn json_c_int64(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|_| i64::MAX))
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => leading_int(s),
        _ => 0,
    }
}

/// `strtoll(s, NULL, 10)`: optional leading white space and sign, then digits; 0 if none.
fn leading_int(s: &str) -> i64 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for c in digits.bytes().take_while(u8::is_ascii_digit) {
        v = v.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    if neg {
        -v
    } else {
        v
    }
}

/// A 32-bit size or KDF cost member of a `luks2` keyslot. Validation has checked it is a JSON
/// integer;
/// a value outside `u32` (negative, huge) reads as 0, which `check_usable` refuses, so that
/// one broken keyslot does not make the whole header unreadable (cryptsetup loads it too).
fn keyslot_u32(obj: &Map<String, Value>, key: &str) -> u32 {
    obj.get(key).and_then(as_u32).unwrap_or(0)
}

fn parse_keyslot(id: u32, o: &Map<String, Value>) -> Result<Keyslot> {
    let ctx = JsonObject::numbered(JsonKind::Keyslot, id);
    let kind = KeyslotType::parse(str_member(o, "type", &ctx)?);
    let key_size = keyslot_u32(o, "key_size");
    let area = obj_member(o, "area", &ctx)?;
    let area_offset = u64_member(area, "offset", &ctx)?;
    let area_size = u64_member(area, "size", &ctx)?;
    let priority = o.get("priority").map(priority_of);
    if kind != KeyslotType::Luks2 {
        return Ok(Keyslot {
            id,
            kind,
            key_size,
            af_stripes: 0,
            af_hash: String::new(),
            area_offset,
            area_size,
            area_encryption: area
                .get("encryption")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            area_key_size: area.get("key_size").and_then(as_u32).unwrap_or(0),
            kdf: KdfParams::Pbkdf2 {
                hash: String::new(),
                iterations: 0,
                salt: Vec::new(),
            },
            priority,
        });
    }
    let af = obj_member(o, "af", &ctx)?;
    let kdf_o = obj_member(o, "kdf", &ctx)?;
    let kdf_type = str_member(kdf_o, "type", &ctx)?;
    let kdf = match kdf_type {
        "pbkdf2" => KdfParams::Pbkdf2 {
            hash: str_member(kdf_o, "hash", &ctx)?.into(),
            iterations: keyslot_u32(kdf_o, "iterations"),
            salt: b64_member(kdf_o, "salt", &ctx)?,
        },
        "argon2i" | "argon2id" => KdfParams::Argon2 {
            variant: kdf_type.into(),
            time: keyslot_u32(kdf_o, "time"),
            memory: keyslot_u32(kdf_o, "memory"),
            cpus: keyslot_u32(kdf_o, "cpus"),
            salt: b64_member(kdf_o, "salt", &ctx)?,
        },
        // Validation does not look into the `kdf` object of a type it does not know, so
        // nothing here may refuse the header.
        other => KdfParams::Unknown {
            name: other.into(),
            costs: UnknownKdfCosts {
                time: kdf_o.get("time").map(json_c_int64),
                memory: kdf_o.get("memory").map(json_c_int64),
                cpus: kdf_o.get("cpus").map(json_c_int64),
            },
            salt: kdf_o
                .get("salt")
                .and_then(Value::as_str)
                .and_then(b64_decode)
                .unwrap_or_default(),
        },
    };
    Ok(Keyslot {
        id,
        kind,
        key_size,
        af_stripes: keyslot_u32(af, "stripes"),
        af_hash: str_member(af, "hash", &ctx)?.into(),
        area_offset,
        area_size,
        area_encryption: str_member(area, "encryption", &ctx)?.into(),
        area_key_size: keyslot_u32(area, "key_size"),
        kdf,
        priority,
    })
}

pub(super) fn parse_segment(id: u32, o: &Map<String, Value>) -> Result<Segment> {
    let ctx = JsonObject::numbered(JsonKind::Segment, id);
    let size = match str_member(o, "size", &ctx)? {
        "dynamic" => None,
        _ => Some(u64_member(o, "size", &ctx)?),
    };
    let flags = match o.get("flags") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|f| f.as_str().map(String::from))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| json_err(ctx, JsonProblem::IllegalFlags))?,
        Some(_) => return Err(json_err(ctx, JsonProblem::IllegalFlags)),
    };
    Ok(Segment {
        id,
        kind: SegmentType::parse(str_member(o, "type", &ctx)?),
        offset: u64_member(o, "offset", &ctx)?,
        size,
        iv_tweak: match o.get("iv_tweak") {
            Some(_) => u64_member(o, "iv_tweak", &ctx)?,
            None => 0,
        },
        encryption: o
            .get("encryption")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
        sector_size: o.get("sector_size").and_then(as_u32).unwrap_or(0),
        flags,
        has_integrity: o.contains_key("integrity"),
    })
}

fn parse_digest(id: u32, o: &Map<String, Value>) -> Result<Digest> {
    let ctx = JsonObject::numbered(JsonKind::Digest, id);
    let kind = DigestType::parse(str_member(o, "type", &ctx)?);
    let keyslots = id_array(o, "keyslots", &ctx)?;
    let segments = id_array(o, "segments", &ctx)?;
    if kind != DigestType::Pbkdf2 {
        return Ok(Digest {
            id,
            kind,
            keyslots,
            segments,
            hash: String::new(),
            iterations: 0,
            salt: Vec::new(),
            digest: Vec::new(),
        });
    }
    Ok(Digest {
        id,
        kind,
        keyslots,
        segments,
        // As cryptsetup reads it (`json_object_get_string`): a non-string value becomes its
        // JSON text, a missing one "(null)"; either names no hash, so the digest is unusable.
        hash: o
            .get("hash")
            .map_or_else(|| "(null)".to_string(), json_c_text),
        // cryptsetup's digest validation does not look at these. It reads the iterations
        // as an `unsigned int` from `json_object_get_int64` (so `"1000"` is 1000 and
        // 2^32 + 1000 wraps to 1000); a missing value or one that reads as 0 leaves the
        // digest unusable, as does a missing or mistyped salt or digest (empty).
        iterations: o.get("iterations").map_or(0, |v| json_c_int64(v) as u32),
        salt: o
            .get("salt")
            .and_then(Value::as_str)
            .and_then(b64_decode)
            .unwrap_or_default(),
        digest: o
            .get("digest")
            .and_then(Value::as_str)
            .and_then(b64_decode)
            .unwrap_or_default(),
    })
}

/// The text json-c's `json_object_get_string` gives for a value: strings as they are, other
/// values as json-c's spaced JSON serialisation (`{ "a": [ 1, 2.5 ] }`).
fn json_c_text(v: &Value) -> String {
    fn spaced(v: &Value, out: &mut String) {
        match v {
            Value::Array(a) if a.is_empty() => out.push_str("[ ]"),
            Value::Array(a) => {
                out.push_str("[ ");
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    spaced(x, out);
                }
                out.push_str(" ]");
            }
            Value::Object(m) if m.is_empty() => out.push_str("{ }"),
            Value::Object(m) => {
                out.push_str("{ ");
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push_str(": ");
                    spaced(x, out);
                }
                out.push_str(" }");
            }
            other => out.push_str(&other.to_string()),
        }
    }
    match v {
        Value::String(s) => s.clone(),
        other => {
            let mut out = String::new();
            spaced(other, &mut out);
            out
        }
    }
}

/// `LUKS2_array_remove`: drop the first element equal to `num` (a new array in cryptsetup,
/// same position in the parent object).
fn array_remove_first(arr: &mut Vec<Value>, num: &str) {
    if let Some(p) = arr.iter().position(|v| v.as_str() == Some(num)) {
        arr.remove(p);
    }
}

/// Whether `uuid` is in the 8-4-4-4-12 hexadecimal form `uuid_parse` accepts.
fn uuid_ok(uuid: &str) -> bool {
    let b = uuid.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

impl Luks2Header {
    /// Build a brand-new header as `LUKS2_generate_hdr` does: seqid 1, checksum `sha256`,
    /// random per-copy salts, top-level members `keyslots, tokens, segments, digests, config`,
    /// the digest, crypt segment 0 and `config{json_size, keyslots_size}`. The result is
    /// validated.
    pub fn new(p: &NewHeaderParams) -> Result<Self> {
        if !METADATA_SIZES.contains(&p.metadata_size) {
            return Err(Luks2Error::UnsupportedMetadataSize {
                size: p.metadata_size,
            }
            .into());
        }
        if !p.keyslots_size.is_multiple_of(4096) || p.keyslots_size > MAX_KEYSLOTS_SIZE {
            return Err(Luks2Error::UnsupportedKeyslotsSize {
                size: p.keyslots_size,
            }
            .into());
        }
        if p.data_offset != 0 && p.data_offset < 2 * p.metadata_size {
            return Err(Luks2Error::DataOffsetTooSmall.into());
        }
        if p.label.len() >= 48 || p.subsystem.len() >= 48 {
            return Err(Luks2Error::LabelTooLong.into());
        }
        if !uuid_ok(&p.uuid) {
            return Err(Luks2Error::BadUuid.into());
        }
        if p.digest.id >= MAX_DIGESTS {
            return Err(Luks2Error::DigestIdInvalid { id: p.digest.id }.into());
        }
        let mut salt1 = [0u8; 64];
        let mut salt2 = [0u8; 64];
        lukskit_crypto::random::fill(&mut salt1)?;
        lukskit_crypto::random::fill(&mut salt2)?;

        let mut json = Map::new();
        json.insert("keyslots".into(), Value::Object(Map::new()));
        json.insert("tokens".into(), Value::Object(Map::new()));
        json.insert("segments".into(), Value::Object(Map::new()));
        json.insert("digests".into(), Value::Object(Map::new()));
        json.insert("config".into(), Value::Object(Map::new()));
        let mut seg = Map::new();
        seg.insert("type".into(), "crypt".into());
        seg.insert("offset".into(), u64_value(p.data_offset));
        seg.insert(
            "size".into(),
            match p.data_size {
                Some(s) => u64_value(s),
                None => "dynamic".into(),
            },
        );
        seg.insert("iv_tweak".into(), u64_value(0));
        seg.insert("encryption".into(), p.encryption.as_str().into());
        seg.insert("sector_size".into(), p.sector_size.into());
        if let Some(Value::Object(d)) = json.get_mut("digests") {
            d.insert(p.digest.id.to_string(), p.digest.to_json());
        }
        if let Some(Value::Object(s)) = json.get_mut("segments") {
            s.insert("0".into(), Value::Object(seg));
        }
        if let Some(Value::Object(c)) = json.get_mut("config") {
            c.insert(
                "json_size".into(),
                u64_value(p.metadata_size - BINARY_HEADER_SIZE as u64),
            );
            c.insert("keyslots_size".into(), u64_value(p.keyslots_size));
        }
        let hdr = Luks2Header {
            binary: BinaryHeader {
                version: 2,
                hdr_size: p.metadata_size,
                seqid: 1,
                label: p.label.clone(),
                checksum_alg: "sha256".into(),
                salt: salt1,
                uuid: p.uuid.clone(),
                subsystem: p.subsystem.clone(),
                hdr_offset: 0,
                csum: [0; 64],
            },
            json,
            secondary_salt: salt2,
        };
        hdr.validate()?;
        Ok(hdr)
    }

    /// Assemble a header from its parts (used by the reader).
    pub(crate) fn from_parts(
        binary: BinaryHeader,
        json: Map<String, Value>,
        secondary_salt: [u8; 64],
    ) -> Self {
        Luks2Header {
            binary,
            json,
            secondary_salt,
        }
    }

    /// The JSON metadata, writable without any check: for tests that craft hostile
    /// headers (feature `test-support`, never in a shipped build).
    #[cfg(feature = "test-support")]
    pub fn json_mut_unchecked(&mut self) -> &mut Map<String, Value> {
        &mut self.json
    }

    /// The JSON metadata as stored, read-only (for `--dump-json-metadata`, token objects
    /// and the members no typed view covers).
    pub fn json(&self) -> &Map<String, Value> {
        &self.json
    }

    /// The salt the secondary copy is written with.
    pub fn secondary_salt(&self) -> &[u8; 64] {
        &self.secondary_salt
    }

    /// Size of one metadata copy (binary header + JSON area): `hdr_size`.
    pub fn metadata_size(&self) -> u64 {
        self.binary.hdr_size
    }

    /// Size of the JSON area of each copy.
    pub fn json_area_size(&self) -> u64 {
        self.binary
            .hdr_size
            .saturating_sub(BINARY_HEADER_SIZE as u64)
    }

    fn section(&self, name: &str) -> Result<&Map<String, Value>> {
        self.json
            .get(name)
            .and_then(Value::as_object)
            .ok_or_else(|| Luks2Error::MissingSection { name: name.into() }.into())
    }

    fn section_mut(&mut self, name: &str) -> Result<&mut Map<String, Value>> {
        self.json
            .get_mut(name)
            .and_then(Value::as_object_mut)
            .ok_or_else(|| Luks2Error::MissingSection { name: name.into() }.into())
    }

    /// `config.keyslots_size`.
    pub fn keyslots_size(&self) -> Result<u64> {
        u64_member(
            self.section("config")?,
            "keyslots_size",
            &JsonObject {
                kind: JsonKind::Config,
                id: None,
            },
        )
    }

    /// `2 * hdr_size + keyslots_size`: bytes occupied by both copies and the keyslots area.
    pub fn hdr_and_areas_size(&self) -> Result<u64> {
        self.keyslots_size()?
            .checked_add(2 * self.metadata_size())
            .ok_or_else(|| FormatError::from(Luks2Error::HeaderSizeOverflow))
    }

    /// All keyslots (any type), sorted by id.
    pub fn keyslots(&self) -> Result<Vec<Keyslot>> {
        numbered_members(self.section("keyslots")?, JsonKind::Keyslot)?
            .into_iter()
            .map(|(id, o)| parse_keyslot(id, o))
            .collect()
    }

    /// Ids of all keyslots (any type), sorted.
    pub fn keyslot_ids(&self) -> Result<Vec<u32>> {
        Ok(
            numbered_members(self.section("keyslots")?, JsonKind::Keyslot)?
                .into_iter()
                .map(|(id, _)| id)
                .collect(),
        )
    }

    /// Ids of all keyslots (any type) in the order the JSON object lists them: the order in
    /// which cryptsetup tries keyslots for a passphrase.
    pub fn keyslot_ids_in_json_order(&self) -> Result<Vec<u32>> {
        let object = JsonObject {
            kind: JsonKind::Keyslot,
            id: None,
        };
        self.section("keyslots")?
            .keys()
            .map(|k| {
                key_id(k)
                    .ok_or_else(|| json_err(object, JsonProblem::NotNumbered { key: k.clone() }))
            })
            .collect()
    }

    /// One keyslot, `None` if it does not exist.
    pub fn keyslot(&self, id: u32) -> Result<Option<Keyslot>> {
        match self.section("keyslots")?.get(&id.to_string()) {
            None => Ok(None),
            Some(Value::Object(o)) => parse_keyslot(id, o).map(Some),
            Some(_) => Err(Luks2Error::KeyslotUnusable {
                id,
                problem: KeyslotProblem::NotObject,
            }
            .into()),
        }
    }

    /// All segments, sorted by id.
    pub fn segments(&self) -> Result<Vec<Segment>> {
        numbered_members(self.section("segments")?, JsonKind::Segment)?
            .into_iter()
            .map(|(id, o)| parse_segment(id, o))
            .collect()
    }

    /// The `integrity.type` of segment `id` (authenticated encryption through dm-integrity:
    /// `hmac(sha256)`, `aead`, `poly1305`, ...), `None` when the segment has no `integrity`
    /// object (or there is no such segment).
    pub fn segment_integrity(&self, id: u32) -> Option<String> {
        self.json
            .get("segments")?
            .get(id.to_string())?
            .get("integrity")?
            .get("type")?
            .as_str()
            .map(str::to_string)
    }

    /// Give segment `id` an `integrity` object of type `kind` (no journal encryption nor
    /// journal integrity), as cryptsetup 2.6 writes it for `luksFormat --integrity`: after
    /// `sector_size`, `{"type": kind, "journal_encryption": "none", "journal_integrity":
    /// "none"}`. False (nothing changed) when there is no segment `id`.
    pub fn set_segment_integrity(&mut self, id: u32, kind: &str) -> bool {
        let Some(seg) = self
            .json
            .get_mut("segments")
            .and_then(|s| s.get_mut(id.to_string()))
            .and_then(Value::as_object_mut)
        else {
            return false;
        };
        let mut integrity = Map::new();
        integrity.insert("type".into(), kind.into());
        integrity.insert("journal_encryption".into(), "none".into());
        integrity.insert("journal_integrity".into(), "none".into());
        seg.insert("integrity".into(), Value::Object(integrity));
        true
    }

    /// All digests, sorted by id.
    pub fn digests(&self) -> Result<Vec<Digest>> {
        numbered_members(self.section("digests")?, JsonKind::Digest)?
            .into_iter()
            .map(|(id, o)| parse_digest(id, o))
            .collect()
    }

    /// All tokens, sorted by id.
    pub fn tokens(&self) -> Result<Vec<Token>> {
        numbered_members(self.section("tokens")?, JsonKind::Token)?
            .into_iter()
            .map(|(id, o)| {
                let ctx = JsonObject::numbered(JsonKind::Token, id);
                Ok(Token {
                    id,
                    kind: TokenType::parse(str_member(o, "type", &ctx)?),
                    keyslots: id_array(o, "keyslots", &ctx)?,
                    json: Value::Object(o.clone()),
                })
            })
            .collect()
    }

    /// `config.flags` (persistent activation flags), in stored order.
    pub fn config_flags(&self) -> Vec<ConfigFlag> {
        self.json
            .get("config")
            .and_then(|c| c.get("flags"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(ConfigFlag::parse)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Replace (or add, at the end of `config`) the persistent activation flags: the known
    /// ones among `flags`, in cryptsetup's table order ([`ConfigFlag::KNOWN`]), as
    /// `LUKS2_config_set_flags` stores them (an empty array when there are none).
    pub fn set_config_flags(&mut self, flags: &[ConfigFlag]) -> Result<()> {
        let ordered: Vec<Value> = ConfigFlag::KNOWN
            .iter()
            .filter(|k| flags.contains(k))
            .map(|k| Value::String(k.as_str().to_string()))
            .collect();
        self.section_mut("config")?
            .insert("flags".into(), Value::Array(ordered));
        Ok(())
    }

    /// `config.requirements.mandatory`, in stored order.
    pub fn requirements(&self) -> Vec<String> {
        self.json
            .get("config")
            .and_then(|c| c.get("requirements"))
            .and_then(|r| r.get("mandatory"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Mandatory requirements cryptsetup 2.6.1 does not know ([`KNOWN_REQUIREMENTS`]);
    /// cryptsetup refuses to activate or modify such a device.
    pub fn unknown_requirements(&self) -> Vec<String> {
        self.requirements()
            .into_iter()
            .filter(|r| !KNOWN_REQUIREMENTS.contains(&r.as_str()))
            .collect()
    }

    /// Data offset in bytes (`LUKS2_get_data_offset`): the `backup-final` segment's offset
    /// during online reencryption, otherwise the smallest offset of the regular segments
    /// (0 for a detached header).
    pub fn data_offset(&self) -> Result<u64> {
        let segs = self.segments()?;
        if self
            .requirements()
            .iter()
            .any(|r| r.starts_with("online-reencrypt"))
        {
            if let Some(s) = segs
                .iter()
                .find(|s| s.flags.iter().any(|f| f == "backup-final"))
            {
                return Ok(s.offset);
            }
        }
        let mut min = u64::MAX;
        for s in segs
            .iter()
            .filter(|s| !s.flags.iter().any(|f| f.starts_with("backup-")))
        {
            if s.offset == 0 {
                return Ok(0);
            }
            min = min.min(s.offset);
        }
        Ok(min)
    }

    /// Serialise the JSON compactly, exactly as cryptsetup writes it.
    pub fn to_json_string(&self) -> String {
        json::object_to_json_c(&self.json)
    }

    /// `LUKS2_check_json_size`: the serialised JSON must fit the JSON area.
    fn check_json_size(&self) -> Result<()> {
        let len = self.to_json_string().len() as u64;
        if len > self.json_area_size() {
            return Err(Luks2Error::JsonAreaFull {
                len,
                max: self.json_area_size(),
            }
            .into());
        }
        Ok(())
    }

    /// Add a `luks2` keyslot, appended at the end of the `keyslots` object with cryptsetup's
    /// member order. The keyslot is not assigned to any digest yet. Fails if the id is taken,
    /// out of range, or the JSON would no longer fit its area.
    pub fn add_keyslot(&mut self, ks: &Keyslot) -> Result<()> {
        if ks.id >= MAX_KEYSLOTS {
            return Err(Luks2Error::KeyslotIdInvalid { id: ks.id }.into());
        }
        if ks.kind != KeyslotType::Luks2 {
            return Err(Luks2Error::UnsupportedKeyslotType {
                kind: ks.kind.to_string(),
            }
            .into());
        }
        if let Some(p) = ks.priority {
            if p > 2 {
                return Err(Luks2Error::InvalidPriority { priority: p }.into());
            }
        }
        let key = ks.id.to_string();
        let keyslots = self.section_mut("keyslots")?;
        if keyslots.contains_key(&key) {
            return Err(Luks2Error::KeyslotActive { id: ks.id }.into());
        }
        keyslots.insert(key.clone(), ks.to_json());
        if let Err(e) = self.check_json_size() {
            self.section_mut("keyslots")?.shift_remove(&key);
            return Err(e);
        }
        Ok(())
    }

    /// Replace an existing keyslot's object in place (same id, same position in the JSON),
    /// as cryptsetup does when a LUKS2 passphrase is changed or converted.
    pub fn replace_keyslot(&mut self, ks: &Keyslot) -> Result<()> {
        let key = ks.id.to_string();
        let keyslots = self.section_mut("keyslots")?;
        let Some(old) = keyslots.get(&key).cloned() else {
            return Err(Luks2Error::KeyslotInactive { id: ks.id }.into());
        };
        keyslots.insert(key.clone(), ks.to_json());
        if let Err(e) = self.check_json_size() {
            self.section_mut("keyslots")?.insert(key, old);
            return Err(e);
        }
        Ok(())
    }

    /// Remove a keyslot (`LUKS2_keyslot_wipe` JSON part): drop its id from every digest's and
    /// token's `keyslots` array, delete the keyslot object, then erase digests left with
    /// neither keyslots nor segments (`LUKS2_digests_erase_unused`; a digest still bound to a
    /// segment is kept even without keyslots). The keyslot area is not touched here.
    pub fn remove_keyslot(&mut self, id: u32) -> Result<()> {
        let key = id.to_string();
        if !self.section("keyslots")?.contains_key(&key) {
            return Err(Luks2Error::KeyslotInactive { id }.into());
        }
        for sec in ["digests", "tokens"] {
            if let Ok(m) = self.section_mut(sec) {
                for (_, obj) in m.iter_mut() {
                    if let Some(Value::Array(a)) = obj.get_mut("keyslots") {
                        array_remove_first(a, &key);
                    }
                }
            }
        }
        self.section_mut("keyslots")?.shift_remove(&key);
        self.erase_unused_digests();
        Ok(())
    }

    /// `LUKS2_digests_erase_unused`: delete digests whose `segments` and `keyslots` arrays are
    /// both empty.
    pub fn erase_unused_digests(&mut self) {
        if let Some(Value::Object(d)) = self.json.get_mut("digests") {
            d.retain(|_, v| {
                let empty = |k: &str| {
                    v.get(k)
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.is_empty())
                };
                !(empty("segments") && empty("keyslots"))
            });
        }
    }

    /// Append `keyslot` to the `keyslots` array of `digest` (no-op if already there), as
    /// `LUKS2_digest_assign`. The keyslot must exist.
    pub fn assign_keyslot_to_digest(&mut self, keyslot: u32, digest: u32) -> Result<()> {
        let ks = keyslot.to_string();
        if !self.section("keyslots")?.contains_key(&ks) {
            return Err(Luks2Error::KeyslotInactive { id: keyslot }.into());
        }
        let d = self
            .section_mut("digests")?
            .get_mut(&digest.to_string())
            .and_then(Value::as_object_mut)
            .ok_or_else(|| FormatError::from(Luks2Error::DigestMissing { id: digest }))?;
        let arr = d
            .get_mut("keyslots")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| FormatError::from(Luks2Error::DigestNoKeyslots { id: digest }))?;
        if !arr.iter().any(|v| v.as_str() == Some(ks.as_str())) {
            arr.push(Value::String(ks));
        }
        Ok(())
    }

    /// Add a digest object (appended, `PBKDF2_digest_store` member order).
    pub fn add_digest(&mut self, d: &Digest) -> Result<()> {
        if d.id >= MAX_DIGESTS {
            return Err(Luks2Error::DigestIdInvalid { id: d.id }.into());
        }
        let key = d.id.to_string();
        let digests = self.section_mut("digests")?;
        if digests.contains_key(&key) {
            return Err(Luks2Error::DigestExists { id: d.id }.into());
        }
        digests.insert(key.clone(), d.to_json());
        if let Err(e) = self.check_json_size() {
            self.section_mut("digests")?.shift_remove(&key);
            return Err(e);
        }
        Ok(())
    }

    /// Set a keyslot priority (0 ignore, 1 normal, 2 prefer) as `LUKS2_keyslot_priority_set`:
    /// normal removes the member, anything else sets it (appended if new).
    pub fn set_keyslot_priority(&mut self, id: u32, priority: u32) -> Result<()> {
        if priority > 2 {
            return Err(Luks2Error::InvalidPriority { priority }.into());
        }
        let ks = self
            .section_mut("keyslots")?
            .get_mut(&id.to_string())
            .and_then(Value::as_object_mut)
            .ok_or(Luks2Error::KeyslotInactive { id })?;
        if priority == 1 {
            ks.shift_remove("priority");
        } else {
            ks.insert("priority".into(), priority.into());
        }
        Ok(())
    }

    /// First-fit search for a free keyslot area of `size` bytes (`LUKS2_find_area_gap`):
    /// areas of keyslots 0..32 sorted by offset, gaps searched from `2 * hdr_size`; the area
    /// must end within `hdr_and_areas_size`. `None` when there is no room.
    pub fn find_keyslot_area(&self, size: u64) -> Result<Option<u64>> {
        let max_offset = self.hdr_and_areas_size()?;
        let keyslots = self.section("keyslots")?;
        let mut areas: Vec<(u64, u64)> = Vec::new();
        for i in 0..MAX_KEYSLOTS {
            let Some(area) = keyslots.get(&i.to_string()).and_then(|k| k.get("area")) else {
                continue;
            };
            let off = area.get("offset").and_then(get_u64_str).unwrap_or(0);
            let len = area.get("size").and_then(get_u64_str).unwrap_or(0);
            // cryptsetup's selection sort only picks areas with 0 < offset <= max offset.
            if off != 0
                && off
                    <= (if max_offset == 0 {
                        u64::MAX
                    } else {
                        max_offset
                    })
            {
                areas.push((off, len));
            }
        }
        areas.sort_by_key(|a| a.0);
        let mut offset = 2 * self.metadata_size();
        for (a_off, a_len) in areas {
            if a_len == 0 {
                continue;
            }
            if offset < a_off && offset.saturating_add(size) <= a_off {
                break;
            }
            offset = a_off.saturating_add(a_len);
        }
        if offset.saturating_add(size) > max_offset {
            return Ok(None);
        }
        Ok(Some(offset))
    }

    /// Size of a keyslot area for a key of `key_size` bytes: `round_up(key_size * 4000, 4096)`.
    pub fn keyslot_area_size(key_size: u32) -> u64 {
        (u64::from(key_size) * 4000).div_ceil(4096) * 4096
    }

    /// The id a new token gets when none is asked for: the lowest id below [`MAX_TOKENS`] not
    /// in use, or `None` when every one is.
    pub fn free_token_id(&self) -> Result<Option<u32>> {
        let tokens = self.section("tokens")?;
        Ok((0..MAX_TOKENS).find(|i| !tokens.contains_key(&i.to_string())))
    }

    /// Add (or replace) a token as `LUKS2_token_create`: `id` `None` takes the first free id.
    /// The token must be an object with a non-empty string `type` and a `keyslots` array of
    /// existing keyslot ids; types starting with `luks2-` are reserved, of which only
    /// `luks2-keyring` (exactly `type`, `keyslots`, `key_description`) is accepted. Returns the
    /// token id.
    pub fn add_token(&mut self, id: Option<u32>, token: Value) -> Result<u32> {
        let id = match id {
            Some(i) => i,
            None => self
                .free_token_id()?
                .ok_or_else(|| FormatError::from(Luks2Error::NoFreeToken))?,
        };
        if id >= MAX_TOKENS {
            return Err(Luks2Error::TokenIdInvalid { id }.into());
        }
        let obj = token.as_object().ok_or(Luks2Error::TokenNotObject)?;
        let ctx = JsonObject::numbered(JsonKind::Token, id);
        let ty = str_member(obj, "type", &ctx)?;
        if ty.is_empty() {
            return Err(json_err(ctx, JsonProblem::EmptyType));
        }
        let keyslots = self.section("keyslots")?;
        let arr = obj
            .get("keyslots")
            .and_then(Value::as_array)
            .ok_or_else(|| missing(&ctx, "keyslots", JsonType::Array))?;
        for e in arr {
            let s = e
                .as_str()
                .ok_or_else(|| json_err(ctx, JsonProblem::IllegalKeyslotsValue))?;
            if !keyslots.get(s).is_some_and(Value::is_object) {
                return Err(json_err(
                    ctx,
                    JsonProblem::MissingKeyslot { keyslot: s.into() },
                ));
            }
        }
        if ty.starts_with("luks2-") {
            if ty != "luks2-keyring" {
                return Err(json_err(ctx, JsonProblem::ReservedType { kind: ty.into() }));
            }
            if obj.len() != 3 || !obj.get("key_description").is_some_and(Value::is_string) {
                return Err(json_err(ctx, JsonProblem::KeyringShape));
            }
        }
        let key = id.to_string();
        let old = self.section_mut("tokens")?.insert(key.clone(), token);
        if let Err(e) = self.check_json_size() {
            let tokens = self.section_mut("tokens")?;
            match old {
                Some(v) => {
                    tokens.insert(key, v);
                }
                None => {
                    tokens.shift_remove(&key);
                }
            }
            return Err(e);
        }
        Ok(id)
    }

    /// Give token `id` exactly the keyslots `keyslots` (stored as cryptsetup stores them:
    /// decimal strings, in the order given), keeping every other member of the token; checked
    /// as [`Luks2Header::add_token`] checks a token (the keyslots must exist).
    pub fn set_token_keyslots(&mut self, id: u32, keyslots: &[u32]) -> Result<()> {
        let mut token = self
            .section("tokens")?
            .get(&id.to_string())
            .cloned()
            .ok_or_else(|| FormatError::from(Luks2Error::TokenNotInUse { id }))?;
        let obj = token.as_object_mut().ok_or(Luks2Error::TokenNotObject)?;
        obj.insert("keyslots".into(), keyslot_ids(keyslots));
        self.add_token(Some(id), token).map(|_| ())
    }

    /// Remove a token.
    pub fn remove_token(&mut self, id: u32) -> Result<()> {
        self.section_mut("tokens")?
            .shift_remove(&id.to_string())
            .map(|_| ())
            .ok_or_else(|| FormatError::from(Luks2Error::TokenNotInUse { id }))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn config_flags_are_stored_known_only_in_cryptsetups_order() {
        let mut h = Luks2Header::new(&params()).unwrap();
        assert!(h.config_flags().is_empty());
        h.set_config_flags(&[
            ConfigFlag::NoWriteWorkqueue,
            ConfigFlag::Other("x-flag".into()),
            ConfigFlag::AllowDiscards,
        ])
        .unwrap();
        assert_eq!(
            h.config_flags(),
            [ConfigFlag::AllowDiscards, ConfigFlag::NoWriteWorkqueue]
        );
        assert_eq!(
            h.json()["config"]["flags"],
            serde_json::json!(["allow-discards", "no-write-workqueue"])
        );
        h.set_config_flags(&[]).unwrap();
        assert_eq!(h.json()["config"]["flags"], serde_json::json!([]));
    }

    #[test]
    fn keyslot_area_sizes() {
        // Values from cryptsetup's get_area_size (reference §1.7).
        assert_eq!(Luks2Header::keyslot_area_size(16), 65536);
        assert_eq!(Luks2Header::keyslot_area_size(32), 131072);
        assert_eq!(Luks2Header::keyslot_area_size(64), 258048);
    }

    /// A new header's parameters (aes-xts-plain64, 16 KiB metadata, 1 MiB keyslots area).
    pub(in crate::luks2) fn params() -> NewHeaderParams {
        NewHeaderParams {
            metadata_size: 0x4000,
            keyslots_size: 0x10_0000,
            data_offset: 0x20_0000,
            data_size: None,
            encryption: "aes-xts-plain64".into(),
            sector_size: 512,
            uuid: "0b2cd8f3-6d87-4a47-93c5-5f9a21f0a0c1".into(),
            label: String::new(),
            subsystem: String::new(),
            digest: Digest {
                id: 0,
                kind: DigestType::Pbkdf2,
                keyslots: vec![],
                segments: vec![0],
                hash: "sha256".into(),
                iterations: 1000,
                salt: vec![1; 32],
                digest: vec![2; 32],
            },
        }
    }

    fn keyslot(id: u32, offset: u64) -> Keyslot {
        Keyslot {
            id,
            kind: KeyslotType::Luks2,
            key_size: 64,
            af_stripes: 4000,
            af_hash: "sha256".into(),
            area_offset: offset,
            area_size: Luks2Header::keyslot_area_size(64),
            area_encryption: "aes-xts-plain64".into(),
            area_key_size: 64,
            kdf: KdfParams::Argon2 {
                variant: "argon2id".into(),
                time: 4,
                memory: 32,
                cpus: 1,
                salt: vec![3; 32],
            },
            priority: None,
        }
    }

    #[test]
    fn new_rejects_bad_parameters() {
        let bad: [fn(&mut NewHeaderParams); 7] = [
            |p| p.metadata_size = 0x3000,
            |p| p.keyslots_size = 4095,
            |p| p.keyslots_size = MAX_KEYSLOTS_SIZE + 4096,
            |p| p.label = "x".repeat(48),
            |p| p.uuid = "not-a-uuid".into(),
            |p| p.sector_size = 1000,
            |p| p.data_offset = 0x10_0000, // keyslots area would overlap the data
        ];
        for (i, f) in bad.iter().enumerate() {
            let mut p = params();
            f(&mut p);
            assert!(Luks2Header::new(&p).is_err(), "case {i}");
        }
        let h = Luks2Header::new(&params()).unwrap();
        assert_eq!(h.hdr_and_areas_size().unwrap(), 0x8000 + 0x10_0000);
        assert_eq!(h.data_offset().unwrap(), 0x20_0000);
        // Detached header (data offset 0) is allowed.
        let mut p = params();
        p.data_offset = 0;
        assert_eq!(Luks2Header::new(&p).unwrap().data_offset().unwrap(), 0);
    }

    #[test]
    fn keyslot_lifecycle_and_digest_erasure() {
        let mut h = Luks2Header::new(&params()).unwrap();
        let area = Luks2Header::keyslot_area_size(64);
        assert_eq!(h.find_keyslot_area(area).unwrap(), Some(0x8000));
        h.add_keyslot(&keyslot(3, 0x8000)).unwrap();
        assert!(h.add_keyslot(&keyslot(3, 0x8000)).is_err());
        assert!(h.add_keyslot(&keyslot(32, 0x8000)).is_err());
        assert!(h.validate().is_err(), "keyslot not yet in a digest");
        h.assign_keyslot_to_digest(3, 0).unwrap();
        h.assign_keyslot_to_digest(3, 0).unwrap();
        h.validate().unwrap();
        assert_eq!(h.digests().unwrap()[0].keyslots, vec![3]);
        assert_eq!(h.keyslot(3).unwrap().unwrap(), keyslot(3, 0x8000));
        // Next fit follows the first area; a hole at the start is reused first.
        assert_eq!(h.find_keyslot_area(area).unwrap(), Some(0x8000 + area));
        h.add_keyslot(&keyslot(5, 0x8000 + 2 * area)).unwrap();
        h.assign_keyslot_to_digest(5, 0).unwrap();
        assert_eq!(h.find_keyslot_area(area).unwrap(), Some(0x8000 + area));
        assert_eq!(
            h.find_keyslot_area(area + 4096).unwrap(),
            Some(0x8000 + 3 * area)
        );
        // Priority: prefer is stored, normal removes the member.
        h.set_keyslot_priority(5, 2).unwrap();
        assert_eq!(h.keyslot(5).unwrap().unwrap().priority, Some(2));
        h.set_keyslot_priority(5, 1).unwrap();
        assert!(!h.json["keyslots"]["5"]
            .as_object()
            .unwrap()
            .contains_key("priority"));
        assert!(h.set_keyslot_priority(5, 3).is_err());
        // Removing all keyslots keeps the digest bound to segment 0.
        h.remove_keyslot(3).unwrap();
        h.remove_keyslot(5).unwrap();
        assert!(h.remove_keyslot(5).is_err());
        assert_eq!(h.digests().unwrap().len(), 1);
        // An unbound digest disappears with its last keyslot.
        let mut d = params().digest;
        d.id = 1;
        d.segments.clear();
        h.add_digest(&d).unwrap();
        assert!(h.add_digest(&d).is_err());
        h.add_keyslot(&keyslot(0, 0x8000)).unwrap();
        h.assign_keyslot_to_digest(0, 1).unwrap();
        h.validate().unwrap();
        h.remove_keyslot(0).unwrap();
        assert_eq!(
            h.digests()
                .unwrap()
                .iter()
                .map(|d| d.id)
                .collect::<Vec<_>>(),
            vec![0]
        );
    }

    #[test]
    fn token_rules() {
        let mut h = Luks2Header::new(&params()).unwrap();
        h.add_keyslot(&keyslot(0, 0x8000)).unwrap();
        h.assign_keyslot_to_digest(0, 0).unwrap();
        let ok =
            serde_json::json!({"type": "luks2-keyring", "keyslots": ["0"], "key_description": "d"});
        assert_eq!(h.add_token(None, ok).unwrap(), 0);
        let cases = [
            serde_json::json!({"type": "luks2-other", "keyslots": []}),
            serde_json::json!({"type": "luks2-keyring", "keyslots": [], "key_description": "d", "x": 1}),
            serde_json::json!({"type": "", "keyslots": []}),
            serde_json::json!({"type": "t", "keyslots": ["7"]}),
            serde_json::json!({"type": "t"}),
            serde_json::json!(["t"]),
        ];
        for c in cases {
            assert!(h.add_token(None, c.clone()).is_err(), "{c}");
        }
        assert_eq!(
            h.add_token(None, serde_json::json!({"type": "t", "keyslots": []}))
                .unwrap(),
            1
        );
        assert!(h
            .add_token(Some(32), serde_json::json!({"type": "t", "keyslots": []}))
            .is_err());
        h.remove_keyslot(0).unwrap();
        assert!(h.tokens().unwrap()[0].keyslots.is_empty());
        h.validate().unwrap();
    }

    #[test]
    fn token_keyslot_mutators() {
        let mut h = Luks2Header::new(&params()).unwrap();
        h.add_keyslot(&keyslot(0, 0x8000)).unwrap();
        h.add_keyslot(&keyslot(2, 0x8000 + 258048)).unwrap();
        h.assign_keyslot_to_digest(0, 0).unwrap();
        h.assign_keyslot_to_digest(2, 0).unwrap();
        let t = keyring_token("d", &[]);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"type":"luks2-keyring","keyslots":[],"key_description":"d"}"#
        );
        let id = h.add_token(None, t).unwrap();
        h.set_token_keyslots(id, &[2, 0]).unwrap();
        let tok = &h.tokens().unwrap()[0];
        assert_eq!(tok.keyslots, vec![2, 0]);
        assert_eq!(tok.json["key_description"], "d");
        assert!(
            h.set_token_keyslots(id, &[1]).is_err(),
            "keyslot 1 does not exist"
        );
        assert!(
            h.set_token_keyslots(5, &[0]).is_err(),
            "token 5 does not exist"
        );
        assert_eq!(h.tokens().unwrap()[0].keyslots, vec![2, 0]);
        let imported = token_with_keyslot(serde_json::json!({"type": "x"}), 2);
        assert_eq!(
            imported,
            serde_json::json!({"type": "x", "keyslots": ["2"]})
        );
        let again = token_with_keyslot(imported.clone(), 2);
        assert_eq!(again, imported);
        let odd = serde_json::json!({"type": "x", "keyslots": "2"});
        assert_eq!(token_with_keyslot(odd.clone(), 0), odd);
        h.validate().unwrap();
    }

    #[test]
    fn uuid_form() {
        assert!(uuid_ok("28632274-8c8a-493f-835b-da802e1c576b"));
        assert!(!uuid_ok("28632274-8c8a-493f-835b-da802e1c576"));
        assert!(!uuid_ok("28632274x8c8a-493f-835b-da802e1c576b"));
    }

    /// An unknown KDF type parses (costs as json-c's `json_object_get_int64` reads them,
    /// absent ones `None`, a salt that is not a Base64 string empty) and is unusable.
    #[test]
    fn unknown_kdf_parses_and_is_unusable() {
        let ks = |kdf: Value| {
            let o = serde_json::json!({
                "type": "luks2", "key_size": 64,
                "af": {"type": "luks1", "stripes": 4000, "hash": "sha256"},
                "area": {"type": "raw", "offset": "32768", "size": "258048",
                         "encryption": "aes-xts-plain64", "key_size": 64},
                "kdf": kdf,
            });
            parse_keyslot(3, o.as_object().unwrap()).unwrap()
        };
        let salt = b64_encode(&[7u8; 32]);
        let k = ks(
            serde_json::json!({"type": "argon2", "time": 4, "memory": 32, "cpus": 1,
                                      "salt": salt}),
        );
        assert_eq!(
            k.kdf,
            KdfParams::Unknown {
                name: "argon2".into(),
                costs: UnknownKdfCosts {
                    time: Some(4),
                    memory: Some(32),
                    cpus: Some(1)
                },
                salt: vec![7; 32],
            }
        );
        assert!(matches!(
            k.check_usable(),
            Err(FormatError::Luks2(Luks2Error::KeyslotUnusable {
                id: 3,
                problem: KeyslotProblem::UnknownKdf { name },
            })) if name == "argon2"
        ));
        let k = ks(
            serde_json::json!({"type": "x", "time": " 12x", "memory": -5,
                                      "cpus": [1], "salt": 1234}),
        );
        let KdfParams::Unknown { costs, salt, .. } = &k.kdf else {
            panic!("{:?}", k.kdf)
        };
        assert_eq!(
            *costs,
            UnknownKdfCosts {
                time: Some(12),
                memory: Some(-5),
                cpus: Some(0)
            }
        );
        assert!(salt.is_empty());
        let k = ks(serde_json::json!({"type": "x"}));
        assert!(
            matches!(&k.kdf, KdfParams::Unknown { costs, .. } if *costs == UnknownKdfCosts::default())
        );
    }
}
