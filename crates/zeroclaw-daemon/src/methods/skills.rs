//! `skills/list {cwd?}` (SPEC §26): the skills a session in `cwd` would have (the user's in
//! `<config dir>/skills`, then its repository's `.zeroclaw/skills`, `.claude/skills` and
//! `.agents/skills`), each with the directory it was found in. Without `cwd`, the user's
//! only. Naming a `cwd` reads outside any workspace, so it is for admin principals
//! (-32012 otherwise); a `cwd` that is not an absolute existing directory gets -32602.

use serde_json::json;
use zeroclaw_agent::tools::skill;
use zeroclaw_protocol::skills::{SkillEntry, SkillsListParams, SkillsListResult};
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::state::Daemon;

/// `skills/list {cwd?}`.
pub(crate) async fn list(
    daemon: &Daemon,
    principal: &Principal,
    p: SkillsListParams,
) -> Result<SkillsListResult, ErrorObject> {
    // The skills in the config dir are the operator's own (as in its sessions' prompts).
    let user_dir =
        (principal.id == zeroclaw_config::policy::OPERATOR).then(|| daemon.dirs.config_dir.clone());
    let cwd = match p.cwd {
        None => None,
        Some(cwd) => {
            if !principal.admin {
                return Err(ErrorObject::forbidden(format!(
                    "principal {} may not list the skills of a cwd (admin only)",
                    principal.id
                ))
                .with_data(json!({"resource": "cwd"})));
            }
            let path = std::path::PathBuf::from(&cwd);
            if !path.is_absolute() || !path.is_dir() {
                return Err(ErrorObject::invalid_params(format!(
                    "cwd {cwd:?} is not an absolute existing directory"
                )));
            }
            Some(path)
        }
    };
    let found = tokio::task::spawn_blocking(move || match cwd {
        Some(cwd) => skill::discover(user_dir.as_deref(), &cwd),
        None => user_dir
            .map(|d| skill::discover_user(&d))
            .unwrap_or_default(),
    })
    .await
    .map_err(|e| ErrorObject::internal(format!("skills/list: {e}")))?;
    Ok(SkillsListResult {
        skills: found
            .into_iter()
            .map(|s| SkillEntry {
                name: s.name,
                description: s.description,
                path: s.dir.display().to_string(),
                source: s.source.to_owned(),
            })
            .collect(),
    })
}
