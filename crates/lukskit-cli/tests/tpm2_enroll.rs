//! `lukskit token enroll-tpm2` and `token unenroll` against systemd 252 and tpm2-tools, on a
//! software TPM (`swtpm socket`, one per test):
//!
//! - the token and keyslot lukskit writes have the shape `systemd-cryptenroll
//!   --tpm2-device=… --tpm2-pcrs=7+8` gives them on the same TPM (the token's fields, the
//!   keyslot's PBKDF), and cryptsetup 2.6.1 with systemd's token plugin dumps the token;
//! - tpm2-tools unseal the blob with the policy systemd's unlock replays (a PCR policy
//!   session over the token's PCRs and bank; PolicyAuthValue and the SHA-256 of the PIN for
//!   PIN tokens), the policy digest equals `tpm2-policy-hash`, and cryptsetup opens the
//!   keyslot with the base64 of the unsealed bytes;
//! - `systemd-cryptenroll --wipe-slot=tpm2` removes lukskit's keyslot and token;
//! - lukskit opens the volume with the token (no prompt; the PIN where one was enrolled) and
//!   `token unenroll` removes the token and its keyslot, while `token remove` keeps the
//!   keyslot as cryptsetup's does.
//!
//! systemd 252's token plugin for cryptsetup finds TPMs only under /sys/class/tpmrm (it
//! ignores `SYSTEMD_TPM2_DEVICE`), so it cannot reach a socket TPM on the host: its unlock
//! is replayed with tpm2-tools instead. Needs swtpm, tpm2-tools, libtss2-tcti-swtpm0,
//! systemd-cryptenroll and cryptsetup; fails without them unless `LUKSKIT_ALLOW_SKIP=1`.

mod common;
use common::mapping::*;
use common::swtpm::Swtpm;
use common::*;
use std::path::Path;
use std::process::Command;

fn tools(test: &str) -> bool {
    common::swtpm::tools_present(test)
        && have_tool(test, "tpm2_unseal")
        && have_tool(test, "systemd-cryptenroll")
        && have_cryptsetup(test)
}

/// A LUKS2 volume formatted by cryptsetup with passphrase `pass` in keyslot 0: its path and
/// a key file holding `pass`.
fn volume(dir: &Path, name: &str) -> (String, String) {
    let img = sparse(dir, name, 32 << 20);
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, "-"]);
    cryptsetup(&args, b"pass").unwrap().ok("luksFormat");
    (img, write_file(dir, "passfile", b"pass"))
}

