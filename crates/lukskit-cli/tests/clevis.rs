//! clevis `tpm2` and `sss` pins against the real thing: volumes bound by Debian 12's
//! `clevis luks bind` (clevis 19; its tpm2 pin runs tpm2-tools 5 against a software TPM,
//! `swtpm socket`, through `TPM2TOOLS_TCTI=swtpm:path=SOCKET`; tang pins talk to Debian's
//! tang server on loopback), opened by lukskit without a prompt (`--tpm2-device=swtpm:…`):
//!
//! - tpm2 without PCRs (`'{}'`) and with a PCR 7 policy; an extended PCR 7 falls back to the
//!   passphrase with one line; nothing is left loaded in the TPM;
//! - sss with tang + tpm2, t=1 (with tang down: the TPM alone opens it) and t=2 (both needed;
//!   tang down: one line and the passphrase), and sss nested in sss.
//!
//! Needs swtpm, tpm2-tools, libtss2-tcti-swtpm0, clevis, clevis-luks, clevis-tpm2, tang,
//! socat and cryptsetup (scripts/test.sh installs them); fails without them unless
//! `LUKSKIT_ALLOW_SKIP=1`.

mod common;
use common::mapping::have_tool;
use common::swtpm::Swtpm;
use common::tang_server::{Tang, KEYGEN, TANGD};
use common::*;
use std::path::Path;
use std::process::Command;

fn tools(test: &str) -> bool {
    for p in [TANGD, KEYGEN, "/usr/bin/clevis-encrypt-tpm2"] {
        if !Path::new(p).exists() {
            skip_or_fail(
                test,
                &format!("{p} is missing (apt-get install tang clevis-tpm2)"),
            );
            return false;
        }
    }
    common::swtpm::tools_present(test)
        && have_tool(test, "socat")
        && have_tool(test, "clevis")
        && Path::new("/usr/bin/clevis-luks-bind").exists()
        && have_cryptsetup(test)
}

/// A LUKS2 volume (passphrase "pass" in keyslot 0) bound by `clevis luks bind` to `pin`
/// with `cfg` (keyslot 1, token 0), the tpm2 pin talking to `tpm`.
fn bound(dir: &Path, tpm: &Swtpm, pin: &str, cfg: &str) -> String {
    let img = sparse(dir, "img", 32 << 20);
    let key = write_file(dir, "key", b"pass");
    let mut args = vec!["luksFormat", "-q", "--type", "luks2", "-d", &key];
    args.extend_from_slice(&FAST);
    args.push(&img);
    cryptsetup(&args, b"").unwrap().ok("cryptsetup luksFormat");
    let mut cmd = Command::new("clevis");
    cmd.args(["luks", "bind", "-y", "-k", &key, "-d", &img, pin, cfg]);
    let r = run(cmd, b"", &[("TPM2TOOLS_TCTI", &tpm.tcti())]);
    assert_eq!(
        r.code, 0,
        "clevis luks bind {pin} {cfg}: {}{}",
        r.stdout, r.stderr
    );
    let tok = &json_dump(&img)["tokens"]["0"];
    assert_eq!(tok["type"], "clevis", "{tok}");
    // clevis' tpm2-tools calls leave their objects and sessions loaded in a TPM without a
    // resource manager (the swtpm socket); a kernel /dev/tpmrm0 would flush them at close.
    tpm.tools(&["tpm2_flushcontext", "-t"]);
    tpm.tools(&["tpm2_flushcontext", "-l"]);
    img
}

/// No TPM objects or sessions left behind by lukskit.
fn nothing_left(tpm: &Swtpm) {
    for what in ["handles-transient", "handles-loaded-session"] {
        let out = tpm.tools(&["tpm2_getcap", what]);
        assert_eq!(out.trim(), "", "{what} left in the TPM: {out}");
    }
}

/// `open --test-passphrase -v` of `img` with empty standard input: opened by the token.
fn opens_without_prompt(tpm: &Swtpm, img: &str, extra: &[&str]) {
    let dev = tpm.device_arg();
    let mut args = vec!["open", "--test-passphrase", "-v", &dev];
    args.extend_from_slice(extra);
    args.push(img);
    let r = lukskit(&args, b"");
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "Key slot 1 unlocked.\nCommand successful.\n", ""),
        "{extra:?}"
    );
}

