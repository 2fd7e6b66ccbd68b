//! An NBD export as a [`Storage`] (feature `nbd`).

use lukskit_format::io::Storage;
use lukskit_nbd::NbdClient;
use std::io;
use std::sync::Arc;

/// The ciphertext on an NBD server, lukskit being its client (see [`crate::device::remote`]).
/// Discards are not passed on (the server keeps the bytes).
#[derive(Debug, Clone)]
pub struct NbdStorage {
    client: Arc<NbdClient>,
}

impl NbdStorage {
    /// The storage of a connected client.
    pub fn new(client: Arc<NbdClient>) -> Self {
        NbdStorage { client }
    }

    /// The client (its connection events, its export's properties).
    pub fn client(&self) -> &Arc<NbdClient> {
        &self.client
    }
}

impl Storage for NbdStorage {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.client.read_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.client.write_at(buf, offset, false)
    }
    /// `NBD_CMD_FLUSH` (with multi-conn, one flush covers every connection).
    fn sync(&self) -> io::Result<()> {
        self.client.flush()
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.client.size())
    }
}
