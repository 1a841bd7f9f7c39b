//! The login page `zeroclaw dashboard` hands the browser (SPEC §17.2 "Login codes never
//! appear on a command line"): a small HTML file, readable by the user alone (0600, in a
//! 0700 directory), that sends the browser on to the login URL. The opener is given the
//! file's path, which carries nothing secret, so another user reading
//! `/proc/*/cmdline` learns no code; the code is in the file only.
//!
//! The directory is `<data dir>/dashboard` (the daemon's programs cannot read the data
//! dir), else `$XDG_RUNTIME_DIR/zeroclaw-dashboard`. Each run replaces the file (written
//! aside, then renamed over it); what it held was one code, used once within 60 s.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The file's name in its directory.
const FILE: &str = "login.html";

/// Writes the page leading to `url` and returns its path.
pub fn write(data_dir: Option<&Path>, url: &str) -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("zeroclaw-dashboard"));
    for dir in data_dir
        .map(|d| d.join("dashboard"))
        .into_iter()
        .chain(runtime)
    {
        match write_in(&dir, url) {
            Ok(path) => return Ok(path),
            Err(e) => tried.push(format!("{}: {e}", dir.display())),
        }
    }
    match tried.is_empty() {
        true => Err("no directory for the login page".into()),
        false => Err(tried.join("; ")),
    }
}

fn write_in(dir: &Path, url: &str) -> Result<PathBuf, String> {
    private_dir(dir)?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let aside = dir.join(format!(".login-{}-{nanos}.html", std::process::id()));
    let path = dir.join(FILE);
    let written = create_private(&aside)
        .and_then(|mut f| {
            f.write_all(page(url).as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| fs::rename(&aside, &path));
    if let Err(e) = written {
        let _ = fs::remove_file(&aside);
        return Err(e.to_string());
    }
    Ok(path)
}

/// Makes `dir` (and its parents) and leaves it a real directory of mode 0700.
fn private_dir(dir: &Path) -> Result<(), String> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| e.to_string())?;
    let meta = fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !meta.file_type().is_dir() {
        return Err("not a directory".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Only its owner may change its mode: this fails for a directory not ours.
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A new file (never an existing one, never through a link) readable by its owner only.
fn create_private(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// The page: it goes on to `url` at once (script, else a refresh), with a link besides.
fn page(url: &str) -> String {
    let json = serde_json::to_string(url).unwrap_or_else(|_| "\"\"".into());
    // Inside <script>, `</` must not appear; a JSON string may carry it escaped.
    let script = json.replace("</", "<\\/");
    let attr = url
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta http-equiv=\"refresh\" content=\"0;url={attr}\">\n\
         <title>zeroclaw dashboard</title>\n\
         <script>location.replace({script});</script>\n\
         </head><body><p><a href=\"{attr}\">Open the zeroclaw dashboard</a></p></body></html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_private_and_leads_to_the_url() {
        let tmp = tempfile::tempdir().expect("tmp");
        let url = "http://127.0.0.1:9781/#code=zcl_0123";
        let path = write(Some(tmp.path()), url).expect("page");
        let text = fs::read_to_string(&path).expect("read");
        assert!(text.contains("location.replace(\"http://127.0.0.1:9781/#code=zcl_0123\")"));
        assert!(text.contains("url=http://127.0.0.1:9781/#code=zcl_0123\""));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().expect("dir")), 0o700);
        }
        let again = write(Some(tmp.path()), "http://127.0.0.1:1/#code=zcl_2").expect("page");
        assert_eq!(again, path, "replaced, not piled up");
        let left = fs::read_dir(path.parent().expect("dir"))
            .expect("dir")
            .count();
        assert_eq!(left, 1);
    }

    #[test]
    fn nothing_in_the_url_escapes_the_script_or_the_attribute() {
        let text = page("http://x/#a</script><b\"&");
        assert!(!text.contains("</script><b"));
        assert!(text.contains("#a&lt;/script>&lt;b&quot;&amp;"));
    }
}
