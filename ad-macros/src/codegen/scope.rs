//! Bounds the `let` nesting of generated blocks. Every `let` opens a scope nested in the
//! one before it, and rustc's debug-info writer recurses once per scope: a debug build of
//! a function whose block holds about 3,000 `let`s overflows rustc's stack (a SIGSEGV in
//! `DwarfCompileUnit::createAndAddScopeChildren`). A derivative has several `let`s per
//! operation of the user's code, so a few hundred user statements reach it. A long block
//! is therefore cut into chunks, each an inner block that hands the bindings used after
//! it out as a tuple: `let (a, mut b) = { …; (a, b) };`. The depth is then the chunk size
//! plus the number of chunks. Release code is the same: the tuple moves are free.
//!
//! This works on the emitted tokens, not the IR, so that every binding the code generator
//! writes (values, cells, windows, tapes, loop variables) is seen, whichever part wrote it.

use proc_macro2::{Delimiter, Ident, TokenStream, TokenTree};
use quote::quote;
use std::collections::{HashMap, HashSet};

/// A block with at most this many `let`s is left as it is.
const MAX_LETS: usize = 256;
/// The `let`s a chunk gathers before it is closed (it grows past this while closing it
/// would hand a borrow out).
const CHUNK_LETS: usize = 128;

/// One top-level `let` binding of a statement.
struct Binding {
    name: Ident,
    mutable: bool,
    /// For a binding initialised with a borrow (`&x[..]`, a window
    /// `if … { &mut x[..] } else { … }`) or a closure, the names it may borrow from: it
    /// leaves a chunk only if none of them was declared in that chunk.
    borrows_from: Option<HashSet<String>>,
}

