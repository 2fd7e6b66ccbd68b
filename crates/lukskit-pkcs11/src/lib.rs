//! The `systemd-pkcs11` LUKS2 token, as `systemd-cryptenroll --pkcs11-token-uri=…` of
//! systemd 252 (Debian 12) writes it, and its unlock as `systemd-cryptsetup` does it:
//!
//! - `pkcs11-uri` names the token and the key (a PKCS#11 URI, RFC 7512);
//! - `pkcs11-key` is a random key encrypted (RSA PKCS#1 v1.5) to the public key of the
//!   certificate on that token;
//! - the private key on the token decrypts it (`C_Decrypt` with `CKM_RSA_PKCS`, after
//!   `C_Login` with the PIN where the token needs one) and the keyslot's passphrase is the
//!   base64 of the decrypted key, as systemd makes it.
//!
//! The module is the one the URI names (`module-path=`, or `module-name=` among p11-kit's
//! registered modules), else p11-kit's proxy module, which is every module registered with
//! p11-kit: the modules systemd loads (`p11_kit_modules_load_and_initialize`). Loading a
//! module needs the dynamic loader: the static (musl) build cannot, and says so
//! ([`Pkcs11Error::StaticBuild`]).
//!
//! Nothing here prints: errors are typed. The PIN and the decrypted key live in
//! [`lukskit_crypto::SecretBuf`]s (the PIN is copied into the zeroizing buffer the PKCS#11
//! binding hands to `C_Login`, for that call only).

#![forbid(unsafe_code)]

#[cfg(target_env = "gnu")]
mod module;
pub mod uri;

use base64::Engine as _;
use lukskit_crypto::SecretBuf;
use serde_json::Value;
pub use uri::Pkcs11Uri;

/// The most base64 characters of `pkcs11-key` lukskit decodes (an RSA 16384 ciphertext is
/// 2048 bytes).
const MAX_KEY_B64: usize = 4096;

/// The most bytes of a PKCS#11-encrypted key file (crypttab's key field with `pkcs11-uri=`):
/// an RSA 16384 ciphertext.
pub const MAX_ENCRYPTED_KEY: usize = 2048;

/// What can go wrong with a systemd-pkcs11 token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Pkcs11Error {
    /// The token JSON is malformed.
    #[error("malformed systemd-pkcs11 token: {0}")]
    BadToken(String),
    /// The PKCS#11 URI does not parse.
    #[error("bad PKCS#11 URI: {0}")]
    BadUri(String),
    /// This binary cannot load PKCS#11 modules.
    #[error("this static lukskit cannot load PKCS#11 modules (no dynamic loader); use the dynamically linked lukskit or the passphrase")]
    StaticBuild,
    /// No module to load.
    #[error("no PKCS#11 module: {0}")]
    NoModule(String),
    /// The module failed to load or to answer.
    #[error("PKCS#11 module {module}: {reason}")]
    Module {
        /// The module's path.
        module: String,
        /// What happened.
        reason: String,
    },
    /// No token matches the URI.
    #[error("no security token matching {0} is present")]
    NoToken(String),
    /// No (or more than one) private key on the token matches the URI.
    #[error("{0}")]
    Key(String),
    /// The PIN was wrong.
    #[error("wrong PIN for security token '{0}'")]
    BadPin(String),
    /// The token's PIN is locked.
    #[error("the PIN of security token '{0}' is locked")]
    PinLocked(String),
    /// The token needs a PIN and none was given.
    #[error("security token '{0}' needs a PIN")]
    PinRequired(String),
    /// The token refused to decrypt.
    #[error("security token '{token}' could not decrypt the key: {reason}")]
    Decrypt {
        /// The token's label.
        token: String,
        /// What the module said.
        reason: String,
    },
    /// A feature lukskit does not support.
    #[error("{0} is not supported")]
    Unsupported(String),
}

/// Whether this build can load PKCS#11 modules (the dynamically linked glibc build can; the
/// static musl build cannot).
pub const fn modules_supported() -> bool {
    cfg!(target_env = "gnu")
}

/// A parsed `systemd-pkcs11` token.
#[derive(Clone, Debug)]
pub struct SystemdPkcs11Token {
    /// `pkcs11-uri` as stored.
    pub uri_text: String,
    /// `pkcs11-uri` parsed.
    pub uri: Pkcs11Uri,
    /// `pkcs11-key`: the encrypted key.
    pub encrypted_key: Vec<u8>,
}

fn bad(s: impl Into<String>) -> Pkcs11Error {
    Pkcs11Error::BadToken(s.into())
}

