//! `open` (and `luksOpen`, `plainOpen`, `create`), `close`, `status`, `luksSuspend`,
//! `luksResume` and `resize`: the command line of the activation layer (crate
//! `lukskit-activate`), which decides how a volume is exposed. Here: unlocking, options, and
//! cryptsetup's wording and exit codes for what the activation layer reports.

use super::{absolute, need_args};
use crate::args::Opts;
use crate::errors::{self, CliError, Result};
use crate::input;
use crate::resolve::{
    activation, backend_choice, kernel_options, nbd_tls, unlock, UnlockRequest, VolumeKeySource,
};
use lukskit_activate::{
    self as activate, BackendChoice, Exposure, KernelOptions, LayoutInfo, Mapping, MappingConfig,
    Status,
};
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::ConfigFlag;
use lukskit_format::VolumeType;
use lukskit_volume::data::DataLayout;
use lukskit_volume::device::Access;
use lukskit_volume::Volume;

/// Say what `open` did: why this backend (`--debug`), and when lukskit serves NAME itself
/// because the kernel has no device-mapper, one line on standard error (not with `-q`).
pub(crate) fn say_backend(o: &Opts, backend: activate::Backend, name: &str) {
    let auto = matches!(backend_choice(o), Ok(BackendChoice::Auto));
    let own_exposure = o.nbd.is_some() || o.no_loop;
    let reason = match (backend, auto) {
        (_, false) => "as --backend asks",
        (activate::Backend::Userspace, true) if own_exposure => {
            "an NBD export or a FUSE file is served by lukskit itself"
        }
        (activate::Backend::Userspace, true) => "the kernel has no device-mapper with dm-crypt",
        (activate::Backend::Kernel, true) => "the kernel has device-mapper with dm-crypt",
    };
    crate::debug::log(format_args!("Backend for {name}: {backend:?} ({reason})."));
    if backend != activate::Backend::Userspace || !auto || own_exposure || o.batch_mode {
        return;
    }
    let loop_device = activate::find(name)
        .ok()
        .flatten()
        .and_then(|m| m.status(None).ok())
        .and_then(|st| match st.exposure {
            Exposure::FuseLoop { loop_device, .. } => Some(loop_device),
            _ => None,
        });
    if let Some(dev) = loop_device {
        eprintln!("no device-mapper in this kernel: serving {name} through FUSE + {dev}");
    }
}

/// The active mapping `name` (or `/dev/mapper/NAME`), or cryptsetup's "not active".
fn active(name: &str) -> Result<Mapping> {
    activate::find(name)
        .map_err(CliError::from)?
        .ok_or_else(|| errors::inactive(activate::mapping_name(name)))
}

/// `open`, `luksOpen`, `plainOpen`, `create`.
pub fn open(o: &Opts, action: &str, args: &[String]) -> Result<()> {
    let mut o = o.clone();
    if action == "plainOpen" || action == "create" {
        o.r#type = Some("plain".into());
    }
    if let Some(t) = other_format(&o) {
        let device = args.first().map(String::as_str).unwrap_or_default();
        if o.test_passphrase {
            need_args(args, 1, 2, "<device> [<name>]")?;
            return super::open_format::open(&o, &unlock(&o), t, device, None);
        }
        if args.len() < 2 {
            return Err(CliError::invalid(
                "Command requires device and mapped name as arguments.",
            ));
        }
        if activate::find(&args[1]).map_err(CliError::from)?.is_some() {
            return Err(CliError::busy(format!(
                "Device {} already exists.",
                args[1]
            )));
        }
        return super::open_format::open(&o, &unlock(&o), t, device, Some(&args[1]));
    }
    if o.test_passphrase {
        return test_passphrase(&o, args);
    }
    if args.len() < 2 {
        // (the action's own check, after cryptsetup's count of one argument)
        return Err(CliError::invalid(
            "Command requires device and mapped name as arguments.",
        ));
    }
    let (device, name) = if action == "create" {
        (&args[1], &args[0])
    } else {
        (&args[0], &args[1])
    };
    // A block node there without a mapping of that name is stale: the activation layer
    // decides (the kernel backend replaces it, as cryptsetup does).
    if activate::find(name).map_err(CliError::from)?.is_some()
        || (!activate::mapper_block_node(name)
            && std::path::Path::new("/dev/mapper")
                .join(name)
                .symlink_metadata()
                .is_ok())
    {
        return Err(CliError::busy(format!("Device {name} already exists.")));
    }
    if o.nbd.is_some() && o.no_loop {
        return Err(CliError::invalid(
            "Options --nbd and --no-loop cannot be combined.",
        ));
    }
    if o.nbd_connections.is_some() && o.nbd.is_none() {
        return Err(CliError::invalid(
            "Option --nbd-connections is allowed only with --nbd.",
        ));
    }
    if o.nbd_connections == Some(0) {
        return Err(CliError::invalid(
            "Option --nbd-connections must be at least 1.",
        ));
    }
    let tls = nbd_tls(&o)?;
    tls_warnings(&o, tls.as_ref());
    // The backend is decided before anything is asked (a forced but missing kernel backend
    // fails at once); `resolve::activation` carries what decides it.
    let backend = activate::choose_backend(
        backend_choice(&o)?,
        &activation(&o, name, requested_type(&o)),
    )
    .map_err(CliError::from)?;
    check_engine(&o, backend)?;
    if matches!(o.r#type.as_deref(), None | Some("luks") | Some("luks2")) {
        if let Some(config) = reencrypt_config(&o, device, name)? {
            let (config, table) = config;
            return activate_reencrypt(&o, backend, config, &table);
        }
    }
    let vk_link = super::vk_keyring::link_request(&o)?;
    let (config, key, digest) = match o.r#type.as_deref() {
        Some("plain") => {
            let kernel = backend == activate::Backend::Kernel;
            let (c, k) = unlock_plain(&o, device, name, kernel, true)?;
            (c, k, None)
        }
        None | Some("luks") | Some("luks1") | Some("luks2") => unlock_luks(&o, device, name)?,
        Some(t) => {
            return Err(CliError::invalid(format!(
                "Device type {t} is not supported."
            )))
        }
    };
    let mut config = config;
    let mut kopts = kernel_options(&o, digest);
    apply_stored_flags(&o, &mut config, backend, &mut kopts)?;
    // --link-vk-to-keyring: LUKS2 only (cryptsetup 2.7 refuses it for other types), and
    // as cryptsetup not with --disable-keyring; linked before the activation and unlinked
    // should it fail, so the key is there only once the volume is.
    let linked = match &vk_link {
        Some(_) if config.kind != VolumeType::Luks2 => {
            return Err(CliError::invalid("Invalid --link-vk-to-keyring value."))
        }
        Some(l) if !o.disable_keyring => Some((l, super::vk_keyring::link(l, &key)?)),
        _ => None,
    };
    if let Err(e) = activate::activate(backend, &config, &kopts, &key) {
        if let Some((l, serial)) = linked {
            super::vk_keyring::unlink(l, serial);
        }
        return Err(e.into());
    }
    say_backend(&o, backend, name);
    if o.persistent {
        store_flags(&o, &config.device, config.header.as_deref())
            .map_err(|_| CliError::invalid("Device activated but cannot make flags persistent."))?;
    }
    Ok(())
}

