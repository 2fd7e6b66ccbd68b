//! systemd-tpm2 tokens against the real thing: a software TPM (`swtpm socket`, one per
//! test), volumes enrolled by Debian 12's `systemd-cryptenroll` (systemd 252, through
//! tpm2-tss's swtpm TCTI: `--tpm2-device=swtpm:path=SOCKET`), PCRs changed with tpm2-tools,
//! and lukskit unsealing the key from the same TPM in Rust (`--tpm2-device=swtpm:path=…`):
//!
//! - a token without PIN opens the volume without a prompt (test-passphrase and a FUSE
//!   mapping whose plaintext is what the passphrase mapping wrote);
//! - a PIN token opens with the right PIN; a wrong PIN costs exactly one dictionary-attack
//!   count, is not retried, and the passphrase is asked next;
//! - an extended PCR makes the token fall back to the passphrase with one line, without a
//!   PIN prompt and without a dictionary-attack count; `--token-only` then fails as
//!   cryptsetup does (exit 1);
//! - a missing or stopped TPM falls back with one line;
//! - an RSA primary key (systemd's legacy RSA template; systemd 252 only picks RSA on TPMs
//!   without ECC, so the sealed object is made with tpm2-tools here).
//!
//! Needs swtpm, tpm2-tools, libtss2-tcti-swtpm0, systemd-cryptenroll and cryptsetup
//! (scripts/test.sh installs them); fails without them unless `LUKSKIT_ALLOW_SKIP=1`.

mod common;
use common::crypttab;
use common::mapping::*;
use common::swtpm::Swtpm;
use common::*;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn tools(test: &str) -> bool {
    common::swtpm::tools_present(test)
        && have_tool(test, "tpm2_getcap")
        && have_tool(test, "systemd-cryptenroll")
        && have_cryptsetup(test)
}

/// A LUKS2 volume formatted by cryptsetup with passphrase `pass` in keyslot 0, and a
/// systemd-tpm2 token enrolled by `systemd-cryptenroll` (PCR 7, and a PIN when given) in
/// keyslot 1: the image path.
fn enrolled(dir: &Path, tpm: &Swtpm, pin: Option<&str>) -> String {
    let img = sparse(dir, "img", 32 << 20);
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, "-"]);
    cryptsetup(&args, b"pass").unwrap().ok("luksFormat");
    let mut cmd = Command::new("systemd-cryptenroll");
    cmd.arg(tpm.device_arg()).arg("--tpm2-pcrs=7");
    let mut env = vec![("PASSWORD", "pass")];
    if let Some(p) = pin {
        cmd.arg("--tpm2-with-pin=yes");
        env.push(("NEWPIN", p));
    }
    cmd.arg(&img);
    let r = run(cmd, b"", &env);
    assert_eq!(r.code, 0, "systemd-cryptenroll: {}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("New TPM2 token enrolled as key slot 1."),
        "{}",
        r.stderr
    );
    // systemd 252 leaves its sessions loaded when it talks to a TPM without a resource
    // manager (the swtpm socket); a kernel /dev/tpmrm0 would flush them at close.
    tpm.tools(&["tpm2_flushcontext", "-l"]);
    let tok = &json_dump(&img)["tokens"]["0"];
    assert_eq!(tok["type"], "systemd-tpm2", "{tok}");
    assert_eq!(tok["tpm2-pin"], pin.is_some(), "{tok}");
    img
}

fn read_mapping(m: &Mapping, len: usize) -> Vec<u8> {
    let mut f = std::fs::File::open(m.dev()).unwrap();
    let mut v = vec![0; len];
    f.read_exact(&mut v).unwrap();
    v
}

/// No TPM objects or sessions left behind by lukskit.
fn nothing_left(tpm: &Swtpm) {
    for what in ["handles-transient", "handles-loaded-session"] {
        let out = tpm.tools(&["tpm2_getcap", what]);
        assert_eq!(out.trim(), "", "{what} left in the TPM: {out}");
    }
}

