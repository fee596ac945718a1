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
    /// `reverse(width = N)` and `forward(width = N)`: batched functions, named
    /// `<name>_rev<N>` and `<name>_fwd<N>` unless `name = ..` is given.
    pub batched: Vec<Batched>,
    /// Whether `_grad` is written with `_rev` (not for the exploded function of one taking
    /// structs, whose `_grad` takes the structs).
    pub grad: bool,
    /// Also emit the primal program itself, generated from its IR, under this name (the
    /// split function of one taking structs, which its callers' derivatives call).
    pub primal: Option<Ident>,
    /// `skip_passes(twin_ifs, ..)` (hidden, for bug reports and tests): optional passes
    /// ruled out (`crate::pipeline`).
    pub passes: crate::pipeline::Passes,
}

impl Options {
    pub fn resolve_names(&mut self, fn_name: &Ident) {
        if self.forward_requested && self.forward.is_none() {
            self.forward = Some(Ident::new(&format!("{fn_name}_fwd"), fn_name.span()));
        }
        if self.reverse_requested && self.reverse.is_none() {
            self.reverse = Some(Ident::new(&format!("{fn_name}_rev"), fn_name.span()));
        }
        for b in &mut self.batched {
            if b.name.is_none() {
                let suffix = if b.forward { "fwd" } else { "rev" };
                let name = format!("{fn_name}_{suffix}{}", b.width);
                b.name = Some(Ident::new(&name, fn_name.span()));
            }
        }
    }
}

/// One `forward(width = N)` or `reverse(width = N)`: N tangents or N seeds per sweep.
#[derive(Clone)]
pub struct Batched {
    pub forward: bool,
    pub name: Option<Ident>,
    pub width: usize,
}

/// The options `#[differentiate(..)]` takes, for messages.
const OPTIONS: &str =
    "`forward`, `reverse`, `forward(width = N)`, `reverse(width = N)`, `wrt(..)`, `cuda`, `crate = path`, \
     `coarsen = on|off`, `coarsen(limit = N)` or `parallel_adjoint = summation_aware|atomic`";

/// Edit distance between two short words (for "did you mean").
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// ` (did you mean `x`?)` for the closest of `candidates` within two edits (or sharing the
/// letters, like `wtr` for `wrt`), else nothing.
fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    let sorted = |w: &str| {
        let mut c: Vec<char> = w.chars().collect();
        c.sort_unstable();
        c
    };
    candidates
        .iter()
        .map(|c| {
            let d = if sorted(c) == sorted(word) {
                1
            } else {
                edit_distance(word, c)
            };
            (d, c)
        })
        .filter(|(d, c)| *d <= 2 && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// The parenthesized arguments of a mode: `name = <identifier>` and `width = N`, in any
/// order.
fn parse_mode_args(
    mode: &Ident,
    content: ParseStream,
) -> syn::Result<(Option<Ident>, Option<usize>)> {
    let (mut name, mut width) = (None, None);
    while !content.is_empty() {
        let key: Ident = content.parse()?;
        match key.to_string().as_str() {
            "name" => {
                content.parse::<Token![=]>()?;
                name = Some(content.parse()?);
            }
            "width" => {
                content.parse::<Token![=]>()?;
                let n: syn::LitInt = content.parse()?;
                let w: usize = n.base10_parse()?;
                if !(1..=64).contains(&w) {
                    let what = if mode == "reverse" {
                        "seeds"
                    } else {
                        "tangents"
                    };
                    return Err(syn::Error::new(
                        n.span(),
                        format!("phidiff: `{mode}(width = N)` takes 1 ≤ N ≤ 64 {what} per sweep"),
                    ));
                }
                width = Some(w);
            }
            _ => {
                let takes = if mode == "reverse" {
                    "`name = <identifier>` to rename the generated function and `width = N` for N seeds per sweep, e.g. `reverse(width = 2)`"
                } else {
                    "`name = <identifier>` to rename the generated function and `width = N` for N tangents per sweep, e.g. `forward(width = 2)`"
                };
                return Err(syn::Error::new(
                    key.span(),
                    format!("phidiff: `{mode}(..)` takes {takes}; found `{key}`"),
                ));
            }
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok((name, width))
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
            batched: Vec::new(),
            grad: true,
            primal: None,
            passes: crate::pipeline::Passes::all(),
        };
        while !input.is_empty() {
            let key = input.call(Ident::parse_any)?;
            match key.to_string().as_str() {
                "forward" | "reverse" => {
                    let (name, width) = if input.peek(syn::token::Paren) {
                        let content;
                        syn::parenthesized!(content in input);
                        parse_mode_args(&key, &content)?
                    } else {
                        (None, None)
                    };
                    if let Some(width) = width {
                        opts.batched.push(Batched {
                            forward: key == "forward",
                            name,
                            width,
                        });
                    } else if key == "forward" {
                        opts.forward_requested = true;
                        opts.forward = name;
                    } else {
                        opts.reverse_requested = true;
                        opts.reverse = name;
                    }
                }
                "cuda" => opts.cuda = true,
                "skip_passes" => {
                    let content;
                    syn::parenthesized!(content in input);
                    let names = content.parse_terminated(Ident::parse_any, Token![,])?;
                    for name in names {
                        let text = name.to_string();
                        let Some(pass) = crate::pipeline::Passes::named(&text) else {
                            let names = crate::pipeline::Passes::names();
                            let hint = did_you_mean(&text, &names);
                            return Err(syn::Error::new(
                                name.span(),
                                format!(
                                    "phidiff: `skip_passes(..)` has no pass `{text}`{hint}; it takes the passes that can be ruled out: {}",
                                    names.join(", ")
                                ),
                            ));
                        };
                        opts.passes = opts.passes.without(pass);
                    }
                }
                "wrt" => {
                    let content;
                    syn::parenthesized!(content in input);
                    let names = content.parse_terminated(Ident::parse_any, Token![,])?;
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
                            "phidiff: expected `coarsen(limit = N)` with N the largest segment in expression nodes",
                        ));
                    }
                    content.parse::<Token![=]>()?;
                    let n: syn::LitInt = content.parse()?;
                    let n: usize = n.base10_parse()?;
                    if n < 2 {
                        return Err(syn::Error::new(
                            key.span(),
                            "phidiff: `coarsen(limit = N)` needs N ≥ 2 expression nodes",
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
                                format!(
                                "phidiff: expected `coarsen = on` or `coarsen = off`, found `{v}`"
                            ),
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
                                format!("phidiff: expected `parallel_adjoint = summation_aware` or `parallel_adjoint = atomic`, found `{v}`"),
                            ))
                        }
                    };
                }
                other => {
                    let hint = did_you_mean(
                        other,
                        &[
                            "forward",
                            "reverse",
                            "wrt",
                            "cuda",
                            "crate",
                            "coarsen",
                            "parallel_adjoint",
                        ],
                    );
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "phidiff: unknown `#[differentiate]` option `{other}`{hint}; the \
                             options are {OPTIONS}"
                        ),
                    ));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        if !opts.forward_requested && !opts.reverse_requested && opts.batched.is_empty() {
            return Err(syn::Error::new(
                proc_macro2::Span::call_site(),
                "phidiff: `#[differentiate]` needs a mode: add `forward` (generates `<name>_fwd`), \
                 `reverse` (generates `<name>_rev` and, for a float result, `<name>_grad`) or both, e.g. \
                 `#[differentiate(forward, reverse)]`",
            ));
        }
        Ok(opts)
    }
}
