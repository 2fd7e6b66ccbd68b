//! JSON helpers that reproduce json-c's and cryptsetup's conventions.

use base64::Engine;
use serde_json::{Map, Value};

/// Serialise `v` as json-c does with `JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE`.
#[cfg(test)]
pub(crate) fn to_json_c(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// Serialise an object (see [`to_json_c`]).
pub(crate) fn object_to_json_c(m: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_object(&mut out, m);
    out
}

fn write_object(out: &mut String, m: &Map<String, Value>) {
    out.push('{');
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, k);
        out.push(':');
        write_value(out, v);
    }
    out.push('}');
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // Integers print like json-c ("%" PRId64 / PRIu64). Non-integral numbers never occur in
        // cryptsetup metadata; serde_json's shortest round-trip form is used for them.
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, e);
            }
            out.push(']');
        }
        Value::Object(m) => write_object(out, m),
    }
}

/// json-c's `json_escape_str` with `NOSLASHESCAPE`: `"` `\` and the five C escapes are
/// escaped, other control characters become `\u00xx` (lower-case hex), everything else
/// (including `/` and non-ASCII UTF-8) is copied verbatim.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{c}' => out.push_str("\\f"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let b = c as u32 as usize;
                out.push_str("\\u00");
                out.push(HEX[b >> 4] as char);
                out.push(HEX[b & 0xf] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// json-c type names as used in cryptsetup's `json_contains` debug messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JType {
    Int,
    String,
    Object,
    Array,
}

impl JType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            JType::Int => "int",
            JType::String => "string",
            JType::Object => "object",
            JType::Array => "array",
        }
    }

    pub(crate) fn matches(self, v: &Value) -> bool {
        match self {
            JType::Int => is_int(v),
            JType::String => v.is_string(),
            JType::Object => v.is_object(),
            JType::Array => v.is_array(),
        }
    }
}

/// json-c `json_type_int`: an integral JSON number (no fraction, no exponent).
pub(crate) fn is_int(v: &Value) -> bool {
    matches!(v, Value::Number(n) if n.is_i64() || n.is_u64())
}

/// cryptsetup `validate_json_uint32`: an integer in `0..=u32::MAX`.
pub(crate) fn as_u32(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|x| u32::try_from(x).ok()),
        _ => None,
    }
}

/// cryptsetup `numbered()`: every character is an ASCII digit (the empty string qualifies).
pub(crate) fn numbered(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// cryptsetup `json_str_to_uint64`: `strtoull(s, &end, 10)` accepted only if the whole string
/// was consumed and no overflow occurred. Like `strtoull` it skips leading white space,
/// accepts a sign (a `-` negates modulo 2^64) and converts the empty string to 0.
pub(crate) fn str_to_u64(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut val: u64 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        val = val.checked_mul(10)?.checked_add(u64::from(b[i] - b'0'))?;
        i += 1;
    }
    if i == start {
        // No conversion: endptr = s, accepted only when s is empty.
        return if s.is_empty() { Some(0) } else { None };
    }
    if i != b.len() {
        return None;
    }
    Some(if neg { val.wrapping_neg() } else { val })
}

/// A 64-bit value in cryptsetup's encoding (`crypt_jobj_new_uint64`).
pub(crate) fn u64_value(x: u64) -> Value {
    Value::String(x.to_string())
}

/// Read a numbered decimal string (`numbered()` + `json_str_to_uint64`).
pub(crate) fn get_u64_str(v: &Value) -> Option<u64> {
    v.as_str().filter(|s| numbered(s)).and_then(str_to_u64)
}

