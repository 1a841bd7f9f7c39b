//! The front door every call passes: the handshake gate, the principal (re-resolved from
//! the current policy on every call), the transport the method may be called on and the
//! grant it needs; then the one handler of that [`Method`] in [`crate::methods`].
//!
//! The method table itself (names, grants, params and result types, and how each runs:
//! waits or not, in place, per-session order, local-only) is the vocabulary's ([`zeroclaw_protocol::Method`],
//! [`zeroclaw_protocol::Call`]); this is the only place that maps a method to its handler,
//! and the only place params are decoded and results encoded.

use std::sync::Arc;

use serde_json::Value;
use zeroclaw_protocol::{Call, Method};
use zeroclaw_rpc::ErrorObject;
use zeroclaw_rpc::message::{push_response_line, push_result_line_with};

use crate::answering::Answering;
use crate::auth::{self, Principal};
use crate::caller::ConnectionContext;
use crate::methods::{
    config, config_schema, configure, diff, file, gateway, history, initialize, models, push,
    schedule, session, skills, status, usage, webhook,
};
use crate::params::{self, Params};
use crate::state::Daemon;
use crate::transport::TransportKind;

/// Runs one call of `method` from `conn` through the front door to its handler: the
/// params are decoded into the method's [`Call::Params`] once, here, and the handler's
/// [`Call::Result`] encoded here. `answering` is the request's place in its session's order
/// and its after-answer hooks: the handlers of queued jobs (prompt, rewind, compact) admit
/// it once the job is queued, a subscription's replay waits on it for the answer.
pub(crate) async fn call(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: Method,
    params: Params,
    answering: &Answering,
) -> Result<Value, ErrorObject> {
    use zeroclaw_protocol::call as c;
    if method == Method::Initialize {
        initialize::check_first(conn)?;
        return run::<c::Initialize, _>(params, |q| initialize::initialize(daemon, conn, q)).await;
    }
    let principal = admit(daemon, conn, method)?;
    let p = &principal;
    match method {
        Method::Initialize => Err(ErrorObject::invalid_request("already initialized")),
        Method::Status => now::<c::Status>(params, |q| status::status(daemon, p, q)),
        Method::DaemonShutdown => now::<c::DaemonShutdown>(params, status::shutdown),
        Method::GatewayStart => now::<c::GatewayStart>(params, |q| gateway::start(daemon, q)),
        Method::DashboardLogin => {
            now::<c::DashboardLogin>(params, |q| gateway::login(daemon, conn, q))
        }
        Method::ModelsList => run::<c::ModelsList, _>(params, |q| models::list(daemon, p, q)).await,
        Method::SkillsList => run::<c::SkillsList, _>(params, |q| skills::list(daemon, p, q)).await,
        Method::PushSubscribe => {
            run::<c::PushSubscribe, _>(params, |q| push::subscribe(daemon, p, q)).await
        }
        Method::PushUnsubscribe => {
            run::<c::PushUnsubscribe, _>(params, |q| push::unsubscribe(daemon, p, q)).await
        }
        Method::PushKey => run::<c::PushKey, _>(params, |q| push::key(daemon, q)).await,
        Method::UsageSummary => {
            run::<c::UsageSummary, _>(params, |q| usage::summary(daemon, p, q)).await
        }
        Method::ConfigGet => now::<c::ConfigGet>(params, |q| config::get(daemon, q)),
        Method::ConfigSchema => now::<c::ConfigSchema>(params, config_schema::schema),
        Method::ConfigSet => run::<c::ConfigSet, _>(params, |q| config::set(daemon, conn, q)).await,
        Method::ConfigSetMany => {
            run::<c::ConfigSetMany, _>(params, |q| config::set_many(daemon, conn, q)).await
        }
        Method::ConfigDelete => {
            run::<c::ConfigDelete, _>(params, |q| config::delete(daemon, conn, q)).await
        }
        Method::SessionNew => run::<c::SessionNew, _>(params, |q| session::new(daemon, p, q)).await,
        Method::SessionPrompt => {
            run::<c::SessionPrompt, _>(params, |q| session::prompt(daemon, conn, p, q, answering))
                .await
        }
        Method::SessionCancel => {
            now::<c::SessionCancel>(params, |q| session::cancel(daemon, conn, p, q))
        }
        Method::SessionApprove => {
            now::<c::SessionApprove>(params, |q| session::approve(daemon, conn, p, q))
        }
        Method::SessionClose => {
            run::<c::SessionClose, _>(params, |q| session::close(daemon, p, q)).await
        }
        Method::SessionKill => {
            run::<c::SessionKill, _>(params, |q| session::kill(daemon, p, q)).await
        }
        Method::SessionDelete => {
            run::<c::SessionDelete, _>(params, |q| session::delete(daemon, p, q)).await
        }
        Method::SessionSubscribe => {
            run::<c::SessionSubscribe, _>(params, |q| {
                session::subscribe(daemon, conn, p, q, answering)
            })
            .await
        }
        Method::SessionUnsubscribe => {
            now::<c::SessionUnsubscribe>(params, |q| session::unsubscribe(daemon, conn, p, q))
        }
        Method::SessionList => {
            run::<c::SessionList, _>(params, |q| session::list(daemon, p, q)).await
        }
        Method::SessionMessages => {
            run::<c::SessionMessages, _>(params, |q| session::messages(daemon, p, q)).await
        }
        Method::SessionStatus => {
            now::<c::SessionStatus>(params, |q| configure::status(daemon, p, q))
        }
        Method::SessionShellOutput => {
            now::<c::SessionShellOutput>(params, |q| configure::shell_output(daemon, p, q))
        }
        Method::SessionConfigure => {
            run::<c::SessionConfigure, _>(params, |q| configure::configure(daemon, p, q)).await
        }
        Method::SessionRewind => {
            run::<c::SessionRewind, _>(params, |q| history::rewind(daemon, conn, p, q, answering))
                .await
        }
        Method::SessionFork => {
            run::<c::SessionFork, _>(params, |q| history::fork(daemon, p, q)).await
        }
        Method::SessionSetTitle => {
            run::<c::SessionSetTitle, _>(params, |q| history::set_title(daemon, p, q)).await
        }
        Method::SessionCompact => {
            run::<c::SessionCompact, _>(params, |q| session::compact(daemon, conn, p, q, answering))
                .await
        }
        Method::SessionDiff => run::<c::SessionDiff, _>(params, |q| diff::diff(daemon, p, q)).await,
        Method::WebhookList => now::<c::WebhookList>(params, |q| webhook::list(daemon, q)),
        Method::WebhookDeliveries => {
            run::<c::WebhookDeliveries, _>(params, |q| webhook::deliveries(daemon, q)).await
        }
        Method::FileAttach => {
            run::<c::FileAttach, _>(params, |q| file::attach(daemon, conn, p, q)).await
        }
        Method::FileUploadBegin => {
            run::<c::FileUploadBegin, _>(params, |q| file::upload_begin(daemon, conn, p, q)).await
        }
        Method::FileUploadChunk => {
            now::<c::FileUploadChunk>(params, |q| file::upload_chunk(daemon, conn, q))
        }
        Method::FileUploadCommit => {
            run::<c::FileUploadCommit, _>(params, |q| file::upload_commit(daemon, conn, q)).await
        }
        // SPEC §24.1.
        Method::ScheduleCreate => {
            run::<c::ScheduleCreate, _>(params, |q| schedule::create(daemon, p, q)).await
        }
        Method::ScheduleList => {
            run::<c::ScheduleList, _>(params, |q| schedule::list(daemon, p, q)).await
        }
        Method::ScheduleUpdate => {
            run::<c::ScheduleUpdate, _>(params, |q| schedule::update(daemon, p, q)).await
        }
        Method::ScheduleDelete => {
            run::<c::ScheduleDelete, _>(params, |q| schedule::delete(daemon, p, q)).await
        }
        Method::ScheduleRun => {
            run::<c::ScheduleRun, _>(params, |q| schedule::run(daemon, p, q)).await
        }
        Method::ScheduleRuns => {
            run::<c::ScheduleRuns, _>(params, |q| schedule::runs(daemon, p, q)).await
        }
    }
}

