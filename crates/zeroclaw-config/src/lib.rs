//! zeroclaw-config (being built).