impl SystemdPkcs11Token {
    /// Parse the JSON of a `systemd-pkcs11` token; hostile input is bounded.
    pub fn parse(json: &Value) -> Result<Self, Pkcs11Error> {
        let obj = json.as_object().ok_or_else(|| bad("not an object"))?;
        if obj.get("type").and_then(Value::as_str) != Some("systemd-pkcs11") {
            return Err(bad("type is not systemd-pkcs11"));
        }
        let uri_text = obj
            .get("pkcs11-uri")
            .ok_or_else(|| bad("no pkcs11-uri"))?
            .as_str()
            .ok_or_else(|| bad("pkcs11-uri is not a string"))?;
        let uri = Pkcs11Uri::parse(uri_text)?;
        let key = obj
            .get("pkcs11-key")
            .ok_or_else(|| bad("no pkcs11-key"))?
            .as_str()
            .ok_or_else(|| bad("pkcs11-key is not a string"))?;
        if key.len() > MAX_KEY_B64 {
            return Err(bad("pkcs11-key is too long"));
        }
        let encrypted_key = base64::engine::general_purpose::STANDARD
            .decode(key)
            .map_err(|_| bad("pkcs11-key is not base64"))?;
        if encrypted_key.is_empty() {
            return Err(bad("pkcs11-key is empty"));
        }
        Ok(SystemdPkcs11Token {
            uri_text: uri_text.to_string(),
            uri,
            encrypted_key,
        })
    }

    /// An encrypted key file, as systemd 252's `systemd-cryptsetup` decrypts one for a volume
    /// without a token (crypttab's key field with `pkcs11-uri=URI`): `encrypted_key` is the
    /// raw ciphertext (a token's `pkcs11-key`, base64-decoded), `uri` the security token and
    /// key that decrypt it.
    pub fn from_key_file(uri: &str, encrypted_key: &[u8]) -> Result<Self, Pkcs11Error> {
        if encrypted_key.is_empty() {
            return Err(bad("the encrypted key file is empty"));
        }
        if encrypted_key.len() > MAX_ENCRYPTED_KEY {
            return Err(bad("the encrypted key file is too long"));
        }
        Ok(SystemdPkcs11Token {
            uri_text: uri.to_string(),
            uri: Pkcs11Uri::parse(uri)?,
            encrypted_key: encrypted_key.to_vec(),
        })
    }

    /// The module this token's URI leads to: `module-path=`, `module-name=` among p11-kit's
    /// registered modules, else p11-kit's proxy module.
    pub fn module_path(&self) -> Result<String, Pkcs11Error> {
        if let Some(p) = &self.uri.module_path {
            return Ok(p.clone());
        }
        if let Some(name) = &self.uri.module_name {
            return registered_module(name);
        }
        PROXY_PATHS
            .iter()
            .find(|p| std::path::Path::new(p).exists())
            .map(|p| p.to_string())
            .ok_or_else(|| {
                Pkcs11Error::NoModule(
                    "the URI names no module-path= and p11-kit's proxy module (p11-kit-proxy.so, Debian's p11-kit-modules) is not installed".into(),
                )
            })
    }

    /// Decrypt the key on the token and return the keyslot passphrase (the base64 of the
    /// decrypted key). `pin` is asked for the PIN, with the token's label, when the token
    /// needs one; it returns `None` when there is none.
    pub fn unlock(
        &self,
        pin: impl FnOnce(&str) -> Option<SecretBuf>,
    ) -> Result<SecretBuf, Pkcs11Error> {
        Ok(self.decrypt_key(pin)?.to_base64())
    }

    /// The decrypted key itself (not the passphrase made of it): what systemd gives a plain
    /// volume with `hash=plain` as its key. Otherwise as [`SystemdPkcs11Token::unlock`].
    pub fn decrypt_key(
        &self,
        pin: impl FnOnce(&str) -> Option<SecretBuf>,
    ) -> Result<SecretBuf, Pkcs11Error> {
        if !modules_supported() {
            return Err(Pkcs11Error::StaticBuild);
        }
        self.decrypt(pin)
    }

    #[cfg(target_env = "gnu")]
    fn decrypt(
        &self,
        pin: impl FnOnce(&str) -> Option<SecretBuf>,
    ) -> Result<SecretBuf, Pkcs11Error> {
        module::decrypt(self, &self.module_path()?, pin)
    }

    #[cfg(not(target_env = "gnu"))]
    fn decrypt(
        &self,
        _pin: impl FnOnce(&str) -> Option<SecretBuf>,
    ) -> Result<SecretBuf, Pkcs11Error> {
        Err(Pkcs11Error::StaticBuild)
    }
}

/// Where Debian (and others) install p11-kit's proxy module.
const PROXY_PATHS: &[&str] = &[
    #[cfg(target_arch = "x86_64")]
    "/usr/lib/x86_64-linux-gnu/p11-kit-proxy.so",
    #[cfg(target_arch = "aarch64")]
    "/usr/lib/aarch64-linux-gnu/p11-kit-proxy.so",
    "/usr/lib64/p11-kit-proxy.so",
    "/usr/lib/p11-kit-proxy.so",
];

/// The directories p11-kit reads module registrations from (system ones; a user's are in
/// `~/.config/pkcs11/modules`).
const MODULE_CONFIG_DIRS: &[&str] = &["/etc/pkcs11/modules", "/usr/share/p11-kit/modules"];

