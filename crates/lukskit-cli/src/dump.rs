//! `luksDump` output, byte for byte as cryptsetup 2.6 prints it.

use crate::errors::Result;
use lukskit_format::luks1::Luks1Header;
use lukskit_format::luks2::{DumpLength, KdfParams, Luks2Header};

use serde_json::Value;
use std::fmt::Write;

/// Bytes as lower-case hex, each followed by `sep`.
fn hex_sep(bytes: &[u8], sep: &str) -> String {
    bytes.iter().map(|b| format!("{b:02x}{sep}")).collect()
}

/// cryptsetup's `hexprint_base64`: 16 bytes a line, continuation lines start with `\t` +
/// `indent`, one trailing newline.
fn hex_lines(out: &mut String, bytes: &[u8], indent: &str) {
    for (i, chunk) in bytes.chunks(16).enumerate() {
        if i > 0 {
            out.push('\t');
            out.push_str(indent);
        }
        out.push_str(&hex_sep(chunk, " "));
        out.push('\n');
    }
    if bytes.is_empty() {
        out.push('\n');
    }
}

/// cryptsetup's `hexprint_base64` of a JSON member (as the format crate decodes it): its
/// bytes as [`hex_lines`] prints them, or nothing at all (not even the line end) when the
/// text is not Base64 (`None`).
fn base64_lines(out: &mut String, bytes: Option<&[u8]>, indent: &str) {
    if let Some(bytes) = bytes {
        hex_lines(out, bytes, indent);
    }
}

/// The LUKS1 dump (`_luks_dump`).
pub fn luks1(path: &str, h: &Luks1Header) -> String {
    let mut o = String::new();
    let _ = write!(o, "LUKS header information for {path}\n\n");
    let _ = writeln!(o, "Version:       \t1");
    let _ = writeln!(o, "Cipher name:   \t{}", h.cipher_name);
    let _ = writeln!(o, "Cipher mode:   \t{}", h.cipher_mode);
    let _ = writeln!(o, "Hash spec:     \t{}", h.hash_spec);
    let _ = writeln!(o, "Payload offset:\t{}", h.payload_offset);
    let _ = writeln!(o, "MK bits:       \t{}", h.key_bytes * 8);
    let _ = writeln!(o, "MK digest:     \t{}", hex_sep(&h.mk_digest, " "));
    let _ = writeln!(
        o,
        "MK salt:       \t{}\n               \t{}",
        hex_sep(&h.mk_digest_salt[..16], " "),
        hex_sep(&h.mk_digest_salt[16..], " ")
    );
    let _ = writeln!(o, "MK iterations: \t{}", h.mk_digest_iterations);
    let _ = write!(o, "UUID:          \t{}\n\n", h.uuid);
    for (i, ks) in h.keyslots.iter().enumerate() {
        if ks.active {
            let _ = writeln!(o, "Key Slot {i}: ENABLED");
            let _ = writeln!(o, "\tIterations:         \t{}", ks.iterations);
            let _ = writeln!(
                o,
                "\tSalt:               \t{}\n\t                      \t{}",
                hex_sep(&ks.salt[..16], " "),
                hex_sep(&ks.salt[16..], " ")
            );
            let _ = writeln!(o, "\tKey material offset:\t{}", ks.key_material_offset);
            let _ = writeln!(o, "\tAF stripes:            \t{}", ks.stripes);
        } else {
            let _ = writeln!(o, "Key Slot {i}: DISABLED");
        }
    }
    o
}

fn priority_desc(p: Option<u32>) -> &'static str {
    match p {
        None | Some(1) => "normal",
        Some(0) => "ignored",
        Some(2) => "preferred",
        Some(_) => "invalid",
    }
}

