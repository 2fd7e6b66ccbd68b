//! Process-wide hardening, done by the binary (never by a library): whatever lukskit holds
//! in memory — passphrases, key files, volume keys — must not reach a core dump or another
//! process of the same user.

/// For every invocation, before any secret is read: no core dumps (`RLIMIT_CORE` 0) and not
/// dumpable (`PR_SET_DUMPABLE` 0: no `ptrace` attach and no `/proc/PID/mem` for other
/// processes of the same unprivileged user).
pub fn protect_secrets() {
    let zero = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit reads the fully initialised rlimit; prctl takes constant integers.
    // Failures leave the defaults, which the checks of the test suite would notice.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &zero);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// For the serving process of a mapping, which holds the volume key for as long as the
/// mapping lives: additionally lock its pages in RAM as they are touched, where no
/// memory-lock limit applies (under a finite `RLIMIT_MEMLOCK`, `MCL_FUTURE` would make later
/// allocations fail once the limit is reached; the secrets themselves are in `SecretBuf`s,
/// which lock themselves either way).
pub fn serving_process() {
    protect_secrets();
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the rlimit we pass.
    let unlimited = unsafe {
        libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) == 0 && lim.rlim_cur == libc::RLIM_INFINITY
    };
    if unlimited || has_cap_ipc_lock() {
        // SAFETY: mlockall with constant flags; failure leaves the process unlocked.
        unsafe {
            libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT);
        }
    }
}

/// Whether this process holds CAP_IPC_LOCK (no memory-lock limit applies then).
fn has_cap_ipc_lock() -> bool {
    const CAP_IPC_LOCK: u32 = 14;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}
