//! Files in agent workspaces (SPEC §8): storing bytes by content ([`workspace`]), staging
//! chunked uploads ([`staging`]), reading local files for path attachments safely
//! ([`path_read`]), and the one commit step both `file/attach` and `file/upload/commit`
//! go through ([`commit`]).

pub mod commit;
pub mod path_read;
pub mod staging;
pub mod workspace;

pub use staging::UploadManager;