const PCR_LINE: &str = "Token 0 (systemd-tpm2) cannot unlock: the current PCR values do not \
                        match the token's policy (PCRs changed since enrollment).\n";

#[test]
fn systemd_tpm2_token_opens_without_a_passphrase() {
    let test = "systemd_tpm2_token_opens_without_a_passphrase";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let img = enrolled(d.path(), &tpm, None);
    let dev = tpm.device_arg();
    // Empty standard input: a passphrase prompt would fail.
    for extra in [
        &[][..],
        &["--token-id", "0"][..],
        &["--token-type", "systemd-tpm2"][..],
        &["--token-only"][..],
    ] {
        let mut args = vec!["open", "--test-passphrase", "-v", &dev];
        args.extend_from_slice(extra);
        args.push(&img);
        let r = lukskit(&args, b"");
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (0, "Key slot 1 unlocked.\nCommand successful.\n", ""),
            "{extra:?}"
        );
    }
    nothing_left(&tpm);
    assert_eq!(tpm.lockout_counter(), 0);
    // Another token type: the TPM token is not tried, the passphrase is asked for.
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "-v",
            &dev,
            "--token-type",
            "clevis",
            &img,
        ],
        b"pass",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    // --disable-external-tokens: as cryptsetup without its plugin, the passphrase.
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "-v",
            &dev,
            "--disable-external-tokens",
            &img,
        ],
        b"pass",
    );
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);

    // luksAddKey --token-id: the token's passphrase unlocks for the new keyslot.
    common::token_adds_a_keyslot(d.path(), &img, &[&dev], |a| lukskit(a, b""));
    // crypttab: tpm2-device= becomes --tpm2-device, with systemd's 30 s wait for the TPM.
    let table = format!("vol {img} none luks,tpm2-device={}\n", tpm.tcti());
    let ct = write_file(d.path(), "crypttab", table.as_bytes());
    let r = lukskit(&["crypttab", "list", "--crypttab", &ct], b"").ok("crypttab list");
    let want = format!(
        "  command: lukskit open --type luks --tries 3 --tpm2-device {} --token-timeout 30 {img} vol",
        tpm.tcti()
    );
    assert!(
        r.stdout.lines().any(|l| l == want),
        "{want:?} not in\n{}",
        r.stdout
    );
    assert!(!r.stdout.contains("warning"), "{}", r.stdout);

    // Through a mapping: the plaintext written with the passphrase reads back when the
    // TPM opened it.
    if !capable(test) {
        return;
    }
    let data = pattern(1 << 20, 0x7e57_7e57);
    {
        let m = Mapping::new("tpm2w");
        lukskit(&["open", &img, &m.name, "--key-slot", "0"], b"pass").ok("open by passphrase");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(m.dev())
            .unwrap();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
        drop(f);
        lukskit(&["close", &m.name], b"").ok("close");
    }
    {
        let m = Mapping::new("tpm2r");
        let r = lukskit(&["open", &img, &m.name, "-v", &dev], b"").ok("open by token");
        assert!(r.stdout.contains("Key slot 1 unlocked."), "{}", r.stdout);
        assert_eq!(read_mapping(&m, data.len()), data);
        lukskit(&["close", &m.name], b"").ok("close");
    }
    // And by crypttab open, without a prompt (standard input is empty).
    {
        let m = Mapping::new("tpm2c");
        let table = format!("{} {img} none luks,tpm2-device={}\n", m.name, tpm.tcti());
        let ct = write_file(d.path(), "crypttab2", table.as_bytes());
        lukskit(&["crypttab", "open", "--crypttab", &ct, &m.name], b"").ok("crypttab open");
        assert_eq!(read_mapping(&m, data.len()), data);
        lukskit(&["close", &m.name], b"").ok("close");
    }
    nothing_left(&tpm);
}