/// The LUKS2 dump (`LUKS2_hdr_dump`).
///
/// With `systemd_tokens`, systemd's token types get the lines systemd 252's cryptsetup token
/// plugins add ([`systemd_token_lines`]), as cryptsetup prints them where those plugins are
/// installed (Debian 12: package `systemd`); without, cryptsetup's lines without plugins
/// (`--disable-external-tokens`).
pub fn luks2(h: &Luks2Header, systemd_tokens: bool) -> Result<String> {
    let mut o = String::new();
    let b = &h.binary;
    o.push_str("LUKS header information\n");
    let _ = writeln!(o, "Version:       \t{}", b.version);
    let _ = writeln!(o, "Epoch:         \t{}", b.seqid);
    let _ = writeln!(o, "Metadata area: \t{} [bytes]", h.metadata_size());
    let _ = writeln!(o, "Keyslots area: \t{} [bytes]", h.keyslots_size()?);
    let or = |s: &str, d: &str| {
        if s.is_empty() {
            d.to_string()
        } else {
            s.to_string()
        }
    };
    let _ = writeln!(o, "UUID:          \t{}", or(&b.uuid, "(no UUID)"));
    let _ = writeln!(o, "Label:         \t{}", or(&b.label, "(no label)"));
    let _ = writeln!(o, "Subsystem:     \t{}", or(&b.subsystem, "(no subsystem)"));
    let flags = h.config_flags();
    if flags.is_empty() {
        o.push_str("Flags:       \t(no flags)\n");
    } else {
        o.push_str("Flags:       \t");
        for f in &flags {
            let _ = write!(o, "{f} ");
        }
        o.push('\n');
    }
    let reqs = h.requirements();
    if !reqs.is_empty() {
        o.push_str("Requirements:\t");
        for r in &reqs {
            let _ = write!(o, "{r} ");
        }
        o.push('\n');
    }
    o.push('\n');

    o.push_str("Data segments:\n");
    // In segment-number order, as cryptsetup's hdr_dump_segments; members as stored.
    for seg in h.dump_segments()? {
        let _ = writeln!(o, "  {}: {}", seg.id, seg.kind);
        let _ = writeln!(o, "\toffset: {} [bytes]", seg.offset);
        match seg.length {
            DumpLength::WholeDevice => o.push_str("\tlength: (whole device)\n"),
            DumpLength::Bytes(n) => {
                let _ = writeln!(o, "\tlength: {n} [bytes]");
            }
        }
        if let Some(c) = &seg.cipher {
            let _ = writeln!(o, "\tcipher: {c}");
        }
        if let Some(s) = seg.sector_size {
            let _ = writeln!(o, "\tsector: {s} [bytes]");
        }
        if let Some(t) = &seg.integrity {
            let _ = writeln!(o, "\tintegrity: {t}");
        }
        if !seg.flags.is_empty() {
            let _ = writeln!(o, "\tflags : {}", seg.flags.join(", "));
        }
        o.push('\n');
    }

    let digests = h.digests()?;
    let seg_digest = digests
        .iter()
        .find(|d| d.segments.contains(&0))
        .map(|d| d.id);
    // cryptsetup calls a keyslot bound when its digest is *the* digest (the first one that
    // lists it) of a data segment; during re-encryption the backup segments do not count,
    // and the hot zone (listed by both digests) belongs to the first.
    let data_digests: Vec<u32> = lukskit_format::luks2::edit::segments_sorted(h)?
        .into_iter()
        .filter(|(_, v)| !v.is_backup())
        .filter_map(|(id, _)| {
            digests
                .iter()
                .find(|d| d.segments.contains(&id))
                .map(|d| d.id)
        })
        .collect();
    o.push_str("Keyslots:\n");
    for ks in h.keyslots()? {
        let bound = digests
            .iter()
            .find(|d| d.keyslots.contains(&ks.id))
            .map(|d| data_digests.contains(&d.id) || Some(d.id) == seg_digest)
            .unwrap_or(false);
        let _ = writeln!(
            o,
            "  {}: {}{}",
            ks.id,
            ks.kind,
            if bound { "" } else { " (unbound)" }
        );
        let _ = writeln!(o, "\tKey:        {} bits", ks.key_size * 8);
        let _ = writeln!(o, "\tPriority:   {}", priority_desc(ks.priority));
        if ks.kind == lukskit_format::luks2::KeyslotType::Luks2 {
            let _ = writeln!(o, "\tCipher:     {}", ks.area_encryption);
            let _ = writeln!(o, "\tCipher key: {} bits", ks.area_key_size * 8);
            // KDF costs are printed as stored, as cryptsetup does (`json_object_get_int64`
            // printed unsigned), so an out-of-range value such as -1 shows as it is.
            let kdf_dump = h.dump_kdf(ks.id);
            let stored = kdf_dump.as_ref();
            match &ks.kdf {
                KdfParams::Pbkdf2 {
                    hash, iterations, ..
                } => {
                    o.push_str("\tPBKDF:      pbkdf2\n");
                    let _ = writeln!(o, "\tHash:       {hash}");
                    let it = stored
                        .and_then(|k| k.iterations)
                        .unwrap_or(u64::from(*iterations));
                    let _ = writeln!(o, "\tIterations: {it}");
                }
                KdfParams::Argon2 {
                    variant,
                    time,
                    memory,
                    cpus,
                    ..
                } => {
                    let time = stored.and_then(|k| k.time).unwrap_or(u64::from(*time));
                    let memory = stored.and_then(|k| k.memory).unwrap_or(u64::from(*memory));
                    let cpus = stored.and_then(|k| k.cpus).unwrap_or(u64::from(*cpus));
                    let _ = writeln!(o, "\tPBKDF:      {variant}");
                    let _ = writeln!(o, "\tTime cost:  {time}");
                    let _ = writeln!(o, "\tMemory:     {memory}");
                    let _ = writeln!(o, "\tThreads:    {cpus}");
                }
                // cryptsetup prints every type other than pbkdf2 with the Argon2 lines,
                // `json_object_get_int64` printed unsigned (0 for an absent member).
                KdfParams::Unknown { name, costs, .. } => {
                    let u = |v: Option<i64>| v.unwrap_or(0) as u64;
                    let _ = writeln!(o, "\tPBKDF:      {name}");
                    let _ = writeln!(o, "\tTime cost:  {}", u(costs.time));
                    let _ = writeln!(o, "\tMemory:     {}", u(costs.memory));
                    let _ = writeln!(o, "\tThreads:    {}", u(costs.cpus));
                }
            }
            o.push_str("\tSalt:       ");
            let salt = stored.map_or(Some(&[][..]), |k| k.salt.as_deref());
            base64_lines(&mut o, salt, "            ");
            let _ = writeln!(o, "\tAF stripes: {}", ks.af_stripes);
            let _ = writeln!(o, "\tAF hash:    {}", ks.af_hash);
            let _ = writeln!(o, "\tArea offset:{} [bytes]", ks.area_offset);
            let _ = writeln!(o, "\tArea length:{} [bytes]", ks.area_size);
        }
        if ks.kind == lukskit_format::luks2::KeyslotType::Reencrypt {
            reencrypt_keyslot(&mut o, h, ks.id);
        }
        for d in &digests {
            if d.keyslots.contains(&ks.id) {
                let _ = writeln!(o, "\tDigest ID:  {}", d.id);
            }
        }
    }

    o.push_str("Tokens:\n");
    for t in h.tokens()? {
        let _ = writeln!(o, "  {}: {}", t.id, t.kind);
        if systemd_tokens {
            o.push_str(&systemd_token_lines(t.kind.as_str(), &t.json).unwrap_or_default());
        }
        if t.kind == lukskit_format::luks2::TokenType::Luks2Keyring {
            if let Some(desc) = t.json.get("key_description").and_then(|v| v.as_str()) {
                let _ = writeln!(o, "\tKey description: {desc}");
            }
        }
        for k in &t.keyslots {
            let _ = writeln!(o, "\tKeyslot:    {k}");
        }
    }

    o.push_str("Digests:\n");
    for d in &digests {
        let _ = writeln!(o, "  {}: {}", d.id, d.kind);
        if d.kind == lukskit_format::luks2::DigestType::Pbkdf2 {
            let _ = writeln!(o, "\tHash:       {}", d.hash);
            let _ = writeln!(o, "\tIterations: {}", d.iterations);
            let stored = h.dump_digest(d.id);
            let (salt, digest) = match &stored {
                Some(m) => (m.salt.as_deref(), m.digest.as_deref()),
                None => (Some(&[][..]), Some(&[][..])),
            };
            o.push_str("\tSalt:       ");
            base64_lines(&mut o, salt, "            ");
            o.push_str("\tDigest:     ");
            base64_lines(&mut o, digest, "            ");
        }
    }
    Ok(o)
}

