//! The tool's error and result types (a leaf module every other one uses).

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;
