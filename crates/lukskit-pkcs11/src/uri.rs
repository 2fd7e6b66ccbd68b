//! PKCS#11 URIs (RFC 7512), as `systemd-cryptenroll --pkcs11-token-uri=` stores them in
//! `pkcs11-uri` and as p11-kit matches them against modules, slots, tokens and objects.

use crate::Pkcs11Error;

/// The longest URI accepted (systemd's are a few hundred characters).
pub const MAX_URI: usize = 4096;

/// A parsed PKCS#11 URI: the attributes lukskit matches on (each `None` when absent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pkcs11Uri {
    /// `token`: the token label.
    pub token: Option<String>,
    /// `manufacturer`: the token's manufacturer.
    pub manufacturer: Option<String>,
    /// `model`: the token's model.
    pub model: Option<String>,
    /// `serial`: the token's serial number.
    pub serial: Option<String>,
    /// `library-manufacturer`.
    pub library_manufacturer: Option<String>,
    /// `library-description`.
    pub library_description: Option<String>,
    /// `library-version` (`M` or `M.m`).
    pub library_version: Option<String>,
    /// `slot-description`.
    pub slot_description: Option<String>,
    /// `slot-manufacturer`.
    pub slot_manufacturer: Option<String>,
    /// `slot-id`.
    pub slot_id: Option<u64>,
    /// `object`: the object's label (`CKA_LABEL`).
    pub object: Option<Vec<u8>>,
    /// `id`: the object's `CKA_ID`.
    pub id: Option<Vec<u8>>,
    /// `type`: `private`, `public`, `cert`, `secret-key`, `data`.
    pub kind: Option<String>,
    /// `module-path` (query): the module to load.
    pub module_path: Option<String>,
    /// `module-name` (query): a module registered with p11-kit, by its file name.
    pub module_name: Option<String>,
}

fn bad(s: impl Into<String>) -> Pkcs11Error {
    Pkcs11Error::BadUri(s.into())
}

/// Percent-decoding (RFC 3986 §2.1); a `%` not followed by two hex digits is refused, as
/// p11-kit refuses it.
fn unescape(s: &str) -> Result<Vec<u8>, Pkcs11Error> {
    let well_formed = s
        .split('%')
        .skip(1)
        .all(|t| t.len() >= 2 && t.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit));
    if !well_formed {
        return Err(bad("bad percent-encoding"));
    }
    Ok(percent_encoding::percent_decode_str(s).collect())
}

fn text(name: &str, v: &str) -> Result<String, Pkcs11Error> {
    String::from_utf8(unescape(v)?).map_err(|_| bad(format!("{name} is not UTF-8")))
}

impl Pkcs11Uri {
    /// Parse `pkcs11:attr=value;…?query=value&…`. Attributes lukskit does not know make the
    /// URI match nothing in p11-kit; they are refused here, with their name.
    pub fn parse(s: &str) -> Result<Pkcs11Uri, Pkcs11Error> {
        if s.len() > MAX_URI {
            return Err(bad("too long"));
        }
        let rest = s
            .strip_prefix("pkcs11:")
            .ok_or_else(|| bad("does not start with pkcs11:"))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut u = Pkcs11Uri::default();
        for attr in path.split(';').filter(|a| !a.is_empty()) {
            let (k, v) = attr
                .split_once('=')
                .ok_or_else(|| bad("an attribute without '='"))?;
            match k {
                "token" => u.token = Some(text(k, v)?),
                "manufacturer" => u.manufacturer = Some(text(k, v)?),
                "model" => u.model = Some(text(k, v)?),
                "serial" => u.serial = Some(text(k, v)?),
                "library-manufacturer" => u.library_manufacturer = Some(text(k, v)?),
                "library-description" => u.library_description = Some(text(k, v)?),
                "library-version" => u.library_version = Some(text(k, v)?),
                "slot-description" => u.slot_description = Some(text(k, v)?),
                "slot-manufacturer" => u.slot_manufacturer = Some(text(k, v)?),
                "slot-id" => {
                    u.slot_id = Some(
                        text(k, v)?
                            .parse()
                            .map_err(|_| bad("slot-id is not a number"))?,
                    )
                }
                "object" => u.object = Some(unescape(v)?),
                "id" => u.id = Some(unescape(v)?),
                "type" => {
                    let t = text(k, v)?;
                    if !["private", "public", "cert", "secret-key", "data"].contains(&t.as_str()) {
                        return Err(bad("unknown object type"));
                    }
                    u.kind = Some(t);
                }
                other => {
                    return Err(bad(format!(
                        "unknown attribute {:?}",
                        other.chars().take(32).collect::<String>()
                    )))
                }
            }
        }
        for attr in query.split('&').filter(|a| !a.is_empty()) {
            let (k, v) = attr.split_once('=').unwrap_or((attr, ""));
            match k {
                "module-path" => u.module_path = Some(text(k, v)?),
                "module-name" => u.module_name = Some(text(k, v)?),
                // A PIN is never taken from the header; it is asked.
                "pin-value" | "pin-source" => {}
                // Other query attributes are vendor-specific (RFC 7512 §2.3): ignored.
                _ => {}
            }
        }
        Ok(u)
    }