#[test]
fn pin_token_opens_with_the_pin_and_a_wrong_pin_falls_back_once() {
    let test = "pin_token_opens_with_the_pin_and_a_wrong_pin_falls_back_once";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let img = enrolled(d.path(), &tpm, Some("4711"));
    let dev = tpm.device_arg();
    // The PIN is read where the passphrase would be (standard input, one line).
    let r = lukskit(&["open", "--test-passphrase", "-v", &dev, &img], b"4711\n");
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "Key slot 1 unlocked.\nCommand successful.\n", "")
    );
    assert_eq!(tpm.lockout_counter(), 0);
    // A wrong PIN: one line, one dictionary-attack count, no second PIN try; the next line
    // is the passphrase.
    let r = lukskit(
        &["open", "--test-passphrase", "-v", &dev, &img],
        b"1111\npass\n",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "Token 0 (systemd-tpm2) cannot unlock: wrong TPM2 PIN.\n"
    );
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(tpm.lockout_counter(), 1);
    // --token-only with a wrong PIN: cryptsetup's bad-passphrase failure (exit 2).
    let r = lukskit(
        &["open", "--test-passphrase", "--token-only", &dev, &img],
        b"2222\n",
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_eq!(tpm.lockout_counter(), 2);
    // No PIN at all (end of input): nothing is tried against the TPM's object.
    let r = lukskit(
        &["open", "--test-passphrase", "--token-only", &dev, &img],
        b"",
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(tpm.lockout_counter(), 2);
    nothing_left(&tpm);
    // On a terminal, the prompt is systemd's.
    if have_script(test) {
        let t = on_tty_prompted(
            &format!(
                "{} open --test-passphrase -v {dev} {img}",
                env!("CARGO_BIN_EXE_lukskit")
            ),
            &["4711"],
            Duration::from_secs(30),
        );
        assert!(
            t.contains("Please enter TPM2 PIN: ") && t.contains("Key slot 1 unlocked."),
            "{t}"
        );
    }
}

#[test]
fn changed_pcr_falls_back_to_the_passphrase_in_one_line() {
    let test = "changed_pcr_falls_back_to_the_passphrase_in_one_line";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let img = enrolled(d.path(), &tpm, None);
    let dev = tpm.device_arg();
    lukskit(&["open", "--test-passphrase", &dev, &img], b"").ok("before the PCR change");
    tpm.extend_pcr7();
    let r = lukskit(&["open", "--test-passphrase", "-v", &dev, &img], b"pass");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr, PCR_LINE);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    // --token-only: no usable token, as cryptsetup (exit 1, -ENOENT).
    let r = lukskit(
        &["open", "--test-passphrase", "--token-only", &dev, &img],
        b"",
    );
    assert_eq!((r.code, r.stderr.as_str()), (1, PCR_LINE));
    assert_eq!(tpm.lockout_counter(), 0);
    nothing_left(&tpm);
}

#[test]
fn changed_pcr_with_a_pin_token_asks_no_pin() {
    let test = "changed_pcr_with_a_pin_token_asks_no_pin";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let img = enrolled(d.path(), &tpm, Some("4711"));
    let dev = tpm.device_arg();
    tpm.extend_pcr7();
    // The only line of input is the passphrase: no PIN was read before the PCRs failed.
    let r = lukskit(&["open", "--test-passphrase", "-v", &dev, &img], b"pass\n");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr, PCR_LINE);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(tpm.lockout_counter(), 0);
    nothing_left(&tpm);
}

