//! Typed TPM 2.0 commands (TCG TPM 2.0 Part 3) over a [`Transport`], with HMAC and policy
//! sessions (salted, optionally bound) and response parameter encryption (AES-128-CFB).
//! Every transient object and session this client makes is flushed when the [`Tpm`] is
//! dropped, whatever path led there.

use crate::codec::{Reader, Writer};
use crate::crypto::{self, aes128_cfb, hmac_sha256, kdfa, sha256, trim_zeros};
use crate::error::{ResponseCode, Result, Tpm2Error};
use crate::transport::Transport;
use lukskit_crypto::SecretBuf;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// TPM algorithm identifiers (`TPM_ALG_ID`) lukskit uses.
pub mod alg {
    /// RSA.
    pub const RSA: u16 = 0x0001;
    /// SHA-1.
    pub const SHA1: u16 = 0x0004;
    /// AES.
    pub const AES: u16 = 0x0006;
    /// Keyed hash (sealed data objects).
    pub const KEYEDHASH: u16 = 0x0008;
    /// SHA-256.
    pub const SHA256: u16 = 0x000B;
    /// SHA-384.
    pub const SHA384: u16 = 0x000C;
    /// SHA-512.
    pub const SHA512: u16 = 0x000D;
    /// The null algorithm.
    pub const NULL: u16 = 0x0010;
    /// ECC.
    pub const ECC: u16 = 0x0023;
    /// CFB mode.
    pub const CFB: u16 = 0x0043;
    /// The NIST P-256 curve (`TPM_ECC_NIST_P256`).
    pub const ECC_NIST_P256: u16 = 0x0003;
}

mod cc {
    pub const CREATE_PRIMARY: u32 = 0x131;
    pub const CREATE: u32 = 0x153;
    pub const LOAD: u32 = 0x157;
    pub const READ_PUBLIC: u32 = 0x173;
    pub const UNSEAL: u32 = 0x15E;
    pub const FLUSH_CONTEXT: u32 = 0x165;
    pub const POLICY_AUTH_VALUE: u32 = 0x16B;
    pub const START_AUTH_SESSION: u32 = 0x176;
    pub const POLICY_PCR: u32 = 0x17F;
    pub const POLICY_GET_DIGEST: u32 = 0x189;
}

const ST_NO_SESSIONS: u16 = 0x8001;
const ST_SESSIONS: u16 = 0x8002;
const RS_PW: u32 = 0x4000_0009;
const RH_NULL: u32 = 0x4000_0007;
/// `TPM_SE_TRIAL`.
const SESSION_TRIAL: u8 = 0x03;
/// The owner hierarchy (`TPM_RH_OWNER`).
pub const RH_OWNER: u32 = 0x4000_0001;

/// `TPMA_SESSION` bits.
pub mod session_attr {
    /// Keep the session after the command.
    pub const CONTINUE: u8 = 0x01;
    /// Encrypt the first command parameter.
    pub const DECRYPT: u8 = 0x20;
    /// Encrypt the first response parameter.
    pub const ENCRYPT: u8 = 0x40;
}

/// `TPMA_OBJECT` bits of the primary key templates.
pub mod object_attr {
    /// fixedTPM.
    pub const FIXED_TPM: u32 = 0x0000_0002;
    /// fixedParent.
    pub const FIXED_PARENT: u32 = 0x0000_0010;
    /// sensitiveDataOrigin.
    pub const SENSITIVE_DATA_ORIGIN: u32 = 0x0000_0020;
    /// userWithAuth.
    pub const USER_WITH_AUTH: u32 = 0x0000_0040;
    /// `adminWithPolicy`.
    pub const ADMIN_WITH_POLICY: u32 = 0x0000_0080;
    /// noDA.
    pub const NO_DA: u32 = 0x0000_0400;
    /// restricted.
    pub const RESTRICTED: u32 = 0x0001_0000;
    /// decrypt.
    pub const DECRYPT: u32 = 0x0002_0000;
}

