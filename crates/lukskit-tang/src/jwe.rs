//! The flattened JWE of a clevis token: `ECDH-ES` direct key agreement (RFC 7518 §4.6) with
//! the Concat KDF (NIST SP 800-56A §5.8.1, one SHA-256 round per 256 bits) and AES-GCM
//! content encryption (RFC 7518 §5.3), the protected header being the AAD.

use crate::{b64d, b64e, TangError};
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm, Nonce, Tag};
use lukskit_crypto::SecretBuf;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

type Aes192Gcm = AesGcm<aes_gcm::aes::Aes192, U12>;

/// A parsed flattened JWE.
#[derive(Debug, Clone)]
pub struct Jwe {
    /// The protected header as stored (base64url): the AAD.
    protected: String,
    /// The decoded protected header.
    pub header: Value,
    iv: Vec<u8>,
    ciphertext: Vec<u8>,
    tag: Vec<u8>,
}

/// The largest ciphertext accepted (a keyslot passphrase is at most 8 MiB in cryptsetup; a
/// clevis one is far shorter). The LUKS2 JSON area already bounds it.
const MAX_CIPHERTEXT: usize = 8 << 20;

fn field<'a>(v: &'a Value, n: &'static str) -> Result<&'a str, TangError> {
    v.get(n)
        .and_then(Value::as_str)
        .ok_or(TangError::Malformed(n))
}

fn dec(v: &Value, n: &'static str) -> Result<Vec<u8>, TangError> {
    b64d(field(v, n)?).map_err(|_| TangError::Malformed(n))
}

impl Jwe {
    /// Parse `{"protected","iv","ciphertext","tag","encrypted_key"}`.
    pub fn parse(v: &Value) -> Result<Jwe, TangError> {
        // Direct key agreement: no wrapped key.
        if let Some(k) = v.get("encrypted_key") {
            if k.as_str() != Some("") {
                return Err(TangError::Malformed("encrypted_key must be empty"));
            }
        }
        if v.get("aad").is_some() || v.get("header").is_some() {
            return Err(TangError::Malformed("unprotected header or aad"));
        }
        let protected = field(v, "protected")?.to_string();
        let header: Value = serde_json::from_slice(&dec(v, "protected")?)
            .map_err(|_| TangError::Malformed("protected header is not JSON"))?;
        let alg = field(&header, "alg")?;
        if alg != "ECDH-ES" && alg != "dir" {
            return Err(TangError::UnsupportedAlg(alg.to_string()));
        }
        key_bits(field(&header, "enc")?)?;
        let ciphertext = dec(v, "ciphertext")?;
        if ciphertext.len() > MAX_CIPHERTEXT {
            return Err(TangError::Malformed("ciphertext too long"));
        }
        let iv = dec(v, "iv")?;
        let tag = dec(v, "tag")?;
        if iv.len() != 12 || tag.len() != 16 {
            return Err(TangError::Malformed("iv or tag length"));
        }
        Ok(Jwe {
            protected,
            header,
            iv,
            ciphertext,
            tag,
        })
    }

    /// Parse the compact serialization (`protected.encrypted_key.iv.ciphertext.tag`), as the
    /// nested pins of a clevis `sss` pin are stored.
    pub fn parse_compact(s: &str) -> Result<Jwe, TangError> {
        let parts: Vec<&str> = s.trim().split('.').collect();
        let [protected, encrypted_key, iv, ciphertext, tag] = parts[..] else {
            return Err(TangError::Malformed("a compact JWE has five parts"));
        };
        Jwe::parse(&json!({
            "protected": protected,
            "encrypted_key": encrypted_key,
            "iv": iv,
            "ciphertext": ciphertext,
            "tag": tag,
        }))
    }

    /// The flattened JSON form.
    pub fn to_json(&self) -> Value {
        json!({
            "ciphertext": b64e(&self.ciphertext),
            "encrypted_key": "",
            "iv": b64e(&self.iv),
            "protected": self.protected,
            "tag": b64e(&self.tag),
        })
    }

    /// The compact serialization (`protected..iv.ciphertext.tag`): how `clevis encrypt`
    /// writes a JWE, and how an `sss` pin holds its nested ones.
    pub fn to_compact(&self) -> String {
        format!(
            "{}..{}.{}.{}",
            self.protected,
            b64e(&self.iv),
            b64e(&self.ciphertext),
            b64e(&self.tag)
        )
    }

