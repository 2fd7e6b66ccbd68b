//! The dracut module's reading of the kernel command line (`lukskit-dracut parse`,
//! scripts/dracut/90lukskit/lukskit-dracut.sh), on the host: for each command line, the boot
//! table it writes (`NAME SOURCE KEY OPTIONS`, what each `lukskit crypttab open` then gets) from
//! an image crypttab, and dracut's initqueue hooks. dracut's own `getargs` / `getargbool` are
//! replaced by a small shell stand-in with the same results for these arguments (a bare flag
//! counts as present, `0`/`no`/`off` as false). The refvm_boot `dracut` boot runs two of these
//! forms for real (`rd.luks.uuid=luks-UUID` with a crypttab entry, `rd.luks.name=` with
//! `rd.luks.options=UUID=`).

use std::path::Path;
use std::process::Command;

const A: &str = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
const C: &str = "c0ffee00-1111-4222-8333-944455556666";
const P: &str = "5d3e4a60-aaaa-4bbb-8ccc-0123456789ab";

/// dracut-lib's `getarg`, `getargs` and `getargbool` over `$CMDLINE`.
const STUB: &str = r#"
_lk_vals() { # name: each value, 0 when the name is there at all
    _f=1
    for _a in $CMDLINE; do
        case "$_a" in
        "$1") _f=0 ;;
        "$1"=*) _f=0; printf '%s\n' "${_a#*=}" ;;
        esac
    done
    return $_f
}
getarg() { _lk_vals "$1" | tail -n 1; _lk_vals "$1" >/dev/null; }
getargs() {
    _r=1
    for _n in "$@"; do
        case "$_n" in -d | -n) continue ;; esac
        _lk_vals "$_n" && _r=0
    done
    return $_r
}
getargbool() { # default name [-d -n oldname]
    if _lk_vals "$2" >/dev/null; then
        _b=$(_lk_vals "$2" | tail -n 1)
    else
        _b=$1
    fi
    case "$_b" in 0 | no | off) return 1 ;; esac
    return 0
}
"#;

struct Parsed {
    /// The boot table's lines (empty: no table).
    table: Vec<String>,
    /// The initqueue hook files (relative to the hook directory), sorted.
    hooks: Vec<String>,
    stderr: String,
}