/// The library of the p11-kit module registered as `name` (`NAME.module`, its `module:`
/// line; a relative path is in p11-kit's module directory).
fn registered_module(name: &str) -> Result<String, Pkcs11Error> {
    if name.is_empty() || name.contains('/') || name.len() > 255 {
        return Err(Pkcs11Error::BadUri("bad module-name".into()));
    }
    let home =
        std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".config/pkcs11/modules"));
    let dirs = home
        .into_iter()
        .chain(MODULE_CONFIG_DIRS.iter().map(std::path::PathBuf::from));
    for d in dirs {
        let Ok(conf) = std::fs::read_to_string(d.join(format!("{name}.module"))) else {
            continue;
        };
        let Some(lib) = conf
            .lines()
            .filter_map(|l| l.trim().strip_prefix("module:"))
            .map(str::trim)
            .next()
        else {
            continue;
        };
        if lib.starts_with('/') {
            return Ok(lib.to_string());
        }
        let dir = PROXY_PATHS[0]
            .rsplit_once('/')
            .map_or("/usr/lib", |(d, _)| d);
        return Ok(format!("{dir}/pkcs11/{lib}"));
    }
    Err(Pkcs11Error::NoModule(format!(
        "no p11-kit module named {:?} is registered",
        name.chars().take(64).collect::<String>()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({"type":"systemd-pkcs11","keyslots":["1"],
            "pkcs11-uri":"pkcs11:token=lukskit;id=%01",
            "pkcs11-key":"bnmsHqio6xeP6S3WXneDRH/5Qskf4IPYQrTH5NtLNEE9zqWG7a3g+mSE8kyKXmH5QEuPpi/3UsEgJswfcBFm12cS4mvAz8dB/2z2N6+WkuJqqHWewBOmwipYORP4aSwAmSCOQGNbBKVFuhCXYrISRvcHzDlTfvWvV1Xg4KrF3MpHe7ycKTMNrhg6WbG09x0rFjQNYaJeqH+n2YS3LQrZjfjwI21+MzQZwhNrBfNRimh2K1xFqT7u1e5C4x69ywpiiR0Q0wxwrP/VnqRD5b9KnN8kn9XQpppBDI5AgJ0cWJeKNTfLPohfev+T/BjL2wU+Gfg9L0UePqTN6ORrtgSyMQ=="})
    }

    #[test]
    fn an_encrypted_key_file_is_the_decoded_key_with_the_uri() {
        let t = SystemdPkcs11Token::parse(&sample()).unwrap();
        let f = SystemdPkcs11Token::from_key_file("pkcs11:token=lukskit;id=%01", &t.encrypted_key)
            .unwrap();
        assert_eq!(f.encrypted_key, t.encrypted_key);
        assert_eq!(f.uri, t.uri);
        for (uri, key) in [
            ("pkcs11:token=lukskit", &[][..]),
            ("pkcs11:token=lukskit", &[1u8; MAX_ENCRYPTED_KEY + 1][..]),
            ("http://x", &[1u8; 256][..]),
        ] {
            assert!(
                SystemdPkcs11Token::from_key_file(uri, key).is_err(),
                "{uri} {}",
                key.len()
            );
        }
    }

    #[test]
    fn parses_what_systemd_252_writes() {
        let t = SystemdPkcs11Token::parse(&sample()).unwrap();
        assert_eq!(t.encrypted_key.len(), 256);
        assert_eq!(t.uri.token.as_deref(), Some("lukskit"));
        assert_eq!(t.uri.id.as_deref(), Some(&[1u8][..]));
    }

    #[test]
    fn refuses_hostile_tokens() {
        for (field, value) in [
            ("pkcs11-key", json!("A".repeat(100_000))),
            ("pkcs11-key", json!(7)),
            ("pkcs11-key", json!("!!")),
            ("pkcs11-key", json!("")),
            ("pkcs11-uri", json!(["pkcs11:"])),
            ("pkcs11-uri", json!("file:///x")),
            ("type", json!("systemd-tpm2")),
        ] {
            let mut v = sample();
            v[field] = value.clone();
            assert!(SystemdPkcs11Token::parse(&v).is_err(), "{field} = {value}");
        }
        assert!(SystemdPkcs11Token::parse(&json!([])).is_err());
    }

    /// The static (musl) build: one clear refusal, no module looked for
    /// (`cargo test -p lukskit-pkcs11 --target x86_64-unknown-linux-musl`).
    #[cfg(not(target_env = "gnu"))]
    #[test]
    fn static_build_refuses() {
        let t = SystemdPkcs11Token::parse(&sample()).unwrap();
        let e = t.unlock(|_| None).unwrap_err();
        assert!(matches!(e, Pkcs11Error::StaticBuild));
        assert_eq!(
            e.to_string(),
            "this static lukskit cannot load PKCS#11 modules (no dynamic loader); use the \
             dynamically linked lukskit or the passphrase"
        );
        assert!(!modules_supported());
    }

    #[test]
    fn module_name_is_not_a_path() {
        assert!(registered_module("../../x").is_err());
        assert!(registered_module("").is_err());
    }
}
