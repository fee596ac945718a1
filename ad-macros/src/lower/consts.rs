//! Named constants: `const`/`static` items of the function's module (read from its source
//! file, as `missing_rule` reads it), `const` items inside the body, the standard float
//! constants by their bare names (`PI` after `use std::f64::consts::PI`), and a const
//! generic `N` that is the length of an array parameter. A scalar constant is its
//! expression, lowered where it is read (a passive value); a table (`const W: [f64; 5]`,
//! 1-D or 2-D) is a local buffer filled at the function's entry.

use super::*;
use crate::expand::SourceFile;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use syn::Expr;

/// A `const NAME: TY = EXPR;` (or `static`).
#[derive(Clone)]
pub struct ConstItem {
    pub ty: syn::Type,
    pub expr: Expr,
}

/// The constants a function's body may name.
#[derive(Clone, Default)]
pub struct Constants {
    items: HashMap<String, ConstItem>,
}

impl Constants {
    /// The constants the body of `item` names, looked up from its module in its source
    /// file: `const` and `static` items of the module, those it imports by `use` (from
    /// inline modules of the file, or from the files of the crate's modules), and those
    /// named by a path (`phys::G`), kept under the path.
    pub fn from_source(item: &syn::ItemFn, source: Option<SourceFile<'_>>) -> Constants {
        let mut c = Constants::default();
        let Some(src) = source else {
            return c;
        };
        let Ok(file) = syn::parse_file(src.text) else {
            return c;
        };
        let here = Module {
            items: Rc::new(file.items.clone()),
            file: src.path.map(Path::to_path_buf),
            inline: Vec::new(),
        };
        let name = item.sig.ident.to_string();
        let module = crate::missing_rule::module_path(&file.items, &name)
            .and_then(|path| here.descend(&path))
            .unwrap_or(here);
        // Each constant the body names, found where Rust finds it: an item of the module,
        // imported by `use` (a glob too), or by a path (`phys::G`, `crate::consts::TABLE`,
        // `Model::C`).
        let body = item.block.to_token_stream();
        let generics: Vec<String> = item
            .sig
            .generics
            .params
            .iter()
            .filter_map(|g| match g {
                syn::GenericParam::Type(t) => Some(t.ident.to_string()),
                syn::GenericParam::Const(k) => Some(k.ident.to_string()),
                syn::GenericParam::Lifetime(_) => None,
            })
            .collect();
        let mut wanted: Vec<Vec<String>> = idents(body.clone())
            .into_iter()
            .filter(|n| !generics.contains(n))
            .map(|n| vec![n])
            .collect();
        wanted.extend(qualified_paths(body));
        let mut fresh = 0;
        for path in wanted {
            if let Some((k, m)) = resolve(&module, &path, 0) {
                let k = c.close(k, &m, &mut fresh, 0);
                c.items.insert(path.join("::"), k);
            }
        }
        c
    }

    /// `k`, defined in `m`, with the constants its expression names (in `m`) renamed to
    /// fresh names that this map holds: the expression is lowered in the function, where
    /// its names may mean something else (a local, another module's constant).
    fn close(
        &mut self,
        mut k: ConstItem,
        m: &Module,
        fresh: &mut usize,
        depth: usize,
    ) -> ConstItem {
        struct Rename<'a> {
            consts: &'a mut Constants,
            m: &'a Module,
            fresh: &'a mut usize,
            depth: usize,
        }
        impl syn::visit_mut::VisitMut for Rename<'_> {
            fn visit_expr_mut(&mut self, e: &mut Expr) {
                if let Expr::Path(p) = e {
                    let path: Vec<String> = p
                        .path
                        .segments
                        .iter()
                        .map(|s| s.ident.to_string())
                        .collect();
                    if p.qself.is_none() && self.depth < 16 {
                        if let Some((k, m)) = resolve(self.m, &path, 0) {
                            let k = self.consts.close(k, &m, self.fresh, self.depth + 1);
                            let name = quote::format_ident!("__pd_const_{}", *self.fresh);
                            *self.fresh += 1;
                            self.consts.items.insert(name.to_string(), k);
                            *e = syn::parse_quote!(#name);
                            return;
                        }
                    }
                }
                syn::visit_mut::visit_expr_mut(self, e);
            }
        }
        let mut rename = Rename {
            consts: self,
            m,
            fresh,
            depth,
        };
        syn::visit_mut::VisitMut::visit_expr_mut(&mut rename, &mut k.expr);
        k
    }

    pub fn get(&self, name: &str) -> Option<&ConstItem> {
        self.items.get(name)
    }

    pub fn insert(&mut self, name: String, item: ConstItem) {
        self.items.insert(name, item);
    }

    /// The array constants among `names`, in order.
    pub fn tables<'a>(&'a self, names: &[String]) -> Vec<(&'a str, &'a ConstItem)> {
        let mut out: Vec<(&str, &ConstItem)> = self
            .items
            .iter()
            .filter(|(n, c)| names.contains(n) && matches!(c.ty, syn::Type::Array(_)))
            .map(|(n, c)| (n.as_str(), c))
            .collect();
        out.sort_by_key(|(n, _)| *n);
        out
    }
}