#[test]
fn missing_or_stopped_tpm_falls_back_to_the_passphrase() {
    let test = "missing_or_stopped_tpm_falls_back_to_the_passphrase";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let mut tpm = Swtpm::start(d.path());
    let img = enrolled(d.path(), &tpm, None);
    let dev = tpm.device_arg();
    tpm.stop();
    let r = lukskit(&["open", "--test-passphrase", "-v", &dev, &img], b"pass");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("Token 0 (systemd-tpm2) cannot unlock: no TPM2 device found (cannot connect to swtpm socket"),
        "{}",
        r.stderr
    );
    let missing = format!("--tpm2-device={}", d.path().join("no-tpmrm0").display());
    let r = lukskit(&["open", "--test-passphrase", &missing, &img], b"pass");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("Token 0 (systemd-tpm2) cannot unlock: no TPM2 device found")
            && r.stderr.lines().count() == 1,
        "{}",
        r.stderr
    );
    // --token-only: exit 1, as cryptsetup's plugin without a TPM ("requires additional
    // missing resource").
    let r = lukskit(
        &["open", "--test-passphrase", "--token-only", &missing, &img],
        b"",
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    // A device name lukskit cannot use is said as such.
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "--tpm2-device=mssim:host=x",
            &img,
        ],
        b"pass",
    );
    assert_eq!(r.code, 0);
    assert!(
        r.stderr.contains("unsupported TPM2 device name"),
        "{}",
        r.stderr
    );
}

/// `--token-timeout` (crypttab's `token-timeout=`): a TPM that appears while lukskit waits
/// unlocks the volume; without the option, or with a time that runs out first, the token
/// fails at once / after that time and the passphrase is asked.
#[test]
fn token_waits_for_a_tpm_that_appears_within_token_timeout() {
    let test = "token_waits_for_a_tpm_that_appears_within_token_timeout";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let mut tpm = Swtpm::start(d.path());
    let img = enrolled(d.path(), &tpm, None);
    let dev = tpm.device_arg();
    tpm.stop();
    let _ = std::fs::remove_file(&tpm.sock);
    // No wait by default, as cryptsetup: --token-only fails at once.
    let r = lukskit(
        &["open", "--test-passphrase", "--token-only", &dev, &img],
        b"",
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    // A time that runs out: the passphrase after about that long.
    let t0 = std::time::Instant::now();
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "-v",
            "--token-timeout",
            "1",
            &dev,
            &img,
        ],
        b"pass",
    );
    assert!(t0.elapsed() >= Duration::from_secs(1), "{:?}", t0.elapsed());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    // The TPM starts 1.5 s after lukskit; the token waits for it and unlocks keyslot 1.
    let dir = d.path().to_path_buf();
    let later = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        Swtpm::spawn(&dir)
    });
    let t0 = std::time::Instant::now();
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "--token-only",
            "-v",
            "--token-timeout",
            "30",
            &dev,
            &img,
        ],
        b"",
    );
    let started = later.join().unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 1 unlocked."), "{}", r.stdout);
    drop(started);
}

/// A secret sealed with tpm2-tools under `parent` (a context file or a persistent handle)
/// with a PCR 7 policy, as systemd seals it: the secret, `tpm2-blob` (TPM2B_PRIVATE then
/// TPM2B_PUBLIC) and the policy digest.
fn seal_with_tpm2_tools(tpm: &Swtpm, dir: &Path, parent: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let p = |n: &str| dir.join(n).display().to_string();
    tpm.tools(&["tpm2_startauthsession", "-S", &p("trial.ctx")]);
    tpm.tools(&[
        "tpm2_policypcr",
        "-Q",
        "-S",
        &p("trial.ctx"),
        "-l",
        "sha256:7",
        "-L",
        &p("policy"),
    ]);
    tpm.tools(&["tpm2_flushcontext", &p("trial.ctx")]);
    let secret = pattern(32, 0x5ec2e7);
    std::fs::write(p("secret"), &secret).unwrap();
    tpm.tools(&[
        "tpm2_create",
        "-Q",
        "-C",
        parent,
        "-g",
        "sha256",
        "-a",
        "fixedtpm|fixedparent",
        "-L",
        &p("policy"),
        "-i",
        &p("secret"),
        "-u",
        &p("obj.pub"),
        "-r",
        &p("obj.priv"),
    ]);
    tpm.tools(&["tpm2_flushcontext", "-t"]);
    let mut blob = std::fs::read(p("obj.priv")).unwrap();
    blob.extend(std::fs::read(p("obj.pub")).unwrap());
    (secret, blob, std::fs::read(p("policy")).unwrap())
}

