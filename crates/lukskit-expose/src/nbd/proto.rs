//! The NBD wire format (fixed newstyle handshake, simple replies): constants, decoding of
//! what a client sends and encoding of what the server answers.
//!
//! Pure functions without I/O. Every parser is total: arbitrary bytes give either a value
//! or a [`ProtoError`], never a panic (a fuzz target calls them).

use std::fmt;

pub use lukskit_nbd::proto::{
    CMD_DISC, CMD_FLAG_DF, CMD_FLAG_FUA, CMD_FLAG_NO_HOLE, CMD_FLUSH, CMD_READ, CMD_TRIM,
    CMD_WRITE, CMD_WRITE_ZEROES, EINVAL, EIO, ENOMEM, ENOSPC, ENOTSUP, EOVERFLOW, EPERM, ESHUTDOWN,
    FLAG_C_FIXED_NEWSTYLE, FLAG_C_NO_ZEROES, FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES, IHAVEOPT,
    INFO_BLOCK_SIZE, INFO_DESCRIPTION, INFO_EXPORT, INFO_NAME, MAX_STRING_LEN, NBD_MAGIC,
    OPTION_HEADER_LEN, OPTION_REPLY_MAGIC, OPT_ABORT, OPT_EXPORT_NAME, OPT_GO, OPT_INFO, OPT_LIST,
    OPT_STARTTLS, OPT_STRUCTURED_REPLY, REP_ACK, REP_ERR_INVALID, REP_ERR_POLICY, REP_ERR_SHUTDOWN,
    REP_ERR_TLS_REQD, REP_ERR_TOO_BIG, REP_ERR_UNKNOWN, REP_ERR_UNSUP, REP_FLAG_ERROR, REP_INFO,
    REP_SERVER, REQUEST_LEN, REQUEST_MAGIC, SIMPLE_REPLY_LEN, SIMPLE_REPLY_MAGIC,
    TFLAG_CAN_MULTI_CONN, TFLAG_HAS_FLAGS, TFLAG_READ_ONLY, TFLAG_SEND_FLUSH, TFLAG_SEND_FUA,
    TFLAG_SEND_TRIM, TFLAG_SEND_WRITE_ZEROES,
};

/// Largest request payload (read or write) the server accepts: 32 MiB.
pub const MAX_PAYLOAD: u32 = 32 * 1024 * 1024;
/// Largest option payload the server accepts: 64 KiB.
pub const MAX_OPTION_LEN: u32 = 64 * 1024;

/// A malformed message from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtoError {
    /// Fewer bytes than the structure needs (`need`, `got`).
    Short {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        got: usize,
    },
    /// Bytes left over after the structure (`expected` length, `got`).
    Trailing {
        /// Length the structure implies.
        expected: usize,
        /// Length present.
        got: usize,
    },
    /// A magic number is wrong.
    BadMagic {
        /// The magic expected.
        expected: u64,
        /// The value received.
        got: u64,
    },
    /// A string is not valid UTF-8, contains NUL or is longer than 4096 bytes.
    BadString,
    /// The client set flags the server does not know.
    UnknownFlags(u32),
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoError::Short { need, got } => {
                write!(f, "message too short: {got} bytes, {need} needed")
            }
            ProtoError::Trailing { expected, got } => {
                write!(
                    f,
                    "message length {got} does not match its contents ({expected})"
                )
            }
            ProtoError::BadMagic { expected, got } => {
                write!(f, "bad magic {got:#x} (expected {expected:#x})")
            }
            ProtoError::BadString => {
                write!(f, "string is not UTF-8, contains NUL or exceeds 4096 bytes")
            }
            ProtoError::UnknownFlags(flags) => write!(f, "unknown client flags {flags:#x}"),
        }
    }
}

impl std::error::Error for ProtoError {}

/// A transmission command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `NBD_CMD_READ`.
    Read,
    /// `NBD_CMD_WRITE` (followed by `length` bytes of payload).
    Write,
    /// `NBD_CMD_DISC`: the client disconnects.
    Disc,
    /// `NBD_CMD_FLUSH`.
    Flush,
    /// `NBD_CMD_TRIM`.
    Trim,
    /// `NBD_CMD_WRITE_ZEROES`.
    WriteZeroes,
    /// Any other command type (refused with `EINVAL`).
    Other(u16),
}

