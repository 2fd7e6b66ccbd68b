//! Binding any pin configuration ([`PinConfig`]) as `clevis encrypt PIN CONFIG` of clevis
//! 19 does, in two steps so that nothing is written before every server answered and the
//! user trusted it:
//!
//! 1. [`Plan::resolve`]: each `tang` pin's advertisement fetched (or read from the
//!    configuration) and its signatures checked; a `thp` must name one of its signing keys;
//!    the advertisements trusted by neither a `thp` nor a given `adv` are listed by
//!    [`Plan::unconfirmed`] for the caller to confirm;
//! 2. [`Plan::token`]: the passphrase encrypted (`tang`: `ECDH-ES` to the server's exchange
//!    key; `tpm2`: `dir` with a JWK sealed by the TPM; `sss`: `dir` with the key of a new
//!    Shamir polynomial whose shares are encrypted by the nested pins, each a compact JWE in
//!    `clevis.sss.jwe`, the prime in `clevis.sss.p`, the threshold in `clevis.sss.t`), and
//!    the token unlocked once (TPM and servers) before it is returned.

use crate::bind_config::PinConfig;
use crate::jwe::Jwe;
use crate::{b64e, shamir, Advertisement, ClevisToken, Context, Limits, TangError};
use lukskit_crypto::SecretBuf;
use serde_json::{json, Value};

/// A pin configuration whose tang advertisements are at hand.
#[derive(Debug, Clone)]
pub struct Plan {
    pin: Planned,
}

#[derive(Debug, Clone)]
enum Planned {
    Tang {
        adv: Advertisement,
        /// Whether a `thp` or a given `adv` vouches for it.
        trusted: bool,
    },
    Tpm2 {
        pcr_bank: u16,
        pcr_mask: u32,
    },
    Sss {
        t: usize,
        pins: Vec<Planned>,
    },
}

impl Planned {
    fn resolve(cfg: &PinConfig, limits: &Limits) -> Result<Planned, TangError> {
        Ok(match cfg {
            PinConfig::Tang(c) => {
                let (adv, given) = match c.given_adv()? {
                    Some(body) => (
                        crate::parse_advertisement(&c.url, &format!("{}/adv", c.url), &body)?,
                        true,
                    ),
                    None => (crate::fetch_advertisement(&c.url, limits)?, false),
                };
                if let Some(thp) = &c.thp {
                    if !adv.trusts(thp) {
                        return Err(TangError::Untrusted {
                            url: c.url.clone(),
                            thumbprint: thp.clone(),
                        });
                    }
                }
                Planned::Tang {
                    adv,
                    trusted: given || c.thp.is_some(),
                }
            }
            PinConfig::Tpm2(c) => Planned::Tpm2 {
                pcr_bank: c.pcr_bank,
                pcr_mask: c.pcr_mask,
            },
            PinConfig::Sss(s) => Planned::Sss {
                t: s.t,
                pins: s
                    .pins
                    .iter()
                    .map(|p| Planned::resolve(p, limits))
                    .collect::<Result<_, _>>()?,
            },
        })
    }

    fn unconfirmed<'a>(&'a self, out: &mut Vec<&'a Advertisement>) {
        match self {
            Planned::Tang { adv, trusted } => {
                if !trusted {
                    out.push(adv);
                }
            }
            Planned::Tpm2 { .. } => {}
            Planned::Sss { pins, .. } => pins.iter().for_each(|p| p.unconfirmed(out)),
        }
    }

    /// `plaintext` encrypted under this pin.
    fn seal(&self, plaintext: &SecretBuf, ctx: &Context) -> Result<Jwe, TangError> {
        match self {
            Planned::Tang { adv, .. } => crate::tang_jwe(adv, plaintext),
            Planned::Tpm2 { pcr_bank, pcr_mask } => {
                crate::tpm2_jwe(&ctx.tpm2, *pcr_bank, *pcr_mask, plaintext, ctx.tpm2_timeout)
            }
            Planned::Sss { t, pins } => {
                let shares = shamir::split(*t, pins.len())?;
                let jwes = pins
                    .iter()
                    .zip(&shares.points)
                    .map(|(p, pt)| p.seal(pt, ctx).map(|j| j.to_compact()))
                    .collect::<Result<Vec<_>, _>>()?;
                // clevis-encrypt-sss: {"alg":"dir","clevis":{"pin":"sss","sss":{t,p,jwe}}}
                // and jose adds enc.
                let header = json!({
                    "alg": "dir",
                    "clevis": {"pin": "sss", "sss": {
                        "t": t,
                        "p": b64e(&shares.prime),
                        "jwe": jwes,
                    }},
                    "enc": "A256GCM",
                });
                Jwe::encrypt_direct(header, &shares.key, plaintext)
            }
        }
    }
}

impl Plan {
    /// Fetch (or read) the advertisements of the tang pins of `cfg` and check them.
    pub fn resolve(cfg: &PinConfig, limits: &Limits) -> Result<Plan, TangError> {
        Ok(Plan {
            pin: Planned::resolve(cfg, limits)?,
        })
    }

    /// The advertisements no `thp` or given `adv` vouches for: the caller asks the user (or
    /// trusts them on `-y`, as `clevis luks bind -y`).
    pub fn unconfirmed(&self) -> Vec<&Advertisement> {
        let mut out = Vec::new();
        self.pin.unconfirmed(&mut out);
        out
    }

    /// The clevis token for `keyslot` holding `passphrase` under the planned pins, the TPM
    /// and the tang servers of `ctx`; unlocked once with `ctx` before it is returned.
    pub fn token(
        &self,
        passphrase: &SecretBuf,
        keyslot: u32,
        ctx: &Context,
    ) -> Result<Value, TangError> {
        let jwe = self.pin.seal(passphrase, ctx)?;
        let token = json!({
            "type": "clevis",
            "keyslots": [keyslot.to_string()],
            "jwe": jwe.to_json(),
        });
        let back = ClevisToken::parse(&token)?.unlock_with(ctx)?;
        if !back.ct_eq(passphrase.as_bytes()) {
            return Err(TangError::Decrypt);
        }
        Ok(token)
    }
}