/// A LUKS2 volume (passphrase `pass` in keyslot 0) whose keyslot 1 has the base64 of
/// `secret` as passphrase, as systemd makes it, and `token` (for keyslot 1) as token 0.
fn volume_with_token(dir: &Path, secret: &[u8], token: &serde_json::Value) -> String {
    use base64::Engine as _;
    let img = sparse(dir, "img", 32 << 20);
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, "-"]);
    cryptsetup(&args, b"pass").unwrap().ok("luksFormat");
    let pass = base64::engine::general_purpose::STANDARD.encode(secret);
    let newkey = write_file(dir, "newkey", pass.as_bytes());
    let mut args = vec!["luksAddKey", "-q", "--key-slot", "1"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, &newkey, "-d", "-"]);
    cryptsetup(&args, b"pass").unwrap().ok("luksAddKey");
    let tj = write_file(dir, "token.json", token.to_string().as_bytes());
    cryptsetup(&["token", "import", "--json-file", &tj, &img], b"")
        .unwrap()
        .ok("token import");
    img
}

fn b64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[test]
fn rsa_primary_key_token_opens() {
    let test = "rsa_primary_key_token_opens";
    if !tools(test) || !have_tool(test, "tpm2_create") {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let primary = d.path().join("primary.ctx").display().to_string();
    // systemd's legacy RSA primary template (tpm2-util.c: restricted decryption key,
    // AES-128-CFB, RSA 2048, empty unique) under the owner hierarchy.
    tpm.tools(&[
        "tpm2_createprimary",
        "-Q",
        "-C",
        "o",
        "-g",
        "sha256",
        "-G",
        "rsa2048:null:aes128cfb",
        "-a",
        "restricted|decrypt|fixedtpm|fixedparent|sensitivedataorigin|userwithauth",
        "-c",
        &primary,
    ]);
    let (secret, blob, policy) = seal_with_tpm2_tools(&tpm, d.path(), &primary);
    let token = serde_json::json!({
        "type": "systemd-tpm2",
        "keyslots": ["1"],
        "tpm2-blob": b64(&blob),
        "tpm2-pcrs": [7],
        "tpm2-pcr-bank": "sha256",
        "tpm2-primary-alg": "rsa",
        "tpm2-policy-hash": hex::encode(&policy),
        "tpm2-pin": false,
    });
    let img = volume_with_token(d.path(), &secret, &token);
    let dev = tpm.device_arg();
    let r = lukskit(&["open", "--test-passphrase", "-v", &dev, &img], b"");
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "Key slot 1 unlocked.\nCommand successful.\n", "")
    );
    nothing_left(&tpm);
    // The same token claiming an ECC primary does not load (another parent).
    let mut t2 = token.clone();
    t2["tpm2-primary-alg"] = "ecc".into();
    let tj2 = write_file(d.path(), "token2.json", t2.to_string().as_bytes());
    cryptsetup(
        &[
            "token",
            "import",
            "--json-file",
            &tj2,
            "--token-id",
            "0",
            "--token-replace",
            &img,
        ],
        b"",
    )
    .unwrap()
    .ok("token import");
    let r = lukskit(&["open", "--test-passphrase", &dev, &img], b"pass");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("Token 0 (systemd-tpm2) cannot unlock: TPM2 command TPM2_Load failed"),
        "{}",
        r.stderr
    );
    nothing_left(&tpm);
}

