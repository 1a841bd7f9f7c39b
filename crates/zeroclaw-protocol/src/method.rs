//! The method table (SPEC §5): every client → daemon method, written once, with what it
//! needs to be called (grant), its params and result types ([`Call`]), and how it runs
//! ([`Runs`]: whether its handler waits, whether the connection loop answers it in place,
//! whether it addresses a session and keeps that session's order, whether it is served
//! on the local endpoint only) — all facts of its one row, none in a list elsewhere. The
//! daemon → client names are constants beside it.

use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::compact::{CompactParams, CompactResult};
use crate::config::{
    ConfigDeleteParams, ConfigDeleteResult, ConfigGetParams, ConfigGetResult, ConfigSetManyParams,
    ConfigSetManyResult, ConfigSetParams, ConfigSetResult,
};
use crate::config_schema::ConfigSchemaResult;
use crate::diff::{DiffParams, DiffResult};
use crate::files::{
    AttachParams, AttachResult, StoredFile, UploadBeginParams, UploadBeginResult,
    UploadChunkParams, UploadChunkResult, UploadCommitParams,
};
use crate::gateway::{DashboardLoginResult, GatewayInfo};
use crate::history::{
    ForkParams, ForkResult, RewindParams, RewindResult, SetTitleParams, SetTitleResult,
};
use crate::push::{
    PushKeyResult, PushSubscribeParams, PushSubscribeResult, PushUnsubscribeParams,
    PushUnsubscribeResult,
};
use crate::schedule::{
    Schedule, ScheduleCreated, ScheduleDeleted, ScheduleFields, ScheduleIdParams,
    ScheduleListResult, ScheduleRunStarted, ScheduleRunsParams, ScheduleRunsResult,
    ScheduleUpdateParams,
};
use crate::session::{
    ApproveParams, ApproveResult, CancelResult, CloseResult, DeleteResult, KillResult, ListParams,
    ListResult, MessagesParams, MessagesResult, SessionNewParams, SessionNewResult,
    SessionPromptParams, SessionRef, TurnResult,
};
use crate::skills::{SkillsListParams, SkillsListResult};
use crate::stream::{
    ConfigureParams, ConfigureResult, SessionStatusResult, SubscribeParams, SubscribeResult,
    UnsubscribeResult,
};
use crate::stream::{ShellOutputParams, ShellOutputResult};
use crate::system::{
    InitializeParams, InitializeResult, ModelsListParams, ModelsListResult, NoParams,
    ShutdownResult, StatusResult,
};
use crate::usage::{UsageSummaryParams, UsageSummaryResult};
use crate::webhook::{WebhookDeliveriesParams, WebhookDeliveriesResult, WebhookListResult};

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

/// A method bound to its types: what its params decode into and what its result encodes
/// from. One marker type per method in [`call`]; the daemon decodes params into
/// `C::Params` once, before the handler runs, and `zeroclaw schema` publishes the same two
/// types, so the document cannot drift from what the daemon accepts.
pub trait Call {
    /// The method this marker names.
    const METHOD: Method;
    /// The params (camelCase with snake_case aliases; an absent params is `{}`).
    type Params: DeserializeOwned + Serialize + JsonSchema;
    /// The result.
    type Result: DeserializeOwned + Serialize + JsonSchema;
}

/// How the daemon runs a method and where it serves it, written in the method's row:
/// whether its handler waits ([`WAITS`]) or answers without waiting ([`NOW`], and
/// [`IN_PLACE`]: the connection loop runs it in place, in order, instead of in a task),
/// whether it addresses one session (its requests keep their order per session,
/// [`Runs::session`]) and whether it is served on the local endpoint only
/// ([`Runs::local`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Runs {
    waits: bool,
    in_place: bool,
    session: bool,
    local: bool,
}

/// A handler that waits (an `async` handler, run in a task of its own).
pub const WAITS: Runs = Runs {
    waits: true,
    in_place: false,
    session: false,
    local: false,
};
/// A handler that answers without waiting (a plain function), run in a task like a
/// waiting one.
pub const NOW: Runs = Runs {
    waits: false,
    ..WAITS
};
/// A handler that answers from memory without waiting on anything, so the connection
/// loop runs it in place, in order.
pub const IN_PLACE: Runs = Runs {
    in_place: true,
    ..NOW
};

