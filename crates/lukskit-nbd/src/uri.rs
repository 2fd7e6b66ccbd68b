//! NBD URIs (the NBD project's `doc/uri.md`):
//!
//! * `nbd://HOST[:PORT][/EXPORT]` — TCP, port 10809 by default;
//! * `nbds://…` — the same over TLS (required);
//! * `nbd+unix:///[EXPORT]?socket=PATH` and `nbds+unix://…` — a Unix domain socket.
//!
//! The export name is the path without its first `/`, percent-decoded. Query parameters:
//! `socket=PATH` (Unix transports, required there), `tls-certificates=DIR` (X.509 files in
//! qemu/nbdkit layout: `ca-cert.pem`, and for client authentication `client-cert.pem` and
//! `client-key.pem`), `tls-verify-peer=false` (do not verify the server's certificate),
//! `tls-hostname=NAME` (the name the server certificate must carry). PSK parameters are
//! refused (only X.509 is supported).
//!
//! lukskit's own parameters set the client's timeouts (in seconds, decimals allowed; see
//! [`crate::client::ClientOptions`]): `request-timeout=SECS` (default 60),
//! `handshake-timeout=SECS` (default 30) and `reconnect-timeout=SECS` (default 30).

use crate::error::NbdError;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// The default NBD TCP port.
pub const DEFAULT_PORT: u16 = 10809;

/// How to reach the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// TCP to `host` (an IPv6 address without brackets) and `port`.
    Tcp {
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
    },
    /// A Unix domain socket.
    Unix(PathBuf),
}

/// A parsed NBD URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NbdUri {
    /// Where the server is.
    pub transport: Transport,
    /// The export name ("" = the server's default export).
    pub export: String,
    /// TLS is required (`nbds` schemes).
    pub tls: bool,
    /// Directory of X.509 files (`tls-certificates`).
    pub tls_certificates: Option<PathBuf>,
    /// Verify the server's certificate (default true).
    pub tls_verify_peer: bool,
    /// The name the server's certificate must carry; default: the host (`localhost` for
    /// Unix sockets).
    pub tls_hostname: Option<String>,
    /// `request-timeout=SECS`: [`crate::client::ClientOptions::request_timeout`].
    pub request_timeout: Option<Duration>,
    /// `handshake-timeout=SECS`: [`crate::client::ClientOptions::handshake_timeout`].
    pub handshake_timeout: Option<Duration>,
    /// `reconnect-timeout=SECS`: [`crate::client::ClientOptions::reconnect_timeout`].
    pub reconnect_timeout: Option<Duration>,
    /// The URI as given (for messages).
    pub text: String,
}

/// Longest timeout a URI may ask for (a day).
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// A timeout parameter: seconds, more than 0 and at most a day.
fn parse_secs(name: &str, v: &str) -> Result<Duration, String> {
    match v.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= MAX_TIMEOUT_SECS => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!(
            "{name} must be a number of seconds above 0 and at most {MAX_TIMEOUT_SECS}"
        )),
    }
}

/// Whether `s` looks like an NBD URI (and should be opened as one rather than as a path).
pub fn is_nbd_uri(s: &str) -> bool {
    [
        "nbd://",
        "nbds://",
        "nbd+unix://",
        "nbds+unix://",
        "nbd+tcp://",
        "nbds+tcp://",
    ]
    .iter()
    .any(|p| s.starts_with(p))
}

/// Percent-decoding (RFC 3986 §2.1) into UTF-8; a `%` not followed by two hex digits is
/// refused.
fn percent_decode(s: &str) -> Result<String, NbdError> {
    let well_formed = s
        .split('%')
        .skip(1)
        .all(|t| t.len() >= 2 && t.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit));
    if !well_formed {
        return Err(NbdError::Uri(format!("bad percent escape in '{s}'")));
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| NbdError::Uri(format!("'{s}' is not UTF-8")))
}

impl FromStr for NbdUri {
    type Err = NbdError;