/// systemd 254 and later seal under a persistent SRK (0x81000001, the TCG provisioning
/// template with noDA) and store it as `tpm2-srk`, a tpm2-tss ESYS_TR serialization; here
/// tpm2-tools makes and serializes the SRK (`tpm2_readpublic -t`).
#[test]
fn persistent_srk_token_opens_and_a_replaced_srk_is_refused() {
    let test = "persistent_srk_token_opens_and_a_replaced_srk_is_refused";
    if !tools(test) || !have_tool(test, "tpm2_create") {
        return;
    }
    let d = tmp();
    let tpm = Swtpm::start(d.path());
    let p = |n: &str| d.path().join(n).display().to_string();
    let make_srk = |alg: &str| {
        let mut args = vec![
            "tpm2_createprimary",
            "-Q",
            "-C",
            "o",
            "-g",
            "sha256",
            "-G",
            alg,
            "-a",
            "restricted|decrypt|fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda",
        ];
        let ctx = p("srk.ctx");
        args.extend_from_slice(&["-c", &ctx]);
        tpm.tools(&args);
        tpm.tools(&[
            "tpm2_evictcontrol",
            "-Q",
            "-C",
            "o",
            "-c",
            &ctx,
            "0x81000001",
        ]);
        tpm.tools(&["tpm2_flushcontext", "-t"]);
        tpm.tools(&[
            "tpm2_readpublic",
            "-Q",
            "-c",
            "0x81000001",
            "-t",
            &p("srk.tr"),
        ]);
        std::fs::read(p("srk.tr")).unwrap()
    };
    let srk = make_srk("ecc256:null:aes128cfb");
    let (secret, blob, policy) = seal_with_tpm2_tools(&tpm, d.path(), "0x81000001");
    let token = serde_json::json!({
        "type": "systemd-tpm2",
        "keyslots": ["1"],
        "tpm2-blob": b64(&blob),
        "tpm2-pcrs": [7],
        "tpm2-pcr-bank": "sha256",
        "tpm2-primary-alg": "ecc",
        "tpm2-policy-hash": hex::encode(&policy),
        "tpm2-pin": false,
        "tpm2-srk": b64(&srk),
    });
    let img = volume_with_token(d.path(), &secret, &token);
    let dev = tpm.device_arg();
    let r = lukskit(&["open", "--test-passphrase", "-v", &dev, &img], b"");
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "Key slot 1 unlocked.\nCommand successful.\n", "")
    );
    nothing_left(&tpm);
    // The persistent key is still there (not flushed: it is not lukskit's).
    tpm.tools(&["tpm2_readpublic", "-Q", "-c", "0x81000001"]);
    // Another key at the SRK handle (the RSA SRK): refused before anything is loaded under
    // it.
    tpm.tools(&["tpm2_evictcontrol", "-Q", "-C", "o", "-c", "0x81000001"]);
    make_srk("rsa2048:null:aes128cfb");
    let r = lukskit(&["open", "--test-passphrase", &dev, &img], b"pass");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "Token 0 (systemd-tpm2) cannot unlock: unsupported systemd-tpm2 token: the storage \
         root key at 0x81000001 is not the one the token was sealed under.\n"
    );
    // No key at the handle at all.
    tpm.tools(&["tpm2_evictcontrol", "-Q", "-C", "o", "-c", "0x81000001"]);
    let r = lukskit(&["open", "--test-passphrase", &dev, &img], b"pass");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("no storage root key at 0x81000001"),
        "{}",
        r.stderr
    );
    nothing_left(&tpm);
}

/// The volume of [`enrolled`] as systemd 252 opens it without a token: the token's
/// `tpm2-blob`, base64-decoded, in a key file (mode 0600), the token removed from the header
/// (its keyslot kept). The key file's path.
fn tokenless(dir: &Path, img: &str) -> String {
    use base64::Engine as _;
    let tok = &json_dump(img)["tokens"]["0"];
    let blob = base64::engine::general_purpose::STANDARD
        .decode(tok["tpm2-blob"].as_str().unwrap())
        .unwrap();
    let path = write_file(dir, "sealed.blob", &blob);
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    cryptsetup(&["token", "remove", "--token-id", "0", img], b"")
        .unwrap()
        .ok("token remove");
    let j = json_dump(img);
    assert_eq!(j["tokens"], serde_json::json!({}), "{j}");
    assert!(j["keyslots"].get("1").is_some(), "{j}");
    path
}

