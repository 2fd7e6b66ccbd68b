//! dm-crypt cipher specifications.
//!
//! Two textual forms exist (kernel `drivers/md/dm-crypt.c`, `crypt_ctr_cipher_old` and
//! `crypt_ctr_cipher_new`):
//!
//! * the legacy form `cipher[:keycount]-chainmode-ivmode[:ivopts]`, e.g. `aes-xts-plain64`,
//!   `aes-cbc-essiv:sha256`, `aes:64-cbc-lmk`;
//! * the crypto-API form `capi:chainmode(cipher)-ivmode[:ivopts]`, e.g. `capi:xts(aes)-plain64`.
//!
//! cryptsetup additionally normalises a few short forms before handing the spec to the kernel
//! (`crypt_parse_name_and_mode`, `lib/utils_crypt.c`): a bare cipher name (`aes`) and
//! `cipher-plain` mean `cipher-cbc-plain`, and `null`/`cipher_null` mean `cipher_null-ecb`.
//!
//! Parsing here is purely syntactic: it accepts IV generators and chaining modes lukskit cannot
//! run (so that `luksDump` can still show them); [`crate::engine::SectorCipher::check`] decides
//! what is actually supported.

use crate::{CryptoError, Result};
use std::fmt;

/// A parsed dm-crypt cipher specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CipherSpec {
    /// Block cipher name as the kernel knows it: `aes`, `serpent`, `twofish`, `cast5`,
    /// `camellia`, `cipher_null`, …
    pub cipher: String,
    /// Number of independent keys (`aes:2-…`); 1 unless given. Always a power of two.
    pub keycount: u32,
    /// Chaining mode: `xts`, `cbc`, `ecb`, `ctr`, `lrw`, …
    pub chainmode: String,
    /// IV generator: `plain64`, `plain`, `plain64be`, `essiv`, `benbi`, `null`, `eboiv`, …
    pub ivmode: Option<String>,
    /// IV generator options, e.g. the hash of `essiv:sha256`.
    pub ivopts: Option<String>,
    /// Whether the spec was given in the `capi:chainmode(cipher)-ivmode` form.
    pub capi: bool,
}

fn invalid(spec: &str, why: &str) -> CryptoError {
    CryptoError::InvalidInput(format!("cipher specification '{spec}': {why}"))
}

/// Characters allowed in one component of a spec (kernel crypto names, hash names, numbers).
fn check_component(spec: &str, what: &str, s: &str) -> Result<()> {
    if s.is_empty() {
        return Err(invalid(spec, &format!("empty {what}")));
    }
    // A cipher name may list several kernel algorithms (`xchacha12,aes` of
    // `xchacha12,aes-adiantum-plain64`: the kernel's `adiantum(xchacha12,aes)`), as cryptsetup
    // takes everything before the first '-' as the cipher name.
    let comma_ok = what == "cipher name";
    if let Some(c) = s
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.') || (comma_ok && c == ',')))
    {
        return Err(invalid(
            spec,
            &format!("invalid character {c:?} in {what} '{s}'"),
        ));
    }
    if comma_ok && s.split(',').any(str::is_empty) {
        return Err(invalid(spec, &format!("empty algorithm in {what} '{s}'")));
    }
    Ok(())
}

/// IV options may contain '-' or ':' (hash names like `sha3-256`); only forbid emptiness and
/// characters that never appear in a kernel algorithm name.
fn check_ivopts(spec: &str, o: &str) -> Result<()> {
    if o.is_empty() {
        return Err(invalid(spec, "empty IV options"));
    }
    if let Some(c) = o
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.')))
    {
        return Err(invalid(
            spec,
            &format!("invalid character {c:?} in IV options '{o}'"),
        ));
    }
    Ok(())
}

fn parse_keycount(spec: &str, s: &str) -> Result<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(spec, &format!("bad key count '{s}'")));
    }
    let n: u32 = s
        .parse()
        .map_err(|_| invalid(spec, &format!("bad key count '{s}'")))?;
    if n == 0 || !n.is_power_of_two() {
        return Err(invalid(
            spec,
            &format!("key count {n} is not a power of two"),
        ));
    }
    Ok(n)
}

