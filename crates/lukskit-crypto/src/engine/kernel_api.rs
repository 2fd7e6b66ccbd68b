//! The kernel's crypto API as a sector engine, over AF_ALG `skcipher` sockets
//! (crypto/af_alg.c, crypto/algif_skcipher.c).
//!
//! A transform socket is bound to the kernel name of the dm-crypt spec's mode (`xts(aes)`,
//! `cbc(serpent)`, `lrw(twofish)`, …) and keyed once (one socket per subkey when `keycount` >
//! 1). Each encryption unit is one request on an operation socket: `sendmsg` with the
//! `ALG_SET_OP` and `ALG_SET_IV` control messages and the unit's bytes, then `read` of the
//! result into the same buffer. The IVs are computed here exactly as dm-crypt computes them
//! (`plain`, `plain64`, `plain64be`, `benbi`, `null`, and `essiv:<hash>` whose salt-keyed
//! cipher is lukskit's own, the same computation as crypto/essiv.c), so the kernel only does
//! the chaining mode: the driver dm-crypt would use (AES-NI, a hardware engine, generic C).
//!
//! Adiantum specs bind `adiantum(<stream>,<block>)`. Operation sockets are kept in a small
//! pool, so one engine serves several threads at once. IV generators that need the bulk
//! cipher, the plaintext or the ciphertext (`eboiv`, `elephant`, `lmk`, `tcw`) are not offered by this engine
//! (lukskit's own engine does them).
//!
//! Each unit costs two system calls (`sendmsg` + `read`): an skcipher request carries one IV,
//! and dm-crypt's IV changes every sector. On CPUs where lukskit's own engine has AES-NI/VAES
//! it is much faster than this one; the kernel engine is for hardware engines and for
//! checking what the kernel's drivers compute.

use super::cipher::{BlockCipher, CipherAlg};
use super::iv::{self, IvKind};
use super::modes::ModeKind;
use super::{SectorCipher, MAX_IV};
use crate::spec::CipherSpec;
use crate::{CryptoError, Result};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;
use zeroize::Zeroize;

/// Whether this kernel offers AF_ALG sockets at all (`socket(AF_ALG, SOCK_SEQPACKET)`
/// succeeds). Where it does not, cryptsetup says "Required kernel crypto interface not
/// available."
pub fn af_alg_available() -> bool {
    // SAFETY: plain socket(2) call with constant arguments; the result is checked and the
    // descriptor, if any, is owned (and closed) by the OwnedFd.
    let fd = unsafe { libc::socket(libc::AF_ALG, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return false;
    }
    // SAFETY: `fd` is a freshly created descriptor nobody else owns.
    drop(unsafe { OwnedFd::from_raw_fd(fd) });
    true
}

/// Why a kernel transform could not be had.
#[derive(Debug)]
pub enum KernelError {
    /// No AF_ALG in this kernel (or `algif_skcipher` missing).
    NoInterface(io::Error),
    /// The kernel has no such algorithm (`bind` failed).
    NoAlgorithm(io::Error),
    /// The kernel refused the key (`ALG_SET_KEY`).
    Key(io::Error),
    /// A request failed.
    Io(io::Error),
}

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelError::NoInterface(e) => {
                write!(f, "kernel crypto interface (AF_ALG) not available: {e}")
            }
            KernelError::NoAlgorithm(e) => write!(f, "the kernel has no such algorithm: {e}"),
            KernelError::Key(e) => write!(f, "the kernel refused the key: {e}"),
            KernelError::Io(e) => write!(f, "kernel crypto request failed: {e}"),
        }
    }
}

impl From<KernelError> for CryptoError {
    fn from(e: KernelError) -> Self {
        match e {
            KernelError::Key(_) => CryptoError::InvalidKey(e.to_string()),
            _ => CryptoError::Unsupported(e.to_string()),
        }
    }
}

/// One keyed kernel `skcipher` transform (a bound AF_ALG socket) and a pool of operation
/// sockets accepted from it.
pub struct KernelCipher {
    name: String,
    tfm: OwnedFd,
    ops: Mutex<Vec<OwnedFd>>,
}

