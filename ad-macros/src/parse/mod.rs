//! Attribute arguments and the signature: which parameters are active and how they are passed.

pub mod checkpoint;
pub mod signature;

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, Token};

/// The default largest segment (expression nodes of a segment's outputs over its live-ins):
/// big enough for a stencil update or a Gaussian log-density, small enough that a segment's
/// partial derivatives stay a few hundred nodes.
pub const DEFAULT_SEGMENT_LIMIT: usize = 64;

/// The parsed `#[differentiate(...)]` arguments.
#[derive(Clone)]
pub struct Options {
    /// Name of the forward (tangent) function, when requested.
    pub forward: Option<Ident>,
    /// Name of the reverse (adjoint) function, when requested.
    pub reverse: Option<Ident>,
    /// `wrt(a, b)`: restricts the active parameters.
    pub wrt: Option<Vec<Ident>>,
    /// `crate = path`: where the runtime lives (default `::phidiff`).
    pub krate: syn::Path,
    /// `coarsen = off` selects the one-operation-per-segment baseline.
    pub coarsen: bool,
    /// `coarsen(limit = N)`: the largest segment expression, in nodes.
    pub segment_limit: usize,
    /// `parallel_adjoint = atomic`: every `+=` of a parallel adjoint into a shared array
    /// is an atomic add (the ablation baseline of the summation-aware adjoint).
    pub atomic_adjoint: bool,
    /// `cuda`: also emit the CUDA C of the element function's primal and adjoint kernels.
    pub cuda: bool,
    /// `forward`/`reverse` without a name: the defaults are derived from the function name.
    pub forward_requested: bool,
    pub reverse_requested: bool,
}

impl Options {
    pub fn resolve_names(&mut self, fn_name: &Ident) {
        if self.forward_requested && self.forward.is_none() {
            self.forward = Some(Ident::new(&format!("{fn_name}_fwd"), fn_name.span()));
        }
        if self.reverse_requested && self.reverse.is_none() {
            self.reverse = Some(Ident::new(&format!("{fn_name}_rev"), fn_name.span()));
        }
    }
}

fn parse_name(content: ParseStream) -> syn::Result<Ident> {
    let key: Ident = content.parse()?;
    if key != "name" {
        return Err(syn::Error::new(key.span(), "expected `name = ...`"));
    }
    content.parse::<Token![=]>()?;
    content.parse()
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut opts = Options {
            forward: None,
            reverse: None,
            wrt: None,
            krate: syn::parse_quote!(::phidiff),
            coarsen: true,
            segment_limit: DEFAULT_SEGMENT_LIMIT,
            atomic_adjoint: false,
            cuda: false,
            forward_requested: false,
            reverse_requested: false,
        };
        while !input.is_empty() {
            let key = input.call(Ident::parse_any)?;
            match key.to_string().as_str() {
                "forward" | "reverse" => {
                    let name = if input.peek(syn::token::Paren) {
                        let content;
                        syn::parenthesized!(content in input);
                        Some(parse_name(&content)?)
                    } else {
                        None
                    };
                    if key == "forward" {
                        opts.forward_requested = true;
                        opts.forward = name;
                    } else {
                        opts.reverse_requested = true;
                        opts.reverse = name;
                    }
                }
                "cuda" => opts.cuda = true,
                "wrt" => {
                    let content;
                    syn::parenthesized!(content in input);
                    let names = content.parse_terminated(Ident::parse, Token![,])?;
                    opts.wrt = Some(names.into_iter().collect());
                }
                "crate" => {
                    input.parse::<Token![=]>()?;
                    opts.krate = input.call(syn::Path::parse_mod_style)?;
                }
                "coarsen" if input.peek(syn::token::Paren) => {
                    let content;
                    syn::parenthesized!(content in input);
                    let key: Ident = content.parse()?;
                    if key != "limit" {
                        return Err(syn::Error::new(
                            key.span(),
                            "expected `coarsen(limit = N)` with N the largest segment in expression nodes",
                        ));
                    }
                    content.parse::<Token![=]>()?;
                    let n: syn::LitInt = content.parse()?;
                    let n: usize = n.base10_parse()?;
                    if n < 2 {
                        return Err(syn::Error::new(
                            key.span(),
                            "`coarsen(limit = N)` needs N ≥ 2 expression nodes",
                        ));
                    }
                    opts.segment_limit = n;
                }
                "coarsen" => {
                    input.parse::<Token![=]>()?;
                    let v = input.call(Ident::parse_any)?;
                    opts.coarsen = match v.to_string().as_str() {
                        "on" | "true" => true,
                        "off" | "false" => false,
                        _ => {
                            return Err(syn::Error::new(
                                v.span(),
                                "expected `coarsen = on` or `coarsen = off`",
                            ))
                        }
                    };
                }
                "parallel_adjoint" => {
                    input.parse::<Token![=]>()?;
                    let v = input.call(Ident::parse_any)?;
                    opts.atomic_adjoint = match v.to_string().as_str() {
                        "summation_aware" => false,
                        "atomic" => true,
                        _ => {
                            return Err(syn::Error::new(
                                v.span(),
                                "expected `parallel_adjoint = summation_aware` or `parallel_adjoint = atomic`",
                            ))
                        }
                    };
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                        "unknown differentiate option `{other}`; expected `forward`, `reverse`, \
                             `wrt(..)`, `cuda`, `crate = path`, `coarsen = on|off`, `coarsen(limit = N)` \
                             or `parallel_adjoint = summation_aware|atomic`"
                    ),
                    ))
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        if !opts.forward_requested && !opts.reverse_requested {
            return Err(syn::Error::new(
                proc_macro2::Span::call_site(),
                "#[differentiate] needs `forward`, `reverse` or both",
            ));
        }
        Ok(opts)
    }
}