/// systemd's hex dump in its token plugins (`crypt_dump_buffer_to_hex_string`): bytes
/// separated by a space, 16 a line, lines joined by a newline, a tab and 12 spaces.
fn systemd_hex(bytes: &[u8]) -> String {
    let mut o = String::new();
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            o.push_str(if i % 16 == 0 { "\n\t            " } else { " " });
        }
        let _ = write!(o, "{b:02x}");
    }
    o
}

/// The lines systemd 252's token plugins print for a token of theirs in `luksDump` (after
/// `  N: TYPE`, before the keyslots), or `None` where the plugin prints nothing (another
/// type, or a token it cannot parse). Text from the header is printed with control
/// characters escaped.
pub fn systemd_token_lines(kind: &str, json: &Value) -> Option<String> {
    let b64 = |field: &str| -> Option<Vec<u8>> {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(json.get(field)?.as_str()?)
            .ok()
    };
    let text = |v: &str| -> String {
        v.chars()
            .flat_map(|c| {
                let e: Vec<char> = if c.is_control() {
                    c.escape_default().collect()
                } else {
                    vec![c]
                };
                e
            })
            .collect()
    };
    let mut o = String::new();
    match kind {
        "systemd-tpm2" => {
            let blob = b64("tpm2-blob")?;
            let mut pcrs = Vec::new();
            for p in json.get("tpm2-pcrs")?.as_array()? {
                let n = p.as_u64().filter(|&n| n < 24)?;
                if !pcrs.contains(&n) {
                    pcrs.push(n);
                }
            }
            pcrs.sort_unstable();
            let bank = match json.get("tpm2-pcr-bank") {
                None => "n/a",
                Some(v) => match v.as_str()? {
                    b @ ("sha1" | "sha256" | "sha384" | "sha512") => b,
                    _ => return None,
                },
            };
            let alg = match json.get("tpm2-primary-alg") {
                None => "ecc",
                Some(v) => match v.as_str()? {
                    a @ ("ecc" | "rsa") => a,
                    _ => return None,
                },
            };
            let policy = hex::decode(json.get("tpm2-policy-hash")?.as_str()?).ok()?;
            let pin = match json.get("tpm2-pin") {
                None => false,
                Some(v) => v.as_bool()?,
            };
            let pcrs = if pcrs.is_empty() {
                "n/a".to_string()
            } else {
                pcrs.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("+")
            };
            let _ = writeln!(o, "\ttpm2-hash-pcrs:   {pcrs}");
            let _ = writeln!(o, "\ttpm2-pcr-bank:    {bank}");
            // systemd 252's plugin prints no signed-policy key.
            o.push_str("\ttpm2-pubkey:\n\t            (null)\n");
            o.push_str("\ttpm2-pubkey-pcrs: n/a\n");
            let _ = writeln!(o, "\ttpm2-primary-alg: {alg}");
            let _ = writeln!(o, "\ttpm2-blob:        {}", systemd_hex(&blob));
            let _ = writeln!(
                o,
                "\ttpm2-policy-hash:\n\t            {}",
                systemd_hex(&policy)
            );
            let _ = writeln!(o, "\ttpm2-pin:         {pin}");
        }
        "systemd-pkcs11" => {
            let uri = json.get("pkcs11-uri")?.as_str()?;
            let key = b64("pkcs11-key")?;
            let _ = writeln!(o, "\tpkcs11-uri: {}", text(uri));
            let _ = writeln!(o, "\tpkcs11-key: {}", systemd_hex(&key));
        }
        "systemd-fido2" => {
            let cred = b64("fido2-credential")?;
            let salt = b64("fido2-salt")?;
            let rp = match json.get("fido2-rp") {
                None => None,
                Some(v) => Some(v.as_str()?),
            };
            let mut flags = Vec::new();
            for f in [
                "fido2-clientPin-required",
                "fido2-up-required",
                "fido2-uv-required",
            ] {
                if let Some(v) = json.get(f) {
                    flags.push((f, v.as_bool()?));
                }
            }
            let _ = writeln!(
                o,
                "\tfido2-credential:\n\t            {}",
                systemd_hex(&cred)
            );
            let _ = writeln!(o, "\tfido2-salt: {}", systemd_hex(&salt));
            if let Some(rp) = rp {
                let _ = writeln!(o, "\tfido2-rp:   {}", text(rp));
            }
            for (f, v) in flags {
                let _ = writeln!(o, "\t{f}:\n\t            {v}");
            }
        }
        _ => return None,
    }
    Some(o)
}

