//! AES-256-XTS side by side in one process: lukskit's dm-crypt sector path
//! (`SectorCipher`, aes-xts-plain64, 512-bit key) beside AWS-LC's and OpenSSL's EVP
//! AES-256-XTS, on the same 1 MiB buffer, for 4096- and 512-byte data units.
//!
//! The implementations are measured in turns (round-robin, `--rounds` rounds of `--ms`
//! milliseconds each) so that a change of machine load hits all of them alike; the best
//! round of each is reported. OpenSSL is measured twice, with a new IV per data unit (as a
//! disk encryption layer must: `EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv)` then one
//! `EVP_CipherUpdate`) and without (one `EVP_CipherUpdate` per unit on an unchanged IV, as
//! `openssl speed -evp aes-256-xts` does; AWS-LC refuses that); the faster of the two counts.
//!
//! Also: lukskit with its 256-bit kernels (`LUKSKIT_NO_AVX512`), with 2 threads (one buffer
//! per thread), and AES-CBC-ESSIV decryption with 1 and 2 threads.
//!
//! Output: one line per measurement, `name<TAB>MiB/s`, then nothing else (bench/run.sh
//! turns it into tables). Not a test: no figure is checked here.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;

const BUFFER: usize = 1 << 20;

/// The EVP entry points both libraries share (AWS-LC keeps OpenSSL's API).
macro_rules! evp_peer {
    ($modname:ident, $sys:ident) => {
        mod $modname {
            use super::*;
            use $sys as sys;

            /// One EVP AES-256-XTS context of the library.
            pub struct Xts {
                ctx: *mut sys::EVP_CIPHER_CTX,
            }

            impl Xts {
                pub fn new(key: &[u8; 64], encrypt: bool) -> Xts {
                    // SAFETY: plain FFI calls with valid pointers: `key` is 64 bytes (the
                    // AES-256-XTS key length), the context is checked for NULL.
                    unsafe {
                        let ctx = sys::EVP_CIPHER_CTX_new();
                        assert!(!ctx.is_null());
                        let iv = [0u8; 16];
                        let ok = sys::EVP_CipherInit_ex(
                            ctx,
                            sys::EVP_aes_256_xts(),
                            std::ptr::null_mut(),
                            key.as_ptr(),
                            iv.as_ptr(),
                            encrypt as c_int,
                        );
                        assert_eq!(ok, 1, "EVP_CipherInit_ex");
                        Xts { ctx }
                    }
                }

                /// Each `unit`-byte data unit of `data` in place; with `iv_per_unit` the IV is
                /// set to the unit number first (plain64).
                pub fn run(&mut self, data: &mut [u8], unit: usize, first: u64, iv_per_unit: bool) {
                    for (i, u) in data.chunks_exact_mut(unit).enumerate() {
                        // SAFETY: `ctx` was initialised in `new`; `u` is valid for reads and
                        // writes of `unit` bytes and in-place operation is allowed for XTS.
                        unsafe {
                            if iv_per_unit {
                                let mut iv = [0u8; 16];
                                iv[..8].copy_from_slice(&(first + i as u64).to_le_bytes());
                                let ok = sys::EVP_CipherInit_ex(
                                    self.ctx,
                                    std::ptr::null(),
                                    std::ptr::null_mut(),
                                    std::ptr::null(),
                                    iv.as_ptr(),
                                    -1,
                                );
                                assert_eq!(ok, 1, "EVP_CipherInit_ex (IV)");
                            }
                            let mut outl: c_int = 0;
                            let ok = sys::EVP_CipherUpdate(
                                self.ctx,
                                u.as_mut_ptr(),
                                &mut outl,
                                u.as_ptr(),
                                unit as c_int,
                            );
                            assert!(
                                ok == 1 && outl as usize == unit,
                                "EVP_CipherUpdate: {ok} {outl} iv {iv_per_unit}"
                            );
                        }
                    }
                }
            }

            impl Drop for Xts {
                fn drop(&mut self) {
                    // SAFETY: `ctx` came from EVP_CIPHER_CTX_new and is freed once.
                    unsafe { sys::EVP_CIPHER_CTX_free(self.ctx) };
                }
            }
        }
    };
}
evp_peer!(awslc, aws_lc_sys);
evp_peer!(ossl, openssl_sys);

/// Run `f` over the buffer repeatedly for `ms` milliseconds; MiB/s.
fn timed(ms: u64, buf: &mut [u8], mut f: impl FnMut(&mut [u8], u64)) -> f64 {
    f(buf, 0); // warm-up
    let start = Instant::now();
    let deadline = start + Duration::from_millis(ms);
    let mut bytes = 0u64;
    let mut sector = 0u64;
    loop {
        f(buf, sector);
        bytes += buf.len() as u64;
        sector += (buf.len() / 512) as u64;
        let now = Instant::now();
        if now >= deadline {
            return bytes as f64 / (now - start).as_secs_f64() / 1048576.0;
        }
    }
}

