//! Which kernel driver serves a crypto API name, from `/proc/crypto` (crypto/proc.c): the
//! answer to "which driver will dm-crypt use" (`lukskit engines`, `status` of a mapping the
//! kernel engine serves).
//!
//! The kernel's lookup (`__crypto_alg_lookup` in crypto/api.c) takes, among the algorithms of
//! that name whose self-test passed, the one of highest priority (the first listed on a tie:
//! `/proc/crypto` lists them in the order the lookup walks them); algorithms marked `internal`
//! are only reachable through their wrappers. [`pick`] applies the same rule to the parsed
//! text. A name the kernel builds from templates (`xts(aes)` over the best `ecb(aes)`) is in
//! `/proc/crypto` only once someone asked for it; [`instantiate`] asks (binds an AF_ALG socket,
//! as dm-crypt's first table load would).
//!
//! Hardware or software (`/proc/crypto` does not say; the kernel's
//! `CRYPTO_ALG_KERN_DRIVER_ONLY` flag is not shown there): see [`Implementation::of`].

use std::io::Read;

/// At most this much of `/proc/crypto` is read (a Debian kernel with every crypto module
/// loaded prints about 150 KiB).
const MAX_PROC_CRYPTO: u64 = 4 << 20;
/// At most this many entries are kept.
const MAX_ENTRIES: usize = 8192;
/// At most this much of `modules.alias` is read (Debian's is about 1.5 MiB).
const MAX_ALIASES: u64 = 16 << 20;

/// One algorithm of `/proc/crypto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcCryptoEntry {
    /// The algorithm name (`xts(aes)`).
    pub name: String,
    /// The driver name (`xts-aes-aesni`, `xts(ecb(aes-generic))`).
    pub driver: String,
    /// The module that provides it (`kernel` when built in).
    pub module: String,
    /// The priority the lookup compares.
    pub priority: i64,
    /// Users of the algorithm (transforms bound to it, instances built on it), when shown.
    pub refcnt: Option<u64>,
    /// `selftest : passed`.
    pub selftest_passed: bool,
    /// `internal : yes`: reachable only through a wrapper.
    pub internal: bool,
    /// `skcipher`, `cipher`, `shash`, …
    pub kind: String,
}

/// Why `/proc/crypto` (or `modules.alias`) could not be read.
#[derive(Debug)]
pub enum DriversError {
    /// Reading failed (no /proc, not Linux).
    Io(std::io::Error),
    /// The text is larger than lukskit reads.
    TooLarge,
}

impl std::fmt::Display for DriversError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriversError::Io(e) => write!(f, "cannot read /proc/crypto: {e}"),
            DriversError::TooLarge => write!(f, "/proc/crypto is larger than expected"),
        }
    }
}

impl std::error::Error for DriversError {}

/// Parse the text of `/proc/crypto`: blank-line separated records of `key : value` lines.
/// Records without a name or driver are skipped; unknown keys are ignored; at most
/// `MAX_ENTRIES` records are kept.
pub fn parse_proc_crypto(text: &str) -> Vec<ProcCryptoEntry> {
    let mut out = Vec::new();
    for record in text.split("\n\n") {
        if out.len() >= MAX_ENTRIES {
            break;
        }
        let mut e = ProcCryptoEntry {
            name: String::new(),
            driver: String::new(),
            module: String::new(),
            priority: 0,
            refcnt: None,
            selftest_passed: false,
            internal: false,
            kind: String::new(),
        };
        for line in record.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "name" => e.name = v.to_string(),
                "driver" => e.driver = v.to_string(),
                "module" => e.module = v.to_string(),
                "priority" => e.priority = v.parse().unwrap_or(0),
                "refcnt" => e.refcnt = v.parse().ok(),
                "selftest" => e.selftest_passed = v == "passed",
                "internal" => e.internal = v == "yes",
                "type" => e.kind = v.to_string(),
                _ => {}
            }
        }
        if !e.name.is_empty() && !e.driver.is_empty() {
            out.push(e);
        }
    }
    out
}

