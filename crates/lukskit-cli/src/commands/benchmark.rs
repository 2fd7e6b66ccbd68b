//! `benchmark`: cryptsetup's KDF and cipher benchmark, with cryptsetup's output format,
//! measured with lukskit's own engine (so it works where the kernel crypto API is missing).
//!
//! * no options: PBKDF2 per hash, Argon2i/Argon2id, then the twelve cipher lines;
//! * `--cipher X [--key-size N]`: one cipher line (key size default 256 bits, as cryptsetup);
//! * `--pbkdf P` / `--hash H`: one KDF line;
//! * `--threads N` (default 1, 0 = all cores), `--sector-size` (default 4096), `--json`.
//!
//! Each cipher line encrypts and decrypts 1 MiB buffers per thread with the full dm-crypt
//! sector path (IV generation per sector, `plain64` unless the spec names another IV) for at
//! least one second per direction, and reports MiB/s of wall-clock time.

use crate::args::Opts;
use crate::errors::{CliError, Result};
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::kdf::{self, Argon2Variant};
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;

use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// cryptsetup's KDF key size default (`DEFAULT_PLAIN_KEYBITS`).
const DEFAULT_KEY_BITS: u32 = 256;
/// cryptsetup's default Argon2 target time (`DEFAULT_LUKS2_ITER_TIME`).
const DEFAULT_ARGON2_MS: u32 = 2000;
/// Bytes processed per engine call and thread.
const BUFFER: usize = 1024 * 1024;
/// Minimum measuring time per direction (cryptsetup: 1000 ms). The environment variable
/// `LUKSKIT_BENCH_MS` shortens it for quick runs and tests.
fn min_time() -> Duration {
    let ms = std::env::var("LUKSKIT_BENCH_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&v| v > 0)
        .unwrap_or(1000);
    Duration::from_millis(ms)
}

/// The twelve cipher lines of `cryptsetup benchmark`, in its order.
const CIPHERS: [(&str, &str, u32); 12] = [
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
const PBKDF2_HASHES: [&str; 5] = ["sha1", "sha256", "sha512", "ripemd160", "whirlpool"];

/// Output collector: cryptsetup's text lines, or JSON.
struct Out {
    json: bool,
    kdfs: Vec<Value>,
    ciphers: Vec<Value>,
}

impl Out {
    fn line(&self, s: &str) {
        if !self.json {
            println!("{s}");
        }
    }
}

/// `benchmark`.
pub fn benchmark(o: &Opts, _args: &[String]) -> Result<()> {
    let threads = match o.threads {
        Some(0) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        Some(n) => n,
        None => 1,
    };
    let sector_size = o.sector_size.unwrap_or(4096);
    if !(512..=4096).contains(&sector_size) || !sector_size.is_power_of_two() {
        return Err(CliError::invalid("Unsupported encryption sector size."));
    }
    let key_bits = o.key_size.unwrap_or(DEFAULT_KEY_BITS);
    if key_bits == 0 || !key_bits.is_multiple_of(8) {
        return Err(CliError::invalid(
            "Key size in bits must be a multiple of 8 bits",
        ));
    }
    let key_len = (key_bits / 8) as usize;
    let mut out = Out {
        json: o.json,
        kdfs: Vec::new(),
        ciphers: Vec::new(),
    };
    out.line("# Tests are approximate using memory only (no storage IO).");
    let result = if o.pbkdf.is_some() || o.hash.is_some() {
        let kdf = o.pbkdf.as_deref().unwrap_or("pbkdf2");
        let hash = o.hash.as_deref().unwrap_or("sha256");
        // A KDF that cannot run is "N/A" and, asked for alone, exit 1 with nothing more
        // (cryptsetup returns the benchmark's error).
        match bench_kdf(o, &mut out, kdf, hash, key_len) {
            Ok(true) => Ok(()),
            Ok(false) => Err(CliError::invalid("")),
            Err(e) => Err(e),
        }
    } else if let Some(c) = &o.cipher {
        bench_one_cipher(&mut out, c, key_bits, sector_size, threads)
    } else {
        for h in PBKDF2_HASHES {
            bench_kdf(o, &mut out, "pbkdf2", h, key_len)?;
        }
        for v in ["argon2i", "argon2id"] {
            bench_kdf(o, &mut out, v, "", key_len)?;
        }
        out.line("#     Algorithm |       Key |      Encryption |      Decryption");
        for (cipher, mode, bits) in CIPHERS {
            let name = format!("{cipher}-{mode}");
            let spec = format!("{name}-plain64");
            match measure_cipher(&spec, bits, sector_size, threads) {
                Ok((enc, dec)) => {
                    out.line(&format!(
                        "{name:>15}  {bits:>9}b  {enc:>10.1} MiB/s  {dec:>10.1} MiB/s"
                    ));
                    out.ciphers.push(cipher_json(
                        &name,
                        &spec,
                        bits,
                        sector_size,
                        threads,
                        Some((enc, dec)),
                    ));
                }
                Err(_) => {
                    out.line(&format!(
                        "{name:>15}  {bits:>9}b {:>17} {:>17}",
                        "N/A", "N/A"
                    ));
                    out.ciphers
                        .push(cipher_json(&name, &spec, bits, sector_size, threads, None));
                }
            }
        }
        Ok(())
    };
    let measured_ciphers = !(o.pbkdf.is_some() || o.hash.is_some());
    if measured_ciphers && sector_size != 512 && result.is_ok() {
        out.line(&format!(
            "# Ciphers measured with {sector_size}-byte sectors; cryptsetup's table is for \
             512-byte sectors (--sector-size 512 to compare)."
        ));
    }
    if o.json {
        let v = json!({
            "threads": threads,
            "sector_size": sector_size,
            "kdf": out.kdfs,
            "ciphers": out.ciphers,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string())
        );
    }
    result
}

fn cipher_json(
    name: &str,
    spec: &str,
    bits: u32,
    sector_size: u32,
    threads: usize,
    speed: Option<(f64, f64)>,
) -> Value {
    let round = |x: f64| (x * 10.0).round() / 10.0;
    json!({
        "algorithm": name,
        "spec": spec,
        "key_bits": bits,
        "sector_size": sector_size,
        "threads": threads,
        "encryption_mib_s": speed.map(|s| round(s.0)),
        "decryption_mib_s": speed.map(|s| round(s.1)),
    })
}

/// One KDF line (`action_benchmark_kdf`): whether it was measured (`false`: "N/A").
fn bench_kdf(o: &Opts, out: &mut Out, kdf_name: &str, hash: &str, key_len: usize) -> Result<bool> {
    if kdf_name == "pbkdf2" {
        let res = HashAlg::from_name(hash)
            .map_err(CliError::from)
            .and_then(|h| kdf::benchmark_pbkdf2(h, key_len).map_err(CliError::from));
        return match res {
            Ok(iters) => {
                out.line(&format!(
                    "PBKDF2-{hash:<9} {iters:>7} iterations per second for {}-bit key",
                    key_len * 8
                ));
                out.kdfs.push(json!({
                    "type": "pbkdf2", "hash": hash, "key_bits": key_len * 8,
                    "iterations_per_second": iters,
                }));
                Ok(true)
            }
            Err(_) => {
                out.line(&format!("PBKDF2-{hash:<9}     N/A"));
                out.kdfs
                    .push(json!({"type": "pbkdf2", "hash": hash, "key_bits": key_len * 8}));
                Ok(false)
            }
        };
    }
    let variant = Argon2Variant::from_name(kdf_name)
        .map_err(|_| CliError::invalid(format!("Unknown PBKDF type {kdf_name}.")))?;
    let time_ms = o.iter_time.filter(|&t| t > 0).unwrap_or(DEFAULT_ARGON2_MS);
    let memory = o
        .pbkdf_memory
        .filter(|&m| m > 0)
        .unwrap_or_else(kdf::default_argon2_memory_cap_kib);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let parallel = match o.pbkdf_parallel.filter(|&p| p > 0) {
        Some(p) => p.min(cpus),
        None => kdf::default_argon2_parallel(),
    };
    match kdf::benchmark_argon2(variant, time_ms, memory, parallel, key_len) {
        Ok((iters, mem)) => {
            out.line(&format!(
                "{kdf_name:<10} {iters:>4} iterations, {mem:>5} memory, {parallel:>1} parallel threads (CPUs) for {}-bit key (requested {time_ms} ms time)",
                key_len * 8
            ));
            out.kdfs.push(json!({
                "type": kdf_name, "key_bits": key_len * 8, "iterations": iters,
                "memory_kib": mem, "parallel": parallel, "requested_ms": time_ms,
            }));
            Ok(true)
        }
        Err(_) => {
            out.line(&format!("{kdf_name:<10} N/A"));
            out.kdfs
                .push(json!({"type": kdf_name, "key_bits": key_len * 8}));
            Ok(false)
        }
    }
}

/// `--cipher X`: cryptsetup splits at the first '-' into cipher and mode and drops the IV
/// part of the mode for the displayed name; lukskit keeps the IV generator for the
/// measurement when one is given (its cost is real), else uses `plain64`.
fn bench_one_cipher(
    out: &mut Out,
    given: &str,
    key_bits: u32,
    sector_size: u32,
    threads: usize,
) -> Result<()> {
    let not_available = || {
        CliError::invalid(format!(
            "Cipher {given} (with {key_bits} bits key) is not available."
        ))
    };
    let spec = match CipherSpec::parse(given) {
        Ok(s) => s,
        Err(_) => CipherSpec::parse(&format!("{given}-plain64"))
            .map_err(|_| CliError::invalid("No known cipher specification pattern detected."))?,
    };
    let (cipher, mode) = (spec.cipher.clone(), spec.chainmode.clone());
    let spec_text = spec.to_string();
    let (enc, dec) =
        measure_cipher(&spec_text, key_bits, sector_size, threads).map_err(|_| not_available())?;
    let width = (cipher.len() + mode.len() + 1).max(11);
    out.line(&format!(
        "#{:w$} Algorithm |       Key |      Encryption |      Decryption",
        "",
        w = width - 11
    ));
    out.line(&format!(
        "{cipher:>cw$}-{mode}  {key_bits:>9}b  {enc:>10.1} MiB/s  {dec:>10.1} MiB/s",
        cw = width - mode.len() - 1
    ));
    out.ciphers.push(cipher_json(
        &format!("{cipher}-{mode}"),
        &spec_text,
        key_bits,
        sector_size,
        threads,
        Some((enc, dec)),
    ));
    Ok(())
}

/// Encryption and decryption speed in MiB/s of `spec` with a random `key_bits` key.
pub fn measure_cipher(
    spec: &str,
    key_bits: u32,
    sector_size: u32,
    threads: usize,
) -> Result<(f64, f64)> {
    let spec = CipherSpec::parse(spec)?;
    let key = SecretBuf::random((key_bits / 8) as usize)?;
    let c = SectorCipher::new(&spec, key.as_bytes(), sector_size, false)?;
    let threads = threads.max(1);
    let mut bufs: Vec<Vec<u8>> = (0..threads).map(|_| vec![0u8; BUFFER]).collect();
    for b in bufs.iter_mut() {
        lukskit_crypto::random::fill(b)?;
    }
    let enc = run_timed(&c, &mut bufs, true)?;
    let dec = run_timed(&c, &mut bufs, false)?;
    Ok((enc, dec))
}

/// Process every buffer repeatedly (one thread per buffer) for at least [`min_time`];
/// returns MiB/s of wall-clock time.
fn run_timed(c: &SectorCipher, bufs: &mut [Vec<u8>], encrypt: bool) -> Result<f64> {
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
    let deadline = start + min_time();
    let bytes: u64 = std::thread::scope(|s| -> Result<u64> {
        let handles: Vec<_> = bufs
            .iter_mut()
            .map(|b| {
                s.spawn(move || -> Result<u64> {
                    let mut done = 0u64;
                    let mut sector = 0u64;
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
            total += h
                .join()
                .map_err(|_| CliError::invalid("Benchmark thread panicked."))??;
        }
        Ok(total)
    })?;
    let secs = start.elapsed().as_secs_f64();
    Ok(bytes as f64 / (1024.0 * 1024.0) / secs)
}