/// The `--dump-volume-key` block.
pub fn volume_key(
    device: &str,
    cipher: &str,
    payload_sectors: u64,
    uuid: &str,
    vk: &[u8],
) -> String {
    let (name, mode) = cipher.split_once('-').unwrap_or((cipher, ""));
    let mut o = String::new();
    let _ = writeln!(o, "LUKS header information for {device}");
    let _ = writeln!(o, "Cipher name:   \t{name}");
    let _ = writeln!(o, "Cipher mode:   \t{mode}");
    let _ = writeln!(o, "Payload offset:\t{payload_sectors}");
    let _ = writeln!(o, "UUID:          \t{uuid}");
    let _ = writeln!(o, "MK bits:       \t{}", vk.len() * 8);
    o.push_str("MK dump:\t");
    for (i, chunk) in vk.chunks(16).enumerate() {
        if i > 0 {
            o.push_str("\n\t\t");
        }
        o.push_str(&hex_sep(chunk, " "));
    }
    o.push('\n');
    o
}

/// `luksDump --unbound -S N`'s text (cryptsetup's luksDump_with_unbound_key): the header
/// lines, then the unbound key in hex (`with_key`) or nothing more (the caller says where it
/// stored the key).
pub fn unbound_key(device: &str, uuid: &str, slot: u32, key: &[u8], with_key: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "LUKS header information for {device}");
    let _ = writeln!(o, "UUID:    \t{uuid}");
    let _ = writeln!(o, "Keyslot: \t{slot}");
    let _ = writeln!(o, "Key bits:\t{}", key.len() * 8);
    if with_key {
        o.push_str("Unbound Key:\t");
        for (i, chunk) in key.chunks(16).enumerate() {
            if i > 0 {
                o.push_str("\n\t\t");
            }
            o.push_str(&hex_sep(chunk, " "));
        }
        o.push('\n');
    }
    o
}

