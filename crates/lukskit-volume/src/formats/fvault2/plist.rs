//! The few XML plist values cryptsetup reads from the encrypted metadata, found exactly as its
//! `_search_xml` finds them: the leftmost match of the POSIX regular expression
//! `<key>KEY</key><TYPE[^>]*>([^<]+)</TYPE>` in the text up to its first NUL.
//!
//! No general XML parser is used on purpose: cryptsetup does not parse the plist either, and a
//! real parser would accept (and reject) other documents than cryptsetup does. The matcher is
//! linear in the text (the text is at most one 8 KiB metadata block).
//! Also here: cryptsetup's Base64 decoder (whitespace skipped, padding strict), `strtoull(s,
//! NULL, 16)` and libuuid's `uuid_parse`.

/// The value of the property `key` of plist type `ty` (`data`, `integer`, `string`), as
/// cryptsetup's `_search_xml` finds it; `None` when nothing matches.
pub fn search<'a>(xml: &'a [u8], key: &str, ty: &str) -> Option<&'a [u8]> {
    let text = &xml[..xml.iter().position(|&b| b == 0).unwrap_or(xml.len())];
    let mut prefix = Vec::with_capacity(key.len() + ty.len() + 13);
    prefix.extend_from_slice(b"<key>");
    prefix.extend_from_slice(key.as_bytes());
    prefix.extend_from_slice(b"</key><");
    prefix.extend_from_slice(ty.as_bytes());
    let close = format!("</{ty}>");
    // Candidates in order of their start: the first that completes is the leftmost match.
    // The tail of the pattern is deterministic ([^>]* then '>' then [^<]+ then '</TYPE>').
    let mut start = 0;
    while let Some(p) = find(&text[start..], &prefix) {
        let at = start + p;
        let mut i = at + prefix.len();
        // [^>]*>
        if let Some(gt) = text[i..].iter().position(|&b| b == b'>') {
            i += gt + 1;
            // ([^<]+)
            let len = text[i..]
                .iter()
                .position(|&b| b == b'<')
                .unwrap_or(text.len() - i);
            if len > 0 && text[i + len..].starts_with(close.as_bytes()) {
                return Some(&text[i..i + len]);
            }
        }
        start = at + 1;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    // A '.' of the key is the regular expression's "any character" (the keys cryptsetup
    // searches for contain no other special character).
    hay.windows(needle.len())
        .position(|w| w.iter().zip(needle).all(|(&h, &n)| n == b'.' || h == n))
}

