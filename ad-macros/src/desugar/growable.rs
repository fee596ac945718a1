//! Growable `Vec`s filled by a loop, desugared before lowering (buffers keep one length in
//! the IR). `let mut v = Vec::new();` (or `Vec::with_capacity(n)`, typed or not), followed
//! in the same block by a `for` loop that pushes to `v` once per iteration (one `v.push(e);`
//! at the top level of its body, no `break`/`continue` in it, `v` not used before the loop
//! nor pushed to after it) becomes a buffer of the loop's trip count, counted first by the
//! same loop header:
//!
//! ```text
//! let mut n = 0usize; for PAT in ITER { n += 1; }
//! let mut v = vec![0.0; n]; let mut k = 0usize;
//! for PAT in ITER { ..; v[k] = e; k += 1; .. }
//! ```
//!
//! The counting loop is integer work over the same iterator (LLVM folds it to a length for
//! ranges and slices); a `filter` in the header is counted as the loop runs.
//!
//! Otherwise the `Vec` may be filled by several statements in a row: `v.push(e);` at the
//! top level, `v.extend(iter);` / `v.extend_from_slice(s);` (each a loop of pushes), and
//! `for` loops whose bodies push under conditions, several times, with `break` and
//! `continue` (no push inside a nested loop or closure). Each loop's pushes per iteration
//! are counted in its body's text, so a counting loop over its header gives an upper
//! bound of what it pushes; the buffer is allocated at that bound before the first fill,
//! the pushes store at a running index, and after the last fill `v` is the view of the
//! part written:
//!
//! ```text
//! let mut n = 0usize; n += 1; for PAT in ITER { n += P; } ..
//! let mut all = vec![0.0; n]; let mut k = 0usize;
//! all[k] = a; k += 1; for PAT in ITER { if c { all[k] = e; k += 1; } } ..
//! let v = &mut all[..k];
//! ```
//!
//! The counts are taken before the first fill, so a loop's header may not read a variable
//! the statements before it (in the run) assign. Anything else keeps the `vec_new_push`
//! error.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::visit_mut::VisitMut;
use syn::{Expr, Stmt};

/// Desugars the pushing loops of `block` and of the blocks inside it.
pub fn desugar(block: &mut syn::Block) {
    Growable { next: 0 }.visit_block_mut(block);
}

struct Growable {
    next: usize,
}

/// Whether `tokens` mention the identifier `name`.
fn mentions(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == name,
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), name),
        _ => false,
    })
}