/// The bytes tpm2-tools unseal from `token` (a systemd-tpm2 token) the way systemd's unlock
/// does it: the transient ECC primary key from systemd's template, the blob loaded under it,
/// a policy session with PolicyPCR (and PolicyAuthValue with `pin`), TPM2_Unseal. Also the
/// digest of that policy session.
fn unseal_with_tpm2_tools(
    tpm: &Swtpm,
    dir: &Path,
    token: &serde_json::Value,
    pin: Option<&str>,
) -> (Vec<u8>, Vec<u8>) {
    use base64::Engine as _;
    let p = |n: &str| dir.join(n).display().to_string();
    let blob = base64::engine::general_purpose::STANDARD
        .decode(token["tpm2-blob"].as_str().unwrap())
        .unwrap();
    let n = usize::from(u16::from_be_bytes([blob[0], blob[1]])) + 2;
    std::fs::write(p("obj.priv"), &blob[..n]).unwrap();
    std::fs::write(p("obj.pub"), &blob[n..]).unwrap();
    assert_eq!(token["tpm2-primary-alg"], "ecc");
    tpm.tools(&[
        "tpm2_createprimary",
        "-Q",
        "-C",
        "o",
        "-g",
        "sha256",
        "-G",
        "ecc",
        "-c",
        &p("primary.ctx"),
    ]);
    // Without a resource manager (the swtpm socket) tpm2-tools leave their objects loaded;
    // swtpm holds three: flush them, the tools load the saved contexts again.
    tpm.tools(&["tpm2_flushcontext", "-t"]);
    tpm.tools(&[
        "tpm2_load",
        "-Q",
        "-C",
        &p("primary.ctx"),
        "-u",
        &p("obj.pub"),
        "-r",
        &p("obj.priv"),
        "-c",
        &p("obj.ctx"),
    ]);
    tpm.tools(&["tpm2_flushcontext", "-t"]);
    let pcrs: Vec<String> = token["tpm2-pcrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    let sel = format!(
        "{}:{}",
        token["tpm2-pcr-bank"].as_str().unwrap(),
        pcrs.join(",")
    );
    tpm.tools(&[
        "tpm2_startauthsession",
        "--policy-session",
        "-S",
        &p("session.ctx"),
    ]);
    tpm.tools(&[
        "tpm2_policypcr",
        "-Q",
        "-S",
        &p("session.ctx"),
        "-l",
        &sel,
        "-L",
        &p("policy"),
    ]);
    let mut auth = format!("session:{}", p("session.ctx"));
    if let Some(pin) = pin {
        tpm.tools(&[
            "tpm2_policyauthvalue",
            "-Q",
            "-S",
            &p("session.ctx"),
            "-L",
            &p("policy"),
        ]);
        use sha2::Digest;
        auth.push_str(&format!(
            "+hex:{}",
            hex::encode(sha2::Sha256::digest(pin.as_bytes()))
        ));
    }
    tpm.tools(&[
        "tpm2_unseal",
        "-c",
        &p("obj.ctx"),
        "-p",
        &auth,
        "-o",
        &p("unsealed"),
    ]);
    tpm.tools(&["tpm2_flushcontext", &p("session.ctx")]);
    tpm.tools(&["tpm2_flushcontext", "-t"]);
    (
        std::fs::read(p("unsealed")).unwrap(),
        std::fs::read(p("policy")).unwrap(),
    )
}

/// The parts of keyslot `slot` systemd-cryptenroll chooses (PBKDF and AF).
fn keyslot_shape(json: &serde_json::Value, slot: &str) -> serde_json::Value {
    let k = &json["keyslots"][slot];
    serde_json::json!({
        "kdf": {"type": k["kdf"]["type"], "hash": k["kdf"]["hash"],
                "iterations": k["kdf"]["iterations"]},
        "af": k["af"],
        "key_size": k["key_size"],
    })
}

