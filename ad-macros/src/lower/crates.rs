//! Where another crate's source is, so that its helpers can be read like the caller's
//! (issue 48: a plain function of a dependency is inlined, and one that cannot be gets a
//! phidiff error instead of rustc's "cannot find function `g_rev` in crate `other`").
//!
//! A proc macro is told only its own crate's manifest directory (`CARGO_MANIFEST_DIR`). A
//! dependency is found from there the way cargo finds it, for the forms a manifest writes
//! most: a `path` dependency (also through `workspace = true` and `[workspace.dependencies]`,
//! and renamed with `package = ..`), and a registry one, at the single version `Cargo.lock`
//! records, in cargo's source cache (`$CARGO_HOME/registry/src`). Anything else (git
//! dependencies, several locked versions, a manifest this scanner misreads) is not found,
//! and the call is left as it is: rustc then reports what it finds, as before.

use std::path::{Path, PathBuf};

/// The root source file (`src/lib.rs`, or the `[lib] path`) of the dependency the caller's
/// code names `name` (`other_crate` for a package `other-crate`).
pub(crate) fn dependency_root(name: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    type Found = std::collections::HashMap<(PathBuf, String), Option<PathBuf>>;
    thread_local! {
        static FOUND: std::cell::RefCell<Found> = Default::default();
    }
    let key = (dir.clone(), name.to_string());
    if let Some(found) = FOUND.with(|f| f.borrow().get(&key).cloned()) {
        return found;
    }
    let found = find_root(&dir, name);
    FOUND.with(|f| f.borrow_mut().insert(key, found.clone()));
    if let Some(root) = &found {
        if let Some(src) = root.parent() {
            DEPENDENCIES.with(|d| d.borrow_mut().push((src.to_path_buf(), root.clone())));
        }
    }
    found
}

thread_local! {
    /// The dependencies found so far: each library's source directory, and its root file.
    static DEPENDENCIES: std::cell::RefCell<Vec<(PathBuf, PathBuf)>> = Default::default();
}

/// The root file of the dependency whose source `file` is (found by [`dependency_root`]
/// before), or `None` for a file of the crate being built.
pub(crate) fn dependency_of(file: &Path) -> Option<PathBuf> {
    DEPENDENCIES.with(|d| {
        d.borrow()
            .iter()
            .filter(|(src, _)| file.starts_with(src))
            .max_by_key(|(src, _)| src.components().count())
            .map(|(_, root)| root.clone())
    })
}

fn find_root(dir: &Path, name: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    // The package's own library, as its tests, examples and binaries name it.
    if package_name(&text).is_some_and(|p| p.replace('-', "_") == name) {
        return lib_root(dir);
    }
    let dep = find_dependency(&text, name, false)?;
    let dep = match dep {
        Dep {
            workspace: true, ..
        } => {
            let (root, text) = workspace_of(dir)?;
            return locate(&root, find_dependency(&text, name, true)?);
        }
        other => other,
    };
    locate(dir, dep)
}

/// A dependency as a manifest declares it.
#[derive(Debug, Default, PartialEq)]
struct Dep {
    /// The package's name (`package = ..`), else the key's.
    package: String,
    path: Option<String>,
    /// `workspace = true`: declared in `[workspace.dependencies]`.
    workspace: bool,
}

/// The root file of `dep`, declared in the manifest of `dir`.
fn locate(dir: &Path, dep: Dep) -> Option<PathBuf> {
    match dep.path {
        Some(p) => lib_root(&dir.join(p)),
        None => registry_root(dir, &dep.package),
    }
}

/// The crate root of the package in `dir`: its `[lib] path`, else `src/lib.rs`.
fn lib_root(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(h) = header(line) {
            section = h;
        } else if section == "lib" {
            if let Some(("path", v)) = key_value(line) {
                return Some(dir.join(unquote(v)?)).filter(|f| f.is_file());
            }
        }
    }
    Some(dir.join("src").join("lib.rs")).filter(|f| f.is_file())
}

/// The registry package `package` at the one version the lock file above `dir` records.
fn registry_root(dir: &Path, package: &str) -> Option<PathBuf> {
    let lock = dir
        .ancestors()
        .map(|d| d.join("Cargo.lock"))
        .find(|f| f.is_file())?;
    let text = std::fs::read_to_string(lock).ok()?;
    let mut versions = Vec::new();
    let mut lines = text.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        if key_value(line).and_then(|(k, v)| (k == "name").then(|| unquote(v)))
            == Some(Some(package))
        {
            if let Some(("version", v)) = lines.peek().and_then(|l| key_value(l)) {
                versions.extend(unquote(v).map(str::to_string));
            }
        }
    }
    let [version] = versions.as_slice() else {
        return None;
    };
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let sources = std::fs::read_dir(home.join("registry").join("src")).ok()?;
    sources
        .filter_map(Result::ok)
        .map(|index| index.path().join(format!("{package}-{version}")))
        .find_map(|dir| lib_root(&dir))
}