/// The type `open` is asked for: `--type` (plain, ...), LUKS2 for any LUKS or none (the
/// header decides later).
fn requested_type(o: &Opts) -> VolumeType {
    match o
        .r#type
        .as_deref()
        .and_then(lukskit_format::TypeRequest::parse)
    {
        Some(lukskit_format::TypeRequest::Exactly(t)) => t,
        _ => VolumeType::Luks2,
    }
}

/// The type of `--type` when it is one of the formats without LUKS keyslots (TCRYPT, BITLK,
/// FVAULT2, LOOPAES), which [`super::open_format`] opens.
pub(super) fn other_format(o: &Opts) -> Option<lukskit_format::VolumeType> {
    use lukskit_format::{TypeRequest, VolumeType};
    match TypeRequest::parse(o.r#type.as_deref()?)? {
        TypeRequest::Exactly(t) if !t.is_luks() && t != VolumeType::Plain => Some(t),
        _ => None,
    }
}

/// A LUKS2 volume in re-encryption (see [`super::open_reencrypt`]): unlocked, recovered
/// when a hot zone was in flight, its mapping config and segment table. `None` for any
/// other volume.
fn reencrypt_config(
    o: &Opts,
    device: &str,
    name: &str,
) -> Result<Option<(MappingConfig, lukskit_volume::segment::SegmentTable)>> {
    let Ok(vol) = load_luks(o, device) else {
        // Whatever is wrong, the ordinary path reports it.
        return Ok(None);
    };
    if !lukskit_reencrypt::activation::in_reencryption(&vol) {
        return Ok(None);
    }
    if o.skip.is_some() || o.iv_large_sectors {
        return Err(CliError::invalid(
            "Options --skip and --iv-large-sectors are supported only with --type plain.",
        ));
    }
    drop(vol);
    let u = super::open_reencrypt::unlock_for_activation(o, device)?;
    let c = reencrypt_mapping_config(o, name, &u.vol, &u.table)?;
    Ok(Some((c, u.table)))
}

/// The parameters every mapping of LUKS volume `vol` starts from: type, UUID, and the
/// absolute paths of its data device and (with `--header`) its header.
fn luks_config(o: &Opts, name: &str, vol: &Volume) -> Result<MappingConfig> {
    let mut c = activation(o, name, vol.volume_type());
    c.uuid = Some(vol.uuid().to_string());
    c.device = absolute(&vol.data_path)?;
    c.header = match &o.header {
        Some(h) => Some(absolute(h)?),
        None => None,
    };
    Ok(c)
}

/// The mapping config of volume `vol` in re-encryption opened with `table`: `status` of a
/// userspace mapping shows the first segment under the new key.
fn reencrypt_mapping_config(
    o: &Opts,
    name: &str,
    vol: &Volume,
    table: &lukskit_volume::segment::SegmentTable,
) -> Result<MappingConfig> {
    let mut c = luks_config(o, name, vol)?;
    if let Some(l) = lukskit_reencrypt::activation::display_layout(table, vol.luks2()) {
        c.layout.cipher = l.cipher;
        c.layout.offset = l.offset;
        c.layout.sector_size = l.sector_size;
        c.layout.iv_offset = l.iv_offset;
        c.key_bits = l.key_bits;
    }
    c.layout.size = Some(table.size());
    Ok(c)
}