impl CipherSpec {
    /// Parse the legacy form `cipher[:keycount]-chainmode-ivmode[:ivopts]` with cryptsetup's
    /// normalisations (`aes` → `aes-cbc-plain`, `aes-plain` → `aes-cbc-plain`,
    /// `null`/`cipher_null` → `cipher_null-ecb`) and the capi form
    /// `capi:chainmode(cipher)-ivmode[:ivopts]` (ivopts split at the last `:`, ivmode at the
    /// last `-`, as the kernel does).
    pub fn parse(spec: &str) -> Result<Self> {
        if spec.is_empty() {
            return Err(invalid(spec, "empty"));
        }
        if let Some(c) = spec.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid(spec, &format!("invalid character {c:?}")));
        }
        if let Some(rest) = spec.strip_prefix("capi:") {
            return Self::parse_capi(spec, rest);
        }
        Self::parse_legacy(spec)
    }

    fn parse_legacy(spec: &str) -> Result<Self> {
        if spec.contains('(') || spec.contains(')') {
            return Err(invalid(spec, "crypto API names need the 'capi:' prefix"));
        }
        if spec == "null" || spec == "cipher_null" {
            return Ok(CipherSpec {
                cipher: "cipher_null".into(),
                keycount: 1,
                chainmode: "ecb".into(),
                ivmode: None,
                ivopts: None,
                capi: false,
            });
        }
        let (cipher_part, rest) = match spec.split_once('-') {
            Some((c, r)) => (c, Some(r)),
            None => (spec, None),
        };
        let (cipher, keycount) = match cipher_part.split_once(':') {
            Some((c, k)) => (c, parse_keycount(spec, k)?),
            None => (cipher_part, 1),
        };
        check_component(spec, "cipher name", cipher)?;

        let (chainmode, ivmode, ivopts) = match rest {
            // `aes` alone: cbc-plain.
            None => ("cbc", Some("plain"), None),
            Some(rest) => {
                let (chainmode, ivpart) = match rest.split_once('-') {
                    Some((m, iv)) => (m, Some(iv)),
                    None => (rest, None),
                };
                match ivpart {
                    // `aes-plain`: cbc-plain.
                    None if chainmode == "plain" => ("cbc", Some("plain"), None),
                    None => (chainmode, None, None),
                    Some(iv) => match iv.split_once(':') {
                        Some((m, o)) => (chainmode, Some(m), Some(o)),
                        None => (chainmode, Some(iv), None),
                    },
                }
            }
        };
        check_component(spec, "chain mode", chainmode)?;
        if let Some(iv) = ivmode {
            check_component(spec, "IV mode", iv)?;
        }
        if let Some(o) = ivopts {
            check_ivopts(spec, o)?;
        }
        if chainmode != "ecb" && ivmode.is_none() {
            return Err(invalid(
                spec,
                &format!(
                    "chain mode '{chainmode}' needs an IV generator (e.g. '{chainmode}-plain64')"
                ),
            ));
        }
        if ivmode == Some("essiv") && ivopts.is_none() {
            return Err(invalid(spec, "ESSIV needs a hash (e.g. 'essiv:sha256')"));
        }
        Ok(CipherSpec {
            cipher: cipher.to_string(),
            keycount,
            chainmode: chainmode.to_string(),
            ivmode: ivmode.map(str::to_string),
            ivopts: ivopts.map(str::to_string),
            capi: false,
        })
    }

    fn parse_capi(spec: &str, rest: &str) -> Result<Self> {
        // Kernel order: IV options after the LAST ':', then the IV mode after the LAST '-'.
        let (rest, ivopts) = match rest.rsplit_once(':') {
            Some((r, o)) => (r, Some(o)),
            None => (rest, None),
        };
        let (api, ivmode) = match rest.rsplit_once('-') {
            Some((a, m)) => (a, m),
            None => {
                return Err(invalid(
                    spec,
                    "capi form needs an IV mode ('capi:chainmode(cipher)-ivmode')",
                ))
            }
        };
        if ivmode.contains(')') || ivmode.contains('(') {
            return Err(invalid(
                spec,
                "driver names containing '-' are not supported in capi form",
            ));
        }
        check_component(spec, "IV mode", ivmode)?;
        if let Some(o) = ivopts {
            check_ivopts(spec, o)?;
        }
        let Some((chainmode, inner)) = api.split_once('(') else {
            return Err(invalid(
                spec,
                "capi form must be 'capi:chainmode(cipher)-ivmode'",
            ));
        };
        let Some(cipher) = inner.strip_suffix(')') else {
            return Err(invalid(spec, "unbalanced parentheses"));
        };
        if cipher.contains('(') || cipher.contains(')') || cipher.contains(',') {
            return Err(CryptoError::Unsupported(format!(
                "composed crypto API specification '{spec}'"
            )));
        }
        check_component(spec, "chain mode", chainmode)?;
        check_component(spec, "cipher name", cipher)?;
        if ivmode == "essiv" && ivopts.is_none() {
            return Err(invalid(spec, "ESSIV needs a hash (e.g. 'essiv:sha256')"));
        }
        Ok(CipherSpec {
            cipher: cipher.to_string(),
            keycount: 1,
            chainmode: chainmode.to_string(),
            ivmode: Some(ivmode.to_string()),
            ivopts: ivopts.map(str::to_string),
            capi: true,
        })
    }

    /// Build from LUKS1's split header fields (`cipher-name` "aes", `cipher-mode`
    /// "xts-plain64"), applying the same normalisations as [`CipherSpec::parse`].
    pub fn from_luks1(cipher_name: &str, cipher_mode: &str) -> Result<Self> {
        if let Some(api) = cipher_name.strip_prefix("capi:") {
            // cryptsetup splits `capi:xts(aes)-plain64` at the first '-': the crypto API
            // name goes into the cipher name field, the IV generator into the mode field.
            if api.is_empty() || api.contains('-') || cipher_mode.is_empty() {
                return Err(CryptoError::InvalidInput(format!(
                    "invalid LUKS1 cipher '{cipher_name}' mode '{cipher_mode}'"
                )));
            }
            return Self::parse(&format!("{cipher_name}-{cipher_mode}"));
        }
        if cipher_name.is_empty() || cipher_name.contains('-') {
            return Err(CryptoError::InvalidInput(format!(
                "invalid LUKS1 cipher name '{cipher_name}'"
            )));
        }
        if cipher_mode.is_empty() {
            return Err(CryptoError::InvalidInput(format!(
                "empty LUKS1 cipher mode for cipher '{cipher_name}'"
            )));
        }
        Self::parse(&format!("{cipher_name}-{cipher_mode}"))
    }

    /// The LUKS1 split form: `("aes", "xts-plain64")`, `("aes", "cbc-essiv:sha256")`.
    /// Errors for capi specs and for fields that do not fit LUKS1's 32-byte header fields.
    pub fn luks1_parts(&self) -> Result<(String, String)> {
        let (name, mode) = if self.capi {
            // Stored as cryptsetup does: name `capi:xts(aes)`, mode `plain64`.
            let full = self.to_string();
            match full.split_once('-') {
                Some((n, m)) if !m.is_empty() => (n.to_string(), m.to_string()),
                _ => {
                    return Err(CryptoError::Unsupported(format!(
                        "crypto API cipher specification '{self}' without IV mode in LUKS1"
                    )))
                }
            }
        } else {
            self.legacy_luks1_parts()
        };
        // LUKS1 stores both as NUL-terminated strings in 32-byte fields.
        if name.len() > 31 || mode.len() > 31 {
            return Err(CryptoError::InvalidInput(format!(
                "cipher specification '{self}' does not fit the LUKS1 header"
            )));
        }
        Ok((name, mode))
    }

    fn legacy_luks1_parts(&self) -> (String, String) {
        let name = if self.keycount == 1 {
            self.cipher.clone()
        } else {
            format!("{}:{}", self.cipher, self.keycount)
        };
        let mut mode = self.chainmode.clone();
        if let Some(iv) = &self.ivmode {
            mode.push('-');
            mode.push_str(iv);
            if let Some(o) = &self.ivopts {
                mode.push(':');
                mode.push_str(o);
            }
        }
        (name, mode)
    }

    /// The IV-less `cipher-chainmode` name used in benchmark lines, e.g. `aes-xts`.
    pub fn cipher_mode_name(&self) -> String {
        format!("{}-{}", self.cipher, self.chainmode)
    }
}

