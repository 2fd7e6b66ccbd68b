//! Fuzz the NBD decoders of the server (`lukskit open --nbd`): the transmission request
//! header, the option header, the client flags and every option payload, plus the checks
//! a decoded request goes through before it reaches the volume.
//!
//! Input layout: byte 0 chooses the decoder, the rest is the message.
//! * even: `parse_request` on the rest (28 bytes when valid), then `check_request`
//!   against an export whose size and flags come from the request itself;
//! * odd: bytes 1..5 are an option number (big endian), bytes 5.. its payload, passed to
//!   `parse_option`; the rest is also tried as an option header and as client flags.
//!
//! Decoding must never panic, and whatever decodes must encode back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_expose::nbd::proto::{
    check_request, encode_info_request, encode_request, parse_client_flags, parse_option,
    parse_option_header, parse_request, ClientOption, ExportLimits,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        if let Ok(req) = parse_request(rest) {
            assert_eq!(&encode_request(&req)[..], rest, "request round trip");
            let limits = ExportLimits {
                size: req.handle,
                read_only: mode & 2 != 0,
                allow_trim: mode & 4 != 0,
            };
            let _ = check_request(&req, &limits);
        }
        return;
    }
    let _ = parse_option_header(rest);
    let _ = parse_client_flags(rest);
    if rest.len() < 4 {
        return;
    }
    let option = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
    let payload = &rest[4..];
    match parse_option(option, payload) {
        Ok(ClientOption::Info(r)) | Ok(ClientOption::Go(r)) => {
            assert_eq!(encode_info_request(&r), payload, "info request round trip");
        }
        Ok(ClientOption::ExportName(name)) => {
            assert_eq!(name.as_bytes(), payload, "export name round trip");
        }
        _ => {}
    }
});
