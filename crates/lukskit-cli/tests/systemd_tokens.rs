//! systemd's other token types against the real thing (Debian 12: systemd 252):
//!
//! - `systemd-pkcs11`: a SoftHSM2 token (its own `SOFTHSM2_CONF` per test) holding an RSA key
//!   pair and its certificate (made with opensc's pkcs11-tool and GnuTLS' certtool), a
//!   volume enrolled by `systemd-cryptenroll --pkcs11-token-uri=…`, opened by lukskit through
//!   p11-kit's proxy module (what systemd loads) or the URI's `module-path=`: with the PIN,
//!   with a wrong PIN (one line, the passphrase next), without the token (one line);
//! - `systemd-recovery`: the recovery key `systemd-cryptenroll --recovery-key` prints opens
//!   the volume as a passphrase;
//! - `systemd-fido2`: not supported, one line and the passphrase;
//! - `luksDump` of all four types equals cryptsetup 2.6.1's with systemd's token plugins
//!   (installed with Debian's systemd), and without them (`--disable-external-tokens`).
//!
//! Needs softhsm2, opensc, gnutls-bin, p11-kit-modules, systemd-cryptenroll and cryptsetup
//! (scripts/test.sh installs them); fails without them unless `LUKSKIT_ALLOW_SKIP=1`.

mod common;
use common::crypttab;
use common::mapping::{capable, have_tool, Mapping};
use common::*;
use std::path::Path;
use std::process::Command;

const SOFTHSM: &str = "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so";
const PROXY: &str = "/usr/lib/x86_64-linux-gnu/p11-kit-proxy.so";

fn pkcs11_tools(test: &str) -> bool {
    for (p, pkg) in [(SOFTHSM, "softhsm2"), (PROXY, "p11-kit-modules")] {
        if !Path::new(p).exists() {
            skip_or_fail(test, &format!("{p} is missing (apt-get install {pkg})"));
            return false;
        }
    }
    have_tool(test, "softhsm2-util")
        && have_tool(test, "pkcs11-tool")
        && have_tool(test, "certtool")
        && have_tool(test, "systemd-cryptenroll")
        && have_cryptsetup(test)
}

/// A SoftHSM2 token store in `dir`: the `SOFTHSM2_CONF` to give every tool.
struct Hsm {
    conf: String,
}

impl Hsm {
    fn env(&self) -> [(&str, &str); 1] {
        [("SOFTHSM2_CONF", self.conf.as_str())]
    }

    /// A token store with no token.
    fn empty(dir: &Path) -> Hsm {
        let store = dir.join("hsm");
        std::fs::create_dir_all(&store).unwrap();
        let conf = write_file(
            dir,
            "softhsm2.conf",
            format!(
                "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
                store.display()
            )
            .as_bytes(),
        );
        Hsm { conf }
    }

    /// A token labelled `label` (user PIN 1234) with an RSA 2048 key pair and a self-signed
    /// certificate for it, all with id 01.
    fn with_key(dir: &Path, label: &str) -> Hsm {
        let h = Hsm::empty(dir);
        let tool = |prog: &str, args: &[&str], extra_env: &[(&str, &str)]| {
            let mut cmd = Command::new(prog);
            cmd.args(args);
            let mut env = h.env().to_vec();
            env.extend_from_slice(extra_env);
            let r = run(cmd, b"", &env);
            assert_eq!(r.code, 0, "{prog} {args:?}: {}{}", r.stdout, r.stderr);
        };
        tool(
            "softhsm2-util",
            &[
                "--init-token",
                "--free",
                "--label",
                label,
                "--so-pin",
                "5678",
                "--pin",
                "1234",
            ],
            &[],
        );
        let p11 = [
            "--module",
            SOFTHSM,
            "--token-label",
            label,
            "--login",
            "--pin",
            "1234",
        ];
        let mut args = p11.to_vec();
        args.extend_from_slice(&[
            "--keypairgen",
            "--key-type",
            "rsa:2048",
            "--id",
            "01",
            "--label",
            "key",
        ]);
        tool("pkcs11-tool", &args, &[]);
        let tmpl = write_file(
            dir,
            "cert.tmpl",
            b"cn = lukskit test\nexpiration_days = 3650\nencryption_key\n",
        );
        let pem = dir.join("cert.pem").display().to_string();
        let key_uri = format!("pkcs11:token={label};id=%01;type=private");
        tool(
            "certtool",
            &[
                "--generate-self-signed",
                "--load-privkey",
                &key_uri,
                "--template",
                &tmpl,
                "--outfile",
                &pem,
            ],
            &[("GNUTLS_PIN", "1234")],
        );
        let der = dir.join("cert.der").display().to_string();
        tool(
            "certtool",
            &[
                "--certificate-info",
                "--infile",
                &pem,
                "--outder",
                "--outfile",
                &der,
            ],
            &[],
        );
        let mut args = p11.to_vec();
        args.extend_from_slice(&[
            "--write-object",
            &der,
            "--type",
            "cert",
            "--id",
            "01",
            "--label",
            "key",
        ]);
        tool("pkcs11-tool", &args, &[]);
        h
    }

