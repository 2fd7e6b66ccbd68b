//! # lukskit-expose — the exposure layer of lukskit
//!
//! Makes the plaintext of an unlocked volume usable by other programs without
//! device-mapper. Everything here works on a [`backend::BlockBackend`]: the volume layer's
//! [`lukskit_volume::data::DataVolume`] (through [`backend::VolumeBackend`], which adds
//! `luksSuspend`/`luksResume`) or, in tests, a [`backend::MemBackend`].
//!
//! * [`backend`] — the block-device view every exposure serves.

pub mod backend;
