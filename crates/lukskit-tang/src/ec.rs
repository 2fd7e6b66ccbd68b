//! Elliptic-curve JWKs (RFC 7517/7518) on P-256, P-384 and P-521, their thumbprints
//! (RFC 7638), and the point operations of ECDH-ES and of the McCallum-Relyea exchange.

use crate::{b64d, b64e, TangError};
use elliptic_curve::group::Curve as _;
use elliptic_curve::sec1::{FromSec1Point, ModulusSize, Sec1Point, ToSec1Point};
use elliptic_curve::{
    AffinePoint, CurveArithmetic, FieldBytes, FieldBytesSize, Generate, ProjectivePoint, SecretKey,
};
use lukskit_crypto::SecretBuf;
use serde_json::{json, Value};
use sha2::Digest;

/// The NIST curves JOSE names (`crv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crv {
    /// P-256.
    P256,
    /// P-384.
    P384,
    /// P-521 (tang's default).
    P521,
}

impl Crv {
    /// The curve of a JOSE `crv` name.
    pub fn from_name(name: &str) -> Result<Crv, TangError> {
        match name {
            "P-256" => Ok(Crv::P256),
            "P-384" => Ok(Crv::P384),
            "P-521" => Ok(Crv::P521),
            other => Err(TangError::UnsupportedCurve(other.to_string())),
        }
    }

    /// The JOSE name.
    pub fn name(self) -> &'static str {
        match self {
            Crv::P256 => "P-256",
            Crv::P384 => "P-384",
            Crv::P521 => "P-521",
        }
    }

    /// Length of a coordinate in bytes.
    pub fn coord_len(self) -> usize {
        match self {
            Crv::P256 => 32,
            Crv::P384 => 48,
            Crv::P521 => 66,
        }
    }
}

/// A public EC key: curve and affine coordinates (big-endian, full length), checked to be
/// a point of the curve other than the identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EcPub {
    /// The curve.
    pub crv: Crv,
    /// x coordinate.
    pub x: Vec<u8>,
    /// y coordinate.
    pub y: Vec<u8>,
}

/// An EC private key (zeroized on drop), with its public half.
pub struct EcPriv {
    /// The public key.
    pub public: EcPub,
    d: SecretBuf,
}

macro_rules! on_curve {
    ($crv:expr, $f:ident ( $($a:expr),* )) => {
        match $crv {
            Crv::P256 => $f::<p256::NistP256>($($a),*),
            Crv::P384 => $f::<p384::NistP384>($($a),*),
            Crv::P521 => $f::<p521::NistP521>($($a),*),
        }
    };
}

fn point<C>(p: &EcPub) -> Result<ProjectivePoint<C>, TangError>
where
    C: CurveArithmetic,
    FieldBytesSize<C>: ModulusSize,
    AffinePoint<C>: FromSec1Point<C> + ToSec1Point<C>,
{
    let x = FieldBytes::<C>::try_from(p.x.as_slice()).map_err(|_| TangError::BadKey("x"))?;
    let y = FieldBytes::<C>::try_from(p.y.as_slice()).map_err(|_| TangError::BadKey("y"))?;
    let enc = Sec1Point::<C>::from_affine_coordinates(&x, &y, false);
    let a: Option<AffinePoint<C>> = AffinePoint::<C>::from_sec1_point(&enc).into_option();
    let a = a.ok_or(TangError::BadKey("not a point of the curve"))?;
    Ok(ProjectivePoint::<C>::from(a))
}

fn check<C>(p: &EcPub) -> Result<(), TangError>
where
    C: CurveArithmetic,
    FieldBytesSize<C>: ModulusSize,
    AffinePoint<C>: FromSec1Point<C> + ToSec1Point<C>,
{
    point::<C>(p).map(|_| ())
}

fn to_pub<C>(crv: Crv, p: &ProjectivePoint<C>) -> Result<EcPub, TangError>
where
    C: CurveArithmetic,
    FieldBytesSize<C>: ModulusSize,
    AffinePoint<C>: FromSec1Point<C> + ToSec1Point<C>,
{
    let enc = p.to_affine().to_sec1_point(false);
    match (enc.x(), enc.y()) {
        (Some(x), Some(y)) => Ok(EcPub {
            crv,
            x: x.to_vec(),
            y: y.to_vec(),
        }),
        _ => Err(TangError::BadKey("point at infinity")),
    }
}

fn gen<C>(crv: Crv) -> Result<EcPriv, TangError>
where
    C: CurveArithmetic,
    FieldBytesSize<C>: ModulusSize,
    AffinePoint<C>: FromSec1Point<C> + ToSec1Point<C>,
    SecretKey<C>: Generate,
{
    let sk = SecretKey::<C>::try_generate().map_err(|_| TangError::Random)?;
    let public = to_pub::<C>(
        crv,
        &ProjectivePoint::<C>::from(sk.public_key().to_projective()),
    )?;
    let mut bytes = sk.to_bytes();
    let d = SecretBuf::from_slice(&bytes);
    zeroize::Zeroize::zeroize(bytes.as_mut_slice());
    Ok(EcPriv { public, d })
}

