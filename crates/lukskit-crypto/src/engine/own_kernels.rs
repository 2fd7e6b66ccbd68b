//! lukskit's own engine's implementations per cipher, the CPU flags each needs and which one
//! this CPU gets (the same run-time checks the engine makes at key setup: see
//! `BlockCipher::new`, `aes_x86::available`/`wide_available`, the Serpent
//! lanes' AVX2 detection and RustCrypto `aes`'s own AES-NI / ARMv8 detection).

/// One implementation of one cipher in lukskit's engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnKernel {
    /// The cipher (`aes`, `serpent`, `twofish`).
    pub cipher: &'static str,
    /// The implementation: `VAES-512`, `VAES-256`, `AES-NI`, `ARMv8 CE`, `AVX2`, `SSE2`,
    /// `portable`.
    pub name: &'static str,
    /// The CPU flags it needs (as /proc/cpuinfo names them).
    pub flags: &'static [&'static str],
    /// Whether this CPU (and OS) has all of them.
    pub available: bool,
    /// Whether the engine uses it here: the first available one of its cipher, in the order
    /// listed.
    pub selected: bool,
}

#[cfg(target_arch = "x86_64")]
fn x86(flag: &str) -> bool {
    match flag {
        "aes" => std::is_x86_feature_detected!("aes"),
        "pclmulqdq" => std::is_x86_feature_detected!("pclmulqdq"),
        "avx2" => std::is_x86_feature_detected!("avx2"),
        "vaes" => std::is_x86_feature_detected!("vaes"),
        "vpclmulqdq" => std::is_x86_feature_detected!("vpclmulqdq"),
        "avx512f" => std::is_x86_feature_detected!("avx512f"),
        "avx512bw" => std::is_x86_feature_detected!("avx512bw"),
        "sse2" => std::is_x86_feature_detected!("sse2"),
        _ => false,
    }
}

/// Every implementation this build of lukskit has, fastest first within each cipher, with
/// the one this CPU uses marked.
pub fn own_kernels() -> Vec<OwnKernel> {
    let mut out: Vec<OwnKernel> = Vec::new();
    let mut add = |cipher: &'static str, name, flags: &'static [&'static str], available| {
        let selected = available && !out.iter().any(|k| k.cipher == cipher && k.selected);
        out.push(OwnKernel {
            cipher,
            name,
            flags,
            available,
            selected,
        });
    };
    #[cfg(target_arch = "x86_64")]
    {
        const VAES512: &[&str] = &[
            "aes",
            "pclmulqdq",
            "avx2",
            "vaes",
            "vpclmulqdq",
            "avx512f",
            "avx512bw",
        ];
        const VAES256: &[&str] = &["aes", "pclmulqdq", "avx2", "vaes", "vpclmulqdq"];
        let vaes = super::aes_x86::available();
        add("aes", "VAES-512", VAES512, super::aes_x86::wide_available());
        add("aes", "VAES-256", VAES256, vaes);
        add("aes", "AES-NI", &["aes"], x86("aes"));
        add("aes", "portable", &[], true);
        add("serpent", "AVX2", &["avx2"], x86("avx2"));
        add("serpent", "SSE2", &["sse2"], x86("sse2"));
    }
    #[cfg(target_arch = "aarch64")]
    {
        add(
            "aes",
            "ARMv8 CE",
            &["aes"],
            std::arch::is_aarch64_feature_detected!("aes"),
        );
        add("aes", "portable", &[], true);
        add("serpent", "portable", &[], true);
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        add("aes", "portable", &[], true);
        add("serpent", "portable", &[], true);
    }
    add("twofish", "portable", &[], true);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_selected_per_cipher_and_it_is_the_first_available() {
        let k = own_kernels();
        for c in ["aes", "serpent", "twofish"] {
            let of: Vec<&OwnKernel> = k.iter().filter(|x| x.cipher == c).collect();
            assert_eq!(of.iter().filter(|x| x.selected).count(), 1, "{c}: {of:?}");
            let first = of.iter().find(|x| x.available).unwrap();
            assert!(first.selected, "{c}: {of:?}");
        }
        // The portable implementation is always there.
        assert!(k
            .iter()
            .any(|x| x.cipher == "aes" && x.name == "portable" && x.available));
    }

    /// The flags listed are what the engine checks: on this CPU the selected AES kernel
    /// agrees with what /proc/cpuinfo says.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn flags_agree_with_cpuinfo() {
        let info = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
        let flags: Vec<&str> = info
            .lines()
            .find(|l| l.starts_with("flags"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, f)| f.split_whitespace().collect())
            .unwrap_or_default();
        for k in own_kernels() {
            let has_all = k.flags.iter().all(|f| flags.contains(f));
            // VAES-512 also honours LUKSKIT_NO_AVX512, which can only turn it off.
            if k.name != "VAES-512" || std::env::var_os("LUKSKIT_NO_AVX512").is_none() {
                assert_eq!(has_all, k.available, "{k:?} against {flags:?}");
            }
        }
    }
}
