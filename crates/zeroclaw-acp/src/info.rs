//! Session titles for the editor (SPEC §25): `session_info_update {title, updatedAt}` when
//! the title the daemon holds changes. A title set by any client (`session/set_title`,
//! `/title` in `zeroclaw chat`) comes as the daemon's `session_info` update and is told at
//! once ([`told`]); a title taken from the first prompt has no update, so the bridge also
//! reads the title at the end of a turn of a followed session while it knows none, after a
//! rewind (which may take that prompt back), and when a session is loaded or resumed. A prompt of the editor that is `/title TEXT` sets the title itself
//! (daemon `session/set_title`) and is answered at once, without a turn.

use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    CLIENT_METHOD_NAMES, SessionInfoUpdate, SessionNotification, SessionUpdate,
};
use zeroclaw_client::Mode;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::history::SetTitleParams;
use zeroclaw_client::protocol::session::ListParams;
use zeroclaw_rpc::ErrorObject;

use super::bridge::Bridge;
use super::opening::rfc3339;

/// The title of a `/title TEXT` prompt, if the prompt is one.
pub fn title_command(text: &str) -> Option<&str> {
    let rest = text.trim().strip_prefix("/title")?;
    rest.starts_with(char::is_whitespace)
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

/// The session's title and last activity as the daemon lists them.
async fn listed(bridge: &Arc<Bridge>, session_id: &str) -> Option<(Option<String>, i64)> {
    let params = ListParams {
        mode: Some(Mode::Acp),
        ..Default::default()
    };
    let list = bridge.call::<call::SessionList>(&params).await.ok()?;
    let entry = list
        .sessions
        .into_iter()
        .find(|s| s.session_id == session_id)?;
    Some((entry.title, entry.last_activity))
}

/// Tells the editor the session's title when it differs from the one it was last told.
pub async fn refresh(bridge: &Arc<Bridge>, session_id: &str) {
    let Some((Some(title), last_activity)) = listed(bridge, session_id).await else {
        return;
    };
    {
        let mut sessions = bridge.sessions();
        let Some(session) = sessions.get_mut(session_id) else {
            return;
        };
        if session.title.as_deref() == Some(title.as_str()) {
            return;
        }
        session.title = Some(title.clone());
    }
    send(bridge, session_id, title, last_activity).await;
}

/// The daemon's `session_info {title, updatedAt}`: told unless the editor has it already.
pub async fn told(bridge: &Bridge, session_id: &str, title: String, updated_at: i64) {
    {
        let mut sessions = bridge.sessions();
        if let Some(session) = sessions.get_mut(session_id) {
            if session.title.as_deref() == Some(title.as_str()) {
                return;
            }
            session.title = Some(title.clone());
        }
    }
    send(bridge, session_id, title, updated_at).await;
}

async fn send(bridge: &Bridge, session_id: &str, title: String, last_activity: i64) {
    let update = SessionInfoUpdate::new()
        .title(title)
        .updated_at(rfc3339(last_activity));
    let note = SessionNotification::new(
        session_id.to_owned(),
        SessionUpdate::SessionInfoUpdate(update),
    );
    bridge
        .editor
        .notify(CLIENT_METHOD_NAMES.session_update, &note)
        .await;
}

/// `/title TEXT` from the editor: daemon `session/set_title`, then the update.
pub async fn set_title(
    bridge: &Arc<Bridge>,
    session_id: &str,
    title: &str,
) -> Result<(), ErrorObject> {
    let params = SetTitleParams {
        session_id: session_id.to_owned().into(),
        mode: None,
        title: title.to_owned(),
    };
    bridge.call::<call::SessionSetTitle>(&params).await?;
    refresh(bridge, session_id).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_commands() {
        assert_eq!(title_command("/title Fix the build"), Some("Fix the build"));
        assert_eq!(title_command("  /title   x  "), Some("x"));
        assert_eq!(title_command("/title"), None);
        assert_eq!(title_command("/titles x"), None);
        assert_eq!(title_command("please /title x"), None);
    }
}