/// `reencrypt --init-only DEVICE NAME`: activate NAME with the keys the initialization
/// just unlocked (as cryptsetup activates the device after the initialization), over a
/// data device of `device_size` bytes.
pub(crate) fn activate_after_init(
    o: &Opts,
    name: &str,
    vol: Volume,
    keys: &lukskit_volume::reencrypt::Keys,
    device_size: u64,
) -> Result<()> {
    if activate::find(name).map_err(CliError::from)?.is_some() {
        return Err(CliError::busy(format!("Device {name} already exists.")));
    }
    let Some(h) = vol.luks2() else {
        return Err(CliError::invalid("Device is not a valid LUKS2 device."));
    };
    let table = lukskit_reencrypt::segments::table(h, keys, device_size)?;
    let config = reencrypt_mapping_config(o, name, &vol, &table)?;
    // The mapping (and its stored flags) open the header again, from this process or a
    // server: the write lock `vol` holds on it must go first.
    drop(vol);
    let backend =
        activate::choose_backend(backend_choice(o)?, &activation(o, name, VolumeType::Luks2))
            .map_err(CliError::from)?;
    activate_reencrypt(o, backend, config, &table)
}

/// Make the mapping of a volume in re-encryption (persistent flags as for any LUKS2
/// volume).
fn activate_reencrypt(
    o: &Opts,
    backend: activate::Backend,
    mut config: MappingConfig,
    table: &lukskit_volume::segment::SegmentTable,
) -> Result<()> {
    let mut kopts = kernel_options(o, None);
    apply_stored_flags(o, &mut config, backend, &mut kopts)?;
    activate::activate_table(backend, &config, &kopts, table).map_err(CliError::from)?;
    say_backend(o, backend, &config.name);
    if o.persistent {
        store_flags(o, &config.device, config.header.as_deref())
            .map_err(|_| CliError::invalid("Device activated but cannot make flags persistent."))?;
    }
    Ok(())
}

/// A LUKS2 volume's persistent flags apply to every activation (for the userspace backend
/// only allow-discards means anything; the performance flags are the kernel's) — except one
/// with --persistent, whose own flags become the whole set, as in cryptsetup.
fn apply_stored_flags(
    o: &Opts,
    config: &mut MappingConfig,
    backend: activate::Backend,
    kopts: &mut KernelOptions,
) -> Result<()> {
    if config.kind != VolumeType::Luks2 || o.persistent {
        return Ok(());
    }
    let header = config.header.as_deref().or(o.header.as_deref());
    let stored = Volume::load(&config.device, header, Access::Read)?.persistent_flags();
    config.allow_discards |= stored.contains(&ConfigFlag::AllowDiscards);
    if backend == activate::Backend::Kernel {
        kopts.apply_persistent(&stored);
    }
    Ok(())
}

/// `--persistent`: the command line's flags become the header's persistent flags.
fn store_flags(o: &Opts, device: &str, header: Option<&str>) -> Result<()> {
    let mut vol = Volume::load(device, header.or(o.header.as_deref()), Access::Write)?;
    vol.set_persistent_flags(&kernel_options(o, None).persistent_flags(o.allow_discards))
        .map_err(CliError::from)
}

/// What `open --nbd tcp:...` says on stderr before unlocking.
fn tcp_warning(addr: &lukskit_expose::nbd::NbdAddress) -> String {
    format!(
        "WARNING: NBD over TCP is neither encrypted nor authenticated. Anyone who can \
         connect to {addr} can read and write all plaintext of this device.\n\
         Use --tls-creds DIR (TLS with client certificates signed by DIR/ca-cert.pem), \
         --nbd unix:PATH, or make sure only trusted hosts can reach this port."
    )
}

/// What `open --nbd` says on stderr when TLS clients are not authenticated
/// (`--tls-verify-peer=no`).
fn unverified_warning(addr: &lukskit_expose::nbd::NbdAddress) -> String {
    format!(
        "WARNING: TLS clients are not authenticated: anyone who can reach {addr} can read \
         and write the volume.\n\
         Drop --tls-verify-peer=no to require client certificates signed by ca-cert.pem."
    )
}

/// Warn about an NBD export that serves plain NBD over TCP (`--tls=off` or `--tls=on`) or
/// does not authenticate its TLS clients (`--tls-verify-peer=no`).
fn tls_warnings(o: &Opts, tls: Option<&activate::NbdTlsConfig>) {
    let Some(addr) = o
        .nbd
        .as_deref()
        .and_then(|a| a.parse::<lukskit_expose::nbd::NbdAddress>().ok())
    else {
        return;
    };
    match o.tls.as_deref() {
        Some("off") if addr.is_network() => eprintln!("{}", tcp_warning(&addr)),
        Some("on") if addr.is_network() => eprintln!(
            "WARNING: --tls=on also serves clients that do not use TLS: they read and write \
             the plaintext unencrypted. Use --tls=require to refuse them."
        ),
        _ => {}
    }
    if tls.is_some_and(|t| !t.verify_peer) {
        eprintln!("{}", unverified_warning(&addr));
    }
}

