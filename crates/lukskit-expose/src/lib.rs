//! # lukskit-expose — the exposure layer of lukskit
//!
//! Makes the plaintext of an unlocked volume usable by other programs without
//! device-mapper. Everything here works on a [`backend::BlockBackend`]: the volume layer's
//! [`lukskit_volume::data::DataVolume`] (through [`backend::VolumeBackend`], which adds
//! `luksSuspend`/`luksResume`) or, in tests, a [`backend::MemBackend`].
//!
//! * [`backend`] — the block-device view every exposure serves.
//! * [`nbd`] — an NBD server (fixed newstyle) over a Unix or TCP socket.
//! * [`fuse`] — the plaintext as one file on a FUSE mount.
//! * [`loopdev`] — loop devices on top of that file.
//!
//! Which of these a volume gets, and the serving process that runs them, is decided by the
//! activation layer (crate `lukskit-activate`).

pub mod backend;
pub mod fuse;
mod fuse_core;
mod fuse_uring;
pub mod loopdev;
pub mod nbd;
