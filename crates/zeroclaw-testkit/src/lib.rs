//! zeroclaw-testkit (being built).