/// The public key of an asymmetric object, as far as salting a session needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublicKey {
    /// An ECC P-256 point.
    Ecc {
        /// x coordinate.
        x: Vec<u8>,
        /// y coordinate.
        y: Vec<u8>,
    },
    /// An RSA key.
    Rsa {
        /// The modulus, big-endian.
        n: Vec<u8>,
        /// The public exponent (0 means 65537).
        e: u32,
    },
    /// Another kind of object (a sealed data object, a symmetric key).
    Other,
}

/// The fields of a `TPMT_PUBLIC` lukskit reads.
#[derive(Clone, Debug)]
pub struct Public {
    /// `type`.
    pub kind: u16,
    /// `nameAlg`.
    pub name_alg: u16,
    /// `objectAttributes`.
    pub attributes: u32,
    /// `authPolicy`.
    pub auth_policy: Vec<u8>,
    /// The key, for asymmetric objects.
    pub key: PublicKey,
}

fn sym_def_object(r: &mut Reader<'_>) -> Result<()> {
    if r.u16()? != alg::NULL {
        r.u16()?;
        r.u16()?;
    }
    Ok(())
}

fn scheme(r: &mut Reader<'_>) -> Result<u16> {
    let s = r.u16()?;
    if s != alg::NULL {
        r.u16()?;
    }
    Ok(s)
}

/// Parse a marshalled `TPMT_PUBLIC` (the contents of a `TPM2B_PUBLIC`), bounded, all of it.
pub fn parse_public(data: &[u8]) -> Result<Public> {
    let mut r = Reader::new(data);
    let kind = r.u16()?;
    let name_alg = r.u16()?;
    let attributes = r.u32()?;
    let auth_policy = r.tpm2b(64)?.to_vec();
    let key = match kind {
        alg::RSA => {
            sym_def_object(&mut r)?;
            scheme(&mut r)?;
            let _bits = r.u16()?;
            let e = r.u32()?;
            let n = r.tpm2b(512)?.to_vec();
            PublicKey::Rsa { n, e }
        }
        alg::ECC => {
            sym_def_object(&mut r)?;
            scheme(&mut r)?;
            let _curve = r.u16()?;
            scheme(&mut r)?;
            let x = r.tpm2b(128)?.to_vec();
            let y = r.tpm2b(128)?.to_vec();
            PublicKey::Ecc { x, y }
        }
        alg::KEYEDHASH => {
            match r.u16()? {
                alg::NULL => {}
                0x0005 => {
                    r.u16()?;
                }
                0x000A => {
                    r.u16()?;
                    r.u16()?;
                }
                _ => return Err(Tpm2Error::BadResponse("keyed-hash scheme")),
            }
            r.tpm2b(64)?;
            PublicKey::Other
        }
        0x0025 => {
            // TPM_ALG_SYMCIPHER
            r.u16()?;
            r.u16()?;
            r.u16()?;
            r.tpm2b(64)?;
            PublicKey::Other
        }
        _ => return Err(Tpm2Error::BadResponse("unknown object type")),
    };
    r.finish()?;
    Ok(Public {
        kind,
        name_alg,
        attributes,
        auth_policy,
        key,
    })
}

/// The name of an object: its `nameAlg` and the hash of its `TPMT_PUBLIC`.
pub fn object_name(public_area: &[u8], name_alg: u16) -> Result<Vec<u8>> {
    use sha2::Digest;
    let digest: Vec<u8> = match name_alg {
        alg::SHA1 => sha1::Sha1::digest(public_area).to_vec(),
        alg::SHA256 => sha2::Sha256::digest(public_area).to_vec(),
        alg::SHA384 => sha2::Sha384::digest(public_area).to_vec(),
        alg::SHA512 => sha2::Sha512::digest(public_area).to_vec(),
        _ => {
            return Err(Tpm2Error::Unsupported(format!(
                "name algorithm 0x{name_alg:x}"
            )))
        }
    };
    let mut n = name_alg.to_be_bytes().to_vec();
    n.extend_from_slice(&digest);
    Ok(n)
}

