//! The kernel keyring features of cryptsetup 2.7 and Debian's `decrypt_keyctl`, checked with
//! keyutils' `keyctl` (the kernel's own view of the keys) and cryptsetup 2.6.1:
//!
//! - `open --volume-key-keyring KEY`: a `user` key added with `keyctl padd` holding the
//!   volume key cryptsetup dumps opens the volume; a wrong one is refused as cryptsetup
//!   refuses the same bytes given with `--volume-key-file`; a missing one fails in one line;
//! - `open --link-vk-to-keyring KEYRING::KEY`: after activation `keyctl` finds the key in
//!   that keyring with that type and name, and its payload is cryptsetup's volume key; not
//!   linked by `--test-passphrase` or with `--disable-keyring` (cryptsetup 2.7's rules);
//! - `crypttab open` with `keyscript=decrypt_keyctl`: the passphrase is read once for all
//!   entries with the same key field, kept as the `user` key `cryptsetup:FIELD` in `@u` with
//!   a 60-second timeout (read from /proc/keys), a key put there by `keyctl` (as
//!   decrypt_keyctl itself would) is used without a prompt, a wrong cached one is asked
//!   again and replaced.
//!
//! Needs keyctl (keyutils) and cryptsetup; the activations need root and FUSE.

mod common;
use common::mapping::*;
use common::*;

fn tools(test: &str) -> bool {
    have_tool(test, "keyctl") && have_cryptsetup(test)
}

fn keyctl(args: &[&str], stdin: &[u8]) -> Run {
    let mut cmd = std::process::Command::new("keyctl");
    cmd.args(args);
    run(cmd, stdin, &[])
}

/// The serial of the `kind` key `desc` in the user keyring, if any.
fn search_user_keyring(kind: &str, desc: &str) -> Option<String> {
    let r = keyctl(&["search", "@u", kind, desc], b"");
    (r.code == 0).then(|| r.stdout.trim().to_string())
}

/// Remove the `kind` key `desc` from the user keyring (test cleanup).
fn forget(kind: &str, desc: &str) {
    while let Some(s) = search_user_keyring(kind, desc) {
        keyctl(&["unlink", &s, "@u"], b"");
    }
}

/// The timeout column of key `serial` in /proc/keys (`perm`, `59s`, `1m`, …).
fn proc_keys_timeout(serial: &str) -> String {
    let id = format!("{:08x}", serial.parse::<u32>().unwrap());
    let keys = std::fs::read_to_string("/proc/keys").unwrap();
    let line = keys
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("key {id} not in /proc/keys"));
    line.split_whitespace().nth(3).unwrap().to_string()
}

/// A LUKS2 volume (passphrase in keyslot 0, by cryptsetup): path, key file, volume key bytes.
fn volume(dir: &std::path::Path, name: &str, pass: &[u8]) -> (String, String, Vec<u8>) {
    let img = sparse(dir, name, 32 << 20);
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, "-"]);
    cryptsetup(&args, pass).unwrap().ok("luksFormat");
    let kf = write_file(dir, &format!("{name}.pass"), pass);
    let vk = hex::decode(volume_key_with("cryptsetup", &img, &kf, &[])).unwrap();
    (img, kf, vk)
}

