//! Shamir's secret sharing as clevis' `sss` pin does it (clevis 19, `src/pins/sss/sss.c`):
//!
//! - [`split`]: a prime `p` of 256 bits, a random polynomial `f` of degree `t − 1` over
//!   GF(p) whose coefficients are below `p`; the key is `f(0)` (32 bytes, big-endian) and
//!   each share is a point `x ‖ f(x)` for a random `x` (each coordinate 32 bytes);
//! - [`recover`]: `f(0)` by Lagrange interpolation of `t` points (clevis' `sss_recover`).
//!
//! clevis makes `p` a safe prime with OpenSSL; Shamir's scheme needs only a prime larger
//! than the key, and the decrypting side reads `p` from the token, so lukskit makes a random
//! 256-bit prime (trial division, then 64 Miller–Rabin rounds with random bases: the chance
//! of a composite is below 2⁻¹²⁸). Coefficients, the key and the points are secrets: they
//! live in [`SecretBuf`]s and the big integers are zeroized after use.

use crate::TangError;
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, NonZero, Odd, Resize as _};
use lukskit_crypto::SecretBuf;
use zeroize::Zeroize as _;

/// The length of the prime, the key and each coordinate: clevis' `sss_generate(32, t)`.
pub const KEY_BYTES: usize = 32;
const BITS: u32 = (KEY_BYTES * 8) as u32;
/// Miller–Rabin rounds for a new prime.
const ROUNDS: usize = 64;

/// A polynomial's key and its shares.
pub struct Shares {
    /// The prime, big-endian, [`KEY_BYTES`] long (`clevis.sss.p` before base64url).
    pub prime: Vec<u8>,
    /// `f(0)`: the content key of the `sss` pin's JWE.
    pub key: SecretBuf,
    /// One point `x ‖ f(x)` per share.
    pub points: Vec<SecretBuf>,
}

fn random_bytes(n: usize) -> Result<SecretBuf, TangError> {
    SecretBuf::random(n).map_err(|_| TangError::Random)
}

fn num(b: &[u8]) -> Result<BoxedUint, TangError> {
    BoxedUint::from_be_slice(b, BITS).map_err(|_| TangError::Random)
}

/// A uniformly random number in `[low, p)`: rejection sampling among the numbers of as many
/// bits as `p` (at least half of them are below it).
fn random_below(p: &BoxedUint, low: u64) -> Result<BoxedUint, TangError> {
    let low = BoxedUint::from(low).resize(BITS);
    let bits = p.bit_width();
    let unused = BITS - bits;
    loop {
        let mut r = random_bytes(KEY_BYTES)?;
        let b = r.as_mut_bytes();
        for (i, byte) in b.iter_mut().enumerate() {
            let from_top = (i as u32) * 8;
            if from_top + 8 <= unused {
                *byte = 0;
            } else if from_top < unused {
                *byte &= 0xff >> (unused - from_top);
            }
        }
        let v = num(r.as_bytes())?;
        if v < *p && v >= low {
            return Ok(v);
        }
    }
}

/// Odd primes below 1000, for trial division.
fn small_primes() -> impl Iterator<Item = u32> {
    (3u32..1000).step_by(2).filter(|n| {
        (3..*n)
            .step_by(2)
            .take_while(|d| d * d <= *n)
            .all(|d| n % d != 0)
    })
}

/// Whether the odd number `n` (above 1000) is prime, with [`ROUNDS`] Miller–Rabin rounds.
fn probably_prime(bytes: &[u8]) -> Result<bool, TangError> {
    for q in small_primes() {
        let r = bytes
            .iter()
            .fold(0u32, |r, &b| (r * 256 + u32::from(b)) % q);
        if r == 0 {
            return Ok(false);
        }
    }
    let n = num(bytes)?;
    let one = BoxedUint::one_with_precision(BITS);
    let n_minus_1 = n.wrapping_sub(&one);
    let s = n_minus_1.trailing_zeros();
    let d = n_minus_1.shr_vartime(s).ok_or(TangError::Random)?;
    let odd: Odd<BoxedUint> = Odd::new(n.clone()).into_option().ok_or(TangError::Random)?;
    let params = BoxedMontyParams::new(odd);
    let m_one = BoxedMontyForm::one(&params);
    let m_minus_1 = BoxedMontyForm::new(n_minus_1.clone(), &params);
    'rounds: for _ in 0..ROUNDS {
        let a = random_below(&n_minus_1, 2)?;
        let mut x = BoxedMontyForm::new(a, &params).pow(&d);
        if x == m_one || x == m_minus_1 {
            continue;
        }
        for _ in 1..s {
            x = x.square();
            if x == m_minus_1 {
                continue 'rounds;
            }
        }
        return Ok(false);
    }
    Ok(true)
}