/// Read and parse `/proc/crypto` (at most `MAX_PROC_CRYPTO` bytes).
pub fn read_proc_crypto() -> Result<Vec<ProcCryptoEntry>, DriversError> {
    let text = read_bounded("/proc/crypto", MAX_PROC_CRYPTO)?;
    Ok(parse_proc_crypto(&text))
}

fn read_bounded(path: &str, max: u64) -> Result<String, DriversError> {
    let f = std::fs::File::open(path).map_err(DriversError::Io)?;
    let mut text = String::new();
    f.take(max + 1)
        .read_to_string(&mut text)
        .map_err(DriversError::Io)?;
    if text.len() as u64 > max {
        return Err(DriversError::TooLarge);
    }
    Ok(text)
}

/// What kind of implementation a driver is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// A device driver: a crypto engine beside the CPU (CAAM, Allwinner CE, OcteonTX CPT,
    /// QAT, …).
    Hardware,
    /// Software using CPU instructions (AES-NI, AVX, NEON, ARMv8 CE, …).
    Cpu,
    /// Portable C (`-generic`) with only templates around it.
    Generic,
}

/// Markers of software on CPU instructions, found in the driver names of arch/*/crypto.
const CPU_MARKERS: [&str; 20] = [
    "aesni", "avx", "sse2", "ssse3", "x86_64", "3way", "simd", "clmul", "vaes", "gfni", "neon",
    "arm64", "-arm", "-asm", "padlock", "vmx", "s390", "ppc-spe", "riscv", "zvk",
];

/// Block/hash names before `-ce` in ARMv8 Crypto Extensions drivers (`xts-aes-ce`,
/// `sha256-ce`), to tell them from engines named `…-ce` (Allwinner `xts-aes-sun8i-ce`).
const ARMV8_CE: [&str; 11] = [
    "aes", "sm4", "ghash", "sha1", "sha2", "sha224", "sha256", "sha512", "sha3", "sm3", "polyval",
];

impl Implementation {
    /// Classify a driver by its name. The rule: the driver name is split into its parts (a
    /// template instance such as `xts(ecb(aes-generic))` names the drivers it is built on);
    /// a part is software when it ends in `-generic` (portable C), or names CPU instructions
    /// (`CPU_MARKERS`: `aesni`, `avx2`, `neon`, `simd`, …, ARMv8 CE's `<alg>-ce`, POWER8's
    /// `p8_…`). A part
    /// that is neither is taken for a device driver: every hardware engine driver in
    /// drivers/crypto (caam, sun8i-ce, cpt, qat, mv-cesa, …) is named that way. Any hardware
    /// part makes the whole hardware, else any CPU part makes it CPU, else generic. Bare
    /// template names (`xts`, `ecb`, without a `-`) do not count.
    pub fn of(driver: &str) -> Implementation {
        let mut cpu = false;
        for part in driver.split(['(', ')', ',']).filter(|p| !p.is_empty()) {
            if part.starts_with("p8_") {
                // POWER8 in-core AES (drivers/crypto/vmx: `p8_aes_xts`).
                cpu = true;
                continue;
            }
            if !part.contains('-') {
                // A template (`xts`) or a name without a driver suffix (`cipher_null`).
                continue;
            }
            let p = part.to_ascii_lowercase();
            let armv8_ce = p
                .strip_suffix("-ce")
                .and_then(|rest| rest.rsplit('-').next())
                .is_some_and(|alg| ARMV8_CE.contains(&alg));
            if p.ends_with("-generic") || p.ends_with("-lib") || p == "ecb-cipher_null" {
                continue;
            }
            if armv8_ce || CPU_MARKERS.iter().any(|m| p.contains(m)) {
                cpu = true;
            } else {
                return Implementation::Hardware;
            }
        }
        if cpu {
            Implementation::Cpu
        } else {
            Implementation::Generic
        }
    }

    /// `hardware`, `cpu`, `generic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Implementation::Hardware => "hardware",
            Implementation::Cpu => "cpu",
            Implementation::Generic => "generic",
        }
    }
}