fn parse(cmdline: &str, image_tab: Option<&str>) -> Parsed {
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let hooks = d.path().join("hooks");
    let tab = d.path().join("crypttab");
    if let Some(t) = image_tab {
        std::fs::write(&tab, t).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/dracut/90lukskit/lukskit-dracut.sh");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{STUB}\nset -- parse\n. \"$0\""))
        .arg(&script)
        .env("CMDLINE", cmdline)
        .env("LUKSKIT_DRACUT_STATE", &state)
        .env("LUKSKIT_DRACUT_IMAGE_TAB", &tab)
        .env("hookdir", &hooks)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "parse of {cmdline:?} failed: {stderr}"
    );
    let table = std::fs::read_to_string(state.join("crypttab"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let mut hook_files = Vec::new();
    for q in ["settled", "finished"] {
        if let Ok(dir) = std::fs::read_dir(hooks.join("initqueue").join(q)) {
            for e in dir.flatten() {
                hook_files.push(format!("{q}/{}", e.file_name().to_string_lossy()));
            }
        }
    }
    hook_files.sort();
    Parsed {
        table,
        hooks: hook_files,
        stderr,
    }
}

/// The image crypttab of most cases: the root with a key file, a `noauto` volume, a plain
/// swap-like volume by path with `nofail`.
fn image_tab() -> String {
    format!(
        "# made by the module\n\
         cryptroot UUID={A} /etc/lukskit/keys/cryptroot.key luks\n\
         backup UUID={C} none luks,noauto\n\
         scratch /dev/vdz - plain,nofail\n"
    )
}

fn lines(v: &[String]) -> Vec<String> {
    v.to_vec()
}

#[test]
fn no_arguments_take_the_image_crypttab_without_noauto() {
    let p = parse("root=/dev/mapper/cryptroot ro", Some(&image_tab()));
    assert_eq!(
        lines(&p.table),
        vec![
            format!("cryptroot UUID={A} /etc/lukskit/keys/cryptroot.key luks"),
            "scratch /dev/vdz - plain,nofail".to_string(),
        ]
    );
    // One job for the unlock, a finished condition for each entry without nofail.
    assert_eq!(
        p.hooks,
        vec![
            "finished/90-lukskit-cryptroot.sh".to_string(),
            "settled/90-lukskit-unlock.sh".to_string(),
        ],
        "{}",
        p.stderr
    );
}

#[test]
fn rd_luks_0_unlocks_nothing() {
    for off in ["rd.luks=0", "luks=no", "rd_NO_LUKS rd.luks=off"] {
        let p = parse(
            &format!("root=/dev/mapper/cryptroot {off}"),
            Some(&image_tab()),
        );
        assert!(p.table.is_empty(), "{off}: {:?}", p.table);
        assert!(p.hooks.is_empty(), "{off}: {:?}", p.hooks);
    }
}

#[test]
fn rd_luks_uuid_selects_crypttab_entries_by_uuid_and_names_the_rest_luks_uuid() {
    // luks- prefix, upper case: the crypttab entry's name, key and options.
    let p = parse(
        &format!("rd.luks.uuid=luks-{}", A.to_uppercase()),
        Some(&image_tab()),
    );
    assert_eq!(
        p.table,
        vec![format!(
            "cryptroot UUID={A} /etc/lukskit/keys/cryptroot.key luks"
        )]
    );
    assert!(p.stderr.contains("scratch: not unlocked"), "{}", p.stderr);
    // A noauto entry named on the command line is unlocked; an unknown UUID gets luks-UUID.
    let p = parse(
        &format!("rd.luks.uuid={C} rd.luks.uuid={P}"),
        Some(&image_tab()),
    );
    assert_eq!(
        p.table,
        vec![
            format!("backup UUID={C} - luks,noauto"),
            format!("luks-{P} UUID={P} - luks"),
        ]
    );
    // rd.luks.crypttab=0: the image's crypttab is not read.
    let p = parse(
        &format!("rd.luks.crypttab=0 rd.luks.uuid={A}"),
        Some(&image_tab()),
    );
    assert_eq!(p.table, vec![format!("luks-{A} UUID={A} - luks")]);
}

#[test]
fn rd_luks_name_key_options_data_as_systemd_cryptsetup_generator() {
    // rd.luks.name implies the UUID; global key and options for volumes without an entry.
    let p = parse(
        &format!("rd.luks.name={C}=data rd.luks.key=/etc/keys/all.key rd.luks.options=discard"),
        None,
    );
    assert_eq!(
        p.table,
        vec![format!("data UUID={C} /etc/keys/all.key discard")]
    );
    // Per-UUID options replace the crypttab entry's; per-UUID key on a device; a data device.
    let p = parse(
        &format!(
            "rd.luks.uuid={A} rd.luks.options={A}=discard,tries=5 \
             rd.luks.name={P}=vault rd.luks.key={P}=/vault.key:LABEL=usbkey \
             rd.luks.data={P}=/dev/sdb rd.luks.options={P}=header=/etc/vault.hdr"
        ),
        Some(&image_tab()),
    );
    assert_eq!(
        p.table,
        vec![
            format!("cryptroot UUID={A} /etc/lukskit/keys/cryptroot.key discard,tries=5"),
            "vault /dev/sdb /vault.key:LABEL=usbkey header=/etc/vault.hdr".to_string(),
        ]
    );
    // Not UUID=NAME: ignored with a warning.
    let p = parse("rd.luks.name=cryptroot", None);
    assert!(p.table.is_empty(), "{:?}", p.table);
    assert!(
        p.stderr.contains("rd.luks.name=cryptroot is not UUID=NAME"),
        "{}",
        p.stderr
    );
}

#[test]
fn dracut_forms_key_device_partuuid_and_allow_discards() {
    // rd.luks.key=PATH:KEYDEV:LUKSDEV for one volume; KEYDEV "/" is the initramfs.
    let p = parse(
        &format!(
            "rd.luks.uuid={A} rd.luks.uuid={P} \
             rd.luks.key=/keys/p.key:UUID=1234-ABCD:UUID={P} rd.luks.crypttab=0"
        ),
        Some(&image_tab()),
    );
    assert_eq!(
        p.table,
        vec![
            format!("luks-{A} UUID={A} - luks"),
            format!("luks-{P} UUID={P} /keys/p.key:UUID=1234-ABCD luks"),
        ]
    );
    let p = parse("rd.luks.key=/etc/all.key:/", Some(&image_tab()));
    assert_eq!(
        p.table,
        vec![
            format!("cryptroot UUID={A} /etc/lukskit/keys/cryptroot.key luks"),
            "scratch /dev/vdz /etc/all.key plain,nofail".to_string(),
        ],
        "the crypttab's own key file first, dracut's key where it has none"
    );
    // rd.luks.partuuid: the volume on that partition.
    let p = parse(&format!("rd.luks.partuuid={P}"), None);
    assert_eq!(p.table, vec![format!("luks-{P} PARTUUID={P} - luks")]);
    // rd.luks.allow-discards: every volume, or one.
    let p = parse("rd.luks.allow-discards", Some(&image_tab()));
    assert_eq!(
        p.table,
        vec![
            format!("cryptroot UUID={A} /etc/lukskit/keys/cryptroot.key luks,discard"),
            "scratch /dev/vdz - plain,nofail,discard".to_string(),
        ]
    );
    let p = parse(
        &format!("rd.luks.allow-discards={A} rd.luks.uuid={A} rd.luks.uuid={P}"),
        Some(&image_tab()),
    );
    assert_eq!(
        p.table,
        vec![
            format!("cryptroot UUID={A} /etc/lukskit/keys/cryptroot.key luks,discard"),
            format!("luks-{P} UUID={P} - luks"),
        ]
    );
}
