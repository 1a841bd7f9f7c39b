//! The method table (SPEC §5): every client → daemon method, written once, with what it
//! needs to be called (grant), where it is served (local-only) and how the connection loop
//! runs it (answers in place). The daemon → client names are constants beside it.

use std::fmt;

/// Daemon → client notification carrying one event of a session (`session/update`).
pub const SESSION_UPDATE: &str = "session/update";
/// Daemon → client request asking the user a question (`elicitation/create`).
pub const ELICITATION_CREATE: &str = "elicitation/create";

/// What a caller must hold to call a method (SPEC §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Requirement {
    /// Nothing (`initialize`).
    Open,
    /// One grant, `resource:verb`.
    Grant {
        resource: &'static str,
        verb: &'static str,
    },
    /// An admin principal (`daemon/shutdown`).
    Admin,
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Open => f.write_str("none"),
            Requirement::Grant { resource, verb } => write!(f, "{resource}:{verb}"),
            Requirement::Admin => f.write_str("admin"),
        }
    }
}

macro_rules! methods {
    ($( $(#[$doc:meta])* $var:ident = $name:literal => $req:expr ),+ $(,)?) => {
        /// A client → daemon method.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Method {
            $( $(#[$doc])* $var ),+
        }

        impl Method {
            /// Every client → daemon method, in a stable order (the order
            /// `initialize.capabilities` lists them in).
            pub const ALL: &'static [Method] = &[ $( Method::$var ),+ ];

            /// The wire name.
            pub const fn name(self) -> &'static str {
                match self { $( Method::$var => $name ),+ }
            }

            /// The method with this wire name; `None` for names the daemon does not serve
            /// (including the daemon → client ones).
            pub fn from_name(name: &str) -> Option<Method> {
                match name { $( $name => Some(Method::$var), )+ _ => None }
            }

            /// What the caller must hold (SPEC §4.1, §5).
            pub const fn requirement(self) -> Requirement {
                match self { $( Method::$var => $req ),+ }
            }
        }
    };
}

const fn grant(resource: &'static str, verb: &'static str) -> Requirement {
    Requirement::Grant { resource, verb }
}

methods! {
    /// The handshake; must be the first call.
    Initialize = "initialize" => Requirement::Open,
    Status = "status" => grant("system", "read"),
    ConfigGet = "config/get" => grant("config", "read"),
    ConfigSet = "config/set" => grant("config", "update"),
    ConfigSetMany = "config/set-many" => grant("config", "update"),
    ConfigDelete = "config/delete" => grant("config", "delete"),
    SessionNew = "session/new" => grant("sessions", "create"),
    SessionPrompt = "session/prompt" => grant("sessions", "execute"),
    SessionCancel = "session/cancel" => grant("sessions", "update"),
    SessionApprove = "session/approve" => grant("sessions", "update"),
    SessionClose = "session/close" => grant("sessions", "update"),
    SessionKill = "session/kill" => grant("sessions", "delete"),
    SessionDelete = "session/delete" => grant("sessions", "delete"),
    SessionList = "session/list" => grant("sessions", "read"),
    SessionMessages = "session/messages" => grant("sessions", "read"),
    SessionSubscribe = "session/subscribe" => grant("sessions", "read"),
    SessionUnsubscribe = "session/unsubscribe" => grant("sessions", "read"),
    SessionStatus = "session/status" => grant("sessions", "read"),
    SessionConfigure = "session/configure" => grant("sessions", "update"),
    SessionCompact = "session/compact" => grant("sessions", "execute"),
    /// SPEC §18: back to just before a turn.
    SessionRewind = "session/rewind" => grant("sessions", "update"),
    /// SPEC §18: a new session from another's history.
    SessionFork = "session/fork" => grant("sessions", "create"),
    SessionSetTitle = "session/set_title" => grant("sessions", "update"),
    ModelsList = "models/list" => grant("system", "read"),
    FileAttach = "file/attach" => grant("files", "create"),
    FileUploadBegin = "file/upload/begin" => grant("files", "create"),
    FileUploadChunk = "file/upload/chunk" => grant("files", "create"),
    FileUploadCommit = "file/upload/commit" => grant("files", "create"),
    /// Graceful stop; admin principals only.
    DaemonShutdown = "daemon/shutdown" => Requirement::Admin,
}

impl Method {
    /// Served on the local endpoint only; refused over WebSocket with -32012 (SPEC §8.2).
    pub const fn local_only(self) -> bool {
        matches!(
            self,
            Method::FileUploadBegin | Method::FileUploadChunk | Method::FileUploadCommit
        )
    }

    /// Answers from memory without waiting on anything, so the connection loop may run it
    /// in place, in order, instead of spawning a task for it.
    pub const fn answers_in_place(self) -> bool {
        matches!(self, Method::Status | Method::ConfigGet)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for m in Method::ALL {
            assert_eq!(Method::from_name(m.name()), Some(*m));
            assert!(seen.insert(m.name()), "{m} twice");
        }
        assert_eq!(Method::ALL.len(), 29);
        assert_eq!(Method::from_name(SESSION_UPDATE), None);
        assert_eq!(Method::from_name(ELICITATION_CREATE), None);
        assert_eq!(Method::from_name("Status"), None);
    }

    #[test]
    fn grants_follow_the_spec_table() {
        assert_eq!(Method::Initialize.requirement(), Requirement::Open);
        assert_eq!(Method::DaemonShutdown.requirement(), Requirement::Admin);
        let g = |m: Method| m.requirement().to_string();
        assert_eq!(g(Method::Status), "system:read");
        assert_eq!(g(Method::ModelsList), "system:read");
        assert_eq!(g(Method::SessionPrompt), "sessions:execute");
        assert_eq!(g(Method::SessionStatus), "sessions:read");
        assert_eq!(g(Method::SessionConfigure), "sessions:update");
        assert_eq!(g(Method::SessionCompact), "sessions:execute");
        assert_eq!(g(Method::SessionRewind), "sessions:update");
        assert_eq!(g(Method::SessionSetTitle), "sessions:update");
        assert_eq!(g(Method::SessionFork), "sessions:create");
        assert_eq!(g(Method::ConfigDelete), "config:delete");
        assert_eq!(g(Method::FileUploadChunk), "files:create");
        let local: Vec<_> = Method::ALL.iter().filter(|m| m.local_only()).collect();
        assert_eq!(local.len(), 3);
        assert!(local.iter().all(|m| m.name().starts_with("file/upload/")));
        assert!(Method::Status.answers_in_place() && Method::ConfigGet.answers_in_place());
        assert!(!Method::SessionPrompt.answers_in_place());
    }
}
