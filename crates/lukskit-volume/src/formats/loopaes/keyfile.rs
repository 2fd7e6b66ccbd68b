//! loop-AES key files as cryptsetup's `LOOPAES_parse_keyfile` reads them: text lines (LF or
//! CR ends a line, empty lines between keys are skipped), 1, 64 or 65 keys of one length,
//! the last line terminated; each key is hashed to the key size (`--hash`, by default sha256,
//! sha384 or sha512 for 128-, 192- and 256-bit keys) and its first byte XORed with a tweak
//! (0x55 for 64 keys, 0xF4 for 65, none for one key).

use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::SecretBuf;

/// The most keys a key file has (64 keys and the IV seed).
pub const KEYS_MAX: usize = 65;

/// Why a key file was refused, with cryptsetup's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyFileError {
    /// Empty.
    Empty,
    /// An ASCII-armoured GPG message: cryptsetup wants it decrypted first.
    Gpg,
    /// Not 1, 64 or 65 terminated lines of one length.
    Incompatible,
    /// No such hash, or one too short for the key size ("Key processing error").
    KeyProcessing(String),
}

impl std::fmt::Display for KeyFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyFileError::Empty => f.write_str("empty key file"),
            KeyFileError::Gpg => f.write_str(
                "Detected not yet supported GPG encrypted keyfile.\n\
                 Please use gpg --decrypt <KEYFILE> | cryptsetup --keyfile=- ...",
            ),
            KeyFileError::Incompatible => f.write_str("Incompatible loop-AES keyfile detected."),
            KeyFileError::KeyProcessing(h) => {
                write!(f, "Key processing error (using hash {h}).")
            }
        }
    }
}

/// The keys of a key file, hashed: `count` keys of `key_len` bytes, in order.
pub struct Keys {
    /// How many keys (1, 64 or 65).
    pub count: usize,
    /// All keys, concatenated.
    pub keys: SecretBuf,
}

/// Parse `buf` (a key file's contents) and derive `key_len`-byte keys with `hash` (its
/// cryptsetup name) or the default of the key size.
pub fn parse(buf: &[u8], key_len: usize, hash: Option<&str>) -> Result<Keys, KeyFileError> {
    if buf.is_empty() {
        return Err(KeyFileError::Empty);
    }
    // keyfile_is_gpg(): the first 100 bytes (fewer for a shorter file: all but the last
    // byte), up to a NUL.
    let head = &buf[..buf.len().saturating_sub(1).min(100)];
    let head = &head[..head.iter().position(|&b| b == 0).unwrap_or(head.len())];
    if head
        .windows(b"BEGIN PGP MESSAGE".len())
        .any(|w| w == b"BEGIN PGP MESSAGE")
    {
        return Err(KeyFileError::Gpg);
    }
    let sep = |b: u8| b == 0 || b == b'\n' || b == b'\r';
    let mut keys: Vec<&[u8]> = Vec::with_capacity(KEYS_MAX);
    let mut off = 0;
    while off < buf.len() && keys.len() < KEYS_MAX {
        let len = buf[off..].iter().position(|&b| sep(b));
        let Some(len) = len else {
            // "Unterminated key".
            return Err(KeyFileError::Incompatible);
        };
        keys.push(&buf[off..off + len]);
        off += len;
        while off < buf.len() && sep(buf[off]) {
            off += 1;
        }
    }
    let key_in = keys.first().map_or(0, |k| k.len());
    if off != buf.len()
        || key_in == 0
        || keys.iter().any(|k| k.len() != key_in)
        || !matches!(keys.len(), 1 | 64 | 65)
    {
        return Err(KeyFileError::Incompatible);
    }
    let hash_name = match (hash, key_len) {
        (Some(h), _) => h,
        (None, 16) => "sha256",
        (None, 24) => "sha384",
        (None, 32) => "sha512",
        (None, _) => "[none]",
    };
    let alg = HashAlg::from_name(hash_name)
        .ok()
        .filter(|a| key_len > 0 && a.digest_size() >= key_len)
        .ok_or_else(|| KeyFileError::KeyProcessing(hash_name.to_string()))?;
    let tweak = match keys.len() {
        64 => 0x55,
        65 => 0xF4,
        _ => 0,
    };
    let mut out = SecretBuf::zeroed(key_len * keys.len());
    for (k, dst) in keys
        .iter()
        .zip(out.as_mut_bytes().chunks_exact_mut(key_len))
    {
        let mut d = alg.digest(&[k]);
        dst.copy_from_slice(&d[..key_len]);
        dst[0] ^= tweak;
        zeroize::Zeroize::zeroize(&mut d);
    }
    Ok(Keys {
        count: keys.len(),
        keys: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| format!("key{i:04}\n").into_bytes())
            .collect()
    }

    #[test]
    fn counts_lengths_and_terminators() {
        assert_eq!(parse(&lines(1), 16, None).unwrap().count, 1);
        assert_eq!(parse(&lines(64), 16, None).unwrap().count, 64);
        assert_eq!(parse(&lines(65), 32, None).unwrap().count, 65);
        for bad in [
            lines(2),
            lines(63),
            lines(66),
            b"abc".to_vec(),
            b"ab\nabc\n".to_vec(),
        ] {
            assert_eq!(
                parse(&bad, 16, None).err(),
                Some(KeyFileError::Incompatible)
            );
        }
        assert_eq!(parse(b"", 16, None).err(), Some(KeyFileError::Empty));
        // CR LF and blank lines between keys are one separator.
        assert_eq!(
            parse(b"\r\nabc\r\n\r\n", 16, None).err(),
            Some(KeyFileError::Incompatible)
        );
        assert_eq!(parse(b"abc\r\n\r\n", 16, None).unwrap().count, 1);
        let gpg = b"-----BEGIN PGP MESSAGE-----\nxx\n";
        assert_eq!(parse(gpg, 16, None).err(), Some(KeyFileError::Gpg));
    }

    #[test]
    fn keys_are_hashed_and_tweaked() {
        let one = parse(b"abc\n", 16, None).unwrap();
        let sha = HashAlg::Sha256.digest(&[b"abc"]);
        assert_eq!(one.keys.as_bytes(), &sha[..16]);
        let k64 = parse(&lines(64), 16, Some("sha256")).unwrap();
        let d = HashAlg::Sha256.digest(&[b"key0001"]);
        let second = &k64.keys.as_bytes()[16..32];
        assert_eq!(second[0], d[0] ^ 0x55);
        assert_eq!(&second[1..], &d[1..16]);
        let k65 = parse(&lines(65), 32, None).unwrap();
        let d = HashAlg::Sha512.digest(&[b"key0064"]);
        assert_eq!(k65.keys.as_bytes()[64 * 32], d[0] ^ 0xF4);
        assert_eq!(
            parse(b"abc\n", 32, Some("ripemd160")).err(),
            Some(KeyFileError::KeyProcessing("ripemd160".into()))
        );
        assert!(parse(b"abc\n", 16, Some("plain")).is_err());
    }
}