#[test]
fn clevis_tpm2_pin_opens_without_a_prompt() {
    let test = "clevis_tpm2_pin_opens_without_a_prompt";
    if !tools(test) {
        return;
    }
    for cfg in [
        "{}",
        r#"{"pcr_ids":"7"}"#,
        r#"{"pcr_bank":"sha256","pcr_ids":"0,7"}"#,
    ] {
        let d = tmp();
        let tpm = Swtpm::start(d.path());
        let img = bound(d.path(), &tpm, "tpm2", cfg);
        for extra in [&[][..], &["--token-only", "--token-type", "clevis"][..]] {
            opens_without_prompt(&tpm, &img, extra);
        }
        nothing_left(&tpm);
        // luksAddKey --token-id: the pin's passphrase opens for the new keyslot.
        let dev = tpm.device_arg();
        common::token_adds_a_keyslot(d.path(), &img, &[&dev], |a| lukskit(a, b""));
        // No TPM at that path: one line, then the passphrase.
        let missing = format!("--tpm2-device=swtpm:path={}/none.sock", d.path().display());
        let r = lukskit(
            &["open", "--test-passphrase", "-v", &missing, &img],
            b"pass\n",
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
        assert!(
            r.stderr
                .starts_with("Token 0 (clevis tpm2) cannot unlock: ")
                && r.stderr.ends_with("\nFalling back to the passphrase.\n")
                && r.stderr.lines().count() == 2,
            "{}",
            r.stderr
        );
    }
}

#[test]
fn clevis_tpm2_pin_with_changed_pcr_falls_back_in_one_line() {
    let test = "clevis_tpm2_pin_with_changed_pcr_falls_back_in_one_line";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let img = bound(
        d.path(),
        &tpm,
        "tpm2",
        r#"{"pcr_bank":"sha256","pcr_ids":"7"}"#,
    );
    opens_without_prompt(&tpm, &img, &[]);
    tpm.extend_pcr7();
    let dev = tpm.device_arg();
    let r = lukskit(&["open", "--test-passphrase", "-v", &dev, &img], b"pass\n");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(
        r.stderr,
        "Token 0 (clevis tpm2) cannot unlock: the current PCR values do not match the \
         token's policy (PCRs changed since enrollment).\nFalling back to the passphrase.\n"
    );
    // --token-only: nothing usable, as cryptsetup (exit 1).
    let r = lukskit(
        &["open", "--test-passphrase", "--token-only", &dev, &img],
        b"",
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    nothing_left(&tpm);
    // clevis itself agrees: its pin cannot unseal either.
    let mut cmd = Command::new("clevis");
    cmd.args(["luks", "pass", "-d", &img, "-s", "1"]);
    let r = run(cmd, b"", &[("TPM2TOOLS_TCTI", &tpm.tcti())]);
    assert_ne!(
        r.code, 0,
        "clevis luks pass after the PCR changed: {}",
        r.stdout
    );
}

#[test]
fn clevis_sss_of_tang_and_tpm2_opens_with_its_threshold() {
    let test = "clevis_sss_of_tang_and_tpm2_opens_with_its_threshold";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let mut tang = Tang::start(d.path());
    let url = tang.url();
    let sss = |t: u32| {
        format!(
            r#"{{"t":{t},"pins":{{"tang":[{{"url":"{url}"}}],"tpm2":{{"pcr_bank":"sha256","pcr_ids":"7"}}}}}}"#
        )
    };
    // t=1: either pin opens it.
    let d1 = tmp();
    let tpm1 = Swtpm::start(d1.path());
    let img1 = bound(d1.path(), &tpm1, "sss", &sss(1));
    opens_without_prompt(&tpm1, &img1, &[]);
    // t=2: both.
    let d2 = tmp();
    let tpm2 = Swtpm::start(d2.path());
    let img2 = bound(d2.path(), &tpm2, "sss", &sss(2));
    opens_without_prompt(&tpm2, &img2, &[]);
    // Nested: 2 of (tpm2, 1 of (tang, tang)).
    let nested = format!(
        r#"{{"t":2,"pins":{{"tpm2":{{}},"sss":{{"t":1,"pins":{{"tang":[{{"url":"{url}"}},{{"url":"{url}"}}]}}}}}}}}"#
    );
    let d3 = tmp();
    let tpm3 = Swtpm::start(d3.path());
    let img3 = bound(d3.path(), &tpm3, "sss", &nested);
    opens_without_prompt(&tpm3, &img3, &[]);

    // tang down: t=1 still opens by the TPM alone; t=2 falls back with one line that says
    // what each pin answered.
    tang.stop();
    opens_without_prompt(&tpm1, &img1, &[]);
    let dev = tpm2.device_arg();
    let r = lukskit(&["open", "--test-passphrase", "-v", &dev, &img2], b"pass\n");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    let want = format!(
        "Token 0 (clevis sss 2 of (tang {url}, tpm2)) cannot unlock: 1 of the 2 pins needed \
         decrypted (tang {url}: tang server {url}/rec/"
    );
    assert!(r.stderr.starts_with(&want), "{}\nwanted {want}", r.stderr);
    assert!(
        r.stderr.ends_with("\nFalling back to the passphrase.\n") && r.stderr.lines().count() == 2,
        "{}",
        r.stderr
    );
    let r = lukskit(
        &["open", "--test-passphrase", "-v", &tpm3.device_arg(), &img3],
        b"pass\n",
    );
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert!(
        r.stderr.contains("0 of the 1 pins needed decrypted"),
        "{}",
        r.stderr
    );
    // tang back, PCR 7 changed: t=1 opens by tang alone.
    tang.restart();
    tpm1.extend_pcr7();
    opens_without_prompt(&tpm1, &img1, &[]);
    for t in [&tpm1, &tpm2, &tpm3] {
        nothing_left(t);
    }
}

#[test]
fn hostile_clevis_pins_are_refused_in_one_line() {
    let test = "hostile_clevis_pins_are_refused_in_one_line";
    if !have_cryptsetup(test) {
        return;
    }
    use base64::Engine as _;
    let b64u = |v: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let d = tmp();
    let img = sparse(d.path(), "img", 32 << 20);
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, "-"]);
    cryptsetup(&args, b"pass").unwrap().ok("luksFormat");
    // sss nested deeper than lukskit follows, a threshold above the pins, a tpm2 pin whose
    // sealed object is garbage, an unknown pin.
    let compact =
        |h: &serde_json::Value| format!("{}..AAAAAAAAAAAAAAAA.AA.AAAAAAAAAAAAAAAAAAAAAA", b64u(h));
    let mut deep =
        serde_json::json!({"alg":"dir","enc":"A256GCM","clevis":{"pin":"tpm2","tpm2":{}}});
    for _ in 0..6 {
        deep = serde_json::json!({"alg":"dir","enc":"A256GCM","clevis":{"pin":"sss","sss":{
            "t":1,"p":"wd0-g9t621WVX2GV-t27p9Y6lfrMjev1I_-xhkGSB_c","jwe":[compact(&deep)]}}});
    }
    let headers = [
        (deep, "malformed clevis token: sss pins nested too deep"),
        (
            serde_json::json!({"alg":"dir","enc":"A256GCM","clevis":{"pin":"sss","sss":{
                "t":3,"p":"wd0-g9t621WVX2GV-t27p9Y6lfrMjev1I_-xhkGSB_c","jwe":[]}}}),
            "malformed clevis token: clevis.sss.t is more than its pins",
        ),
        (
            serde_json::json!({"alg":"dir","enc":"A256GCM","clevis":{"pin":"tpm2","tpm2":{
                "hash":"sha256","key":"ecc","jwk_pub":"AAA","jwk_priv":"AAA"}}}),
            "malformed clevis tpm2 pin: jwk_priv is not one TPM2B structure",
        ),
        (
            serde_json::json!({"alg":"dir","enc":"A256GCM","clevis":{"pin":"yubikey\u{1b}[2J"}}),
            "clevis pin yubikey\\u{1b}[2J is not supported (only tang, tpm2 and sss)",
        ),
    ];
    for (i, (h, why)) in headers.into_iter().enumerate() {
        let token = serde_json::json!({"type":"clevis","keyslots":["0"],"jwe":{
            "protected": b64u(&h), "iv":"AAAAAAAAAAAAAAAA","ciphertext":"AA",
            "tag":"AAAAAAAAAAAAAAAAAAAAAA","encrypted_key":""}});
        let tj = write_file(d.path(), "token.json", token.to_string().as_bytes());
        let mut args = vec!["token", "import", "--json-file", &tj, "--token-id", "0"];
        if i > 0 {
            args.push("--token-replace");
        }
        args.push(&img);
        lukskit(&args, b"").ok("token import");
        let r = lukskit(&["open", "--test-passphrase", "-v", &img], b"pass\n");
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(
            r.stderr,
            format!("Token 0 (clevis) cannot unlock: {why}.\nFalling back to the passphrase.\n")
        );
    }
}

