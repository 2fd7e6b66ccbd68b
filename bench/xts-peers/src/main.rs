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
//! Also: lukskit with its 256-bit kernels (`LUKSKIT_NO_AVX512`) and with the four-register
//! XTS kernels (`LUKSKIT_XTS_4REG`: the 512-bit one for 512-byte sectors with AVX-512, the
//! 256-bit one for every sector size without), with 2 threads (one buffer
//! per thread), AES-CBC-ESSIV decryption with 1 and 2 threads, and, as the machine's own
//! ceiling for that scaling, AWS-LC in 1 and 2 threads (a context and buffer per thread).
//!
//! With `--cpu-time`, single-thread figures are per second of the measuring thread's CPU
//! time (`CLOCK_THREAD_CPUTIME_ID`), so that other processes on a shared machine do not
//! distort them; the thread-scaling figures are always per wall-clock second.
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

/// `struct timespec` of x86-64 / aarch64 Linux.
#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
}

/// CPU time of the calling thread (Linux `CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_time() -> Duration {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock 3 is CLOCK_THREAD_CPUTIME_ID.
    let r = unsafe { clock_gettime(3, &mut ts) };
    assert_eq!(r, 0, "clock_gettime");
    Duration::new(ts.sec as u64, ts.nsec as u32)
}

/// Whether single-thread figures are per second of the thread's CPU time rather than of
/// wall-clock time (`--cpu-time`): on a shared machine, time slices given to other
/// processes then do not count against the implementation being measured.
static CPU_TIME: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Run `f` over the buffer repeatedly for `ms` milliseconds; MiB/s (per wall-clock second,
/// or per second of this thread's CPU time with `--cpu-time` unless `wall`).
fn timed_clock(ms: u64, buf: &mut [u8], wall: bool, mut f: impl FnMut(&mut [u8], u64)) -> f64 {
    let cpu = !wall && CPU_TIME.load(std::sync::atomic::Ordering::Relaxed);
    f(buf, 0); // warm-up
    let start = Instant::now();
    let cpu_start = thread_cpu_time();
    let deadline = start + Duration::from_millis(ms);
    let mut bytes = 0u64;
    let mut sector = 0u64;
    loop {
        f(buf, sector);
        bytes += buf.len() as u64;
        sector += (buf.len() / 512) as u64;
        let now = Instant::now();
        if now >= deadline {
            let secs = if cpu {
                (thread_cpu_time() - cpu_start).as_secs_f64()
            } else {
                (now - start).as_secs_f64()
            };
            return bytes as f64 / secs / 1048576.0;
        }
    }
}

/// [`timed_clock`] for single-thread measurements.
fn timed(ms: u64, buf: &mut [u8], f: impl FnMut(&mut [u8], u64)) -> f64 {
    timed_clock(ms, buf, false, f)
}

/// `threads` threads, one buffer each, for `ms` milliseconds; total MiB/s.
fn timed_threads(ms: u64, threads: usize, c: &SectorCipher, encrypt: bool) -> f64 {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut b = vec![0x5au8; BUFFER];
                    // Wall-clock time: scaling is about elapsed time.
                    timed_clock(ms, &mut b, true, |b, sector| {
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

/// The machine's own 1 → 2 thread ceiling: AWS-LC AES-256-XTS (4 KiB units) in `threads`
/// threads, each with its own context and buffer (trivially parallel); total MiB/s.
fn awslc_threads(ms: u64, threads: usize, key: &[u8; 64], encrypt: bool) -> f64 {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut a = awslc::Xts::new(key, encrypt);
                    let mut b = vec![0x5au8; BUFFER];
                    timed_clock(ms, &mut b, true, |b, sector| {
                        a.run(b, 4096, sector / 8, true)
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
            "--cpu-time" => CPU_TIME.store(true, std::sync::atomic::Ordering::Relaxed),
            _ => panic!(
                "usage: lukskit-xts-peers [--ms N] [--rounds N] [--only PREFIX] [--cpu-time]"
            ),
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

    // (unit, kernels, cipher): "" = the default (512-bit, eight registers in flight),
    // "-256bit" = the 256-bit kernels, "-4reg" = the 512-bit kernel with four registers.
    let mut ciphers = Vec::new();
    for unit in [4096usize, 512] {
        for (tag, var) in [
            ("", None),
            ("-256bit", Some("LUKSKIT_NO_AVX512")),
            ("-4reg", Some("LUKSKIT_XTS_4REG")),
        ] {
            // Read when the key is set up (no other thread runs yet).
            if let Some(v) = var {
                std::env::set_var(v, "1");
            }
            ciphers.push((
                unit,
                tag,
                SectorCipher::new(&xts, &key, unit as u32, false).unwrap(),
            ));
            if let Some(v) = var {
                std::env::remove_var(v);
            }
        }
    }
    let cbc = SectorCipher::new(&essiv, &key[..32], 512, false).unwrap();
    type Job<'a> = (String, Box<dyn FnMut(&mut [u8]) -> f64 + 'a>);
    let mut jobs: Vec<Job> = Vec::new();
    for (unit, tag, c) in &ciphers {
        for enc in [true, false] {
            let dir = if enc { "enc" } else { "dec" };
            let name = format!("lukskit{tag} {unit} {dir}");
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
    // Thread scaling: XTS (4096) and CBC-ESSIV decryption (512), 1 and 2 threads, beside
    // the machine's ceiling (AWS-LC, one independent context per thread).
    let x4 = &ciphers[0].2;
    let cbc = &cbc;
    let key = &key;
    for threads in [1usize, 2] {
        for enc in [true, false] {
            let dir = if enc { "enc" } else { "dec" };
            jobs.push((
                format!("awslc-threads{threads} 4096 {dir}"),
                Box::new(move |_: &mut [u8]| awslc_threads(ms, threads, key, enc)),
            ));
        }
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