/// json-c's pretty printer (`JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE`), as
/// used by `luksDump --dump-json-metadata`.
pub fn json_pretty(v: &Value) -> String {
    let mut o = String::new();
    pretty(v, 0, &mut o);
    o
}

fn indent(o: &mut String, level: usize) {
    for _ in 0..level {
        o.push_str("  ");
    }
}

fn pretty(v: &Value, level: usize, o: &mut String) {
    match v {
        Value::Object(m) => {
            o.push('{');
            for (i, (k, val)) in m.iter().enumerate() {
                if i > 0 {
                    o.push(',');
                }
                o.push('\n');
                indent(o, level + 1);
                o.push_str(&serde_json::to_string(k).unwrap_or_default());
                o.push(':');
                pretty(val, level + 1, o);
            }
            o.push('\n');
            indent(o, level);
            o.push('}');
        }
        Value::Array(a) => {
            o.push('[');
            for (i, val) in a.iter().enumerate() {
                if i > 0 {
                    o.push(',');
                }
                o.push('\n');
                indent(o, level + 1);
                pretty(val, level + 1, o);
            }
            o.push('\n');
            indent(o, level);
            o.push(']');
        }
        other => o.push_str(&serde_json::to_string(other).unwrap_or_default()),
    }
}

/// The lines cryptsetup prints for a `reencrypt` keyslot (`reenc_keyslot_dump`).
fn reencrypt_keyslot(o: &mut String, h: &Luks2Header, id: u32) {
    let Some(ks) = h.dump_reencrypt_keyslot(id) else {
        return;
    };
    let _ = writeln!(o, "\tMode:       {}", ks.mode);
    let _ = writeln!(o, "\tDirection:  {}", ks.direction);
    let _ = writeln!(o, "\tResilience: {}", ks.resilience);
    if ks.resilience == "checksum" {
        let _ = writeln!(o, "\tHash:       {}", ks.hash);
        let _ = writeln!(o, "\tHash data:  {} [bytes]", ks.hash_block);
    } else if ks.resilience == "datashift" {
        let _ = writeln!(o, "\tShift size: {}[bytes]", ks.shift_size);
    }
    let _ = writeln!(o, "\tArea offset:{} [bytes]", ks.area_offset);
    let _ = writeln!(o, "\tArea length:{} [bytes]", ks.area_size);
}
