//! Files in agent workspaces (SPEC §8): storing bytes by content ([`workspace`]), staging
//! chunked uploads ([`staging`]), and the one commit step both `file/attach` and
//! `file/upload/commit` go through ([`commit`]).

pub mod commit;
pub mod staging;
pub mod workspace;

pub use staging::{UploadManager, UploadTarget};
pub use workspace::{FileIndex, StoredFile};
