//! Work in progress (being written).
