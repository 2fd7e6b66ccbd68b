//! A LUKS2 segment as re-encryption edits it: the typed [`Segment`] view, parsed once, with
//! the JSON object it came from (every member cryptsetup wrote, in its order) kept for the
//! write back.

use super::metadata::{parse_segment, Segment};
use super::SegmentType;
use crate::Result;
use serde_json::{Map, Value};

/// One member of the `segments` object: read through the typed view (`Deref` to
/// [`Segment`]: kind, offset, size, cipher, sector size, flags as parsed values), changed
/// only through its mutators, which keep the view and the object in step. Its
/// [`Segment::id`] is the id it was read with (0 for a segment made here); the id it gets is
/// decided where it is stored ([`super::edit::set_segments`], [`super::edit::push_segment`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentObject {
    view: Segment,
    object: Map<String, Value>,
}

impl std::ops::Deref for SegmentObject {
    type Target = Segment;
    fn deref(&self) -> &Segment {
        &self.view
    }
}

/// A u64 as LUKS2 writes it (a decimal string).
fn u64_str(x: u64) -> Value {
    Value::String(x.to_string())
}

/// A size as LUKS2 writes it: a decimal string, or `"dynamic"` for `None`.
fn size_value(size: Option<u64>) -> Value {
    size.map_or_else(|| Value::String("dynamic".into()), u64_str)
}

/// The flags of a new segment.
fn flags(in_reencryption: bool) -> Vec<String> {
    if in_reencryption {
        vec!["in-reencryption".to_string()]
    } else {
        Vec::new()
    }
}

impl SegmentObject {
    /// Parse segment `id` of a header (its members checked as the header validation does).
    pub fn parse(id: u32, object: &Map<String, Value>) -> Result<Self> {
        Ok(SegmentObject {
            view: parse_segment(id, object)?,
            object: object.clone(),
        })
    }

    /// A `crypt` segment (`json_segment_create_crypt`'s member order).
    pub fn crypt(
        offset: u64,
        iv_tweak: u64,
        size: Option<u64>,
        cipher: &str,
        sector_size: u32,
        in_reencryption: bool,
    ) -> Self {
        let mut m = Map::new();
        m.insert("type".into(), "crypt".into());
        m.insert("offset".into(), u64_str(offset));
        m.insert("size".into(), size_value(size));
        m.insert("iv_tweak".into(), u64_str(iv_tweak));
        m.insert("encryption".into(), cipher.into());
        m.insert("sector_size".into(), sector_size.into());
        if in_reencryption {
            m.insert("flags".into(), Value::Array(vec!["in-reencryption".into()]));
        }
        let view = Segment {
            id: 0,
            kind: SegmentType::Crypt,
            offset,
            size,
            iv_tweak,
            encryption: cipher.to_string(),
            sector_size,
            flags: flags(in_reencryption),
            has_integrity: false,
        };
        SegmentObject { view, object: m }
    }

    /// A `linear` segment (`json_segment_create_linear`'s member order).
    pub fn linear(offset: u64, size: Option<u64>, in_reencryption: bool) -> Self {
        let mut m = Map::new();
        m.insert("type".into(), "linear".into());
        m.insert("offset".into(), u64_str(offset));
        m.insert("size".into(), size_value(size));
        if in_reencryption {
            m.insert("flags".into(), Value::Array(vec!["in-reencryption".into()]));
        }
        let view = Segment {
            id: 0,
            kind: SegmentType::Linear,
            offset,
            size,
            iv_tweak: 0,
            encryption: String::new(),
            sector_size: 0,
            flags: flags(in_reencryption),
            has_integrity: false,
        };
        SegmentObject { view, object: m }
    }

    /// The typed view.
    pub fn view(&self) -> &Segment {
        &self.view
    }

    /// Whether it is a `crypt` segment.
    pub fn is_crypt(&self) -> bool {
        self.view.kind == SegmentType::Crypt
    }