/// An async handler of method `C`: its params decoded, its result encoded. Only for a
/// method whose row says its handler waits (checked when this compiles).
async fn run<C: Call, F>(
    params: Params,
    handler: impl FnOnce(C::Params) -> F,
) -> Result<Value, ErrorObject>
where
    F: Future<Output = Result<C::Result, ErrorObject>>,
{
    const {
        assert!(
            C::METHOD.waits(),
            "the method table says this handler answers now"
        )
    };
    let p = params::decode::<C::Params>(params)?;
    params::encode(&handler(p).await?)
}

/// A handler of method `C` that answers without waiting. Only for a method whose row says
/// so (checked when this compiles).
fn now<C: Call>(
    params: Params,
    handler: impl FnOnce(C::Params) -> Result<C::Result, ErrorObject>,
) -> Result<Value, ErrorObject> {
    const {
        assert!(
            !C::METHOD.waits(),
            "the method table says this handler waits"
        )
    };
    let p = params::decode::<C::Params>(params)?;
    params::encode(&handler(p)?)
}

/// The front door proper, for every method but `initialize`: the handshake is done, the
/// credential still stands for someone (under the policy in force now), the method is
/// served on this transport and the principal holds its grant.
pub(crate) fn admit(
    daemon: &Daemon,
    conn: &ConnectionContext,
    method: Method,
) -> Result<Principal, ErrorObject> {
    if !conn.is_initialized() {
        return Err(ErrorObject::not_initialized(
            "not initialized: first call must be initialize",
        ));
    }
    let principal = daemon.principal(&conn.presented())?;
    auth::check_transport(method, conn.peer.kind == TransportKind::Local)?;
    auth::authorize(&principal, method)?;
    #[cfg(feature = "test-hooks")]
    crate::test_hooks::maybe_panic(method.name());
    Ok(principal)
}

/// `status`, the call clients poll, after the same front door as [`call`], its answer
/// line serialized straight into `buf`.
pub(crate) fn status_into(
    daemon: &Daemon,
    conn: &ConnectionContext,
    id: &zeroclaw_rpc::Id,
    buf: &mut Vec<u8>,
) {
    let written = admit(daemon, conn, Method::Status).and_then(|principal| {
        push_result_line_with(buf, id, |buf| {
            status::write(daemon, &principal, buf);
            Ok(())
        })
        .map_err(|e| ErrorObject::internal(format!("status: {e}")))
    });
    if let Err(error) = written {
        push_response_line(buf, id, &Err(error));
    }
}
