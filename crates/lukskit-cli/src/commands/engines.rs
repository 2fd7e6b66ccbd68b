//! `engines [CIPHER]`: which kernel driver dm-crypt would use for a cipher spec (from
//! `/proc/crypto`, by the kernel's own rule), the other candidates, whether each is a hardware
//! engine, the modules that provide them, and lukskit's own engine's implementations with the
//! CPU flags that chose them. `--json` for scripts.
//!
//! A name the kernel builds from templates (`xts(aes)` over the best `ecb(aes)`) is listed in
//! `/proc/crypto` only once something asked for it: where it is missing and AF_ALG exists,
//! `engines` asks for it (as dm-crypt's table load would; the kernel may load modules), then
//! reads `/proc/crypto` again.

use crate::args::Opts;
use crate::errors::{CliError, Result};
use lukskit_crypto::engine::drivers::{self, Implementation, ProcCryptoEntry};
use lukskit_crypto::engine::kernel_api;
use lukskit_crypto::engine::own_kernels::{own_kernels, OwnKernel};
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use serde_json::{json, Value};

/// The specs shown without an argument: cryptsetup's LUKS2 default, the ciphers of
/// `cryptsetup benchmark` with dm-crypt's usual IVs, and Adiantum (for CPUs without AES
/// instructions).
const DEFAULT_SPECS: [&str; 7] = [
    "aes-xts-plain64",
    "aes-cbc-essiv:sha256",
    "serpent-xts-plain64",
    "serpent-cbc-essiv:sha256",
    "twofish-xts-plain64",
    "twofish-cbc-essiv:sha256",
    "xchacha12,aes-adiantum-plain64",
];

/// What `engines` found for one spec.
struct SpecReport {
    spec: String,
    names: kernel_api::KernelNames,
    candidates: Vec<ProcCryptoEntry>,
    /// Index into `candidates` of the driver the kernel picks.
    picked: Option<usize>,
    /// Whether lukskit asked the kernel for the name (it was not listed yet).
    instantiated: bool,
    /// `(alias, module)` pairs from modules.alias, when no driver is there (`None`: this
    /// kernel has no modules.alias).
    modules: Option<Vec<(String, String)>>,
    /// lukskit's kernel engine (`--engine kernel`): the name it binds and whether it takes
    /// this spec's IV generator.
    kernel_engine: std::result::Result<(), String>,
}

fn report(spec_text: &str, af_alg: bool) -> Result<SpecReport> {
    let spec = CipherSpec::parse(spec_text).map_err(|_| {
        CliError::invalid(format!(
            "Invalid cipher specification {spec_text} (dm-crypt form, e.g. aes-xts-plain64)."
        ))
    })?;
    let names = kernel_api::kernel_names(&spec);
    let read =
        || drivers::read_proc_crypto().map_err(|e| CliError::invalid(format!("Cannot read {e}.")));
    let mut entries = read()?;
    let mut instantiated = false;
    if af_alg && drivers::pick(&entries, &names.dm_crypt).is_none() {
        instantiated = drivers::instantiate(&names.dm_crypt);
        // The kernel engine binds the name without `essiv(…)`: ask for it too.
        if names.engine != names.dm_crypt {
            drivers::instantiate(&names.engine);
        }
        entries = read()?;
    }
    let candidates: Vec<ProcCryptoEntry> = drivers::candidates(&entries, &names.dm_crypt)
        .into_iter()
        .cloned()
        .collect();
    let picked = candidates.iter().position(drivers::usable);
    let modules = if picked.is_none() {
        drivers::modules_to_load(&names.dm_crypt)
    } else {
        Some(Vec::new())
    };
    // Whether lukskit's kernel engine takes the spec (the IV generator, cipher_null): a
    // check of the plan with a key of a length the spec accepts.
    let kernel_engine = kernel_engine_takes(&spec);
    Ok(SpecReport {
        spec: spec.to_string(),
        names,
        candidates,
        picked,
        instantiated,
        modules,
        kernel_engine,
    })
}

/// Whether `--engine kernel` can serve `spec` (not: whether this kernel has the algorithm).
fn kernel_engine_takes(spec: &CipherSpec) -> std::result::Result<(), String> {
    if let Some(iv @ ("eboiv" | "elephant" | "lmk" | "tcw")) = spec.ivmode.as_deref() {
        return Err(format!("IV generator {iv} (lukskit's own engine only)"));
    }
    if spec.cipher == "cipher_null" {
        return Err("cipher_null (lukskit's own engine only)".into());
    }
    // A key length the spec takes, to check the rest of the plan.
    let ok = [32usize, 64, 16, 48, 24]
        .iter()
        .any(|&n| SectorCipher::check(spec, n, 512).is_ok());
    if ok {
        Ok(())
    } else {
        Err("not a spec lukskit's engines know".into())
    }
}