fn scalar<C>(d: &SecretBuf) -> Result<SecretKey<C>, TangError>
where
    C: CurveArithmetic,
{
    SecretKey::<C>::from_slice(d.as_bytes()).map_err(|_| TangError::BadKey("d"))
}

/// `a + b`.
fn add<C>(a: &EcPub, b: &EcPub) -> Result<EcPub, TangError>
where
    C: CurveArithmetic,
    FieldBytesSize<C>: ModulusSize,
    AffinePoint<C>: FromSec1Point<C> + ToSec1Point<C>,
{
    to_pub::<C>(a.crv, &(point::<C>(a)? + point::<C>(b)?))
}

/// The x coordinate of `a - k·b` (a secret): the last step of the recovery (`Y - e·S`).
fn sub_mul<C>(a: &EcPub, k: &SecretBuf, b: &EcPub) -> Result<SecretBuf, TangError>
where
    C: CurveArithmetic,
    FieldBytesSize<C>: ModulusSize,
    AffinePoint<C>: FromSec1Point<C> + ToSec1Point<C>,
{
    let k = scalar::<C>(k)?;
    let kb = point::<C>(b)? * *k.to_nonzero_scalar();
    let p = (point::<C>(a)? - kb).to_affine();
    let enc = p.to_sec1_point(false);
    enc.x()
        .map(|x| SecretBuf::from_slice(x))
        .ok_or(TangError::BadKey("point at infinity"))
}

/// The ECDH x coordinate of `k·b` (a secret).
fn ecdh<C>(k: &SecretBuf, b: &EcPub) -> Result<SecretBuf, TangError>
where
    C: CurveArithmetic,
    FieldBytesSize<C>: ModulusSize,
    AffinePoint<C>: FromSec1Point<C> + ToSec1Point<C>,
{
    let k = scalar::<C>(k)?;
    let p = (point::<C>(b)? * *k.to_nonzero_scalar()).to_affine();
    let enc = p.to_sec1_point(false);
    enc.x()
        .map(|x| SecretBuf::from_slice(x))
        .ok_or(TangError::BadKey("point at infinity"))
}

impl EcPub {
    /// Parse a public EC JWK (`kty` EC, `crv`, `x`, `y`); the point is checked.
    pub fn from_jwk(v: &Value) -> Result<EcPub, TangError> {
        if v.get("kty").and_then(Value::as_str) != Some("EC") {
            return Err(TangError::BadKey("kty is not EC"));
        }
        let crv = Crv::from_name(
            v.get("crv")
                .and_then(Value::as_str)
                .ok_or(TangError::BadKey("crv"))?,
        )?;
        let coord = |n: &'static str| -> Result<Vec<u8>, TangError> {
            let b = b64d(
                v.get(n)
                    .and_then(Value::as_str)
                    .ok_or(TangError::BadKey(n))?,
            )
            .map_err(|_| TangError::BadKey(n))?;
            if b.len() != crv.coord_len() {
                return Err(TangError::BadKey(n));
            }
            Ok(b)
        };
        let p = EcPub {
            crv,
            x: coord("x")?,
            y: coord("y")?,
        };
        on_curve!(crv, check(&p))?;
        Ok(p)
    }

    /// The public JWK (members in lexicographic order, as the thumbprint wants them).
    pub fn to_jwk(&self) -> Value {
        json!({"crv": self.crv.name(), "kty": "EC", "x": b64e(&self.x), "y": b64e(&self.y)})
    }

    /// `self + other` (the client's blinded key `C + E`).
    pub fn add(&self, other: &EcPub) -> Result<EcPub, TangError> {
        if self.crv != other.crv {
            return Err(TangError::BadKey("curves differ"));
        }
        on_curve!(self.crv, add(self, other))
    }
}

impl EcPriv {
    /// A fresh random key on `crv`.
    pub fn generate(crv: Crv) -> Result<EcPriv, TangError> {
        on_curve!(crv, gen(crv))
    }

    /// ECDH: the x coordinate of `d·peer`.
    pub fn ecdh(&self, peer: &EcPub) -> Result<SecretBuf, TangError> {
        if self.public.crv != peer.crv {
            return Err(TangError::BadKey("curves differ"));
        }
        on_curve!(peer.crv, ecdh(&self.d, peer))
    }

    /// The x coordinate of `y - d·s`: with `y = s_server·(C + E)`, `d = e` and `s = S` this
    /// is the ECDH secret of `s_server·C`.
    pub fn recover(&self, y: &EcPub, s: &EcPub) -> Result<SecretBuf, TangError> {
        if y.crv != s.crv || self.public.crv != s.crv {
            return Err(TangError::BadKey("curves differ"));
        }
        on_curve!(s.crv, sub_mul(y, &self.d, s))
    }
}