/// Whether the kernel's lookup can return this entry (self-test passed, not internal).
pub fn usable(e: &ProcCryptoEntry) -> bool {
    e.selftest_passed && !e.internal
}

/// The entries named `name`, highest priority first (ties in `/proc/crypto` order).
pub fn candidates<'a>(entries: &'a [ProcCryptoEntry], name: &str) -> Vec<&'a ProcCryptoEntry> {
    let mut c: Vec<&ProcCryptoEntry> = entries.iter().filter(|e| e.name == name).collect();
    // A stable sort keeps /proc/crypto's order among equal priorities.
    c.sort_by_key(|e| std::cmp::Reverse(e.priority));
    c
}

/// The driver the kernel's lookup picks for `name`: the usable entry of highest priority,
/// the first listed on a tie.
pub fn pick<'a>(entries: &'a [ProcCryptoEntry], name: &str) -> Option<&'a ProcCryptoEntry> {
    candidates(entries, name).into_iter().find(|e| usable(e))
}

/// The algorithm names inside a crypto API name, outermost first: the templates and the
/// algorithms they are built on (`essiv(cbc(aes),sha256)` → `essiv`, `cbc`, `aes`, `sha256`).
pub fn name_parts(name: &str) -> Vec<&str> {
    name.split(['(', ')', ','])
        .filter(|p| !p.is_empty())
        .collect()
}

/// The modules that provide `crypto-<part>` for each part of `name` (and for `name` itself),
/// from the text of `modules.alias` (`alias crypto-xts xts`): what `modprobe` would load when
/// the kernel asks for them. Pairs of (alias, module), in the order of the parts.
pub fn modules_for(aliases: &str, name: &str) -> Vec<(String, String)> {
    let mut wanted: Vec<String> = vec![format!("crypto-{name}")];
    for p in name_parts(name) {
        let a = format!("crypto-{p}");
        if !wanted.contains(&a) {
            wanted.push(a);
        }
    }
    let mut out = Vec::new();
    for w in &wanted {
        for line in aliases.lines() {
            let mut it = line.split_whitespace();
            if it.next() != Some("alias") || it.next() != Some(w.as_str()) {
                continue;
            }
            if let Some(m) = it.next() {
                let pair = (w.clone(), m.to_string());
                if !out.contains(&pair) {
                    out.push(pair);
                }
            }
        }
    }
    out
}

/// [`modules_for`] with this kernel's `/lib/modules/<release>/modules.alias`; `None` where
/// there is none (a kernel without modules, a container).
pub fn modules_to_load(name: &str) -> Option<Vec<(String, String)>> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let release = release.trim();
    if release.is_empty() || release.contains('/') {
        return None;
    }
    read_bounded(
        &format!("/lib/modules/{release}/modules.alias"),
        MAX_ALIASES,
    )
    .ok()
    .map(|text| modules_for(&text, name))
}

/// The driver the kernel picks for `name` now ([`pick`] over [`read_proc_crypto`]).
pub fn kernel_driver(name: &str) -> Result<Option<ProcCryptoEntry>, DriversError> {
    Ok(pick(&read_proc_crypto()?, name).cloned())
}