/// `engines [CIPHER]`.
pub fn engines(o: &Opts, args: &[String]) -> Result<()> {
    let specs: Vec<String> = match args.first() {
        Some(c) => vec![c.clone()],
        None => DEFAULT_SPECS.iter().map(|s| s.to_string()).collect(),
    };
    let af_alg = kernel_api::af_alg_available();
    let mut reports = Vec::with_capacity(specs.len());
    for s in &specs {
        reports.push(report(s, af_alg)?);
    }
    let own = own_kernels();
    if o.json {
        let v = json!({
            "af_alg": af_alg,
            "ciphers": reports.iter().map(spec_json).collect::<Vec<_>>(),
            "lukskit": own.iter().map(own_json).collect::<Vec<_>>(),
        });
        let mut text = serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string());
        text.push('\n');
        emit(&text);
    } else {
        let mut text: String = reports.iter().map(spec_text).collect();
        text += &own_text(&own, af_alg);
        emit(&text);
    }
    // A single cipher the kernel lacks: say so in the exit status too (as cryptsetup's
    // benchmark of a missing cipher fails).
    if !args.is_empty() && reports.iter().all(|r| r.picked.is_none()) {
        return Err(CliError::invalid("").silenced());
    }
    Ok(())
}

fn spec_text(r: &SpecReport) -> String {
    let mut s = format!(
        "{}: dm-crypt asks the kernel for {}\n",
        r.spec, r.names.dm_crypt
    );
    match r.picked.map(|i| &r.candidates[i]) {
        Some(d) => {
            s += &format!(
                "  driver:   {} (priority {}, module {}, {})\n",
                d.driver,
                d.priority,
                d.module,
                Implementation::of(&d.driver).as_str()
            );
        }
        None => {
            s += "  driver:   none: the kernel has no such algorithm now\n";
            match &r.modules {
                None => s += "  modules:  this kernel has no modules.alias to look in\n",
                Some(m) if m.is_empty() => {
                    s += "  modules:  none of this kernel's modules provides it\n"
                }
                Some(m) => {
                    let m: Vec<String> = m.iter().map(|(a, m)| format!("{m} ({a})")).collect();
                    s += &format!("  modules:  {} (modprobe)\n", m.join(", "));
                }
            }
        }
    }
    for (i, c) in r.candidates.iter().enumerate() {
        let why_not = if !c.selftest_passed {
            " (self-test not passed)"
        } else if c.internal {
            " (internal)"
        } else {
            ""
        };
        s += &format!(
            "  {} {:<40} {:>5}  {:<16} {}{}\n",
            if Some(i) == r.picked { "*" } else { " " },
            c.driver,
            c.priority,
            c.module,
            Implementation::of(&c.driver).as_str(),
            why_not
        );
    }
    if r.instantiated {
        s += "  (not listed before: lukskit asked the kernel for it, as dm-crypt would)\n";
    }
    match &r.kernel_engine {
        Ok(()) => {
            s += &format!(
                "  --engine kernel binds {}{}\n",
                r.names.engine,
                if r.names.engine != r.names.dm_crypt {
                    " (and computes the ESSIV IVs itself)"
                } else {
                    ""
                }
            )
        }
        Err(why) => s += &format!("  --engine kernel: not offered: {why}\n"),
    }
    s
}

fn own_text(own: &[OwnKernel], af_alg: bool) -> String {
    let mut s = String::from("lukskit's own engine (--engine lukskit):\n");
    for k in own {
        s += &format!(
            "  {} {:<8} {:<9} {:<13} {}\n",
            if k.selected { "*" } else { " " },
            k.cipher,
            k.name,
            if k.available {
                "available"
            } else {
                "not this CPU"
            },
            if k.flags.is_empty() {
                "(no CPU flags needed)".to_string()
            } else {
                k.flags.join(" ")
            }
        );
    }
    if !af_alg {
        s += "The kernel crypto API (AF_ALG) is not available here: --engine kernel cannot run.\n";
    }
    s
}

fn spec_json(r: &SpecReport) -> Value {
    let entry = |c: &ProcCryptoEntry| {
        json!({
            "driver": c.driver,
            "module": c.module,
            "priority": c.priority,
            "selftest_passed": c.selftest_passed,
            "internal": c.internal,
            "type": c.kind,
            "implementation": Implementation::of(&c.driver).as_str(),
        })
    };
    json!({
        "spec": r.spec,
        "dm_crypt_name": r.names.dm_crypt,
        "kernel_engine_name": r.names.engine,
        "driver": r.picked.map(|i| entry(&r.candidates[i])),
        "candidates": r.candidates.iter().map(entry).collect::<Vec<_>>(),
        "instantiated": r.instantiated,
        "modules_to_load": r.modules.as_ref().map(|m| {
            m.iter().map(|(a, m)| json!({"alias": a, "module": m})).collect::<Vec<_>>()
        }),
        "kernel_engine": match &r.kernel_engine {
            Ok(()) => json!({"offered": true}),
            Err(why) => json!({"offered": false, "reason": why}),
        },
    })
}

fn own_json(k: &OwnKernel) -> Value {
    json!({
        "cipher": k.cipher,
        "implementation": k.name,
        "cpu_flags": k.flags,
        "available": k.available,
        "selected": k.selected,
    })
}

/// Write to standard output; a closed pipe (`engines | head`) is not an error.
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