    /// Decrypt with the ECDH shared secret `z` (the x coordinate): `ECDH-ES`.
    pub fn decrypt(&self, z: &SecretBuf) -> Result<SecretBuf, TangError> {
        if field(&self.header, "alg")? != "ECDH-ES" {
            return Err(TangError::Malformed("alg is not ECDH-ES"));
        }
        let enc = field(&self.header, "enc")?;
        let cek = concat_kdf(z, enc, &self.header)?;
        self.decrypt_content(&cek)
    }

    /// Decrypt with the content key `cek` itself: `dir` (the clevis `tpm2` and `sss` pins).
    pub fn decrypt_direct(&self, cek: &SecretBuf) -> Result<SecretBuf, TangError> {
        if field(&self.header, "alg")? != "dir" {
            return Err(TangError::Malformed("alg is not dir"));
        }
        let bits = key_bits(field(&self.header, "enc")?)?;
        if cek.len() * 8 != bits as usize {
            return Err(TangError::Decrypt);
        }
        self.decrypt_content(cek)
    }

    fn decrypt_content(&self, cek: &SecretBuf) -> Result<SecretBuf, TangError> {
        let enc = field(&self.header, "enc")?;
        let mut out = SecretBuf::from_slice(&self.ciphertext);
        let nonce = Nonce::<U12>::try_from(self.iv.as_slice()).map_err(|_| TangError::Decrypt)?;
        let tag = Tag::try_from(self.tag.as_slice()).map_err(|_| TangError::Decrypt)?;
        let aad = self.protected.as_bytes();
        let buf = out.as_mut_bytes();
        let r = match enc {
            "A128GCM" => Aes128Gcm::new_from_slice(cek.as_bytes())
                .map_err(|_| TangError::Decrypt)?
                .decrypt_inout_detached(&nonce, aad, buf.into(), &tag),
            "A192GCM" => Aes192Gcm::new_from_slice(cek.as_bytes())
                .map_err(|_| TangError::Decrypt)?
                .decrypt_inout_detached(&nonce, aad, buf.into(), &tag),
            _ => Aes256Gcm::new_from_slice(cek.as_bytes())
                .map_err(|_| TangError::Decrypt)?
                .decrypt_inout_detached(&nonce, aad, buf.into(), &tag),
        };
        r.map_err(|_| TangError::Decrypt)?;
        Ok(out)
    }

    /// Encrypt `plaintext` under the header `header` (which names `enc`) with shared secret
    /// `z`, with a fresh random IV.
    pub fn encrypt(header: Value, z: &SecretBuf, plaintext: &SecretBuf) -> Result<Jwe, TangError> {
        let protected =
            b64e(&serde_json::to_vec(&header).map_err(|_| TangError::Malformed("header"))?);
        let enc = field(&header, "enc")?;
        if enc != "A256GCM" {
            return Err(TangError::UnsupportedAlg(enc.to_string()));
        }
        let cek = concat_kdf(z, enc, &header)?;
        Self::encrypt_content(header, protected, &cek, plaintext)
    }

    /// Encrypt `plaintext` under `header` (`alg: dir`, `enc: A256GCM`) with the content key
    /// `cek` itself, as `jose jwe enc` does with an `oct` JWK (the clevis `tpm2` pin).
    pub fn encrypt_direct(
        header: Value,
        cek: &SecretBuf,
        plaintext: &SecretBuf,
    ) -> Result<Jwe, TangError> {
        if field(&header, "alg")? != "dir" || field(&header, "enc")? != "A256GCM" {
            return Err(TangError::Malformed("not dir with A256GCM"));
        }
        if cek.len() != 32 {
            return Err(TangError::Malformed("content key size"));
        }
        let protected =
            b64e(&serde_json::to_vec(&header).map_err(|_| TangError::Malformed("header"))?);
        Self::encrypt_content(header, protected, cek, plaintext)
    }