/// The primary key template systemd 252 creates its transient primary with (and
/// `tpm2_get_legacy_template` of newer systemd keeps): a restricted decryption storage key
/// under the owner hierarchy, AES-128-CFB, ECC NIST P-256 or RSA 2048, empty `unique`.
pub fn legacy_primary_template(kind: u16) -> Vec<u8> {
    primary_template(kind, alg::SHA256)
}

/// The same template with the name algorithm `name_alg`: what `tpm2_createprimary -C o -g
/// HASH -G ecc|rsa` of tpm2-tools 5 makes (the clevis `tpm2` pin's primary key; with SHA-256
/// it is systemd's legacy template, byte for byte).
pub fn primary_template(kind: u16, name_alg: u16) -> Vec<u8> {
    use object_attr::*;
    let mut w = Writer::new();
    w.u16(kind).u16(name_alg).u32(
        RESTRICTED | DECRYPT | FIXED_TPM | FIXED_PARENT | SENSITIVE_DATA_ORIGIN | USER_WITH_AUTH,
    );
    w.tpm2b(&[]);
    w.u16(alg::AES).u16(128).u16(alg::CFB);
    w.u16(alg::NULL);
    if kind == alg::ECC {
        w.u16(alg::ECC_NIST_P256).u16(alg::NULL);
        w.tpm2b(&[]).tpm2b(&[]);
    } else {
        w.u16(2048).u32(0);
        w.tpm2b(&[]);
    }
    w.buf
}

/// An authorization session this client started.
pub struct Session {
    /// The session handle.
    pub handle: u32,
    nonce_tpm: Vec<u8>,
    session_key: SecretBuf,
    /// Whether it is a policy session.
    pub policy: bool,
}

/// How one session of a command is used.
pub enum Auth<'a> {
    /// A password session with the empty password.
    EmptyPassword,
    /// An HMAC or policy session, its attributes, and the authValue to mix into its HMAC
    /// key (the authorized entity's, or empty).
    Session {
        /// The session.
        session: &'a mut Session,
        /// `TPMA_SESSION` bits ([`session_attr`]).
        attributes: u8,
        /// The authValue for the HMAC key (trailing zeros are trimmed here).
        auth_value: &'a [u8],
    },
}

/// A connection to a TPM and the handles to flush when it is dropped.
pub struct Tpm {
    transport: Box<dyn Transport>,
    to_flush: Vec<u32>,
}

/// The most times lukskit repeats a command the TPM answered with `TPM_RC_RETRY`,
/// `TPM_RC_YIELDED` or `TPM_RC_TESTING` (50 ms apart).
const MAX_RETRIES: u32 = 40;

struct Response {
    handles: Vec<u32>,
    params: Vec<u8>,
}

fn random_nonce() -> Result<Vec<u8>> {
    let mut n = vec![0u8; 32];
    getrandom::fill(&mut n).map_err(|_| Tpm2Error::Random)?;
    Ok(n)
}

impl Tpm {
    /// A client over `transport`.
    pub fn new(transport: Box<dyn Transport>) -> Self {
        Tpm {
            transport,
            to_flush: Vec::new(),
        }
    }

    /// The TPM's name for messages.
    pub fn name(&self) -> &str {
        self.transport.name()
    }