    fn lukskit(&self, args: &[&str], stdin: &[u8]) -> Run {
        lukskit_env(args, stdin, &self.env())
    }
}

/// A LUKS2 volume (passphrase "pass" in keyslot 0) with a systemd-pkcs11 token enrolled by
/// `systemd-cryptenroll --pkcs11-token-uri=URI` (keyslot 1, token 0).
fn pkcs11_enrolled(dir: &Path, hsm: &Hsm, uri: &str) -> String {
    let img = sparse(dir, "img", 32 << 20);
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, "-"]);
    cryptsetup(&args, b"pass").unwrap().ok("luksFormat");
    let mut cmd = Command::new("systemd-cryptenroll");
    cmd.arg(format!("--pkcs11-token-uri={uri}")).arg(&img);
    let mut env = hsm.env().to_vec();
    env.extend_from_slice(&[("PASSWORD", "pass"), ("PIN", "1234")]);
    let r = run(cmd, b"", &env);
    assert_eq!(r.code, 0, "systemd-cryptenroll: {}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("New PKCS#11 token enrolled as key slot 1."),
        "{}",
        r.stderr
    );
    let tok = &json_dump(&img)["tokens"]["0"];
    assert_eq!(tok["type"], "systemd-pkcs11", "{tok}");
    img
}

const OPENED_BY_TOKEN: (i32, &str, &str) = (0, "Key slot 1 unlocked.\nCommand successful.\n", "");

