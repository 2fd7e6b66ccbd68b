//! `benchmark`: cryptsetup's KDF and cipher benchmark, with cryptsetup's output format.
//!
//! `--engine` chooses what the cipher lines measure:
//! * `kernel`: the kernel's crypto API over AF_ALG, as cryptsetup 2.6.1 does (what dm-crypt
//!   will get): the mode without IV generator (`xts(aes)`), a fresh keyed socket per 1 MiB
//!   pass of 64 KiB requests with one IV, for at least one second per direction; a cipher the
//!   kernel lacks is "N/A", and without AF_ALG the KDF lines are followed by cryptsetup's
//!   "Required kernel crypto interface not available." (exit 1);
//! * `lukskit`: lukskit's own engine (below);
//! * `all`: both, side by side (kernel columns first);
//! * `auto` (the default): `kernel` where AF_ALG exists, else `lukskit` (so the table still
//!   answers where the kernel crypto API is missing, as on hosts without AF_ALG).
//!
//! * no options: PBKDF2 per hash, Argon2i/Argon2id, then the twelve cipher lines;
//! * `--cipher X [--key-size N]`: one cipher line (key size default 256 bits, as cryptsetup);
//! * `--pbkdf P` / `--hash H`: one KDF line;
//! * `--threads N` (default 1, 0 = all cores), `--sector-size` (default 4096), `--json`.
//!
//! Each cipher line encrypts and decrypts 1 MiB buffers per thread with the full dm-crypt
//! sector path (IV generation per sector, `plain64` unless the spec names another IV) for at
//! least one second per direction, and reports MiB/s of wall-clock time. The measurements are
//! [`lukskit_crypto::engine::speed`]'s; this module reads the options and prints the table.

use crate::args::Opts;
use crate::errors::{CliError, Result};
use lukskit_crypto::engine::kernel_api::{self, KernelError};
use lukskit_crypto::engine::speed;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::kdf::{self, Argon2Variant};
use lukskit_crypto::spec::CipherSpec;

use serde_json::{json, Value};
use std::time::Duration;

/// cryptsetup's KDF key size default (`DEFAULT_PLAIN_KEYBITS`).
const DEFAULT_KEY_BITS: u32 = 256;
/// cryptsetup's default Argon2 target time (`DEFAULT_LUKS2_ITER_TIME`).
const DEFAULT_ARGON2_MS: u32 = 2000;
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

/// What the cipher lines measure (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Kernel,
    Lukskit,
    All,
}

impl Engine {
    fn from_opts(o: &Opts) -> Result<Engine> {
        Ok(match o.engine.as_deref() {
            None | Some("auto") if kernel_api::af_alg_available() => Engine::Kernel,
            None | Some("auto") | Some("lukskit") => Engine::Lukskit,
            Some("kernel") => Engine::Kernel,
            Some("all") => Engine::All,
            Some(other) => {
                return Err(CliError::invalid(format!(
                    "Unknown engine {other} (lukskit, kernel, all or auto)."
                )))
            }
        })
    }
}