impl Runs {
    /// The method addresses one session (the `session/*` calls): a connection's requests
    /// for one session take effect in their receive order (SPEC §14 "Order").
    pub const fn session(self) -> Runs {
        Runs {
            session: true,
            ..self
        }
    }

    /// Served on the local endpoint only; refused over WebSocket with -32012 (SPEC §8.2,
    /// §20).
    pub const fn local(self) -> Runs {
        Runs {
            local: true,
            ..self
        }
    }
}

macro_rules! methods {
    ($( $(#[$doc:meta])* $var:ident = $name:literal => $req:expr,
        params $params:ty, result $result:ty, runs $runs:expr; )+) => {
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

            /// How the daemon runs it and where it is served: its row's [`Runs`].
            pub const fn runs(self) -> Runs {
                match self { $( Method::$var => $runs ),+ }
            }

            /// The names of this method's params and result types, as the table writes
            /// them (also their `$defs` names in `zeroclaw schema`).
            pub const fn type_names(self) -> (&'static str, &'static str) {
                match self {
                    $( Method::$var => (stringify!($params), stringify!($result)) ),+
                }
            }

            /// The JSON Schemas of this method's params and result, from its [`Call`] types.
            pub fn schemas(self, g: &mut SchemaGenerator) -> (Schema, Schema) {
                match self {
                    $( Method::$var => (g.subschema_for::<$params>(), g.subschema_for::<$result>()) ),+
                }
            }
        }

        /// One marker type per [`Method`], binding it to its params and result types.
        pub mod call {
            use super::*;
            $(
                $(#[$doc])*
                #[derive(Debug, Clone, Copy)]
                pub enum $var {}

                impl Call for $var {
                    const METHOD: Method = Method::$var;
                    type Params = $params;
                    type Result = $result;
                }
            )+
        }
    };
}

const fn grant(resource: &'static str, verb: &'static str) -> Requirement {
    Requirement::Grant { resource, verb }
}

methods! {
    /// The handshake; must be the first call.
    Initialize = "initialize" => Requirement::Open,
        params InitializeParams, result InitializeResult, runs WAITS;
    Status = "status" => grant("system", "read"),
        params NoParams, result StatusResult, runs IN_PLACE;
    ConfigGet = "config/get" => grant("config", "read"),
        params ConfigGetParams, result ConfigGetResult, runs IN_PLACE;
    ConfigSet = "config/set" => grant("config", "update"),
        params ConfigSetParams, result ConfigSetResult, runs WAITS;
    ConfigSetMany = "config/set-many" => grant("config", "update"),
        params ConfigSetManyParams, result ConfigSetManyResult, runs WAITS;
    ConfigDelete = "config/delete" => grant("config", "delete"),
        params ConfigDeleteParams, result ConfigDeleteResult, runs WAITS;
    /// SPEC §6: the configuration's JSON Schema, for settings forms.
    ConfigSchema = "config/schema" => grant("config", "read"),
        params NoParams, result ConfigSchemaResult, runs IN_PLACE;
    SessionNew = "session/new" => grant("sessions", "create"),
        params SessionNewParams, result SessionNewResult, runs WAITS.session();
    SessionPrompt = "session/prompt" => grant("sessions", "execute"),
        params SessionPromptParams, result TurnResult, runs WAITS.session();
    SessionCancel = "session/cancel" => grant("sessions", "update"),
        params SessionRef, result CancelResult, runs NOW.session();
    SessionApprove = "session/approve" => grant("sessions", "update"),
        params ApproveParams, result ApproveResult, runs NOW.session();
    SessionClose = "session/close" => grant("sessions", "update"),
        params SessionRef, result CloseResult, runs WAITS.session();
    SessionKill = "session/kill" => grant("sessions", "delete"),
        params SessionRef, result KillResult, runs WAITS.session();
    SessionDelete = "session/delete" => grant("sessions", "delete"),
        params SessionRef, result DeleteResult, runs WAITS.session();
    SessionList = "session/list" => grant("sessions", "read"),
        params ListParams, result ListResult, runs WAITS.session();
    SessionMessages = "session/messages" => grant("sessions", "read"),
        params MessagesParams, result MessagesResult, runs WAITS.session();
    SessionSubscribe = "session/subscribe" => grant("sessions", "read"),
        params SubscribeParams, result SubscribeResult, runs WAITS.session();
    SessionUnsubscribe = "session/unsubscribe" => grant("sessions", "read"),
        params SessionRef, result UnsubscribeResult, runs NOW.session();
    SessionStatus = "session/status" => grant("sessions", "read"),
        params SessionRef, result SessionStatusResult, runs NOW.session();
    SessionConfigure = "session/configure" => grant("sessions", "update"),
        params ConfigureParams, result ConfigureResult, runs WAITS.session();
    /// SPEC §18: back to just before a turn.
    SessionRewind = "session/rewind" => grant("sessions", "update"),
        params RewindParams, result RewindResult, runs WAITS.session();
    /// SPEC §18: a new session from another's history.
    SessionFork = "session/fork" => grant("sessions", "create"),
        params ForkParams, result ForkResult, runs WAITS.session();
    SessionSetTitle = "session/set_title" => grant("sessions", "update"),
        params SetTitleParams, result SetTitleResult, runs WAITS.session();
    SessionCompact = "session/compact" => grant("sessions", "execute"),
        params CompactParams, result CompactResult, runs WAITS.session();
    /// SPEC §22: the files a turn (or the whole session) changed.
    SessionDiff = "session/diff" => grant("sessions", "read"),
        params DiffParams, result DiffResult, runs WAITS.session();
    ModelsList = "models/list" => grant("system", "read"),
        params ModelsListParams, result ModelsListResult, runs WAITS;
    /// SPEC §26: the skills of the user and of a directory's repository.
    SkillsList = "skills/list" => grant("sessions", "read"),
        params SkillsListParams, result SkillsListResult, runs WAITS;
    /// SPEC §26: a background process's kept output (the dashboard's view of it).
    SessionShellOutput = "session/shell_output" => grant("sessions", "read"),
        params ShellOutputParams, result ShellOutputResult, runs NOW.session();
    FileAttach = "file/attach" => grant("files", "create"),
        params AttachParams, result AttachResult, runs WAITS;
    FileUploadBegin = "file/upload/begin" => grant("files", "create"),
        params UploadBeginParams, result UploadBeginResult, runs WAITS.local();
    FileUploadChunk = "file/upload/chunk" => grant("files", "create"),
        params UploadChunkParams, result UploadChunkResult, runs NOW.local();
    FileUploadCommit = "file/upload/commit" => grant("files", "create"),
        params UploadCommitParams, result StoredFile, runs WAITS.local();
    /// SPEC §20: starts the gateway on 127.0.0.1 (local only).
    GatewayStart = "gateway/start" => grant("system", "read"),
        params NoParams, result GatewayInfo, runs NOW.local();
    /// SPEC §20: a one-time code for the web dashboard (local only).
    DashboardLogin = "dashboard/login" => grant("system", "read"),
        params NoParams, result DashboardLoginResult, runs NOW.local();
    /// SPEC §24.1: a schedule that runs a prompt as its creator.
    ScheduleCreate = "schedule/create" => grant("schedules", "create"),
        params ScheduleFields, result ScheduleCreated, runs WAITS;
    /// SPEC §24.1: the caller's schedules (every one for an admin).
    ScheduleList = "schedule/list" => grant("schedules", "read"),
        params NoParams, result ScheduleListResult, runs WAITS;
    /// SPEC §24.1: changes a schedule's fields.
    ScheduleUpdate = "schedule/update" => grant("schedules", "update"),
        params ScheduleUpdateParams, result Schedule, runs WAITS;
    /// SPEC §24.1: deletes a schedule and its runs.
    ScheduleDelete = "schedule/delete" => grant("schedules", "delete"),
        params ScheduleIdParams, result ScheduleDeleted, runs WAITS;
    /// SPEC §24.1: runs a schedule now.
    ScheduleRun = "schedule/run" => grant("schedules", "update"),
        params ScheduleIdParams, result ScheduleRunStarted, runs WAITS;
    /// SPEC §24.1: a schedule's runs, newest first.
    ScheduleRuns = "schedule/runs" => grant("schedules", "read"),
        params ScheduleRunsParams, result ScheduleRunsResult, runs WAITS;
    /// SPEC §24.3: a browser's Web Push subscription, per principal.
    PushSubscribe = "push/subscribe" => grant("system", "read"),
        params PushSubscribeParams, result PushSubscribeResult, runs WAITS;
    PushUnsubscribe = "push/unsubscribe" => grant("system", "read"),
        params PushUnsubscribeParams, result PushUnsubscribeResult, runs WAITS;
    /// SPEC §24.3: the VAPID public key browsers subscribe with.
    PushKey = "push/key" => grant("system", "read"),
        params NoParams, result PushKeyResult, runs WAITS;
    /// SPEC §24.2: tokens and cost per day, agent and principal (non-admins: their own).
    UsageSummary = "usage/summary" => grant("system", "read"),
        params UsageSummaryParams, result UsageSummaryResult, runs WAITS;
    /// SPEC §23.1: the configured webhooks.
    WebhookList = "webhook/list" => grant("system", "read"),
        params NoParams, result WebhookListResult, runs NOW;
    /// SPEC §23.1: a webhook's recent deliveries.
    WebhookDeliveries = "webhook/deliveries" => grant("system", "read"),
        params WebhookDeliveriesParams, result WebhookDeliveriesResult, runs WAITS;
    /// Graceful stop; admin principals only.
    DaemonShutdown = "daemon/shutdown" => Requirement::Admin,
        params NoParams, result ShutdownResult, runs NOW;
}

impl Method {
    /// Served on the local endpoint only; refused over WebSocket with -32012 (SPEC §8.2,
    /// §20).
    pub const fn local_only(self) -> bool {
        self.runs().local
    }

    /// Answers from memory without waiting on anything, so the connection loop may run it
    /// in place, in order, instead of spawning a task for it.
    pub const fn answers_in_place(self) -> bool {
        self.runs().in_place
    }

    /// One of the calls that address a session, which take effect in the session's order.
    pub const fn addresses_session(self) -> bool {
        self.runs().session
    }

    /// Its handler waits (is `async`); `false`: it answers without waiting.
    pub const fn waits(self) -> bool {
        self.runs().waits
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
        assert_eq!(Method::ALL.len(), 47);
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
        assert_eq!(g(Method::SkillsList), "sessions:read");
        assert_eq!(g(Method::SessionPrompt), "sessions:execute");
        assert_eq!(g(Method::SessionStatus), "sessions:read");
        assert_eq!(g(Method::SessionConfigure), "sessions:update");
        assert_eq!(g(Method::SessionRewind), "sessions:update");
        assert_eq!(g(Method::SessionSetTitle), "sessions:update");
        assert_eq!(g(Method::SessionFork), "sessions:create");
        assert_eq!(g(Method::SessionCompact), "sessions:execute");
        assert_eq!(g(Method::SessionDiff), "sessions:read");
        assert_eq!(g(Method::ConfigDelete), "config:delete");
        assert_eq!(g(Method::ConfigSchema), "config:read");
        assert_eq!(g(Method::FileUploadChunk), "files:create");
        let local: Vec<_> = Method::ALL.iter().filter(|m| m.local_only()).collect();
        assert_eq!(local.len(), 5);
        assert!(local.iter().all(|m| m.name().starts_with("file/upload/")
            || matches!(m, Method::GatewayStart | Method::DashboardLogin)));
        assert_eq!(g(Method::GatewayStart), "system:read");
        assert_eq!(g(Method::DashboardLogin), "system:read");
        assert!(Method::Status.answers_in_place() && Method::ConfigGet.answers_in_place());
        assert!(!Method::SessionPrompt.answers_in_place());
    }

    #[test]
    fn the_facts_of_each_row_hold_together() {
        for m in Method::ALL {
            // In place means it never waits.
            assert!(!(m.answers_in_place() && m.waits()), "{m}");
            // The session/* calls, and only they, keep a session's order.
            assert_eq!(
                m.addresses_session(),
                m.name().starts_with("session/"),
                "{m}"
            );
        }
        let in_place: Vec<_> = Method::ALL
            .iter()
            .filter(|m| m.answers_in_place())
            .collect();
        assert_eq!(
            in_place,
            [&Method::Status, &Method::ConfigGet, &Method::ConfigSchema]
        );
        assert!(Method::SessionPrompt.waits() && !Method::SessionCancel.waits());
    }
}