#[test]
fn pkcs11_token_opens_with_its_pin() {
    let test = "pkcs11_token_opens_with_its_pin";
    if !pkcs11_tools(test) {
        return;
    }
    let d = tmp();
    let hsm = Hsm::with_key(d.path(), "lukskit");
    let img = pkcs11_enrolled(d.path(), &hsm, "pkcs11:token=lukskit;id=%01");
    // The PIN is read where the passphrase would be (one line of standard input).
    for extra in [
        &[][..],
        &["--token-only"][..],
        &["--token-id", "0"][..],
        &["--token-type", "systemd-pkcs11"][..],
    ] {
        let mut args = vec!["open", "--test-passphrase", "-v"];
        args.extend_from_slice(extra);
        args.push(&img);
        let r = hsm.lukskit(&args, b"1234\n");
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            OPENED_BY_TOKEN,
            "{extra:?}"
        );
    }
    // --disable-external-tokens: the passphrase, as cryptsetup without its plugin.
    let r = hsm.lukskit(
        &[
            "open",
            "--test-passphrase",
            "-v",
            "--disable-external-tokens",
            &img,
        ],
        b"pass\n",
    );
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    // The key through the module the URI names (module-path=), and a URI naming the
    // certificate (systemd 252 keeps type=cert as given; lukskit looks for its key pair as
    // newer systemd does).
    for uri in [
        format!("pkcs11:token=lukskit;id=%01?module-path={SOFTHSM}"),
        "pkcs11:token=lukskit;object=key;type=cert".to_string(),
    ] {
        rewrite_luks2_json(&img, |j| {
            j["tokens"]["0"]["pkcs11-uri"] = uri.clone().into()
        });
        let r = hsm.lukskit(&["open", "--test-passphrase", "-v", &img], b"1234\n");
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            OPENED_BY_TOKEN,
            "{uri}"
        );
    }
    // luksAddKey --token-id: the token's passphrase opens for the new keyslot.
    common::token_adds_a_keyslot(d.path(), &img, &[], |a| hsm.lukskit(a, b"1234\n"));
    // A mapping opened with the PIN shows what the passphrase's mapping wrote.
    if capable(test) {
        let data = pattern(1 << 16, 0x9c11);
        {
            let m = Mapping::new("p11w");
            lukskit(&["open", &img, &m.name, "--key-slot", "0"], b"pass").ok("open by passphrase");
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(m.dev())
                .unwrap();
            std::io::Write::write_all(&mut f, &data).unwrap();
            f.sync_all().unwrap();
            lukskit(&["close", &m.name], b"").ok("close");
        }
        let m = Mapping::new("p11r");
        let r = hsm
            .lukskit(&["open", "-v", &img, &m.name], b"1234\n")
            .ok("open by PIN");
        assert!(r.stdout.contains("Key slot 1 unlocked."), "{}", r.stdout);
        let mut back = vec![0; data.len()];
        std::io::Read::read_exact(&mut std::fs::File::open(m.dev()).unwrap(), &mut back).unwrap();
        assert_eq!(back, data);
        lukskit(&["close", &m.name], b"").ok("close");
    }
    // On a terminal, the prompt is systemd-cryptsetup's.
    if have_script(test) {
        let t = on_tty_prompted(
            &format!(
                "SOFTHSM2_CONF={} {} open --test-passphrase -v {img}",
                hsm.conf,
                env!("CARGO_BIN_EXE_lukskit")
            ),
            &["1234"],
            std::time::Duration::from_secs(30),
        );
        let prompt =
            format!("Please enter PIN for security token 'lukskit' in order to unlock {img}: ");
        assert!(
            t.contains(&prompt) && t.contains("Key slot 1 unlocked."),
            "{t}"
        );
    }
}

#[test]
fn pkcs11_wrong_pin_or_missing_token_falls_back_to_the_passphrase() {
    let test = "pkcs11_wrong_pin_or_missing_token_falls_back_to_the_passphrase";
    if !pkcs11_tools(test) {
        return;
    }
    let d = tmp();
    let hsm = Hsm::with_key(d.path(), "lukskit");
    let img = pkcs11_enrolled(d.path(), &hsm, "pkcs11:token=lukskit;id=%01");
    // A wrong PIN: one line, not asked again; the next line is the passphrase.
    let r = hsm.lukskit(&["open", "--test-passphrase", "-v", &img], b"9999\npass\n");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(
        r.stderr,
        "Token 0 (systemd-pkcs11) cannot unlock: wrong PIN for security token 'lukskit'.\n"
    );
    // --token-only with a wrong PIN: cryptsetup's bad-passphrase failure (exit 2); with no
    // PIN at all (end of input): exit 1.
    let r = hsm.lukskit(
        &["open", "--test-passphrase", "--token-only", &img],
        b"9999\n",
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let r = hsm.lukskit(&["open", "--test-passphrase", "--token-only", &img], b"");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    // The token is not there (another token store): one line, no PIN asked.
    let other = tmp();
    let empty = Hsm::empty(other.path());
    let r = empty.lukskit(&["open", "--test-passphrase", "-v", &img], b"pass\n");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(
        r.stderr,
        "Token 0 (systemd-pkcs11) cannot unlock: no security token matching \
         pkcs11:token=lukskit;id=%01 is present.\n"
    );
    // A module-path= that does not exist: one line.
    rewrite_luks2_json(&img, |j| {
        j["tokens"]["0"]["pkcs11-uri"] = "pkcs11:token=lukskit?module-path=/nonexistent.so".into()
    });
    let r = hsm.lukskit(&["open", "--test-passphrase", "-v", &img], b"pass\n");
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(
        r.stderr,
        "Token 0 (systemd-pkcs11) cannot unlock: no PKCS#11 module: /nonexistent.so does not exist.\n"
    );
}

/// A LUKS2 volume with passphrase "pass" in keyslot 0, made by cryptsetup.
fn luks2_volume(dir: &Path) -> String {
    let img = sparse(dir, "img", 32 << 20);
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, "-"]);
    cryptsetup(&args, b"pass").unwrap().ok("luksFormat");
    img
}

