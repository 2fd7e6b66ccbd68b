//! The pin configurations `clevis luks bind -d DEV PIN CONFIG` takes (clevis 19), parsed
//! into typed values before anything is asked or written:
//!
//! - `tang`: `{"url": URL, "thp": THUMBPRINT?, "adv": ADVERTISEMENT?}` (`adv` a JWS object
//!   or the name of a file holding one, as `clevis-encrypt-tang`);
//! - `tpm2`: `{"hash"?, "key"?, "pcr_bank"?, "pcr_ids"?}` (`pcr_ids` a string "0,7" or an
//!   array; `pcr_bank` defaulting to `sha1` as clevis 19's does; `hash` sha256 and `key`
//!   ecc only: lukskit seals with those);
//! - `sss`: `{"t": T?, "pins": {PIN: CONFIG | [CONFIG, …], …}}` (`t` defaulting to 1 as
//!   `clevis-encrypt-sss`), pins of any of the three kinds, `sss` nested too.
//!
//! Bounds: the text at most [`MAX_CONFIG`] bytes, `1 ≤ t ≤` the number of pins, at most
//! `MAX_PINS` pins in one `sss` and `sss` nested at most as deep as lukskit unlocks
//! (`MAX_DEPTH`): lukskit never writes a token it would refuse to read.

use crate::pins::{MAX_DEPTH, MAX_PINS};
use crate::TangError;
use serde_json::Value;

/// The longest configuration text accepted.
pub const MAX_CONFIG: usize = 64 << 10;
/// The longest advertisement file accepted.
const MAX_ADV_FILE: u64 = 1 << 20;

/// Where a tang pin's advertisement comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum AdvSource {
    /// Fetched from `URL/adv` when binding.
    Server,
    /// Given in the configuration (a JWS object): trusted as given.
    Json(Value),
    /// A file holding the JWS: trusted as given.
    File(String),
}

/// A `tang` pin's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct TangConfig {
    /// The server (`http://HOST[:PORT][/PATH]`).
    pub url: String,
    /// The thumbprint of the signing key to trust (SHA-256 or SHA-1, base64url).
    pub thp: Option<String>,
    /// The advertisement.
    pub adv: AdvSource,
}

/// A `tpm2` pin's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tpm2Config {
    /// The PCR bank (a TPM hash algorithm id).
    pub pcr_bank: u16,
    /// The PCRs of the policy, bit n for PCR n (0: no policy).
    pub pcr_mask: u32,
}

/// An `sss` pin's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SssConfig {
    /// The threshold.
    pub t: usize,
    /// The pins, in the order clevis encrypts them (the configuration's order).
    pub pins: Vec<PinConfig>,
}

/// The configuration of one pin.
#[derive(Debug, Clone, PartialEq)]
pub enum PinConfig {
    /// `tang`.
    Tang(TangConfig),
    /// `tpm2`.
    Tpm2(Tpm2Config),
    /// `sss`.
    Sss(SssConfig),
}

fn bad(why: impl Into<String>) -> TangError {
    TangError::Config(why.into())
}

fn text<'a>(
    obj: &'a serde_json::Map<String, Value>,
    k: &str,
) -> Result<Option<&'a str>, TangError> {
    match obj.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(bad(format!("{k} is not a string"))),
    }
}

fn object<'a>(v: &'a Value, pin: &str) -> Result<&'a serde_json::Map<String, Value>, TangError> {
    v.as_object()
        .ok_or_else(|| bad(format!("the {pin} configuration is not a JSON object")))
}

impl PinConfig {
    /// Parse the configuration `text` of the pin named `pin`.
    pub fn parse(pin: &str, text: &str) -> Result<PinConfig, TangError> {
        if text.len() > MAX_CONFIG {
            return Err(bad(format!("longer than {MAX_CONFIG} bytes")));
        }
        let v: Value = serde_json::from_str(text).map_err(|_| bad("not JSON"))?;
        PinConfig::from_value(pin, &v, 0)
    }