/// Whether `tokens` call a method of `name` that changes its length (`v.push(..)`).
fn grows(tokens: TokenStream, name: &str) -> bool {
    let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    trees.iter().enumerate().any(|(k, t)| match t {
        proc_macro2::TokenTree::Group(g) => grows(g.stream(), name),
        proc_macro2::TokenTree::Ident(i) if i == name => {
            matches!(trees.get(k + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '.')
                && matches!(trees.get(k + 2), Some(proc_macro2::TokenTree::Ident(m))
                    if ["push", "extend", "extend_from_slice", "insert", "append", "resize", "truncate", "pop", "clear"]
                        .iter()
                        .any(|g| m == g))
        }
        _ => false,
    })
}

/// `let mut v = Vec::new();` / `Vec::with_capacity(..)`: `v`, and whether its declared
/// element type is an integer.
fn new_vec(st: &Stmt) -> Option<(syn::Ident, bool)> {
    let Stmt::Local(local) = st else { return None };
    let (pat, ty) = match &local.pat {
        syn::Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
        p => (p, None),
    };
    let syn::Pat::Ident(pi) = pat else {
        return None;
    };
    pi.mutability?;
    let init = local.init.as_ref()?;
    if init.diverge.is_some() {
        return None;
    }
    let Expr::Call(c) = &*init.expr else {
        return None;
    };
    let Expr::Path(p) = &*c.func else { return None };
    let segs = crate::lower::consts::path_names(&p.path);
    let ctor = matches!(
        segs.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        [.., "Vec", "new" | "with_capacity"]
    );
    if !ctor {
        return None;
    }
    let elem = ty
        .map(|t| t.to_token_stream().to_string())
        .unwrap_or_default();
    let int = ["usize", "isize", "u32", "i32", "u64", "i64"]
        .iter()
        .any(|i| elem.replace(' ', "") == format!("Vec<{i}>"));
    Some((pi.ident.clone(), int))
}

/// The one `v.push(e);` at the top level of a loop body: its position and `e`.
fn the_push(body: &syn::Block, v: &syn::Ident) -> Option<(usize, Expr)> {
    let mut found = None;
    for (k, st) in body.stmts.iter().enumerate() {
        match st {
            Stmt::Expr(Expr::MethodCall(m), Some(_))
                if m.method == "push"
                    && m.args.len() == 1
                    && matches!(&*m.receiver, Expr::Path(p) if p.path.is_ident(v)) =>
            {
                if found.is_some() || mentions(m.args[0].to_token_stream(), &v.to_string()) {
                    return None;
                }
                found = Some((k, m.args[0].clone()));
            }
            other => {
                if mentions(other.to_token_stream(), &v.to_string()) {
                    return None;
                }
            }
        }
    }
    let scan = super::scan::scan_stmts(&body.stmts);
    if scan.brk || scan.cont || scan.ret {
        return None;
    }
    found
}

/// An upper bound of the pushes a piece of code makes: `fixed`, plus what the loops in
/// `loops` count when run (each a `for` over the pushing loop's header, counting into
/// the counter its `TokenStream` names as `__PD_N`).
#[derive(Default)]
struct Count {
    fixed: usize,
    loops: Vec<TokenStream>,
}

impl Count {
    fn add(mut self, other: Count) -> Count {
        self.fixed += other.fixed;
        self.loops.extend(other.loops);
        self
    }

    /// Either of two: the larger where both are fixed, else both (still a bound).
    fn either(self, other: Count) -> Count {
        if self.loops.is_empty() && other.loops.is_empty() {
            Count {
                fixed: self.fixed.max(other.fixed),
                loops: Vec::new(),
            }
        } else {
            self.add(other)
        }
    }

    /// Statements adding the count to `n`.
    fn stmts(&self, n: &syn::Ident) -> TokenStream {
        let fixed = self.fixed;
        let loops = self.loops.iter().map(|l| {
            let mut out = TokenStream::new();
            for t in l.clone() {
                out.extend(rename(t, n));
            }
            out
        });
        let add = (fixed > 0).then(|| quote!(#n += #fixed;));
        quote!(#add #(#loops)*)
    }
}

/// `t` with the placeholder counter `__PD_N` renamed `n`.
fn rename(t: proc_macro2::TokenTree, n: &syn::Ident) -> TokenStream {
    match t {
        proc_macro2::TokenTree::Ident(i) if i == "__PD_N" => quote!(#n),
        proc_macro2::TokenTree::Group(g) => {
            let mut inner = TokenStream::new();
            for t in g.stream() {
                inner.extend(rename(t, n));
            }
            let mut out = proc_macro2::Group::new(g.delimiter(), inner);
            out.set_span(g.span());
            quote!(#out)
        }
        other => quote!(#other),
    }
}

/// A bound of the `v.push(..)` statements `stmts` run, looking into `if`/`match`/blocks
/// and nested `for` loops whose headers read none of the names in `bound` (those the
/// enclosing loop bodies assign or bind: the counting loops do not run them); `None` when
/// a push is inside another loop or a closure, or `v` is used otherwise.
fn pushes_in(stmts: &[Stmt], v: &syn::Ident, bound: &[String]) -> Option<Count> {
    let name = v.to_string();
    let mut n = Count::default();
    // `let`s the counting loops run again before a nested loop whose header reads them
    // (`let prev = &m[k];` then `for (a, b) in row.iter().zip(prev)`).
    let mut replay: Vec<&Stmt> = Vec::new();
    let mut bound = bound.to_vec();
    let written = written_names(stmts);
    for st in stmts {
        if let Some(id) = replayable(st, &name, &bound, &written) {
            bound.retain(|b| *b != id);
            replay.push(st);
            continue;
        }
        if !mentions(st.to_token_stream(), &name) {
            continue;
        }
        match st {
            Stmt::Expr(e, _) => {
                let mut c = pushes_in_expr(e, v, &bound)?;
                if !replay.is_empty() {
                    c.loops = c
                        .loops
                        .into_iter()
                        .map(|l| quote!({ #(#replay)* #l }))
                        .collect();
                }
                n = n.add(c)
            }
            _ => return None,
        }
    }
    Some(n)
}

/// The name `st` binds when it is a `let` a counting loop may run again: one immutable
/// name, bound once among `written` (the names the statements around it write), to a value
/// that reads neither `v` nor any name in `bound` and writes nothing.
fn replayable(st: &Stmt, v: &str, bound: &[String], written: &[String]) -> Option<String> {
    let Stmt::Local(l) = st else {
        return None;
    };
    let pat = match &l.pat {
        syn::Pat::Type(t) => &*t.pat,
        p => p,
    };
    let syn::Pat::Ident(pi) = pat else {
        return None;
    };
    if pi.mutability.is_some() || pi.by_ref.is_some() || pi.subpat.is_some() {
        return None;
    }
    let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
    let id = pi.ident.to_string();
    let reads = init.expr.to_token_stream();
    let pure = written_names(std::slice::from_ref(st)) == [id.clone()];
    let once = written.iter().filter(|w| **w == id).count() == 1;
    let free = !mentions(reads.clone(), v) && !bound.iter().any(|b| mentions(reads.clone(), b));
    (pure && once && free).then_some(id)
}

fn pushes_in_expr(e: &Expr, v: &syn::Ident, bound: &[String]) -> Option<Count> {
    let name = v.to_string();
    if !mentions(e.to_token_stream(), &name) {
        return Some(Count::default());
    }
    match e {
        Expr::MethodCall(m)
            if m.method == "push"
                && m.args.len() == 1
                && matches!(&*m.receiver, Expr::Path(p) if p.path.is_ident(v))
                && !mentions(m.args[0].to_token_stream(), &name) =>
        {
            Some(Count {
                fixed: 1,
                loops: Vec::new(),
            })
        }
        Expr::If(i) => {
            if mentions(i.cond.to_token_stream(), &name) {
                return None;
            }
            let a = pushes_in(&i.then_branch.stmts, v, bound)?;
            let b = match &i.else_branch {
                Some((_, e)) => pushes_in_expr(e, v, bound)?,
                None => Count::default(),
            };
            Some(a.either(b))
        }
        Expr::Block(b) => pushes_in(&b.block.stmts, v, bound),
        Expr::Match(m) => {
            if mentions(m.expr.to_token_stream(), &name) {
                return None;
            }
            let mut most = Count::default();
            for arm in &m.arms {
                if arm
                    .guard
                    .as_ref()
                    .is_some_and(|(_, g)| mentions(g.to_token_stream(), &name))
                {
                    return None;
                }
                most = most.either(pushes_in_expr(&arm.body, v, bound)?);
            }
            Some(most)
        }
        Expr::ForLoop(f) => {
            let header = f.expr.to_token_stream();
            if mentions(header.clone(), &name) || bound.iter().any(|b| mentions(header.clone(), b))
            {
                return None;
            }
            let mut inner: Vec<String> = bound.to_vec();
            inner.extend(written_names(&f.body.stmts));
            let body = pushes_in(&f.body.stmts, v, &inner)?;
            let counter = format_ident!("__PD_N");
            let counting = body.stmts(&counter);
            let (pat, iter) = (&f.pat, &f.expr);
            Some(Count {
                fixed: 0,
                loops: vec![quote!(for #pat in #iter { #counting })],
            })
        }
        _ => None,
    }
}

/// `stmts` with each `v.push(e)` replaced by a store at the running index `k` of `all`.
struct PushToStore<'a> {
    v: &'a syn::Ident,
    all: &'a syn::Ident,
    k: &'a syn::Ident,
}

impl VisitMut for PushToStore<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::MethodCall(m) = e {
            if m.method == "push"
                && m.args.len() == 1
                && matches!(&*m.receiver, Expr::Path(p) if p.path.is_ident(self.v))
            {
                let (all, k, value) = (self.all, self.k, &m.args[0]);
                *e = syn::parse_quote_spanned!(m.method.span()=> { #all[#k] = #value; #k += 1; });
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// The names `stmts` assign or bind (`x = ..`, `x += ..`, `let x`, `&mut x`).
fn written_names(stmts: &[Stmt]) -> Vec<String> {
    struct W(Vec<String>);
    impl<'ast> syn::visit::Visit<'ast> for W {
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            self.0.extend(idents(&a.left));
            syn::visit::visit_expr_assign(self, a);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            if super::assigns_in_place(&b.op) {
                self.0.extend(idents(&b.left));
            }
            syn::visit::visit_expr_binary(self, b);
        }
        fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
            if r.mutability.is_some() {
                self.0.extend(idents(&r.expr));
            }
            syn::visit::visit_expr_reference(self, r);
        }
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            // A method that changes its receiver (`x.swap(..)`, `x.iter_mut()`).
            let method = m.method.to_string();
            let mutates = method.ends_with("_mut")
                || [
                    "push",
                    "extend",
                    "extend_from_slice",
                    "insert",
                    "append",
                    "resize",
                    "truncate",
                    "pop",
                    "clear",
                    "swap",
                    "sort",
                    "sort_by",
                    "reverse",
                    "fill",
                    "copy_from_slice",
                    "clone_from_slice",
                    "rotate_left",
                    "rotate_right",
                ]
                .contains(&method.as_str());
            if mutates {
                let mut root = &*m.receiver;
                loop {
                    match root {
                        Expr::MethodCall(r) => root = &r.receiver,
                        Expr::Field(f) => root = &f.base,
                        Expr::Index(i) => root = &i.expr,
                        Expr::Paren(p) => root = &p.expr,
                        Expr::Reference(r) => root = &r.expr,
                        Expr::Unary(u) => root = &u.expr,
                        _ => break,
                    }
                }
                self.0.extend(idents(root));
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    fn idents(e: &Expr) -> Vec<String> {
        let mut out = Vec::new();
        collect(e.to_token_stream(), &mut out);
        out
    }
    fn collect(t: TokenStream, out: &mut Vec<String>) {
        for tt in t {
            match tt {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => collect(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut w = W(Vec::new());
    for st in stmts {
        syn::visit::Visit::visit_stmt(&mut w, st);
    }
    w.0
}

/// `v.extend(iter);` / `v.extend_from_slice(s);` as the loop of pushes it is.
fn extend_as_loop(st: &Stmt, v: &syn::Ident) -> Option<Stmt> {
    let Stmt::Expr(Expr::MethodCall(m), Some(_)) = st else {
        return None;
    };
    if !matches!(&*m.receiver, Expr::Path(p) if p.path.is_ident(v)) || m.args.len() != 1 {
        return None;
    }
    let arg = &m.args[0];
    let item = format_ident!("__pd_item");
    match m.method.to_string().as_str() {
        "extend" => Some(syn::parse_quote!(for #item in #arg { #v.push(#item); })),
        "extend_from_slice" => {
            Some(syn::parse_quote!(for &#item in (#arg).iter() { #v.push(#item); }))
        }
        _ => None,
    }
}

impl VisitMut for Growable {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, b);
        let mut k = 0;
        while k < b.stmts.len() {
            if let Some(stmts) = self
                .rewrite(&b.stmts, k)
                .or_else(|| self.rewrite_run(&b.stmts, k))
            {
                let (at, rest) = stmts;
                b.stmts.splice(k..at, rest);
            }
            k += 1;
        }
    }
}

impl Growable {
    /// If `stmts[k]` makes a growable `Vec` that the statements after it fill in a run
    /// (pushes, `extend`s, pushing loops; see the module's documentation): the end of the
    /// run and the statements replacing `stmts[k..end]`.
    fn rewrite_run(&mut self, stmts: &[Stmt], k: usize) -> Option<(usize, Vec<Stmt>)> {
        let (v, int) = new_vec(&stmts[k])?;
        let name = v.to_string();
        // The run ends at the last statement that grows `v`; nothing after it grows `v`.
        let last = (k + 1..stmts.len())
            .rev()
            .find(|&l| grows(stmts[l].to_token_stream(), &name))?;
        self.next += 1;
        let n = format_ident!("__pd_len{}", self.next);
        let all = format_ident!("__pd_all{}", self.next);
        let at = format_ident!("__pd_at{}", self.next);
        let mut counts: Vec<Stmt> = Vec::new();
        let mut fills: Vec<Stmt> = Vec::new();
        for l in k + 1..=last {
            let st = extend_as_loop(&stmts[l], &v).unwrap_or_else(|| stmts[l].clone());
            if !mentions(st.to_token_stream(), &name) {
                fills.push(st);
                continue;
            }
            let pushes = match &st {
                Stmt::Expr(Expr::ForLoop(f), _) => {
                    if mentions(f.expr.to_token_stream(), &name) {
                        return None;
                    }
                    // The count is taken before the run: the header may read nothing the
                    // run assigns before the loop.
                    let written = written_names(&stmts[k + 1..l]);
                    if written
                        .iter()
                        .any(|w| mentions(f.expr.to_token_stream(), w))
                    {
                        return None;
                    }
                    let p = pushes_in_expr(&Expr::ForLoop(f.clone()), &v, &[])?;
                    let c = p.stmts(&n);
                    counts.push(syn::parse_quote!({ #c }));
                    p.fixed + p.loops.len()
                }
                Stmt::Expr(e, _) => {
                    let p = pushes_in_expr(e, &v, &[])?;
                    let c = p.stmts(&n);
                    counts.push(syn::parse_quote!({ #c }));
                    p.fixed + p.loops.len()
                }
                _ => return None,
            };
            if pushes == 0 {
                return None;
            }
            let mut st = st;
            PushToStore {
                v: &v,
                all: &all,
                k: &at,
            }
            .visit_stmt_mut(&mut st);
            fills.push(st);
        }
        let zero = if int { quote!(0) } else { quote!(0.0) };
        let mut out: Vec<Stmt> = vec![syn::parse_quote!(let mut #n: usize = 0;)];
        out.extend(counts);
        out.push(syn::parse_quote!(let mut #all = vec![#zero; #n];));
        out.push(syn::parse_quote!(let mut #at: usize = 0;));
        out.extend(fills);
        out.push(syn::parse_quote!(let #v = &mut #all[..#at];));
        Some((last + 1, out))
    }

    /// If `stmts[k]` makes a growable `Vec` that a later loop fills: the end of what is
    /// replaced (after the loop) and the statements replacing `stmts[k..end]`.
    fn rewrite(&mut self, stmts: &[Stmt], k: usize) -> Option<(usize, Vec<Stmt>)> {
        let (v, int) = new_vec(&stmts[k])?;
        let name = v.to_string();
        let (l, f) = stmts
            .iter()
            .enumerate()
            .skip(k + 1)
            .find_map(|(l, st)| match st {
                Stmt::Expr(Expr::ForLoop(f), _) if mentions(f.body.to_token_stream(), &name) => {
                    Some((l, f))
                }
                _ => None,
            })?;
        let between_uses = stmts[k + 1..l]
            .iter()
            .any(|st| mentions(st.to_token_stream(), &name));
        let pushed_later = stmts[l + 1..]
            .iter()
            .any(|st| grows(st.to_token_stream(), &name));
        if between_uses || pushed_later || mentions(f.expr.to_token_stream(), &name) {
            return None;
        }
        let (at, value) = the_push(&f.body, &v)?;
        self.next += 1;
        let n = format_ident!("__pd_len{}", self.next);
        let i = format_ident!("__pd_at{}", self.next);
        let (pat, iter) = (&f.pat, &f.expr);
        let zero = if int { quote!(0) } else { quote!(0.0) };
        let mut body = f.body.clone();
        body.stmts[at] = syn::parse_quote!(#v[#i] = #value;);
        body.stmts.insert(at + 1, syn::parse_quote!(#i += 1;));
        let attrs = &f.attrs;
        let label = &f.label;
        // The statements between (which do not use `v`) first: they may change what the
        // loop header reads, so the count is taken right before the loop.
        let mut out: Vec<Stmt> = stmts[k + 1..l].to_vec();
        out.extend([
            syn::parse_quote!(let mut #n: usize = 0;),
            syn::parse_quote!(for #pat in #iter { #n += 1; }),
            syn::parse_quote!(let mut #v = vec![#zero; #n];),
            syn::parse_quote!(let mut #i: usize = 0;),
        ]);
        out.push(syn::parse_quote!(#(#attrs)* #label for #pat in #iter #body));
        Some((l + 1, out))
    }
}