/// Ask the kernel for `name` as an `skcipher` (bind an AF_ALG socket, no key), so that a name
/// it builds from templates appears in `/proc/crypto` and modules it needs are loaded, as
/// dm-crypt's table load would. Returns whether the kernel has it.
pub fn instantiate(name: &str) -> bool {
    super::kernel_api::bind_only(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/crypto of the reference VM's Debian 6.1 kernel after dm-crypt opened
    /// aes-xts-plain64, aes-cbc-essiv:sha256, serpent-xts-plain64 and xchacha12,aes-adiantum.
    const AESNI: &str = include_str!("../../tests/data/proc-crypto-6.1-amd64-aesni.txt");
    /// The same kernel after `rmmod aesni_intel` (its reloading prevented) and the same
    /// dm-crypt opens of aes-xts-plain64 and aes-cbc-essiv:sha256.
    const GENERIC: &str = include_str!("../../tests/data/proc-crypto-6.1-amd64-generic.txt");

    #[test]
    fn parses_the_vm_kernel() {
        let e = parse_proc_crypto(AESNI);
        assert!(e.len() > 50, "{}", e.len());
        let x = candidates(&e, "xts(aes)");
        let drivers: Vec<(&str, i64)> = x.iter().map(|e| (e.driver.as_str(), e.priority)).collect();
        assert_eq!(
            drivers,
            [("xts-aes-aesni", 401), ("xts(ecb-aes-aesni)", 400)],
            "{x:#?}"
        );
        assert_eq!(x[0].module, "aesni_intel");
        assert_eq!(pick(&e, "xts(aes)").unwrap().driver, "xts-aes-aesni");
        assert_eq!(
            pick(&e, "essiv(cbc(aes),sha256)").unwrap().driver,
            "essiv(cbc-aes-aesni,sha256-generic)"
        );
        // The internal helpers behind the SIMD wrappers are never picked.
        assert!(e
            .iter()
            .any(|x| x.internal && x.driver == "__xts-aes-aesni"));
        assert_ne!(pick(&e, "__xts(aes)").map(|x| x.internal), Some(true));
        assert!(pick(&e, "xts(twofish)").is_none());
    }

    #[test]
    fn driver_changes_without_aesni() {
        let e = parse_proc_crypto(GENERIC);
        let p = pick(&e, "xts(aes)").unwrap();
        assert_eq!(p.driver, "xts(ecb(aes-generic))");
        assert_eq!(Implementation::of(&p.driver), Implementation::Generic);
        assert!(!e.iter().any(|x| x.module == "aesni_intel"));
        assert_eq!(
            pick(&e, "essiv(cbc(aes),sha256)").unwrap().driver,
            "essiv(cbc(aes-generic),sha256-generic)"
        );
    }

    #[test]
    fn implementations() {
        use Implementation::*;
        for (d, i) in [
            ("xts-aes-aesni", Cpu),
            ("xts(ecb-aes-aesni)", Cpu),
            ("xts(ecb(aes-generic))", Generic),
            ("aes-generic", Generic),
            ("essiv(cbc-aes-aesni,sha256-generic)", Cpu),
            ("adiantum(xchacha12-simd,aes-aesni,nhpoly1305-avx2)", Cpu),
            ("xts(ecb-serpent-avx2)", Cpu),
            ("xts-aes-ce", Cpu),
            ("xts-aes-neonbs", Cpu),
            ("cbc-aes-sun8i-ce", Hardware),
            ("xts-aes-caam-qi2", Hardware),
            ("cbc(aes-caam)", Hardware),
            ("cpt-cbc-aes", Hardware),
            ("essiv(cbc-aes-caam,sha256-generic)", Hardware),
            ("cbc-aes-ppc4xx", Hardware),
            ("p8_aes_xts", Cpu),
            ("xts-aes-aspeed", Hardware),
        ] {
            assert_eq!(Implementation::of(d), i, "{d}");
        }
    }

    #[test]
    fn modules() {
        let aliases = "alias crypto-xts xts\nalias crypto-aes aesni_intel\n\
                       alias crypto-aes-aesni aesni_intel\nalias crypto-essiv essiv\n\
                       alias crypto-sha256 sha256_ssse3\n";
        assert_eq!(
            modules_for(aliases, "xts(aes)"),
            [
                ("crypto-xts".to_string(), "xts".to_string()),
                ("crypto-aes".to_string(), "aesni_intel".to_string())
            ]
        );
        let m = modules_for(aliases, "essiv(cbc(aes),sha256)");
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(
            name_parts("essiv(cbc(aes),sha256)"),
            ["essiv", "cbc", "aes", "sha256"]
        );
    }

    #[test]
    fn hostile_text_is_bounded() {
        let junk = "name : a\ndriver : b\npriority : 99999999999999999999\n\n".repeat(10_000);
        let e = parse_proc_crypto(&junk);
        assert_eq!(e.len(), MAX_ENTRIES);
        assert_eq!(e[0].priority, 0);
        assert!(parse_proc_crypto("no colon here\n\n: :\n").is_empty());
    }
}