impl Command {
    /// The command for a wire type.
    pub fn from_wire(t: u16) -> Command {
        match t {
            CMD_READ => Command::Read,
            CMD_WRITE => Command::Write,
            CMD_DISC => Command::Disc,
            CMD_FLUSH => Command::Flush,
            CMD_TRIM => Command::Trim,
            CMD_WRITE_ZEROES => Command::WriteZeroes,
            other => Command::Other(other),
        }
    }
}

/// A decoded request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Command flags (`NBD_CMD_FLAG_*`).
    pub flags: u16,
    /// The command.
    pub command: Command,
    /// The client's handle (cookie), echoed in the reply.
    pub handle: u64,
    /// Byte offset into the export.
    pub offset: u64,
    /// Length in bytes (the payload length for writes).
    pub length: u32,
}

/// Decode a 28-byte request header.
pub fn parse_request(header: &[u8]) -> Result<Request, ProtoError> {
    let h = exact(header, REQUEST_LEN)?;
    let magic = be32(h, 0);
    if magic != REQUEST_MAGIC {
        return Err(ProtoError::BadMagic {
            expected: REQUEST_MAGIC.into(),
            got: magic.into(),
        });
    }
    Ok(Request {
        flags: be16(h, 4),
        command: Command::from_wire(be16(h, 6)),
        handle: be64(h, 8),
        offset: be64(h, 16),
        length: be32(h, 24),
    })
}

/// Encode a request header (the client side; for tests and tools).
pub fn encode_request(req: &Request) -> [u8; REQUEST_LEN] {
    let t = match req.command {
        Command::Read => CMD_READ,
        Command::Write => CMD_WRITE,
        Command::Disc => CMD_DISC,
        Command::Flush => CMD_FLUSH,
        Command::Trim => CMD_TRIM,
        Command::WriteZeroes => CMD_WRITE_ZEROES,
        Command::Other(t) => t,
    };
    lukskit_nbd::proto::encode_request(req.flags, t, req.handle, req.offset, req.length)
}

/// Encode a simple reply header.
pub fn encode_simple_reply(error: u32, handle: u64) -> [u8; SIMPLE_REPLY_LEN] {
    let mut b = [0u8; SIMPLE_REPLY_LEN];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&handle.to_be_bytes());
    b
}

/// The server's greeting: `NBDMAGIC`, `IHAVEOPT` and the handshake flags.
pub fn encode_greeting() -> [u8; 18] {
    let mut b = [0u8; 18];
    b[0..8].copy_from_slice(&NBD_MAGIC.to_be_bytes());
    b[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    b[16..18].copy_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    b
}

/// Decode the client's flags (4 bytes). Unknown bits are an error (the server must then
/// close the connection).
pub fn parse_client_flags(data: &[u8]) -> Result<u32, ProtoError> {
    let flags = be32(exact(data, 4)?, 0);
    if flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(ProtoError::UnknownFlags(flags));
    }
    Ok(flags)
}

/// Append an option reply (header and `data`) to `out`.
pub fn encode_option_reply(out: &mut Vec<u8>, option: u32, reply: u32, data: &[u8]) {
    out.extend_from_slice(&OPTION_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply.to_be_bytes());
    // Callers never pass more than a few KiB (names, info items, messages).
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}

/// The payload of an `NBD_REP_INFO` reply carrying `NBD_INFO_EXPORT`.
pub fn info_export(size: u64, flags: u16) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[0..2].copy_from_slice(&INFO_EXPORT.to_be_bytes());
    b[2..10].copy_from_slice(&size.to_be_bytes());
    b[10..12].copy_from_slice(&flags.to_be_bytes());
    b
}

/// The payload of an `NBD_REP_INFO` reply carrying `NBD_INFO_BLOCK_SIZE`.
pub fn info_block_size(minimum: u32, preferred: u32, maximum: u32) -> [u8; 14] {
    let mut b = [0u8; 14];
    b[0..2].copy_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    b[2..6].copy_from_slice(&minimum.to_be_bytes());
    b[6..10].copy_from_slice(&preferred.to_be_bytes());
    b[10..14].copy_from_slice(&maximum.to_be_bytes());
    b
}