#[test]
fn recovery_key_opens_as_a_passphrase() {
    let test = "recovery_key_opens_as_a_passphrase";
    if !have_tool(test, "systemd-cryptenroll") || !have_cryptsetup(test) {
        return;
    }
    let d = tmp();
    let img = luks2_volume(d.path());
    let mut cmd = Command::new("systemd-cryptenroll");
    cmd.args(["--recovery-key", &img]);
    let r = run(cmd, b"", &[("PASSWORD", "pass")]);
    assert_eq!(r.code, 0, "systemd-cryptenroll: {}{}", r.stdout, r.stderr);
    // Without a terminal the key is the only thing on standard output.
    let key = r.stdout.trim().to_string();
    assert_eq!(key.len(), 71, "{key:?}");
    let tok = &json_dump(&img)["tokens"]["0"];
    assert_eq!(tok["type"], "systemd-recovery", "{tok}");
    // As cryptsetup (with systemd's plugins: none is for this type), the token step finds
    // nothing usable, then the key opens keyslot 1 as a passphrase.
    let stdin = format!("{key}\n");
    let r = lukskit(&["open", "--test-passphrase", "-v", &img], stdin.as_bytes());
    let want = "No usable token is available.\nKey slot 1 unlocked.\nCommand successful.\n";
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, want, "")
    );
    let c = cryptsetup(&["open", "--test-passphrase", "-v", &img], stdin.as_bytes()).unwrap();
    assert_eq!((c.code, c.stdout.as_str()), (0, want));
    // The token itself opens nothing (it only marks the keyslot): --token-only fails as
    // cryptsetup's does.
    let l = lukskit(&["open", "--test-passphrase", "--token-only", &img], b"");
    let c = cryptsetup(&["open", "--test-passphrase", "--token-only", &img], b"").unwrap();
    assert_eq!((l.code, l.stdout), (c.code, c.stdout));
}

#[test]
fn fido2_token_is_not_supported_and_falls_back() {
    let test = "fido2_token_is_not_supported_and_falls_back";
    if !have_cryptsetup(test) {
        return;
    }
    let d = tmp();
    let img = luks2_volume(d.path());
    let tj = write_file(d.path(), "fido2.json", FIDO2.as_bytes());
    lukskit(&["token", "import", "--json-file", &tj, &img], b"").ok("token import");
    let r = lukskit(&["open", "--test-passphrase", "-v", &img], b"pass\n");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Key slot 0 unlocked."), "{}", r.stdout);
    assert_eq!(
        r.stderr,
        "Token 0 (systemd-fido2) cannot unlock: FIDO2 tokens are not supported by lukskit.\n"
    );
    let r = lukskit(&["open", "--test-passphrase", "--token-only", &img], b"");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
}

/// A systemd-fido2 token as systemd-cryptenroll 252 writes it (made up credential and salt).
const FIDO2: &str = r#"{"type":"systemd-fido2","keyslots":["0"],"fido2-credential":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmc=","fido2-salt":"c2FsdHNhbHRzYWx0c2FsdHNhbHRzYWx0c2FsdHNhbHQ=","fido2-rp":"io.systemd.cryptsetup","fido2-clientPin-required":true,"fido2-up-required":true,"fido2-uv-required":false}"#;

