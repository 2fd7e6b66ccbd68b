//! Fuzz every writer of the LUKS2 metadata: a valid header (as luksFormat makes it) gets a
//! sequence of edits chosen by the input — keyslots, digests, tokens, config flags and
//! priorities (`Luks2Header`'s mutators) and re-encryption's segment, assignment, requirement
//! and `reencrypt`-keyslot edits (`luks2::edit`) — with values from the input, then is written
//! to memory and read back.
//!
//! Checked: no edit panics; `write` refuses any header the edits left invalid (it validates),
//! and whatever it wrote reads back as a header whose JSON is exactly what was written (so
//! no writer can put metadata on disk that the reader refuses or reads differently).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_format::io::MemStorage;
use lukskit_format::luks2::{
    self, edit, reencrypt_keyslot::ReencryptKeyslot, ConfigFlag, Digest, DigestType, KdfParams,
    Keyslot, KeyslotType, Luks2Header, NewHeaderParams, ReencryptDirection, ReencryptMode,
};
use serde_json::json;

/// The input as a stream of small numbers.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }
    fn u64(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for _ in 0..8 {
            v = (v << 8) | u64::from(self.byte()?);
        }
        Some(v)
    }
    /// Mostly small values (ids, sizes in sectors), sometimes any 64-bit one.
    fn num(&mut self) -> Option<u64> {
        match self.byte()? {
            b if b < 0xf0 => Some(u64::from(b)),
            _ => self.u64(),
        }
    }
    fn text(&mut self) -> Option<String> {
        const WORDS: [&str; 8] = [
            "backup-previous",
            "backup-final",
            "in-reencryption",
            "allow-discards",
            "luks2-keyring",
            "x-unknown",
            "",
            "systemd-tpm2",
        ];
        Some(WORDS[usize::from(self.byte()? % 8)].to_string())
    }
}

fn base() -> Luks2Header {
    Luks2Header::new(&NewHeaderParams {
        metadata_size: 0x4000,
        keyslots_size: 0x10000,
        data_offset: 0x20000,
        data_size: None,
        encryption: "aes-xts-plain64".into(),
        sector_size: 512,
        uuid: "5f3a1b2c-0d4e-4f60-8a7b-9c0d1e2f3a4b".into(),
        label: String::new(),
        subsystem: String::new(),
        digest: Digest {
            id: 0,
            kind: DigestType::Pbkdf2,
            keyslots: vec![],
            segments: vec![0],
            hash: "sha256".into(),
            iterations: 1000,
            salt: vec![1; luks2::SALT_SIZE],
            digest: vec![2; 32],
        },
    })
    .expect("a valid new header")
}

fn keyslot(id: u32, area_offset: u64, key_size: u32) -> Keyslot {
    Keyslot {
        id,
        kind: KeyslotType::Luks2,
        key_size,
        af_stripes: 4000,
        af_hash: "sha256".into(),
        area_offset,
        area_size: Luks2Header::keyslot_area_size(key_size),
        area_encryption: "aes-xts-plain64".into(),
        area_key_size: 64,
        kdf: KdfParams::Pbkdf2 {
            hash: "sha256".into(),
            iterations: 1000,
            salt: vec![3; luks2::SALT_SIZE],
        },
        priority: None,
    }
}