    fn from_str(text: &str) -> Result<Self, NbdError> {
        let bad = |m: &str| NbdError::Uri(format!("{text}: {m}"));
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| bad("expected nbd://, nbds://, nbd+unix:// or nbds+unix://"))?;
        let (tls, unix) = match scheme {
            "nbd" | "nbd+tcp" => (false, false),
            "nbds" | "nbds+tcp" => (true, false),
            "nbd+unix" => (false, true),
            "nbds+unix" => (true, true),
            other => return Err(bad(&format!("unknown scheme '{other}'"))),
        };
        let (before_query, query) = match rest.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (rest, None),
        };
        if before_query.contains('#') || query.is_some_and(|q| q.contains('#')) {
            return Err(bad("fragments are not allowed"));
        }
        let (authority, path) = match before_query.find('/') {
            Some(i) => (&before_query[..i], &before_query[i + 1..]),
            None => (before_query, ""),
        };
        let export = percent_decode(path)?;
        if export.len() > 4096 || export.contains('\0') {
            return Err(bad("export name longer than 4096 bytes or containing NUL"));
        }
        let mut socket = None;
        let mut tls_certificates = None;
        let mut tls_verify_peer = true;
        let mut tls_hostname = None;
        let (mut request_timeout, mut handshake_timeout, mut reconnect_timeout) =
            (None, None, None);
        for kv in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let v = percent_decode(v)?;
            match k {
                "socket" => socket = Some(PathBuf::from(v)),
                "tls-certificates" => tls_certificates = Some(PathBuf::from(v)),
                "tls-verify-peer" => {
                    tls_verify_peer = match v.as_str() {
                        "true" | "1" | "yes" | "on" => true,
                        "false" | "0" | "no" | "off" => false,
                        _ => return Err(bad("tls-verify-peer must be true or false")),
                    }
                }
                "tls-hostname" => tls_hostname = Some(v),
                "request-timeout" => {
                    request_timeout = Some(parse_secs(k, &v).map_err(|m| bad(&m))?)
                }
                "handshake-timeout" => {
                    handshake_timeout = Some(parse_secs(k, &v).map_err(|m| bad(&m))?)
                }
                "reconnect-timeout" => {
                    reconnect_timeout = Some(parse_secs(k, &v).map_err(|m| bad(&m))?)
                }
                "tls-psk-file" | "tls-username" => {
                    return Err(bad("TLS with pre-shared keys is not supported (use X.509)"))
                }
                other => return Err(bad(&format!("unknown query parameter '{other}'"))),
            }
        }
        let transport = if unix {
            if !authority.is_empty() {
                return Err(bad(
                    "a Unix socket URI has no host (nbd+unix:///EXPORT?socket=PATH)",
                ));
            }
            Transport::Unix(socket.ok_or_else(|| bad("missing ?socket=PATH"))?)
        } else {
            if socket.is_some() {
                return Err(bad("socket= is only for nbd+unix:// URIs"));
            }
            let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            let (host, port) = if let Some(r) = authority.strip_prefix('[') {
                let (h, after) = r.split_once(']').ok_or_else(|| bad("unbalanced '['"))?;
                match after {
                    "" => (h.to_string(), None),
                    p => (
                        h.to_string(),
                        Some(p.strip_prefix(':').ok_or_else(|| bad("junk after ']'"))?),
                    ),
                }
            } else {
                match authority.rsplit_once(':') {
                    Some((h, p)) => (h.to_string(), Some(p)),
                    None => (authority.to_string(), None),
                }
            };
            let host = if host.is_empty() {
                "localhost".to_string()
            } else {
                host
            };
            let port = match port {
                None | Some("") => DEFAULT_PORT,
                Some(p) => p
                    .parse()
                    .map_err(|_| bad(&format!("port '{p}' is not a number from 0 to 65535")))?,
            };
            Transport::Tcp { host, port }
        };
        Ok(NbdUri {
            transport,
            export,
            tls,
            tls_certificates,
            tls_verify_peer,
            tls_hostname,
            request_timeout,
            handshake_timeout,
            reconnect_timeout,
            text: text.to_string(),
        })
    }
}

