//! The phidiff compiler: `#[differentiate]` rewrites a Rust function into its forward
//! (tangent) and reverse (adjoint) versions. This file only parses the attribute's input and
//! calls `expand::expand`; every pass works on `proc_macro2` and is unit-tested without rustc.

mod analysis;
mod codegen;
mod derivative;
mod diagnostics;
mod expand;
mod ir;
mod lower;
mod parse;
#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Generates `NAME_fwd`, `NAME_rev` and `NAME_grad` next to the function; see the crate
/// `phidiff` for the contract.
#[proc_macro_attribute]
pub fn differentiate(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(args.into(), item.into()).into()
}

/// `#[differentiate(..)]` with `coarsen = off` forced: lets the test suite compile the same
/// sources in both modes and compare them. Not part of the user contract.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn differentiate_coarsen_off(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut args: proc_macro2::TokenStream = args.into();
    if !args.is_empty() {
        args.extend(quote::quote!(,));
    }
    args.extend(quote::quote!(coarsen = off));
    expand::expand(args, item.into()).into()
}