fn sorted_keys(v: &serde_json::Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[test]
fn enrolled_token_is_what_systemd_cryptenroll_makes_and_unseals_as_systemd_unseals() {
    let test = "enrolled_token_is_what_systemd_cryptenroll_makes_and_unseals_as_systemd_unseals";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let dev = tpm.device_arg();
    // A PCR that is not all zeros, so the policy depends on the value.
    tpm.extend_pcr7();

    // systemd's enrolment, for comparison.
    let (theirs, _) = volume(d.path(), "theirs");
    let mut cmd = Command::new("systemd-cryptenroll");
    cmd.arg(&dev).arg("--tpm2-pcrs=7+8").arg(&theirs);
    let r = run(cmd, b"", &[("PASSWORD", "pass")]);
    assert_eq!(r.code, 0, "systemd-cryptenroll: {}{}", r.stdout, r.stderr);
    tpm.tools(&["tpm2_flushcontext", "-l"]);
    let their_json = json_dump(&theirs);

    let (img, passfile) = volume(d.path(), "ours");
    let r = lukskit(
        &[
            "token",
            "enroll-tpm2",
            &dev,
            "--tpm2-pcrs=7+8",
            "-d",
            &passfile,
            &img,
        ],
        b"",
    );
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "", "New TPM2 token enrolled as key slot 1.\n"),
    );
    let ours = json_dump(&img);
    let (tok, their_tok) = (&ours["tokens"]["0"], &their_json["tokens"]["0"]);
    assert_eq!(
        sorted_keys(tok),
        sorted_keys(their_tok),
        "{tok}\n{their_tok}"
    );
    for f in [
        "type",
        "keyslots",
        "tpm2-pcrs",
        "tpm2-pcr-bank",
        "tpm2-primary-alg",
        "tpm2-pin",
        // Same PCR values, same policy: the same digest.
        "tpm2-policy-hash",
    ] {
        assert_eq!(tok[f], their_tok[f], "{f}");
    }
    assert_eq!(keyslot_shape(&ours, "1"), keyslot_shape(&their_json, "1"));
    // cryptsetup with systemd's token plugin reads the token as systemd's.
    let dump = cryptsetup(&["luksDump", &img], b"").unwrap().ok("luksDump");
    assert!(
        dump.stdout
            .contains("  0: systemd-tpm2\n\ttpm2-hash-pcrs:   7+8\n\ttpm2-pcr-bank:    sha256\n"),
        "{}",
        dump.stdout
    );

    // systemd's unlock, replayed with tpm2-tools: the secret's base64 opens keyslot 1.
    let (secret, policy) = unseal_with_tpm2_tools(&tpm, d.path(), tok, None);
    assert_eq!(secret.len(), 32);
    assert_eq!(
        hex::encode(policy),
        tok["tpm2-policy-hash"].as_str().unwrap()
    );
    let pass = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&secret)
    };
    let r = cryptsetup(
        &["open", "--test-passphrase", "--key-slot", "1", "-v", &img],
        pass.as_bytes(),
    )
    .unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 1 unlocked."), "{}", r.stdout);

    // lukskit unlocks with it, no prompt.
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "--token-only",
            "-v",
            &dev,
            &img,
        ],
        b"",
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "Key slot 1 unlocked.\nCommand successful.\n"),
        "{}",
        r.stderr
    );
    // Nothing left loaded in the TPM by the enrolment or the unlock.
    for what in ["handles-transient", "handles-loaded-session"] {
        assert_eq!(tpm.tools(&["tpm2_getcap", what]).trim(), "", "{what}");
    }

    // systemd-cryptenroll --wipe-slot=tpm2 removes lukskit's keyslot and token.
    let mut cmd = Command::new("systemd-cryptenroll");
    cmd.arg("--wipe-slot=tpm2").arg(&img);
    let r = run(cmd, b"", &[("PASSWORD", "pass")]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let after = json_dump(&img);
    assert_eq!(after["tokens"], serde_json::json!({}));
    assert_eq!(keyslot_ids(&after), vec!["0"]);
}

#[test]
fn pin_token_unseals_with_the_pins_hash_and_opens_with_the_pin() {
    let test = "pin_token_unseals_with_the_pins_hash_and_opens_with_the_pin";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let dev = tpm.device_arg();
    let (img, _) = volume(d.path(), "img");
    // The passphrase, then the PIN, one line each from standard input; SHA-1 bank and no
    // PCR but 7 (the default).
    let r = lukskit(
        &[
            "token",
            "enroll-tpm2",
            &dev,
            "--tpm2-with-pin=yes",
            "--tpm2-pcr-bank=sha1",
            "--key-slot",
            "3",
            &img,
        ],
        b"pass\n1234\n",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("enrolled as key slot 3."), "{}", r.stderr);
    let tok = &json_dump(&img)["tokens"]["0"];
    assert_eq!(tok["tpm2-pin"], true);
    assert_eq!(tok["tpm2-pcrs"], serde_json::json!([7]));
    assert_eq!(tok["tpm2-pcr-bank"], "sha1");
    assert_eq!(tok["keyslots"], serde_json::json!(["3"]));
    let (secret, policy) = unseal_with_tpm2_tools(&tpm, d.path(), tok, Some("1234"));
    assert_eq!(
        hex::encode(policy),
        tok["tpm2-policy-hash"].as_str().unwrap()
    );
    let pass = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&secret)
    };
    cryptsetup(
        &["open", "--test-passphrase", "--key-slot", "3", &img],
        pass.as_bytes(),
    )
    .unwrap()
    .ok("the unsealed secret opens keyslot 3");
    // lukskit: the PIN where the passphrase would be.
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "--token-only",
            "-v",
            &dev,
            &img,
        ],
        b"1234\n",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 3 unlocked."), "{}", r.stdout);
    assert_eq!(tpm.lockout_counter(), 0);
}