impl NbdUri {
    /// The server for messages: `host:port` or the socket path.
    pub fn server(&self) -> String {
        match &self.transport {
            Transport::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
            Transport::Tcp { host, port } => format!("{host}:{port}"),
            Transport::Unix(p) => p.display().to_string(),
        }
    }

    /// The name the server's certificate is checked against.
    pub fn server_name(&self) -> String {
        if let Some(h) = &self.tls_hostname {
            return h.clone();
        }
        match &self.transport {
            Transport::Tcp { host, .. } => host.clone(),
            Transport::Unix(_) => "localhost".to_string(),
        }
    }
}

impl fmt::Display for NbdUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> NbdUri {
        s.parse().unwrap()
    }

    #[test]
    fn percent_escapes_are_two_hex_digits() {
        assert_eq!(p("nbd://h/a%2Fb%25%c3%a9").export, "a/b%\u{e9}");
        for bad in [
            "nbd://h/%+f",
            "nbd://h/%4",
            "nbd://h/a%",
            "nbd://h/%zz",
            "nbd://h/%ff",
        ] {
            assert!(bad.parse::<NbdUri>().is_err(), "{bad}");
        }
    }

    #[test]
    fn tcp_uris() {
        let u = p("nbd://example.com/disk");
        assert_eq!(
            u.transport,
            Transport::Tcp {
                host: "example.com".into(),
                port: 10809
            }
        );
        assert_eq!(u.export, "disk");
        assert!(!u.tls);
        let u = p("nbds://[::1]:1234/a%20b?tls-certificates=/etc/x&tls-verify-peer=false");
        assert_eq!(
            u.transport,
            Transport::Tcp {
                host: "::1".into(),
                port: 1234
            }
        );
        assert_eq!(u.export, "a b");
        assert!(u.tls && !u.tls_verify_peer);
        assert_eq!(u.tls_certificates, Some(PathBuf::from("/etc/x")));
        assert_eq!(u.server(), "[::1]:1234");
        assert_eq!(p("nbd://h:99").export, "");
        assert_eq!(p("nbd://h:99/").export, "");
        assert_eq!(p("nbd://h//x").export, "/x");
    }

    #[test]
    fn unix_uris() {
        let u = p("nbd+unix:///vol?socket=/run/x.sock");
        assert_eq!(u.transport, Transport::Unix("/run/x.sock".into()));
        assert_eq!(u.export, "vol");
        assert_eq!(u.server_name(), "localhost");
        assert!(p("nbds+unix://?socket=/s").tls);
    }

    #[test]
    fn timeout_parameters() {
        let u = p(
            "nbd+unix:///?socket=/s&request-timeout=2&handshake-timeout=0.5&reconnect-timeout=3",
        );
        assert_eq!(u.request_timeout, Some(Duration::from_secs(2)));
        assert_eq!(u.handshake_timeout, Some(Duration::from_millis(500)));
        assert_eq!(u.reconnect_timeout, Some(Duration::from_secs(3)));
        assert_eq!(p("nbd://h/x").request_timeout, None);
        for s in [
            "nbd://h/x?request-timeout=0",
            "nbd://h/x?request-timeout=-1",
            "nbd://h/x?handshake-timeout=abc",
            "nbd://h/x?reconnect-timeout=inf",
            "nbd://h/x?request-timeout=100000",
        ] {
            assert!(s.parse::<NbdUri>().is_err(), "{s}");
        }
    }

    #[test]
    fn bad_uris() {
        for s in [
            "nbd:/x",
            "http://h/x",
            "nbd://h:port/x",
            "nbd://h:70000/x",
            "nbd+unix:///x",
            "nbd+unix://host/x?socket=/s",
            "nbd://h/x?socket=/s",
            "nbds://h/x?tls-psk-file=/k",
            "nbd://h/x?frobnicate=1",
            "nbd://h/%zz",
            "nbd://[::1/x",
        ] {
            assert!(s.parse::<NbdUri>().is_err(), "{s}");
        }
        assert!(is_nbd_uri("nbd+unix:///?socket=/s"));
        assert!(!is_nbd_uri("/dev/sda"));
        assert!(!is_nbd_uri("nbd.img"));
    }
}
