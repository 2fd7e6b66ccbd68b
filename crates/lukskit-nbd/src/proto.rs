//! The NBD wire constants (the NBD protocol document, `doc/proto.md` of the NBD project) for
//! both sides — this client and lukskit's NBD export (`lukskit_expose::nbd::proto` re-exports
//! them) — and the small encoders/decoders the client uses.

/// `NBDMAGIC`.
pub const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Option reply magic.
pub const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Request magic.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Simple reply magic.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Structured reply magic.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Server handshake flag: fixed newstyle.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
/// Server handshake flag: no zeroes after `NBD_OPT_EXPORT_NAME`.
pub const FLAG_NO_ZEROES: u16 = 2;
/// Client flag: fixed newstyle.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1;
/// Client flag: no zeroes.
pub const FLAG_C_NO_ZEROES: u32 = 2;

/// Transmission flag: flags valid.
pub const TFLAG_HAS_FLAGS: u16 = 1 << 0;
/// Transmission flag: read-only export.
pub const TFLAG_READ_ONLY: u16 = 1 << 1;
/// Transmission flag: FLUSH supported.
pub const TFLAG_SEND_FLUSH: u16 = 1 << 2;
/// Transmission flag: FUA supported.
pub const TFLAG_SEND_FUA: u16 = 1 << 3;
/// Transmission flag: several connections are consistent.
pub const TFLAG_CAN_MULTI_CONN: u16 = 1 << 8;

/// Option `NBD_OPT_EXPORT_NAME`.
pub const OPT_EXPORT_NAME: u32 = 1;
/// Option `NBD_OPT_ABORT`.
pub const OPT_ABORT: u32 = 2;
/// Option `NBD_OPT_STARTTLS`.
pub const OPT_STARTTLS: u32 = 5;
/// Option `NBD_OPT_GO`.
pub const OPT_GO: u32 = 7;
/// Option `NBD_OPT_STRUCTURED_REPLY`.
pub const OPT_STRUCTURED_REPLY: u32 = 8;

/// Option reply: ACK.
pub const REP_ACK: u32 = 1;
/// Option reply: information.
pub const REP_INFO: u32 = 3;
/// Error bit of option replies.
pub const REP_FLAG_ERROR: u32 = 1 << 31;
/// Option error: unsupported.
pub const REP_ERR_UNSUP: u32 = REP_FLAG_ERROR | 1;
/// Option error: policy.
pub const REP_ERR_POLICY: u32 = REP_FLAG_ERROR | 2;
/// Option error: TLS required.
pub const REP_ERR_TLS_REQD: u32 = REP_FLAG_ERROR | 5;
/// Option error: unknown export.
pub const REP_ERR_UNKNOWN: u32 = REP_FLAG_ERROR | 6;
/// Option error: block size needed.
pub const REP_ERR_BLOCK_SIZE_REQD: u32 = REP_FLAG_ERROR | 8;

/// Info item: export size and flags.
pub const INFO_EXPORT: u16 = 0;
/// Info item: block sizes.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Command: read.
pub const CMD_READ: u16 = 0;
/// Command: write.
pub const CMD_WRITE: u16 = 1;
/// Command: disconnect.
pub const CMD_DISC: u16 = 2;
/// Command: flush.
pub const CMD_FLUSH: u16 = 3;
/// Command flag: force unit access.
pub const CMD_FLAG_FUA: u16 = 1;

/// Structured reply flag: last chunk of the reply.
pub const REPLY_FLAG_DONE: u16 = 1;
/// Structured chunk: none.
pub const REPLY_TYPE_NONE: u16 = 0;
/// Structured chunk: data at an offset.
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
/// Structured chunk: a hole (zeroes) at an offset.
pub const REPLY_TYPE_OFFSET_HOLE: u16 = 2;
/// Error bit of structured chunk types.
pub const REPLY_TYPE_ERROR_BIT: u16 = 1 << 15;

/// Size of a request header in bytes.
pub const REQUEST_LEN: usize = 28;
/// Size of a simple reply header in bytes.
pub const SIMPLE_REPLY_LEN: usize = 16;
/// Size of an option header (magic, option, length) in bytes.
pub const OPTION_HEADER_LEN: usize = 16;
/// Longest string (export name) the protocol allows.
pub const MAX_STRING_LEN: usize = 4096;
/// Transmission flag: `NBD_CMD_TRIM` is supported.
pub const TFLAG_SEND_TRIM: u16 = 1 << 5;
/// Transmission flag: `NBD_CMD_WRITE_ZEROES` is supported.
pub const TFLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
/// Option: `NBD_OPT_LIST`.
pub const OPT_LIST: u32 = 3;
/// Option: `NBD_OPT_INFO`.
pub const OPT_INFO: u32 = 6;
/// Option reply: one export name (`NBD_OPT_LIST`).
pub const REP_SERVER: u32 = 2;
/// Option reply error: malformed option.
pub const REP_ERR_INVALID: u32 = REP_FLAG_ERROR | 3;
/// Option reply error: the server is shutting down.
pub const REP_ERR_SHUTDOWN: u32 = REP_FLAG_ERROR | 7;
/// Option reply error: option payload too large.
pub const REP_ERR_TOO_BIG: u32 = REP_FLAG_ERROR | 9;
/// Information item: export name.
pub const INFO_NAME: u16 = 1;
/// Information item: description.
pub const INFO_DESCRIPTION: u16 = 2;
/// Command flag: `NBD_CMD_WRITE_ZEROES` must not punch a hole.
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
/// NBD error: operation not permitted.
pub const EPERM: u32 = 1;
/// NBD error: input/output error.
pub const EIO: u32 = 5;
/// NBD error: cannot allocate memory.
pub const ENOMEM: u32 = 12;
/// NBD error: invalid argument.
pub const EINVAL: u32 = 22;
/// NBD error: no space left (beyond the end of the export).
pub const ENOSPC: u32 = 28;
/// NBD error: value too large.
pub const EOVERFLOW: u32 = 75;
/// NBD error: operation not supported.
pub const ENOTSUP: u32 = 95;
/// NBD error: server shutting down.
pub const ESHUTDOWN: u32 = 108;
/// Command flag: don't fragment (structured replies only; refused here).
pub const CMD_FLAG_DF: u16 = 1 << 2;
/// Command: trim (discard).
pub const CMD_TRIM: u16 = 4;
/// Command: write zeroes.
pub const CMD_WRITE_ZEROES: u16 = 6;

/// Encode a request header.
pub fn encode_request(flags: u16, cmd: u16, cookie: u64, offset: u64, len: u32) -> [u8; 28] {
    let mut b = [0u8; 28];
    b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&flags.to_be_bytes());
    b[6..8].copy_from_slice(&cmd.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b[16..24].copy_from_slice(&offset.to_be_bytes());
    b[24..28].copy_from_slice(&len.to_be_bytes());
    b
}

/// Encode an option (header and payload).
pub fn encode_option(option: u32, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + data.len());
    b.extend_from_slice(&IHAVEOPT.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    b
}

/// The payload of `NBD_OPT_GO` for `name`, asking for the block size constraints.
pub fn go_payload(name: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + name.len());
    b.extend_from_slice(&(name.len() as u32).to_be_bytes());
    b.extend_from_slice(name.as_bytes());
    b.extend_from_slice(&1u16.to_be_bytes());
    b.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    b
}

/// Big-endian u16 at `at` (caller checked the length).
pub fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Big-endian u32 at `at`.
pub fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Big-endian u64 at `at`.
pub fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}