    fn transact(&mut self, cmd: &[u8], name: &'static str) -> Result<Vec<u8>> {
        let mut tries = 0;
        loop {
            let resp = self.transport.transact(cmd)?;
            if resp.len() < 10 {
                return Err(Tpm2Error::BadResponse("short response"));
            }
            let rc = u32::from_be_bytes([resp[6], resp[7], resp[8], resp[9]]);
            if rc == 0 {
                return Ok(resp);
            }
            let code = ResponseCode(rc);
            match code.base() {
                ResponseCode::RETRY | ResponseCode::YIELDED | ResponseCode::TESTING
                    if tries < MAX_RETRIES =>
                {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                ResponseCode::LOCKOUT => return Err(Tpm2Error::Lockout),
                _ => {
                    return Err(Tpm2Error::Command {
                        command: name,
                        rc: code,
                    })
                }
            }
        }
    }

    /// Run command `code` with `handles` (and their `names`, for HMACs), the sessions
    /// `auths`, and marshalled `params`; the response's `n_handles` handles and its
    /// parameters (decrypted when a session asked for response encryption).
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        name: &'static str,
        code: u32,
        handles: &[u32],
        names: &[&[u8]],
        auths: &mut [Auth<'_>],
        params: &[u8],
        n_handles: usize,
    ) -> Result<Response> {
        let mut w = Writer::new();
        let tag = if auths.is_empty() {
            ST_NO_SESSIONS
        } else {
            ST_SESSIONS
        };
        w.u16(tag).u32(0).u32(code);
        for h in handles {
            w.u32(*h);
        }
        let mut nonces = Vec::new();
        // Command parameter encryption: a session with `decrypt` set has the first
        // parameter's contents (a TPM2B) encrypted with AES-128-CFB under
        // KDFa(sessionKey || authValue, "CFB", nonceCaller, nonceTPM) before the cpHash is
        // taken over them (TPM 2.0 Part 1, 21.3).
        let mut params = params.to_vec();
        for a in auths.iter() {
            nonces.push(match a {
                Auth::EmptyPassword => Vec::new(),
                Auth::Session { .. } => random_nonce()?,
            });
        }
        if let Some((i, key)) = auths.iter().enumerate().find_map(|(i, a)| match a {
            Auth::Session {
                session,
                attributes,
                auth_value,
            } if attributes & session_attr::DECRYPT != 0 => {
                Some((i, hmac_key(&session.session_key, auth_value)))
            }
            _ => None,
        }) {
            let Auth::Session { session, .. } = &auths[i] else {
                return Err(Tpm2Error::BadResponse("decrypt session"));
            };
            if params.len() < 2 {
                return Err(Tpm2Error::BadResponse("no parameter to encrypt"));
            }
            let n = usize::from(u16::from_be_bytes([params[0], params[1]]));
            if n + 2 > params.len() {
                return Err(Tpm2Error::BadResponse("parameter to encrypt"));
            }
            let k = kdfa(key.as_bytes(), "CFB", &nonces[i], &session.nonce_tpm, 256);
            let (key, iv) = k.as_bytes().split_at(16);
            aes128_cfb(key, iv, &mut params[2..2 + n], true);
        }
        let params = &params[..];
        if !auths.is_empty() {
            let cp_hash = {
                let mut parts: Vec<&[u8]> = Vec::new();
                let cc = code.to_be_bytes();
                parts.push(&cc);
                parts.extend_from_slice(names);
                parts.push(params);
                sha256(&parts)
            };
            // nonceTPM of a later encrypt session goes into the first session's HMAC.
            let encrypt_nonce: Option<Vec<u8>> = auths.iter().skip(1).find_map(|a| match a {
                Auth::Session {
                    session,
                    attributes,
                    ..
                } if attributes & session_attr::ENCRYPT != 0 => Some(session.nonce_tpm.clone()),
                _ => None,
            });
            let mut area = Writer::new();
            for (i, a) in auths.iter().enumerate() {
                match a {
                    Auth::EmptyPassword => {
                        area.u32(RS_PW).tpm2b(&[]).u8(0).tpm2b(&[]);
                    }
                    Auth::Session {
                        session,
                        attributes,
                        auth_value,
                    } => {
                        let nonce = &nonces[i];
                        let key = hmac_key(&session.session_key, auth_value);
                        let hmac = if key.is_empty() {
                            Vec::new()
                        } else {
                            let mut parts: Vec<&[u8]> = vec![&cp_hash, nonce, &session.nonce_tpm];
                            if i == 0 {
                                if let Some(n) = &encrypt_nonce {
                                    parts.push(n);
                                }
                            }
                            let attrs = [*attributes];
                            parts.push(&attrs);
                            hmac_sha256(key.as_bytes(), &parts).to_vec()
                        };
                        area.u32(session.handle)
                            .tpm2b(nonce)
                            .u8(*attributes)
                            .tpm2b(&hmac);
                    }
                }
            }
            w.u32(area.buf.len() as u32).bytes(&area.buf);
        }
        w.bytes(params);
        let size = w.buf.len() as u32;
        w.buf[2..6].copy_from_slice(&size.to_be_bytes());
        let resp = self.transact(&w.buf, name)?;
        let mut r = Reader::new(&resp);
        let rtag = r.u16()?;
        r.u32()?;
        r.u32()?;
        let mut out_handles = Vec::new();
        for _ in 0..n_handles {
            out_handles.push(r.u32()?);
        }
        if auths.is_empty() {
            if rtag != ST_NO_SESSIONS {
                return Err(Tpm2Error::BadResponse("unexpected sessions in response"));
            }
            let params = r.take(r.remaining())?.to_vec();
            return Ok(Response {
                handles: out_handles,
                params,
            });
        }
        if rtag != ST_SESSIONS {
            return Err(Tpm2Error::BadResponse("response without sessions"));
        }
        let psize = r.u32()? as usize;
        let mut params = r.take(psize)?.to_vec();
        let rp_hash = sha256(&[&0u32.to_be_bytes(), &code.to_be_bytes(), &params]);
        let mut decrypt_with: Option<SecretBuf> = None;
        for (i, a) in auths.iter_mut().enumerate() {
            let nonce_tpm = r.tpm2b(64)?.to_vec();
            let attrs = r.u8()?;
            let hmac = r.tpm2b(64)?;
            if let Auth::Session {
                session,
                attributes,
                auth_value,
            } = a
            {
                let key = hmac_key(&session.session_key, auth_value);
                if !key.is_empty() {
                    let want = hmac_sha256(
                        key.as_bytes(),
                        &[&rp_hash, &nonce_tpm, &nonces[i], &[attrs]],
                    );
                    if !bool::from(want[..].ct_eq(hmac)) {
                        return Err(Tpm2Error::ResponseIntegrity);
                    }
                }
                session.nonce_tpm = nonce_tpm;
                if *attributes & session_attr::ENCRYPT != 0 && decrypt_with.is_none() {
                    decrypt_with = Some(kdfa(
                        session.session_key.as_bytes(),
                        "CFB",
                        &session.nonce_tpm,
                        &nonces[i],
                        256,
                    ));
                }
            }
        }
        r.finish()?;
        if let Some(k) = decrypt_with {
            if params.len() < 2 {
                return Err(Tpm2Error::BadResponse("no parameter to decrypt"));
            }
            let n = usize::from(u16::from_be_bytes([params[0], params[1]]));
            if n + 2 > params.len() {
                return Err(Tpm2Error::BadResponse("encrypted parameter size"));
            }
            let (key, iv) = k.as_bytes().split_at(16);
            aes128_cfb(key, iv, &mut params[2..2 + n], false);
        }
        Ok(Response {
            handles: out_handles,
            params,
        })
    }

    /// `TPM2_CreatePrimary` under the owner hierarchy (empty owner password) from
    /// `template` (a marshalled `TPMT_PUBLIC`): the handle and the key's public part.
    pub fn create_primary(&mut self, template: &[u8]) -> Result<(u32, Public)> {
        let mut p = Writer::new();
        // inSensitive: userAuth and data empty.
        p.u16(4).tpm2b(&[]).tpm2b(&[]);
        p.tpm2b(template);
        p.tpm2b(&[]); // outsideInfo
        p.u32(0); // creationPCR: no selection
        let resp = self.run(
            "TPM2_CreatePrimary",
            cc::CREATE_PRIMARY,
            &[RH_OWNER],
            &[],
            &mut [Auth::EmptyPassword],
            &p.buf,
            1,
        )?;
        let handle = resp.handles[0];
        self.to_flush.push(handle);
        let mut r = Reader::new(&resp.params);
        let public = parse_public(r.tpm2b(1024)?)?;
        Ok((handle, public))
    }

    /// `TPM2_Load` of a sealed object (`private`, `public`: the contents of its
    /// `TPM2B_PRIVATE` and `TPM2B_PUBLIC`) under `parent` (empty auth): handle and name.
    pub fn load(&mut self, parent: u32, private: &[u8], public: &[u8]) -> Result<(u32, Vec<u8>)> {
        let mut p = Writer::new();
        p.tpm2b(private).tpm2b(public);
        let resp = self.run(
            "TPM2_Load",
            cc::LOAD,
            &[parent],
            &[],
            &mut [Auth::EmptyPassword],
            &p.buf,
            1,
        )?;
        let handle = resp.handles[0];
        self.to_flush.push(handle);
        let mut r = Reader::new(&resp.params);
        let name = r.tpm2b(68)?.to_vec();
        Ok((handle, name))
    }

    /// `TPM2_ReadPublic` of `handle` (a persistent key's): its public part and its name.
    pub fn read_public(&mut self, handle: u32) -> Result<(Public, Vec<u8>)> {
        let resp = self.run(
            "TPM2_ReadPublic",
            cc::READ_PUBLIC,
            &[handle],
            &[],
            &mut [],
            &[],
            0,
        )?;
        let mut r = Reader::new(&resp.params);
        let area = r.tpm2b(1024)?;
        let public = parse_public(area)?;
        let name = r.tpm2b(68)?.to_vec();
        r.tpm2b(68)?;
        r.finish()?;
        if name != object_name(area, public.name_alg)? {
            return Err(Tpm2Error::BadResponse(
                "the key's name does not match its public part",
            ));
        }
        Ok((public, name))
    }

    /// `TPM2_StartAuthSession`: an HMAC (`policy` false) or policy session with SHA-256 and
    /// AES-128-CFB, salted to `tpm_key` (its handle and public key), bound to `bind` (a
    /// handle and its authValue) or unbound.
    pub fn start_session(
        &mut self,
        tpm_key: (u32, &PublicKey),
        bind: Option<(u32, &[u8])>,
        policy: bool,
    ) -> Result<Session> {
        let salt = match tpm_key.1 {
            PublicKey::Ecc { x, y } => crypto::ecc_salt(x, y)?,
            PublicKey::Rsa { n, e } => crypto::rsa_salt(n, *e)?,
            PublicKey::Other => return Err(Tpm2Error::BadKey("not an asymmetric key")),
        };
        let nonce_caller = random_nonce()?;
        let mut p = Writer::new();
        p.tpm2b(&nonce_caller).tpm2b(&salt.encrypted);
        p.u8(u8::from(policy));
        p.u16(alg::AES).u16(128).u16(alg::CFB);
        p.u16(alg::SHA256);
        let bind_handle = bind.map_or(RH_NULL, |b| b.0);
        let (handle, nonce_tpm) = self.start_auth_session([tpm_key.0, bind_handle], &p.buf)?;
        let mut key_in = SecretBuf::zeroed(0);
        if let Some((_, auth)) = bind {
            key_in = concat(trim_zeros(auth), &[]);
        }
        let key_in = concat(key_in.as_bytes(), salt.salt.as_bytes());
        let session_key = kdfa(key_in.as_bytes(), "ATH", &nonce_tpm, &nonce_caller, 256);
        Ok(Session {
            handle,
            nonce_tpm,
            session_key,
            policy,
        })
    }

    /// `TPM2_StartAuthSession` with `handles` (tpmKey, bind) and the marshalled parameters
    /// `params`: the new session's handle (flushed when this client is dropped) and
    /// `nonceTPM`.
    fn start_auth_session(&mut self, handles: [u32; 2], params: &[u8]) -> Result<(u32, Vec<u8>)> {
        let resp = self.run(
            "TPM2_StartAuthSession",
            cc::START_AUTH_SESSION,
            &handles,
            &[],
            &mut [],
            params,
            1,
        )?;
        let handle = resp.handles[0];
        self.to_flush.push(handle);
        let mut r = Reader::new(&resp.params);
        Ok((handle, r.tpm2b(64)?.to_vec()))
    }

    /// `TPM2_StartAuthSession` of a trial policy session (unsalted, unbound, no parameter
    /// encryption): the policy commands run on it only compute the policy digest, as
    /// systemd and tpm2-tools compute the `authPolicy` of the objects they seal.
    pub fn start_trial_session(&mut self) -> Result<Session> {
        let nonce_caller = random_nonce()?;
        let mut p = Writer::new();
        p.tpm2b(&nonce_caller).tpm2b(&[]);
        p.u8(SESSION_TRIAL);
        p.u16(alg::NULL);
        p.u16(alg::SHA256);
        let (handle, nonce_tpm) = self.start_auth_session([RH_NULL, RH_NULL], &p.buf)?;
        Ok(Session {
            handle,
            nonce_tpm,
            session_key: SecretBuf::zeroed(0),
            policy: true,
        })
    }

    /// `TPM2_Create` of a sealed data object under `parent` (named `parent_name`, empty
    /// authValue): `template` is its marshalled `TPMT_PUBLIC`, `user_auth` its authValue and
    /// `data` the secret it seals. Authorized by `session` (an HMAC session salted to the
    /// parent), which also encrypts `inSensitive` on its way to the TPM, so neither the
    /// secret nor the authValue crosses the bus in the clear. Returns the contents of
    /// `outPrivate` and `outPublic`.
    pub fn create_sealed(
        &mut self,
        parent: u32,
        parent_name: &[u8],
        session: &mut Session,
        template: &[u8],
        user_auth: &[u8],
        data: &[u8],
    ) -> Result<(Vec<u8>, Vec<u8>)> {
        if user_auth.len() > 64 || data.len() > 128 {
            return Err(Tpm2Error::BadKey("sealed data or authValue too long"));
        }
        // inSensitive: a TPM2B of TPMS_SENSITIVE_CREATE (userAuth, data).
        let mut sensitive = Writer::new();
        sensitive.tpm2b(user_auth).tpm2b(data);
        let mut p = Writer::new();
        p.tpm2b(&sensitive.buf);
        zeroize::Zeroize::zeroize(&mut sensitive.buf);
        p.tpm2b(template);
        p.tpm2b(&[]); // outsideInfo
        p.u32(0); // creationPCR: no selection
        let resp = self.run(
            "TPM2_Create",
            cc::CREATE,
            &[parent],
            &[parent_name],
            &mut [Auth::Session {
                session,
                attributes: session_attr::CONTINUE | session_attr::DECRYPT,
                auth_value: &[],
            }],
            &p.buf,
            0,
        );
        zeroize::Zeroize::zeroize(&mut p.buf);
        let resp = resp?;
        let mut r = Reader::new(&resp.params);
        let private = r.tpm2b(1024)?.to_vec();
        let public = r.tpm2b(1024)?.to_vec();
        Ok((private, public))
    }

    /// `TPM2_PolicyPCR` with the PCRs of `mask` in bank `bank` and an empty digest (the TPM
    /// uses the current values).
    pub fn policy_pcr(&mut self, session: &Session, bank: u16, mask: u32) -> Result<()> {
        let mut p = Writer::new();
        p.tpm2b(&[]);
        p.u32(1).u16(bank).u8(3);
        p.bytes(&[mask as u8, (mask >> 8) as u8, (mask >> 16) as u8]);
        self.run(
            "TPM2_PolicyPCR",
            cc::POLICY_PCR,
            &[session.handle],
            &[],
            &mut [],
            &p.buf,
            0,
        )?;
        Ok(())
    }

    /// `TPM2_PolicyAuthValue`.
    pub fn policy_auth_value(&mut self, session: &Session) -> Result<()> {
        self.run(
            "TPM2_PolicyAuthValue",
            cc::POLICY_AUTH_VALUE,
            &[session.handle],
            &[],
            &mut [],
            &[],
            0,
        )?;
        Ok(())
    }

    /// `TPM2_PolicyGetDigest`.
    pub fn policy_get_digest(&mut self, session: &Session) -> Result<Vec<u8>> {
        let resp = self.run(
            "TPM2_PolicyGetDigest",
            cc::POLICY_GET_DIGEST,
            &[session.handle],
            &[],
            &mut [],
            &[],
            0,
        )?;
        let mut r = Reader::new(&resp.params);
        let d = r.tpm2b(64)?.to_vec();
        r.finish()?;
        Ok(d)
    }

    /// `TPM2_Unseal` of `item` (named `name`) authorized by `policy` (with `auth` as the
    /// authValue when the policy asserted `TPM2_PolicyAuthValue`), with `enc` as the
    /// session that encrypts the response.
    pub fn unseal(
        &mut self,
        item: u32,
        name: &[u8],
        policy: &mut Session,
        auth: &[u8],
        enc: &mut Session,
    ) -> Result<SecretBuf> {
        self.unseal_with(
            item,
            name,
            &mut [
                Auth::Session {
                    session: policy,
                    attributes: session_attr::CONTINUE,
                    auth_value: auth,
                },
                Auth::Session {
                    session: enc,
                    attributes: session_attr::CONTINUE | session_attr::ENCRYPT,
                    auth_value: &[],
                },
            ],
        )
    }

    /// `TPM2_Unseal` of an object with `userWithAuth` and an empty authValue (a clevis
    /// `tpm2` pin without PCRs), authorized by the HMAC session `enc` bound to it, which
    /// also encrypts the response.
    pub fn unseal_by_hmac(
        &mut self,
        item: u32,
        name: &[u8],
        enc: &mut Session,
    ) -> Result<SecretBuf> {
        self.unseal_with(
            item,
            name,
            &mut [Auth::Session {
                session: enc,
                attributes: session_attr::CONTINUE | session_attr::ENCRYPT,
                auth_value: &[],
            }],
        )
    }

    fn unseal_with(&mut self, item: u32, name: &[u8], auths: &mut [Auth<'_>]) -> Result<SecretBuf> {
        let resp = self.run("TPM2_Unseal", cc::UNSEAL, &[item], &[name], auths, &[], 0)?;
        let mut params = resp.params;
        let out = {
            let mut r = Reader::new(&params);
            let d = r.tpm2b(128)?;
            r.finish()?;
            SecretBuf::from_slice(d)
        };
        zeroize::Zeroize::zeroize(&mut params);
        Ok(out)
    }

    /// `TPM2_FlushContext` of `handle` (errors ignored: the handle may be gone already).
    pub fn flush(&mut self, handle: u32) {
        self.to_flush.retain(|&h| h != handle);
        let mut p = Writer::new();
        p.u32(handle);
        let _ = self.run(
            "TPM2_FlushContext",
            cc::FLUSH_CONTEXT,
            &[],
            &[],
            &mut [],
            &p.buf,
            0,
        );
    }
}

impl Drop for Tpm {
    fn drop(&mut self) {
        while let Some(h) = self.to_flush.pop() {
            self.flush(h);
        }
    }
}

fn concat(a: &[u8], b: &[u8]) -> SecretBuf {
    let mut s = SecretBuf::zeroed(a.len() + b.len());
    s.as_mut_bytes()[..a.len()].copy_from_slice(a);
    s.as_mut_bytes()[a.len()..].copy_from_slice(b);
    s
}

fn hmac_key(session_key: &SecretBuf, auth: &[u8]) -> SecretBuf {
    concat(session_key.as_bytes(), trim_zeros(auth))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_back() {
        let ecc = legacy_primary_template(alg::ECC);
        let p = parse_public(&ecc).unwrap();
        assert_eq!(p.kind, alg::ECC);
        assert_eq!(p.attributes, 0x30072);
        assert_eq!(
            p.key,
            PublicKey::Ecc {
                x: vec![],
                y: vec![]
            }
        );
        let rsa = legacy_primary_template(alg::RSA);
        let p = parse_public(&rsa).unwrap();
        assert_eq!(p.key, PublicKey::Rsa { n: vec![], e: 0 });
        // The exact bytes of the ECC template (TCG Part 2 marshalling).
        assert_eq!(
            hex::encode(&ecc),
            "0023000b00030072000000060080004300100003001000000000"
        );
    }

    #[test]
    fn public_parse_is_bounded() {
        let ecc = legacy_primary_template(alg::ECC);
        for n in 0..ecc.len() {
            assert!(parse_public(&ecc[..n]).is_err());
        }
        let mut long = ecc.clone();
        long.push(0);
        assert!(parse_public(&long).is_err());
    }
}
