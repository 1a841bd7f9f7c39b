//! Opening config files: first start, hand-written files, errors naming file and property.

use std::path::{Path, PathBuf};

use zeroclaw_config::ConfigStore;

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cfg").join("config.toml");
    (dir, path)
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn first_start_writes_default_file() {
    let (_d, path) = tmp();
    let store = ConfigStore::open(&path).unwrap();
    assert!(path.exists());
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    let c = store.current();
    assert_eq!(c.agents["default"].provider, "echo");
    assert_eq!(store.config_dir(), path.parent().unwrap());
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, zeroclaw_config::schema::DEFAULT_CONFIG_TOML);
    // Reopen reads it back unchanged.
    let again = ConfigStore::open(&path).unwrap();
    assert_eq!(*again.current(), *c);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn hand_written_file_without_agents_has_none() {
    let (_d, path) = tmp();
    write_file(&path, "[security]\ntrust_daemon_uid = false\n");
    let c = ConfigStore::open(&path).unwrap().current();
    assert!(c.agents.is_empty() && c.providers.is_empty());
    assert!(!c.security.trust_daemon_uid);
    assert_eq!(c.limits.connections_total, 1024);
}

#[test]
fn open_errors_name_file_and_property() {
    let (_d, path) = tmp();
    write_file(&path, "[wss]\nport = 1\nsurprise = true\n");
    let e = ConfigStore::open(&path).err().unwrap().to_string();
    assert!(
        e.contains(path.to_str().unwrap()) && e.contains("wss.surprise: unknown key"),
        "{e}"
    );

    write_file(&path, "[agents.a]\nprovider = \"missing\"\n");
    let e = ConfigStore::open(&path).err().unwrap().to_string();
    assert!(
        e.contains("agents.a.provider: unknown provider \"missing\""),
        "{e}"
    );

    write_file(&path, "[users.u]\npermission_profiles = [\"ghost\"]\n");
    let e = ConfigStore::open(&path).err().unwrap().to_string();
    assert!(
        e.contains("users.u.permission_profiles: unknown permission profile \"ghost\""),
        "{e}"
    );

    write_file(&path, "[wss\n");
    let e = ConfigStore::open(&path).err().unwrap().to_string();
    assert!(e.contains("invalid TOML"), "{e}");
}

#[test]
fn agent_mcp_servers_are_read_and_checked() {
    let (_d, path) = tmp();
    write_file(
        &path,
        "[providers.echo]\nkind = \"echo\"\n[agents.a]\nprovider = \"echo\"\n\
         [agents.a.mcp_servers.files]\ncommand = \"python3\"\nargs = [\"srv.py\"]\n\
         env = { MODE = \"test\" }\n",
    );
    let c = ConfigStore::open(&path).unwrap().current();
    let m = &c.agents["a"].mcp_servers["files"];
    assert_eq!(m.command, "python3");
    assert_eq!(m.args, vec!["srv.py".to_string()]);
    assert_eq!(m.env["MODE"], "test");

    write_file(
        &path,
        "[providers.echo]\nkind = \"echo\"\n[agents.a]\nprovider = \"echo\"\n\
         [agents.a.mcp_servers.x]\ncommand = \"p\"\nenv = { N = 1 }\n",
    );
    let e = ConfigStore::open(&path).err().unwrap().to_string();
    assert!(e.contains("agents.a.mcp_servers.x.env.N"), "{e}");

    write_file(
        &path,
        "[providers.echo]\nkind = \"echo\"\n[agents.a]\nprovider = \"echo\"\n\
         [agents.a.mcp_servers.\"a__b\"]\ncommand = \"\"\n",
    );
    let e = ConfigStore::open(&path).err().unwrap().to_string();
    assert!(
        e.contains("SERVER__TOOL") || e.contains("command is required"),
        "{e}"
    );
}
