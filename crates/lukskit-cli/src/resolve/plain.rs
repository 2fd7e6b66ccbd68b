//! Plain mode's parameters (`open --type plain`, `image encrypt|decrypt --type plain`):
//! `--cipher`, `--key-size`, `--hash`, `--offset`, `--skip`, `--size`, `--sector-size` and
//! `--iv-large-sectors`, parsed and checked as cryptsetup 2.6.1 checks them.

use crate::args::Opts;
use crate::errors::Result;
use lukskit_crypto::spec::CipherSpec;
use lukskit_volume::plain::{self, PassphraseHash, PlainParams};
use lukskit_volume::{ParamError, VolumeError};

/// The plain-mode parameters of the command line; `kernel`: for a mapping dm-crypt encrypts,
/// where ciphers lukskit's engine lacks are left to the kernel. The checks come in
/// cryptsetup's order: `--iv-large-sectors` before the cipher pattern, then the sector size,
/// key size and alignments ([`PlainParams::check_for`]). A bad `--hash` is reported only
/// when a passphrase is hashed ([`PassphraseHash`]).
pub fn plain(o: &Opts, kernel: bool) -> Result<PlainParams> {
    let sector_size = o.sector_size.unwrap_or(512);
    plain::check_iv_large_sectors(o.iv_large_sectors, sector_size)?;
    let cipher = match o.cipher.as_deref() {
        Some(text) => {
            CipherSpec::parse(text).map_err(|_| VolumeError::from(ParamError::CipherPattern))?
        }
        None => PlainParams::default().cipher,
    };
    let p = PlainParams {
        cipher,
        // cryptsetup takes `-s 0` as "not given": the default key size.
        key_bits: o
            .key_size
            .filter(|&b| b != 0)
            .unwrap_or(plain::DEFAULT_KEY_BITS),
        hash: PassphraseHash::parse(o.hash.as_deref().unwrap_or(plain::DEFAULT_HASH)),
        offset_sectors: o.offset.unwrap_or(0),
        skip_sectors: o.skip.unwrap_or(0),
        size_sectors: o.size,
        sector_size,
        iv_large_sectors: o.iv_large_sectors,
    };
    p.check_for(kernel)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(args: &[&str], kernel: bool) -> Result<PlainParams> {
        let argv: Vec<std::ffi::OsString> = ["cryptsetup", "open", "--type", "plain"]
            .into_iter()
            .chain(args.iter().copied())
            .chain(["d", "n"])
            .map(Into::into)
            .collect();
        plain(
            &crate::startup::parse(&argv).expect("the command line parses"),
            kernel,
        )
    }

    fn param_error(r: Result<PlainParams>) -> String {
        format!("{:?}", r.expect_err("refused"))
    }

    #[test]
    fn defaults_are_cryptsetup_2_6_1s() {
        let p = params(&[], false).unwrap();
        assert_eq!(p.cipher.to_string(), "aes-cbc-essiv:sha256");
        assert_eq!((p.key_bits, p.hash.as_str()), (256, "ripemd160"));
        assert_eq!(p, PlainParams::default());
        // `-s 0` is "not given".
        assert_eq!(params(&["-s", "0"], false).unwrap().key_bits, 256);
    }

    #[test]
    fn options_are_parsed_once() {
        let p = params(
            &[
                "-c",
                "aes-xts-plain64",
                "-s",
                "512",
                "-h",
                "sha256:20",
                "--offset",
                "8",
                "--skip",
                "16",
                "--size",
                "64",
                "--sector-size",
                "4096",
                "--iv-large-sectors",
            ],
            false,
        )
        .unwrap();
        assert_eq!(p.cipher, CipherSpec::parse("aes-xts-plain64").unwrap());
        assert_eq!(p.hash, PassphraseHash::parse("sha256:20"));
        assert!(!p.hash.is_copy());
        assert_eq!(
            (
                p.offset_sectors,
                p.skip_sectors,
                p.size_sectors,
                p.sector_size
            ),
            (8, 16, Some(64), 4096)
        );
        assert!(p.iv_large_sectors);
        assert!(params(&["-h", "plain"], false).unwrap().hash.is_copy());
    }

    /// cryptsetup refuses `--iv-large-sectors` with 512-byte sectors before it looks at the
    /// cipher, and the cipher pattern before the sector size.
    #[test]
    fn checks_come_in_cryptsetups_order() {
        let e = param_error(params(&["-c", "foo(", "--iv-large-sectors"], false));
        assert!(e.contains("Large IV sectors option"), "{e}");
        let e = param_error(params(&["-c", "foo(", "--sector-size", "1000"], false));
        assert!(e.contains("No known cipher specification pattern"), "{e}");
        let e = param_error(params(&["--sector-size", "1000"], false));
        assert!(e.contains("Unsupported encryption sector size"), "{e}");
        // Ciphers the engine lacks are left to the kernel, not to userspace mappings.
        assert!(params(&["-c", "sm4-xts-plain64"], false).is_err());
        params(&["-c", "sm4-xts-plain64"], true).unwrap();
    }

    /// A hash nothing answers to is no error until a passphrase is hashed (a key file
    /// ignores it, as with cryptsetup).
    #[test]
    fn a_bad_hash_waits_for_a_passphrase() {
        let p = params(&["-h", "nohash"], false).unwrap();
        let e = format!("{:?}", p.hash.derive(b"x", 32).expect_err("refused"));
        assert!(e.contains("HashUnsupported"), "{e}");
        let p = params(&["-h", "sha256:xx"], false).unwrap();
        let e = format!("{:?}", p.hash.derive(b"x", 32).expect_err("refused"));
        assert!(e.contains("KeyProcessing"), "{e}");
    }
}