#[test]
fn volume_key_keyring_opens_with_the_key_keyctl_added() {
    let test = "volume_key_keyring_opens_with_the_key_keyctl_added";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let (img, _, vk) = volume(d.path(), "img", b"pass");
    let desc = format!("lukskit-test-vk-{}", std::process::id());
    forget("user", &desc);
    let r = keyctl(&["padd", "user", &desc, "@u"], &vk);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for spec in [desc.clone(), format!("%user:{desc}")] {
        let r = lukskit(
            &[
                "open",
                "--test-passphrase",
                "-v",
                "--volume-key-keyring",
                &spec,
                &img,
            ],
            b"",
        );
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (0, "Command successful.\n", ""),
            "{spec}"
        );
    }
    // A key that is not this volume's: refused as cryptsetup refuses the same bytes in a
    // volume key file.
    let mut wrong = vk.clone();
    wrong[0] ^= 1;
    keyctl(&["padd", "user", &desc, "@u"], &wrong).ok("keyctl padd");
    let vkf = write_file(d.path(), "wrong.vk", &wrong);
    let theirs = cryptsetup(
        &["open", "--test-passphrase", "--volume-key-file", &vkf, &img],
        b"",
    )
    .unwrap();
    let ours = lukskit(
        &[
            "open",
            "--test-passphrase",
            "--volume-key-keyring",
            &desc,
            &img,
        ],
        b"",
    );
    assert_ne!(ours.code, 0);
    assert_eq!(
        (ours.code, ours.stderr.as_str()),
        (theirs.code, theirs.stderr.as_str())
    );
    // No such key: one line (cryptsetup 2.7's words), exit 1.
    forget("user", &desc);
    let r = lukskit(
        &[
            "open",
            "--test-passphrase",
            "--volume-key-keyring",
            &desc,
            &img,
        ],
        b"",
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (1, "Failed to read volume key candidate from keyring.\n")
    );
}

#[test]
fn link_vk_to_keyring_puts_the_volume_key_where_keyctl_finds_it() {
    let test = "link_vk_to_keyring_puts_the_volume_key_where_keyctl_finds_it";
    if !tools(test) {
        return;
    }
    let d = tmp();
    let (img, kf, vk) = volume(d.path(), "img", b"pass");
    let desc = format!("lukskit-test-link-{}", std::process::id());
    forget("user", &desc);
    let link = format!("@u::%user:{desc}");
    // Malformed values are refused before anything is asked.
    for bad in ["@u", "@u::%dead:x", "@u::%user:", "@a::x"] {
        let r = lukskit(
            &["open", "--link-vk-to-keyring", bad, "-d", &kf, &img, "x"],
            b"",
        );
        assert_eq!(r.code, 1, "{bad}: {}", r.stderr);
        assert!(
            r.stderr.contains("Invalid --link-vk-to-keyring value.")
                || r.stderr.contains("Could not find keyring described by"),
            "{bad}: {}",
            r.stderr
        );
    }
    // --test-passphrase activates nothing and links nothing (cryptsetup 2.7).
    lukskit(
        &[
            "open",
            "--test-passphrase",
            "--link-vk-to-keyring",
            &link,
            "-d",
            &kf,
            &img,
        ],
        b"",
    )
    .ok("test-passphrase");
    assert_eq!(search_user_keyring("user", &desc), None);
    if !capable(test) {
        return;
    }
    {
        let m = Mapping::new("vklink");
        lukskit(
            &[
                "open",
                "--link-vk-to-keyring",
                &link,
                "-d",
                &kf,
                &img,
                &m.name,
            ],
            b"",
        )
        .ok("open --link-vk-to-keyring");
        let serial = search_user_keyring("user", &desc).expect("the volume key in @u");
        let payload = std::process::Command::new("keyctl")
            .args(["pipe", &serial])
            .output()
            .unwrap()
            .stdout;
        assert_eq!(payload, vk, "the linked key is the volume key");
        lukskit(&["close", &m.name], b"").ok("close");
    }
    forget("user", &desc);
    {
        // A logon key (its payload stays in the kernel; the kernel wants a "service:"
        // prefix in its name) and --disable-keyring.
        let m = Mapping::new("vklink2");
        let logon_desc = format!("lukskit:{desc}");
        let logon = format!("@u::%logon:{logon_desc}");
        lukskit(
            &[
                "open",
                "--link-vk-to-keyring",
                &logon,
                "-d",
                &kf,
                &img,
                &m.name,
            ],
            b"",
        )
        .ok("open, logon key");
        assert!(search_user_keyring("logon", &logon_desc).is_some());
        assert_eq!(search_user_keyring("user", &desc), None);
        lukskit(&["close", &m.name], b"").ok("close");
        forget("logon", &logon_desc);
        lukskit(
            &[
                "open",
                "--disable-keyring",
                "--link-vk-to-keyring",
                &link,
                "-d",
                &kf,
                &img,
                &m.name,
            ],
            b"",
        )
        .ok("open --disable-keyring");
        assert_eq!(search_user_keyring("user", &desc), None);
        lukskit(&["close", &m.name], b"").ok("close");
    }
}

