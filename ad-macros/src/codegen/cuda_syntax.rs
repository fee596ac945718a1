//! What a CUDA element function's syntax tells before it is lowered: the C types of its
//! integer slices, and the constructs outside the kernel subset, reported at their span.

/// The C element type of an integer slice type (`&[usize]` → `unsigned long long`).
pub fn int_elem_type(ty: &syn::Type) -> Option<&'static str> {
    let text = quote::quote!(#ty).to_string();
    let elem = text.rsplit('[').next()?.trim_end_matches(']').trim();
    Some(match elem {
        "usize" | "u64" => "unsigned long long",
        "isize" | "i64" => "long long",
        "u32" => "unsigned int",
        "i32" => "int",
        _ => return None,
    })
}

/// Constructs outside the kernel subset, found in the element function's syntax so the
/// error points at them: buffers made in the body (`vec!`, `.to_vec()`, `.clone()`),
/// calls of other functions, closures and iterators.
pub fn check_syntax(item: &syn::ItemFn) -> syn::Result<()> {
    use syn::visit::Visit;
    struct Finder {
        err: Option<syn::Error>,
    }
    impl Finder {
        fn fail(&mut self, span: &dyn quote::ToTokens, msg: &str) {
            if self.err.is_none() {
                self.err = Some(syn::Error::new_spanned(span, format!("phidiff: {msg}")));
            }
        }
    }
    impl<'ast> Visit<'ast> for Finder {
        fn visit_expr_macro(&mut self, m: &'ast syn::ExprMacro) {
            let name = m
                .mac
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            if name != "assert" {
                self.fail(m, &format!(
                    "`{name}!` is not supported in a CUDA kernel: a kernel works on the slices it is given, one element per thread"
                ));
            }
            syn::visit::visit_expr_macro(self, m);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let name = m.method.to_string();
            if matches!(
                name.as_str(),
                "to_vec"
                    | "clone"
                    | "iter"
                    | "iter_mut"
                    | "into_iter"
                    | "par_iter"
                    | "par_iter_mut"
                    | "into_par_iter"
                    | "par_chunks_mut"
                    | "copy_from_slice"
                    | "swap"
                    | "map"
                    | "sum"
                    | "for_each"
                    | "zip"
                    | "enumerate"
            ) {
                self.fail(&m.method, &format!(
                    "`.{name}()` is not supported in a CUDA kernel: index the slices (`x[i]`) and use `for` loops over ranges"
                ));
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            let float_fn = matches!(&*c.func, syn::Expr::Path(p) if p.path.segments.len() >= 2);
            if !float_fn {
                self.fail(&c.func, "a call of another function is not supported in a CUDA kernel (float methods like `x.sin()` are, and plain helpers of floats and slices are inlined)");
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
            self.fail(c, "closures are not supported in a CUDA kernel");
        }
    }
    let mut finder = Finder { err: None };
    finder.visit_block(&item.block);
    match finder.err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