/// A systemd-tpm2 token systemd-cryptenroll 252 wrote (swtpm, PCRs 0+7, PIN).
const TPM2: &str = r#"{"type":"systemd-tpm2","keyslots":["0"],"tpm2-blob":"AJ4AIFMtNjiAEJu5V1pHehuYU+m/1QTa5vDM9v+OOZ5Tp+kZABD6dJkjC7otxYxIrCyS7dPFuWFyjqnu6wEv0ZeXce5FedcNJk11GGJGA0pLuekFidW10OPgQXDvcneVvAolEX2rB6B3WP03txN4JSymYM9arE805KZ29VvIFaozLgFv/l+QeQIe/c3hn07DB77nQmyOtb71Z0zVM+4fswBOAAgACwAAABIAIKRZ8zUdSHBtQrapIJOPVuKLc1ZgKgJ4TPDze29a6waMABAAIMk/DWNkbKfgP94sBCR5KZH890PC+nX7vrNHf4K1mnmb","tpm2-pcrs":[0,7],"tpm2-pcr-bank":"sha256","tpm2-primary-alg":"ecc","tpm2-policy-hash":"a459f3351d48706d42b6a920938f56e28b7356602a02784cf0f37b6f5aeb068c","tpm2-pin":true}"#;

/// A systemd-pkcs11 token systemd-cryptenroll 252 wrote (SoftHSM2, RSA 2048).
const PKCS11: &str = r#"{"type":"systemd-pkcs11","keyslots":["0"],"pkcs11-uri":"pkcs11:token=lukskit;id=%01","pkcs11-key":"bnmsHqio6xeP6S3WXneDRH/5Qskf4IPYQrTH5NtLNEE9zqWG7a3g+mSE8kyKXmH5QEuPpi/3UsEgJswfcBFm12cS4mvAz8dB/2z2N6+WkuJqqHWewBOmwipYORP4aSwAmSCOQGNbBKVFuhCXYrISRvcHzDlTfvWvV1Xg4KrF3MpHe7ycKTMNrhg6WbG09x0rFjQNYaJeqH+n2YS3LQrZjfjwI21+MzQZwhNrBfNRimh2K1xFqT7u1e5C4x69ywpiiR0Q0wxwrP/VnqRD5b9KnN8kn9XQpppBDI5AgJ0cWJeKNTfLPohfev+T/BjL2wU+Gfg9L0UePqTN6ORrtgSyMQ=="}"#;