impl fmt::Display for CipherSpec {
    /// The spec as cryptsetup writes it into LUKS2 (`aes-xts-plain64`); capi specs stay in
    /// capi form (`capi:xts(aes)-plain64`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.capi {
            write!(f, "capi:{}({})", self.chainmode, self.cipher)?;
        } else {
            f.write_str(&self.cipher)?;
            if self.keycount != 1 {
                write!(f, ":{}", self.keycount)?;
            }
            write!(f, "-{}", self.chainmode)?;
        }
        if let Some(iv) = &self.ivmode {
            write!(f, "-{iv}")?;
            if let Some(o) = &self.ivopts {
                write!(f, ":{o}")?;
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for CipherSpec {
    type Err = CryptoError;

    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> CipherSpec {
        CipherSpec::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    /// mode-test's Adiantum specs: the cipher name lists the kernel's algorithms with a comma
    /// (cryptsetup takes all before the first '-'); the dm table carries the spec unchanged.
    #[test]
    fn adiantum_cipher_names_keep_their_comma() {
        for name in ["xchacha12,aes", "xchacha20,aes"] {
            let spec = format!("{name}-adiantum-plain64");
            let s = p(&spec);
            assert_eq!(s.cipher, name);
            assert_eq!(s.chainmode, "adiantum");
            assert_eq!(s.ivmode.as_deref(), Some("plain64"));
            assert_eq!(s.to_string(), spec);
        }
        for bad in [
            "xchacha12,-adiantum-plain64",
            ",aes-adiantum-plain64",
            "aes-cb,c-plain64",
        ] {
            assert!(CipherSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn legacy_forms() {
        let s = p("aes-xts-plain64");
        assert_eq!(
            s,
            CipherSpec {
                cipher: "aes".into(),
                keycount: 1,
                chainmode: "xts".into(),
                ivmode: Some("plain64".into()),
                ivopts: None,
                capi: false
            }
        );
        assert_eq!(s.to_string(), "aes-xts-plain64");
        assert_eq!(s.cipher_mode_name(), "aes-xts");

        let s = p("aes-cbc-essiv:sha256");
        assert_eq!(s.ivmode.as_deref(), Some("essiv"));
        assert_eq!(s.ivopts.as_deref(), Some("sha256"));
        assert_eq!(s.to_string(), "aes-cbc-essiv:sha256");

        let s = p("aes:64-cbc-lmk");
        assert_eq!(s.keycount, 64);
        assert_eq!(s.to_string(), "aes:64-cbc-lmk");

        let s = p("serpent-ecb");
        assert_eq!(s.chainmode, "ecb");
        assert_eq!(s.ivmode, None);
        assert_eq!(s.to_string(), "serpent-ecb");

        // ivopts is everything after the first ':' of the IV part.
        let s = p("aes-cbc-essiv:sha3-256");
        assert_eq!(s.ivopts.as_deref(), Some("sha3-256"));
        assert_eq!(s.to_string(), "aes-cbc-essiv:sha3-256");

        // Canonical legacy strings survive parse → Display unchanged.
        for t in [
            "aes-xts-plain64",
            "serpent-xts-plain64",
            "twofish-cbc-essiv:sha256",
            "aes-xts-essiv:wp256",
            "aes-lrw-benbi",
            "aes-cbc-eboiv",
            "aes:2-xts-plain64",
            "aes-ctr-plain64be",
            "cast5-cbc-null",
            "cipher_null-ecb",
            "camellia-ecb",
        ] {
            assert_eq!(p(t).to_string(), t);
        }
        // The IV generator is "plain64-foo", which the kernel would reject; parse keeps it
        // verbatim only if it is a single component.
        assert!(CipherSpec::parse("aes-xts-plain64-foo").is_err());
    }

    #[test]
    fn cryptsetup_normalisations() {
        assert_eq!(p("aes").to_string(), "aes-cbc-plain");
        assert_eq!(p("aes-plain").to_string(), "aes-cbc-plain");
        assert_eq!(p("twofish:2").to_string(), "twofish:2-cbc-plain");
        for n in ["null", "cipher_null"] {
            let s = p(n);
            assert_eq!(s.cipher, "cipher_null");
            assert_eq!(s.chainmode, "ecb");
            assert_eq!(s.to_string(), "cipher_null-ecb");
        }
        assert_eq!(p("cipher_null-ecb").to_string(), "cipher_null-ecb");
    }

    #[test]
    fn capi_forms() {
        let s = p("capi:xts(aes)-plain64");
        assert!(s.capi);
        assert_eq!(s.cipher, "aes");
        assert_eq!(s.chainmode, "xts");
        assert_eq!(s.ivmode.as_deref(), Some("plain64"));
        assert_eq!(s.to_string(), "capi:xts(aes)-plain64");
        // LUKS1 stores it as cryptsetup does: name `capi:xts(aes)`, mode `plain64`.
        assert_eq!(
            s.luks1_parts().unwrap(),
            ("capi:xts(aes)".to_string(), "plain64".to_string())
        );
        assert_eq!(
            CipherSpec::from_luks1("capi:xts(aes)", "plain64").unwrap(),
            s
        );
        assert!(CipherSpec::from_luks1("capi:xts(aes)", "").is_err());
        assert!(CipherSpec::from_luks1("capi:", "plain64").is_err());

        let s = p("capi:cbc(aes)-essiv:sha256");
        assert_eq!(s.ivopts.as_deref(), Some("sha256"));
        assert_eq!(s.to_string(), "capi:cbc(aes)-essiv:sha256");

        // Round trip of every capi spec through Display.
        for t in [
            "capi:xts(aes)-plain64",
            "capi:cbc(serpent)-essiv:sha256",
            "capi:lrw(twofish)-benbi",
            "capi:ecb(aes)-null",
        ] {
            assert_eq!(p(t).to_string(), t);
            assert_eq!(p(&p(t).to_string()), p(t));
        }
    }

    #[test]
    fn rejected_forms() {
        for bad in [
            "",
            "-xts-plain64",
            "aes-",
            "aes--plain64",
            "aes-xts",       // IV mechanism required
            "aes-cbc-",      // empty IV mode
            "aes-cbc-essiv", // hash missing
            "aes-cbc-essiv:",
            "aes:0-cbc-plain",
            "aes:3-cbc-plain",
            "aes:2x-cbc-plain",
            "aes:-cbc-plain",
            "xts(aes)-plain64", // capi name without prefix
            "aes-xts-plain64 ",
            "aes xts",
            "capi:xts(aes)",         // no IV mode
            "capi:xts(aes-generic)", // dash inside the driver name
            "capi:xts-plain64",
            "capi:xts(aes-plain64",
            "capi:cbc(aes)-essiv",
            "capi:(aes)-plain64",
        ] {
            assert!(CipherSpec::parse(bad).is_err(), "accepted {bad:?}");
        }
        assert!(matches!(
            CipherSpec::parse("capi:essiv(cbc(aes),sha256)-plain64"),
            Err(CryptoError::Unsupported(_))
        ));
    }

    #[test]
    fn luks1_round_trip() {
        let s = CipherSpec::from_luks1("aes", "xts-plain64").unwrap();
        assert_eq!(s, p("aes-xts-plain64"));
        assert_eq!(
            s.luks1_parts().unwrap(),
            ("aes".to_string(), "xts-plain64".to_string())
        );
        let s = CipherSpec::from_luks1("aes", "cbc-essiv:sha256").unwrap();
        assert_eq!(
            s.luks1_parts().unwrap(),
            ("aes".to_string(), "cbc-essiv:sha256".to_string())
        );
        let s = CipherSpec::from_luks1("aes", "plain").unwrap();
        assert_eq!(s.to_string(), "aes-cbc-plain");
        let s = CipherSpec::from_luks1("cipher_null", "ecb").unwrap();
        assert_eq!(
            s.luks1_parts().unwrap(),
            ("cipher_null".to_string(), "ecb".to_string())
        );
        let s = p("aes:2-cbc-plain");
        assert_eq!(
            s.luks1_parts().unwrap(),
            ("aes:2".to_string(), "cbc-plain".to_string())
        );
        assert!(CipherSpec::from_luks1("aes-xts", "plain64").is_err());
        assert!(CipherSpec::from_luks1("aes", "").is_err());
        assert!(CipherSpec::from_luks1("", "xts-plain64").is_err());
        let long = p("aes-cbc-essiv:abcdefghijklmnopqrstuvwxyz");
        assert!(long.luks1_parts().is_err());
    }
}
