# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_lukskit_global_optspecs
    string join \n ?/help V/version v/verbose debug q/batch-mode y/verify-passphrase c/cipher= s/key-size= h/hash= i/iter-time= pbkdf-memory= pbkdf-parallel= pbkdf-force-iterations= d/key-file= keyfile-offset= l/keyfile-size= new-keyfile= new-keyfile-offset= new-keyfile-size= S/key-slot= new-key-slot= volume-key-file= dump-volume-key dump-json-metadata unbound test-passphrase header= header-backup-file= o/offset= sector-size= label= subsystem= uuid= luks2-metadata-size= luks2-keyslots-size= T/tries= t/timeout= token-id= new-token-id= json-file= key-description= token-replace token-only token-type= tpm2-device= token-timeout= link-vk-to-keyring= volume-key-keyring= tpm2-pcrs= tpm2-pcr-bank= tpm2-with-pin= tang-url= tang-thumbprint= disable-locks disable-keyring I/integrity= integrity-no-wipe integrity-legacy-padding integrity-no-journal disable-blkid disable-external-tokens keyslot-cipher= keyslot-key-size= p/skip= b/size= iv-large-sectors threads= r/readonly allow-discards no-loop nbd= shared serialize-memory-hard-pbkdf perf-same_cpu_crypt perf-submit_from_crypt_cpus perf-no_read_workqueue perf-no_write_workqueue device-size= persistent deferred cancel-deferred nbd-connections= tls-creds= tls-verify-peer= engine= json usage test-args align-payload= crypttab= force-password refresh use-random use-urandom active-name= encrypt decrypt force-offline-reencrypt hotzone-size= init-only resume-only reduce-device-size= resilience= resilience-hash= progress-json progress-frequency= keep-key B/block-size= N/new use-directio use-fsync write-log M/type= pbkdf= priority= backend= tls=
end

