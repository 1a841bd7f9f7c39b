//! zeroclaw-client (being built).