/// `--engine` of `open`: `lukskit`, `kernel` or `auto` (default `lukskit`) for the serving
/// process of a userspace mapping. A kernel dm-crypt mapping always uses the kernel's crypto
/// API: `--engine lukskit` is refused there (`kernel` and `auto` say what it does anyway).
fn check_engine(o: &Opts, backend: activate::Backend) -> Result<()> {
    let Some(e) = o.engine.as_deref() else {
        return Ok(());
    };
    let req = activate::EngineRequest::from_name(e).ok_or_else(|| {
        CliError::invalid(format!("Unknown engine {e} (lukskit, kernel or auto)."))
    })?;
    if backend == activate::Backend::Kernel && req == activate::EngineRequest::Lukskit {
        return Err(CliError::invalid(
            "--engine lukskit needs lukskit's serving process (--backend userspace, --no-loop \
             or --nbd): a kernel dm-crypt mapping uses the kernel's crypto API.",
        ));
    }
    Ok(())
}

/// The mapping of a plain device and its key, from this command line's options and the
/// passphrase; `signatures`: first warn of a signature on the device (`open`, not `refresh`).
fn unlock_plain(
    o: &Opts,
    device: &str,
    name: &str,
    kernel: bool,
    signatures: bool,
) -> Result<(MappingConfig, SecretBuf)> {
    if o.header.is_some() {
        return Err(CliError::invalid(
            "Option --header is not allowed with plain mode.",
        ));
    }
    let dev = absolute(device)?;
    let p = crate::resolve::plain(o, kernel)?;
    if signatures {
        warn_of_signatures(o, device)?;
    }
    let key =
        super::plain_key::plain_key(o, &p, &format!("Enter passphrase for {device}: "), false)?;
    let layout = p.layout()?;
    let mut c = activation(o, name, VolumeType::Plain);
    c.device = dev;
    c.layout = LayoutInfo::from(&layout);
    c.key_bits = p.key_bits;
    Ok((c, key))
}

/// A plain mapping over a device that holds a file system or volume signature, as cryptsetup
/// 2.6.1 (through blkid) warns before the passphrase: the signature named on standard
/// output, then a question on a terminal ("Detected device signature(s) on D. Proceeding
/// further may damage existing data."; anything but YES aborts). Not with -q, nor with
/// `--offset` (where cryptsetup does not look), nor with `--disable-blkid`.
fn warn_of_signatures(o: &Opts, device: &str) -> Result<()> {
    if o.batch_mode || o.offset.unwrap_or(0) != 0 || o.disable_blkid {
        return Ok(());
    }
    let Some(kind) = super::signature::detect(device) else {
        return Ok(());
    };
    println!("WARNING: Device {device} already contains a '{kind}' superblock signature.");
    input::confirm(
        &format!(
            "Detected device signature(s) on {device}. Proceeding further may damage existing data."
        ),
        false,
    )
}

/// Unlock a LUKS volume as `open` does: a volume key (`--volume-key-file`,
/// `--volume-key-keyring`), or (with `tokens`) the LUKS2 tokens first, then passphrases with
/// `--tries`, as `u` asks; `verbose` says which keyslot opened.
fn luks_key(
    vol: &Volume,
    u: &UnlockRequest,
    verbose: bool,
    device: &str,
    tokens: bool,
) -> Result<SecretBuf> {
    match &u.volume_key {
        Some(VolumeKeySource::File { path, key_bits }) => {
            let bytes = super::volume_key::volume_key_bytes(vol, *key_bits)?;
            let vk = super::volume_key::read_volume_key_file(path, bytes)?;
            vol.verify_volume_key(vk.as_bytes())?;
            return Ok(vk);
        }
        Some(VolumeKeySource::Keyring(spec)) => {
            let vk = super::vk_keyring::volume_key(spec)?;
            vol.verify_volume_key(vk.as_bytes())?;
            return Ok(vk);
        }
        None => {}
    }
    if tokens {
        if let Some((slot, vk)) = super::tokens::try_tokens(vol, &u.tokens, verbose)? {
            if verbose {
                println!("Key slot {slot} unlocked.");
            }
            return Ok(vk);
        }
    }
    let (slot, vk, _pass) = super::keys::unlock_with_attempts(
        vol,
        u.attempts(&u.key_source),
        &u.key_source,
        &format!("Enter passphrase for {device}: "),
        u.key_slot,
        false,
    )?;
    if verbose {
        println!("Key slot {slot} unlocked.");
    }
    Ok(vk)
}

fn load_luks(o: &Opts, device: &str) -> Result<Volume> {
    let requested = super::requested_luks(o);
    let vol = Volume::load_requested(device, o.header.as_deref(), Access::Read, requested)?;
    match (o.r#type.as_deref(), vol.type_name()) {
        (Some("luks1"), "LUKS2") | (Some("luks2"), "LUKS1") => Err(CliError::invalid(format!(
            "Device {device} is not a valid LUKS device."
        ))),
        _ => Ok(vol),
    }
}