    /// Whether a library (`manufacturer`, `description`, `version` as "M.m") matches.
    pub fn matches_library(&self, manufacturer: &str, description: &str, version: &str) -> bool {
        let version_ok = self.library_version.as_deref().is_none_or(|want| {
            if want.contains('.') {
                want == version
            } else {
                version.split('.').next() == Some(want)
            }
        });
        eq(&self.library_manufacturer, manufacturer)
            && eq(&self.library_description, description)
            && version_ok
    }

    /// Whether a slot matches.
    pub fn matches_slot(&self, id: u64, description: &str, manufacturer: &str) -> bool {
        self.slot_id.is_none_or(|s| s == id)
            && eq(&self.slot_description, description)
            && eq(&self.slot_manufacturer, manufacturer)
    }

    /// Whether a token matches.
    pub fn matches_token(
        &self,
        label: &str,
        manufacturer: &str,
        model: &str,
        serial: &str,
    ) -> bool {
        eq(&self.token, label)
            && eq(&self.manufacturer, manufacturer)
            && eq(&self.model, model)
            && eq(&self.serial, serial)
    }
}

/// PKCS#11 strings are blank-padded: compared without trailing blanks.
fn eq(want: &Option<String>, have: &str) -> bool {
    want.as_deref()
        .is_none_or(|w| w.trim_end_matches(' ') == have.trim_end_matches(' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_are_two_hex_digits() {
        let u = Pkcs11Uri::parse("pkcs11:token=a%2Fb%25;id=%00%ff").unwrap();
        assert_eq!(u.token.as_deref(), Some("a/b%"));
        assert_eq!(u.id.as_deref(), Some(&[0u8, 0xff][..]));
        for bad in [
            "pkcs11:token=%+f",
            "pkcs11:token=%4",
            "pkcs11:token=%",
            "pkcs11:id=%zz",
        ] {
            assert!(Pkcs11Uri::parse(bad).is_err(), "{bad}");
        }
        assert!(Pkcs11Uri::parse("pkcs11:token=%ff").is_err(), "not UTF-8");
    }

    #[test]
    fn parses_what_systemd_stores() {
        let u = Pkcs11Uri::parse(
            "pkcs11:model=SoftHSM%20v2;manufacturer=SoftHSM%20project;serial=87327dc0bc147bb0;\
             token=lukskit;id=%01;object=key;type=private?module-path=/usr/lib/x.so",
        )
        .unwrap();
        assert_eq!(u.model.as_deref(), Some("SoftHSM v2"));
        assert_eq!(u.token.as_deref(), Some("lukskit"));
        assert_eq!(u.id.as_deref(), Some(&[1u8][..]));
        assert_eq!(u.object.as_deref(), Some(&b"key"[..]));
        assert_eq!(u.kind.as_deref(), Some("private"));
        assert_eq!(u.module_path.as_deref(), Some("/usr/lib/x.so"));
        assert!(u.matches_token(
            "lukskit   ",
            "SoftHSM project",
            "SoftHSM v2",
            "87327dc0bc147bb0"
        ));
        assert!(!u.matches_token("other", "SoftHSM project", "SoftHSM v2", "87327dc0bc147bb0"));
        assert!(Pkcs11Uri::parse("pkcs11:")
            .unwrap()
            .matches_token("a", "b", "c", "d"));
    }

    #[test]
    fn refuses_what_p11_kit_would_not_match() {
        for bad in [
            "pkcs12:token=a",
            "pkcs11:token",
            "pkcs11:tokn=a",
            "pkcs11:id=%zz",
            "pkcs11:id=%0",
            "pkcs11:slot-id=x",
            "pkcs11:type=key",
            "pkcs11:token=%ff",
        ] {
            assert!(Pkcs11Uri::parse(bad).is_err(), "{bad}");
        }
        assert!(Pkcs11Uri::parse(&format!("pkcs11:token={}", "a".repeat(MAX_URI))).is_err());
    }

    #[test]
    fn library_version_matches_major_or_major_minor() {
        let u = Pkcs11Uri::parse("pkcs11:library-version=2").unwrap();
        assert!(u.matches_library("x", "y", "2.6"));
        assert!(!u.matches_library("x", "y", "3.0"));
        let u = Pkcs11Uri::parse("pkcs11:library-version=2.6").unwrap();
        assert!(u.matches_library("x", "y", "2.6"));
        assert!(!u.matches_library("x", "y", "2.60"));
    }
}