/// `threads` threads, one buffer each, for `ms` milliseconds; total MiB/s.
fn timed_threads(ms: u64, threads: usize, c: &SectorCipher, encrypt: bool) -> f64 {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut b = vec![0x5au8; BUFFER];
                    timed(ms, &mut b, |b, sector| {
                        if encrypt {
                            c.encrypt(b, sector).unwrap()
                        } else {
                            c.decrypt(b, sector).unwrap()
                        }
                    })
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

fn main() {
    let mut ms = 400u64;
    let mut rounds = 5usize;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ms" => ms = args.next().and_then(|v| v.parse().ok()).expect("--ms N"),
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--rounds N")
            }
            "--only" => only = args.next(),
            _ => panic!("usage: lukskit-xts-peers [--ms N] [--rounds N] [--only PREFIX]"),
        }
    }
    let mut key = [0u8; 64];
    for (i, k) in key.iter_mut().enumerate() {
        *k = (i as u8).wrapping_mul(37).wrapping_add(11);
    }
    let xts = CipherSpec::parse("aes-xts-plain64").unwrap();
    let essiv = CipherSpec::parse("aes-cbc-essiv:sha256").unwrap();

    // Exactness first: every implementation must produce the same ciphertext (with
    // iv_large_sectors, lukskit's plain64 IV is the unit number, as given to the peers).
    for unit in [4096usize, 512] {
        let c = SectorCipher::new(&xts, &key, unit as u32, true).unwrap();
        let pt: Vec<u8> = (0..BUFFER).map(|i| (i * 7 % 251) as u8).collect();
        let mut a = pt.clone();
        c.encrypt(&mut a, 0).unwrap();
        let mut b = pt.clone();
        awslc::Xts::new(&key, true).run(&mut b, unit, 0, true);
        let mut o = pt.clone();
        ossl::Xts::new(&key, true).run(&mut o, unit, 0, true);
        assert!(a == b && a == o, "ciphertexts differ ({unit}-byte units)");
    }

    let mut ciphers = Vec::new();
    for unit in [4096usize, 512] {
        for wide in [true, false] {
            // Read when the key is set up (no other thread runs yet).
            if wide {
                std::env::remove_var("LUKSKIT_NO_AVX512");
            } else {
                std::env::set_var("LUKSKIT_NO_AVX512", "1");
            }
            ciphers.push((
                unit,
                wide,
                SectorCipher::new(&xts, &key, unit as u32, false).unwrap(),
            ));
        }
    }
    std::env::remove_var("LUKSKIT_NO_AVX512");
    let cbc = SectorCipher::new(&essiv, &key[..32], 512, false).unwrap();
    type Job<'a> = (String, Box<dyn FnMut(&mut [u8]) -> f64 + 'a>);
    let mut jobs: Vec<Job> = Vec::new();
    for (unit, wide, c) in &ciphers {
        for enc in [true, false] {
            let dir = if enc { "enc" } else { "dec" };
            let name = format!("lukskit{} {unit} {dir}", if *wide { "" } else { "-256bit" });
            jobs.push((
                name,
                Box::new(move |b: &mut [u8]| {
                    timed(ms, b, |b, s| {
                        if enc {
                            c.encrypt(b, s).unwrap()
                        } else {
                            c.decrypt(b, s).unwrap()
                        }
                    })
                }),
            ));
        }
    }
    for unit in [4096usize, 512] {
        for enc in [true, false] {
            let dir = if enc { "enc" } else { "dec" };
            for iv in [true, false] {
                let tag = if iv { "" } else { "-sameiv" };
                // AWS-LC refuses a second EVP_CipherUpdate on an unchanged XTS IV.
                if iv {
                    let mut a = awslc::Xts::new(&key, enc);
                    jobs.push((
                        format!("awslc{tag} {unit} {dir}"),
                        Box::new(move |b: &mut [u8]| {
                            timed(ms, b, |b, s| a.run(b, unit, s / (unit as u64 / 512), iv))
                        }),
                    ));
                }
                let mut o = ossl::Xts::new(&key, enc);
                jobs.push((
                    format!("openssl{tag} {unit} {dir}"),
                    Box::new(move |b: &mut [u8]| {
                        timed(ms, b, |b, s| o.run(b, unit, s / (unit as u64 / 512), iv))
                    }),
                ));
            }
        }
    }
    // Thread scaling: XTS (4096) and CBC-ESSIV decryption (512), 1 and 2 threads.
    let x4 = &ciphers[0].2;
    let cbc = &cbc;
    for threads in [1usize, 2] {
        for enc in [true, false] {
            let dir = if enc { "enc" } else { "dec" };
            jobs.push((
                format!("lukskit-threads{threads} 4096 {dir}"),
                Box::new(move |_: &mut [u8]| timed_threads(ms, threads, x4, enc)),
            ));
        }
        jobs.push((
            format!("cbc-essiv-threads{threads} 512 dec"),
            Box::new(move |_: &mut [u8]| timed_threads(ms, threads, cbc, false)),
        ));
        jobs.push((
            format!("cbc-essiv-threads{threads} 512 enc"),
            Box::new(move |_: &mut [u8]| timed_threads(ms, threads, cbc, true)),
        ));
    }

    if let Some(p) = &only {
        jobs.retain(|(name, _)| name.starts_with(p.as_str()));
    }
    let mut buf = vec![0x5au8; BUFFER];
    let mut best = vec![0f64; jobs.len()];
    for _ in 0..rounds {
        for (i, (_, f)) in jobs.iter_mut().enumerate() {
            best[i] = best[i].max(f(&mut buf));
        }
    }
    for ((name, _), v) in jobs.iter().zip(best) {
        println!("{name}\t{v:.1}");
    }
}