    /// The configuration `v` of pin `pin`, `depth` levels inside `sss` pins.
    fn from_value(pin: &str, v: &Value, depth: usize) -> Result<PinConfig, TangError> {
        match pin {
            "tang" => TangConfig::from_value(v).map(PinConfig::Tang),
            "tpm2" => Tpm2Config::from_value(v).map(PinConfig::Tpm2),
            "sss" => {
                if depth >= MAX_DEPTH {
                    return Err(bad(format!("sss pins nested more than {MAX_DEPTH} deep")));
                }
                SssConfig::from_value(v, depth).map(PinConfig::Sss)
            }
            other => Err(bad(format!(
                "the pin {} is not supported (tang, tpm2 and sss are)",
                other.chars().take(32).collect::<String>().escape_debug()
            ))),
        }
    }

    /// The pin's name.
    pub fn name(&self) -> &'static str {
        match self {
            PinConfig::Tang(_) => "tang",
            PinConfig::Tpm2(_) => "tpm2",
            PinConfig::Sss(_) => "sss",
        }
    }
}

impl TangConfig {
    fn from_value(v: &Value) -> Result<TangConfig, TangError> {
        let obj = object(v, "tang")?;
        for k in obj.keys() {
            if !["url", "thp", "adv"].contains(&k.as_str()) {
                return Err(bad(format!(
                    "{} is not a tang configuration property",
                    k.escape_debug()
                )));
            }
        }
        let url = text(obj, "url")?
            .ok_or_else(|| bad("the tang pin needs a url"))?
            .to_string();
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(bad("the tang url is not http:// or https://"));
        }
        let thp = text(obj, "thp")?.map(str::to_string);
        let adv = match obj.get("adv") {
            None => AdvSource::Server,
            Some(Value::String(f)) => AdvSource::File(f.clone()),
            Some(o @ Value::Object(_)) => AdvSource::Json(o.clone()),
            Some(_) => return Err(bad("adv is not a JWS object or a file name")),
        };
        Ok(TangConfig { url, thp, adv })
    }

    /// The advertisement's JWS as bytes, for [`AdvSource::Json`] and [`AdvSource::File`].
    pub(crate) fn given_adv(&self) -> Result<Option<Vec<u8>>, TangError> {
        match &self.adv {
            AdvSource::Server => Ok(None),
            AdvSource::Json(v) => serde_json::to_vec(v)
                .map(Some)
                .map_err(|_| bad("adv is not JSON")),
            AdvSource::File(f) => {
                use std::io::Read as _;
                let mut out = Vec::new();
                std::fs::File::open(f)
                    .and_then(|file| file.take(MAX_ADV_FILE + 1).read_to_end(&mut out))
                    .map_err(|e| bad(format!("advertisement file {}: {e}", f.escape_debug())))?;
                if out.len() as u64 > MAX_ADV_FILE {
                    return Err(bad(format!(
                        "advertisement file {} is longer than {MAX_ADV_FILE} bytes",
                        f.escape_debug()
                    )));
                }
                Ok(Some(out))
            }
        }
    }
}