/// The value of a standard float constant named `name` (`PI`, `FRAC_1_SQRT_2`, ...).
pub fn std_float(name: &str) -> Option<f64> {
    use std::f64::consts as c;
    Some(match name {
        "PI" => c::PI,
        "TAU" => c::TAU,
        "E" => c::E,
        "SQRT_2" => c::SQRT_2,
        "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
        "LN_2" => c::LN_2,
        "LN_10" => c::LN_10,
        "LOG2_E" => c::LOG2_E,
        "LOG10_E" => c::LOG10_E,
        "LOG2_10" => c::LOG2_10,
        "LOG10_2" => c::LOG10_2,
        "FRAC_PI_2" => c::FRAC_PI_2,
        "FRAC_PI_3" => c::FRAC_PI_3,
        "FRAC_PI_4" => c::FRAC_PI_4,
        "FRAC_PI_6" => c::FRAC_PI_6,
        "FRAC_PI_8" => c::FRAC_PI_8,
        "FRAC_1_PI" => c::FRAC_1_PI,
        "FRAC_2_PI" => c::FRAC_2_PI,
        "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
        _ => return None,
    })
}

/// Every identifier in `tokens`, at any depth.
pub fn idents(tokens: proc_macro2::TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![tokens];
    while let Some(ts) = stack.pop() {
        for t in ts {
            match t {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => stack.push(g.stream()),
                _ => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

impl Lowerer<'_> {
    /// The scalar constant `name`, lowered here; `None` if there is none by that name.
    pub(super) fn named_constant(
        &mut self,
        name: &str,
        at: &syn::ExprPath,
    ) -> LResult<Option<Value>> {
        let Some(c) = self.consts.get(name).cloned() else {
            return Ok(None);
        };
        if matches!(c.ty, syn::Type::Array(_)) {
            return Err(self.error(at, name, "a constant table is read by element (`TABLE[k]`)"));
        }
        if self.const_depth > 16 {
            return Err(self.error(at, name, "the constant is defined in terms of itself"));
        }
        self.const_depth += 1;
        let v = self.lower_expr(&c.expr);
        self.const_depth -= 1;
        let v = v?;
        match (self.declared_ty(&c.ty), self.ty(v)) {
            (Some(Ty::Float), Ty::Int) => Ok(Some(self.to_float(v, None))),
            _ => Ok(Some(v)),
        }
    }

    /// A `const` item in the body: a scalar is named from here on; a table is filled now.
    pub(super) fn const_item(&mut self, k: &syn::ItemConst) -> LResult<()> {
        let name = k.ident.to_string();
        let item = ConstItem {
            ty: (*k.ty).clone(),
            expr: (*k.expr).clone(),
        };
        if matches!(item.ty, syn::Type::Array(_)) {
            let buf = self.fill_table(&name, &item)?;
            self.env.bind(&name, Binding::Buf(buf));
        } else {
            self.consts.insert(name, item);
        }
        Ok(())
    }

    /// A local buffer holding the constant table `item` (`[a, b, ..]`, `[[..], [..]]`, or
    /// `[v; n]`).
    pub(super) fn fill_table(&mut self, name: &str, item: &ConstItem) -> LResult<Buf> {
        let rows: Vec<Vec<&Expr>> = match &item.expr {
            Expr::Array(a) if a.elems.iter().all(|e| matches!(e, Expr::Array(_))) => a
                .elems
                .iter()
                .map(|e| match e {
                    Expr::Array(r) => r.elems.iter().collect(),
                    _ => unreachable!("checked"),
                })
                .collect(),
            Expr::Array(a) => vec![a.elems.iter().collect()],
            other => return Err(self.error(
                other,
                name,
                "a constant table is written as an array literal (`[a, b, ..]` or rows of them)",
            )),
        };
        let two_d = matches!(&item.expr, Expr::Array(a) if a.elems.iter().all(|e| matches!(e, Expr::Array(_))) && !a.elems.is_empty());
        let mut values = Vec::new();
        for row in &rows {
            let mut vs = Vec::new();
            for e in row {
                vs.push(self.lower_expr(e)?);
            }
            values.push(vs);
        }
        let elem = match values.iter().flatten().next() {
            Some(v) => self.ty(*v),
            None => Ty::Float,
        };
        let buf = self.b.func.new_buf(BufData {
            name: name.replace("::", "_").to_lowercase(),
            rank: if two_d { 2 } else { 1 },
            elem,
            kind: BufKind::Local,
        });
        let zero = self.b.zero(elem);
        let dims = if two_d {
            let width = values.first().map_or(0, |r| r.len());
            vec![
                self.b.iconst(values.len() as i128),
                self.b.iconst(width as i128),
            ]
        } else {
            vec![self.b.iconst(values[0].len() as i128)]
        };
        self.b.stmt(InstKind::Alloc {
            buf,
            dims,
            init: AllocInit::Fill(zero),
        });
        for (i, row) in values.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                let mut idx = Vec::new();
                if two_d {
                    idx.push(self.b.iconst(i as i128));
                }
                idx.push(self.b.iconst(j as i128));
                self.b.store(buf, idx, *v);
            }
        }
        Ok(buf)
    }
}

/// A `const NAME: TY = EXPR;` or an immutable `static`, with its name.
fn const_of(item: &syn::Item) -> Option<(String, ConstItem)> {
    let (name, ty, expr) = match item {
        syn::Item::Const(k) => (&k.ident, &*k.ty, &*k.expr),
        syn::Item::Static(s) if matches!(s.mutability, syn::StaticMutability::None) => {
            (&s.ident, &*s.ty, &*s.expr)
        }
        _ => return None,
    };
    Some((
        name.to_string(),
        ConstItem {
            ty: ty.clone(),
            expr: expr.clone(),
        },
    ))
}

/// A module seen from a source file: its items, the file (if known), and the inline
/// modules (`mod a { .. }`) between the file's top and it.
#[derive(Clone)]
pub(crate) struct Module {
    pub(crate) items: Rc<Vec<syn::Item>>,
    pub(crate) file: Option<PathBuf>,
    pub(crate) inline: Vec<String>,
}

impl Module {
    /// The module at `path` (names of modules) below this one.
    pub(crate) fn descend(&self, path: &[String]) -> Option<Module> {
        let mut m = self.clone();
        for name in path {
            m = m.child(name)?;
        }
        Some(m)
    }

    /// The child module `name`: inline, or `mod name;` in its own file.
    pub(crate) fn child(&self, name: &str) -> Option<Module> {
        let declared = self.items.iter().find_map(|it| match it {
            syn::Item::Mod(m) if m.ident == name => Some(m),
            _ => None,
        })?;
        if let Some((_, items)) = &declared.content {
            let mut inline = self.inline.clone();
            inline.push(name.to_string());
            return Some(Module {
                items: Rc::new(items.clone()),
                file: self.file.clone(),
                inline,
            });
        }
        let dir = self.children_dir()?;
        [
            dir.join(format!("{name}.rs")),
            dir.join(name).join("mod.rs"),
        ]
        .into_iter()
        .find_map(|f| Module::of_file(&f))
    }

    /// The directory where the files of this module's `mod x;` children are.
    fn children_dir(&self) -> Option<PathBuf> {
        let file = self.file.as_ref()?;
        let mut dir = file.parent()?.to_path_buf();
        let stem = file.file_stem()?.to_str()?;
        if !(matches!(stem, "mod" | "lib" | "main") || is_crate_root(file)) {
            dir.push(stem);
        }
        dir.extend(&self.inline);
        Some(dir)
    }

    /// The top module of the file at `path`. The text is read again only when the file
    /// changed (a long-lived macro server, as an IDE's, sees edits); it is parsed in each
    /// expansion, since parsed tokens hold spans that live only as long as one macro call.
    fn of_file(path: &Path) -> Option<Module> {
        type Read = (std::time::SystemTime, Rc<str>);
        thread_local! {
            static FILES: std::cell::RefCell<HashMap<PathBuf, Read>> = Default::default();
        }
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
        let cached = FILES.with(|f| f.borrow().get(path).cloned());
        let text = match cached {
            Some((at, text)) if at == modified => text,
            _ => {
                let text: Rc<str> = std::fs::read_to_string(path).ok()?.into();
                FILES.with(|f| {
                    f.borrow_mut()
                        .insert(path.to_path_buf(), (modified, text.clone()))
                });
                text
            }
        };
        let items = Rc::new(syn::parse_file(&text).ok()?.items);
        Some(Module {
            items,
            file: Some(path.to_path_buf()),
            inline: Vec::new(),
        })
    }

    /// The crate's root module: this file if it is one, else the root file of the crate
    /// being built (by cargo's `CARGO_CRATE_NAME`: `tests/NAME.rs`, `benches/NAME.rs`,
    /// `examples/NAME.rs`, `src/bin/NAME.rs`, then `src/lib.rs`, `src/main.rs`).
    pub(crate) fn crate_root(&self) -> Option<Module> {
        let file = self.file.as_ref()?;
        if is_crate_root(file) {
            return Module::of_file(file);
        }
        if let Some(root) = super::crates::dependency_of(file) {
            // A dependency's module (see [`Module::dependency`]): that library's root.
            return Module::of_file(&root);
        }
        let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
        let name = std::env::var("CARGO_CRATE_NAME").unwrap_or_default();
        let named = ["tests", "benches", "examples", "src/bin"]
            .iter()
            .map(|d| dir.join(d).join(format!("{name}.rs")));
        let plain = ["src/lib.rs", "src/main.rs"].iter().map(|f| dir.join(f));
        named.chain(plain).find_map(|f| Module::of_file(&f))
    }

    /// The root module of the dependency the code names `name` (`other::g`), where its
    /// source can be found (see [`super::crates`]).
    pub(crate) fn dependency(name: &str) -> Option<Module> {
        Module::of_file(&super::crates::dependency_root(name)?)
    }

    /// Whether this module is of the crate being built, not of a dependency read by
    /// [`Module::dependency`].
    pub(crate) fn in_this_crate(&self) -> bool {
        self.file
            .as_ref()
            .is_none_or(|f| super::crates::dependency_of(f).is_none())
    }

    /// The parent module: an inline one of the same file, or the module that declares
    /// this file (`mod x;` in `dir.rs`, `dir/mod.rs`, or a crate root beside `x.rs`).
    pub(crate) fn parent(&self) -> Option<Module> {
        let file = self.file.as_ref()?;
        if let Some((_, up)) = self.inline.split_last() {
            return Module::of_file(file)?.descend(up);
        }
        if is_crate_root(file) {
            return None;
        }
        let stem = file.file_stem()?.to_str()?;
        // The directory this module's file is in stands for the parent (`dir/x.rs`), or for
        // this module itself (`x/mod.rs`, whose parent is then one level up).
        let (dir, name) = match stem {
            "mod" => {
                let dir = file.parent()?;
                (dir.parent()?, dir.file_name()?.to_str()?)
            }
            _ => (file.parent()?, stem),
        };
        let dir_name = dir.file_name()?.to_str()?;
        let candidates = [
            dir.with_extension("rs"),
            dir.join("mod.rs"),
            dir.join("lib.rs"),
            dir.join("main.rs"),
        ];
        let outer = dir.parent()?;
        let root = candidates
            .into_iter()
            .chain([outer.join(format!("{dir_name}.rs"))])
            .filter(|f| f.is_file())
            .find_map(|f| Module::of_file(&f))?;
        // The `mod name;` declaring this file, at any inline depth of the parent's file.
        fn find(items: &[syn::Item], name: &str, at: &mut Vec<String>) -> bool {
            for it in items {
                if let syn::Item::Mod(m) = it {
                    match &m.content {
                        None if m.ident == name => return true,
                        Some((_, inner)) => {
                            at.push(m.ident.to_string());
                            if find(inner, name, at) {
                                return true;
                            }
                            at.pop();
                        }
                        None => {}
                    }
                }
            }
            false
        }
        let mut at = Vec::new();
        find(&root.items, name, &mut at).then_some(())?;
        root.descend(&at)
    }
}

/// Whether `file` is the root of a crate: `lib.rs`/`main.rs` in `src`, or a file directly in
/// `examples/`, `tests/` or `benches/`.
fn is_crate_root(file: &Path) -> bool {
    let parent = file
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str());
    let stem = file.file_stem().and_then(|n| n.to_str());
    matches!(parent, Some("examples" | "tests" | "benches" | "bin"))
        || (parent == Some("src") && matches!(stem, Some("lib" | "main")))
}

