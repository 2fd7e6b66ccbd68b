//! The kernel backend's `/dev/mapper` handling against a real systemd-udevd (reference VM,
//! script tests/refvm/udev/udev.sh, udevd started by `/refvm/start-udev` with the
//! device-mapper rules of Debian's dmsetup). With udevd running, `lukskit open` must give what
//! cryptsetup's own mapping gets from udev in the same guest: `/dev/mapper/NAME` as udev's
//! symlink to `../dm-N`, the `/dev/disk/by-id/dm-name-*` and `dm-uuid-*` links and the
//! `/dev/disk/by-uuid` link of the file system inside; `close` (also `--deferred`, and across
//! the two tools) must leave what cryptsetup's leaves. With udevd dead but its
//! `/run/udev/control` left behind, open and close must still finish (bounded by
//! `UDEV_WAIT`) with a usable node and no node. With no udevd, the nodes must be what
//! libdevmapper makes (`DM_DISABLE_UDEV=1`), a deferred close must drop the node at once as
//! libdevmapper's does, and both tools must open over a stale block node.

mod common;
mod refvm_common;

use std::collections::BTreeMap;

/// `lukskit_dm::node::UDEV_WAIT` in seconds: how long lukskit waits for udev at most.
const UDEV_WAIT_SECS: f64 = 5.0;
/// Generous slack on top of it for a loaded host under TCG (this is a bound against hangs,
/// not a timing measurement).
const SLACK_SECS: f64 = 30.0;

#[test]
fn kernel_nodes_with_and_without_udev_match_cryptsetup() {
    const T: &str = "refvm_udev";
    let dir = common::tmp();
    // About 45 s on an idle host here (one boot).
    let Some(r) = refvm_common::run_script_on_blank_disks(T, "udev/udev.sh", dir.path(), 1, 60)
    else {
        return;
    };
    let out = &r.stdout;
    assert!(out.contains("udev: done"), "{out}");
    assert!(out.contains("udev: running"), "udevd did not start:\n{out}");

    // (case, tool) -> the lines of that case and tool (mapping names normalised).
    let mut lines: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut times = Vec::new();
    for line in out.lines() {
        if let Some(t) = line.strip_prefix("time: ") {
            times.push(t.to_string());
            continue;
        }
        let norm = line.replace("csmap", "NAME").replace("lkmap", "NAME");
        let mut w = norm.splitn(3, ' ');
        let (Some(case), Some(tool), Some(rest)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        if tool == "cryptsetup" || tool == "lukskit" {
            lines
                .entry((case.to_string(), tool.to_string()))
                .or_default()
                .push(rest.to_string());
        }
    }
    let get = |case: &str, tool: &str| -> Vec<String> {
        lines
            .get(&(case.to_string(), tool.to_string()))
            .cloned()
            .unwrap_or_else(|| panic!("no {case} {tool} lines in:\n{out}"))
    };
    let compared = |v: Vec<String>| -> Vec<String> {
        v.into_iter()
            .filter(|l| {
                [
                    "node:",
                    "by-id:",
                    "by-uuid:",
                    "after-close:",
                    "deferred-close",
                    "while-held:",
                    "open rc",
                    "close rc",
                ]
                .iter()
                .any(|p| l.starts_with(p))
            })
            .collect()
    };

    // The oracle is what it should be: udev made cryptsetup's node and links; without udev
    // libdevmapper made a block node.
    let live_cs = get("live", "cryptsetup");
    assert!(
        live_cs.contains(&"node: symlink ../dm-N".to_string()),
        "{out}"
    );
    assert!(
        live_cs
            .iter()
            .any(|l| l.starts_with("by-id: dm-name-NAME -> ../../dm-N dm-uuid-CRYPT-LUKS2-")),
        "{out}"
    );
    assert!(
        live_cs.contains(&"by-uuid: FSUUID -> ../../dm-N".to_string()),
        "{out}"
    );
    assert!(
        get("none", "cryptsetup").contains(&"node: block 660 root:disk".to_string()),
        "{out}"
    );

    // lukskit leaves what cryptsetup leaves, case by case.
    for case in ["live", "live-deferred", "none", "none-deferred", "stale"] {
        let theirs = compared(get(case, "cryptsetup"));
        let ours = compared(get(case, "lukskit"));
        assert!(!theirs.is_empty(), "{case}: nothing to compare in:\n{out}");
        assert_eq!(
            ours, theirs,
            "{case}: lukskit against cryptsetup in:\n{out}"
        );
    }
    // Each tool closes the other's mapping, udev removing the node and links.
    let closed = get("live", "cryptsetup")
        .into_iter()
        .find(|l| l.starts_with("after-close:"))
        .expect("after-close line");
    for tool in ["cryptsetup", "lukskit"] {
        assert_eq!(
            get("cross", tool),
            vec![closed.clone()],
            "cross {tool}:\n{out}"
        );
    }
    assert!(
        get("live", "lukskit")
            .iter()
            .any(|l| l.starts_with("dm: NAME:CRYPT-LUKS2-")),
        "{out}"
    );

    // A dead udevd: lukskit makes the node itself after its bounded wait, the node works, and
    // close removes it.
    let fs_uuid = out
        .lines()
        .find_map(|l| l.strip_prefix("fs uuid: "))
        .expect("fs uuid line");
    let dead = get("dead", "lukskit");
    for want in [
        "node: block 660 root:disk".to_string(),
        format!("blkid: {fs_uuid}"),
        "after-close: node=none by-id=[(no /dev/disk/by-id)] by-uuid=[(no /dev/disk/by-uuid)]"
            .to_string(),
    ] {
        assert!(
            dead.contains(&want),
            "dead udev: missing {want:?} in:\n{out}"
        );
    }

    // Every lukskit command finished (no hang on udev), within UDEV_WAIT and generous slack.
    for case in ["live", "cross", "dead", "none"] {
        for cmd in ["open", "close"] {
            if case == "cross" && cmd == "open" {
                continue;
            }
            let prefix = format!("{case} lukskit {cmd} ");
            let t = times
                .iter()
                .find_map(|t| t.strip_prefix(&prefix))
                .unwrap_or_else(|| panic!("no time for {prefix:?} in:\n{out}"));
            let (secs, rc) = t.split_once(' ').expect("seconds and rc");
            assert_eq!(rc, "rc=0", "{case} lukskit {cmd}: {t}\n{out}");
            let secs: f64 = secs.parse().expect("seconds");
            refvm_common::say(&format!("{T}: {case} lukskit {cmd}: {secs:.2} s"));
            assert!(
                secs < UDEV_WAIT_SECS + SLACK_SECS,
                "{case} lukskit {cmd} took {secs} s"
            );
        }
    }
}