impl Tpm2Config {
    /// Parse a `tpm2` configuration as clevis 19 reads it.
    pub fn from_value(v: &Value) -> Result<Tpm2Config, TangError> {
        let obj = object(v, "tpm2")?;
        for k in obj.keys() {
            if !["hash", "key", "pcr_bank", "pcr_ids"].contains(&k.as_str()) {
                return Err(bad(format!(
                    "{} is not supported by lukskit",
                    k.escape_debug()
                )));
            }
        }
        if let Some(h) = text(obj, "hash")? {
            if h != "sha256" {
                return Err(bad("lukskit seals with hash sha256 only"));
            }
        }
        if let Some(k) = text(obj, "key")? {
            if k != "ecc" {
                return Err(bad("lukskit seals under an ecc primary key only"));
            }
        }
        let ids = match obj.get("pcr_ids") {
            None => String::new(),
            Some(Value::String(s)) => s.replace(' ', ""),
            Some(Value::Array(a)) => {
                if a.len() > 24 {
                    return Err(bad("pcr_ids has more than 24 PCRs"));
                }
                a.iter()
                    .map(|v| match v {
                        Value::Number(n) => Ok(n.to_string()),
                        Value::String(s) => Ok(s.clone()),
                        _ => Err(bad("pcr_ids holds something that is not a PCR")),
                    })
                    .collect::<Result<Vec<_>, _>>()?
                    .join(",")
            }
            Some(_) => return Err(bad("pcr_ids is not a string or an array")),
        };
        let pcr_mask =
            lukskit_tpm2::enroll::parse_pcr_list(&ids).map_err(|e| bad(e.to_string()))?;
        let bank = text(obj, "pcr_bank")?.unwrap_or("sha1");
        let pcr_bank =
            lukskit_tpm2::token::bank_from_name(bank).ok_or_else(|| bad("unknown pcr_bank"))?;
        Ok(Tpm2Config { pcr_bank, pcr_mask })
    }
}

impl SssConfig {
    fn from_value(v: &Value, depth: usize) -> Result<SssConfig, TangError> {
        let obj = object(v, "sss")?;
        for k in obj.keys() {
            if !["t", "pins"].contains(&k.as_str()) {
                return Err(bad(format!(
                    "{} is not an sss configuration property",
                    k.escape_debug()
                )));
            }
        }
        let pins_obj = obj
            .get("pins")
            .ok_or_else(|| bad("the sss pin needs pins"))?
            .as_object()
            .ok_or_else(|| bad("sss pins is not a JSON object"))?;
        // Count first (clevis' npins: an object is one pin, an array its length), so that a
        // huge array is refused before any of it is parsed.
        let mut n = 0usize;
        for (name, cfgs) in pins_obj {
            n = n.saturating_add(match cfgs {
                Value::Object(_) => 1,
                Value::Array(a) => a.len(),
                _ => {
                    return Err(bad(format!(
                        "sss pins.{} is not an object or an array",
                        name.escape_debug()
                    )))
                }
            });
        }
        if n > MAX_PINS {
            return Err(bad(format!("an sss pin has more than {MAX_PINS} pins")));
        }
        let t = match obj.get("t") {
            None => 1,
            Some(t) => t
                .as_u64()
                .and_then(|t| usize::try_from(t).ok())
                .ok_or_else(|| bad("sss t is not a whole number"))?,
        };
        if t < 1 || t > n {
            return Err(bad(format!(
                "invalid threshold (required: 1 <= {t} <= {n})"
            )));
        }
        let mut pins = Vec::with_capacity(n);
        for (name, cfgs) in pins_obj {
            match cfgs {
                Value::Array(a) => {
                    for c in a {
                        pins.push(PinConfig::from_value(name, c, depth + 1)?);
                    }
                }
                c => pins.push(PinConfig::from_value(name, c, depth + 1)?),
            }
        }
        Ok(SssConfig { t, pins })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_clevis_takes_is_parsed() {
        let c = PinConfig::parse(
            "sss",
            r#"{"t":2,"pins":{"tang":[{"url":"http://a"},{"url":"http://b","thp":"x"}],
                "tpm2":{"pcr_bank":"sha256","pcr_ids":"0,7"},
                "sss":{"pins":{"tpm2":{}}}}}"#,
        )
        .unwrap();
        let PinConfig::Sss(s) = c else { panic!() };
        assert_eq!(s.t, 2);
        assert_eq!(
            s.pins.iter().map(PinConfig::name).collect::<Vec<_>>(),
            ["tang", "tang", "tpm2", "sss"]
        );
        assert_eq!(
            s.pins[2],
            PinConfig::Tpm2(Tpm2Config {
                pcr_bank: lukskit_tpm2::tpm::alg::SHA256,
                pcr_mask: 0x81
            })
        );
        let PinConfig::Sss(inner) = &s.pins[3] else {
            panic!()
        };
        assert_eq!(inner.t, 1);
        assert_eq!(
            PinConfig::parse("tpm2", r#"{"pcr_ids":[7,"8"]}"#).unwrap(),
            PinConfig::Tpm2(Tpm2Config {
                pcr_bank: lukskit_tpm2::tpm::alg::SHA1,
                pcr_mask: 0x180
            })
        );
    }