/// The constant `path` names, seen from `from` (`G`, `phys::G`, `self::G`, `super::G`,
/// `crate::a::G`, `Model::G`), following `use` items, with the module that defines it;
/// `None` if it is not one phidiff can read.
pub(crate) fn resolve(from: &Module, path: &[String], depth: usize) -> Option<(ConstItem, Module)> {
    let own = |m: &Module, path: &[String]| match path {
        [name] => m
            .items
            .iter()
            .filter_map(const_of)
            .find(|(n, _)| n == name)
            .map(|(_, k)| k),
        // An associated constant of a type of this module (`Model::C`).
        [ty, assoc] => associated(&m.items, ty, assoc),
        _ => None,
    };
    resolve_item(from, path, depth, &own, &|name| constant_like(name))
}

/// What `path` names seen from `from`, with the module that defines it: `own` finds it
/// among a module's items (given the path left to walk), else the path is walked the way
/// Rust does (`self`, `super`, `crate`, child modules, names brought in by `use`, globs too;
/// a single name only when `follow` accepts it).
pub(crate) fn resolve_item<T>(
    from: &Module,
    path: &[String],
    depth: usize,
    own: &dyn Fn(&Module, &[String]) -> Option<T>,
    follow: &dyn Fn(&str) -> bool,
) -> Option<(T, Module)> {
    if depth > 8 {
        return None;
    }
    if let Some(found) = own(from, path) {
        return Some((found, from.clone()));
    }
    let (first, rest) = path.split_first()?;
    if rest.is_empty() {
        if !follow(first) {
            return None;
        }
        return imported_as(from, first)
            .iter()
            .find_map(|full| resolve_item(from, full, depth + 1, own, follow));
    }
    let next = match first.as_str() {
        "self" => from.clone(),
        "super" => from.parent()?,
        "crate" => from.crate_root()?,
        name => match from.child(name) {
            Some(m) => m,
            None => {
                // A module brought in by `use` (`use crate::phys;` then `phys::G`).
                let Some((_, mut full)) = imports(&from.items).into_iter().find(|(n, _)| n == name)
                else {
                    // Another crate (`other::g`), when its source can be found.
                    return resolve_item(&Module::dependency(name)?, rest, depth + 1, own, follow);
                };
                full.extend(rest.iter().cloned());
                return resolve_item(from, &full, depth + 1, own, follow);
            }
        },
    };
    resolve_item(&next, rest, depth + 1, own, follow)
}

