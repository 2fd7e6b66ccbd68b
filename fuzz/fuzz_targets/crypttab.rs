//! Fuzz the crypttab reader (crate `lukskit-crypttab`): a whole table as `crypttab open`
//! reads `/etc/crypttab` (a file anyone with root on an installer or a copied image may have
//! written), its options field alone, and a source-device field alone.
//!
//! Input layout: byte 0 chooses what is fuzzed, the rest is the text.
//! * even: a whole table for `parse`: at most `MAX_ENTRIES` entries, none longer than
//!   `MAX_LINE`, no mapping name with a `/` or `.`/`..` (the name becomes a path);
//! * odd: an options field for `parse_options` (what it accepts holds at most
//!   `MAX_OPTIONS` options' worth of values) and a device field for `DeviceSpec::parse`.
//!
//! Nothing may panic, loop forever or allocate without bound; no I/O happens.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_crypttab::{parse, parse_options, DeviceSpec, MAX_ENTRIES, MAX_LINE};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let t = parse(rest);
        assert!(t.entries.len() <= MAX_ENTRIES);
        for e in &t.entries {
            assert!(!e.name.contains('/') && e.name != "." && e.name != "..");
            assert!(e.name.len() <= MAX_LINE);
            assert!(e.line >= 1);
        }
        for p in &t.problems {
            assert!(p.line >= 1);
        }
    } else if let Ok(s) = std::str::from_utf8(rest) {
        let _ = parse_options(s);
        let _ = DeviceSpec::parse(s);
    }
});