    fn encrypt_content(
        header: Value,
        protected: String,
        cek: &SecretBuf,
        plaintext: &SecretBuf,
    ) -> Result<Jwe, TangError> {
        let iv = SecretBuf::random(12).map_err(|_| TangError::Random)?;
        let nonce = Nonce::<U12>::try_from(iv.as_bytes()).map_err(|_| TangError::Random)?;
        let mut buf = plaintext.as_bytes().to_vec();
        let tag = Aes256Gcm::new_from_slice(cek.as_bytes())
            .map_err(|_| TangError::Random)?
            .encrypt_inout_detached(&nonce, protected.as_bytes(), buf.as_mut_slice().into())
            .map_err(|_| TangError::Random)?;
        Ok(Jwe {
            protected,
            header,
            iv: iv.as_bytes().to_vec(),
            ciphertext: buf,
            tag: tag.to_vec(),
        })
    }
}

fn key_bits(enc: &str) -> Result<u32, TangError> {
    match enc {
        "A128GCM" => Ok(128),
        "A192GCM" => Ok(192),
        "A256GCM" => Ok(256),
        other => Err(TangError::UnsupportedAlg(other.to_string())),
    }
}

/// RFC 7518 §4.6.2: the content key for direct key agreement with `enc`.
fn concat_kdf(z: &SecretBuf, enc: &str, header: &Value) -> Result<SecretBuf, TangError> {
    let bits = key_bits(enc)?;
    let party = |n: &'static str| -> Result<Vec<u8>, TangError> {
        match header.get(n) {
            None => Ok(Vec::new()),
            Some(_) => dec(header, n),
        }
    };
    let (apu, apv) = (party("apu")?, party("apv")?);
    let len = |b: &[u8]| (b.len() as u32).to_be_bytes();
    let mut out = SecretBuf::zeroed(bits as usize / 8);
    let mut done = 0;
    let mut counter = 1u32;
    while done < out.len() {
        let mut h = Sha256::new();
        h.update(counter.to_be_bytes());
        h.update(z.as_bytes());
        h.update(len(enc.as_bytes()));
        h.update(enc.as_bytes());
        h.update(len(&apu));
        h.update(&apu);
        h.update(len(&apv));
        h.update(&apv);
        h.update(bits.to_be_bytes());
        let mut d = h.finalize();
        let n = (out.len() - done).min(d.len());
        out.as_mut_bytes()[done..done + n].copy_from_slice(&d[..n]);
        zeroize::Zeroize::zeroize(d.as_mut_slice());
        done += n;
        counter += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7518 Appendix C: ECDH-ES key agreement computation (A128GCM, apu "Alice",
    /// apv "Bob").
    #[test]
    fn rfc7518_appendix_c() {
        let z = SecretBuf::from_slice(&[
            158, 86, 217, 29, 129, 113, 53, 211, 114, 131, 66, 131, 191, 132, 38, 156, 251, 49,
            110, 163, 218, 128, 106, 72, 246, 218, 167, 121, 140, 254, 144, 196,
        ]);
        let header = json!({"alg":"ECDH-ES","enc":"A128GCM","apu":"QWxpY2U","apv":"Qm9i"});
        let k = concat_kdf(&z, "A128GCM", &header).unwrap();
        assert_eq!(b64e(k.as_bytes()), "VqqN6vgjbSBcIijNcacQGg");
    }

    #[test]
    fn round_trip_and_tamper() {
        let z = SecretBuf::from_slice(&[7u8; 66]);
        let header = json!({"alg":"ECDH-ES","enc":"A256GCM","kid":"k"});
        let p = SecretBuf::from_slice(b"secret passphrase");
        let j = Jwe::encrypt(header, &z, &p).unwrap();
        let back = Jwe::parse(&j.to_json()).unwrap();
        assert_eq!(back.decrypt(&z).unwrap().as_bytes(), b"secret passphrase");
        assert!(matches!(
            back.decrypt(&SecretBuf::from_slice(&[8u8; 66])),
            Err(TangError::Decrypt)
        ));
        let mut t = j.to_json();
        t["protected"] = b64e(br#"{"alg":"ECDH-ES","enc":"A256GCM","kid":"l"}"#).into();
        assert!(matches!(
            Jwe::parse(&t).unwrap().decrypt(&z),
            Err(TangError::Decrypt)
        ));
    }
}
