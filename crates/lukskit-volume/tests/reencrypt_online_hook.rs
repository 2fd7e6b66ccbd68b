//! The online hook of the re-encryption engine ([`lukskit_volume::reencrypt::online`]) on an
//! image file: the calls come in cryptsetup's order (start, then per hot zone before / after,
//! then finish), the tables handed over describe the moving boundary (new key and cipher up
//! to the hot zone, the hot zone under the new key, the old key after it), the data is
//! re-encrypted correctly, and a failing hook stops the run with `abort`.

use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use lukskit_volume::data::DataVolume;
use lukskit_volume::device::Access;
use lukskit_volume::format::{format, FormatRequest};
use lukskit_volume::pbkdf::{PbkdfKind, PbkdfRequest};
use lukskit_volume::reencrypt::online::{HotZone, OnlineHook};
use lukskit_volume::reencrypt::{
    self, InitParams, Keys, Mode, Outcome, ResilienceChoice, RunOptions,
};
use lukskit_volume::segment::{SegmentKind, SegmentTable};
use lukskit_volume::Volume;

const PASS: &[u8] = b"hook test";
const MIB: u64 = 1 << 20;

fn pbkdf() -> PbkdfRequest {
    PbkdfRequest {
        kind: Some(PbkdfKind::Pbkdf2),
        force_iterations: Some(1000),
        ..PbkdfRequest::default()
    }
}

/// A LUKS2 image with 4 MiB of random plaintext, initialized for re-encryption to
/// aes-cbc-essiv:sha256 with a new 256-bit key. Returns the plaintext and the keys.
fn prepared(path: &str) -> (Vec<u8>, Keys) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(16 * MIB + 4 * MIB)
        .unwrap();
    let p = FormatRequest {
        key_size_bits: Some(256),
        sector_size: Some(512),
        pbkdf: pbkdf(),
        ..FormatRequest::new(VolumeType::Luks2, path)
    };
    format(&p, PASS).unwrap();
    let mut vol = Volume::load(path, None, Access::Write).unwrap();
    let (_, old) = vol.unlock(PASS, None, false).unwrap();
    let mut plain = vec![0u8; (4 * MIB) as usize];
    lukskit_crypto::random::fill(&mut plain).unwrap();
    let dv = DataVolume::from_volume(&vol, old.as_bytes(), true).unwrap();
    dv.write_at(&plain, 0).unwrap();
    dv.flush().unwrap();
    drop(dv);
    let new = SecretBuf::random(32).unwrap();
    let slot = vol.add_keyslot(&new, PASS, None, &pbkdf(), true).unwrap();
    let Some((vol_dev, h)) = vol.luks2_edit() else {
        panic!("LUKS2")
    };
    let digest = lukskit_format::luks2::edit::digest_of_keyslot(h, slot).unwrap();
    let keys = Keys {
        old: Some(old),
        new: Some(new),
    };
    let params = InitParams {
        mode: Mode::Reencrypt,
        resilience: ResilienceChoice::Checksum("sha256".into()),
        cipher: "aes-cbc-essiv:sha256".into(),
        sector_size: 512,
        new_digest: digest,
        digest_iterations: 1000,
        digest_hash: lukskit_crypto::hash::HashAlg::Sha256,
    };
    let size = std::fs::metadata(path).unwrap().len();
    reencrypt::init(vol_dev, size, 4096, h, &params, &keys).unwrap();
    (plain, keys)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Start(Vec<Seg>),
    Before(Vec<Seg>, HotZone),
    After(Vec<Seg>),
    Finish(Vec<Seg>, bool),
    Abort(bool),
}

/// A segment as the test sees it: start, length, cipher ("linear") and which key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seg(u64, u64, String, &'static str);

struct Recorder<'a> {
    keys: &'a Keys,
    events: Vec<Event>,
    fail_before: Option<usize>,
}

impl Recorder<'_> {
    fn segs(&self, t: &SegmentTable) -> Vec<Seg> {
        t.segments()
            .iter()
            .map(|s| match &s.kind {
                SegmentKind::Crypt(c) => {
                    let which = if c.key.as_bytes() == self.keys.new.as_ref().unwrap().as_bytes() {
                        "new"
                    } else if c.key.as_bytes() == self.keys.old.as_ref().unwrap().as_bytes() {
                        "old"
                    } else {
                        "?"
                    };
                    Seg(s.start, s.len, c.cipher.to_string(), which)
                }
                _ => Seg(s.start, s.len, "linear".into(), "-"),
            })
            .collect()
    }
}

