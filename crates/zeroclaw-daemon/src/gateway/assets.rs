//! The dashboard's static files (SPEC §20), compiled into the binary by `build.rs` from
//! `crates/zeroclaw-daemon/dashboard/`: `GET /` is `index.html`, `GET /assets/…` the file of
//! that path. A request names a file of the table exactly or gets nothing: no decoding, no
//! file system, so no path can leave the table. Contents stay in the binary's read-only
//! data; serving one writes that slice as it is.

/// Every embedded file, `(path relative to dashboard/, content)`, sorted by path.
static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asset {
    pub content: &'static [u8],
    pub content_type: &'static str,
}

/// The file a request path names (its query already removed): `/` → `index.html`,
/// `/assets/…` → that file; `None` for anything else, or a name not in the table.
pub(crate) fn lookup(path: &str) -> Option<Asset> {
    let rel = match path {
        "/" | "/index.html" => "index.html",
        // The service worker and the manifest at the root: the worker's scope is the
        // directory it is served from, and it must cover the whole dashboard (SPEC §24.3).
        "/sw.js" => "sw.js",
        "/manifest.webmanifest" => "manifest.webmanifest",
        p if p.starts_with("/assets/") => &p[1..],
        _ => return None,
    };
    // The table holds plain relative names only; these never match one, said plainly.
    if rel
        .split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
        || rel.contains(['%', '\\'])
    {
        return None;
    }
    let i = FILES.binary_search_by(|(name, _)| (*name).cmp(rel)).ok()?;
    let (name, content) = FILES[i];
    Some(Asset {
        content,
        content_type: content_type(name),
    })
}

/// The `Content-Type` of a file, by its extension.
fn content_type(name: &str) -> &'static str {
    let base = name.rsplit('/').next().unwrap_or(name);
    let Some((_, ext)) = base.rsplit_once('.') else {
        // LICENSE, COPYING and the like.
        return "text/plain; charset=utf-8";
    };
    match ext.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "wasm" => "application/wasm",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_has_the_page() {
        assert!(FILES.windows(2).all(|w| w[0].0 < w[1].0));
        let index = lookup("/").expect("index.html is embedded");
        assert_eq!(index.content_type, "text/html; charset=utf-8");
        assert!(lookup("/index.html").is_some());
    }

    #[test]
    fn only_table_names_are_served() {
        for path in [
            "",
            "/healthz",
            "/assets/",
            "/assets/../Cargo.toml",
            "/assets/%2e%2e/Cargo.toml",
            "/assets//index.html",
            "/assets/./x.js",
            "/assets\\..\\build.rs",
            "/../build.rs",
            "/build.rs",
        ] {
            assert!(lookup(path).is_none(), "{path}");
        }
    }

    #[test]
    fn the_service_worker_and_manifest_are_at_the_root() {
        let sw = lookup("/sw.js").expect("sw.js");
        assert_eq!(sw.content_type, "text/javascript; charset=utf-8");
        let m = lookup("/manifest.webmanifest").expect("manifest");
        assert_eq!(m.content_type, "application/manifest+json");
        assert!(lookup("/assets/icon-192.png").is_some());
    }

    #[test]
    fn content_types_by_extension() {
        assert_eq!(
            content_type("assets/a.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type("assets/a.CSS"), "text/css; charset=utf-8");
        assert_eq!(
            content_type("assets/vendor/LICENSE"),
            "text/plain; charset=utf-8"
        );
        assert_eq!(content_type("assets/x.bin"), "application/octet-stream");
        assert_eq!(content_type("assets/i.svg"), "image/svg+xml");
    }
}