#[test]
fn luks_dump_of_systemd_tokens_equals_cryptsetup() {
    let test = "luks_dump_of_systemd_tokens_equals_cryptsetup";
    if !have_cryptsetup(test) {
        return;
    }
    if !Path::new("/usr/lib/x86_64-linux-gnu/cryptsetup/libcryptsetup-token-systemd-tpm2.so")
        .exists()
    {
        skip_or_fail(
            test,
            "systemd's cryptsetup token plugins are missing (apt-get install systemd)",
        );
        return;
    }
    let d = tmp();
    let img = luks2_volume(d.path());
    let tpm2_no_bank = TPM2
        .replace(r#""tpm2-pcr-bank":"sha256","tpm2-primary-alg":"ecc","#, "")
        .replace(r#""tpm2-pcrs":[0,7]"#, r#""tpm2-pcrs":[]"#);
    let fido2_short = r#"{"type":"systemd-fido2","keyslots":["0"],"fido2-credential":"AAEC","fido2-salt":"AAEC","fido2-uv-required":true}"#;
    let tokens = [
        TPM2,
        PKCS11,
        FIDO2,
        r#"{"type":"systemd-recovery","keyslots":["0"]}"#,
        &tpm2_no_bank,
        fido2_short,
        // Ones systemd's plugins cannot parse: nothing but the generic lines.
        r#"{"type":"systemd-tpm2","keyslots":["0"],"tpm2-pcrs":[1]}"#,
        r#"{"type":"systemd-fido2","keyslots":["0"],"fido2-credential":"AAEC"}"#,
    ];
    for (i, t) in tokens.iter().enumerate() {
        let tj = write_file(d.path(), &format!("t{i}.json"), t.as_bytes());
        // cryptsetup's own import checks the tokens with systemd's plugins; these pass.
        cryptsetup(
            &[
                "token",
                "import",
                "--disable-external-tokens",
                "--json-file",
                &tj,
                &img,
            ],
            b"",
        )
        .unwrap()
        .ok("token import");
    }
    for extra in [&[][..], &["--disable-external-tokens"][..]] {
        let mut args = vec!["luksDump"];
        args.extend_from_slice(extra);
        args.push(&img);
        let l = lukskit(&args, b"");
        let c = cryptsetup(&args, b"").unwrap();
        assert_eq!(
            (l.code, &l.stdout, &l.stderr),
            (c.code, &c.stdout, &c.stderr),
            "{extra:?}"
        );
        assert!(l.stdout.contains("\ttpm2-pin:         true\n") == extra.is_empty());
    }
}

/// crypttab's `pkcs11-uri=` for a volume without a token, as systemd 252's systemd-cryptsetup
/// reads it: the key field is the key systemd-cryptenroll encrypted to the token's
/// certificate (the token's `pkcs11-key`, base64-decoded), the token removed from the
/// header. Opened with the token's PIN; a wrong PIN or a missing token: one line, then the
/// passphrase.
#[test]
fn crypttab_opens_a_tokenless_volume_with_a_pkcs11_encrypted_key_file() {
    let test = "crypttab_opens_a_tokenless_volume_with_a_pkcs11_encrypted_key_file";
    if !pkcs11_tools(test) || !capable(test) {
        return;
    }
    use base64::Engine as _;
    let d = tmp();
    let hsm = Hsm::with_key(d.path(), "lukskit");
    let uri = "pkcs11:token=lukskit;id=%01";
    let img = pkcs11_enrolled(d.path(), &hsm, uri);
    let tok = &json_dump(&img)["tokens"]["0"];
    let key = base64::engine::general_purpose::STANDARD
        .decode(tok["pkcs11-key"].as_str().unwrap())
        .unwrap();
    let keyfile = write_file(d.path(), "encrypted.key", &key);
    std::fs::set_permissions(
        &keyfile,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    cryptsetup(&["token", "remove", "--token-id", "0", &img], b"")
        .unwrap()
        .ok("token remove");
    assert_eq!(json_dump(&img)["tokens"], serde_json::json!({}));
    // One entry per open below (a closed mapping's name is not reused at once).
    let [m, bad, gone] = ["ctp11", "ctp11bad", "ctp11gone"].map(Mapping::new);
    let table: String = [&m, &bad, &gone]
        .iter()
        .map(|m| format!("{} {img} {keyfile} luks,pkcs11-uri={uri}\n", m.name))
        .collect();
    let ct = write_file(d.path(), "crypttab", table.as_bytes());
    let r = hsm
        .lukskit(&["crypttab", "list", "--crypttab", &ct], b"")
        .ok("crypttab list");
    let want = format!(
        "  key:     PKCS#11-encrypted key file {keyfile}, decrypted by {uri}, else passphrase asked"
    );
    assert!(
        r.stdout.lines().any(|l| l == want),
        "{want:?} not in\n{}",
        r.stdout
    );
    assert!(!r.stdout.contains("warning"), "{}", r.stdout);
    // The PIN (a line of standard input): keyslot 1, systemd-cryptenroll's, opens.
    crypttab::open_check_close(&ct, &m.name, &hsm.env(), b"1234\n", 1, "");
    // A wrong PIN: one line, not asked again; the next line is the passphrase.
    crypttab::open_check_close(
        &ct,
        &bad.name,
        &hsm.env(),
        b"9999\npass\n",
        0,
        "PKCS#11 operation failed, falling back to traditional unlocking: wrong PIN for \
         security token 'lukskit'.\n",
    );
    // The token is not there (another token store): one line, no PIN asked.
    let other = tmp();
    let empty = Hsm::empty(other.path());
    crypttab::open_check_close(
        &ct,
        &gone.name,
        &empty.env(),
        b"pass\n",
        0,
        &format!(
            "PKCS#11 operation failed, falling back to traditional unlocking: no security \
             token matching {uri} is present.\n"
        ),
    );
}
