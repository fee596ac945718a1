//! Where another crate's source is, so that its helpers can be read like the caller's
//! (issue 48: a plain function of a dependency is inlined, and one that cannot be gets a
//! phidiff error instead of rustc's "cannot find function `g_rev` in crate `other`").
//!
//! A proc macro is told only its own crate's manifest directory (`CARGO_MANIFEST_DIR`). A
//! dependency is found from there the way cargo finds it, for the forms a manifest writes
//! most: a `path` dependency (also through `workspace = true` and `[workspace.dependencies]`,
//! and renamed with `package = ..`), and a registry or git one, at the version `Cargo.lock`
//! records (the one the caller's entry names where several are locked), in cargo's source
//! cache (`$CARGO_HOME/registry/src`, `$CARGO_HOME/git/checkouts`). Anything else (a
//! vendored or patched source, a manifest this scanner misreads) is not found, and the call
//! is left as it is: rustc then reports what it finds, as before.

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
    let caller = package_name(&text);
    // The package's own library, as its tests, examples and binaries name it.
    if caller.as_ref().is_some_and(|p| p.replace('-', "_") == name) {
        return lib_root(dir);
    }
    let caller = caller.as_deref();
    let dep = find_dependency(&text, name, false)?;
    let dep = match dep {
        Dep {
            workspace: true, ..
        } => {
            let (root, text) = workspace_of(dir)?;
            return locate(&root, find_dependency(&text, name, true)?, caller);
        }
        other => other,
    };
    locate(dir, dep, caller)
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

/// The root file of `dep`, declared in the manifest of `dir`, for the package `caller`.
fn locate(dir: &Path, dep: Dep, caller: Option<&str>) -> Option<PathBuf> {
    match dep.path {
        Some(p) => lib_root(&dir.join(p)),
        None => locked_root(dir, &dep.package, caller),
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

/// The package `package` from the registry or a git repository, at the version the lock
/// file above `dir` records for it: the only one, else the one `caller`'s entry there
/// depends on (`"rand 0.8.5"`, when several are locked).
fn locked_root(dir: &Path, package: &str, caller: Option<&str>) -> Option<PathBuf> {
    let lock = dir
        .ancestors()
        .map(|d| d.join("Cargo.lock"))
        .find(|f| f.is_file())?;
    let locked = parse_lock(&std::fs::read_to_string(lock).ok()?);
    let found = pick(&locked, package, caller)?;
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    source_root(&home, found)
}

/// A package as `Cargo.lock` records it.
#[derive(Debug, Default, PartialEq)]
struct Locked {
    name: String,
    version: String,
    /// `registry+..`, `sparse+..`, `git+URL#commit`; none for a path package.
    source: Option<String>,
    /// `"name"`, or `"name version"` (and ` (source)`) where several are locked.
    dependencies: Vec<String>,
}

fn parse_lock(text: &str) -> Vec<Locked> {
    let mut out: Vec<Locked> = Vec::new();
    let mut in_deps = false;
    for line in text.lines().map(str::trim) {
        if line == "[[package]]" {
            out.push(Locked::default());
            in_deps = false;
            continue;
        }
        let Some(p) = out.last_mut() else { continue };
        if in_deps {
            match line.strip_prefix('"').and_then(|l| l.split('"').next()) {
                Some(dep) => p.dependencies.push(dep.to_string()),
                None => in_deps = !line.starts_with(']'),
            }
            continue;
        }
        if line.starts_with('[') {
            // `[metadata]` and such: no package's.
            out.push(Locked::default());
            continue;
        }
        match key_value(line) {
            Some(("name", v)) => p.name = unquote(v).unwrap_or_default().to_string(),
            Some(("version", v)) => p.version = unquote(v).unwrap_or_default().to_string(),
            Some(("source", v)) => p.source = unquote(v).map(str::to_string),
            Some(("dependencies", v)) => {
                let inner = v.trim_start_matches('[');
                p.dependencies.extend(
                    inner
                        .split(',')
                        .filter_map(|d| unquote(d.trim()))
                        .map(str::to_string),
                );
                in_deps = !v.ends_with(']');
            }
            _ => {}
        }
    }
    out.retain(|p| !p.name.is_empty());
    out
}

/// The locked package named `package` the caller uses: the only one of that name with a
/// source, else the version (and source) `caller`'s own entry names.
fn pick<'a>(locked: &'a [Locked], package: &str, caller: Option<&str>) -> Option<&'a Locked> {
    let named: Vec<&Locked> = locked
        .iter()
        .filter(|p| p.name == package && p.source.is_some())
        .collect();
    if let [one] = named.as_slice() {
        return Some(one);
    }
    let caller = locked
        .iter()
        .find(|p| Some(p.name.as_str()) == caller && p.source.is_none())?;
    let mut wanted = caller.dependencies.iter().filter_map(|d| {
        let mut words = d.split(' ');
        (words.next() == Some(package)).then(|| (words.next(), words.next()))
    });
    let (version, source) = wanted.next()?;
    let version = version?;
    let source = source.map(|s| s.trim_start_matches('(').trim_end_matches(')'));
    named
        .into_iter()
        .find(|p| p.version == version && source.is_none_or(|s| p.source.as_deref() == Some(s)))
}