/// cryptsetup's `crypt_base64_decode`: standard alphabet, spaces, tabs and line ends skipped
/// anywhere, groups of four, padding only at the end of the last group, unused bits zero.
pub fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    /// A character: `Some(value)`, padding as 64, anything else `None`.
    fn val(c: u8) -> Option<u8> {
        match c {
            b'A'..=b'Z' => Some(c - b'A'),
            b'a'..=b'z' => Some(c - b'a' + 26),
            b'0'..=b'9' => Some(c - b'0' + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            b'=' => Some(PAD),
            _ => None,
        }
    }
    const PAD: u8 = 64;
    let chars: Vec<u8> = s
        .iter()
        .copied()
        .filter(|c| !b" \t\n\r".contains(c))
        .collect();
    let mut out = Vec::with_capacity(chars.len() / 4 * 3 + 3);
    let mut groups = chars.chunks(4).peekable();
    while let Some(g) = groups.next() {
        let v: Vec<u8> = g.iter().map(|&c| val(c)).collect::<Option<_>>()?;
        let last = groups.peek().is_none();
        match v[..] {
            [a, b, c, d] if a < PAD && b < PAD && c < PAD && d < PAD => {
                out.extend_from_slice(&[a << 2 | b >> 4, b << 4 | c >> 2, c << 6 | d]);
            }
            [a, b, PAD, PAD] if a < PAD && b < PAD && b & 15 == 0 && last => {
                out.push(a << 2 | b >> 4);
            }
            [a, b, c, PAD] if a < PAD && b < PAD && c < PAD && c & 3 == 0 && last => {
                out.extend_from_slice(&[a << 2 | b >> 4, b << 4 | c >> 2]);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// C's `strtoull(s, NULL, 16)`: leading white space, an optional sign, an optional `0x`,
/// then hexadecimal digits up to the first other character; 0 without digits, `u64::MAX` on
/// overflow, a `-` negates (modulo 2^64).
pub fn strtoull_hex(s: &[u8]) -> u64 {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    if s.len() > i + 2
        && s[i] == b'0'
        && (s[i + 1] == b'x' || s[i + 1] == b'X')
        && s[i + 2].is_ascii_hexdigit()
    {
        i += 2;
    }
    let mut v: u64 = 0;
    let mut any = false;
    while i < s.len() {
        let Some(d) = (s[i] as char).to_digit(16) else {
            break;
        };
        any = true;
        match v.checked_mul(16).and_then(|v| v.checked_add(u64::from(d))) {
            Some(n) => v = n,
            None => return u64::MAX,
        }
        i += 1;
    }
    if !any {
        return 0;
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// libuuid's `uuid_parse`: exactly 36 characters, hyphens at 8, 13, 18 and 23, hexadecimal
/// digits elsewhere.
pub fn parse_uuid(s: &[u8]) -> Option<[u8; 16]> {
    if s.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut n = 0;
    let mut i = 0;
    while i < 36 {
        if matches!(i, 8 | 13 | 18 | 23) {
            if s[i] != b'-' {
                return None;
            }
            i += 1;
            continue;
        }
        let hi = (s[i] as char).to_digit(16)?;
        let lo = (s[i + 1] as char).to_digit(16)?;
        out[n] = (hi * 16 + lo) as u8;
        n += 1;
        i += 2;
    }
    Some(out)
}

/// libuuid's `uuid_unparse` (lower case).
pub fn format_uuid(u: &[u8; 16]) -> String {
    let h = hex::encode(u);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_is_the_leftmost_regex_match() {
        let x = b"<key>A</key><data>x</data><key>A</key><data id=\"1\">\n YQ==\n</data>";
        assert_eq!(search(x, "A", "data"), Some(&b"x"[..]));
        let x = b"<key>A</key><data></data><key>A</key><data id=\"1\">\n YQ==\n</data>";
        assert_eq!(search(x, "A", "data"), Some(&b"\n YQ==\n"[..]));
        assert_eq!(search(b"<key>A</key> <data>x</data>", "A", "data"), None);
        assert_eq!(search(b"<key>A</key><data>x</dat", "A", "data"), None);
        assert_eq!(search(b"<key>A</key><data>x\0</data>", "A", "data"), None);
        assert_eq!(search(b"<key>A</key><datum>x</data>", "A", "data"), None);
        assert_eq!(
            search(b"<key>A</key><datax>x</data>", "A", "data"),
            Some(&b"x"[..])
        );
        assert_eq!(search(b"<key>A</key><data", "A", "data"), None);
        assert_eq!(search(b"", "A", "data"), None);
        assert_eq!(
            search(b"<key>aXb</key><string>v</string>", "a.b", "string"),
            Some(&b"v"[..])
        );
    }

    #[test]
    fn base64_as_cryptsetup() {
        assert_eq!(base64_decode(b" YW\nJj\t"), Some(b"abc".to_vec()));
        assert_eq!(base64_decode(b"YQ=="), Some(b"a".to_vec()));
        assert_eq!(base64_decode(b"YWI="), Some(b"ab".to_vec()));
        assert_eq!(base64_decode(b""), Some(vec![]));
        assert_eq!(base64_decode(b"YR=="), None);
        assert_eq!(base64_decode(b"YQ"), None);
        assert_eq!(base64_decode(b"YQ==YQ=="), None);
        assert_eq!(base64_decode(b"=QQQ"), None);
        assert_eq!(base64_decode(b"Y=Q="), None);
        assert_eq!(base64_decode(b"YQ=a"), None);
        assert_eq!(base64_decode(b"Y*=="), None);
    }

    #[test]
    fn strtoull_as_c() {
        assert_eq!(strtoull_hex(b"0xa000000"), 0xa00_0000);
        assert_eq!(strtoull_hex(b" 10zz"), 16);
        assert_eq!(strtoull_hex(b"0x"), 0);
        assert_eq!(strtoull_hex(b"zz"), 0);
        assert_eq!(strtoull_hex(b"-1"), u64::MAX);
        assert_eq!(strtoull_hex(b"11111111111111111"), u64::MAX);
        assert_eq!(strtoull_hex(b"ffffffffffffffff"), u64::MAX);
    }

    #[test]
    fn uuids() {
        let s = b"33A76CAA-1481-4BC5-8D04-1AC1707C19C0";
        let u = parse_uuid(s).unwrap();
        assert_eq!(format_uuid(&u), "33a76caa-1481-4bc5-8d04-1ac1707c19c0");
        assert_eq!(parse_uuid(b"33A76CAA-1481-4BC5-8D04-1AC1707C19C"), None);
        assert_eq!(parse_uuid(b"33A76CAA+1481-4BC5-8D04-1AC1707C19C0"), None);
        assert_eq!(parse_uuid(b"33A76CAA-1481-4BC5-8D04-1AC1707C19CG"), None);
    }
}