/// A random prime of exactly 256 bits, big-endian.
pub fn random_prime() -> Result<Vec<u8>, TangError> {
    loop {
        let mut c = random_bytes(KEY_BYTES)?.as_bytes().to_vec();
        c[0] |= 0x80;
        c[KEY_BYTES - 1] |= 1;
        if probably_prime(&c)? {
            return Ok(c);
        }
    }
}

fn to_bytes(v: &BoxedUint) -> SecretBuf {
    let mut b = v.to_be_bytes();
    let out = SecretBuf::from_slice(&b[b.len() - KEY_BYTES..]);
    b.zeroize();
    out
}

/// A new polynomial of degree `t − 1` over a new prime, and `n` shares of it (`1 ≤ t ≤ n`).
pub fn split(t: usize, n: usize) -> Result<Shares, TangError> {
    if t == 0 || t > n {
        return Err(TangError::Config(format!(
            "the threshold {t} is not between 1 and the number of pins {n}"
        )));
    }
    let prime = random_prime()?;
    let p = num(&prime)?;
    let modulus: NonZero<BoxedUint> = NonZero::new(p.clone())
        .into_option()
        .ok_or(TangError::Random)?;
    let mut coef = (0..t)
        .map(|_| random_below(&p, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let mut xs: Vec<BoxedUint> = Vec::with_capacity(n);
    let mut points = Vec::with_capacity(n);
    while xs.len() < n {
        let x = random_below(&p, 1)?;
        if xs.contains(&x) {
            continue;
        }
        // Horner: f(x) = ((c[t-1]·x + c[t-2])·x + …)·x + c[0].
        let mut y = BoxedUint::zero_with_precision(BITS);
        for c in coef.iter().rev() {
            y = y.mul_mod(&x, &modulus).add_mod(c, &modulus);
        }
        let mut pt = SecretBuf::zeroed(2 * KEY_BYTES);
        pt.as_mut_bytes()[..KEY_BYTES].copy_from_slice(to_bytes(&x).as_bytes());
        pt.as_mut_bytes()[KEY_BYTES..].copy_from_slice(to_bytes(&y).as_bytes());
        y.zeroize();
        points.push(pt);
        xs.push(x);
    }
    let key = to_bytes(&coef[0]);
    for c in coef.iter_mut().chain(xs.iter_mut()) {
        c.zeroize();
    }
    Ok(Shares { prime, key, points })
}

/// Shamir recovery (clevis' `sss_recover`): the value at 0 of the polynomial through
/// `points` (each `x ‖ y`, big-endian, as long as `prime` each), modulo `prime`, as many
/// bytes as `prime` has.
pub fn recover(prime: &[u8], points: &[SecretBuf]) -> Result<SecretBuf, TangError> {
    let len = prime.len();
    let bits = u32::try_from(len * 8).map_err(|_| TangError::Malformed("clevis.sss.p"))?;
    let num = |b: &[u8]| BoxedUint::from_be_slice(b, bits).map_err(|_| TangError::Decrypt);
    let p = num(prime)?;
    let modulus: NonZero<BoxedUint> = NonZero::new(p.clone())
        .into_option()
        .ok_or(TangError::Malformed("clevis.sss.p"))?;
    let odd: Odd<BoxedUint> = Odd::new(p.clone())
        .into_option()
        .ok_or(TangError::Malformed("clevis.sss.p"))?;
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for pt in points {
        if pt.len() != 2 * len {
            return Err(TangError::Decrypt);
        }
        let (x, y) = pt.as_bytes().split_at(len);
        let (x, y) = (num(x)?, num(y)?);
        if x >= p || y >= p {
            return Err(TangError::Decrypt);
        }
        xs.push(x);
        ys.push(y);
    }
    let zero = BoxedUint::zero_with_precision(bits);
    let mut k = zero.clone();
    for i in 0..xs.len() {
        let mut acc = BoxedUint::one_with_precision(bits);
        for j in 0..xs.len() {
            if i == j {
                continue;
            }
            // acc *= (0 - x_j) / (x_i - x_j)
            let num = zero.sub_mod(&xs[j], &modulus);
            acc = acc.mul_mod(&num, &modulus);
            let den = xs[i].sub_mod(&xs[j], &modulus);
            let inv = den
                .invert_odd_mod(&odd)
                .into_option()
                .ok_or(TangError::Decrypt)?;
            acc = acc.mul_mod(&inv, &modulus);
        }
        let mut term = acc.mul_mod(&ys[i], &modulus);
        k = k.add_mod(&term, &modulus);
        term.zeroize();
        acc.zeroize();
    }
    let bytes = k.to_be_bytes();
    let mut out = SecretBuf::zeroed(len);
    let b = &bytes[bytes.len() - len..];
    if bytes[..bytes.len() - len].iter().any(|&c| c != 0) {
        return Err(TangError::Decrypt);
    }
    out.as_mut_bytes().copy_from_slice(b);
    let mut bytes = bytes;
    bytes.zeroize();
    k.zeroize();
    for v in xs.iter_mut().chain(ys.iter_mut()) {
        v.zeroize();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_the_constant_term() {
        // f(x) = 5 + 3x + 2x^2 over GF(257), prime as 2 bytes.
        let p = [0x01, 0x01];
        let f = |x: u32| (5 + 3 * x + 2 * x * x) % 257;
        let pt = |x: u32| {
            let y = f(x);
            SecretBuf::from_slice(&[(x >> 8) as u8, x as u8, (y >> 8) as u8, y as u8])
        };
        let k = recover(&p, &[pt(1), pt(7), pt(200)]).unwrap();
        assert_eq!(k.as_bytes(), &[0, 5]);
        let k = recover(&p, &[pt(200), pt(3), pt(9)]).unwrap();
        assert_eq!(k.as_bytes(), &[0, 5]);
        // Two points on another line: not the key; the same x twice: refused.
        assert!(recover(&p, &[pt(4), pt(4)]).is_err());
        // A coordinate not below p.
        assert!(recover(&p, &[SecretBuf::from_slice(&[1, 1, 0, 0])]).is_err());
    }

    #[test]
    fn known_primes_and_composites() {
        // 2^256 - 189 is the largest 256-bit prime; 2^256 - 187 is divisible by 3; a
        // product of two large primes has no small factor and is composite.
        let mut p = [0xffu8; 32];
        p[31] = 0xff - 188;
        assert!(probably_prime(&p).unwrap());
        let mut c = [0xffu8; 32];
        c[31] = 0xff - 186;
        assert!(!probably_prime(&c).unwrap());
        // (2^127 - 1) · (2^89 - 1): both Mersenne primes, no small factor.
        let a = BoxedUint::one_with_precision(BITS)
            .shl_vartime(127)
            .unwrap()
            .wrapping_sub(BoxedUint::one_with_precision(BITS));
        let b = BoxedUint::one_with_precision(BITS)
            .shl_vartime(89)
            .unwrap()
            .wrapping_sub(BoxedUint::one_with_precision(BITS));
        let n = a.wrapping_mul(&b);
        let nb = n.to_be_bytes();
        assert!(!probably_prime(&nb[nb.len() - 32..]).unwrap());
    }

    #[test]
    fn any_t_shares_give_the_key_and_fewer_do_not() {
        let s = split(3, 5).unwrap();
        assert_eq!(s.prime.len(), 32);
        assert!(s.prime[0] & 0x80 != 0);
        for pick in [[0, 1, 2], [4, 2, 0], [1, 3, 4]] {
            let pts: Vec<SecretBuf> = pick
                .iter()
                .map(|&i| SecretBuf::from_slice(s.points[i].as_bytes()))
                .collect();
            assert_eq!(
                recover(&s.prime, &pts).unwrap().as_bytes(),
                s.key.as_bytes()
            );
        }
        let two: Vec<SecretBuf> = [0, 1]
            .iter()
            .map(|&i| SecretBuf::from_slice(s.points[i].as_bytes()))
            .collect();
        assert_ne!(
            recover(&s.prime, &two).unwrap().as_bytes(),
            s.key.as_bytes()
        );
        assert!(split(0, 2).is_err());
        assert!(split(3, 2).is_err());
        // t = 1: every share holds the key (a constant polynomial).
        let one = split(1, 2).unwrap();
        assert_eq!(&one.points[1].as_bytes()[32..], one.key.as_bytes());
    }
}