/// Where cargo keeps the source of `p` under `home` (`$CARGO_HOME`): the registry's
/// `registry/src/INDEX/NAME-VERSION`, or a git checkout's `git/checkouts/REPO-HASH/REV`
/// (searched for the package's manifest, for a repository holding several packages).
fn source_root(home: &Path, p: &Locked) -> Option<PathBuf> {
    let source = p.source.as_deref()?;
    if let Some(url) = source.strip_prefix("git+") {
        let commit = url.rsplit_once('#')?.1;
        let checkouts = std::fs::read_dir(home.join("git").join("checkouts")).ok()?;
        return checkouts
            .filter_map(Result::ok)
            .filter_map(|repo| std::fs::read_dir(repo.path()).ok())
            .flatten()
            .filter_map(Result::ok)
            .filter(|rev| {
                let rev = rev.file_name();
                let rev = rev.to_string_lossy();
                !rev.is_empty() && commit.starts_with(&*rev)
            })
            .find_map(|rev| package_dir(&rev.path(), &p.name, 3))
            .and_then(|dir| lib_root(&dir));
    }
    let sources = std::fs::read_dir(home.join("registry").join("src")).ok()?;
    sources
        .filter_map(Result::ok)
        .map(|index| index.path().join(format!("{}-{}", p.name, p.version)))
        .find_map(|dir| lib_root(&dir))
}

/// The directory at or below `dir` (at most `depth` levels) whose manifest is package `name`'s.
fn package_dir(dir: &Path, name: &str, depth: usize) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok();
    if text.as_deref().and_then(package_name).as_deref() == Some(name) {
        return Some(dir.to_path_buf());
    }
    if depth == 0 {
        return None;
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| !n.to_string_lossy().starts_with('.') && n != "target")
        })
        .collect();
    subdirs.sort();
    subdirs
        .into_iter()
        .find_map(|d| package_dir(&d, name, depth - 1))
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

    const LOCK: &str = r#"
version = 4

[[package]]
name = "app"
version = "0.1.0"
dependencies = [
 "geom",
 "rand 0.8.5",
 "smooth",
]

[[package]]
name = "rand"
version = "0.7.3"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "aa"

[[package]]
name = "rand"
version = "0.8.5"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "bb"
dependencies = [
 "rand_core",
]

[[package]]
name = "smooth"
version = "0.2.0"
source = "git+https://example.org/lab/numerics?branch=main#1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
"#;

    #[test]
    fn the_locked_version_is_the_callers() {
        let locked = parse_lock(LOCK);
        assert_eq!(locked.len(), 4);
        assert_eq!(locked[0].dependencies, ["geom", "rand 0.8.5", "smooth"]);
        // Two versions of `rand`: the caller's entry names which.
        let rand = pick(&locked, "rand", Some("app")).expect("rand is found");
        assert_eq!(rand.version, "0.8.5");
        // Without knowing the caller, neither is taken.
        assert_eq!(pick(&locked, "rand", Some("other")), None);
        let smooth = pick(&locked, "smooth", None).expect("one smooth");
        assert!(smooth
            .source
            .as_deref()
            .is_some_and(|s| s.starts_with("git+")));
    }

    #[test]
    fn git_and_registry_sources_are_found_in_cargos_cache() {
        let home = std::env::temp_dir().join(format!("phidiff-crates-{}", std::process::id()));
        let write = |rel: &str, text: &str| {
            let f = home.join(rel);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        };
        // A git repository holding two packages, checked out at its short revision.
        let checkout = "git/checkouts/numerics-0f1e2d3c4b5a6978/1a2b3c4";
        write(
            &format!("{checkout}/Cargo.toml"),
            "[workspace]\nmembers = [\"smooth\", \"rough\"]\n",
        );
        write(
            &format!("{checkout}/rough/Cargo.toml"),
            "[package]\nname = \"rough\"\n",
        );
        write(&format!("{checkout}/rough/src/lib.rs"), "");
        write(
            &format!("{checkout}/smooth/Cargo.toml"),
            "[package]\nname = \"smooth\"\n",
        );
        write(
            &format!("{checkout}/smooth/src/lib.rs"),
            "pub fn soft(x: f64) -> f64 { x }",
        );
        // Another revision of the same repository, not the locked one.
        write(
            "git/checkouts/numerics-0f1e2d3c4b5a6978/9f9f9f9/smooth/Cargo.toml",
            "[package]\nname = \"smooth\"\n",
        );
        write(
            "git/checkouts/numerics-0f1e2d3c4b5a6978/9f9f9f9/smooth/src/lib.rs",
            "",
        );
        write(
            "registry/src/index.crates.io-1949cf8c6b5b557f/rand-0.8.5/Cargo.toml",
            "[package]\nname = \"rand\"\n",
        );
        write(
            "registry/src/index.crates.io-1949cf8c6b5b557f/rand-0.8.5/src/lib.rs",
            "",
        );
        let locked = parse_lock(LOCK);
        let smooth = source_root(&home, pick(&locked, "smooth", Some("app")).unwrap());
        let rand = source_root(&home, pick(&locked, "rand", Some("app")).unwrap());
        let rand_old = source_root(&home, &locked[1]);
        std::fs::remove_dir_all(&home).unwrap();
        assert_eq!(smooth, Some(home.join(checkout).join("smooth/src/lib.rs")));
        assert_eq!(
            rand,
            Some(home.join("registry/src/index.crates.io-1949cf8c6b5b557f/rand-0.8.5/src/lib.rs"))
        );
        assert_eq!(rand_old, None, "rand 0.7.3 is not in this cache");
    }
}
