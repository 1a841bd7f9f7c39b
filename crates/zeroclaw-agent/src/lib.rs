//! zeroclaw-agent (being built).