/// One edit chosen by the input; `None` when the input ran out.
fn edit_once(h: &mut Luks2Header, inp: &mut Input) -> Option<()> {
    let id = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    // Results are ignored: a refused edit is fine, a panic or a bad write is not.
    match inp.byte()? % 20 {
        0 => {
            let (slot, key) = (id(inp.num()?), id(inp.num()?.wrapping_mul(8)));
            let off = match h.find_keyslot_area(Luks2Header::keyslot_area_size(key)) {
                Ok(Some(o)) => o,
                _ => inp.num()?,
            };
            let _ = h.add_keyslot(&keyslot(slot, off, key));
        }
        1 => drop(h.remove_keyslot(id(inp.num()?))),
        2 => drop(h.assign_keyslot_to_digest(id(inp.num()?), id(inp.num()?))),
        3 => {
            let mut d = base().digests().ok()?.remove(0);
            d.id = id(inp.num()?);
            d.segments = vec![id(inp.num()?)];
            let _ = h.add_digest(&d);
        }
        4 => drop(h.set_keyslot_priority(id(inp.num()?), id(inp.num()?))),
        5 => {
            let t = match inp.byte()? % 3 {
                0 => json!({"type": inp.text()?, "keyslots": [inp.num()?.to_string()]}),
                1 => luks2::keyring_token(&inp.text()?, &[id(inp.num()?)]),
                _ => luks2::token_with_keyslot(json!({"type": inp.text()?}), id(inp.num()?)),
            };
            let at = if inp.byte()? % 2 == 0 {
                None
            } else {
                Some(id(inp.num()?))
            };
            let _ = h.add_token(at, t);
        }
        6 => {
            let token = id(inp.num()?);
            if inp.byte()? % 2 == 0 {
                drop(h.remove_token(token));
            } else {
                let n = inp.byte()? % 4;
                let slots = (0..n)
                    .map(|_| inp.num().map(id))
                    .collect::<Option<Vec<u32>>>()?;
                drop(h.set_token_keyslots(token, &slots));
            }
        }
        7 => {
            let f = inp.text()?;
            let _ = h.set_config_flags(&[ConfigFlag::parse(&f)]);
        }
        8 => {
            let s = edit::crypt_segment(
                inp.num()?.wrapping_mul(512),
                inp.num()?,
                if inp.byte()? % 2 == 0 {
                    None
                } else {
                    Some(inp.num()?.wrapping_mul(512))
                },
                "aes-xts-plain64",
                512 << (inp.byte()? % 4),
                inp.byte()? % 2 == 0,
            );
            let _ = edit::push_segment(h, s);
        }
        9 => {
            let s = edit::linear_segment(
                inp.num()?.wrapping_mul(512),
                if inp.byte()? % 2 == 0 {
                    None
                } else {
                    Some(inp.num()?.wrapping_mul(512))
                },
                inp.byte()? % 2 == 0,
            );
            let _ = edit::push_segment(h, s);
        }
        10 => drop(edit::delete_segment(h, id(inp.num()?))),
        11 => drop(edit::assign_segment(h, id(inp.num()?), id(inp.num()?))),
        12 => drop(edit::unassign_segment(h, id(inp.num()?))),
        13 => drop(edit::unassign_all_segments(h)),
        14 => {
            let v = inp.byte()?;
            let _ = edit::set_requirement_version(h, (v % 4 != 0).then_some(v));
        }
        15 => drop(edit::set_keyslots_size(h, inp.num()?.wrapping_mul(4096))),
        16 => {
            let protection = match inp.byte()? % 6 {
                0 => edit::AreaProtection::None,
                1 => edit::AreaProtection::Journal,
                2 => edit::AreaProtection::Checksum {
                    hash: "sha256".into(),
                    sector_size: inp.num()?,
                },
                3 => edit::AreaProtection::Datashift,
                4 => edit::AreaProtection::DatashiftJournal,
                _ => edit::AreaProtection::Other(inp.text()?),
            };
            let area = edit::ReencryptArea {
                offset: inp.num()?.wrapping_mul(4096),
                size: inp.num()?.wrapping_mul(4096),
                protection,
                shift_size: (inp.byte()? % 2 == 0).then_some(inp.num()?.wrapping_mul(512)),
            };
            let slot = id(inp.num()?);
            let inserted = inp.byte()? % 2 == 0;
            let mode = ReencryptMode::parse(&inp.text()?);
            let done = if inserted {
                edit::insert_reencrypt_keyslot(h, slot, &area, &mode, &ReencryptDirection::Forward)
            } else {
                edit::set_reencrypt_area(h, slot, &area)
            };
            // What was written reads back as written.
            if done.is_ok() {
                assert_eq!(edit::ReencryptArea::of(h, slot).ok(), Some(area));
                if inserted {
                    let ks = ReencryptKeyslot::of(h, slot).expect("keyslot just written");
                    assert_eq!((ks.mode, ks.direction), (mode, ReencryptDirection::Forward));
                }
            }
        }
        17 => {
            let segs = edit::data_segments(h).ok()?;
            let mut segs: Vec<edit::SegmentObject> = segs.into_iter().rev().collect();
            if let Some(s) = segs.first_mut() {
                let f = inp.text()?;
                match inp.byte()? % 5 {
                    0 => s.set_flag(&f),
                    1 => s.remove_flag(&f),
                    2 => s.set_size((f.len() % 2 == 0).then_some(inp.num()?.wrapping_mul(512))),
                    3 => s.set_offset(inp.num()?.wrapping_mul(512)),
                    _ => s.set_iv_tweak(inp.num()?),
                }
            }
            let _ = edit::set_segments(h, segs);
        }
        18 => drop(edit::move_keyslot_digest(h, id(inp.num()?), id(inp.num()?))),
        _ => {
            let kind = inp.text()?;
            let _ = h.set_segment_integrity(id(inp.num()?), &kind);
        }
    }
    Some(())
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let mut h = base();
    for _ in 0..32 {
        if edit_once(&mut h, &mut inp).is_none() {
            break;
        }
    }
    let disk = MemStorage::new(0);
    let valid = h.validate().is_ok();
    match luks2::write(&disk, &mut h) {
        Ok(()) => {
            assert!(valid, "write accepted a header validate() refuses");
            let back = luks2::read(&disk).expect("a written header reads back");
            assert_eq!(back.header.to_json_string(), h.to_json_string());
        }
        Err(_) => assert!(
            !valid || h.hdr_and_areas_size().is_err(),
            "a valid header was not written"
        ),
    }
});
