//! Fuzz the enrolment configurations (crates `lukskit-tang`, `lukskit-tpm2`): the pin
//! configurations `token bind-clevis DEVICE PIN CONFIG` takes (`tang`, `tpm2`, `sss` with
//! nested pins, as `clevis luks bind`), and the options of `token enroll-tpm2`
//! (`--tpm2-pcrs`, `--tpm2-pcr-bank`, `--tpm2-device`).
//!
//! Input layout: byte 0 chooses what is fuzzed, the rest is the text.
//! * `0..=2 mod 4`: a `tang`, `tpm2` or `sss` configuration for `PinConfig::parse`; what
//!   it accepts must stay inside the bounds lukskit unlocks (threshold, pins, depth);
//! * `3 mod 4`: a PCR list, a bank name and a TPM device name.
//!
//! Nothing may panic, loop forever or allocate without bound; no I/O happens (the
//! advertisements are fetched by `Plan::resolve`, never called here).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_tang::PinConfig;

/// Every `sss` in `c` has 1 ≤ t ≤ pins ≤ 16 and nests at most 4 deep.
fn check(c: &PinConfig, depth: usize) {
    if let PinConfig::Sss(s) = c {
        assert!(depth < 4, "sss nested too deep");
        assert!(s.t >= 1 && s.t <= s.pins.len() && s.pins.len() <= 16);
        for p in &s.pins {
            check(p, depth + 1);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match mode % 4 {
        m @ 0..=2 => {
            let pin = ["tang", "tpm2", "sss"][m as usize];
            if let Ok(c) = PinConfig::parse(pin, text) {
                assert_eq!(c.name(), pin);
                check(&c, 0);
            }
        }
        _ => {
            let _ = lukskit_tpm2::enroll::parse_pcr_list(text);
            let _ = lukskit_tpm2::token::bank_from_name(text);
            let _ = lukskit_tpm2::DeviceSpec::parse(text);
        }
    }
});