    /// Whether it carries `flag`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.view.flags.iter().any(|f| f == flag)
    }

    /// Whether it is a backup segment (a flag starting with `backup-`).
    pub fn is_backup(&self) -> bool {
        self.view.flags.iter().any(|f| f.starts_with("backup-"))
    }

    /// Add `flag` (`LUKS2_segment_set_flag`).
    pub fn set_flag(&mut self, flag: &str) {
        let flags = self
            .object
            .entry("flags")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(a) = flags.as_array_mut() {
            a.push(flag.into());
        }
        self.view.flags.push(flag.to_string());
    }

    /// Remove `flag` (dropping an empty `flags`).
    pub fn remove_flag(&mut self, flag: &str) {
        let empty = match self.object.get_mut("flags").and_then(Value::as_array_mut) {
            Some(a) => {
                a.retain(|f| f.as_str() != Some(flag));
                a.is_empty()
            }
            None => false,
        };
        if empty {
            self.object.shift_remove("flags");
        }
        self.view.flags.retain(|f| f != flag);
    }

    /// Set the size (`None`: `"dynamic"`), keeping the member's place.
    pub fn set_size(&mut self, size: Option<u64>) {
        self.object.insert("size".into(), size_value(size));
        self.view.size = size;
    }

    /// Set the data offset (bytes on the device), keeping the member's place.
    pub fn set_offset(&mut self, offset: u64) {
        self.object.insert("offset".into(), u64_str(offset));
        self.view.offset = offset;
    }

    /// Set the IV offset (512-byte sectors), keeping the member's place (a `crypt`
    /// segment's).
    pub fn set_iv_tweak(&mut self, iv_tweak: u64) {
        self.object.insert("iv_tweak".into(), u64_str(iv_tweak));
        self.view.iv_tweak = iv_tweak;
    }

    /// The JSON object as it will be written.
    pub fn to_json(&self) -> Value {
        Value::Object(self.object.clone())
    }

    pub(crate) fn into_json(self) -> Value {
        Value::Object(self.object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_segments_parse_back_and_mutators_keep_view_and_object_in_step() {
        let mut s = SegmentObject::crypt(16 << 20, 0, None, "aes-xts-plain64", 4096, true);
        assert!(s.is_crypt() && s.has_flag("in-reencryption") && !s.is_backup());
        assert_eq!((s.offset, s.size, s.sector_size), (16 << 20, None, 4096));
        s.set_size(Some(8192));
        s.set_flag("backup-final");
        s.remove_flag("in-reencryption");
        let back = SegmentObject::parse(0, s.to_json().as_object().unwrap()).unwrap();
        assert_eq!(back, s);
        assert_eq!(
            s.to_json().to_string(),
            r#"{"type":"crypt","offset":"16777216","size":"8192","iv_tweak":"0","encryption":"aes-xts-plain64","sector_size":4096,"flags":["backup-final"]}"#
        );
        let mut l = SegmentObject::linear(4096, Some(512), false);
        l.set_flag("x");
        l.remove_flag("x");
        assert_eq!(
            l.to_json().to_string(),
            r#"{"type":"linear","offset":"4096","size":"512"}"#
        );
    }

    #[test]
    fn unknown_members_are_kept() {
        let json = r#"{"type":"crypt","offset":"0","size":"dynamic","iv_tweak":"0","encryption":"aes-xts-plain64","sector_size":512,"integrity":{"type":"hmac(sha256)"},"x-extra":1}"#;
        let v: Value = serde_json::from_str(json).unwrap();
        let s = SegmentObject::parse(3, v.as_object().unwrap()).unwrap();
        assert_eq!(s.id, 3);
        assert!(s.has_integrity);
        assert_eq!(s.to_json().to_string(), json);
    }

    #[test]
    fn malformed_segments_are_errors() {
        for json in [
            r#"{"type":"crypt","offset":"x","size":"dynamic"}"#,
            r#"{"type":"crypt","offset":"0"}"#,
            r#"{"offset":"0","size":"dynamic"}"#,
            r#"{"type":"linear","offset":"0","size":"dynamic","flags":[1]}"#,
        ] {
            let v: Value = serde_json::from_str(json).unwrap();
            assert!(
                SegmentObject::parse(0, v.as_object().unwrap()).is_err(),
                "{json}"
            );
        }
    }
}
