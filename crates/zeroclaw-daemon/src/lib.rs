//! zeroclaw-daemon (being built).