/// `units` (each the tokens of one IR instruction) as one block body whose `let` nesting
/// is bounded; `after` is what follows them in the same scope (only the names it reads
/// matter).
pub fn bounded(units: Vec<TokenStream>, after: &TokenStream) -> TokenStream {
    let stmts: Vec<TokenStream> = units.iter().flat_map(statements).collect();
    let declared: Vec<Vec<Binding>> = stmts.iter().map(bindings).collect();
    let total: usize = declared.iter().map(Vec::len).sum();
    if total <= MAX_LETS {
        return quote!(#(#stmts)*);
    }
    // The last statement that reads each binding (`stmts.len()` for the code after). A
    // statement reads the bindings declared before it, the latest of each name.
    let mut last_read: HashMap<(usize, usize), usize> = HashMap::new();
    let mut current: HashMap<String, (usize, usize)> = HashMap::new();
    for (k, s) in stmts.iter().enumerate() {
        statement_reads(s, &mut |n| {
            if let Some(&d) = current.get(&n) {
                last_read.insert(d, k);
            }
        });
        for (j, b) in declared[k].iter().enumerate() {
            current.insert(b.name.to_string(), (k, j));
        }
    }
    read_names(after, &mut |n| {
        if let Some(&d) = current.get(&n) {
            last_read.insert(d, stmts.len());
        }
    });

    let mut out = TokenStream::new();
    let mut start = 0;
    let mut lets = 0;
    for end in 1..=stmts.len() {
        lets += declared[end - 1].len();
        if lets < CHUNK_LETS || end == stmts.len() {
            continue;
        }
        let handed: Vec<&Binding> = (start..end)
            .flat_map(|k| {
                declared[k]
                    .iter()
                    .enumerate()
                    .map(move |(j, b)| ((k, j), b))
            })
            .filter(|(d, _)| last_read.get(d).is_some_and(|&r| r >= end))
            .map(|(_, b)| b)
            .collect();
        let in_chunk: HashSet<String> = declared[start..end]
            .iter()
            .flatten()
            .map(|b| b.name.to_string())
            .collect();
        let borrows_inside = |b: &&Binding| {
            b.borrows_from
                .as_ref()
                .is_some_and(|from| !from.is_disjoint(&in_chunk))
        };
        if handed.iter().any(borrows_inside) {
            continue;
        }
        let body = &stmts[start..end];
        let names: Vec<&Ident> = handed.iter().map(|b| &b.name).collect();
        let pats: Vec<TokenStream> = handed
            .iter()
            .map(|b| {
                let n = &b.name;
                if b.mutable {
                    quote!(mut #n)
                } else {
                    quote!(#n)
                }
            })
            .collect();
        out.extend(match names.len() {
            0 => quote!({ #(#body)* }),
            1 => quote!(let #(#pats)* = { #(#body)* #(#names)* };),
            _ => quote!(let (#(#pats),*) = { #(#body)* (#(#names),*) };),
        });
        start = end;
        lets = 0;
    }
    let rest = &stmts[start..];
    out.extend(quote!(#(#rest)*));
    out
}

/// `unit` cut into its top-level statements: at each `;`, and after the closing brace of a
/// `for`, `loop`, `if … else …` or `{ … }` statement. Anything else (`if let`, `match`, a
/// trailing expression) stays one statement up to its `;` or the end.
fn statements(unit: &TokenStream) -> Vec<TokenStream> {
    let toks: Vec<TokenTree> = unit.clone().into_iter().collect();
    let mut out = Vec::new();
    let mut cur: Vec<TokenTree> = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        cur.push(t.clone());
        let ends = match t {
            TokenTree::Punct(p) => p.as_char() == ';',
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                let first_brace = cur[..cur.len() - 1].iter().all(
                    |c| !matches!(c, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace),
                );
                let head = |w: &str| matches!(&cur[0], TokenTree::Ident(i) if i == w);
                let if_not_let =
                    head("if") && !matches!(cur.get(1), Some(TokenTree::Ident(i)) if i == "let");
                let else_next = matches!(toks.get(k + 1), Some(TokenTree::Ident(i)) if i == "else");
                ((head("for") || head("loop")) && first_brace)
                    || cur.len() == 1
                    || (if_not_let && !else_next)
            }
            _ => false,
        };
        if ends {
            out.push(cur.drain(..).collect());
        }
    }
    if !cur.is_empty() {
        out.push(cur.into_iter().collect());
    }
    out
}

/// The `let` bindings at the top level of `stmt` (not `if let` / `while let`, not inside
/// any group).
fn bindings(stmt: &TokenStream) -> Vec<Binding> {
    let toks: Vec<TokenTree> = stmt.clone().into_iter().collect();
    let mut out = Vec::new();
    let mut k = 0;
    while k < toks.len() {
        let is_let =
            matches!(&toks[k], TokenTree::Ident(i) if i == "let") && !after_if_or_while(&toks, k);
        k += 1;
        if !is_let {
            continue;
        }
        // The pattern runs to `:`, `=` or `;`.
        let pat_start = k;
        while k < toks.len() && !is_punct(&toks[k], &[':', '=', ';']) {
            k += 1;
        }
        let mut names = Vec::new();
        pattern_names(&toks[pat_start..k], &mut names);
        // The type, if any, runs to `=` or `;`.
        while k < toks.len() && !is_punct(&toks[k], &['=', ';']) {
            k += 1;
        }
        let init = toks.get(k + 1..).unwrap_or_default();
        let borrows_from = borrowed_names(init);
        out.extend(names.into_iter().map(|(name, mutable)| Binding {
            name,
            mutable,
            borrows_from: borrows_from.clone(),
        }));
    }
    out
}

/// The names a pattern binds, each with whether it is `mut`.
fn pattern_names(pat: &[TokenTree], out: &mut Vec<(Ident, bool)>) {
    let mut mutable = false;
    for t in pat {
        match t {
            TokenTree::Ident(i) if i == "mut" => mutable = true,
            TokenTree::Ident(i) if i == "ref" || i == "_" => {}
            TokenTree::Ident(i) => out.push((i.clone(), mutable)),
            TokenTree::Group(g) => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                pattern_names(&inner, out);
            }
            TokenTree::Punct(p) if p.as_char() == ',' => mutable = false,
            _ => {}
        }
    }
}

/// For an initialiser that starts with a borrow (`&…`, or `if … { &… } …`, an index window),
/// the names right after each `&` / `&mut` / `&*`; for a closure (`|…| …`, `move |…|`),
/// every name it reads; otherwise `None`.
fn borrowed_names(init: &[TokenTree]) -> Option<HashSet<String>> {
    let starts_with_amp =
        |ts: &mut dyn Iterator<Item = TokenTree>| ts.next().is_some_and(|t| is_punct(&t, &['&']));
    let borrow = match init.first() {
        Some(t) if is_punct(t, &['&']) => true,
        Some(TokenTree::Ident(i)) if i == "if" => init.iter().any(|t| {
            matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace
                && starts_with_amp(&mut g.stream().into_iter()))
        }),
        Some(t) if is_punct(t, &['|']) => return Some(all_names(init)),
        Some(TokenTree::Ident(i)) if i == "move" => return Some(all_names(init)),
        _ => false,
    };
    if !borrow {
        return None;
    }
    let mut from = HashSet::new();
    after_amp(init, &mut from);
    Some(from)
}

fn after_amp(toks: &[TokenTree], from: &mut HashSet<String>) {
    for (k, t) in toks.iter().enumerate() {
        if let TokenTree::Group(g) = t {
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            after_amp(&inner, from);
        }
        if !is_punct(t, &['&']) {
            continue;
        }
        let owner = toks[k + 1..]
            .iter()
            .find(|n| !is_punct(n, &['*', '&']) && !matches!(n, TokenTree::Ident(i) if i == "mut"));
        match owner {
            Some(TokenTree::Ident(i)) => {
                from.insert(i.to_string());
            }
            Some(TokenTree::Group(g)) => read_names(&g.stream(), &mut |n| {
                from.insert(n);
            }),
            _ => {}
        }
    }
}

fn all_names(toks: &[TokenTree]) -> HashSet<String> {
    let mut out = HashSet::new();
    read_names(&toks.iter().cloned().collect(), &mut |n| {
        out.insert(n);
    });
    out
}

fn is_punct(t: &TokenTree, cs: &[char]) -> bool {
    matches!(t, TokenTree::Punct(p) if cs.contains(&p.as_char()))
}

/// The names a statement reads: every identifier in it but the patterns of its top-level
/// `let`s.
fn statement_reads(stmt: &TokenStream, f: &mut impl FnMut(String)) {
    let toks: Vec<TokenTree> = stmt.clone().into_iter().collect();
    let mut k = 0;
    while k < toks.len() {
        match &toks[k] {
            TokenTree::Ident(i) if i == "let" && !after_if_or_while(&toks, k) => {
                while k < toks.len() && !is_punct(&toks[k], &[':', '=', ';']) {
                    k += 1;
                }
                continue;
            }
            TokenTree::Ident(i) => f(i.to_string()),
            TokenTree::Group(g) => read_names(&g.stream(), f),
            _ => {}
        }
        k += 1;
    }
}

fn after_if_or_while(toks: &[TokenTree], k: usize) -> bool {
    matches!(k.checked_sub(1).map(|p| &toks[p]),
        Some(TokenTree::Ident(p)) if p == "if" || p == "while")
}

/// Every identifier in `ts`, at any depth.
fn read_names(ts: &TokenStream, f: &mut impl FnMut(String)) {
    for t in ts.clone() {
        match t {
            TokenTree::Ident(i) => f(i.to_string()),
            TokenTree::Group(g) => read_names(&g.stream(), f),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deepest `let` nesting of `ts`: the `let`s before a point in its block, plus those
    /// of every enclosing block before the group it sits in.
    fn let_depth(ts: &TokenStream) -> usize {
        let (mut lets, mut deepest) = (0, 0);
        for t in ts.clone() {
            match t {
                TokenTree::Ident(i) if i == "let" => {
                    lets += 1;
                    deepest = deepest.max(lets);
                }
                TokenTree::Group(g) => deepest = deepest.max(lets + let_depth(&g.stream())),
                _ => {}
            }
        }
        deepest
    }

    fn parse(s: &str) -> TokenStream {
        s.parse().unwrap()
    }

    /// Each statement of `got` up to its ` = {` (a chunk's tuple pattern), checking on the
    /// way that `got` is still one valid block.
    fn heads(got: &TokenStream) -> Vec<String> {
        let block: syn::Block = syn::parse2(quote!({ #got })).expect("a block");
        block
            .stmts
            .iter()
            .map(|s| {
                quote!(#s)
                    .to_string()
                    .split(" = {")
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    /// `n` statements `let vK = vK−1 + 1.0;` after `let mut acc = 0.0;`, each also adding
    /// into `acc`.
    fn chain(n: usize) -> Vec<TokenStream> {
        let mut units = vec![parse("let mut acc = 0.0; let v0 = 1.0;")];
        for k in 1..n {
            units.push(parse(&format!("let v{k} = v{} + 1.0; acc += v{k};", k - 1)));
        }
        units
    }

    #[test]
    fn a_short_block_is_left_as_it_is() {
        let units = chain(MAX_LETS - 1);
        let want: TokenStream = units.iter().cloned().collect();
        let got = bounded(units, &parse("acc"));
        assert_eq!(got.to_string(), want.to_string());
    }

    #[test]
    fn a_long_chain_is_cut_into_chunks_that_hand_on_what_is_read_later() {
        let n = 5000;
        let got = bounded(chain(n), &parse("acc"));
        let depth = let_depth(&got);
        assert!(
            depth <= CHUNK_LETS + 1 + n / CHUNK_LETS + 1,
            "nesting {depth}"
        );
        // Each chunk hands on `acc` (mutable) and its last `v`, nothing else.
        let heads = heads(&got);
        assert_eq!(heads[0], "let (mut acc , v126)");
        let lets = heads.iter().filter(|h| h.starts_with("let")).count();
        assert_eq!(lets, n / CHUNK_LETS + 1 + n % CHUNK_LETS);
    }

    #[test]
    fn a_borrow_stays_in_the_chunk_of_what_it_borrows() {
        // `w` borrows `buf` and both are read after the 128th `let`: the chunk grows until
        // `w` is no longer read.
        let mut units = vec![parse(
            "let mut buf = vec![0.0; 4]; \
             let w = if n > 0 { &mut buf[0..n] } else { &mut buf[..0] };",
        )];
        units.extend(chain(600));
        units.insert(300, parse("w[0] += v200;"));
        units.push(parse("buf[1] += v599;"));
        let got = bounded(units, &parse("acc"));
        assert_eq!(heads(&got)[0], "let (mut buf , mut acc , v298)");
        // A borrow whose owner comes from outside the chunk is handed on.
        let mut units = vec![parse("let w = &mut *out;")];
        units.extend(chain(300));
        units.push(parse("w[0] += v299;"));
        let got = bounded(units, &parse("acc"));
        assert_eq!(heads(&got)[0], "let (w , mut acc , v125)");
    }

    #[test]
    fn statements_split_at_semicolons_and_after_block_statements() {
        let unit = parse(
            "let a = 1; for i in 0..n { s += i; } if c { t } else if d { u } else { v } \
             loop { break; } { let z = 2; } x += 1; if let Some(y) = o { f(y) } else { g() } \
             let (p, q) = (1, 2);",
        );
        let got: Vec<String> = statements(&unit).iter().map(|s| s.to_string()).collect();
        // `if let` runs on to the next `;`: its first brace may be its pattern's.
        assert_eq!(got.len(), 7, "{got:#?}");
        assert!(got[6].starts_with("if let"), "{got:#?}");
        let names: Vec<String> = statements(&unit)
            .iter()
            .flat_map(bindings)
            .map(|b| b.name.to_string())
            .collect();
        assert_eq!(names, ["a", "p", "q"]);
    }

    /// A damped pendulum by the midpoint rule, `steps` steps unrolled, inside
    /// `for _ in 0..rounds` when `looped` (`tests/numeric/long_code.rs` checks its
    /// derivatives).
    fn pendulum(steps: usize, looped: bool) -> TokenStream {
        let step = quote! {
            let am = a + 0.025 * b;
            let bm = b + 0.025 * (-a.sin() - k * b);
            a += 0.05 * bm;
            b += 0.05 * (-am.sin() - k * bm);
            acc += a * a;
        };
        let steps: TokenStream = (0..steps).map(|_| step.clone()).collect();
        let body = if looped {
            quote!(for _ in 0..rounds { #steps })
        } else {
            steps
        };
        quote! {
            pub fn pendulum(x: &[f64], rounds: usize) -> f64 {
                let mut a = x[0];
                let mut b = x[1];
                let k = x[2];
                let mut acc = 0.0;
                #body
                acc + 0.5 * b * b
            }
        }
    }

    #[test]
    fn every_generated_function_of_a_long_one_nests_few_lets() {
        let modes = quote!(forward, reverse, forward(width = 4), reverse(width = 2));
        for looped in [false, true] {
            let out = crate::expand::expand(modes.clone(), pendulum(128, looped));
            let file: syn::File = syn::parse2(out).expect("the expansion parses");
            let mut generated = 0;
            for item in &file.items {
                let syn::Item::Fn(f) = item else { continue };
                if f.sig.ident == "pendulum" {
                    continue;
                }
                generated += 1;
                let block = &f.block;
                let depth = let_depth(&quote!(#block));
                // Unchunked: 5,600 to 14,900 (`_grad` only calls `_rev`); a debug build
                // overflows rustc's stack from about 3,000 on.
                assert!(depth < 600, "{}: nesting {depth}", f.sig.ident);
            }
            assert_eq!(generated, 5, "_fwd, _rev, _grad and the two batched");
        }
    }

    #[test]
    fn a_name_declared_again_hands_on_its_latest_binding() {
        // `s` is declared in the first chunk, read there, declared again in the second and
        // read after it: the first chunk hands on no `s`, the second hands on its own.
        let mut units = vec![parse("let s = 1.0;")];
        units.extend(chain(400));
        units.insert(10, parse("acc += s;"));
        units.insert(200, parse("let s = 2.0;"));
        units.push(parse("acc += s;"));
        let got = bounded(units, &parse("acc"));
        assert_eq!(heads(&got)[..2], ["let (mut acc , v125)", "let (s , v252)"]);
    }
}
