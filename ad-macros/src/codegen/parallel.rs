//! Parallel loops in generated code: the user's rayon loops and their derivatives,
//! emitted through `ad_rayon` (see `derivative::parallel` for how their writes are
//! classified).

use super::*;
use crate::derivative::parallel::Own;
use std::collections::BTreeSet;

impl Ctx<'_> {
    /// A parallel loop (the user's rayon loop, or its derivative) through `ad_rayon`: the
    /// buffers its body writes are split so that iteration `i` owns element (row) `i` of
    /// each, shadowed inside the closure by that view; its sums (parameters `acc + term`)
    /// and the outer cells it adds into are a deterministic blockwise reduction.
    pub(super) fn parallel_for(
        &self,
        i: Inst,
        range: &RangeSpec,
        index: Value,
        params: &[Value],
        inits: &[Value],
        body: Block,
    ) -> TokenStream {
        use InstKind::*;
        let f = self.f;
        let rt = self.rt();
        let span = f.parallel[&i];
        let fail = |msg: &str| {
            let msg = format!("phidiff internal error: {msg}");
            quote::quote_spanned!(span=> ::core::compile_error!(#msg);)
        };
        if range.rev || range.step.is_some() {
            return fail("a parallel loop runs over a plain range");
        }
        // What the body writes (each buffer by element or by row) and declares.
        let owned = match crate::derivative::parallel::ownership(f, i) {
            Ok(o) => o,
            Err(e) => return fail(&format!("a parallel loop {e}")),
        };
        let written: Vec<Buf> = owned.keys().copied().collect();
        let mut local_cells = HashSet::new();
        let mut added = Vec::new();
        let mut problem = None;
        f.walk(body, &mut |j| {
            if let CellDecl(c, _) = &f.inst(j).kind {
                local_cells.insert(*c);
            }
        });
        f.walk(body, &mut |j| match &f.inst(j).kind {
            CellAdd(c, _) if !local_cells.contains(c) && !added.contains(c) => added.push(*c),
            CellSet(c, _) if !local_cells.contains(c) => {
                problem.get_or_insert("a parallel loop assigns a variable declared outside it");
            }
            TapeEnsure(..) | SaveRow { .. } | ReturnRow { .. } | Swap(..) | CopyFrom { .. } => {
                problem.get_or_insert("a parallel loop resizes, swaps or copies a shared buffer");
            }
            _ => {}
        });
        f.walk(body, &mut |j| match &f.inst(j).kind {
            CellGet(c) if added.contains(c) => {
                problem.get_or_insert("a parallel loop reads a sum it is accumulating");
            }
            Len(b, _) if written.contains(b) => {
                problem.get_or_insert("a parallel loop takes the length of a buffer it writes");
            }
            Call { args, .. }
                if args
                    .iter()
                    .any(|a| matches!(a, CallArg::Buf { buf, .. } if written.contains(buf))) =>
            {
                problem.get_or_insert("a parallel loop passes a buffer it writes to a call");
            }
            _ => {}
        });
        // Each parameter is a sum: its only use is the addition that yields it.
        let ys = &f.block(body).yields;
        for (k, p) in params.iter().enumerate() {
            if f.ty(*p) != Ty::Float || !carried_sum(f, body, *p, ys[k]) {
                problem.get_or_insert("a parallel loop carries a value other than a float sum");
            }
        }
        if written.len() > 16 {
            problem.get_or_insert("a parallel loop writes more than 16 shared buffers");
        }
        if let Some(p) = problem {
            return fail(p);
        }
        let (s, e) = (self.val(range.start), self.val(range.end));
        let idx = self.value_ident(index);
        let ft = self.float.tokens();
        let zero = self.float_constant(-0.0);
        let own = Ident::new("own", Span::mixed_site());
        let sums = Ident::new("sums", Span::mixed_site());
        let parts: Vec<TokenStream> = written
            .iter()
            .map(|b| {
                let n = self.buf(*b);
                let data = if f.buf(*b).kind == BufKind::Tape && f.buf(*b).rank == 1 {
                    quote!(#n.slots_mut())
                } else {
                    quote!(&mut #n[..])
                };
                if let Some(halo) = f.halo.get(&i).and_then(|h| h.get(b)) {
                    let w = halo.width.map_or(quote!(1), |w| self.val(w));
                    let reach = halo.reach as usize;
                    return quote!(#rt::par::Halo { data: #data, width: #w, reach: #reach });
                }
                match owned[b] {
                    Own::Rows(None) => data,
                    Own::Rows(Some(w)) => {
                        let w = self.val(w);
                        quote!(#rt::par::Rows { data: #data, width: #w })
                    }
                    Own::Shifted(from) => {
                        let from = self.val(from);
                        quote!(#rt::par::Shifted { data: #data, from: #from })
                    }
                }
            })
            .collect();
        let views: Vec<Ident> = written.iter().map(|b| self.buf(*b)).collect();
        let param_names: Vec<Ident> = params.iter().map(|p| self.value_ident(*p)).collect();
        let cell_names: Vec<Ident> = added.iter().map(|c| self.cell(*c)).collect();
        let stmts = self.block(body);
        let mut partials: Vec<TokenStream> = ys.iter().map(|y| self.val(*y)).collect();
        partials.extend(cell_names.iter().map(|c| quote!(#c)));
        let k = partials.len();
        let unpack = if views.is_empty() {
            quote!()
        } else {
            // Each view as one contiguous window of the iteration's elements, held in locals
            // (see `ad_rayon::Window`).
            quote! {
                let (#(#views,)*) = #own;
                #(let #views = &mut #views.iteration();)*
            }
        };
        let copies = self.captured_copies(i, body, &added);
        let inner = quote! {
            #copies
            #unpack
            #(let mut #param_names: #ft = #zero;)*
            #(let mut #cell_names: #ft = #zero;)*
            #stmts
        };
        // The loop's scatter targets, by number.
        let mut targets: Vec<(usize, Buf)> = Vec::new();
        for (site, (lp, n)) in &f.scatter {
            if *lp == i {
                if let StoreAdd(b, ..) = f.inst(*site).kind {
                    if !targets.contains(&(*n, b)) {
                        targets.push((*n, b));
                    }
                }
            }
        }
        targets.sort();
        // A reverse sweep's blocks and iterations last to first (where they run serially).
        let (each_owned, each_owned_sum) = match f.descending.contains(&i) {
            false => (quote!(for_each_owned), quote!(for_each_owned_sum)),
            true => (quote!(for_each_owned_rev), quote!(for_each_owned_sum_rev)),
        };
        let call = if !targets.is_empty() {
            let scatter = Ident::new("scatter", Span::mixed_site());
            // A generic float may be a dual number, which has no atomic add: copies only.
            let generic = matches!(self.float, crate::parse::signature::FloatTy::Generic(_));
            let scatter_fn = match (generic, f.atomic_scatter) {
                (true, _) => quote!(for_each_owned_scatter_copies),
                (false, true) => quote!(for_each_owned_scatter_atomic),
                (false, false) => quote!(for_each_owned_scatter),
            };
            let tnames: Vec<Ident> = targets.iter().map(|(_, b)| self.buf(*b)).collect();
            let parts = if views.is_empty() {
                quote!(())
            } else {
                quote!((#(#parts,)*))
            };
            quote! {
                let #sums: [#ft; #k] = #rt::par::#scatter_fn(
                    #s..#e,
                    #parts,
                    vec![#(&mut #tnames[..]),*],
                    |#idx, #own, #scatter| {
                        #inner
                        [#(#partials),*]
                    },
                );
            }
        } else {
            match (views.is_empty(), k == 0) {
                (true, true) => quote!(#rt::par::for_each(#s..#e, |#idx| { #inner });),
                (true, false) => quote! {
                    let #sums: [#ft; #k] = #rt::par::sum(#s..#e, |#idx| { #inner [#(#partials),*] });
                },
                (false, true) => quote! {
                    #rt::par::#each_owned(#s..#e, (#(#parts,)*), |#idx, #own| { #inner });
                },
                (false, false) => quote! {
                    let #sums: [#ft; #k] = #rt::par::#each_owned_sum(#s..#e, (#(#parts,)*), |#idx, #own| {
                        #inner
                        [#(#partials),*]
                    });
                },
            }
        };
        let results = &f.inst(i).results;
        let mut post = quote!();
        for (n, (r, init)) in results.iter().zip(inits).enumerate() {
            if self.used.contains(r) {
                let rid = self.value_ident(*r);
                let init = self.val(*init);
                post.extend(quote!(let #rid = #init + #sums[#n];));
            }
        }
        for (n, c) in cell_names.iter().enumerate() {
            let at = params.len() + n;
            post.extend(quote!(#c += #sums[#at];));
        }
        if self.trip_used.contains(&i) {
            let trip = self.value_ident(*results.last().expect("trip"));
            post.extend(quote!(let #trip: usize = if #e > #s { #e - #s } else { 0 };));
        }
        quote! { #call #post }
    }

    /// `let x = x;` for each scalar (value or cell) defined outside parallel loop `l` that
    /// its body reads, and `let u = &u[..];` for each buffer it only reads. The closure
    /// captures them by reference, and a store through a written view may alias any
    /// memory as far as the optimizer can tell, so without the copies every use inside
    /// the body's loops loads them again (measured on the 2-D stencil: about 5 % of its
    /// forward sweep, 1 % of its reverse sweep).
    fn captured_copies(&self, l: Inst, body: Block, added: &[Cell]) -> TokenStream {
        let f = self.f;
        let mut inside = HashSet::new();
        let mut declared = HashSet::new();
        f.walk(body, &mut |j| {
            inside.insert(j);
            if let InstKind::CellDecl(c, _) = f.inst(j).kind {
                declared.insert(c);
            }
        });
        let outside = |v: Value| match f.value(v).def {
            ValueDef::Result(d, _) => d != l && !inside.contains(&d),
            ValueDef::LoopIndex(d) | ValueDef::LoopParam(d, _) => d != l && !inside.contains(&d),
        };
        let mut values = BTreeSet::new();
        let mut cells = BTreeSet::new();
        let mut read = BTreeSet::new();
        let mut other = HashSet::new();
        f.walk(body, &mut |j| {
            let kind = &f.inst(j).kind;
            for v in f.operands(j) {
                let konst = matches!(f.value(v).def, ValueDef::Result(d, 0)
                    if matches!(f.inst(d).kind, InstKind::FConst(_) | InstKind::IConst(_) | InstKind::BConst(_)));
                // A scalar parameter read inside the body (the seed, placed where the
                // reverse sweep needs it) is copied in too, not reached through the
                // closure's reference in every iteration.
                let param = matches!(f.value(v).def, ValueDef::Result(d, 0)
                    if matches!(f.inst(d).kind, InstKind::Param(_)));
                if (outside(v) || param) && !konst {
                    values.insert(v);
                }
            }
            if let InstKind::CellGet(c) = kind {
                if !declared.contains(c) && !added.contains(c) {
                    cells.insert(*c);
                }
            }
            for b in crate::derivative::reverse::touched(f, j) {
                match kind {
                    InstKind::Load(..) | InstKind::Len(..) => read.insert(b),
                    _ => other.insert(b),
                };
            }
        });
        // Once per name: each read of a parameter is a value of its own, all named after it.
        let mut names = HashSet::new();
        let values: Vec<Ident> = values
            .into_iter()
            .map(|v| self.value_ident(v))
            .filter(|id| names.insert(id.to_string()))
            .collect();
        let cells = cells.into_iter().map(|c| self.cell(c));
        let bufs = read
            .into_iter()
            .filter(|b| {
                let d = f.buf(*b);
                !other.contains(b)
                    && d.rank == 1
                    && matches!(d.kind, BufKind::Param(_) | BufKind::Local | BufKind::Shadow)
            })
            .map(|b| self.buf(b));
        quote! {
            #(let #values = #values;)*
            #(let #cells = #cells;)*
            #(let #bufs = &#bufs[..];)*
        }
    }
}

/// Whether loop parameter `p`, yielded back as `y` by `body`, is a sum: `y` is `p + term`
/// and that is `p`'s only use, or `y` is the result of an inner `for` loop that starts its
/// own sum from `p` or from such a result (the sum of a row, `lower::fuse_sums_into_writers`;
/// a row split in three, `derivative::reverse::split`), or of an `if`
/// each of whose branches yields `p` or a sum of it, and reads `p` nowhere else (a term
/// added in both branches, `derivative::reverse::twin_if`).
fn carried_sum(f: &Function, body: Block, p: Value, y: Value) -> bool {
    if y == p {
        return true;
    }
    let reads = |b: Block| {
        let mut uses = 0;
        f.walk(b, &mut |j| {
            uses += f.operands(j).iter().filter(|o| **o == p).count()
        });
        uses
    };
    let uses = reads(body);
    let ValueDef::Result(j, m) = f.value(y).def else {
        return false;
    };
    if !f.block(body).insts.contains(&j) {
        return false;
    }
    if let InstKind::If {
        cond,
        then_blk,
        else_blk,
    } = &f.inst(j).kind
    {
        let m = m as usize;
        return *cond != p
            && uses == reads(*then_blk) + reads(*else_blk)
            && [then_blk, else_blk].iter().all(|arm| {
                let ya = f.block(**arm).yields[m];
                (ya == p && reads(**arm) == 0) || carried_sum(f, **arm, p, ya)
            });
    }
    if uses != 1 {
        return false;
    }
    match &f.inst(j).kind {
        InstKind::Binary(BinOp::Add, a, b) => m == 0 && (*a == p || *b == p),
        InstKind::For {
            params,
            inits,
            body: inner,
            exit,
            ..
        } if !f.parallel.contains_key(&j) && exit.is_empty() => {
            let m = m as usize;
            // The loop starts from `p`, or from where the loop before it left the sum
            // (`derivative::reverse::split` makes one loop three).
            m < params.len()
                && (inits[m] == p
                    || (f.uses_in(body, inits[m]) == 1 && carried_sum(f, body, p, inits[m])))
                && carried_sum(f, *inner, params[m], f.block(*inner).yields[m])
        }
        _ => false,
    }
}