function __fish_lukskit_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_lukskit_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_lukskit_using_subcommand
    set -l cmd (__fish_lukskit_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c lukskit -n "__fish_lukskit_needs_command" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s i -l iter-time -d 'PBKDF benchmark time in ms' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l pbkdf-memory -d 'Argon2 maximum memory in KiB' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l pbkdf-parallel -d 'Argon2 parallel threads' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l pbkdf-force-iterations -d 'Fixed PBKDF iterations / Argon2 time cost (no benchmark)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_needs_command" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l new-keyfile -d 'New key file (luksAddKey, luksChangeKey)' -r -F
complete -c lukskit -n "__fish_lukskit_needs_command" -l new-keyfile-offset -d 'Bytes to skip in the new key file' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l new-keyfile-size -d 'Bytes to read from the new key file' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l new-key-slot -d 'Keyslot number for the new key' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_needs_command" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_needs_command" -l header-backup-file -d 'Header backup file' -r -F
complete -c lukskit -n "__fish_lukskit_needs_command" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l label -d 'LUKS2 label' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l subsystem -d 'LUKS2 subsystem' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l uuid -d 'UUID' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l luks2-metadata-size -d 'LUKS2 metadata size (bytes, with optional k/m suffix)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l luks2-keyslots-size -d 'LUKS2 keyslots area size (bytes, with optional k/m suffix)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l new-token-id -d 'Token whose passphrase the new keyslot takes, assigned to it (luksAddKey)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l json-file -d 'Token JSON file (token import/export)' -r -F
complete -c lukskit -n "__fish_lukskit_needs_command" -l key-description -d 'Keyring key description (token add)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l token-timeout -d 'open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab\'s token-timeout=). Default: no wait' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l link-vk-to-keyring -d 'open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l volume-key-keyring -d 'open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l tpm2-pcrs -d 'token enroll-tpm2: the PCRs to seal against, as systemd-cryptenroll takes them (7+8; "" for none; default 7)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l tpm2-pcr-bank -d 'token enroll-tpm2: the PCR bank (sha256, sha1; default sha256, else sha1)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l tpm2-with-pin -d 'token enroll-tpm2: ask for a PIN the TPM checks at unlock (yes|no)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l tang-url -d 'token bind-tang: the tang server (`http://HOST[:PORT]`)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l tang-thumbprint -d 'token bind-tang: thumbprint of the tang signing key to trust (tang-show-keys)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s I -l integrity -d 'luksFormat (LUKS2): authenticated encryption through the kernel\'s dm-integrity (hmac-sha256, hmac-sha512, hmac-sha1, aead, poly1305)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l keyslot-cipher -d 'Keyslot cipher for new keyslots (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l keyslot-key-size -d 'Keyslot key size in bits (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l threads -d 'Threads for the sector engine (benchmark, image; default: benchmark 1, image all)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l nbd -d 'open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l device-size -d 'resize: the new size in bytes (units K, M, G, ... as cryptsetup\'s `--device-size`)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l nbd-connections -d 'open --nbd: most NBD clients connected at once (default 8); more are refused' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l tls-creds -d 'open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem, ca-cert.pem), as qemu-nbd\'s and nbdkit\'s' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l tls-verify-peer -d 'open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the default with TLS, as qemu-nbd\'s; the option alone also means yes) or `no` (any client that can connect reads and writes the plaintext)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l align-payload -d 'luksFormat: align the data at a multiple of this many 512-byte sectors (deprecated in cryptsetup, use --offset)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l crypttab -d 'crypttab: the table to read instead of /etc/crypttab' -r -F
complete -c lukskit -n "__fish_lukskit_needs_command" -l active-name -d 'Override device autodetection of dm device to be reencrypted' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l hotzone-size -d 'Maximal reencryption hotzone size.' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l reduce-device-size -d 'Reduce data device size (move data offset). DANGEROUS!' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l resilience -d 'Reencryption hotzone resilience type (checksum,journal,none)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l resilience-hash -d 'Reencryption hotzone checksums hash' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -l progress-frequency -d 'Progress line update (in seconds)' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s B -l block-size -d 'Reencryption block size' -r
complete -c lukskit -n "__fish_lukskit_needs_command" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_needs_command" -l pbkdf -d 'PBKDF algorithm: pbkdf2, argon2i, argon2id' -r -f -a "pbkdf2\t''
argon2i\t''
argon2id\t''"
complete -c lukskit -n "__fish_lukskit_needs_command" -l priority -d 'Keyslot priority: ignore, normal, prefer' -r -f -a "ignore\t''
normal\t''
prefer\t''"
complete -c lukskit -n "__fish_lukskit_needs_command" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_needs_command" -l tls -d 'open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered) or `off` (plain NBD: anyone who can connect reads the plaintext)' -r -f -a "off\t''
on\t''
require\t''"
complete -c lukskit -n "__fish_lukskit_needs_command" -s ? -l help -d 'Show help'
complete -c lukskit -n "__fish_lukskit_needs_command" -s V -l version -d 'Print the version'
complete -c lukskit -n "__fish_lukskit_needs_command" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_needs_command" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_needs_command" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_needs_command" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_needs_command" -l dump-volume-key -d 'Print the volume key (luksDump)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l dump-json-metadata -d 'Print the LUKS2 JSON metadata (luksDump)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l unbound -d 'Unbound keyslot (no data segment)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l test-passphrase -d 'Only check the passphrase (open)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l token-replace -d 'Replace an existing token'
complete -c lukskit -n "__fish_lukskit_needs_command" -l token-only -d 'open: do not ask for a passphrase; unlock with a token or fail'
complete -c lukskit -n "__fish_lukskit_needs_command" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l disable-keyring -d 'open, refresh (kernel backend): give dm-crypt the LUKS2 volume key in the table, not through the kernel keyring'
complete -c lukskit -n "__fish_lukskit_needs_command" -l integrity-no-wipe -d 'luksFormat --integrity: do not wipe the device (tags stay invalid until written)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l integrity-legacy-padding -d 'luksFormat --integrity: the legacy dm-integrity metadata padding (old kernels)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l integrity-no-journal -d 'open: dm-integrity without its journal (faster, no crash consistency of tags)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l disable-blkid -d 'Skip the checks for existing signatures (file systems, LUKS): luksFormat\'s and plain open\'s warnings, reencrypt --encrypt\'s refusal of broken LUKS metadata (cryptsetup 2.7\'s option; lukskit reads signatures itself, without blkid)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l disable-external-tokens -d 'Accepted for compatibility: lukskit has no external token plugins'
complete -c lukskit -n "__fish_lukskit_needs_command" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_needs_command" -s r -l readonly -d 'Open the mapping read-only'
complete -c lukskit -n "__fish_lukskit_needs_command" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l no-loop -d 'open: only the FUSE plaintext file, no loop device and no /dev/mapper link'
complete -c lukskit -n "__fish_lukskit_needs_command" -l shared -d 'open (plain): the device may be shared with other mappings (non-overlapping segments)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l serialize-memory-hard-pbkdf -d 'open: wait for the turn of a memory-hard (Argon2 above 32 MiB) key derivation, one process at a time, as cryptsetup (lock /run/cryptsetup/LN_memory-hard-access; an OOM workaround for many volumes unlocked at once)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_needs_command" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_needs_command" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_needs_command" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_needs_command" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_needs_command" -l deferred -d 'close: remove the mapping when its last user closes it'
complete -c lukskit -n "__fish_lukskit_needs_command" -l cancel-deferred -d 'close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use'
complete -c lukskit -n "__fish_lukskit_needs_command" -l json -d 'Machine-readable output (benchmark, engines)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l usage -d 'Display brief usage'
complete -c lukskit -n "__fish_lukskit_needs_command" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l force-password -d 'Accepted for compatibility: lukskit has no password quality check to disable'
complete -c lukskit -n "__fish_lukskit_needs_command" -l refresh -d 'open: refresh the active device NAME (the same as the `refresh` action)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l use-random -d 'luksFormat: accepted for compatibility: lukskit\'s keys always come from getrandom(2), which waits until the kernel\'s random pool is initialized (as /dev/random does)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l use-urandom -d 'luksFormat: accepted for compatibility (see `--use-random`)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l encrypt -d 'Encrypt LUKS2 device (in-place encryption).'
complete -c lukskit -n "__fish_lukskit_needs_command" -l decrypt -d 'Decrypt LUKS2 device (remove encryption).'
complete -c lukskit -n "__fish_lukskit_needs_command" -l force-offline-reencrypt -d 'Force offline LUKS2 reencryption and bypass active device detection.'
complete -c lukskit -n "__fish_lukskit_needs_command" -l init-only -d 'Initialize LUKS2 reencryption in metadata only.'
complete -c lukskit -n "__fish_lukskit_needs_command" -l resume-only -d 'Resume initialized LUKS2 reencryption only.'
complete -c lukskit -n "__fish_lukskit_needs_command" -l progress-json -d 'Print progress data in json format (suitable for machine processing)'
complete -c lukskit -n "__fish_lukskit_needs_command" -l keep-key -d 'Do not change volume key.'
complete -c lukskit -n "__fish_lukskit_needs_command" -s N -l new -d 'Create new header on not encrypted device'
complete -c lukskit -n "__fish_lukskit_needs_command" -l use-directio -d 'Use direct-io when accessing devices'
complete -c lukskit -n "__fish_lukskit_needs_command" -l use-fsync -d 'Use fsync after each block'
complete -c lukskit -n "__fish_lukskit_needs_command" -l write-log -d 'Update log file after every block'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "open" -d 'open device as <name>'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "create" -d 'open device as <name>'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "plainOpen" -d 'open device as <name>'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksOpen" -d 'open device as <name>'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "loopaesOpen" -d 'open device as <name>'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "tcryptOpen" -d 'open device as <name>'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "bitlkOpen" -d 'open device as <name>'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "fvault2Open" -d 'open device as <name>'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "close" -d 'close device (remove mapping)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "remove" -d 'close device (remove mapping)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "plainClose" -d 'close device (remove mapping)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksClose" -d 'close device (remove mapping)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "loopaesClose" -d 'close device (remove mapping)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "tcryptClose" -d 'close device (remove mapping)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "bitlkClose" -d 'close device (remove mapping)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "fvault2Close" -d 'close device (remove mapping)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "resize" -d 'resize active device'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "refresh" -d 'refresh parameters of an active device'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "status" -d 'show device status'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "benchmark" -d 'benchmark cipher'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "repair" -d 'try to repair on-disk metadata'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "erase" -d 'erase all keyslots (remove encryption key)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksErase" -d 'erase all keyslots (remove encryption key)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "reencrypt" -d 'reencrypt LUKS2 device'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "convert" -d 'convert LUKS from/to LUKS2 format'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "config" -d 'set permanent configuration options for LUKS2'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksFormat" -d 'formats a LUKS device'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksAddKey" -d 'add key to LUKS device'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksRemoveKey" -d 'removes supplied key or key file from LUKS device'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksChangeKey" -d 'changes supplied key or key file of LUKS device'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksConvertKey" -d 'converts a key to new pbkdf parameters'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksKillSlot" -d 'wipes key with number <key slot> from LUKS device'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksUUID" -d 'print UUID of LUKS device (set it with --uuid)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "isLuks" -d 'tests <device> for LUKS partition header'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksDump" -d 'dump LUKS partition information'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "tcryptDump" -d 'dump TCRYPT device information'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "bitlkDump" -d 'dump BITLK device information'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "fvault2Dump" -d 'dump FVAULT2 device information'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksSuspend" -d 'Suspend LUKS device and wipe key (all IOs are frozen)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksResume" -d 'Resume suspended LUKS device'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksHeaderBackup" -d 'Backup LUKS device header and keyslots'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "luksHeaderRestore" -d 'Restore LUKS device header and keyslots'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "token" -d 'Manipulate LUKS2 tokens (bind-tang, bind-clevis DEVICE tpm2|sss|tang CONFIG: clevis tokens; enroll-tpm2: a systemd-tpm2 token; unenroll: tokens and their keyslots; lukskit)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "crypttab" -d 'open, close or list the volumes of /etc/crypttab (lukskit)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "rename" -d 'rename an active kernel mapping (lukskit)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "engines" -d 'show the kernel drivers dm-crypt would use and lukskit\'s own engine (lukskit)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "image" -d 'writes a new LUKS1/LUKS2/plain image holding a file (lukskit)'
complete -c lukskit -n "__fish_lukskit_needs_command" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l nbd -d 'open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l nbd-connections -d 'open --nbd: most NBD clients connected at once (default 8); more are refused' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l tls-creds -d 'open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem, ca-cert.pem), as qemu-nbd\'s and nbdkit\'s' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l tls -d 'open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered) or `off` (plain NBD: anyone who can connect reads the plaintext)' -r -f -a "off\t''
on\t''
require\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l tls-verify-peer -d 'open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the default with TLS, as qemu-nbd\'s; the option alone also means yes) or `no` (any client that can connect reads and writes the plaintext)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l token-timeout -d 'open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab\'s token-timeout=). Default: no wait' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l link-vk-to-keyring -d 'open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l volume-key-keyring -d 'open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s r -l readonly -d 'Open the mapping read-only'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l test-passphrase -d 'Only check the passphrase (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l shared -d 'open (plain): the device may be shared with other mappings (non-overlapping segments)'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l no-loop -d 'open: only the FUSE plaintext file, no loop device and no /dev/mapper link'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l integrity-no-journal -d 'open: dm-integrity without its journal (faster, no crash consistency of tags)'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l refresh -d 'open: refresh the active device NAME (the same as the `refresh` action)'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l token-only -d 'open: do not ask for a passphrase; unlock with a token or fail'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand open" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l nbd -d 'open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l nbd-connections -d 'open --nbd: most NBD clients connected at once (default 8); more are refused' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l tls-creds -d 'open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem, ca-cert.pem), as qemu-nbd\'s and nbdkit\'s' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l tls -d 'open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered) or `off` (plain NBD: anyone who can connect reads the plaintext)' -r -f -a "off\t''
on\t''
require\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l tls-verify-peer -d 'open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the default with TLS, as qemu-nbd\'s; the option alone also means yes) or `no` (any client that can connect reads and writes the plaintext)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l token-timeout -d 'open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab\'s token-timeout=). Default: no wait' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l link-vk-to-keyring -d 'open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l volume-key-keyring -d 'open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s r -l readonly -d 'Open the mapping read-only'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l test-passphrase -d 'Only check the passphrase (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l shared -d 'open (plain): the device may be shared with other mappings (non-overlapping segments)'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l no-loop -d 'open: only the FUSE plaintext file, no loop device and no /dev/mapper link'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l integrity-no-journal -d 'open: dm-integrity without its journal (faster, no crash consistency of tags)'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l refresh -d 'open: refresh the active device NAME (the same as the `refresh` action)'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l token-only -d 'open: do not ask for a passphrase; unlock with a token or fail'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand create" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l nbd -d 'open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l nbd-connections -d 'open --nbd: most NBD clients connected at once (default 8); more are refused' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l tls-creds -d 'open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem, ca-cert.pem), as qemu-nbd\'s and nbdkit\'s' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l tls -d 'open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered) or `off` (plain NBD: anyone who can connect reads the plaintext)' -r -f -a "off\t''
on\t''
require\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l tls-verify-peer -d 'open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the default with TLS, as qemu-nbd\'s; the option alone also means yes) or `no` (any client that can connect reads and writes the plaintext)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l token-timeout -d 'open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab\'s token-timeout=). Default: no wait' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l link-vk-to-keyring -d 'open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l volume-key-keyring -d 'open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s r -l readonly -d 'Open the mapping read-only'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l test-passphrase -d 'Only check the passphrase (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l shared -d 'open (plain): the device may be shared with other mappings (non-overlapping segments)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l no-loop -d 'open: only the FUSE plaintext file, no loop device and no /dev/mapper link'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l integrity-no-journal -d 'open: dm-integrity without its journal (faster, no crash consistency of tags)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l refresh -d 'open: refresh the active device NAME (the same as the `refresh` action)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l token-only -d 'open: do not ask for a passphrase; unlock with a token or fail'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainOpen" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l nbd -d 'open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l nbd-connections -d 'open --nbd: most NBD clients connected at once (default 8); more are refused' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l tls-creds -d 'open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem, ca-cert.pem), as qemu-nbd\'s and nbdkit\'s' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l tls -d 'open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered) or `off` (plain NBD: anyone who can connect reads the plaintext)' -r -f -a "off\t''
on\t''
require\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l tls-verify-peer -d 'open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the default with TLS, as qemu-nbd\'s; the option alone also means yes) or `no` (any client that can connect reads and writes the plaintext)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l token-timeout -d 'open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab\'s token-timeout=). Default: no wait' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l link-vk-to-keyring -d 'open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l volume-key-keyring -d 'open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s r -l readonly -d 'Open the mapping read-only'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l test-passphrase -d 'Only check the passphrase (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l shared -d 'open (plain): the device may be shared with other mappings (non-overlapping segments)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l no-loop -d 'open: only the FUSE plaintext file, no loop device and no /dev/mapper link'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l integrity-no-journal -d 'open: dm-integrity without its journal (faster, no crash consistency of tags)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l refresh -d 'open: refresh the active device NAME (the same as the `refresh` action)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l token-only -d 'open: do not ask for a passphrase; unlock with a token or fail'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksOpen" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l nbd -d 'open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l nbd-connections -d 'open --nbd: most NBD clients connected at once (default 8); more are refused' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l tls-creds -d 'open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem, ca-cert.pem), as qemu-nbd\'s and nbdkit\'s' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l tls -d 'open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered) or `off` (plain NBD: anyone who can connect reads the plaintext)' -r -f -a "off\t''
on\t''
require\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l tls-verify-peer -d 'open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the default with TLS, as qemu-nbd\'s; the option alone also means yes) or `no` (any client that can connect reads and writes the plaintext)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l token-timeout -d 'open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab\'s token-timeout=). Default: no wait' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l link-vk-to-keyring -d 'open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l volume-key-keyring -d 'open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s r -l readonly -d 'Open the mapping read-only'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l test-passphrase -d 'Only check the passphrase (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l shared -d 'open (plain): the device may be shared with other mappings (non-overlapping segments)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l no-loop -d 'open: only the FUSE plaintext file, no loop device and no /dev/mapper link'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l integrity-no-journal -d 'open: dm-integrity without its journal (faster, no crash consistency of tags)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l refresh -d 'open: refresh the active device NAME (the same as the `refresh` action)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l token-only -d 'open: do not ask for a passphrase; unlock with a token or fail'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesOpen" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l nbd -d 'open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l nbd-connections -d 'open --nbd: most NBD clients connected at once (default 8); more are refused' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l tls-creds -d 'open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem, ca-cert.pem), as qemu-nbd\'s and nbdkit\'s' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l tls -d 'open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered) or `off` (plain NBD: anyone who can connect reads the plaintext)' -r -f -a "off\t''
on\t''
require\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l tls-verify-peer -d 'open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the default with TLS, as qemu-nbd\'s; the option alone also means yes) or `no` (any client that can connect reads and writes the plaintext)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l token-timeout -d 'open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab\'s token-timeout=). Default: no wait' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l link-vk-to-keyring -d 'open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l volume-key-keyring -d 'open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s r -l readonly -d 'Open the mapping read-only'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l test-passphrase -d 'Only check the passphrase (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l shared -d 'open (plain): the device may be shared with other mappings (non-overlapping segments)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l no-loop -d 'open: only the FUSE plaintext file, no loop device and no /dev/mapper link'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l integrity-no-journal -d 'open: dm-integrity without its journal (faster, no crash consistency of tags)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l refresh -d 'open: refresh the active device NAME (the same as the `refresh` action)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l token-only -d 'open: do not ask for a passphrase; unlock with a token or fail'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptOpen" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l nbd -d 'open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l nbd-connections -d 'open --nbd: most NBD clients connected at once (default 8); more are refused' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l tls-creds -d 'open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem, ca-cert.pem), as qemu-nbd\'s and nbdkit\'s' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l tls -d 'open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered) or `off` (plain NBD: anyone who can connect reads the plaintext)' -r -f -a "off\t''
on\t''
require\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l tls-verify-peer -d 'open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the default with TLS, as qemu-nbd\'s; the option alone also means yes) or `no` (any client that can connect reads and writes the plaintext)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l token-timeout -d 'open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab\'s token-timeout=). Default: no wait' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l link-vk-to-keyring -d 'open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l volume-key-keyring -d 'open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s r -l readonly -d 'Open the mapping read-only'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l test-passphrase -d 'Only check the passphrase (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l shared -d 'open (plain): the device may be shared with other mappings (non-overlapping segments)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l no-loop -d 'open: only the FUSE plaintext file, no loop device and no /dev/mapper link'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l integrity-no-journal -d 'open: dm-integrity without its journal (faster, no crash consistency of tags)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l refresh -d 'open: refresh the active device NAME (the same as the `refresh` action)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l token-only -d 'open: do not ask for a passphrase; unlock with a token or fail'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkOpen" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l nbd -d 'open: serve the plaintext over NBD at unix:PATH or tcp:HOST:PORT (instead of FUSE)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l nbd-connections -d 'open --nbd: most NBD clients connected at once (default 8); more are refused' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l tls-creds -d 'open --nbd: directory with X.509 credentials for TLS (server-cert.pem, server-key.pem, ca-cert.pem), as qemu-nbd\'s and nbdkit\'s' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l tls -d 'open --nbd: TLS `require` (the default with --tls-creds and on TCP), `on` (offered) or `off` (plain NBD: anyone who can connect reads the plaintext)' -r -f -a "off\t''
on\t''
require\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l tls-verify-peer -d 'open --nbd: NBD clients must present a certificate signed by ca-cert.pem: `yes` (the default with TLS, as qemu-nbd\'s; the option alone also means yes) or `no` (any client that can connect reads and writes the plaintext)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l token-timeout -d 'open: wait at most this many seconds for the TPM of a systemd-tpm2 token to appear before falling back (0: no limit; crypttab\'s token-timeout=). Default: no wait' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l link-vk-to-keyring -d 'open (LUKS2): after activation, link the volume key into a keyring as KEYRING::KEY (cryptsetup 2.7; KEY is %user:NAME or %logon:NAME, user by default)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l volume-key-keyring -d 'open: the volume key is the payload of this kernel key (%user:NAME, a serial; cryptsetup 2.7)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s r -l readonly -d 'Open the mapping read-only'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l test-passphrase -d 'Only check the passphrase (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l shared -d 'open (plain): the device may be shared with other mappings (non-overlapping segments)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l no-loop -d 'open: only the FUSE plaintext file, no loop device and no /dev/mapper link'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l integrity-no-journal -d 'open: dm-integrity without its journal (faster, no crash consistency of tags)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l refresh -d 'open: refresh the active device NAME (the same as the `refresh` action)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l token-only -d 'open: do not ask for a passphrase; unlock with a token or fail'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Open" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand close" -l deferred -d 'close: remove the mapping when its last user closes it'
complete -c lukskit -n "__fish_lukskit_using_subcommand close" -l cancel-deferred -d 'close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use'
complete -c lukskit -n "__fish_lukskit_using_subcommand close" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand close" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand close" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand close" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand close" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand remove" -l deferred -d 'close: remove the mapping when its last user closes it'
complete -c lukskit -n "__fish_lukskit_using_subcommand remove" -l cancel-deferred -d 'close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use'
complete -c lukskit -n "__fish_lukskit_using_subcommand remove" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand remove" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand remove" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand remove" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand remove" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainClose" -l deferred -d 'close: remove the mapping when its last user closes it'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainClose" -l cancel-deferred -d 'close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainClose" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainClose" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainClose" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainClose" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand plainClose" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksClose" -l deferred -d 'close: remove the mapping when its last user closes it'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksClose" -l cancel-deferred -d 'close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksClose" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksClose" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksClose" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksClose" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksClose" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesClose" -l deferred -d 'close: remove the mapping when its last user closes it'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesClose" -l cancel-deferred -d 'close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesClose" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesClose" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesClose" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesClose" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand loopaesClose" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptClose" -l deferred -d 'close: remove the mapping when its last user closes it'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptClose" -l cancel-deferred -d 'close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptClose" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptClose" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptClose" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptClose" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptClose" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkClose" -l deferred -d 'close: remove the mapping when its last user closes it'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkClose" -l cancel-deferred -d 'close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkClose" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkClose" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkClose" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkClose" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkClose" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Close" -l deferred -d 'close: remove the mapping when its last user closes it'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Close" -l cancel-deferred -d 'close: cancel a deferred removal (`--deferred`) of a kernel mapping still in use'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Close" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Close" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Close" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Close" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Close" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -l device-size -d 'resize: the new size in bytes (units K, M, G, ... as cryptsetup\'s `--device-size`)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand resize" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l allow-discards -d 'Pass discards (TRIM) through to the data device (open)'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l persistent -d 'open, refresh: store the activation flags (`--allow-discards`, `--perf-*`) in the LUKS2 header, where every later open applies them'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l perf-same_cpu_crypt -d 'open: dm-crypt\'s `same_cpu_crypt`'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l perf-submit_from_crypt_cpus -d 'open: dm-crypt\'s `submit_from_crypt_cpus`'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l perf-no_read_workqueue -d 'open: dm-crypt\'s `no_read_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l perf-no_write_workqueue -d 'open: dm-crypt\'s `no_write_workqueue`'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand refresh" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand status" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand status" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand status" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand status" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand status" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -l pbkdf -d 'PBKDF algorithm: pbkdf2, argon2i, argon2id' -r -f -a "pbkdf2\t''
argon2i\t''
argon2id\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -s i -l iter-time -d 'PBKDF benchmark time in ms' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -l pbkdf-parallel -d 'Argon2 parallel threads' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -l threads -d 'Threads for the sector engine (benchmark, image; default: benchmark 1, image all)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -l json -d 'Machine-readable output (benchmark, engines)'
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand benchmark" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand repair" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand repair" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand repair" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand repair" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand repair" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand repair" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand erase" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand erase" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand erase" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand erase" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand erase" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand erase" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksErase" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksErase" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksErase" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksErase" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksErase" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksErase" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l pbkdf -d 'PBKDF algorithm: pbkdf2, argon2i, argon2id' -r -f -a "pbkdf2\t''
argon2i\t''
argon2id\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s i -l iter-time -d 'PBKDF benchmark time in ms' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l pbkdf-memory -d 'Argon2 maximum memory in KiB' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l pbkdf-parallel -d 'Argon2 parallel threads' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l pbkdf-force-iterations -d 'Fixed PBKDF iterations / Argon2 time cost (no benchmark)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l keyslot-cipher -d 'Keyslot cipher for new keyslots (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l keyslot-key-size -d 'Keyslot key size in bits (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l active-name -d 'Override device autodetection of dm device to be reencrypted' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l hotzone-size -d 'Maximal reencryption hotzone size.' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l reduce-device-size -d 'Reduce data device size (move data offset). DANGEROUS!' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l resilience -d 'Reencryption hotzone resilience type (checksum,journal,none)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l resilience-hash -d 'Reencryption hotzone checksums hash' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l progress-frequency -d 'Progress line update (in seconds)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s B -l block-size -d 'Reencryption block size' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l device-size -d 'resize: the new size in bytes (units K, M, G, ... as cryptsetup\'s `--device-size`)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l label -d 'LUKS2 label' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l subsystem -d 'LUKS2 subsystem' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l uuid -d 'UUID' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l encrypt -d 'Encrypt LUKS2 device (in-place encryption).'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l decrypt -d 'Decrypt LUKS2 device (remove encryption).'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l force-offline-reencrypt -d 'Force offline LUKS2 reencryption and bypass active device detection.'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l init-only -d 'Initialize LUKS2 reencryption in metadata only.'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l resume-only -d 'Resume initialized LUKS2 reencryption only.'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l progress-json -d 'Print progress data in json format (suitable for machine processing)'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l keep-key -d 'Do not change volume key.'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s N -l new -d 'Create new header on not encrypted device'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l use-directio -d 'Use direct-io when accessing devices'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l use-fsync -d 'Use fsync after each block'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l write-log -d 'Update log file after every block'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand reencrypt" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand convert" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand convert" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand convert" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand convert" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand convert" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand convert" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand convert" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -l label -d 'LUKS2 label' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -l subsystem -d 'LUKS2 subsystem' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -l priority -d 'Keyslot priority: ignore, normal, prefer' -r -f -a "ignore\t''
normal\t''
prefer\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand config" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l label -d 'LUKS2 label' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l subsystem -d 'LUKS2 subsystem' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l uuid -d 'UUID' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l luks2-metadata-size -d 'LUKS2 metadata size (bytes, with optional k/m suffix)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l luks2-keyslots-size -d 'LUKS2 keyslots area size (bytes, with optional k/m suffix)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l pbkdf -d 'PBKDF algorithm: pbkdf2, argon2i, argon2id' -r -f -a "pbkdf2\t''
argon2i\t''
argon2id\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s i -l iter-time -d 'PBKDF benchmark time in ms' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l pbkdf-memory -d 'Argon2 maximum memory in KiB' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l pbkdf-parallel -d 'Argon2 parallel threads' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l pbkdf-force-iterations -d 'Fixed PBKDF iterations / Argon2 time cost (no benchmark)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l keyslot-cipher -d 'Keyslot cipher for new keyslots (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l keyslot-key-size -d 'Keyslot key size in bits (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l align-payload -d 'luksFormat: align the data at a multiple of this many 512-byte sectors (deprecated in cryptsetup, use --offset)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s I -l integrity -d 'luksFormat (LUKS2): authenticated encryption through the kernel\'s dm-integrity (hmac-sha256, hmac-sha512, hmac-sha1, aead, poly1305)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l force-password -d 'Accepted for compatibility: lukskit has no password quality check to disable'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l use-random -d 'luksFormat: accepted for compatibility: lukskit\'s keys always come from getrandom(2), which waits until the kernel\'s random pool is initialized (as /dev/random does)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l use-urandom -d 'luksFormat: accepted for compatibility (see `--use-random`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l integrity-no-wipe -d 'luksFormat --integrity: do not wipe the device (tags stay invalid until written)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l integrity-legacy-padding -d 'luksFormat --integrity: the legacy dm-integrity metadata padding (old kernels)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksFormat" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l pbkdf -d 'PBKDF algorithm: pbkdf2, argon2i, argon2id' -r -f -a "pbkdf2\t''
argon2i\t''
argon2id\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s i -l iter-time -d 'PBKDF benchmark time in ms' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l pbkdf-memory -d 'Argon2 maximum memory in KiB' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l pbkdf-parallel -d 'Argon2 parallel threads' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l pbkdf-force-iterations -d 'Fixed PBKDF iterations / Argon2 time cost (no benchmark)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l keyslot-cipher -d 'Keyslot cipher for new keyslots (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l keyslot-key-size -d 'Keyslot key size in bits (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l new-keyfile -d 'New key file (luksAddKey, luksChangeKey)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l new-keyfile-offset -d 'Bytes to skip in the new key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l new-keyfile-size -d 'Bytes to read from the new key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l new-key-slot -d 'Keyslot number for the new key' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l new-token-id -d 'Token whose passphrase the new keyslot takes, assigned to it (luksAddKey)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l unbound -d 'Unbound keyslot (no data segment)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l force-password -d 'Accepted for compatibility: lukskit has no password quality check to disable'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksAddKey" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksRemoveKey" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l pbkdf -d 'PBKDF algorithm: pbkdf2, argon2i, argon2id' -r -f -a "pbkdf2\t''
argon2i\t''
argon2id\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s i -l iter-time -d 'PBKDF benchmark time in ms' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l pbkdf-memory -d 'Argon2 maximum memory in KiB' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l pbkdf-parallel -d 'Argon2 parallel threads' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l pbkdf-force-iterations -d 'Fixed PBKDF iterations / Argon2 time cost (no benchmark)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l keyslot-cipher -d 'Keyslot cipher for new keyslots (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l keyslot-key-size -d 'Keyslot key size in bits (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l new-keyfile -d 'New key file (luksAddKey, luksChangeKey)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l new-keyfile-offset -d 'Bytes to skip in the new key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l new-keyfile-size -d 'Bytes to read from the new key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l force-password -d 'Accepted for compatibility: lukskit has no password quality check to disable'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksChangeKey" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l pbkdf -d 'PBKDF algorithm: pbkdf2, argon2i, argon2id' -r -f -a "pbkdf2\t''
argon2i\t''
argon2id\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -s i -l iter-time -d 'PBKDF benchmark time in ms' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l pbkdf-memory -d 'Argon2 maximum memory in KiB' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l pbkdf-parallel -d 'Argon2 parallel threads' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l pbkdf-force-iterations -d 'Fixed PBKDF iterations / Argon2 time cost (no benchmark)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l keyslot-cipher -d 'Keyslot cipher for new keyslots (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l keyslot-key-size -d 'Keyslot key size in bits (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksConvertKey" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksKillSlot" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksUUID" -l uuid -d 'UUID' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksUUID" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksUUID" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksUUID" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksUUID" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksUUID" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksUUID" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand isLuks" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand isLuks" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand isLuks" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand isLuks" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand isLuks" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand isLuks" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand isLuks" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -l dump-volume-key -d 'Print the volume key (luksDump)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -l dump-json-metadata -d 'Print the LUKS2 JSON metadata (luksDump)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -l unbound -d 'Unbound keyslot (no data segment)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksDump" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -l dump-volume-key -d 'Print the volume key (luksDump)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand tcryptDump" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -l dump-volume-key -d 'Print the volume key (luksDump)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand bitlkDump" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -l dump-volume-key -d 'Print the volume key (luksDump)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand fvault2Dump" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksSuspend" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksSuspend" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksSuspend" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksSuspend" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksSuspend" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksSuspend" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksResume" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderBackup" -l header-backup-file -d 'Header backup file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderBackup" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderBackup" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderBackup" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderBackup" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderBackup" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderBackup" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderRestore" -l header-backup-file -d 'Header backup file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderRestore" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderRestore" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderRestore" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderRestore" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderRestore" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand luksHeaderRestore" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l token-id -d 'Token id' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l token-type -d 'open: try only tokens of this type (clevis, systemd-tpm2, systemd-pkcs11, luks2-keyring)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l tang-url -d 'token bind-tang: the tang server (`http://HOST[:PORT]`)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l tang-thumbprint -d 'token bind-tang: thumbprint of the tang signing key to trust (tang-show-keys)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l tpm2-device -d 'open: the TPM for systemd-tpm2 tokens and clevis tpm2 pins (auto, /dev/tpmrm0, swtpm:path=SOCKET)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l tpm2-pcrs -d 'token enroll-tpm2: the PCRs to seal against, as systemd-cryptenroll takes them (7+8; "" for none; default 7)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l tpm2-pcr-bank -d 'token enroll-tpm2: the PCR bank (sha256, sha1; default sha256, else sha1)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l tpm2-with-pin -d 'token enroll-tpm2: ask for a PIN the TPM checks at unlock (yes|no)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l json-file -d 'Token JSON file (token import/export)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l key-description -d 'Keyring key description (token add)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l token-replace -d 'Replace an existing token'
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l unbound -d 'Unbound keyslot (no data segment)'
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand token" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand crypttab" -l crypttab -d 'crypttab: the table to read instead of /etc/crypttab' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand crypttab" -l backend -d 'open: `kernel` (a dm-crypt mapping) or `userspace` (lukskit\'s serving process); by default the kernel wherever it has device-mapper with dm-crypt' -r -f -a "kernel\t''
userspace\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand crypttab" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand crypttab" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand crypttab" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand crypttab" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand crypttab" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand rename" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand rename" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand rename" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand rename" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand rename" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand engines" -l json -d 'Machine-readable output (benchmark, engines)'
complete -c lukskit -n "__fish_lukskit_using_subcommand engines" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand engines" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand engines" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand engines" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand engines" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and not __fish_seen_subcommand_from encrypt decrypt help" -f -a "encrypt" -d 'writes a new LUKS1/LUKS2/plain image holding a file (lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and not __fish_seen_subcommand_from encrypt decrypt help" -f -a "decrypt" -d 'writes the plaintext of an image to a file (lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and not __fish_seen_subcommand_from encrypt decrypt help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l label -d 'LUKS2 label' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l subsystem -d 'LUKS2 subsystem' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l uuid -d 'UUID' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l luks2-metadata-size -d 'LUKS2 metadata size (bytes, with optional k/m suffix)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l luks2-keyslots-size -d 'LUKS2 keyslots area size (bytes, with optional k/m suffix)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l pbkdf -d 'PBKDF algorithm: pbkdf2, argon2i, argon2id' -r -f -a "pbkdf2\t''
argon2i\t''
argon2id\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s i -l iter-time -d 'PBKDF benchmark time in ms' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l pbkdf-memory -d 'Argon2 maximum memory in KiB' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l pbkdf-parallel -d 'Argon2 parallel threads' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l pbkdf-force-iterations -d 'Fixed PBKDF iterations / Argon2 time cost (no benchmark)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l keyslot-cipher -d 'Keyslot cipher for new keyslots (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l keyslot-key-size -d 'Keyslot key size in bits (LUKS2)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l threads -d 'Threads for the sector engine (benchmark, image; default: benchmark 1, image all)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s y -l verify-passphrase -d 'Ask for the passphrase twice'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from encrypt" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s d -l key-file -d 'Read the passphrase from a file ("-" = stdin)' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l keyfile-offset -d 'Bytes to skip at the start of the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s l -l keyfile-size -d 'Bytes to read from the key file' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s S -l key-slot -d 'Keyslot number' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s T -l tries -d 'Number of passphrase attempts' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s t -l timeout -d 'Interactive passphrase prompt timeout in seconds' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l header -d 'Detached header file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s M -l type -d 'Device type: luks, luks1, luks2, plain' -r -f -a "luks\t''
luks1\t''
luks2\t''
plain\t''"
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s c -l cipher -d 'Cipher specification' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s s -l key-size -d 'Key size in bits' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s h -l hash -d 'Hash for PBKDF2, AF and digests' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s o -l offset -d 'Data offset in 512-byte sectors' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s p -l skip -d 'IV offset in 512-byte sectors (plain mode)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s b -l size -d 'Data size in 512-byte sectors (plain mode, image decrypt)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l sector-size -d 'Encryption sector size in bytes' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l volume-key-file -d 'Volume key from a file' -r -F
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l threads -d 'Threads for the sector engine (benchmark, image; default: benchmark 1, image all)' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l engine -d 'Sector engine: `lukskit` (lukskit\'s own), `kernel` (the kernel\'s crypto API over AF_ALG, the driver dm-crypt uses), `auto`; benchmark also `all` (both side by side); open: the serving process of the userspace backends' -r
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l iv-large-sectors -d 'IV counts encryption sectors instead of 512-byte sectors (plain mode)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s v -l verbose -d 'Print more information ("Command successful.")'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l debug -d 'Debug output (never contains secrets)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -s q -l batch-mode -d 'Do not ask for confirmation; no passphrase verification unless -y'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l test-args -d 'Do not run the action, only check the command line (cryptsetup\'s `--test-args`)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from decrypt" -l disable-locks -d 'Do not use metadata locking (accepted for compatibility; lukskit always locks)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from help" -f -a "encrypt" -d 'writes a new LUKS1/LUKS2/plain image holding a file (lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from help" -f -a "decrypt" -d 'writes the plaintext of an image to a file (lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand image; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "open" -d 'open device as <name>'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "close" -d 'close device (remove mapping)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "resize" -d 'resize active device'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "refresh" -d 'refresh parameters of an active device'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "status" -d 'show device status'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "benchmark" -d 'benchmark cipher'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "repair" -d 'try to repair on-disk metadata'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "erase" -d 'erase all keyslots (remove encryption key)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "reencrypt" -d 'reencrypt LUKS2 device'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "convert" -d 'convert LUKS from/to LUKS2 format'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "config" -d 'set permanent configuration options for LUKS2'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksFormat" -d 'formats a LUKS device'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksAddKey" -d 'add key to LUKS device'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksRemoveKey" -d 'removes supplied key or key file from LUKS device'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksChangeKey" -d 'changes supplied key or key file of LUKS device'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksConvertKey" -d 'converts a key to new pbkdf parameters'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksKillSlot" -d 'wipes key with number <key slot> from LUKS device'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksUUID" -d 'print UUID of LUKS device (set it with --uuid)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "isLuks" -d 'tests <device> for LUKS partition header'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksDump" -d 'dump LUKS partition information'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "tcryptDump" -d 'dump TCRYPT device information'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "bitlkDump" -d 'dump BITLK device information'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "fvault2Dump" -d 'dump FVAULT2 device information'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksSuspend" -d 'Suspend LUKS device and wipe key (all IOs are frozen)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksResume" -d 'Resume suspended LUKS device'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksHeaderBackup" -d 'Backup LUKS device header and keyslots'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "luksHeaderRestore" -d 'Restore LUKS device header and keyslots'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "token" -d 'Manipulate LUKS2 tokens (bind-tang, bind-clevis DEVICE tpm2|sss|tang CONFIG: clevis tokens; enroll-tpm2: a systemd-tpm2 token; unenroll: tokens and their keyslots; lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "crypttab" -d 'open, close or list the volumes of /etc/crypttab (lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "rename" -d 'rename an active kernel mapping (lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "engines" -d 'show the kernel drivers dm-crypt would use and lukskit\'s own engine (lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "image" -d 'writes a new LUKS1/LUKS2/plain image holding a file (lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and not __fish_seen_subcommand_from open close resize refresh status benchmark repair erase reencrypt convert config luksFormat luksAddKey luksRemoveKey luksChangeKey luksConvertKey luksKillSlot luksUUID isLuks luksDump tcryptDump bitlkDump fvault2Dump luksSuspend luksResume luksHeaderBackup luksHeaderRestore token crypttab rename engines image help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and __fish_seen_subcommand_from image" -f -a "encrypt" -d 'writes a new LUKS1/LUKS2/plain image holding a file (lukskit)'
complete -c lukskit -n "__fish_lukskit_using_subcommand help; and __fish_seen_subcommand_from image" -f -a "decrypt" -d 'writes the plaintext of an image to a file (lukskit)'