/// Standard padded Base64 (cryptsetup `crypt_base64_encode`).
pub(crate) fn b64_encode(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Standard padded Base64 decoding (cryptsetup `crypt_base64_decode`).
pub(crate) fn b64_decode(s: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// The numeric id of an object member name (`atoi` of a validated numbered key).
pub(crate) fn key_id(k: &str) -> Option<u32> {
    if k.is_empty() || !numbered(k) {
        return None;
    }
    k.parse().ok()
}

/// Parse a JSON area the way cryptsetup does (`parse_json_len` + `validate_json_area`): the
/// text starts at byte 0 with `{`, is followed by at least one NUL, and every byte after the
/// JSON text up to the end of the area is NUL.
/// Deepest nesting of objects and arrays json-c accepts (`JSON_TOKENER_DEFAULT_DEPTH`, which
/// cryptsetup uses): the top-level object counts as level 1.
pub const MAX_JSON_DEPTH: usize = 32;

/// Refuse JSON text nested deeper than [`MAX_JSON_DEPTH`], as cryptsetup's parser does.
fn check_depth(text: &[u8]) -> Result<(), String> {
    let (mut depth, mut in_str, mut esc) = (0usize, false, false);
    for &c in text {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(format!("JSON nesting deeper than {MAX_JSON_DEPTH} levels"));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

pub(crate) fn parse_json_area(area: &[u8]) -> Result<Map<String, Value>, String> {
    if area.first() != Some(&b'{') {
        return Err("JSON area does not start with '{'".into());
    }
    let end = area
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| "missing trailing NUL byte after the JSON text".to_string())?;
    let text = &area[..end];
    check_depth(text)?;
    let m: Map<String, Value> =
        serde_json::from_slice(text).map_err(|e| format!("JSON parse error: {e}"))?;
    // json-c stops right after the closing brace; anything but NUL after it is rejected.
    if text.last() != Some(&b'}') {
        return Err(format!(
            "forbidden character found beyond JSON data at offset {}",
            text.iter().rposition(|&b| b == b'}').map_or(0, |p| p + 1)
        ));
    }
    if let Some(p) = area[end..].iter().position(|&b| b != 0) {
        return Err(format!(
            "forbidden byte 0x{:02x} found beyond JSON data at offset {}",
            area[end + p],
            end + p
        ));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_limit_is_json_c_s() {
        let nested = |arrays: usize| {
            let mut t = String::from("{\"config\":{\"x\":");
            t += &"[".repeat(arrays);
            t += &"]".repeat(arrays);
            t += "}}";
            let mut v = t.into_bytes();
            v.push(0);
            v
        };
        // Measured with cryptsetup 2.6.1: 30 arrays under config load, 31 do not.
        assert!(parse_json_area(&nested(30)).is_ok());
        assert!(parse_json_area(&nested(31)).is_err());
        // Brackets inside strings do not count.
        let mut v = format!("{{\"a\":\"{}\\\"[\"}}", "[".repeat(40)).into_bytes();
        v.push(0);
        assert!(parse_json_area(&v).is_ok());
    }

    #[test]
    fn strtoull_semantics() {
        assert_eq!(str_to_u64("12288"), Some(12288));
        assert_eq!(str_to_u64(""), Some(0));
        assert_eq!(str_to_u64("18446744073709551615"), Some(u64::MAX));
        assert_eq!(str_to_u64("18446744073709551616"), None);
        assert_eq!(str_to_u64("12a"), None);
        assert_eq!(str_to_u64(" 7"), Some(7));
        assert_eq!(str_to_u64("-1"), Some(u64::MAX));
        assert_eq!(str_to_u64(" "), None);
        assert_eq!(get_u64_str(&Value::String(" 7".into())), None);
    }

    #[test]
    fn json_c_escaping() {
        let v: Value = serde_json::from_str(r#"{"a\/b":"x/\"\\\n\u0001\u00e9"}"#).unwrap();
        assert_eq!(to_json_c(&v), "{\"a/b\":\"x/\\\"\\\\\\n\\u0001\u{e9}\"}");
        let v: Value = serde_json::from_str(r#"{"t":{},"a":[],"n":[1,-2,true,null]}"#).unwrap();
        assert_eq!(to_json_c(&v), r#"{"t":{},"a":[],"n":[1,-2,true,null]}"#);
    }

    #[test]
    fn json_area_rules() {
        let mut a = b"{\"a\":1}".to_vec();
        a.resize(32, 0);
        assert!(parse_json_area(&a).is_ok());
        let mut b = b" {\"a\":1}".to_vec();
        b.resize(32, 0);
        assert!(parse_json_area(&b).is_err());
        let mut c = b"{\"a\":1} ".to_vec();
        c.resize(32, 0);
        assert!(parse_json_area(&c).is_err());
        let mut d = b"{\"a\":1}".to_vec();
        d.resize(32, 0);
        d[20] = 1;
        assert!(parse_json_area(&d).is_err());
        assert!(parse_json_area(b"{\"a\":1}").is_err());
    }
}
