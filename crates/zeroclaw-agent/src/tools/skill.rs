//! Skills (SPEC §26): directories holding a `SKILL.md` (YAML front matter `name` and
//! `description`, then the body), found in the user's `~/.zeroclaw/skills/` and the
//! repository's `.zeroclaw/skills/`, `.claude/skills/` and `.agents/skills/`. This file
//! owns finding them ([`discover`], blocking), the system prompt's list of them
//! ([`prompt_section`]) and the read-only `skill` tool ([`run`]): a skill's body and the
//! list of its other files, or one of those files (`file`). The skill tool reads them
//! itself because a skill may live outside the session's directory, where the file tools
//! do not reach; it reads nothing outside the skill's own directory (no `..`, no absolute
//! path, no symbolic link leading out).
//!
//! Reads are bounded: only regular files are read, opened non-blocking, never more than
//! [`MAX_SKILL_MD`] bytes of one ([`MAX_FRONT_MATTER`] to list it); at most [`MAX_PER_DIR`] skills a directory and
//! [`MAX_OTHER_FILES`] other files listed a skill.

use std::fs::OpenOptions;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The most bytes of one `SKILL.md` read.
pub const MAX_SKILL_MD: usize = 64 * 1024;
/// The most bytes of a `SKILL.md` read to find its front matter (every turn, every skill).
pub const MAX_FRONT_MATTER: usize = 8 * 1024;
/// The most skills taken from one skills directory.
pub const MAX_PER_DIR: usize = 100;
/// The most other files of a skill the `skill` tool lists.
pub const MAX_OTHER_FILES: usize = 200;

/// One skill found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's directory (holding `SKILL.md`).
    pub dir: PathBuf,
    /// Where it was found: `user`, `.zeroclaw`, `.claude` or `.agents`.
    pub source: &'static str,
}

/// The skills directories for a session in `cwd`, in order, with their source names:
/// `user_dir/skills` (when the session has a user dir), then `<repo>/.zeroclaw/skills`,
/// `.claude/skills`, `.agents/skills` (repo = the nearest ancestor of `cwd` holding `.git`,
/// else `cwd`).
pub fn skill_dirs(user_dir: Option<&Path>, cwd: &Path) -> Vec<(PathBuf, &'static str)> {
    let root = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd);
    let user = user_dir.map(|d| (d.join("skills"), "user"));
    user.into_iter()
        .chain([
            (root.join(".zeroclaw/skills"), ".zeroclaw"),
            (root.join(".claude/skills"), ".claude"),
            (root.join(".agents/skills"), ".agents"),
        ])
        .collect()
}

/// Every skill of the directories of [`skill_dirs`]; the first of a name wins.
pub fn discover(user_dir: Option<&Path>, cwd: &Path) -> Vec<Skill> {
    discover_in(skill_dirs(user_dir, cwd))
}

/// The user's skills only (`user_dir/skills`).
pub fn discover_user(user_dir: &Path) -> Vec<Skill> {
    discover_in(vec![(user_dir.join("skills"), "user")])
}

fn discover_in(dirs: Vec<(PathBuf, &'static str)>) -> Vec<Skill> {
    let mut found: Vec<Skill> = Vec::new();
    for (dir, source) in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .take(MAX_PER_DIR * 4)
            .collect();
        dirs.sort();
        for d in dirs.into_iter().take(MAX_PER_DIR) {
            let Some(text) = read_bounded(&d.join("SKILL.md"), MAX_FRONT_MATTER) else {
                continue;
            };
            let (meta, _) = split_front_matter(&text);
            let dir_name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = meta_value(meta, "name").unwrap_or(dir_name);
            if name.is_empty() || found.iter().any(|s| s.name == name) {
                continue;
            }
            found.push(Skill {
                name,
                description: meta_value(meta, "description").unwrap_or_default(),
                dir: d,
                source,
            });
        }
    }
    found
}

/// The system prompt's list of skills: names and descriptions only (empty when none).
pub fn prompt_section(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "# Skills\n\nCall the `skill` tool with a skill's name to read its instructions \
         before doing what it describes.\n",
    );
    for k in skills {
        s.push_str(&format!("\n- {}: {}", k.name, k.description));
    }
    s
}

/// The `skill` tool: the body of the skill `args.name` and the list of its other files, or
/// the file `args.file` of it.
pub async fn run(skills: &[Skill], args: &Value) -> String {
    let Some(name) = args.get("name").and_then(Value::as_str) else {
        return "Error: skill needs a string argument `name`".to_string();
    };
    let Some(skill) = skills.iter().find(|s| s.name == name).cloned() else {
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        return format!(
            "Error: no skill `{name}`. Skills: {}.",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        );
    };
    let file = match args.get("file") {
        None | Some(Value::Null) => None,
        Some(Value::String(f)) => Some(f.clone()),
        Some(_) => return "Error: `file` must be a string".to_string(),
    };
    tokio::task::spawn_blocking(move || match file {
        Some(file) => read_skill_file(&skill, &file),
        None => describe(&skill),
    })
    .await
    .unwrap_or_else(|e| format!("Error: the skill could not be read: {e}"))
}

