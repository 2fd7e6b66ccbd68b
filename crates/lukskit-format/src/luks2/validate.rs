//! Full LUKS2 metadata validation, in cryptsetup's order (`LUKS2_hdr_validate`).
//!
//! Every rule below mirrors a check of cryptsetup's `lib/luks2/luks2_json_metadata.c`
//! (`hdr_validate_*`), `luks2_keyslot.c` (`LUKS2_keyslots_validate`),
//! `luks2_keyslot_luks2.c` (`luks2_keyslot_validate`) and `luks2_keyslot_reenc.c`
//! (`reenc_keyslot_validate`). Like cryptsetup, header validation does not look inside
//! Base64 values (salt lengths are checked when a keyslot or digest is used, see
//! [`super::Keyslot::check_usable`] and [`super::Digest::check_usable`]).

use super::json::{self, as_u32, numbered, str_to_u64, JType};
use super::metadata::Luks2Header;
use super::{BINARY_HEADER_SIZE, MAX_KEYSLOTS_SIZE, METADATA_SIZES};
use crate::{Luks2Error, Result};
use serde_json::{Map, Value};

type Obj = Map<String, Value>;
type VResult<T> = std::result::Result<T, String>;

/// `json_contains`: member `key` of `obj` exists and has type `t`.
fn contains<'a>(obj: &'a Value, ctx: &str, key: &str, t: JType) -> VResult<&'a Value> {
    match obj.get(key) {
        Some(v) if t.matches(v) => Ok(v),
        Some(_) => Err(format!("{ctx}: \"{key}\" is not of type {}.", t.name())),
        None => Err(format!("{ctx}: missing \"{key}\" ({}).", t.name())),
    }
}

/// `json_contains_string`: a non-empty string member.
fn contains_string<'a>(obj: &'a Value, ctx: &str, key: &str) -> VResult<&'a str> {
    let s = contains(obj, ctx, key, JType::String)?
        .as_str()
        .unwrap_or("");
    if s.is_empty() {
        return Err(format!("{ctx}: \"{key}\" is an empty string."));
    }
    Ok(s)
}

fn top<'a>(hdr: &'a Obj, key: &str) -> VResult<&'a Obj> {
    match hdr.get(key) {
        Some(Value::Object(o)) => Ok(o),
        Some(_) => Err(format!("JSON area: \"{key}\" is not an object.")),
        None => Err(format!("JSON area: missing \"{key}\" section.")),
    }
}

fn check_numbered(what: &str, key: &str) -> VResult<()> {
    if numbered(key) {
        Ok(())
    } else {
        Err(format!("{what} \"{key}\" is not in numbered form."))
    }
}

/// `atoi` of a member name that passed `numbered()`.
fn atoi(key: &str) -> i64 {
    key.parse::<i64>()
        .unwrap_or(if key.is_empty() { 0 } else { i64::MAX })
}

/// `crypt_jobj_get_uint64`: strtoull of a string member, 0 on failure.
fn jobj_u64(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_str).and_then(str_to_u64).unwrap_or(0)
}

/// `LUKS2_array_jobj`: whether an array holds the string `num`.
fn array_has(arr: Option<&Value>, num: &str) -> bool {
    arr.and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(num)))
}

/// `validate_keyslots_array` / `validate_segments_array`: every element is a string naming an
/// existing object in `section`.
fn validate_ref_array(arr: &[Value], section: &Obj, ctx: &str, what: &str) -> VResult<()> {
    for (i, e) in arr.iter().enumerate() {
        let s = e
            .as_str()
            .ok_or_else(|| format!("{ctx}: illegal value type in {what} array at index {i}."))?;
        if !section.get(s).is_some_and(Value::is_object) {
            return Err(format!("{ctx}: references missing {what} \"{s}\"."));
        }
    }
    Ok(())
}