impl OnlineHook for Recorder<'_> {
    fn start(&mut self, live: &SegmentTable) -> lukskit_volume::Result<()> {
        let s = self.segs(live);
        self.events.push(Event::Start(s));
        Ok(())
    }
    fn before_hotzone(&mut self, t: &SegmentTable, hot: HotZone) -> lukskit_volume::Result<()> {
        let n = self
            .events
            .iter()
            .filter(|e| matches!(e, Event::Before(..)))
            .count();
        if self.fail_before == Some(n) {
            return Err(lukskit_volume::ReencryptError::Online("refused".into()).into());
        }
        let s = self.segs(t);
        self.events.push(Event::Before(s, hot));
        Ok(())
    }
    fn after_hotzone(&mut self, t: &SegmentTable) -> lukskit_volume::Result<()> {
        let s = self.segs(t);
        self.events.push(Event::After(s));
        Ok(())
    }
    fn finish(&mut self, t: &SegmentTable, finished: bool) -> lukskit_volume::Result<()> {
        let s = self.segs(t);
        self.events.push(Event::Finish(s, finished));
        Ok(())
    }
    fn abort(&mut self, touched: bool) {
        self.events.push(Event::Abort(touched));
    }
}

fn run(path: &str, keys: &Keys, hook: &mut dyn OnlineHook) -> lukskit_volume::Result<Outcome> {
    let mut vol = Volume::load(path, None, Access::Write).unwrap();
    let Some((vol_dev, h)) = vol.luks2_edit() else {
        panic!("LUKS2")
    };
    reencrypt::run_online(
        vol_dev,
        vol_dev,
        4096,
        h,
        keys,
        RunOptions {
            max_hotzone: MIB,
            progress: None,
            direct: None,
            device_size: None,
        },
        hook,
    )
}

const OLD: &str = "aes-xts-plain64";
const NEW: &str = "aes-cbc-essiv:sha256";

fn seg(start: u64, len: u64, new: bool) -> Seg {
    if new {
        Seg(start * MIB, len * MIB, NEW.into(), "new")
    } else {
        Seg(start * MIB, len * MIB, OLD.into(), "old")
    }
}

#[test]
fn hook_follows_every_hot_zone_in_cryptsetups_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.img").display().to_string();
    let (plain, keys) = prepared(&path);
    let mut rec = Recorder {
        keys: &keys,
        events: Vec::new(),
        fail_before: None,
    };
    assert_eq!(run(&path, &keys, &mut rec).unwrap(), Outcome::Finished);
    let mut want = vec![Event::Start(vec![seg(0, 4, false)])];
    for z in 0..4u64 {
        let mut hot = Vec::new();
        if z > 0 {
            hot.push(seg(0, z, true));
        }
        hot.push(seg(z, 1, true));
        if z < 3 {
            hot.push(seg(z + 1, 3 - z, false));
        }
        want.push(Event::Before(
            hot,
            HotZone {
                offset: z * MIB,
                length: MIB,
                index: usize::from(z > 0),
            },
        ));
        let mut post = vec![seg(0, z + 1, true)];
        if z < 3 {
            post.push(seg(z + 1, 3 - z, false));
        }
        want.push(Event::After(post));
    }
    want.push(Event::Finish(vec![seg(0, 4, true)], true));
    assert_eq!(rec.events, want);
    // The data is the plaintext under the new key and cipher.
    let vol = Volume::load(&path, None, Access::Read).unwrap();
    let (_, vk) = vol.unlock(PASS, None, false).unwrap();
    assert_eq!(vk.as_bytes(), keys.new.as_ref().unwrap().as_bytes());
    let dv = DataVolume::from_volume(&vol, vk.as_bytes(), false).unwrap();
    let mut back = vec![0u8; plain.len()];
    dv.read_at(&mut back, 0).unwrap();
    assert!(back == plain, "the plaintext changed");
}

#[test]
fn failing_hook_aborts_at_a_safe_point_and_the_run_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.img").display().to_string();
    let (plain, keys) = prepared(&path);
    let mut rec = Recorder {
        keys: &keys,
        events: Vec::new(),
        fail_before: Some(2),
    };
    let e = run(&path, &keys, &mut rec).unwrap_err();
    assert!(e.to_string().contains("refused"), "{e}");
    // Two hot zones done, the third refused before its data was touched.
    assert_eq!(
        rec.events.last(),
        Some(&Event::Abort(false)),
        "{:?}",
        rec.events
    );
    assert_eq!(
        rec.events
            .iter()
            .filter(|e| matches!(e, Event::After(_)))
            .count(),
        2
    );
    // An offline run finishes it; the plaintext is intact.
    let mut vol = Volume::load(&path, None, Access::Write).unwrap();
    let Some((vol_dev, h)) = vol.luks2_edit() else {
        panic!("LUKS2")
    };
    let out = reencrypt::run(
        vol_dev,
        vol_dev,
        4096,
        h,
        &keys,
        RunOptions {
            max_hotzone: MIB,
            progress: None,
            direct: None,
            device_size: None,
        },
    )
    .unwrap();
    assert_eq!(out, Outcome::Finished);
    drop(vol);
    let vol = Volume::load(&path, None, Access::Read).unwrap();
    let (_, vk) = vol.unlock(PASS, None, false).unwrap();
    let dv = DataVolume::from_volume(&vol, vk.as_bytes(), false).unwrap();
    let mut back = vec![0u8; plain.len()];
    dv.read_at(&mut back, 0).unwrap();
    assert!(back == plain, "the plaintext changed");
}