/// cryptsetup's two lines where AF_ALG is missing.
const NO_KERNEL_API: &str =
    "Required kernel crypto interface not available.\nEnsure you have algif_skcipher kernel module loaded.";

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
    let engine = Engine::from_opts(o)?;
    let kernel_ok = engine != Engine::Kernel || kernel_api::af_alg_available();
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
        if !kernel_ok {
            Err(CliError::invalid(format!(
                "Cipher {c} (with {key_bits} bits key) is not available.\n{NO_KERNEL_API}"
            )))
        } else {
            bench_one_cipher(&mut out, c, key_bits, sector_size, threads, engine)
        }
    } else {
        for h in speed::CRYPTSETUP_PBKDF2_HASHES {
            bench_kdf(o, &mut out, "pbkdf2", h, key_len)?;
        }
        for v in ["argon2i", "argon2id"] {
            bench_kdf(o, &mut out, v, "", key_len)?;
        }
        if !kernel_ok {
            return Err(CliError::invalid(NO_KERNEL_API));
        }
        if engine != Engine::All {
            out.line("#     Algorithm |       Key |      Encryption |      Decryption");
        } else if engine == Engine::All {
            out.line(ALL_HEADER);
        }
        for (cipher, mode, bits) in speed::CRYPTSETUP_CIPHERS {
            if engine != Engine::Lukskit {
                let name = format!("{cipher}-{mode}");
                let k = measure_kernel(cipher, mode, bits);
                if engine == Engine::Kernel {
                    out.line(&speed_line(&name, bits, k.as_ref().ok().copied()));
                    out.ciphers
                        .push(kernel_json(&name, bits, k.as_ref().ok().copied()));
                    continue;
                }
                let spec = format!("{name}-plain64");
                let u = measure_cipher(&spec, bits, sector_size, threads).ok();
                out.line(&all_line(&name, bits, k.as_ref().ok().copied(), u));
                out.ciphers
                    .push(kernel_json(&name, bits, k.as_ref().ok().copied()));
                out.ciphers
                    .push(cipher_json(&name, &spec, bits, sector_size, threads, u));
                continue;
            }
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
    if measured_ciphers && engine != Engine::Kernel && sector_size != 512 && result.is_ok() {
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
        "engine": "lukskit",
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
    // As cryptsetup 2.6.1's benchmark: the lane count asked for (default 4), not capped at the
    // online CPUs (the cap applies when a keyslot is made); 0 gives "N/A". The lanes run on all
    // cores whatever their count.
    let parallel = o.pbkdf_parallel.unwrap_or(kdf::ARGON2_MAX_PARALLEL);
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
    engine: Engine,
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
    let width = (cipher.len() + mode.len() + 1).max(11);
    if engine != Engine::Lukskit {
        let k = measure_kernel(&cipher, &mode, key_bits);
        let u = if engine == Engine::All {
            measure_cipher(&spec_text, key_bits, sector_size, threads).ok()
        } else {
            None
        };
        let name = format!("{cipher}-{mode}");
        if engine == Engine::Kernel {
            let (enc, dec) = k.map_err(|_| not_available())?;
            out.line(&format!(
                "#{:w$} Algorithm |       Key |      Encryption |      Decryption",
                "",
                w = width - 11
            ));
            out.line(&format!(
                "{cipher:>cw$}-{mode}  {key_bits:>9}b  {enc:>10.1} MiB/s  {dec:>10.1} MiB/s",
                cw = width - mode.len() - 1
            ));
            out.ciphers
                .push(kernel_json(&name, key_bits, Some((enc, dec))));
            return Ok(());
        }
        if k.is_err() && u.is_none() {
            return Err(not_available());
        }
        out.line(ALL_HEADER);
        out.line(&all_line(&name, key_bits, k.as_ref().ok().copied(), u));
        out.ciphers
            .push(kernel_json(&name, key_bits, k.as_ref().ok().copied()));
        out.ciphers.push(cipher_json(
            &name,
            &spec_text,
            key_bits,
            sector_size,
            threads,
            u,
        ));
        return Ok(());
    }
    let (enc, dec) =
        measure_cipher(&spec_text, key_bits, sector_size, threads).map_err(|_| not_available())?;
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

/// Encryption and decryption speed in MiB/s of lukskit's engine for `spec` with a random
/// `key_bits` key (see [`speed::sector_engine`]).
fn measure_cipher(
    spec: &str,
    key_bits: u32,
    sector_size: u32,
    threads: usize,
) -> Result<(f64, f64)> {
    let spec = CipherSpec::parse(spec)?;
    let s = speed::sector_engine(&spec, key_bits, sector_size, threads, min_time())?;
    Ok((s.encrypt, s.decrypt))
}

/// The header of `--engine all`.
const ALL_HEADER: &str = "#     Algorithm |       Key |  Kernel encrypt |  Kernel decrypt | lukskit encrypt | lukskit decrypt";

/// One table line (cryptsetup's format, "N/A" when not measured).
fn speed_line(name: &str, bits: u32, speed: Option<(f64, f64)>) -> String {
    match speed {
        Some((enc, dec)) => format!("{name:>15}  {bits:>9}b  {enc:>10.1} MiB/s  {dec:>10.1} MiB/s"),
        None => format!("{name:>15}  {bits:>9}b {:>17} {:>17}", "N/A", "N/A"),
    }
}

/// One line of `--engine all`: the kernel's columns, then lukskit's.
fn all_line(
    name: &str,
    bits: u32,
    kernel: Option<(f64, f64)>,
    lukskit: Option<(f64, f64)>,
) -> String {
    let col = |v: Option<f64>| match v {
        Some(x) => format!("{x:>10.1} MiB/s"),
        None => format!("{:>16}", "N/A"),
    };
    format!(
        "{name:>15}  {bits:>9}b  {}  {}  {}  {}",
        col(kernel.map(|s| s.0)),
        col(kernel.map(|s| s.1)),
        col(lukskit.map(|s| s.0)),
        col(lukskit.map(|s| s.1)),
    )
}

fn kernel_json(name: &str, bits: u32, speed: Option<(f64, f64)>) -> Value {
    let round = |x: f64| (x * 10.0).round() / 10.0;
    let (cipher, mode) = name.split_once('-').unwrap_or((name, ""));
    json!({
        "engine": "kernel",
        "algorithm": name,
        "kernel_name": format!("{mode}({cipher})"),
        "key_bits": bits,
        "encryption_mib_s": speed.map(|s| round(s.0)),
        "decryption_mib_s": speed.map(|s| round(s.1)),
    })
}

/// The kernel crypto API's speed of `mode(cipher)` as cryptsetup measures it (see
/// [`speed::kernel`]).
fn measure_kernel(
    cipher: &str,
    mode: &str,
    key_bits: u32,
) -> std::result::Result<(f64, f64), KernelError> {
    let s = speed::kernel(cipher, mode, key_bits, min_time())?;
    Ok((s.encrypt, s.decrypt))
}