/// The payload of an `NBD_REP_INFO` reply carrying a string item (`NBD_INFO_NAME` or
/// `NBD_INFO_DESCRIPTION`).
pub fn info_string(item: u16, s: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(2 + s.len());
    b.extend_from_slice(&item.to_be_bytes());
    b.extend_from_slice(s.as_bytes());
    b
}

/// The payload of an `NBD_REP_SERVER` reply (`NBD_OPT_LIST`) for one export.
pub fn rep_server(name: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(4 + name.len());
    b.extend_from_slice(&(name.len() as u32).to_be_bytes());
    b.extend_from_slice(name.as_bytes());
    b
}

/// The reply to `NBD_OPT_EXPORT_NAME`: size, transmission flags and, unless the client
/// negotiated `NBD_FLAG_C_NO_ZEROES`, 124 zero bytes.
pub fn export_name_reply(size: u64, flags: u16, no_zeroes: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(134);
    b.extend_from_slice(&size.to_be_bytes());
    b.extend_from_slice(&flags.to_be_bytes());
    if !no_zeroes {
        b.extend_from_slice(&[0u8; 124]);
    }
    b
}

fn exact(data: &[u8], len: usize) -> Result<&[u8], ProtoError> {
    match data.len() {
        n if n < len => Err(ProtoError::Short { need: len, got: n }),
        n if n > len => Err(ProtoError::Trailing {
            expected: len,
            got: n,
        }),
        _ => Ok(data),
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

/// A protocol string: UTF-8, no NUL, at most 4096 bytes.
fn string(b: &[u8]) -> Result<String, ProtoError> {
    if b.len() > MAX_STRING_LEN || b.contains(&0) {
        return Err(ProtoError::BadString);
    }
    std::str::from_utf8(b)
        .map(str::to_string)
        .map_err(|_| ProtoError::BadString)
}

/// An option the client sent during the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientOption {
    /// `NBD_OPT_EXPORT_NAME` with the export name.
    ExportName(String),
    /// `NBD_OPT_ABORT`.
    Abort,
    /// `NBD_OPT_LIST`.
    List,
    /// `NBD_OPT_INFO`.
    Info(InfoRequest),
    /// `NBD_OPT_GO`.
    Go(InfoRequest),
    /// `NBD_OPT_STRUCTURED_REPLY`.
    StructuredReply,
    /// `NBD_OPT_STARTTLS`.
    StartTls,
    /// Any other option (answered with `NBD_REP_ERR_UNSUP`).
    Unknown(u32),
}

/// The payload of `NBD_OPT_INFO`/`NBD_OPT_GO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoRequest {
    /// The export name ("" = the default export).
    pub name: String,
    /// The information items the client asks for (`NBD_INFO_*`).
    pub requests: Vec<u16>,
}

/// Decode an option header (magic, option, payload length) of 16 bytes.
pub fn parse_option_header(header: &[u8]) -> Result<(u32, u32), ProtoError> {
    let h = exact(header, OPTION_HEADER_LEN)?;
    let magic = be64(h, 0);
    if magic != IHAVEOPT {
        return Err(ProtoError::BadMagic {
            expected: IHAVEOPT,
            got: magic,
        });
    }
    Ok((be32(h, 8), be32(h, 12)))
}

/// Decode the payload of option `option`.
///
/// Options without a payload (`ABORT`, `LIST`, `STRUCTURED_REPLY`) must have none; the
/// payload of an unknown option is not looked at.
pub fn parse_option(option: u32, data: &[u8]) -> Result<ClientOption, ProtoError> {
    match option {
        OPT_EXPORT_NAME => Ok(ClientOption::ExportName(string(data)?)),
        OPT_ABORT => exact(data, 0).map(|_| ClientOption::Abort),
        OPT_LIST => exact(data, 0).map(|_| ClientOption::List),
        OPT_STRUCTURED_REPLY => exact(data, 0).map(|_| ClientOption::StructuredReply),
        OPT_STARTTLS => exact(data, 0).map(|_| ClientOption::StartTls),
        OPT_INFO => parse_info_request(data).map(ClientOption::Info),
        OPT_GO => parse_info_request(data).map(ClientOption::Go),
        other => Ok(ClientOption::Unknown(other)),
    }
}

