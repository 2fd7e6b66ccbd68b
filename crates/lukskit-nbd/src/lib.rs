//! # lukskit-nbd — lukskit's NBD client and NBD over TLS
//!
//! The host may have no kernel NBD client, and lukskit keeps the key on the machine that
//! holds it: only ciphertext crosses the network. This crate is the userspace NBD client
//! through which lukskit reads and writes ciphertext served by a remote NBD server
//! (nbdkit, qemu-nbd, qemu-storage-daemon, `rbd-nbd`, lukskit's own export), and the TLS
//! layer (rustls) that both this client and lukskit's NBD export use.
//!
//! * [`uri`] — NBD URIs as the NBD URI specification defines them (`nbd://host:port/export`,
//!   `nbd+unix:///export?socket=PATH`, `nbds://…` for TLS).
//! * [`client`] — [`client::NbdClient`]: fixed newstyle handshake, `NBD_OPT_GO`, structured
//!   replies, pipelined requests over several connections where the server allows
//!   multi-conn, FLUSH and FUA, reconnection with backoff.
//! * `tls` (feature `tls`, on by default) — X.509 credentials in qemu-nbd's and nbdkit's directory layout
//!   (`ca-cert.pem`, `server-cert.pem`, `server-key.pem`, `client-cert.pem`,
//!   `client-key.pem`) and the TLS session that carries an NBD connection after
//!   `NBD_OPT_STARTTLS`.
//! * [`proto`] — the wire constants the client uses.

//!
//! The only `unsafe` is a poll(2) in the TLS pump (allowed there alone).

#![deny(unsafe_code)]

pub mod client;
pub mod error;
pub mod proto;
#[cfg(feature = "tls")]
pub mod tls;
pub mod uri;

pub use client::{ClientOptions, EventSink, NbdClient};
pub use error::NbdError;
pub use uri::NbdUri;
