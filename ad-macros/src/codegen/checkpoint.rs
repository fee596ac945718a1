//! Checkpointed loops in generated code: the `Checkpointer` of each loop, its forward
//! steps, and the reverse phase's `match` over its actions (see
//! `derivative::reverse::checkpoint`).

use super::*;

impl Ctx<'_> {
    /// A `CkNew`, `CkForwardStep`, `CkEndForward` or `CkReverse` instruction.
    pub(super) fn checkpoint_inst(&self, i: Inst) -> TokenStream {
        use InstKind::*;
        let data = self.f.inst(i);
        let rt = self.rt();
        // A function mixing `f32` and `f64` keeps its snapshots in `f64`: an `f32` goes
        // there and back exactly.
        let ft = match self.mixed {
            Some(_) => quote!(f64),
            None => self.float.tokens(),
        };
        match &data.kind {
            CkNew { ck, spec, trip } => {
                let name = ck_name(*ck);
                let ck = quote!(#rt::checkpoint);
                let scheme = match spec.scheme {
                    CkScheme::Revolve(n) => {
                        let n = self.val(n);
                        quote!(Revolve { snapshots: #n as usize })
                    }
                    CkScheme::Periodic(n) => {
                        let n = self.val(n);
                        quote!(Periodic { every: #n as usize })
                    }
                    CkScheme::Online(n) => {
                        let n = self.val(n);
                        quote!(Online { snapshots: #n as usize })
                    }
                };
                let storage = if spec.disk {
                    quote!(Disk)
                } else {
                    quote!(Memory)
                };
                let trip = match trip {
                    Some(t) => {
                        let t = self.val(*t);
                        quote!(::core::option::Option::Some(#t as usize))
                    }
                    None => quote!(::core::option::Option::None),
                };
                // A bad parameter (`snapshots = k` with `k == 0`) or storage is reported
                // with the attribute it came from.
                let attr = crate::diagnostics::source_text(&spec.attr)
                    .replace('{', "{{")
                    .replace('}', "}}");
                let context = format!("phidiff: `{attr}`: {{}}");
                quote! {
                    let mut #name = #ck::Checkpointer::<#ft>::try_new(
                        #ck::Scheme::#scheme,
                        #ck::StorageKind::#storage,
                        #trip,
                    )
                    .unwrap_or_else(|e| ::core::panic!(#context, e));
                }
            }
            CkForwardStep { ck, step, state } => {
                let name = ck_name(*ck);
                let step = self.val(*step);
                let snap = Ident::new("snap", Span::mixed_site());
                let (bind, save) = self.ck_save(&snap, state);
                let call = quote! {
                    { #bind #name.forward_step(#step as usize, |#snap| { #save }) }
                };
                let r = data.results[0];
                if self.used.contains(&r) {
                    let id = self.value_ident(r);
                    quote!(let #id = #call == #rt::checkpoint::StepMode::Taped;)
                } else {
                    quote!(#call;)
                }
            }
            CkEndForward { ck, count } => {
                let name = ck_name(*ck);
                let count = self.val(*count);
                quote!(#name.end_forward(#count as usize);)
            }
            CkReverse {
                ck,
                state,
                advance,
                taped,
                kept,
                adjoint,
            } => {
                let name = ck_name(*ck);
                let snap = Ident::new("snap", Span::mixed_site());
                let (save_bind, save) = self.ck_save(&snap, state);
                let (load_bind, load, load_after) = self.ck_load(&snap, state);
                let (advance, taped, kept, adjoint) = (
                    self.block(*advance),
                    self.block(*taped),
                    self.block(*kept),
                    self.block(*adjoint),
                );
                let action = Ident::new("action", Span::mixed_site());
                let slot = Ident::new("slot", Span::mixed_site());
                let (from, to) = (
                    Ident::new("from", Span::mixed_site()),
                    Ident::new("to", Span::mixed_site()),
                );
                let a = quote!(#rt::checkpoint::Action);
                // Before the adjoint: the taped re-run of a `Reverse` step, or (a loop
                // reversed from restored states) the kept state of the forward phase's
                // last step for an `Adjoint`.
                let before = match (taped.is_empty(), kept.is_empty()) {
                    (true, true) => quote!(),
                    (false, true) => quote!(if let #a::Reverse { .. } = #action { #taped }),
                    (true, false) => quote!(if let #a::Adjoint { .. } = #action { #kept }),
                    (false, false) => {
                        quote!(if let #a::Reverse { .. } = #action { #taped } else { #kept })
                    }
                };
                quote! {
                    loop {
                        let #action = #name.next_reverse();
                        match #action {
                            #a::Store { #slot, .. } => {
                                #save_bind
                                #name.store(#slot, |#snap| { #save });
                            }
                            #a::Restore { #slot, .. } => {
                                #load_bind
                                #name.restore(#slot, |#snap| { #load });
                                #load_after
                            }
                            #a::Advance { #from, #to } => {
                                for _ in #from..#to { #advance }
                            }
                            #a::Reverse { .. } | #a::Adjoint { .. } => {
                                #before
                                #adjoint
                            }
                            #a::Done => break,
                        }
                    }
                    // Snapshots (and a disk directory) go now, not at the end of `_rev`.
                    ::core::mem::drop(#name);
                }
            }
            _ => unreachable!("not a checkpoint instruction"),
        }
    }

    /// Statements pushing a checkpointed loop's state into snapshot `snap`, after
    /// bindings that borrow the buffers as slices: the closure captures those, not the
    /// buffers' own variables, whose addresses then never leave the function.
    fn ck_save(&self, snap: &Ident, state: &[CkItem]) -> (TokenStream, TokenStream) {
        let (mut bind, mut out) = (quote!(), quote!());
        for (k, item) in state.iter().enumerate() {
            let (v, ty, narrow) = match item {
                CkItem::Value(v) => (self.val(*v), self.f.ty(*v), self.class(*v).is_f32()),
                CkItem::Cell(c) => {
                    let n = self.cell(*c);
                    (
                        quote!(#n),
                        self.f.cells[c.index()].ty,
                        self.cell_class(*c).is_f32(),
                    )
                }
                CkItem::Buf(b) => {
                    let data = self.f.buf(*b);
                    let n = self.buf(*b);
                    let s = Ident::new(&format!("state_{k}"), Span::mixed_site());
                    bind.extend(quote!(let #s = &#n[..];));
                    let x = Ident::new("x", Span::mixed_site());
                    let row = Ident::new("row", Span::mixed_site());
                    let narrow = self.buf_class(*b).is_f32();
                    let push = |src: TokenStream| match data.elem {
                        Ty::Float if narrow => {
                            quote!(for #x in #src.iter() { #snap.push_float(*#x as f64); })
                        }
                        Ty::Float => quote!(#snap.push_floats(&#src[..]);),
                        _ => quote!(for #x in #src.iter() { #snap.push_int(*#x as i128); }),
                    };
                    out.extend(if data.rank == 3 {
                        let p = push(quote!(__col));
                        quote!(for #row in #s.iter() { for __col in #row.iter() { #p } })
                    } else if data.rank == 2 {
                        let p = push(quote!(#row));
                        quote!(for #row in #s.iter() { #p })
                    } else {
                        push(quote!(#s))
                    });
                    continue;
                }
            };
            let s = Ident::new(&format!("state_{k}"), Span::mixed_site());
            bind.extend(quote!(let #s = #v;));
            out.extend(match ty {
                Ty::Float if narrow => quote!(#snap.push_float(#s as f64);),
                Ty::Float => quote!(#snap.push_float(#s);),
                _ => quote!(#snap.push_int(#s as i128);),
            });
        }
        (bind, out)
    }

    /// Statements setting a checkpointed loop's state (cells and buffers) from snapshot
    /// reader `snap`, in the order of [`ck_save`](Self::ck_save): (bindings before the
    /// closure, its body, statements after it). Scalars go through fresh temporaries and
    /// buffers through slices, so the closure captures neither the cells nor the buffers.
    fn ck_load(&self, snap: &Ident, state: &[CkItem]) -> (TokenStream, TokenStream, TokenStream) {
        let (mut bind, mut out, mut after) = (quote!(), quote!(), quote!());
        for (k, item) in state.iter().enumerate() {
            let s = Ident::new(&format!("state_{k}"), Span::mixed_site());
            match item {
                CkItem::Value(_) => unreachable!("the reverse phase restores cells"),
                CkItem::Cell(c) => {
                    let n = self.cell(*c);
                    bind.extend(quote!(let mut #s = #n;));
                    out.extend(match self.f.cells[c.index()].ty {
                        Ty::Float if self.cell_class(*c).is_f32() => {
                            quote!(#s = #snap.float() as f32;)
                        }
                        Ty::Float => quote!(#s = #snap.float();),
                        Ty::Int => quote!(#s = #snap.int() as _;),
                        Ty::Bool => quote!(#s = #snap.int() != 0;),
                    });
                    after.extend(quote!(#n = #s;));
                }
                CkItem::Buf(b) => {
                    let data = self.f.buf(*b);
                    let n = self.buf(*b);
                    bind.extend(quote!(let #s = &mut #n[..];));
                    let x = Ident::new("x", Span::mixed_site());
                    let row = Ident::new("row", Span::mixed_site());
                    let narrow = self.buf_class(*b).is_f32();
                    let load = |dst: TokenStream| match data.elem {
                        Ty::Float if narrow => {
                            quote!(for #x in #dst.iter_mut() { *#x = #snap.float() as f32; })
                        }
                        Ty::Float => quote!(#snap.floats_into(&mut #dst[..]);),
                        Ty::Int => {
                            quote!(for #x in #dst.iter_mut() { *#x = #snap.int() as _; })
                        }
                        Ty::Bool => {
                            quote!(for #x in #dst.iter_mut() { *#x = #snap.int() != 0; })
                        }
                    };
                    out.extend(if data.rank == 3 {
                        let l = load(quote!(__col));
                        quote!(for #row in #s.iter_mut() { for __col in #row.iter_mut() { #l } })
                    } else if data.rank == 2 {
                        let l = load(quote!(#row));
                        quote!(for #row in #s.iter_mut() { #l })
                    } else {
                        load(quote!(#s))
                    });
                }
            }
        }
        (bind, out, after)
    }
}

/// The variable of checkpointer `ck` (hygienic: no user name can shadow it).
fn ck_name(ck: u32) -> Ident {
    Ident::new(&format!("checkpointer_{ck}"), Span::mixed_site())
}
