//! zeroclaw-ipc (being built).