#[test]
fn crypttab_passphrase_cache_asks_once_and_keeps_it_in_the_keyring_for_60_seconds() {
    let test = "crypttab_passphrase_cache_asks_once_and_keeps_it_in_the_keyring_for_60_seconds";
    if !tools(test) || !capable(test) {
        return;
    }
    let d = tmp();
    let (img1, _, _) = volume(d.path(), "a", b"shared pass");
    let (img2, _, _) = volume(d.path(), "b", b"shared pass");
    let (img3, _, _) = volume(d.path(), "c", b"other pass");
    let id = format!("lukskit-test-cache-{}", std::process::id());
    let id3 = format!("{id}-other");
    let (desc, desc3) = (format!("cryptsetup:{id}"), format!("cryptsetup:{id3}"));
    forget("user", &desc);
    forget("user", &desc3);
    let (m1, m2, m3) = (
        Mapping::new("cache1"),
        Mapping::new("cache2"),
        Mapping::new("cache3"),
    );
    let table = format!(
        "{} {img1} {id} luks,keyscript=decrypt_keyctl\n\
         {} {img2} {id} luks,keyscript=/lib/cryptsetup/scripts/decrypt_keyctl\n\
         {} {img3} {id3} luks,keyscript=decrypt_keyctl\n",
        m1.name, m2.name, m3.name
    );
    let ct = write_file(d.path(), "crypttab", table.as_bytes());
    // The third entry's passphrase is in the keyring already, as decrypt_keyctl (or keyctl)
    // leaves it: it opens without a prompt.
    keyctl(&["padd", "user", &desc3, "@u"], b"other pass").ok("keyctl padd");
    // One line of input: the shared passphrase, asked once.
    let r = lukskit(&["crypttab", "open", "--crypttab", &ct], b"shared pass\n");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cached: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("cached passphrase") || l.contains("passphrase"))
        .collect();
    assert_eq!(
        cached,
        [
            format!("Using cached passphrase for {}.", m2.name),
            format!("Using cached passphrase for {}.", m3.name)
        ],
        "{}",
        r.stderr
    );
    // crypttab list says where the passphrase is kept.
    let l = lukskit(&["crypttab", "list", "--crypttab", &ct], b"").ok("crypttab list");
    assert!(
        l.stdout.contains(&format!(
            "cached 60 s in the kernel keyring as user key {desc} in @u (decrypt_keyctl)"
        )),
        "{}",
        l.stdout
    );
    for m in [&m1, &m2, &m3] {
        assert!(
            r.stdout.contains(&format!("{}: opened.", m.name)),
            "{}",
            r.stdout
        );
    }
    let serial = search_user_keyring("user", &desc).expect("the cached passphrase");
    let payload = std::process::Command::new("keyctl")
        .args(["pipe", &serial])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(payload, b"shared pass");
    let timeout = proc_keys_timeout(&serial);
    let secs: u32 = match timeout.as_str() {
        "1m" => 60,
        t => t
            .strip_suffix('s')
            .and_then(|n| n.parse().ok())
            .unwrap_or(999),
    };
    assert!((50..=60).contains(&secs), "timeout {timeout}");
    for m in [&m1, &m2, &m3] {
        lukskit(&["close", &m.name], b"").ok("close");
    }
    // A wrong cached passphrase: asked again, and the right one replaces it.
    forget("user", &desc);
    keyctl(&["padd", "user", &desc, "@u"], b"stale").ok("keyctl padd");
    let r = lukskit(
        &["crypttab", "open", "--crypttab", &ct, &m1.name],
        b"shared pass\n",
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let serial = search_user_keyring("user", &desc).expect("the cached passphrase");
    let payload = std::process::Command::new("keyctl")
        .args(["pipe", &serial])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(payload, b"shared pass");
    lukskit(&["close", &m1.name], b"").ok("close");
    forget("user", &desc);
    forget("user", &desc3);
}
