//! The identity of one live session *instance* ([`LiveId`]), as client connections remember
//! it: a session closed and resumed under the same id is a new instance. A leaf, so the
//! [`ClientLink`](super::link::ClientLink) trait can name a session without importing the
//! live session itself.

use std::sync::{Arc, Weak};

/// What a [`LiveId`] points at: nothing but a unique allocation.
struct Mark;

/// Held by the live session; unique for as long as it (or a [`WeakLiveId`]) exists.
pub struct LiveId(Arc<Mark>);

impl LiveId {
    #[allow(clippy::new_without_default)]
    pub fn new() -> LiveId {
        LiveId(Arc::new(Mark))
    }

    /// A reference that does not keep the instance's identity alive.
    pub fn downgrade(&self) -> WeakLiveId {
        WeakLiveId(Arc::downgrade(&self.0))
    }
}

/// Names an instance without keeping it alive (what a connection stores).
#[derive(Clone)]
pub struct WeakLiveId(Weak<Mark>);

impl WeakLiveId {
    /// Whether this names `id`.
    pub fn is(&self, id: &LiveId) -> bool {
        std::ptr::eq(self.0.as_ptr(), Arc::as_ptr(&id.0))
    }

    /// Whether the instance is gone (its session object was dropped).
    pub fn is_gone(&self) -> bool {
        self.0.strong_count() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_weak_id_names_its_instance_only_and_sees_it_go() {
        let (a, b) = (LiveId::new(), LiveId::new());
        let weak = a.downgrade();
        assert!(weak.is(&a));
        assert!(!weak.is(&b));
        assert!(!weak.is_gone());
        drop(a);
        assert!(weak.is_gone());
    }
}
