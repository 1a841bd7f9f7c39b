//! Files in agent workspaces (SPEC §8): storing bytes by content ([`workspace`]), staging
//! chunked uploads ([`staging`]), reading local files for path attachments safely
//! ([`path_read`]), and the one commit step both `file/attach` and `file/upload/commit`
//! go through ([`commit`]). Every failure is a [`error::FilesError`], which the daemon maps
//! to the wire in one place (its `wire_error.rs`).
//!
//! The service takes what it needs (the session manager, the config and token stores, the
//! daemon's check of the caller, [`commit::Caller`]) as arguments; it knows nothing of the
//! connection loop, dispatch or the method handlers (this crate cannot name them).

pub mod commit;
pub mod error;
pub mod path_read;
pub mod staging;
pub mod workspace;

pub use staging::UploadManager;