#[test]
fn unenroll_removes_token_and_keyslot_and_token_remove_keeps_the_keyslot() {
    let test = "unenroll_removes_token_and_keyslot_and_token_remove_keeps_the_keyslot";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let dev = tpm.device_arg();
    let (img, passfile) = volume(d.path(), "img");
    for _ in 0..2 {
        lukskit(
            &[
                "token",
                "enroll-tpm2",
                &dev,
                "--tpm2-pcrs=",
                "-d",
                &passfile,
                &img,
            ],
            b"",
        )
        .ok("enroll-tpm2");
    }
    let j = json_dump(&img);
    assert_eq!(keyslot_ids(&j), vec!["0", "1", "2"]);
    assert_eq!(j["tokens"]["0"]["tpm2-pcrs"], serde_json::json!([]));
    // cryptsetup's token remove: the token goes, its keyslot stays.
    lukskit(&["token", "remove", "--token-id", "1", &img], b"").ok("token remove");
    let j = json_dump(&img);
    assert_eq!(keyslot_ids(&j), vec!["0", "1", "2"]);
    assert!(j["tokens"].get("1").is_none());
    // unenroll: token 0 and its keyslot 1.
    let r = lukskit(&["token", "unenroll", "-v", "--token-id", "0", &img], b"");
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (
            0,
            "Token 0 removed.\nKey slot 1 removed.\nCommand successful.\n"
        ),
        "{}",
        r.stderr
    );
    let j = json_dump(&img);
    assert_eq!(keyslot_ids(&j), vec!["0", "2"]);
    assert_eq!(j["tokens"], serde_json::json!({}));
    // cryptsetup agrees the volume is whole, and keyslot 0 opens.
    cryptsetup(
        &["open", "--test-passphrase", "--key-slot", "0", &img],
        b"pass",
    )
    .unwrap()
    .ok("keyslot 0");
    // The last keyslot is never removed: a token for keyslot 0 alone.
    let tj = write_file(
        d.path(),
        "t.json",
        br#"{"type":"luks2-keyring","keyslots":["0"],"key_description":"x"}"#,
    );
    lukskit(&["token", "import", "--json-file", &tj, &img], b"").ok("token import");
    cryptsetup(&["luksKillSlot", "-q", &img, "2"], b"pass")
        .unwrap()
        .ok("luksKillSlot 2");
    let r = lukskit(
        &["token", "unenroll", "--token-type", "luks2-keyring", &img],
        b"",
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("Refusing to remove the last keyslots"),
        "{}",
        r.stderr
    );
    assert_eq!(keyslot_ids(&json_dump(&img)), vec!["0"]);
}

/// `clevis luks pass -d IMG -s SLOT` through the software TPM: what clevis decrypts.
fn clevis_luks_pass(tpm: &Swtpm, img: &str, slot: &str) -> Run {
    let mut cmd = Command::new("clevis");
    cmd.args(["luks", "pass", "-d", img, "-s", slot]);
    run(cmd, b"", &[("TPM2TOOLS_TCTI", &tpm.tcti())])
}