fn segment_flags(seg: &Value) -> impl Iterator<Item = &str> {
    seg.get("flags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `json_segment_is_backup`: a flag starting with `backup-`.
fn segment_is_backup(seg: &Value) -> bool {
    segment_flags(seg).any(|f| f.starts_with("backup-"))
}

fn segment_has_flag(seg: &Value, flag: &str) -> bool {
    segment_flags(seg).any(|f| f == flag)
}

/// `reencrypt_candidate_flag`: `online-reencrypt` or `online-reencrypt-v<digits>`.
fn reencrypt_candidate_flag(flag: &str) -> bool {
    if flag == "online-reencrypt" {
        return true;
    }
    flag.strip_prefix("online-reencrypt-v")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// `hdr_validate_requirements`.
fn validate_requirements(hdr: &Obj) -> VResult<()> {
    let config = top(hdr, "config")?;
    let mut online = 0;
    if let Some(req) = config.get("requirements") {
        if !req.is_object() {
            return Err(
                "Config: \"requirements\" must be an object holding a \"mandatory\" array.".into(),
            );
        }
        if let Some(m) = req.get("mandatory") {
            let a = m
                .as_array()
                .ok_or("Config: \"requirements.mandatory\" is not an array.")?;
            for r in a {
                let s = r
                    .as_str()
                    .ok_or("Config: \"requirements.mandatory\" holds a non-string value.")?;
                if reencrypt_candidate_flag(s) {
                    online += 1;
                }
            }
        }
    }
    if online > 1 {
        return Err("Multiple online reencryption requirement flags detected.".into());
    }
    Ok(())
}

/// `hdr_validate_tokens` / `LUKS2_token_validate`.
fn validate_tokens(hdr: &Obj) -> VResult<()> {
    let tokens = top(hdr, "tokens")?;
    for (k, v) in tokens {
        check_numbered("Token", k)?;
        let keyslots = hdr
            .get("keyslots")
            .ok_or("JSON area: missing \"keyslots\" section.")?;
        let ctx = format!("Token {k}");
        contains_string(v, &ctx, "type")?;
        let arr = contains(v, &ctx, "keyslots", JType::Array)?;
        let ks = keyslots
            .as_object()
            .ok_or("JSON area: \"keyslots\" is not an object.")?;
        validate_ref_array(arr.as_array().map_or(&[], |a| a), ks, &ctx, "keyslot")?;
    }
    Ok(())
}

/// `hdr_validate_digests`.
fn validate_digests(hdr: &Obj) -> VResult<()> {
    let digests = top(hdr, "digests")?;
    let keyslots = top(hdr, "keyslots")?;
    let segments = top(hdr, "segments")?;
    for (k, v) in digests {
        check_numbered("Digest", k)?;
        let ctx = format!("Digest {k}");
        contains_string(v, &ctx, "type")?;
        let ks = contains(v, &ctx, "keyslots", JType::Array)?;
        let segs = contains(v, &ctx, "segments", JType::Array)?;
        validate_ref_array(ks.as_array().map_or(&[], |a| a), keyslots, &ctx, "keyslot")?;
        validate_ref_array(
            segs.as_array().map_or(&[], |a| a),
            segments,
            &ctx,
            "segment",
        )?;
    }
    Ok(())
}

/// `hdr_validate_crypt_segment`.
fn validate_crypt_segment(seg: &Value, key: &str, digests: &Obj, size: u64) -> VResult<()> {
    let ctx = format!("Segment {key}");
    let iv = contains_string(seg, &ctx, "iv_tweak")?;
    contains_string(seg, &ctx, "encryption")?;
    let ss = contains(seg, &ctx, "sector_size", JType::Int)?;
    if let Some(integrity) = seg.get("integrity") {
        if !integrity.is_object() {
            return Err(format!("{ctx}: \"integrity\" is not an object."));
        }
        let ictx = format!("Segment {key} integrity");
        contains_string(integrity, &ictx, "type")?;
        contains_string(integrity, &ictx, "journal_encryption")?;
        contains_string(integrity, &ictx, "journal_integrity")?;
    }
    let sector_size =
        as_u32(ss).ok_or_else(|| format!("{ctx}: illegal field \"sector_size\":{ss}."))?;
    if sector_size == 0 || !sector_size.is_multiple_of(512) {
        return Err(format!("{ctx}: illegal sector size {sector_size}."));
    }
    if !numbered(iv) || str_to_u64(iv).is_none() {
        return Err(format!("{ctx}: illegal iv_tweak value."));
    }
    if !size.is_multiple_of(u64::from(sector_size)) {
        return Err(format!(
            "{ctx}: size field has to be aligned to sector size {sector_size}."
        ));
    }
    if !digests.values().any(|d| array_has(d.get("segments"), key)) {
        return Err(format!(
            "Crypt segment {key} is not assigned to a key digest."
        ));
    }
    Ok(())
}

/// `json_segment_cmp`: same type and, for crypt segments, same sector size and cipher.
fn segment_cmp(a: &Value, b: &Value) -> bool {
    let (Some(ta), Some(tb)) = (
        a.get("type").and_then(Value::as_str),
        b.get("type").and_then(Value::as_str),
    ) else {
        return false;
    };
    if ta != tb {
        return false;
    }
    if ta == "crypt" {
        let ss = |s: &Value| s.get("sector_size").and_then(Value::as_i64).unwrap_or(-1);
        let cipher = |s: &Value| {
            s.get("encryption")
                .and_then(Value::as_str)
                .unwrap_or("null")
                .to_string()
        };
        return ss(a) == ss(b) && cipher(a) == cipher(b);
    }
    true
}

/// `validate_reencrypt_segments`.
fn validate_reencrypt_segments(
    hdr: &Obj,
    segments: &Obj,
    first_backup: i64,
    count: i64,
) -> VResult<()> {
    let online = [
        "online-reencrypt",
        "online-reencrypt-v2",
        "online-reencrypt-v3",
    ];
    let reqs_online = hdr
        .get("config")
        .and_then(|c| c.get("requirements"))
        .and_then(|r| r.get("mandatory"))
        .and_then(Value::as_array)
        .is_some_and(|a| {
            a.iter()
                .any(|r| r.as_str().is_some_and(|s| online.contains(&s)))
        });
    if !reqs_online {
        return Ok(());
    }
    let get = |i: i64| segments.get(&i.to_string());
    let mut final_seg = None;
    let mut previous = None;
    for i in first_backup..count {
        let s = get(i).ok_or_else(|| format!("Gap at key {i} in segments object."))?;
        if segment_has_flag(s, "backup-final") {
            final_seg = Some(s);
        } else if segment_has_flag(s, "backup-previous") {
            previous = Some(s);
        }
    }
    let (Some(fin), Some(prev)) = (final_seg, previous) else {
        return Err("Backup segment is missing.".into());
    };
    for i in 0..first_backup {
        let s = get(i).ok_or_else(|| format!("Gap at key {i} in segments object."))?;
        if segment_has_flag(s, "in-reencryption") {
            if !segment_cmp(s, fin) {
                return Err("Segment in reencryption does not match backup final segment.".into());
            }
            continue;
        }
        if !segment_cmp(s, fin) && !segment_cmp(s, prev) {
            return Err(
                "Segment does not match neither backup final or backup previous segment.".into(),
            );
        }
    }
    Ok(())
}

/// `hdr_validate_segments`.
fn validate_segments(hdr: &Obj) -> VResult<()> {
    let segments = top(hdr, "segments")?;
    let count = segments.len() as i64;
    if count < 1 {
        return Err("Empty segments section.".into());
    }
    let digests = hdr
        .get("digests")
        .and_then(Value::as_object)
        .ok_or("JSON area: missing \"digests\" section.")?;
    let mut first_backup: i64 = -1;
    for (k, v) in segments {
        check_numbered("Segment", k)?;
        let ctx = format!("Segment {k}");
        let ty = contains_string(v, &ctx, "type")?;
        let off_s = contains_string(v, &ctx, "offset")?;
        let size_s = contains_string(v, &ctx, "size")?;
        if !numbered(off_s) {
            return Err(format!(
                "{ctx}: offset \"{off_s}\" is not in numbered form."
            ));
        }
        let offset =
            str_to_u64(off_s).ok_or_else(|| format!("{ctx}: illegal segment offset value."))?;
        let size = if size_s == "dynamic" {
            0
        } else {
            if !numbered(size_s) {
                return Err(format!("{ctx}: size \"{size_s}\" is not in numbered form."));
            }
            match str_to_u64(size_s) {
                Some(s) if s != 0 => s,
                _ => return Err(format!("{ctx}: illegal segment size value.")),
            }
        };
        if !offset.is_multiple_of(512) {
            return Err(format!(
                "{ctx}: offset field has to be aligned to sector size 512."
            ));
        }
        if !size.is_multiple_of(512) {
            return Err(format!(
                "{ctx}: size field has to be aligned to sector size 512."
            ));
        }
        if let Some(f) = v.get("flags") {
            let a = f
                .as_array()
                .ok_or_else(|| format!("{ctx}: \"flags\" is not an array."))?;
            if a.iter().any(|e| !e.is_string()) {
                return Err(format!("{ctx}: \"flags\" holds a non-string value."));
            }
        }
        let i = atoi(k);
        if segment_is_backup(v) {
            if first_backup < 0 || i < first_backup {
                first_backup = i;
            }
        } else if first_backup >= 0 && i >= first_backup {
            return Err(format!(
                "Regular segment at {i} is behind backup segment at {first_backup}."
            ));
        }
        if ty == "crypt" {
            validate_crypt_segment(v, k, digests, size)?;
        }
        if ty.starts_with("hw-opal") {
            if size == 0 {
                return Err(format!(
                    "{ctx}: segment type {ty} does not support dynamic size."
                ));
            }
            contains(v, &ctx, "opal_segment_number", JType::Int)?;
            contains(v, &ctx, "opal_key_size", JType::Int)?;
            let os = contains_string(v, &ctx, "opal_segment_size")?;
            if !numbered(os) {
                return Err(format!("{ctx}: opal_segment_size is not in numbered form."));
            }
            let opal_size = match str_to_u64(os) {
                Some(s) if s != 0 => s,
                _ => return Err(format!("{ctx}: illegal OPAL segment size value.")),
            };
            if size > opal_size {
                return Err(format!(
                    "{ctx}: segment size overflows OPAL locking range size."
                ));
            }
            if ty == "hw-opal-crypt" {
                validate_crypt_segment(v, k, digests, size)?;
            }
        }
    }
    if first_backup == 0 {
        return Err("No regular segment.".into());
    }
    if first_backup >= count {
        return Err(format!(
            "Gap between last regular segment and backup segment at key {first_backup}."
        ));
    }
    if first_backup < 0 {
        first_backup = count;
    }
    let mut intervals = Vec::with_capacity(first_backup as usize);
    for i in 0..first_backup {
        let s = segments
            .get(&i.to_string())
            .ok_or_else(|| format!("Gap at key {i} in segments object."))?;
        let offset = jobj_u64(s.get("offset"));
        let len = match jobj_u64(s.get("size")) {
            0 => u64::MAX,
            l => l,
        };
        intervals.push((offset, len));
    }
    let n = intervals.len();
    for (i, &(off_i, len_i)) in intervals.iter().enumerate() {
        if len_i == u64::MAX && i != n - 1 {
            return Err("Only the last regular segment is allowed to have 'dynamic' size.".into());
        }
        for (j, &(off_j, len_j)) in intervals.iter().enumerate() {
            if i == j {
                continue;
            }
            if len_j != u64::MAX && off_j.checked_add(len_j).is_none() {
                return Err("Segment offset+length overflow.".into());
            }
            if off_i >= off_j && (len_j == u64::MAX || off_i < off_j + len_j) {
                return Err(format!(
                    "Overlapping segments [{off_i},{}] and [{off_j},{}].",
                    off_i.wrapping_add(len_i),
                    off_j.wrapping_add(len_j)
                ));
            }
        }
    }
    for i in first_backup..count {
        if !segments.contains_key(&i.to_string()) {
            return Err(format!("Gap at key {i} in segments object."));
        }
    }
    validate_reencrypt_segments(hdr, segments, first_backup, count)
}

/// `hdr_validate_keyslots` / `LUKS2_keyslot_validate`.
fn validate_keyslots(hdr: &Obj) -> VResult<()> {
    let keyslots = top(hdr, "keyslots")?;
    for (k, v) in keyslots {
        check_numbered("Keyslot", k)?;
        let ctx = format!("Keyslot {k}");
        contains_string(v, &ctx, "type")?;
        let ks = contains(v, &ctx, "key_size", JType::Int)?;
        if as_u32(ks).is_none() {
            return Err(format!("{ctx}: illegal field \"key_size\":{ks}."));
        }
    }
    Ok(())
}

/// The minimal offset of the regular segments, 0 if any is 0 (`json_segments_get_minimal_offset`).
fn minimal_segment_offset(hdr: &Obj) -> u64 {
    let Some(segments) = hdr.get("segments").and_then(Value::as_object) else {
        return 0;
    };
    let mut min = u64::MAX;
    for s in segments.values() {
        if segment_is_backup(s) {
            continue;
        }
        let o = jobj_u64(s.get("offset"));
        if o == 0 {
            return 0;
        }
        min = min.min(o);
    }
    min
}

/// `hdr_validate_config`.
fn validate_config(hdr: &Obj) -> VResult<()> {
    let config = Value::Object(top(hdr, "config")?.clone());
    let js = contains_string(&config, "Config", "json_size")?;
    let json_size = str_to_u64(js).ok_or("Config: illegal json_size value.")?;
    let metadata_size = json_size.wrapping_add(BINARY_HEADER_SIZE as u64);
    let kss = contains_string(&config, "Config", "keyslots_size")?;
    let keyslots_size = str_to_u64(kss).ok_or("Config: illegal keyslots_size value.")?;
    if !METADATA_SIZES.contains(&metadata_size) {
        return Err(format!("Unsupported LUKS2 header size ({metadata_size})."));
    }
    if !keyslots_size.is_multiple_of(4096) || keyslots_size > MAX_KEYSLOTS_SIZE {
        return Err(format!(
            "Unsupported LUKS2 keyslots size ({keyslots_size})."
        ));
    }
    let segment_offset = minimal_segment_offset(hdr);
    if segment_offset != 0
        && (segment_offset < keyslots_size || segment_offset - keyslots_size < 2 * metadata_size)
    {
        return Err(format!(
            "keyslots_size is too large {keyslots_size} (bytes). Data offset: {segment_offset}, keyslots offset: {}.",
            2 * metadata_size
        ));
    }
    if let Some(f) = config.get("flags") {
        let a = f.as_array().ok_or("Config: \"flags\" is not an array.")?;
        if a.iter().any(|e| !e.is_string()) {
            return Err("Config: \"flags\" holds a non-string value.".into());
        }
    }
    Ok(())
}

/// `hdr_validate_areas` / `validate_intervals`.
fn validate_areas(hdr: &Obj) -> VResult<()> {
    let keyslots = top(hdr, "keyslots")?;
    top(hdr, "segments")?;
    let config = hdr.get("config");
    let metadata_size =
        jobj_u64(config.and_then(|c| c.get("json_size"))).wrapping_add(BINARY_HEADER_SIZE as u64);
    let keyslots_size = jobj_u64(config.and_then(|c| c.get("keyslots_size")));
    let end = (2 * metadata_size).wrapping_add(keyslots_size);
    let mut ix = Vec::with_capacity(keyslots.len());
    for (k, v) in keyslots {
        let ctx = format!("Keyslot {k}");
        let area = contains(v, &ctx, "area", JType::Object)?;
        let actx = format!("Keyslot {k} area");
        contains_string(area, &actx, "type")?;
        let o = contains_string(area, &actx, "offset")?;
        let s = contains_string(area, &actx, "size")?;
        if !numbered(o) || !numbered(s) {
            return Err(format!("{actx}: offset/size not in numbered form."));
        }
        match (str_to_u64(o), str_to_u64(s)) {
            (Some(o), Some(s)) => ix.push((o, s, k.as_str())),
            _ => return Err(format!("{actx}: illegal keyslot area values.")),
        }
    }
    for (i, &(off, len, k)) in ix.iter().enumerate() {
        if off < 2 * metadata_size {
            return Err(format!(
                "Keyslot {k}: area offset {off} lies inside the metadata (below {}).",
                2 * metadata_size
            ));
        }
        if len == 0 {
            return Err(format!(
                "Keyslot {k}: area length must be greater than zero."
            ));
        }
        let Some(area_end) = off.checked_add(len) else {
            return Err(format!("Keyslot {k}: area offset+length overflow."));
        };
        if area_end > end {
            return Err(format!(
                "Keyslot {k}: area [{off}, {area_end}] overflows binary keyslots area (ends at offset: {end})."
            ));
        }
        for (j, &(off_j, len_j, k_j)) in ix.iter().enumerate() {
            if i == j {
                continue;
            }
            let Some(end_j) = off_j.checked_add(len_j) else {
                return Err(format!("Keyslot {k_j}: area offset+length overflow."));
            };
            if off >= off_j && off < end_j {
                return Err(format!(
                    "Overlapping keyslot areas: keyslot {k} [{off},{area_end}] and keyslot {k_j} [{off_j},{end_j}]."
                ));
            }
        }
    }
    Ok(())
}

/// `hdr_validate_json_size`.
fn validate_json_size(hdr: &Obj, hdr_json_size: u64) -> VResult<()> {
    let json_area_size = jobj_u64(hdr.get("config").and_then(|c| c.get("json_size")));
    if hdr_json_size != json_area_size {
        return Err(format!(
            "JSON area size ({json_area_size}) does not match value in binary header ({hdr_json_size})."
        ));
    }
    let len = json::object_to_json_c(hdr).len() as u64;
    if len > json_area_size {
        return Err(format!(
            "JSON does not fit in the designated area ({len} > {json_area_size} bytes)."
        ));
    }
    Ok(())
}

/// `luks2_keyslot_validate` (type `luks2`).
fn validate_luks2_keyslot(k: &str, v: &Value) -> VResult<()> {
    let ctx = format!("Keyslot {k}");
    let (Some(kdf), Some(af), Some(area)) = (v.get("kdf"), v.get("af"), v.get("area")) else {
        return Err(format!("{ctx}: missing kdf, af or area object."));
    };
    let kdf_o = kdf
        .as_object()
        .ok_or_else(|| format!("{ctx}: \"kdf\" is not an object."))?;
    let count = kdf_o.len();
    let kctx = format!("Keyslot {k} kdf");
    let ty = contains_string(kdf, &kctx, "type")?;
    match ty {
        "pbkdf2" => {
            if count != 4 {
                return Err(format!(
                    "{kctx}: pbkdf2 needs exactly type, hash, iterations and salt ({count} members)."
                ));
            }
            contains_string(kdf, &kctx, "hash")?;
            contains(kdf, &kctx, "iterations", JType::Int)?;
            contains_string(kdf, &kctx, "salt")?;
        }
        "argon2i" | "argon2id" => {
            if count != 5 {
                return Err(format!(
                    "{kctx}: {ty} needs exactly type, time, memory, cpus and salt ({count} members)."
                ));
            }
            contains(kdf, &kctx, "time", JType::Int)?;
            contains(kdf, &kctx, "memory", JType::Int)?;
            contains(kdf, &kctx, "cpus", JType::Int)?;
            contains_string(kdf, &kctx, "salt")?;
        }
        _ => {}
    }
    let afctx = format!("Keyslot {k} af");
    match af.get("type").and_then(Value::as_str) {
        Some("luks1") => {
            contains_string(af, &afctx, "hash")?;
            contains(af, &afctx, "stripes", JType::Int)?;
        }
        _ => return Err(format!("{afctx}: type must be luks1.")),
    }
    let actx = format!("Keyslot {k} area");
    match area.get("type").and_then(Value::as_str) {
        Some("raw") => {
            contains_string(area, &actx, "encryption")?;
            contains(area, &actx, "key_size", JType::Int)?;
            contains_string(area, &actx, "offset")?;
            contains_string(area, &actx, "size")?;
        }
        _ => return Err(format!("{actx}: type must be raw.")),
    }
    Ok(())
}

/// `reenc_keyslot_validate` (type `reencrypt`).
fn validate_reencrypt_keyslot(k: &str, v: &Value) -> VResult<()> {
    let ctx = format!("Keyslot {k}");
    let area = v
        .get("area")
        .ok_or_else(|| format!("{ctx}: missing area."))?;
    let ty = area
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{ctx}: missing area type."))?;
    let ks = contains(v, &ctx, "key_size", JType::Int)?;
    let mode = contains_string(v, &ctx, "mode")?;
    let direction = contains_string(v, &ctx, "direction")?;
    if as_u32(ks) != Some(1) {
        return Err(format!("{ctx}: illegal reencrypt key size."));
    }
    if !["reencrypt", "encrypt", "decrypt"].contains(&mode) {
        return Err(format!("{ctx}: illegal reencrypt mode {mode}."));
    }
    if !["forward", "backward"].contains(&direction) {
        return Err(format!("{ctx}: illegal reencrypt direction {direction}."));
    }
    let actx = format!("Keyslot {k} area");
    if ty == "checksum" || ty == "datashift-checksum" {
        contains_string(area, &actx, "hash")?;
        let ss = contains(area, &actx, "sector_size", JType::Int)?;
        let ss = as_u32(ss).ok_or_else(|| format!("{actx}: illegal sector_size."))?;
        if ss < 512 || !ss.is_power_of_two() {
            return Err(format!(
                "{actx}: invalid sector_size ({ss}) for checksum resilience mode."
            ));
        }
    } else if ty == "datashift" || ty == "datashift-journal" {
        let s = contains_string(area, &actx, "shift_size")?;
        let shift = str_to_u64(s).unwrap_or(0);
        if shift == 0 || !shift.is_multiple_of(512) {
            return Err(format!(
                "{actx}: shift size field has to be non-zero and aligned to 512 bytes."
            ));
        }
    }
    Ok(())
}

/// The `config.requirements.mandatory` flags (strings only; validated before).
fn mandatory_flags(hdr: &Obj) -> impl Iterator<Item = &str> {
    hdr.get("config")
        .and_then(|c| c.get("requirements"))
        .and_then(|r| r.get("mandatory"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `LUKS2_keyslots_validate`: per-type validation; a `luks2` keyslot must be assigned to
/// exactly one digest. Keyslots of unknown types are not checked further. Then the
/// reencryption keyslot and the requirement flags must go together: a known online
/// reencryption flag needs a `reencrypt` keyslot, a `reencrypt` keyslot needs a flag that looks
/// like one (`online-reencrypt` or `online-reencrypt-v<digits>`, a future version included),
/// and there is at most one `reencrypt` keyslot.
fn validate_keyslot_types(hdr: &Obj) -> VResult<()> {
    let keyslots = top(hdr, "keyslots")?;
    let digests = hdr.get("digests").and_then(Value::as_object);
    let mut reencrypt_count = 0;
    for (k, v) in keyslots {
        match v.get("type").and_then(Value::as_str) {
            Some("luks2") => {
                validate_luks2_keyslot(k, v)?;
                let n = digests
                    .map(|d| {
                        d.values()
                            .filter(|d| array_has(d.get("keyslots"), k))
                            .count()
                    })
                    .unwrap_or(0);
                if n != 1 {
                    return Err(format!(
                        "Keyslot {k} is not assigned to exactly 1 digest ({n})."
                    ));
                }
            }
            Some("reencrypt") => {
                validate_reencrypt_keyslot(k, v)?;
                reencrypt_count += 1;
            }
            _ => {}
        }
    }
    let known_online = [
        "online-reencrypt",
        "online-reencrypt-v2",
        "online-reencrypt-v3",
    ];
    if reencrypt_count == 0 && mandatory_flags(hdr).any(|f| known_online.contains(&f)) {
        return Err("Missing reencryption keyslot.".into());
    }
    if reencrypt_count > 0 && !mandatory_flags(hdr).any(reencrypt_candidate_flag) {
        return Err("Missing reencryption requirement flag.".into());
    }
    if reencrypt_count > 1 {
        return Err("Too many reencryption keyslots.".into());
    }
    Ok(())
}

/// `LUKS2_hdr_validate` on a JSON object whose binary header announces a JSON area of
/// `hdr_json_size` bytes.
pub(crate) fn validate_json(hdr: &Obj, hdr_json_size: u64) -> VResult<()> {
    validate_requirements(hdr)?;
    validate_tokens(hdr)?;
    validate_digests(hdr)?;
    validate_segments(hdr)?;
    validate_keyslots(hdr)?;
    validate_config(hdr)?;
    validate_areas(hdr)?;
    validate_json_size(hdr, hdr_json_size)?;
    validate_keyslot_types(hdr)
}

/// `LUKS2_hdr_repair`: purge KDF members the keyslot's KDF type does not use (a glitch of
/// cryptsetup < 2.0.3). Run by the reader only on metadata that failed validation.
pub(crate) fn repair_json(hdr: &mut Obj) {
    let Some(Value::Object(keyslots)) = hdr.get_mut("keyslots") else {
        return;
    };
    for ks in keyslots.values_mut() {
        if ks.get("type").and_then(Value::as_str) != Some("luks2") {
            continue;
        }
        let Some(Value::Object(kdf)) = ks.get_mut("kdf") else {
            continue;
        };
        let keep: &[&str] = match kdf.get("type").and_then(Value::as_str) {
            Some("pbkdf2") => &["type", "salt", "hash", "iterations"],
            Some("argon2i") | Some("argon2id") => &["type", "salt", "time", "memory", "cpus"],
            _ => continue,
        };
        kdf.retain(|k, _| keep.contains(&k.as_str()));
    }
}

impl Luks2Header {
    /// Full cryptsetup validation (`LUKS2_hdr_validate` order): requirements, tokens, digests,
    /// segments, keyslots, config, keyslot areas, JSON size against the binary header, then
    /// per-type keyslot checks. The error names the first rule broken.
    pub fn validate(&self) -> Result<()> {
        let json_size = self.json_area_size();
        validate_json(&self.json, json_size).map_err(|e| Luks2Error::Validation(e).into())
    }

    /// Replace the whole JSON metadata with `json` (a header made from another format, as
    /// `convert` does), only if the result validates; otherwise nothing changes.
    pub(crate) fn replace_json(&mut self, json: Map<String, Value>) -> Result<()> {
        let old = std::mem::replace(&mut self.json, json);
        if let Err(e) = self.validate() {
            self.json = old;
            return Err(e);
        }
        Ok(())
    }

    /// [`Self::validate`] plus cryptsetup's device size check (`device_check_size`): both
    /// metadata copies and the keyslots area must fit a device of `device_size` bytes.
    pub fn validate_for_device(&self, device_size: u64) -> Result<()> {
        self.validate()?;
        let need = self.hdr_and_areas_size()?;
        if device_size < need {
            return Err(Luks2Error::DeviceTooSmall { need }.into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reencrypt_flags() {
        assert!(reencrypt_candidate_flag("online-reencrypt"));
        assert!(reencrypt_candidate_flag("online-reencrypt-v12"));
        assert!(!reencrypt_candidate_flag("online-reencrypt-v"));
        assert!(!reencrypt_candidate_flag("online-reencrypt-vx"));
        assert!(!reencrypt_candidate_flag("offline-reencrypt"));
    }
}