fn unlock_luks(
    o: &Opts,
    device: &str,
    name: &str,
) -> Result<(MappingConfig, SecretBuf, Option<u32>)> {
    if o.skip.is_some() || o.iv_large_sectors {
        return Err(CliError::invalid(
            "Options --skip and --iv-large-sectors are supported only with --type plain.",
        ));
    }
    let vol = load_luks(o, device)?;
    let (layout, integrity) = DataLayout::from_volume_with_integrity(&vol)?;
    let u = unlock(o);
    let vk = luks_key(
        &vol,
        &u,
        o.verbose,
        u.header.as_deref().unwrap_or(device),
        true,
    )?;
    let mut c = luks_config(o, name, &vol)?;
    c.layout = LayoutInfo::from(&layout);
    c.layout.integrity = integrity;
    c.key_bits = (vk.len() * 8) as u32;
    Ok((c, vk, vol.segment_digest_id()?))
}

/// The hidden serving-process action ([`activate::userspace::launch::SERVE_ARG`]). Never
/// returns.
pub fn serve_child() -> ! {
    crate::hardening::serving_process();
    std::process::exit(activate::userspace::launch::serve_main())
}

/// `open --test-passphrase`: check a passphrase without activating.
fn test_passphrase(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 2, "<device> [<name>]")?;
    if let Some(t) = o.r#type.as_deref() {
        if !matches!(t, "luks" | "luks1" | "luks2") {
            return Err(CliError::invalid(format!(
                "Device type {t} is not supported yet."
            )));
        }
    }
    let device = &args[0];
    let u = unlock(o);
    let vol = load_luks(o, device)?;
    if lukskit_reencrypt::activation::in_reencryption(&vol)
        && !u.unbound
        && !matches!(u.volume_key, Some(VolumeKeySource::File { .. }))
    {
        drop(vol);
        return super::open_reencrypt::test_passphrase(o, device);
    }
    if u.volume_key.is_some() && !u.unbound {
        // cryptsetup checks the volume key file against the header's digest.
        luks_key(&vol, &u, o.verbose, device, false)?;
        return Ok(());
    }
    if vol.type_name() == "LUKS2" && !u.unbound {
        if let Some((slot, _vk)) = super::tokens::try_tokens(&vol, &u.tokens, o.verbose)? {
            if o.verbose {
                println!("Key slot {slot} unlocked.");
            }
            return Ok(());
        }
    }
    // A keyslot named with --key-slot is tested whether it is bound or unbound, with or
    // without --unbound (cryptsetup).
    let unbound = match u.key_slot {
        Some(s) => vol.keyslot_unbound(s)?,
        None => u.unbound,
    };
    let (slot, _vk, _pass) = super::keys::unlock_with_attempts(
        &vol,
        u.attempts(&u.key_source),
        &u.key_source,
        &format!("Enter passphrase for {device}: "),
        u.key_slot,
        unbound,
    )?;
    if o.verbose {
        println!("Key slot {slot} unlocked.");
    }
    Ok(())
}

/// `close` (`remove`, `luksClose`, `plainClose`).
pub fn close(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    let m = active(&args[0])?;
    if o.cancel_deferred {
        return m.cancel_deferred().map_err(CliError::from);
    }
    let tcrypt = m.kind().is_ok_and(|k| k == "TCRYPT");
    m.close(o.deferred).map_err(CliError::from)?;
    if tcrypt {
        // The lower layers of a cascade (cryptsetup's TCRYPT_deactivate).
        super::tcrypt::close_lower_layers(activate::mapping_name(&args[0]), o.deferred)?;
    }
    Ok(())
}

/// `status NAME`: cryptsetup's text (exit 4 and "is inactive." when there is no mapping).
pub fn status(o: &Opts, args: &[String]) -> Result<()> {
    // Without a name lukskit lists its mappings; under the name `cryptsetup` (scripts that
    // run lukskit as cryptsetup) the name is required, as cryptsetup requires it.
    if args.is_empty() && !crate::invoked_as_cryptsetup() {
        return list_mappings();
    }
    need_args(args, 1, 1, "<name>")?;
    let name = activate::mapping_name(&args[0]);
    let Some(m) = activate::find(name).map_err(CliError::from)? else {
        println!("/dev/mapper/{name} is inactive.");
        return Err(CliError::device(""));
    };
    let mut st = m.status(o.header.as_deref()).map_err(CliError::from)?;
    let reenc = reencryption_status(o, &m, &mut st);
    let mut text = format_status(&st);
    if reenc {
        // cryptsetup prints it right after the type.
        if let Some(i) = text.find("  cipher:") {
            text.insert_str(i, "  reencryption:  in-progress\n");
        }
    }
    print!("{text}");
    Ok(())
}