/// Decode the payload of `NBD_OPT_INFO`/`NBD_OPT_GO`: a 32-bit name length, the name, a
/// 16-bit count of information requests and that many 16-bit item types.
pub fn parse_info_request(data: &[u8]) -> Result<InfoRequest, ProtoError> {
    let short = |need: usize| ProtoError::Short {
        need,
        got: data.len(),
    };
    if data.len() < 4 {
        return Err(short(6));
    }
    let name_len = be32(data, 0) as usize;
    let name_end = 4usize
        .checked_add(name_len)
        .filter(|&e| e <= data.len())
        .ok_or_else(|| short(name_len.saturating_add(6)))?;
    let name = string(&data[4..name_end])?;
    let rest = &data[name_end..];
    if rest.len() < 2 {
        return Err(short(name_end + 2));
    }
    let count = be16(rest, 0) as usize;
    let items = exact(&rest[2..], count * 2).map_err(|e| match e {
        ProtoError::Short { need, got } => ProtoError::Short {
            need: need + name_end + 2,
            got: got + name_end + 2,
        },
        ProtoError::Trailing { expected, got } => ProtoError::Trailing {
            expected: expected + name_end + 2,
            got: got + name_end + 2,
        },
        other => other,
    })?;
    let requests = items.chunks_exact(2).map(|c| be16(c, 0)).collect();
    Ok(InfoRequest { name, requests })
}

/// Encode the payload of `NBD_OPT_INFO`/`NBD_OPT_GO` (the client side; for tests).
pub fn encode_info_request(req: &InfoRequest) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(req.name.len() as u32).to_be_bytes());
    b.extend_from_slice(req.name.as_bytes());
    b.extend_from_slice(&(req.requests.len() as u16).to_be_bytes());
    for r in &req.requests {
        b.extend_from_slice(&r.to_be_bytes());
    }
    b
}

/// What a request is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportLimits {
    /// Export size in bytes.
    pub size: u64,
    /// Writes, trims and write-zeroes are refused with `EPERM`.
    pub read_only: bool,
    /// `NBD_CMD_TRIM` was advertised.
    pub allow_trim: bool,
}

/// Check a request before it is executed; `Err` is the NBD error to reply with.
///
/// * unknown commands and flags not valid for the command: `EINVAL` (`FUA` is accepted on
///   every command, as the protocol asks);
/// * writes, trims and write-zeroes on a read-only export: `EPERM`;
/// * reads and writes longer than [`MAX_PAYLOAD`]: `EINVAL`;
/// * reads past the end: `EINVAL`; writes, trims, write-zeroes past the end: `ENOSPC`.
pub fn check_request(req: &Request, limits: &ExportLimits) -> Result<(), u32> {
    let allowed = match req.command {
        Command::WriteZeroes => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE,
        Command::Other(_) => return Err(EINVAL),
        Command::Trim if !limits.allow_trim => return Err(EINVAL),
        _ => CMD_FLAG_FUA,
    };
    if req.flags & !allowed != 0 {
        return Err(EINVAL);
    }
    let writes = matches!(
        req.command,
        Command::Write | Command::Trim | Command::WriteZeroes
    );
    if writes && limits.read_only {
        return Err(EPERM);
    }
    if matches!(req.command, Command::Read | Command::Write) && req.length > MAX_PAYLOAD {
        return Err(EINVAL);
    }
    let in_range = req
        .offset
        .checked_add(u64::from(req.length))
        .is_some_and(|end| end <= limits.size);
    match req.command {
        Command::Read if !in_range => Err(EINVAL),
        _ if writes && !in_range => Err(ENOSPC),
        _ => Ok(()),
    }
}