    #[test]
    fn hostile_configurations_are_refused() {
        let many = format!(
            r#"{{"t":1,"pins":{{"tang":[{}]}}}}"#,
            vec![r#"{"url":"http://a"}"#; MAX_PINS + 1].join(",")
        );
        let mut deep = r#"{"pins":{"tpm2":{}}}"#.to_string();
        for _ in 0..MAX_DEPTH {
            deep = format!(r#"{{"pins":{{"sss":{deep}}}}}"#);
        }
        let huge = format!(
            r#"{{"pins":{{"tpm2":{{}}}},"x":"{}"}}"#,
            "a".repeat(MAX_CONFIG)
        );
        for (pin, cfg, why) in [
            (
                "sss",
                r#"{"t":0,"pins":{"tpm2":{}}}"#,
                "invalid threshold (required: 1 <= 0 <= 1)",
            ),
            (
                "sss",
                r#"{"t":3,"pins":{"tpm2":{},"tang":{"url":"http://a"}}}"#,
                "invalid threshold (required: 1 <= 3 <= 2)",
            ),
            (
                "sss",
                r#"{"t":-1,"pins":{"tpm2":{}}}"#,
                "sss t is not a whole number",
            ),
            (
                "sss",
                r#"{"t":1,"pins":{"yubikey":{}}}"#,
                "the pin yubikey is not supported (tang, tpm2 and sss are)",
            ),
            ("sss", r#"{"t":1}"#, "the sss pin needs pins"),
            (
                "sss",
                r#"{"t":1,"pins":{"tpm2":7}}"#,
                "sss pins.tpm2 is not an object or an array",
            ),
            ("sss", &many, "an sss pin has more than 16 pins"),
            ("sss", &deep, "sss pins nested more than 4 deep"),
            ("sss", &huge, "longer than 65536 bytes"),
            ("sss", "[", "not JSON"),
            ("tang", "{}", "the tang pin needs a url"),
            (
                "tang",
                r#"{"url":"file:///etc/passwd"}"#,
                "the tang url is not http:// or https://",
            ),
            (
                "tang",
                r#"{"url":"http://a","adv":1}"#,
                "adv is not a JWS object or a file name",
            ),
            (
                "tpm2",
                r#"{"key":"rsa"}"#,
                "lukskit seals under an ecc primary key only",
            ),
            ("tpm2", r#"{"pcr_bank":"md5"}"#, "unknown pcr_bank"),
            ("tpm2", "[]", "the tpm2 configuration is not a JSON object"),
            (
                "null",
                "{}",
                "the pin null is not supported (tang, tpm2 and sss are)",
            ),
        ] {
            match PinConfig::parse(pin, cfg) {
                Err(TangError::Config(w)) => assert_eq!(w, why, "{cfg}"),
                other => panic!("{cfg}: {other:?}"),
            }
        }
        // As deep as lukskit unlocks is accepted.
        let mut ok = r#"{"pins":{"tpm2":{}}}"#.to_string();
        for _ in 0..MAX_DEPTH - 1 {
            ok = format!(r#"{{"pins":{{"sss":{ok}}}}}"#);
        }
        PinConfig::parse("sss", &ok).unwrap();
    }
}