/// `status` without a name (lukskit's own): every open mapping, one line each, as `dmsetup
/// ls` and `cryptsetup status` together would show them: name, type, backend, the data
/// device (the image file behind a loop device), size.
fn list_mappings() -> Result<()> {
    let mappings = activate::list().map_err(CliError::from)?;
    if mappings.is_empty() {
        println!("No open mappings.");
        return Ok(());
    }
    let mut rows = vec![[
        "NAME".to_string(),
        "TYPE".to_string(),
        "BACKEND".to_string(),
        "DEVICE".to_string(),
        "SIZE".to_string(),
    ]];
    for m in &mappings {
        let (kind, backend, device, size) = match m.status(None) {
            Ok(st) => (
                st.kind.clone(),
                match &st.exposure {
                    Exposure::Kernel => "dm-crypt".to_string(),
                    Exposure::FuseLoop { loop_device, .. } => format!("FUSE+{loop_device}"),
                    Exposure::FuseFile { .. } => "FUSE file".to_string(),
                    Exposure::Nbd { address } => format!("NBD {address}"),
                    _ => "?".to_string(),
                },
                st.loop_file.clone().unwrap_or(st.device.clone()),
                human_size(st.size_sectors * 512),
            ),
            // A serving process that died: its state is left, its data is not reachable.
            Err(_) => (
                m.kind().unwrap_or_else(|_| "?".into()),
                "(not responding)".into(),
                "?".into(),
                "?".into(),
            ),
        };
        rows.push([m.name().to_string(), kind, backend, device, size]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", line.join("  ").trim_end());
    }
    Ok(())
}

/// Bytes in binary units, one decimal ("64.0 MiB").
fn human_size(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

/// A LUKS2 mapping whose header is in re-encryption: cryptsetup's `status` says so and
/// shows the cipher, key size and sector size of the layout after the re-encryption.
fn reencryption_status(o: &Opts, m: &Mapping, st: &mut Status) -> bool {
    if st.kind != "LUKS2" {
        return false;
    }
    let header = o.header.clone().or_else(|| m.header().ok().flatten());
    let Ok(device) = m.device() else {
        return false;
    };
    let Ok(vol) = Volume::load(&device, header.as_deref(), Access::Read) else {
        return false;
    };
    let Some(h) = vol.luks2() else {
        return false;
    };
    if !lukskit_reencrypt::activation::in_reencryption(&vol) {
        return false;
    }
    if let Some(l) = lukskit_reencrypt::activation::status_layout(h) {
        st.cipher = l.cipher;
        st.key_bits = l.key_bits;
        st.sector_size = l.sector_size;
    }
    true
}

/// cryptsetup 2.6.1's `status` text, and for userspace mappings how they are exposed.
fn format_status(st: &Status) -> String {
    let mut s = format!(
        "{} is active{}.\n",
        st.path,
        if st.in_use { " and is in use" } else { "" }
    );
    s += &format!("  type:    {}\n", st.kind);
    s += &format!("  cipher:  {}\n", st.cipher);
    s += &format!("  keysize: {} bits\n", st.key_bits);
    let location = match st.exposure {
        Exposure::Kernel if st.key_in_keyring => "keyring",
        Exposure::Kernel => "dm-crypt",
        _ => "lukskit serving process",
    };
    s += &format!("  key location: {location}\n");
    if let Some((integrity, bits)) = &st.integrity {
        s += &format!("  integrity: {integrity}\n");
        if *bits > 0 {
            s += &format!("  integrity keysize: {bits} bits\n");
        }
    }
    if let Some(h) = &st.header {
        s += &format!("  header:  {h}\n");
    }
    s += &format!("  device:  {}\n", st.device);
    if let Some(f) = &st.loop_file {
        s += &format!("  loop:    {f}\n");
    }
    s += &format!("  sector size:  {}\n", st.sector_size);
    s += &format!("  offset:  {} sectors\n", st.offset_sectors);
    s += &format!("  size:    {} sectors\n", st.size_sectors);
    // As cryptsetup 2.6.1's action_status: only a non-zero IV offset (dm-crypt's
    // `iv_offset`, `--skip` in plain mode) has a line, for every type.
    if st.iv_offset_sectors != 0 {
        s += &format!("  skipped: {} sectors\n", st.iv_offset_sectors);
    }
    s += &format!(
        "  mode:    {}{}\n",
        if st.read_only {
            "readonly"
        } else {
            "read/write"
        },
        if st.suspended { " (suspended)" } else { "" }
    );
    if !st.flags.is_empty() {
        s += &format!("  flags:   {}\n", st.flags.join(" "));
    }
    match &st.exposure {
        Exposure::FuseLoop {
            fuse_file,
            loop_device,
            direct_io,
        } => {
            s += &format!("  fuse file: {fuse_file}\n");
            s += &format!(
                "  loop device: {loop_device}{}\n",
                if *direct_io { " (direct I/O)" } else { "" }
            );
        }
        Exposure::FuseFile { fuse_file } => s += &format!("  fuse file: {fuse_file}\n"),
        Exposure::Nbd { address } => s += &format!("  nbd:     {address}\n"),
        _ => {}
    }
    if let Some((pid, alive)) = st.server {
        s += &format!(
            "  server:  pid {pid}{}\n",
            if alive {
                ""
            } else {
                " (not running: run close to clean up)"
            }
        );
    }
    if let Some(e) = &st.last_error {
        s += &format!("  last I/O error: {e}\n");
    }
    if let Some(e) = &st.engine {
        s += &format!("  engine:  {}\n", engine_text(e));
    }
    s
}

/// The `engine:` line of a userspace mapping's status: `kernel xts(aes), driver xts-aes-aesni
/// (cpu)` or `lukskit VAES-256`, and `(--engine auto)` when measured or remembered.
fn engine_text(e: &activate::EngineInUse) -> String {
    let mut s = e.kind.clone();
    if let Some(n) = &e.kernel_name {
        s += &format!(" {n}");
    }
    match &e.driver {
        Some((d, kind)) => s += &format!(", driver {d} ({kind})"),
        None if e.kind == "kernel" => s += ", driver unknown",
        None => {}
    }
    if let Some(i) = &e.implementation {
        s += &format!(" {i}");
    }
    if e.auto {
        s += " (--engine auto)";
    }
    s
}

/// `luksSuspend NAME`.
pub fn suspend(_o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    active(&args[0])?.suspend().map_err(CliError::from)
}

/// Unlock the volume behind mapping `m` again (LUKS2 tokens first, as cryptsetup's resize,
/// luksResume and refresh try them; then passphrase, `-d`, `--volume-key-file`; the
/// detached header from `--header` or from the mapping's record), checking it is the volume
/// the mapping was made for. Returns the volume key and the LUKS2 segment digest.
fn unlock_for(o: &Opts, m: &Mapping) -> Result<(SecretBuf, Option<u32>)> {
    let name = m.name();
    let kind = m.kind().map_err(CliError::from)?;
    if !kind.starts_with("LUKS") {
        return Err(CliError::invalid(format!(
            "Device {name} is not a LUKS device."
        )));
    }
    let device = m.device().map_err(CliError::from)?;
    let header = match &o.header {
        Some(h) => Some(h.clone()),
        None => m.header().map_err(CliError::from)?,
    };
    let vol = Volume::load(&device, header.as_deref(), Access::Read)?;
    let uuid = m.uuid().map_err(CliError::from)?;
    if uuid.is_some_and(|u| !u.eq_ignore_ascii_case(vol.uuid())) {
        return Err(CliError::device(format!(
            "Device {device} is no longer the LUKS device {name} was opened from."
        )));
    }
    let mut u = unlock(o);
    u.header = header;
    let vk = luks_key(
        &vol,
        &u,
        o.verbose,
        u.header.as_deref().unwrap_or(&device),
        true,
    )?;
    Ok((vk, vol.segment_digest_id()?))
}

/// `luksResume NAME`: ask for a passphrase again, unlock with the header, give the mapping
/// its key again.
pub fn resume(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    let m = active(&args[0])?;
    if !m.is_suspended().map_err(CliError::from)? {
        return Err(CliError::invalid(format!(
            "Volume {} is not suspended.",
            m.name()
        )));
    }
    let (vk, digest) = unlock_for(o, &m)?;
    // --disable-keyring: the key goes to dm-crypt itself, not through the kernel keyring
    // (a mapping is only named after a keyring key through its digest).
    let digest = if o.disable_keyring { None } else { digest };
    m.resume(&vk, digest).map_err(CliError::from)
}

/// `refresh NAME`: unlock again and reload the mapping with the dm-crypt flags of this
/// command line and the header's persistent ones; with `--persistent` the command line's
/// flags alone, which are then stored.
pub fn refresh(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    let m = active(&args[0])?;
    if m.kind()? == "PLAIN" {
        // A plain mapping: its key again from the passphrase and this command line's options
        // (the mapping layer refuses one that is not the live key).
        let mut po = o.clone();
        po.r#type = Some("plain".into());
        let device = m.device()?;
        let kernel = matches!(m.status(None).map(|s| s.exposure), Ok(Exposure::Kernel));
        // (No look for signatures on a refresh, as cryptsetup.)
        let (_, key) = unlock_plain(&po, &device, m.name(), kernel, false)?;
        return m
            .refresh(&key, o.allow_discards, &kernel_options(o, None))
            .map_err(CliError::from);
    }
    let (vk, digest) = unlock_for(o, &m)?;
    let device = m.device().map_err(CliError::from)?;
    let header = match &o.header {
        Some(h) => Some(h.clone()),
        None => m.header().map_err(CliError::from)?,
    };
    let stored = if o.persistent {
        // The flags of this command line become the whole set, as in cryptsetup.
        Vec::new()
    } else {
        Volume::load(&device, header.as_deref(), Access::Read)?.persistent_flags()
    };
    let mut kopts = kernel_options(o, digest);
    kopts.apply_persistent(&stored);
    let discards = o.allow_discards || stored.contains(&ConfigFlag::AllowDiscards);
    m.refresh(&vk, discards, &kopts).map_err(CliError::from)?;
    if o.persistent {
        store_flags(o, &device, header.as_deref())
            .map_err(|_| CliError::invalid("Device activated but cannot make flags persistent."))?;
    }
    Ok(())
}

/// `resize NAME [--size SECTORS | --device-size BYTES]`: grow or shrink an active mapping
/// (to the whole device when no size is given).
pub fn resize(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    let m = active(&args[0])?;
    let sectors = match (&o.size, &o.device_size) {
        (Some(_), Some(_)) => {
            return Err(CliError::invalid(
                "Options --size and --device-size cannot be combined.",
            ))
        }
        (Some(s), None) => Some(*s),
        (None, Some(d)) => {
            let bytes = crate::args::parse_device_size(d)
                .ok_or_else(|| CliError::invalid("Invalid device size specification."))?;
            if !bytes.is_multiple_of(512) {
                return Err(CliError::invalid(
                    "Device size must be multiple of 512 bytes sector.",
                ));
            }
            Some(bytes / 512)
        }
        (None, None) => None,
    };
    // cryptsetup refuses to resize a suspended mapping (its key is wiped, its I/O held).
    if m.is_suspended().map_err(CliError::from)? {
        return Err(CliError::busy(format!(
            "Device {} is suspended, resume it before resizing it.",
            activate::mapping_name(&args[0])
        )));
    }
    if !m.resize_needs_volume_key() {
        m.resize(sectors, None).map_err(CliError::from)?;
        if let Ok(Exposure::Nbd { address }) = m.status(None).map(|s| s.exposure) {
            // NBD has no way to tell a connected client that the export changed size.
            eprintln!(
                "The NBD export {address} has the new size for new connections; clients \
                 connected now keep the old size until they reconnect."
            );
        }
        return Ok(());
    }
    if o.disable_keyring {
        return Err(CliError::invalid(
            "Resize of active device requires volume key in keyring but --disable-keyring \
             option is set.",
        ));
    }
    // The table names its key in the kernel keyring: unlock (tokens first) to put it there
    // again.
    let (vk, digest) = unlock_for(o, &m)?;
    m.resize(sectors, Some((&vk, digest)))
        .map_err(CliError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_layout() {
        let st = Status {
            path: "/dev/mapper/t".into(),
            kind: "LUKS2".into(),
            cipher: "aes-xts-plain64".into(),
            key_bits: 512,
            key_in_keyring: false,
            integrity: None,
            header: None,
            device: "/img".into(),
            loop_file: None,
            sector_size: 4096,
            offset_sectors: 32768,
            size_sectors: 2048,
            iv_offset_sectors: 0,
            read_only: false,
            suspended: true,
            in_use: true,
            flags: vec![],
            exposure: Exposure::FuseLoop {
                fuse_file: "/run/lukskit/t/device".into(),
                loop_device: "/dev/loop3".into(),
                direct_io: true,
            },
            server: Some((42, true)),
            last_error: None,
            engine: Some(activate::EngineInUse {
                kind: "kernel".into(),
                auto: true,
                kernel_name: Some("xts(aes)".into()),
                driver: Some(("xts-aes-aesni".into(), "cpu".into())),
                implementation: None,
            }),
        };
        let s = format_status(&st);
        assert!(s.starts_with("/dev/mapper/t is active and is in use.\n  type:    LUKS2\n"));
        assert!(s.contains("  key location: lukskit serving process\n"));
        assert!(s.contains("  offset:  32768 sectors\n  size:    2048 sectors\n"));
        assert!(s.contains("  mode:    read/write (suspended)\n"));
        assert!(s.contains("  loop device: /dev/loop3 (direct I/O)\n  server:  pid 42\n"));
        assert!(
            s.ends_with("  engine:  kernel xts(aes), driver xts-aes-aesni (cpu) (--engine auto)\n")
        );
    }

    /// A kernel plain mapping's status from its dm-crypt table line (as cryptsetup 2.6.1's
    /// `open --type plain` makes it): like cryptsetup's action_status, a `skipped:` line only
    /// for a non-zero IV offset (`--skip`), not for `--iv-large-sectors` without one.
    #[test]
    fn status_skipped_line_only_for_a_non_zero_iv_offset() {
        let key = "aa".repeat(32);
        let plain = |line: &str| -> Status {
            let Ok(lukskit_dm::Target::Crypt(t)) = lukskit_dm::Target::parse_line(line, true)
            else {
                panic!("not a crypt target: {line}");
            };
            Status {
                path: "/dev/mapper/p".into(),
                kind: "PLAIN".into(),
                cipher: t.cipher.clone(),
                key_bits: (t.key.size() * 8) as u32,
                key_in_keyring: false,
                integrity: None,
                header: None,
                device: "/dev/loop0".into(),
                loop_file: Some("/img".into()),
                sector_size: t.sector_size,
                offset_sectors: t.offset,
                size_sectors: t.sectors,
                iv_offset_sectors: t.iv_offset,
                read_only: false,
                suspended: false,
                in_use: false,
                flags: vec![],
                exposure: Exposure::Kernel,
                server: None,
                last_error: None,
                engine: None,
            }
        };
        // --iv-large-sectors --sector-size 4096, no --skip.
        let large = format_status(&plain(&format!(
            "0 2048 crypt aes-cbc-essiv:sha256 {key} 0 7:0 0 2 iv_large_sectors sector_size:4096"
        )));
        assert!(!large.contains("skipped:"), "{large}");
        assert!(
            large.contains("  size:    2048 sectors\n  mode:    read/write\n"),
            "{large}"
        );
        // No options at all.
        let bare = format_status(&plain(&format!(
            "0 2048 crypt aes-cbc-essiv:sha256 {key} 0 7:0 0"
        )));
        assert!(!bare.contains("skipped:"), "{bare}");
        // --skip 16 --offset 8 (tests/refvm/kernel/open.sh's plain case).
        let skip = format_status(&plain(&format!(
            "0 2040 crypt aes-cbc-essiv:sha256 {key} 16 7:0 8"
        )));
        assert!(
            skip.contains("  offset:  8 sectors\n  size:    2040 sectors\n  skipped: 16 sectors\n"),
            "{skip}"
        );
    }
}
