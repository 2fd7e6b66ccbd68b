//! How fast a cipher runs, as `benchmark` measures it (cryptsetup's table): lukskit's sector
//! engine over in-memory buffers, and the kernel's crypto API as cryptsetup 2.6.1 measures it
//! (what dm-crypt will get).

use super::kernel_api::{KernelCipher, KernelError};
use super::SectorCipher;
use crate::spec::CipherSpec;
use crate::{CryptoError, SecretBuf};
use std::time::{Duration, Instant};

/// Encryption and decryption speed in MiB/s of wall-clock time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    /// MiB/s encrypting.
    pub encrypt: f64,
    /// MiB/s decrypting.
    pub decrypt: f64,
}

/// The twelve cipher lines of `cryptsetup benchmark`, in its order: cipher, mode, key bits.
pub const CRYPTSETUP_CIPHERS: [(&str, &str, u32); 12] = [
    ("aes", "cbc", 128),
    ("serpent", "cbc", 128),
    ("twofish", "cbc", 128),
    ("aes", "cbc", 256),
    ("serpent", "cbc", 256),
    ("twofish", "cbc", 256),
    ("aes", "xts", 256),
    ("serpent", "xts", 256),
    ("twofish", "xts", 256),
    ("aes", "xts", 512),
    ("serpent", "xts", 512),
    ("twofish", "xts", 512),
];

/// The PBKDF2 hashes of `cryptsetup benchmark`, in its order.
pub const CRYPTSETUP_PBKDF2_HASHES: [&str; 5] =
    ["sha1", "sha256", "sha512", "ripemd160", "whirlpool"];

/// Bytes processed per engine call and thread (and per kernel pass).
const BUFFER: usize = 1024 * 1024;

/// cryptsetup's request size of the kernel benchmark (`CIPHER_BLOCK_BYTES`).
const KERNEL_BLOCK: usize = 64 * 1024;

/// The speed of lukskit's sector engine for `spec` with a random `key_bits` key: every one
/// of `threads` threads (at least one) encrypts, then decrypts, its own 1 MiB buffer of
/// `sector_size` sectors over and over, with the spec's IV generator, for at least `min`
/// per direction.
pub fn sector_engine(
    spec: &CipherSpec,
    key_bits: u32,
    sector_size: u32,
    threads: usize,
    min: Duration,
) -> Result<Speed, CryptoError> {
    let key = SecretBuf::random((key_bits / 8) as usize)?;
    let c = SectorCipher::new(spec, key.as_bytes(), sector_size, false)?;
    let mut bufs: Vec<Vec<u8>> = (0..threads.max(1)).map(|_| vec![0u8; BUFFER]).collect();
    for b in bufs.iter_mut() {
        crate::random::fill(b)?;
    }
    Ok(Speed {
        encrypt: run_timed(&c, &mut bufs, true, min)?,
        decrypt: run_timed(&c, &mut bufs, false, min)?,
    })
}

/// Process every buffer repeatedly (one thread per buffer) for at least `min`; MiB/s of
/// wall-clock time.
fn run_timed(
    c: &SectorCipher,
    bufs: &mut [Vec<u8>],
    encrypt: bool,
    min: Duration,
) -> Result<f64, CryptoError> {
    let pass = |b: &mut [u8], sector: u64| {
        if encrypt {
            c.encrypt(b, sector)
        } else {
            c.decrypt(b, sector)
        }
    };
    // Warm-up (page faults, caches).
    for b in bufs.iter_mut() {
        pass(b, 0)?;
    }
    let start = Instant::now();
    let deadline = start + min;
    let bytes = std::thread::scope(|s| -> Result<u64, CryptoError> {
        let handles: Vec<_> = bufs
            .iter_mut()
            .map(|b| {
                s.spawn(move || -> Result<u64, CryptoError> {
                    let (mut done, mut sector) = (0u64, 0u64);
                    loop {
                        pass(b, sector)?;
                        done += b.len() as u64;
                        sector += (b.len() / 512) as u64;
                        if Instant::now() >= deadline {
                            return Ok(done);
                        }
                    }
                })
            })
            .collect();
        let mut total = 0;
        for h in handles {
            // A worker's panic is a bug: raised again here.
            total += h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        }
        Ok(total)
    })?;
    Ok(bytes as f64 / (1024.0 * 1024.0) / start.elapsed().as_secs_f64())
}

/// The IV size cryptsetup's benchmark gives a mode: none for ECB, the block size otherwise
/// (8 bytes for the 64-bit block ciphers).
fn kernel_iv_size(cipher: &str, mode: &str) -> usize {
    if mode == "ecb" {
        0
    } else if matches!(cipher, "cast5" | "blowfish" | "des" | "des3_ede") {
        8
    } else {
        16
    }
}

/// The kernel crypto API's speed of `mode(cipher)` as cryptsetup 2.6.1 measures it
/// (`crypt_cipher_perf_kernel`): each pass binds and keys a socket and processes a 1 MiB
/// buffer in 64 KiB requests with one random IV; passes repeat for at least `min` per
/// direction.
pub fn kernel(
    cipher: &str,
    mode: &str,
    key_bits: u32,
    min: Duration,
) -> Result<Speed, KernelError> {
    let io = |e: CryptoError| KernelError::Io(std::io::Error::other(e.to_string()));
    let name = format!("{mode}({cipher})");
    let key = SecretBuf::random((key_bits / 8) as usize).map_err(io)?;
    let mut iv = vec![0u8; kernel_iv_size(cipher, mode)];
    let mut buf = vec![0u8; BUFFER];
    crate::random::fill(&mut iv).map_err(io)?;
    let pass = |encrypt: bool, buf: &mut [u8]| -> Result<(), KernelError> {
        let c = KernelCipher::new(&name, key.as_bytes())?;
        for block in buf.chunks_mut(KERNEL_BLOCK) {
            c.crypt(encrypt, &iv, block)?;
        }
        Ok(())
    };
    let mut speed = |encrypt: bool| -> Result<f64, KernelError> {
        let mut spent = Duration::ZERO;
        let mut passes = 0u64;
        while spent < min {
            let t = Instant::now();
            pass(encrypt, &mut buf)?;
            spent += t.elapsed();
            passes += 1;
        }
        Ok((passes * BUFFER as u64) as f64 / (1024.0 * 1024.0) / spent.as_secs_f64())
    };
    Ok(Speed {
        encrypt: speed(true)?,
        decrypt: speed(false)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sector_engine_is_measured_on_every_thread() {
        let spec = CipherSpec::parse("aes-xts-plain64").unwrap();
        let s = sector_engine(&spec, 512, 4096, 2, Duration::from_millis(20)).unwrap();
        for v in [s.encrypt, s.decrypt] {
            assert!(v.is_finite() && v > 0.0, "{s:?}");
        }
        // A key size the cipher does not take is the engine's error, not a speed.
        assert!(sector_engine(&spec, 100, 4096, 1, Duration::from_millis(1)).is_err());
    }

    #[test]
    fn kernel_ivs_are_cryptsetups() {
        assert_eq!(kernel_iv_size("aes", "ecb"), 0);
        assert_eq!(kernel_iv_size("des3_ede", "cbc"), 8);
        assert_eq!(kernel_iv_size("aes", "xts"), 16);
    }
}
