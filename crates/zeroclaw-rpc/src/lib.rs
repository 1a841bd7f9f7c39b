pub mod error;
pub use error::{ErrorObject, code};
