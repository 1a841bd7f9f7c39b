//! zeroclaw-store (being built).