#[test]
fn bind_clevis_tpm2_makes_what_clevis_decrypts() {
    let test = "bind_clevis_tpm2_makes_what_clevis_decrypts";
    if !tools(test) || !have_tool(test, "clevis-decrypt-tpm2") {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let dev = tpm.device_arg();
    let (img, passfile) = volume(d.path(), "img");
    for (slot, cfg) in [
        ("1", r#"{"pcr_bank":"sha256","pcr_ids":"7"}"#),
        // No policy: this TPM only.
        ("2", "{}"),
    ] {
        let r = lukskit(
            &[
                "token",
                "bind-clevis",
                &dev,
                "-d",
                &passfile,
                &img,
                "tpm2",
                cfg,
            ],
            b"",
        );
        assert_eq!(r.code, 0, "{cfg}: {}", r.stderr);
        // clevis decrypts it with tpm2-tools, and the passphrase opens that keyslot.
        let p = clevis_luks_pass(&tpm, &img, slot);
        assert_eq!(p.code, 0, "clevis luks pass -s {slot}: {}", p.stderr);
        cryptsetup(
            &["open", "--test-passphrase", "--key-slot", slot, &img],
            p.stdout.as_bytes(),
        )
        .unwrap()
        .ok("clevis' passphrase opens the keyslot");
    }
    // clevis lists them as its own bindings.
    let mut cmd = Command::new("clevis");
    cmd.args(["luks", "list", "-d", &img]);
    let r = run(cmd, b"", &[]);
    assert_eq!(
        r.stdout,
        "1: tpm2 '{\"hash\":\"sha256\",\"key\":\"ecc\",\"pcr_bank\":\"sha256\",\"pcr_ids\":\"7\"}'\n\
         2: tpm2 '{\"hash\":\"sha256\",\"key\":\"ecc\"}'\n",
        "{}",
        r.stderr
    );
    // lukskit opens with either, no prompt; after PCR 7 changes only the one without policy
    // is left, for clevis and for lukskit.
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "--token-only",
            "-v",
            &dev,
            &img,
        ],
        b"",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 1 unlocked."), "{}", r.stdout);
    tpm.extend_pcr7();
    assert_ne!(clevis_luks_pass(&tpm, &img, "1").code, 0);
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "--token-only",
            "-v",
            &dev,
            &img,
        ],
        b"",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 2 unlocked."), "{}", r.stdout);
    // Unsupported pins and configurations are refused before anything is asked.
    for (pin, cfg) in [
        ("sss", "{}"),
        ("tpm2", r#"{"key":"rsa"}"#),
        ("tpm2", r#"{"pcr_ids":"24"}"#),
        ("tpm2", "[]"),
    ] {
        let r = lukskit(&["token", "bind-clevis", &dev, &img, pin, cfg], b"");
        assert_eq!(r.code, 1, "{pin} {cfg}: {}", r.stderr);
    }
    assert_eq!(keyslot_ids(&json_dump(&img)), vec!["0", "1", "2"]);
}

#[test]
fn locked_out_tpm_falls_back_to_the_passphrase_in_one_line() {
    let test = "locked_out_tpm_falls_back_to_the_passphrase_in_one_line";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let dev = tpm.device_arg();
    let (img, _) = volume(d.path(), "img");
    lukskit(
        &["token", "enroll-tpm2", &dev, "--tpm2-with-pin=yes", &img],
        b"pass\n1234\n",
    )
    .ok("enroll-tpm2 with a PIN");
    // One failure locks the TPM out, for ten minutes.
    tpm.tools(&[
        "tpm2_dictionarylockout",
        "-s",
        "-n",
        "1",
        "-t",
        "600",
        "-l",
        "600",
    ]);
    let r = lukskit(
        &["open", "--test-passphrase", "-v", &dev, &img],
        b"0000\npass\n",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "Token 0 (systemd-tpm2) cannot unlock: wrong TPM2 PIN.\n"
    );
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(tpm.lockout_counter(), 1);
    // Locked out now: the TPM refuses to load the sealed object under its primary key (a
    // DA-protected object) before any PIN is asked; one line, the passphrase (the only line
    // of input), and no further count.
    let r = lukskit(&["open", "--test-passphrase", "-v", &dev, &img], b"pass\n");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "Token 0 (systemd-tpm2) cannot unlock: the TPM2 is in dictionary-attack lockout.\n"
    );
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(tpm.lockout_counter(), 1);
    // --token-only: no passphrase, a failure (exit 1: no usable token).
    let r = lukskit(
        &["open", "--test-passphrase", "--token-only", &dev, &img],
        b"",
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
}