/// The `[package]`'s `name`.
fn package_name(text: &str) -> Option<String> {
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(h) = header(line) {
            section = h;
        } else if section == "package" {
            if let Some(("name", v)) = key_value(line) {
                return unquote(v).map(str::to_string);
            }
        }
    }
    None
}

/// The workspace root above `dir` (the nearest manifest with `[workspace]`) and its text.
fn workspace_of(dir: &Path) -> Option<(PathBuf, String)> {
    dir.ancestors().find_map(|d| {
        let text = std::fs::read_to_string(d.join("Cargo.toml")).ok()?;
        text.lines()
            .any(|l| l.trim() == "[workspace]")
            .then(|| (d.to_path_buf(), text))
    })
}

/// The dependency named `name` in a manifest's dependency tables (with `workspace`, in
/// `[workspace.dependencies]` only): `key = "1"`, `key = { path = .., package = .. }`, or
/// a `[dependencies.key]` table.
fn find_dependency(text: &str, name: &str, workspace: bool) -> Option<Dep> {
    let matches = |key: &str| key.trim_matches('"').replace('-', "_") == name;
    let deps_table = |h: &str| match workspace {
        true => h == "workspace.dependencies",
        false => {
            let last = h.rsplit('.').next().unwrap_or(h);
            matches!(
                last,
                "dependencies" | "dev-dependencies" | "build-dependencies"
            ) && !h.starts_with("workspace")
        }
    };
    let mut section = String::new();
    let mut found: Option<Dep> = None;
    for line in text.lines().map(str::trim) {
        if let Some(h) = header(line) {
            if found.is_some() {
                break;
            }
            // `[dependencies.other]`: the table is the dependency.
            if let Some((table, key)) = h.rsplit_once('.') {
                if deps_table(table) && matches(key) {
                    found = Some(Dep {
                        package: key.trim_matches('"').to_string(),
                        ..Dep::default()
                    });
                }
            }
            section = h;
            continue;
        }
        let Some((key, value)) = key_value(line) else {
            continue;
        };
        if let Some(dep) = &mut found {
            // Inside a `[dependencies.other]` table.
            set_field(dep, key, value);
        } else if deps_table(&section) && matches(key) {
            let mut dep = Dep {
                package: key.trim_matches('"').to_string(),
                ..Dep::default()
            };
            if let Some(inner) = value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
                for field in inner.split(',') {
                    if let Some((k, v)) = key_value(field.trim()) {
                        set_field(&mut dep, k, v);
                    }
                }
            }
            return Some(dep);
        }
    }
    found
}

fn set_field(dep: &mut Dep, key: &str, value: &str) {
    match key {
        "path" => dep.path = unquote(value).map(str::to_string),
        "package" => dep.package = unquote(value).unwrap_or(&dep.package).to_string(),
        "workspace" => dep.workspace = value == "true",
        _ => {}
    }
}

/// `[name]` → `name`.
fn header(line: &str) -> Option<String> {
    let inner = line.strip_prefix('[')?.split(']').next()?;
    Some(inner.trim().to_string())
}

/// `key = value` (a comment after the value dropped).
fn key_value(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once('=')?;
    let v = v.trim();
    let v = if v.starts_with('{') {
        v.rfind('}').map_or(v, |end| &v[..=end])
    } else if v.starts_with('"') {
        v
    } else {
        v.split('#').next().unwrap_or(v).trim()
    };
    Some((k.trim(), v))
}

fn unquote(v: &str) -> Option<&str> {
    v.strip_prefix('"')?.split('"').next()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
[package]
name = "app"

[dependencies]
serde = "1"
geom = { package = "phidiff-fixture-geom", path = "../geom" }
shared-math = { workspace = true }

[dev-dependencies.quad-rules]
path = "vendor/quad"

[target.'cfg(unix)'.dependencies]
unix-only = { path = "u", version = "0.1" } # a comment
"#;

    #[test]
    fn dependencies_are_read_in_each_form() {
        let dep = |n| find_dependency(MANIFEST, n, false);
        assert_eq!(
            dep("geom"),
            Some(Dep {
                package: "phidiff-fixture-geom".into(),
                path: Some("../geom".into()),
                workspace: false
            })
        );
        assert_eq!(dep("serde").map(|d| d.path), Some(None));
        assert!(dep("shared_math").is_some_and(|d| d.workspace));
        assert_eq!(
            dep("quad_rules").and_then(|d| d.path),
            Some("vendor/quad".into())
        );
        assert_eq!(dep("unix_only").and_then(|d| d.path), Some("u".into()));
        assert_eq!(dep("app"), None);
        assert_eq!(package_name(MANIFEST).as_deref(), Some("app"));
        assert_eq!(dep("phidiff_fixture_geom"), None);
    }

    #[test]
    fn workspace_dependencies_are_their_own_table() {
        let root = "[workspace]\nmembers = [\"a\"]\n\n[workspace.dependencies]\nshared-math = { path = \"crates/math\" }\n";
        assert_eq!(
            find_dependency(root, "shared_math", true).and_then(|d| d.path),
            Some("crates/math".into())
        );
        assert_eq!(find_dependency(root, "shared_math", false), None);
    }
}
