//! The fixed newstyle handshake: greeting, client flags and option haggling up to
//! `NBD_OPT_GO` or `NBD_OPT_EXPORT_NAME`.

use super::proto::{self, ClientOption, InfoRequest};
use super::socket::Stream;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// What the handshake needs to know about the export.
pub(crate) struct Export<'a> {
    pub name: &'a str,
    pub tls: Option<&'a super::NbdTls>,
    pub size: u64,
    pub flags: u16,
    pub preferred_block: u32,
    pub stopping: &'a AtomicBool,
    /// Read and write timeout of each step (the whole handshake has its deadline apart).
    pub step_timeout: std::time::Duration,
}

/// Negotiate an export. `Ok(Some(stream))` when transmission starts (on the plaintext end
/// of the TLS session after `NBD_OPT_STARTTLS`), `Ok(None)` when the client went away
/// cleanly (`NBD_OPT_ABORT`) or must be disconnected (unknown name in
/// `NBD_OPT_EXPORT_NAME`, bad flags or magic, oversized option, `NBD_OPT_EXPORT_NAME`
/// before a required TLS, failed TLS handshake).
pub(crate) fn negotiate(stream: Stream, export: &Export<'_>) -> io::Result<Option<Stream>> {
    let mut stream = stream;
    let mut tls_active = false;
    let mut s = &stream;
    s.write_all(&proto::encode_greeting())?;
    let mut flags = [0u8; 4];
    s.read_exact(&mut flags)?;
    let Ok(client_flags) = proto::parse_client_flags(&flags) else {
        return Ok(None);
    };
    let no_zeroes = client_flags & proto::FLAG_C_NO_ZEROES != 0;
    let mut out = Vec::new();
    loop {
        let mut header = [0u8; proto::OPTION_HEADER_LEN];
        s.read_exact(&mut header)?;
        let Ok((option, len)) = proto::parse_option_header(&header) else {
            return Ok(None);
        };
        if len > proto::MAX_OPTION_LEN {
            // Denial of service or garbage: hard disconnect without reading it.
            return Ok(None);
        }
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data)?;
        out.clear();
        if export.stopping.load(Ordering::SeqCst) && option != proto::OPT_ABORT {
            if option == proto::OPT_EXPORT_NAME {
                return Ok(None);
            }
            error_reply(
                &mut out,
                option,
                proto::REP_ERR_SHUTDOWN,
                "server shutting down",
            );
            s.write_all(&out)?;
            continue;
        }
        let tls_required = export.tls.is_some_and(|t| t.is_required());
        if tls_required && !tls_active && !matches!(option, proto::OPT_STARTTLS | proto::OPT_ABORT)
        {
            if option == proto::OPT_EXPORT_NAME {
                return Ok(None);
            }
            error_reply(
                &mut out,
                option,
                proto::REP_ERR_TLS_REQD,
                "TLS is required: negotiate NBD_OPT_STARTTLS first",
            );
            s.write_all(&out)?;
            continue;
        }
        let parsed = match proto::parse_option(option, &data) {
            Ok(p) => p,
            Err(_) if option == proto::OPT_EXPORT_NAME => return Ok(None),
            Err(e) => {
                error_reply(&mut out, option, proto::REP_ERR_INVALID, &e.to_string());
                s.write_all(&out)?;
                continue;
            }
        };
        let go = match parsed {
            ClientOption::ExportName(name) => {
                if !name_matches(&name, export.name) {
                    return Ok(None);
                }
                s.write_all(&proto::export_name_reply(
                    export.size,
                    export.flags,
                    no_zeroes,
                ))?;
                return Ok(Some(stream));
            }
            ClientOption::Abort => {
                proto::encode_option_reply(&mut out, option, proto::REP_ACK, &[]);
                let _ = s.write_all(&out);
                return Ok(None);
            }
            ClientOption::StartTls => {
                let Some(tls) = export.tls else {
                    error_reply(
                        &mut out,
                        option,
                        proto::REP_ERR_UNSUP,
                        "TLS is not configured",
                    );
                    s.write_all(&out)?;
                    continue;
                };
                if tls_active {
                    error_reply(
                        &mut out,
                        option,
                        proto::REP_ERR_INVALID,
                        "TLS is already active",
                    );
                    s.write_all(&out)?;
                    continue;
                }
                proto::encode_option_reply(&mut out, option, proto::REP_ACK, &[]);
                s.write_all(&out)?;
                // A failed handshake (no or a wrong client certificate, plain bytes) ends
                // the connection.
                let Some(plain) = tls.accept(&stream)? else {
                    return Ok(None);
                };
                plain.set_read_timeout(Some(export.step_timeout))?;
                plain.set_write_timeout(Some(export.step_timeout))?;
                stream = Stream::Unix(plain);
                s = &stream;
                tls_active = true;
                continue;
            }
            ClientOption::List => {
                let server = proto::rep_server(export.name);
                proto::encode_option_reply(&mut out, option, proto::REP_SERVER, &server);
                proto::encode_option_reply(&mut out, option, proto::REP_ACK, &[]);
                false
            }
            ClientOption::Info(req) => {
                info_replies(&mut out, option, &req, export);
                false
            }
            ClientOption::Go(req) => info_replies(&mut out, option, &req, export),
            ClientOption::StructuredReply => {
                error_reply(
                    &mut out,
                    option,
                    proto::REP_ERR_UNSUP,
                    "simple replies only",
                );
                false
            }
            ClientOption::Unknown(_) => {
                error_reply(
                    &mut out,
                    option,
                    proto::REP_ERR_UNSUP,
                    "option not supported",
                );
                false
            }
        };
        s.write_all(&out)?;
        if go {
            return Ok(Some(stream));
        }
    }
}

fn name_matches(asked: &str, ours: &str) -> bool {
    asked.is_empty() || asked == ours
}

fn error_reply(out: &mut Vec<u8>, option: u32, reply: u32, message: &str) {
    proto::encode_option_reply(out, option, reply, message.as_bytes());
}

/// The replies to `NBD_OPT_INFO`/`NBD_OPT_GO`; true when the export was found.
fn info_replies(out: &mut Vec<u8>, option: u32, req: &InfoRequest, export: &Export<'_>) -> bool {
    if !name_matches(&req.name, export.name) {
        let msg = format!("unknown export '{}'", req.name);
        error_reply(out, option, proto::REP_ERR_UNKNOWN, &msg);
        return false;
    }
    let rep = |out: &mut Vec<u8>, data: &[u8]| {
        proto::encode_option_reply(out, option, proto::REP_INFO, data)
    };
    rep(out, &proto::info_export(export.size, export.flags));
    // Always sent: minimum 1 (any alignment works), so clients need not ask for it.
    rep(
        out,
        &proto::info_block_size(1, export.preferred_block, proto::MAX_PAYLOAD),
    );
    if req.requests.contains(&proto::INFO_NAME) {
        rep(out, &proto::info_string(proto::INFO_NAME, export.name));
    }
    proto::encode_option_reply(out, option, proto::REP_ACK, &[]);
    true
}
