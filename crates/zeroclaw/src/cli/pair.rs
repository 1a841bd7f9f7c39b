//! `zeroclaw pair --user NAME` and `zeroclaw unpair (--user NAME | --token TOKEN)`:
//! manage WebSocket pairing tokens in the data dir. The daemon notices changes on the
//! next call of each connection; it does not need to be running.

use std::path::PathBuf;

use zeroclaw_daemon::pairing;
use zeroclaw_ipc::Dirs;

fn data_dir(config_dir: Option<PathBuf>) -> Result<PathBuf, String> {
    Ok(Dirs::resolve(config_dir.as_deref())
        .map_err(|e| e.to_string())?
        .data_dir)
}

pub fn pair(config_dir: Option<PathBuf>, user: &str, json: bool) -> Result<(), String> {
    let dirs = Dirs::resolve(config_dir.as_deref()).map_err(|e| e.to_string())?;
    let known = std::fs::read_to_string(dirs.config_file())
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|t| t.get("users").and_then(|u| u.get(user)).map(|_| ()))
        .is_some();
    if !known {
        eprintln!(
            "note: users.{user} is not in the configuration yet; the token is refused until it \
             is (add [users.{user}] with permission_profiles)"
        );
    }
    let token = pairing::pair(&dirs.data_dir, user)?;
    if json {
        println!("{}", serde_json::json!({"user": user, "token": token}));
        return Ok(());
    }
    println!("paired user {user}; this token is shown once (send it as authToken):");
    println!("{token}");
    Ok(())
}

pub fn unpair(
    config_dir: Option<PathBuf>,
    user: Option<String>,
    token: Option<String>,
) -> Result<(), String> {
    let dir = data_dir(config_dir)?;
    match (user, token) {
        (Some(user), None) => {
            let n = pairing::unpair_user(&dir, &user)?;
            println!("revoked {n} token(s) of user {user}");
            Ok(())
        }
        (None, Some(token)) => match pairing::unpair_token(&dir, &token)? {
            true => {
                println!("token revoked");
                Ok(())
            }
            false => Err("no such token".into()),
        },
        _ => Err("unpair needs exactly one of --user NAME or --token TOKEN".into()),
    }
}