/// crypttab's `tpm2-device=`, `tpm2-pcrs=`, `tpm2-pin=` for a volume without a token, as
/// systemd 252's systemd-cryptsetup reads them (the key field is the sealed object
/// systemd-cryptenroll made): opened without a prompt (with the PIN for a PIN object); after
/// a PCR change, one line in systemd-cryptsetup's words, no PIN asked, no dictionary-attack
/// count, and the passphrase; a wrong PIN, systemd's PIN line and the passphrase.
#[test]
fn crypttab_opens_a_tokenless_volume_with_a_tpm2_sealed_key_file() {
    let test = "crypttab_opens_a_tokenless_volume_with_a_tpm2_sealed_key_file";
    if !tools(test) || !capable(test) {
        return;
    }
    for pin in [None, Some("4711")] {
        let d = tmp();
        let tpm = Swtpm::start(d.path());
        let img = enrolled(d.path(), &tpm, pin);
        let blob = tokenless(d.path(), &img);
        // One entry per open below (a closed mapping's name is not reused at once).
        let tag = if pin.is_some() { "pin" } else { "seal" };
        let [m, bad, pcr] = ["", "bad", "pcr"].map(|s| Mapping::new(&format!("ct{tag}{s}")));
        let pin_opt = if pin.is_some() { ",tpm2-pin=yes" } else { "" };
        let table: String = [&m, &bad, &pcr]
            .iter()
            .map(|m| {
                format!(
                    "{} {img} {blob} luks,tpm2-device={},tpm2-pcrs=7{pin_opt}\n",
                    m.name,
                    tpm.tcti()
                )
            })
            .collect();
        let ct = write_file(d.path(), "crypttab", table.as_bytes());
        // list: the key file is the sealed key; open gets no --key-file and no tokens.
        let r = lukskit(&["crypttab", "list", "--crypttab", &ct], b"").ok("crypttab list");
        let want_key = format!(
            "  key:     TPM2-sealed key file {blob}, unsealed on TPM {} (PCRs 7{}), else passphrase asked",
            tpm.tcti(),
            if pin.is_some() { ", with PIN" } else { "" }
        );
        assert!(
            r.stdout.lines().any(|l| l == want_key),
            "{want_key:?} not in\n{}",
            r.stdout
        );
        assert!(!r.stdout.contains("--key-file"), "{}", r.stdout);
        assert!(
            r.stdout.contains("--disable-external-tokens"),
            "{}",
            r.stdout
        );
        assert!(!r.stdout.contains("warning"), "{}", r.stdout);

        // Unsealed: keyslot 1 (the TPM's) opens; standard input holds the PIN or nothing.
        let stdin = pin.map(|p| format!("{p}\n")).unwrap_or_default();
        let r = crypttab::open_check_close(&ct, &m.name, &[], stdin.as_bytes(), 1, "");
        assert!(
            r.stdout.contains(&format!("{}: opened.", m.name)),
            "{}",
            r.stdout
        );
        assert_eq!(tpm.lockout_counter(), 0);

        if pin.is_some() {
            // A wrong PIN: systemd's line, one dictionary-attack count, then the passphrase.
            crypttab::open_check_close(
                &ct,
                &bad.name,
                &[],
                b"0000\npass\n",
                0,
                "TPM2 PIN unlock failed, falling back to traditional unlocking.\n",
            );
            assert_eq!(tpm.lockout_counter(), 1);
            // (forgotten after a second: Swtpm::start set the recovery time)
            std::thread::sleep(Duration::from_millis(1500));
        }

        // PCR 7 changed: one line, no PIN asked (the first line is the passphrase), no
        // dictionary-attack count.
        tpm.extend_pcr7();
        crypttab::open_check_close(
            &ct,
            &pcr.name,
            &[],
            b"pass\n",
            0,
            "TPM2 operation failed, falling back to traditional unlocking: the current PCR \
             values do not match the token's policy (PCRs changed since enrollment).\n",
        );
        assert_eq!(tpm.lockout_counter(), 0);
        nothing_left(&tpm);
    }
}
