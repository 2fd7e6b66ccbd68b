//! Micro-benchmark of the dm-crypt sector engine: MiB/s of encryption and decryption for one
//! cipher spec, key size, sector size and thread count.
//!
//! ```text
//! engine_bench [--spec S] [--key-bits N] [--sector N] [--threads N] [--seconds F]
//!              [--buffer BYTES] [--portable] [--json]
//! ```
//!
//! Defaults: `--spec aes-xts-plain64 --key-bits 512 --sector 4096 --threads 1 --seconds 1
//! --buffer 1048576` (cryptsetup's `benchmark` also works on 1 MiB buffers). Each call
//! processes the whole buffer as consecutive sectors (as dm-crypt does with one bio), the start
//! sector advancing from call to call. With `--threads 1` the serial `encrypt`/`decrypt` entry
//! points are timed; with more, `encrypt_with_threads`/`decrypt_with_threads` (a rayon pool of
//! exactly that many threads). `--portable` times the portable-Rust build of the engine
//! (`SectorCipher::new_portable`) instead of the fastest backend of the CPU.
//!
//! Output: one human-readable line, or with `--json` one JSON object:
//! `{"spec":…,"key_bits":…,"sector":…,"threads":…,"buffer":…,"seconds":…,"backend":…,
//! "encrypt_mib_s":…,"decrypt_mib_s":…}` (`backend` is `"fast"` or `"portable"`).

use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use std::process::ExitCode;
use std::time::{Duration, Instant};

struct Args {
    spec: String,
    key_bits: Option<usize>,
    sector: u32,
    threads: usize,
    seconds: f64,
    buffer: usize,
    portable: bool,
    json: bool,
}

fn usage() -> &'static str {
    "usage: engine_bench [--spec S] [--key-bits N] [--sector N] [--threads N] [--seconds F] \
     [--buffer BYTES] [--portable] [--json]"
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        spec: "aes-xts-plain64".into(),
        key_bits: None,
        sector: 4096,
        threads: 1,
        seconds: 1.0,
        buffer: 1 << 20,
        portable: false,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if name == "--json" {
            a.json = true;
            continue;
        }
        if name == "--portable" {
            a.portable = true;
            continue;
        }
        if name == "-h" || name == "--help" {
            return Err(usage().into());
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| format!("{name} needs a value\n{}", usage()))?,
        };
        let num = |v: &str| -> Result<usize, String> {
            v.parse::<usize>()
                .map_err(|_| format!("{name}: '{v}' is not a number"))
        };
        match name.as_str() {
            "--spec" => a.spec = value,
            "--key-bits" => a.key_bits = Some(num(&value)?),
            "--sector" => a.sector = num(&value)? as u32,
            "--threads" => a.threads = num(&value)?.max(1),
            "--buffer" => a.buffer = num(&value)?,
            "--seconds" => {
                a.seconds = value
                    .parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0 && s.is_finite())
                    .ok_or_else(|| format!("--seconds: '{value}' is not a positive number"))?
            }
            _ => return Err(format!("unknown option {name}\n{}", usage())),
        }
    }
    Ok(a)
}

/// Default key size: what `cryptsetup benchmark` uses for the mode (XTS: two keys).
fn default_key_bits(spec: &CipherSpec) -> usize {
    let base = match spec.cipher.as_str() {
        "cast5" => 128,
        "cipher_null" => 0,
        _ => 256,
    };
    match spec.chainmode.as_str() {
        "xts" => base * 2,
        "lrw" => base + 128,
        _ => base,
    }
}

/// Time `op` on `buf` for about `seconds`; returns MiB/s.
fn measure(buf: &mut [u8], seconds: f64, step: u64, mut op: impl FnMut(&mut [u8], u64)) -> f64 {
    // Warm-up (page faults, thread start-up, CPU frequency).
    let warm = Instant::now();
    let mut sector = 0u64;
    while warm.elapsed() < Duration::from_secs_f64((seconds / 5.0).min(0.2)) {
        op(buf, sector);
        sector = sector.wrapping_add(step);
    }
    let start = Instant::now();
    let mut bytes = 0u64;
    loop {
        op(buf, sector);
        sector = sector.wrapping_add(step);
        bytes += buf.len() as u64;
        let t = start.elapsed().as_secs_f64();
        if t >= seconds {
            return bytes as f64 / t / (1024.0 * 1024.0);
        }
    }
}

fn run(a: &Args) -> Result<(), String> {
    let spec = CipherSpec::parse(&a.spec).map_err(|e| format!("{}: {e}", a.spec))?;
    let key_bits = a.key_bits.unwrap_or_else(|| default_key_bits(&spec));
    if !key_bits.is_multiple_of(8) {
        return Err(format!("--key-bits {key_bits} is not a multiple of 8"));
    }
    let mut key = vec![0u8; key_bits / 8];
    lukskit_crypto::random::fill(&mut key).map_err(|e| e.to_string())?;
    let cipher = if a.portable {
        SectorCipher::new_portable(&spec, &key, a.sector, false)
    } else {
        SectorCipher::new(&spec, &key, a.sector, false)
    }
    .map_err(|e| e.to_string())?;
    let backend = if a.portable { "portable" } else { "fast" };
    let ss = a.sector as usize;
    let len = (a.buffer / ss).max(1) * ss;
    let mut buf = vec![0u8; len];
    lukskit_crypto::random::fill(&mut buf).map_err(|e| e.to_string())?;
    let step = (len / 512) as u64;

    let (enc, dec) = if a.threads == 1 {
        let e = measure(&mut buf, a.seconds, step, |b, s| {
            cipher.encrypt(b, s).expect("encrypt")
        });
        let d = measure(&mut buf, a.seconds, step, |b, s| {
            cipher.decrypt(b, s).expect("decrypt")
        });
        (e, d)
    } else {
        let e = measure(&mut buf, a.seconds, step, |b, s| {
            cipher
                .encrypt_with_threads(b, s, a.threads)
                .expect("encrypt")
        });
        let d = measure(&mut buf, a.seconds, step, |b, s| {
            cipher
                .decrypt_with_threads(b, s, a.threads)
                .expect("decrypt")
        });
        (e, d)
    };

    if a.json {
        println!(
            "{{\"spec\":\"{}\",\"key_bits\":{key_bits},\"sector\":{},\"threads\":{},\"buffer\":{len},\
             \"seconds\":{},\"backend\":\"{backend}\",\"encrypt_mib_s\":{enc:.1},\"decrypt_mib_s\":{dec:.1}}}",
            a.spec, a.sector, a.threads, a.seconds
        );
    } else {
        println!(
            "{:<24} {:>4}b sector {:>4} threads {:>2} {:<8}  encrypt {:>9.1} MiB/s  decrypt {:>9.1} MiB/s",
            a.spec, key_bits, a.sector, a.threads, backend, enc, dec
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match parse_args().and_then(|a| run(&a)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