/// `clevis luks list -d IMG`.
fn clevis_list(img: &str) -> String {
    let mut cmd = Command::new("clevis");
    cmd.args(["luks", "list", "-d", img]);
    let r = run(cmd, b"", &[]);
    assert_eq!(r.code, 0, "clevis luks list: {}", r.stderr);
    r.stdout
}

/// `clevis luks pass -d IMG -s SLOT` through the software TPM: what clevis decrypts (the
/// passphrase `clevis luks unlock` would give cryptsetup), checked against that keyslot
/// with cryptsetup. Its exit code.
fn clevis_pass_opens(tpm: &Swtpm, img: &str, slot: &str) -> i32 {
    let mut cmd = Command::new("clevis");
    cmd.args(["luks", "pass", "-d", img, "-s", slot]);
    let p = run(cmd, b"", &[("TPM2TOOLS_TCTI", &tpm.tcti())]);
    if p.code == 0 {
        cryptsetup(
            &["open", "--test-passphrase", "--key-slot", slot, img],
            p.stdout.as_bytes(),
        )
        .unwrap()
        .ok("clevis' passphrase opens the keyslot");
    }
    p.code
}

#[test]
fn lukskit_sss_binding_opens_with_clevis_and_lukskit() {
    let test = "lukskit_sss_binding_opens_with_clevis_and_lukskit";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let mut tang = Tang::start(d.path());
    let url = tang.url();
    let tpm = Swtpm::start(d.path());
    let dev = tpm.device_arg();
    let img = sparse(d.path(), "img", 32 << 20);
    let key = write_file(d.path(), "key", b"pass");
    // Three clevis tokens with tang advertisements need more than the default 12 KiB of
    // JSON area.
    let mut args = vec![
        "luksFormat",
        "-q",
        "--type",
        "luks2",
        "--luks2-metadata-size",
        "64k",
    ];
    args.extend_from_slice(&["-d", &key]);
    args.extend_from_slice(&FAST);
    args.push(&img);
    cryptsetup(&args, b"").unwrap().ok("cryptsetup luksFormat");
    let t2 = format!(
        r#"{{"t":2,"pins":{{"tang":[{{"url":"{url}"}}],"tpm2":{{"pcr_bank":"sha256","pcr_ids":"7"}}}}}}"#
    );
    let thp = tang.thumbprint();
    let t1 =
        format!(r#"{{"t":1,"pins":{{"tang":[{{"url":"{url}","thp":"{thp}"}}],"tpm2":{{}}}}}}"#);
    let nested = format!(
        r#"{{"t":2,"pins":{{"tpm2":{{}},"sss":{{"t":1,"pins":{{"tang":[{{"url":"{url}"}},{{"url":"{url}","thp":"{thp}"}}]}}}}}}}}"#
    );
    // Keyslots 1, 2, 3 (tokens 0, 1, 2). The server is trusted by --batch-mode (clevis'
    // -y) where a tang pin has no "thp", by its thumbprint otherwise.
    for (cfg, batch) in [(&t2, true), (&t1, false), (&nested, true)] {
        let mut a = vec!["token", "bind-clevis", &dev, "-d", &key];
        if batch {
            a.push("--batch-mode");
        }
        a.extend_from_slice(&[&img, "sss", cfg]);
        let r = lukskit(&a, b"");
        assert_eq!(r.code, 0, "bind-clevis sss {cfg}: {}", r.stderr);
    }
    nothing_left(&tpm);
    // clevis lists them as it lists its own bindings of the same configurations.
    let listed = clevis_list(&img);
    let own = tmp();
    let own_tpm = Swtpm::start(own.path());
    let mut want = String::new();
    for (slot, cfg) in [(1, &t2), (2, &t1), (3, &nested)] {
        let theirs = bound(own.path(), &own_tpm, "sss", cfg);
        let l = clevis_list(&theirs);
        want.push_str(&l.replacen("1: ", &format!("{slot}: "), 1));
        std::fs::remove_file(&theirs).unwrap();
    }
    assert_eq!(listed, want);
    assert!(
        listed.starts_with(&format!(
            "1: sss '{{\"t\":2,\"pins\":{{\"tang\":[{{\"url\":\"{url}\"}}],\"tpm2\":\
             [{{\"hash\":\"sha256\",\"key\":\"ecc\",\"pcr_bank\":\"sha256\",\"pcr_ids\":\"7\"}}]}}}}'\n"
        )),
        "{listed}"
    );
    // clevis decrypts each (tang + TPM), and so does lukskit, without a prompt.
    for slot in ["1", "2", "3"] {
        assert_eq!(
            clevis_pass_opens(&tpm, &img, slot),
            0,
            "clevis luks pass -s {slot}"
        );
    }
    opens_without_prompt(&tpm, &img, &[]);
    for id in ["1", "2"] {
        let r = lukskit(
            &[
                "open",
                "--test-passphrase",
                "-v",
                "--token-id",
                id,
                &dev,
                &img,
            ],
            b"",
        );
        assert_eq!(r.code, 0, "token {id}: {}", r.stderr);
    }
    // Threshold: tang down, t=2 and the nested 2 of (tpm2, 1 of (tang, tang)) are refused
    // by clevis and by lukskit; t=1 opens with the TPM alone.
    tang.stop();
    assert_ne!(clevis_pass_opens(&tpm, &img, "1"), 0);
    assert_ne!(clevis_pass_opens(&tpm, &img, "3"), 0);
    assert_eq!(clevis_pass_opens(&tpm, &img, "2"), 0);
    for (id, code) in [("0", 1), ("2", 1), ("1", 0)] {
        let r = lukskit(
            &[
                "open",
                "--test-passphrase",
                "--token-only",
                "--token-id",
                id,
                "-v",
                &dev,
                &img,
            ],
            b"",
        );
        assert_eq!(r.code, code, "token {id}: {}{}", r.stdout, r.stderr);
    }
    // Hostile or unsupported configurations are refused before anything is asked or
    // written (the tang server is down: nothing was fetched either).
    let before = json_dump(&img);
    let mut deep = r#"{"pins":{"tpm2":{}}}"#.to_string();
    for _ in 0..4 {
        deep = format!(r#"{{"pins":{{"sss":{deep}}}}}"#);
    }
    for (cfg, why) in [
        (
            r#"{"t":0,"pins":{"tpm2":{}}}"#.to_string(),
            "invalid threshold (required: 1 <= 0 <= 1)",
        ),
        (
            format!(r#"{{"t":3,"pins":{{"tpm2":{{}},"tang":{{"url":"{url}"}}}}}}"#),
            "invalid threshold (required: 1 <= 3 <= 2)",
        ),
        (
            r#"{"t":1,"pins":{"yubikey":{}}}"#.to_string(),
            "the pin yubikey is not supported (tang, tpm2 and sss are)",
        ),
        (deep, "sss pins nested more than 4 deep"),
    ] {
        let r = lukskit(
            &["token", "bind-clevis", &dev, &img, "sss", &cfg],
            b"pass\n",
        );
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (
                1,
                "",
                format!("Invalid clevis sss configuration: {why}.\n").as_str()
            ),
            "{cfg}"
        );
    }
    // A server that does not answer: refused before the passphrase is asked.
    let r = lukskit(
        &["token", "bind-clevis", &dev, "-q", &img, "sss", &t1],
        b"pass\n",
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.starts_with(&format!(
            "Cannot bind the clevis sss pin: tang server {url}/adv"
        )),
        "{}",
        r.stderr
    );
    assert_eq!(json_dump(&img), before);
    nothing_left(&tpm);
}