/// A JWK thumbprint (RFC 7638) of a public EC key with SHA-256 (`S256`, clevis' default)
/// or SHA-1 (`S1`, which tang still accepts).
pub fn thumbprint(jwk: &Value, sha1: bool) -> Option<String> {
    // The required members of an EC key, in lexicographic order, no whitespace.
    let s = |n: &str| jwk.get(n).and_then(Value::as_str);
    if s("kty")? != "EC" {
        return None;
    }
    let text = format!(
        "{{\"crv\":{},\"kty\":\"EC\",\"x\":{},\"y\":{}}}",
        Value::from(s("crv")?),
        Value::from(s("x")?),
        Value::from(s("y")?)
    );
    Some(if sha1 {
        b64e(&sha1::Sha1::digest(text.as_bytes()))
    } else {
        b64e(&sha2::Sha256::digest(text.as_bytes()))
    })
}

/// Whether `jwk` has thumbprint `thp` (SHA-256 or SHA-1).
pub fn has_thumbprint(jwk: &Value, thp: &str) -> bool {
    [false, true]
        .iter()
        .any(|&s1| thumbprint(jwk, s1).as_deref() == Some(thp))
}

/// Verify an ECDSA JWS signature (`ES256`/`ES384`/`ES512`, `r‖s`) over `input` with `key`.
pub fn verify_es(alg: &str, key: &EcPub, input: &[u8], sig: &[u8]) -> bool {
    use p521::ecdsa::signature::Verifier;
    let sec1 = [&[4u8][..], &key.x, &key.y].concat();
    match (alg, key.crv) {
        ("ES256", Crv::P256) => {
            let (Ok(k), Ok(s)) = (
                p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1),
                p256::ecdsa::Signature::from_slice(sig),
            ) else {
                return false;
            };
            k.verify(input, &s).is_ok()
        }
        ("ES384", Crv::P384) => {
            let (Ok(k), Ok(s)) = (
                p384::ecdsa::VerifyingKey::from_sec1_bytes(&sec1),
                p384::ecdsa::Signature::from_slice(sig),
            ) else {
                return false;
            };
            k.verify(input, &s).is_ok()
        }
        ("ES512", Crv::P521) => {
            let (Ok(k), Ok(s)) = (
                p521::ecdsa::VerifyingKey::from_sec1_bytes(&sec1),
                p521::ecdsa::Signature::from_slice(sig),
            ) else {
                return false;
            };
            k.verify(input, &s).is_ok()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcallum_relyea_recovers_the_ecdh_secret() {
        for crv in [Crv::P256, Crv::P384, Crv::P521] {
            let server = EcPriv::generate(crv).unwrap();
            let client = EcPriv::generate(crv).unwrap();
            // What encryption derives: x(c·S).
            let z = client.ecdh(&server.public).unwrap();
            // Recovery: X = C + E, Y = s·X, s·C = Y - e·S.
            let e = EcPriv::generate(crv).unwrap();
            let x = client.public.add(&e.public).unwrap();
            let y = {
                let d = &server.d;
                on_curve!(crv, mul_pub(d, &x)).unwrap()
            };
            let sc = e.recover(&y, &server.public).unwrap();
            assert_eq!(sc.as_bytes(), z.as_bytes(), "{crv:?}");
            assert_ne!(x, client.public);
        }
    }

    fn mul_pub<C>(d: &SecretBuf, p: &EcPub) -> Result<EcPub, TangError>
    where
        C: CurveArithmetic,
        FieldBytesSize<C>: ModulusSize,
        AffinePoint<C>: FromSec1Point<C> + ToSec1Point<C>,
    {
        let k = scalar::<C>(d)?;
        to_pub::<C>(p.crv, &(point::<C>(p)? * *k.to_nonzero_scalar()))
    }

    #[test]
    fn jwk_checks_the_point() {
        let k = EcPriv::generate(Crv::P256).unwrap();
        let mut j = k.public.to_jwk();
        assert_eq!(EcPub::from_jwk(&j).unwrap(), k.public);
        let mut y = k.public.y.clone();
        y[31] ^= 1;
        j["y"] = b64e(&y).into();
        assert!(EcPub::from_jwk(&j).is_err());
    }

    #[test]
    fn rfc7638_example_shape() {
        // Thumbprints ignore members other than the required ones and their order.
        let a = json!({"kty":"EC","y":"Yg","x":"WA","crv":"P-256","alg":"ECMR"});
        let b = json!({"crv":"P-256","kty":"EC","x":"WA","y":"Yg"});
        assert_eq!(thumbprint(&a, false), thumbprint(&b, false));
        assert_eq!(thumbprint(&a, false).unwrap().len(), 43);
        assert_eq!(thumbprint(&a, true).unwrap().len(), 27);
    }
}