/// The paths by which `from`'s `use`s may bring in `name`: the one a `use` naming it
/// stands for (`use tables::K as T;` for `T`), else each glob's (`use tables::*;` →
/// `tables::name`).
pub(crate) fn imported_as(from: &Module, name: &str) -> Vec<Vec<String>> {
    let imported = imports(&from.items);
    if let Some((_, target)) = imported.iter().find(|(n, _)| n == name) {
        return vec![target.clone()];
    }
    imported
        .into_iter()
        .filter(|(n, _)| n == "*")
        .map(|(_, mut prefix)| {
            prefix.push(name.to_string());
            prefix
        })
        .collect()
}

/// The names of `path`'s segments (`geom::Vec3<T>` → `["geom", "Vec3"]`).
pub(crate) fn path_names(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// The names a module's `use` items bring in, each with the path it stands for (a glob
/// as the name `*` with the module's path).
pub(crate) fn imports(items: &[syn::Item]) -> Vec<(String, Vec<String>)> {
    fn walk(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(&p.tree, prefix, out);
                prefix.pop();
            }
            // `use a::b::{self};` brings in `b`.
            syn::UseTree::Name(n) if n.ident == "self" => {
                if let Some(last) = prefix.last() {
                    out.push((last.clone(), prefix.clone()));
                }
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                full.push(n.ident.to_string());
                out.push((n.ident.to_string(), full));
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                out.push((r.rename.to_string(), full));
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    walk(t, prefix, out);
                }
            }
            syn::UseTree::Glob(_) => out.push(("*".to_string(), prefix.clone())),
        }
    }
    let mut out = Vec::new();
    for it in items {
        if let syn::Item::Use(u) = it {
            walk(&u.tree, &mut Vec::new(), &mut out);
        }
    }
    out
}