/// The NBD error for an I/O error of the backend.
pub fn errno_of(e: &std::io::Error) -> u32 {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EROFS) | Some(libc::EACCES) => EPERM,
        Some(libc::ENOMEM) => ENOMEM,
        Some(libc::EINVAL) => EINVAL,
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => ENOSPC,
        Some(libc::EOVERFLOW) => EOVERFLOW,
        Some(libc::ESHUTDOWN) => ESHUTDOWN,
        Some(libc::EOPNOTSUPP) => ENOTSUP,
        _ if e.kind() == std::io::ErrorKind::Unsupported => ENOTSUP,
        _ => EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(command: Command, flags: u16, offset: u64, length: u32) -> Request {
        Request {
            flags,
            command,
            handle: 0x0102_0304_0506_0708,
            offset,
            length,
        }
    }

    #[test]
    fn request_round_trip_and_wire_layout() {
        let r = req(
            Command::WriteZeroes,
            CMD_FLAG_NO_HOLE,
            0x1122_3344_5566,
            4096,
        );
        let b = encode_request(&r);
        assert_eq!(&b[..4], &[0x25, 0x60, 0x95, 0x13]);
        assert_eq!(&b[4..8], &[0, 2, 0, 6]);
        assert_eq!(&b[24..], &[0, 0, 0x10, 0]);
        assert_eq!(parse_request(&b), Ok(r));
        assert_eq!(
            parse_request(&encode_request(&req(Command::Other(0xffff), 0, 0, 0)))
                .map(|r| r.command),
            Ok(Command::Other(0xffff))
        );
    }

    #[test]
    fn malformed_requests_are_errors() {
        let good = encode_request(&req(Command::Read, 0, 0, 1));
        assert!(matches!(parse_request(&[]), Err(ProtoError::Short { .. })));
        assert!(matches!(
            parse_request(&good[..27]),
            Err(ProtoError::Short { .. })
        ));
        let mut long = good.to_vec();
        long.push(0);
        assert!(matches!(
            parse_request(&long),
            Err(ProtoError::Trailing { .. })
        ));
        let mut bad = good;
        bad[0] ^= 1;
        assert!(matches!(
            parse_request(&bad),
            Err(ProtoError::BadMagic { .. })
        ));
    }

    #[test]
    fn info_requests_parse_and_reject_garbage() {
        let r = InfoRequest {
            name: "vol".into(),
            requests: vec![INFO_BLOCK_SIZE, INFO_NAME],
        };
        let b = encode_info_request(&r);
        assert_eq!(parse_option(OPT_GO, &b), Ok(ClientOption::Go(r.clone())));
        assert_eq!(parse_option(OPT_INFO, &b), Ok(ClientOption::Info(r)));
        // Every truncation and one extra byte fail cleanly.
        for n in 0..b.len() {
            assert!(parse_option(OPT_GO, &b[..n]).is_err(), "prefix {n}");
        }
        let mut extra = b.clone();
        extra.push(0);
        assert!(parse_option(OPT_GO, &extra).is_err());
        // Name length larger than the payload, or near u32::MAX.
        assert!(parse_option(OPT_GO, &[0, 0, 0, 9, b'x', 0, 0]).is_err());
        assert!(parse_option(OPT_GO, &[0xff, 0xff, 0xff, 0xff, 0, 0]).is_err());
        // Bad strings: NUL, invalid UTF-8, too long.
        assert_eq!(
            parse_option(OPT_GO, &[0, 0, 0, 1, 0, 0, 0]),
            Err(ProtoError::BadString)
        );
        assert_eq!(
            parse_option(OPT_EXPORT_NAME, &[0xff, 0xfe]),
            Err(ProtoError::BadString)
        );
        assert_eq!(
            parse_option(OPT_EXPORT_NAME, &[b'a'; MAX_STRING_LEN + 1]),
            Err(ProtoError::BadString)
        );
        assert_eq!(
            parse_option(OPT_EXPORT_NAME, b"vol"),
            Ok(ClientOption::ExportName("vol".into()))
        );
    }

    #[test]
    fn options_without_payload_refuse_one() {
        assert_eq!(parse_option(OPT_LIST, &[]), Ok(ClientOption::List));
        assert!(parse_option(OPT_LIST, &[1]).is_err());
        assert!(parse_option(OPT_ABORT, &[1]).is_err());
        assert!(parse_option(OPT_STRUCTURED_REPLY, &[1]).is_err());
        assert_eq!(parse_option(77, &[1, 2, 3]), Ok(ClientOption::Unknown(77)));
    }

    #[test]
    fn option_header_and_client_flags() {
        let mut h = IHAVEOPT.to_be_bytes().to_vec();
        h.extend_from_slice(&OPT_GO.to_be_bytes());
        h.extend_from_slice(&70000u32.to_be_bytes());
        assert_eq!(parse_option_header(&h), Ok((OPT_GO, 70000)));
        assert!(parse_option_header(&h[..15]).is_err());
        h[0] = 0;
        assert!(parse_option_header(&h).is_err());
        assert_eq!(parse_client_flags(&[0, 0, 0, 3]), Ok(3));
        assert_eq!(parse_client_flags(&[0, 0, 0, 0]), Ok(0));
        assert!(parse_client_flags(&[0, 0, 0, 4]).is_err());
        assert!(parse_client_flags(&[0, 0, 0]).is_err());
    }

    #[test]
    fn request_checks() {
        let lim = ExportLimits {
            size: 1 << 20,
            read_only: false,
            allow_trim: false,
        };
        let ok = |r: Request| check_request(&r, &lim);
        assert_eq!(ok(req(Command::Read, 0, (1 << 20) - 1, 1)), Ok(()));
        assert_eq!(ok(req(Command::Read, 0, 1 << 20, 0)), Ok(()));
        assert_eq!(ok(req(Command::Read, 0, (1 << 20) - 1, 2)), Err(EINVAL));
        assert_eq!(ok(req(Command::Read, 0, u64::MAX, 1)), Err(EINVAL));
        assert_eq!(ok(req(Command::Write, 0, u64::MAX, 1)), Err(ENOSPC));
        assert_eq!(ok(req(Command::Write, 0, 1 << 20, 1)), Err(ENOSPC));
        assert_eq!(ok(req(Command::WriteZeroes, 0, 0, u32::MAX)), Err(ENOSPC));
        assert_eq!(ok(req(Command::Read, 0, 0, MAX_PAYLOAD + 1)), Err(EINVAL));
        assert_eq!(ok(req(Command::Trim, 0, 0, 1)), Err(EINVAL));
        assert_eq!(ok(req(Command::Other(5), 0, 0, 1)), Err(EINVAL));
        assert_eq!(ok(req(Command::Read, CMD_FLAG_DF, 0, 1)), Err(EINVAL));
        assert_eq!(ok(req(Command::Read, CMD_FLAG_FUA, 0, 1)), Ok(()));
        assert_eq!(ok(req(Command::Flush, CMD_FLAG_FUA, 0, 0)), Ok(()));
        assert_eq!(ok(req(Command::Write, CMD_FLAG_NO_HOLE, 0, 1)), Err(EINVAL));
        assert_eq!(
            ok(req(
                Command::WriteZeroes,
                CMD_FLAG_NO_HOLE | CMD_FLAG_FUA,
                0,
                1
            )),
            Ok(())
        );
        let ro = ExportLimits {
            read_only: true,
            allow_trim: true,
            ..lim
        };
        assert_eq!(
            check_request(&req(Command::Write, 0, 0, 1), &ro),
            Err(EPERM)
        );
        assert_eq!(check_request(&req(Command::Trim, 0, 0, 1), &ro), Err(EPERM));
        assert_eq!(check_request(&req(Command::Read, 0, 0, 1), &ro), Ok(()));
    }

    #[test]
    fn parsers_are_total_on_arbitrary_bytes() {
        // A cheap deterministic fuzz: every parser on many pseudo-random inputs.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20000 {
            let len = (next() % 64) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let _ = parse_request(&bytes);
            let _ = parse_option_header(&bytes);
            let _ = parse_client_flags(&bytes);
            for opt in [OPT_EXPORT_NAME, OPT_GO, OPT_INFO, OPT_LIST, next() as u32] {
                let _ = parse_option(opt, &bytes);
            }
        }
    }

    #[test]
    fn errno_mapping() {
        let e = |n| errno_of(&std::io::Error::from_raw_os_error(n));
        assert_eq!(e(libc::EROFS), EPERM);
        assert_eq!(e(libc::ENOSPC), ENOSPC);
        assert_eq!(e(libc::EFBIG), ENOSPC);
        assert_eq!(e(libc::EOPNOTSUPP), ENOTSUP);
        assert_eq!(e(libc::EINVAL), EINVAL);
        assert_eq!(errno_of(&std::io::Error::other("x")), EIO);
    }
}