impl std::fmt::Debug for KernelCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelCipher")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A transform socket bound to the `skcipher` named `name` (kernel syntax), not keyed.
fn bind(name: &str) -> std::result::Result<OwnedFd, KernelError> {
    // SAFETY: socket(2) with constant arguments; the result is checked below.
    let fd = unsafe { libc::socket(libc::AF_ALG, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(KernelError::NoInterface(io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a fresh descriptor; the OwnedFd becomes its only owner.
    let tfm = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_alg is plain old data; all-zero is a valid value.
    let mut sa: libc::sockaddr_alg = unsafe { std::mem::zeroed() };
    sa.salg_family = libc::AF_ALG as u16;
    for (d, s) in sa.salg_type.iter_mut().zip(b"skcipher") {
        *d = *s;
    }
    // Keep the terminating NUL (the array is zeroed).
    if name.len() >= sa.salg_name.len() || name.as_bytes().contains(&0) {
        return Err(KernelError::NoAlgorithm(io::Error::from(
            io::ErrorKind::InvalidInput,
        )));
    }
    for (d, s) in sa.salg_name.iter_mut().zip(name.as_bytes()) {
        *d = *s;
    }
    // SAFETY: `sa` is a valid, initialised sockaddr_alg and the length passed is its size.
    let r = unsafe {
        libc::bind(
            tfm.as_raw_fd(),
            std::ptr::addr_of!(sa).cast(),
            std::mem::size_of::<libc::sockaddr_alg>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(KernelError::NoAlgorithm(io::Error::last_os_error()));
    }
    Ok(tfm)
}

/// Bind (without a key) the `skcipher` named `name`: the kernel loads the modules it needs and
/// builds a template instance (`xts(aes)` over the best `ecb(aes)`) as dm-crypt's table load
/// would; the socket is closed at once.
pub fn bind_only(name: &str) -> std::result::Result<(), KernelError> {
    bind(name).map(drop)
}

impl KernelCipher {
    /// Bind the `skcipher` named `name` (kernel syntax, e.g. `xts(aes)`) and set `key`.
    pub fn new(name: &str, key: &[u8]) -> std::result::Result<Self, KernelError> {
        let tfm = bind(name)?;
        // SAFETY: `key` is a valid readable slice of `key.len()` bytes for the call.
        let r = unsafe {
            libc::setsockopt(
                tfm.as_raw_fd(),
                libc::SOL_ALG,
                libc::ALG_SET_KEY,
                key.as_ptr().cast(),
                key.len() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(KernelError::Key(io::Error::last_os_error()));
        }
        Ok(KernelCipher {
            name: name.to_string(),
            tfm,
            ops: Mutex::new(Vec::new()),
        })
    }

    /// The kernel algorithm name this transform is bound to.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn take_op(&self) -> std::result::Result<OwnedFd, KernelError> {
        if let Some(op) = self.ops.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(op);
        }
        // SAFETY: accept4(2) on our bound, keyed socket; no peer address is asked for.
        let fd = unsafe {
            libc::accept4(
                self.tfm.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(KernelError::Io(io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a fresh descriptor; the OwnedFd becomes its only owner.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn put_op(&self, op: OwnedFd) {
        let mut ops = self.ops.lock().unwrap_or_else(|e| e.into_inner());
        if ops.len() < 64 {
            ops.push(op);
        }
    }

    /// Encrypt or decrypt `data` in place as one request with `iv` (exactly the transform's
    /// IV size; empty for modes without an IV).
    pub fn crypt(
        &self,
        encrypt: bool,
        iv: &[u8],
        data: &mut [u8],
    ) -> std::result::Result<(), KernelError> {
        let op = self.take_op()?;
        let r = request(&op, encrypt, iv, data);
        if r.is_ok() {
            self.put_op(op);
        }
        r.map_err(KernelError::Io)
    }

    /// Run `f` with one operation socket of the pool (for many requests in a row).
    fn with_op<T>(
        &self,
        f: impl FnOnce(&OwnedFd) -> io::Result<T>,
    ) -> std::result::Result<T, KernelError> {
        let op = self.take_op()?;
        let r = f(&op);
        if r.is_ok() {
            self.put_op(op);
        }
        r.map_err(KernelError::Io)
    }
}

/// Space for the two control messages: the operation (u32) and `af_alg_iv` with up to
/// [`MAX_IV`] bytes, in 8-byte aligned storage.
const CMSG_WORDS: usize = 16;

/// One skcipher request on operation socket `op`: `sendmsg` (op + IV + data), then `read`.
fn request(op: &OwnedFd, encrypt: bool, iv: &[u8], data: &mut [u8]) -> io::Result<()> {
    if iv.len() > MAX_IV {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let mut ctrl = [0u64; CMSG_WORDS];
    let op_len = std::mem::size_of::<u32>() as u32;
    let iv_len = (std::mem::size_of::<u32>() + iv.len()) as u32;
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(op_len) + libc::CMSG_SPACE(iv_len) } as usize;
    debug_assert!(space <= std::mem::size_of_val(&ctrl));
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    // SAFETY: msghdr is plain old data; all-zero is valid (no name, no flags).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    let op_val: u32 = if encrypt {
        libc::ALG_OP_ENCRYPT as u32
    } else {
        libc::ALG_OP_DECRYPT as u32
    };
    // SAFETY: `msg` points at `ctrl`, zeroed and `space` bytes long (checked above), which
    // holds exactly the two headers written here (CMSG_FIRSTHDR/NXTHDR stay inside it); the
    // data pointers come from CMSG_DATA of those headers and the bytes written fit the
    // lengths given to CMSG_LEN.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_ALG;
        (*c).cmsg_type = libc::ALG_SET_OP;
        (*c).cmsg_len = libc::CMSG_LEN(op_len) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u32>(), op_val);
        let c = libc::CMSG_NXTHDR(&msg, c);
        (*c).cmsg_level = libc::SOL_ALG;
        (*c).cmsg_type = libc::ALG_SET_IV;
        (*c).cmsg_len = libc::CMSG_LEN(iv_len) as _;
        let d = libc::CMSG_DATA(c);
        std::ptr::write_unaligned(d.cast::<u32>(), iv.len() as u32);
        std::ptr::copy_nonoverlapping(iv.as_ptr(), d.add(4), iv.len());
    }
    // SAFETY: `msg` is fully initialised and every pointer in it (iov → data, control →
    // ctrl) is valid for the call.
    let sent = unsafe { libc::sendmsg(op.as_raw_fd(), &msg, 0) };
    ctrl.zeroize();
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    if sent as usize != data.len() {
        return Err(io::Error::other(format!(
            "AF_ALG took {sent} of {} bytes",
            data.len()
        )));
    }
    let mut done = 0;
    while done < data.len() {
        let rest = &mut data[done..];
        // SAFETY: `rest` is a valid writable buffer of `rest.len()` bytes.
        let n = unsafe { libc::read(op.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        done += n as usize;
    }
    Ok(())
}

/// The crypto API names of a dm-crypt cipher spec (one owner for every caller: the kernel
/// engine, `engines`, `status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelNames {
    /// What dm-crypt asks the kernel for (`crypt_ctr_cipher_old`/`_new` in
    /// drivers/md/dm-crypt.c): `xts(aes)`, `essiv(cbc(aes),sha256)` for `essiv:<hash>` IVs,
    /// `adiantum(xchacha12,aes)`.
    pub dm_crypt: String,
    /// What lukskit's kernel engine binds: the same without the `essiv(…)` wrapper (the
    /// engine computes ESSIV IVs itself, as crypto/essiv.c does).
    pub engine: String,
}

/// The crypto API names dm-crypt and the kernel engine use for `spec`: the chaining mode
/// applied to the cipher (`xts(aes)`; for the capi form the name given), wrapped in
/// `essiv(…,<hash>)` for dm-crypt when the IV generator is `essiv`. The IV generator does not
/// otherwise change the name (`lmk`, `tcw`, `benbi`, … are dm-crypt's own code).
pub fn kernel_names(spec: &CipherSpec) -> KernelNames {
    let engine = format!("{}({})", spec.chainmode, spec.cipher);
    let dm_crypt = match (spec.ivmode.as_deref(), spec.ivopts.as_deref()) {
        (Some("essiv"), Some(hash)) => format!("essiv({engine},{hash})"),
        _ => engine.clone(),
    };
    KernelNames { dm_crypt, engine }
}

/// The kernel `skcipher` name for a lukskit mode and cipher (`xts(aes)`), or why there is none.
pub(crate) fn kernel_name(kind: ModeKind, alg: CipherAlg) -> Result<String> {
    let mode = match kind {
        ModeKind::Ecb => "ecb",
        ModeKind::Cbc => "cbc",
        ModeKind::Ctr => "ctr",
        ModeKind::Xts => "xts",
        ModeKind::Lrw => "lrw",
        ModeKind::Adiantum(_) => {
            return Err(CryptoError::Unsupported(
                "adiantum is named by its stream and block cipher".into(),
            ))
        }
    };
    if alg == CipherAlg::Null {
        return Err(CryptoError::Unsupported(
            "the kernel engine does not do cipher_null (use --engine lukskit)".into(),
        ));
    }
    Ok(format!("{mode}({})", alg.name()))
}

/// The kernel engine behind a [`SectorCipher`]: one transform per subkey, dm-crypt's IVs.
pub(crate) struct KernelSectors {
    tfms: Box<[KernelCipher]>,
    /// lukskit's salt-keyed ESSIV cipher per subkey (`essiv:<hash>` only).
    essiv: Box<[Option<BlockCipher>]>,
    iv: IvKind,
    iv_size: usize,
    sector_size: u32,
    sector_shift: u32,
    iv_large_sectors: bool,
}

impl KernelSectors {
    pub(crate) fn new(
        spec: &CipherSpec,
        key: &[u8],
        sector_size: u32,
        iv_large_sectors: bool,
    ) -> Result<Self> {
        let plan = SectorCipher::plan(spec, key.len(), sector_size)?;
        if matches!(
            plan.iv,
            IvKind::Eboiv | IvKind::Lmk | IvKind::Elephant | IvKind::Tcw
        ) {
            return Err(CryptoError::Unsupported(format!(
                "the kernel engine does not do the IV generator of '{spec}' (use --engine lukskit)"
            )));
        }
        // dm-crypt's `xchacha12,aes-adiantum-plain64` is the kernel's
        // `adiantum(xchacha12,aes)` (its 32-byte IV is plain64's); `kernel_name` refuses what
        // the kernel engine cannot bind (cipher_null).
        if !matches!(plan.kind, ModeKind::Adiantum(_)) {
            kernel_name(plan.kind, plan.alg)?;
        }
        let name = kernel_names(spec).engine;
        let mut tfms = Vec::with_capacity(plan.keycount);
        let mut essiv = Vec::with_capacity(plan.keycount);
        for i in 0..plan.keycount {
            let subkey = &key[i * plan.subkey_len..(i + 1) * plan.subkey_len];
            tfms.push(KernelCipher::new(&name, subkey)?);
            essiv.push(match plan.iv {
                IvKind::Essiv(h) => Some(BlockCipher::new(plan.alg, &h.salt(subkey), true)?),
                _ => None,
            });
        }
        Ok(KernelSectors {
            tfms: tfms.into_boxed_slice(),
            essiv: essiv.into_boxed_slice(),
            iv: plan.iv,
            iv_size: plan.iv_size,
            sector_size,
            sector_shift: plan.sector_shift,
            iv_large_sectors,
        })
    }

    /// The kernel algorithm name (`xts(aes)`).
    pub(crate) fn name(&self) -> &str {
        self.tfms[0].name()
    }

    /// Process whole units of an already validated buffer.
    pub(crate) fn crypt(&self, data: &mut [u8], sector: u64, encrypt: bool) -> Result<()> {
        let ss = self.sector_size as usize;
        let step = u64::from(self.sector_size / 512);
        let key_mask = (self.tfms.len() - 1) as u64;
        let mut ivb = [0u8; MAX_IV];
        let unit_iv = |cc_sector: u64, ivb: &mut [u8; MAX_IV]| -> usize {
            let k = (cc_sector & key_mask) as usize;
            let iv = &mut ivb[..self.iv_size];
            iv.fill(0);
            let s = if self.iv_large_sectors {
                cc_sector >> self.sector_shift
            } else {
                cc_sector
            };
            iv::fill_plain(self.iv, iv, s, u64::from(self.sector_size));
            if let Some(e) = &self.essiv[k] {
                e.encrypt_block(iv);
            }
            k
        };
        let res = if self.tfms.len() == 1 {
            let n_iv = self.iv_size;
            self.tfms[0].with_op(|op| {
                let mut cc = sector;
                for unit in data.chunks_exact_mut(ss) {
                    unit_iv(cc, &mut ivb);
                    request(op, encrypt, &ivb[..n_iv], unit)?;
                    cc = cc.wrapping_add(step);
                }
                Ok(())
            })
        } else {
            let mut cc = sector;
            let mut r = Ok(());
            for unit in data.chunks_exact_mut(ss) {
                let k = unit_iv(cc, &mut ivb);
                r = self.tfms[k].crypt(encrypt, &ivb[..self.iv_size], unit);
                if r.is_err() {
                    break;
                }
                cc = cc.wrapping_add(step);
            }
            r
        };
        ivb.zeroize();
        res.map_err(CryptoError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the kernel has AF_ALG, the kernel engine's bytes equal lukskit's engine's (for
    /// the specs whose algorithms this kernel has); where it has none (this development
    /// host), building one fails with an error that says so. The reference VM checks every
    /// spec of the matrix against dm-crypt (tests/refvm/kernel/kcapi.sh).
    #[test]
    fn kernel_engine_equals_lukskit_engine_or_says_why_not() {
        let specs = [
            ("aes-xts-plain64", 64, 512, false),
            ("aes-xts-plain64", 32, 4096, true),
            ("aes-cbc-essiv:sha256", 32, 512, false),
            ("aes:2-cbc-plain64", 64, 512, false),
            ("serpent-xts-plain64be", 64, 4096, false),
            ("twofish-lrw-benbi", 48, 1024, false),
        ];
        let mut data = vec![0u8; 32 * 1024];
        crate::random::fill(&mut data).unwrap();
        for (s, key_len, ss, large) in specs {
            let spec = CipherSpec::parse(s).unwrap();
            let key: Vec<u8> = (0..key_len as u8).map(|b| b.wrapping_mul(37)).collect();
            let k = SectorCipher::new_kernel(&spec, &key, ss, large);
            if !af_alg_available() {
                let e = k.unwrap_err().to_string();
                assert!(e.contains("AF_ALG"), "{s}: {e}");
                continue;
            }
            let k = k.unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(k.engine(), super::super::EngineKind::Kernel);
            let l = SectorCipher::new(&spec, &key, ss, large).unwrap();
            let (mut a, mut b) = (data.clone(), data.clone());
            k.encrypt_parallel(&mut a, 8 * 1000).unwrap();
            l.encrypt(&mut b, 8 * 1000).unwrap();
            assert_eq!(a, b, "{s}");
            k.decrypt(&mut a, 8 * 1000).unwrap();
            assert_eq!(a, data, "{s}");
        }
        // Not offered by the kernel engine, whatever the kernel.
        let lmk = CipherSpec::parse("aes-cbc-lmk").unwrap();
        assert!(SectorCipher::new_kernel(&lmk, &[0u8; 16], 512, false).is_err());
    }

    #[test]
    fn dm_crypt_requests() {
        let n = |s: &str| super::kernel_names(&CipherSpec::parse(s).unwrap());
        let x = n("aes-xts-plain64");
        assert_eq!(
            (x.dm_crypt.as_str(), x.engine.as_str()),
            ("xts(aes)", "xts(aes)")
        );
        let e = n("aes-cbc-essiv:sha256");
        assert_eq!(e.dm_crypt, "essiv(cbc(aes),sha256)");
        assert_eq!(e.engine, "cbc(aes)");
        assert_eq!(n("capi:xts(aes)-plain64").dm_crypt, "xts(aes)");
        assert_eq!(
            n("capi:cbc(aes)-essiv:sha256").dm_crypt,
            "essiv(cbc(aes),sha256)"
        );
        assert_eq!(n("aes:2-cbc-lmk").dm_crypt, "cbc(aes)");
        assert_eq!(
            n("xchacha12,aes-adiantum-plain64").dm_crypt,
            "adiantum(xchacha12,aes)"
        );
    }

    #[test]
    fn kernel_names() {
        assert_eq!(
            kernel_name(ModeKind::Xts, CipherAlg::Aes).unwrap(),
            "xts(aes)"
        );
        assert_eq!(
            kernel_name(ModeKind::Lrw, CipherAlg::Twofish).unwrap(),
            "lrw(twofish)"
        );
        assert!(kernel_name(ModeKind::Cbc, CipherAlg::Null).is_err());
    }
}