/// The paths of two or more plain segments in `tokens` (`phys::G`), at any depth.
pub fn qualified_paths(tokens: proc_macro2::TokenStream) -> Vec<Vec<String>> {
    use proc_macro2::TokenTree;
    let mut out = Vec::new();
    let mut stack = vec![tokens];
    while let Some(ts) = stack.pop() {
        let tts: Vec<TokenTree> = ts.into_iter().collect();
        let mut k = 0;
        while k < tts.len() {
            if let TokenTree::Group(g) = &tts[k] {
                stack.push(g.stream());
            }
            let starts = matches!(&tts[k], TokenTree::Ident(_))
                && !(k >= 1 && matches!(&tts[k - 1], TokenTree::Punct(p) if p.as_char() == ':'));
            if starts {
                let mut path = Vec::new();
                let mut j = k;
                while let Some(TokenTree::Ident(i)) = tts.get(j) {
                    path.push(i.to_string());
                    let colons = matches!(tts.get(j + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                        && matches!(tts.get(j + 2), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                    if !colons {
                        break;
                    }
                    j += 3;
                }
                if path.len() >= 2 {
                    out.push(path);
                }
                k = j.max(k) + 1;
                continue;
            }
            k += 1;
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The associated `const` `name` of an `impl` of the type `ty` among `items`.
fn associated(items: &[syn::Item], ty: &str, name: &str) -> Option<ConstItem> {
    items.iter().find_map(|it| {
        let syn::Item::Impl(imp) = it else {
            return None;
        };
        let syn::Type::Path(tp) = &*imp.self_ty else {
            return None;
        };
        if !tp.path.is_ident(ty) {
            return None;
        }
        imp.items.iter().find_map(|ii| match ii {
            syn::ImplItem::Const(k) if k.ident == name => Some(ConstItem {
                ty: k.ty.clone(),
                expr: k.expr.clone(),
            }),
            _ => None,
        })
    })
}

/// Whether `name` is written as Rust writes constants (`G`, `MAX_ITER`, `W2`).
fn constant_like(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}