fn describe(skill: &Skill) -> String {
    let Some(text) = read_bounded(&skill.dir.join("SKILL.md"), MAX_SKILL_MD) else {
        return format!(
            "Error: {} could not be read",
            skill.dir.join("SKILL.md").display()
        );
    };
    let (_, body) = split_front_matter(&text);
    let mut others = Vec::new();
    list_files(&skill.dir, &skill.dir, 0, &mut others);
    others.sort();
    let mut out = format!(
        "# Skill {} (in {})\n\n{}\n",
        skill.name,
        skill.dir.display(),
        body.trim()
    );
    if others.is_empty() {
        out.push_str("\nThe skill has no other files.");
    } else {
        out.push_str(&format!(
            "\nOther files of the skill (under {}; read one with this tool's `file`):",
            skill.dir.display()
        ));
        for f in &others {
            out.push_str(&format!("\n- {f}"));
        }
        if others.len() >= MAX_OTHER_FILES {
            out.push_str(&format!("\n(only the first {MAX_OTHER_FILES} are listed)"));
        }
    }
    out
}

/// The file `rel` of `skill` (at most [`MAX_SKILL_MD`] bytes): a relative path without
/// `..` whose real location is inside the skill's directory.
fn read_skill_file(skill: &Skill, rel: &str) -> String {
    let path = Path::new(rel);
    let plain = path
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if rel.is_empty() || !plain {
        return format!("Error: `file` must be a path inside the skill, as listed (got `{rel}`)");
    }
    let inside = match (
        skill.dir.canonicalize(),
        skill.dir.join(path).canonicalize(),
    ) {
        (Ok(root), Ok(real)) => real.starts_with(&root).then_some(real),
        _ => None,
    };
    let Some(real) = inside else {
        return format!("Error: the skill `{}` has no file `{rel}`", skill.name);
    };
    match read_bounded(&real, MAX_SKILL_MD) {
        Some(text) => format!("# {rel} (skill {})\n\n{text}", skill.name),
        None => format!(
            "Error: `{rel}` of the skill `{}` is not a readable file",
            skill.name
        ),
    }
}

/// The files under `dir` (relative to `root`, 4 levels deep at most), but `SKILL.md`.
fn list_files(root: &Path, dir: &Path, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        if out.len() >= MAX_OTHER_FILES {
            return;
        }
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            if depth < 4 {
                list_files(root, &path, depth + 1, out);
            }
        } else if let Ok(rel) = path.strip_prefix(root)
            && rel != Path::new("SKILL.md")
        {
            out.push(rel.display().to_string());
        }
    }
}

/// Splits `---\n…\n---\n` front matter from the body; no front matter → ("", all).
fn split_front_matter(text: &str) -> (&str, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return ("", text);
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (&rest[..at], &rest[at + line.len()..]);
        }
        at += line.len();
    }
    ("", text)
}

/// A top-level `key: value` of the front matter, unquoted.
fn meta_value(meta: &str, key: &str) -> Option<String> {
    meta.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != key || l.starts_with([' ', '\t']) {
            return None;
        }
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(v);
        Some(v.to_owned())
    })
}

/// At most `limit` bytes of `path` as text, if it is a regular file.
fn read_bounded(path: &Path, limit: usize) -> Option<String> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(limit as u64).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_skills_files_are_read_and_nothing_outside_it() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("pdf");
        std::fs::create_dir_all(dir.join("scripts")).expect("mkdir");
        std::fs::write(dir.join("SKILL.md"), "---\nname: pdf\n---\nUse fill.py\n").expect("write");
        std::fs::write(dir.join("scripts/fill.py"), "print('filled')\n").expect("write");
        std::fs::write(root.path().join("secret.txt"), "secret").expect("write");
        std::os::unix::fs::symlink(root.path().join("secret.txt"), dir.join("link.txt"))
            .expect("symlink");
        let skill = Skill {
            name: "pdf".into(),
            description: String::new(),
            dir: dir.clone(),
            source: "user",
        };
        let listed = describe(&skill);
        assert!(listed.contains("scripts/fill.py"), "{listed}");
        let read = read_skill_file(&skill, "scripts/fill.py");
        assert!(read.contains("print('filled')"), "{read}");
        for bad in [
            "../secret.txt",
            "link.txt",
            "/etc/passwd",
            "",
            "scripts/../../secret.txt",
        ] {
            let out = read_skill_file(&skill, bad);
            assert!(
                out.starts_with("Error:") && !out.contains("secret\n") && !out.ends_with("secret"),
                "{bad}: {out}"
            );
        }
    }

    #[test]
    fn front_matter_and_body() {
        let (meta, body) =
            split_front_matter("---\nname: \"pdf\"\ndescription: Fill PDF forms\n---\nBody\n");
        assert_eq!(meta_value(meta, "name").as_deref(), Some("pdf"));
        assert_eq!(
            meta_value(meta, "description").as_deref(),
            Some("Fill PDF forms")
        );
        assert_eq!(body, "Body\n");
        assert_eq!(
            split_front_matter("no front matter"),
            ("", "no front matter")
        );
    }
}
