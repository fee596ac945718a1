//! Error collection with spans: a context that must be checked before it is dropped
//! (after serde_derive's `Ctxt`), so no error can be silently lost.

use std::cell::RefCell;
use std::fmt::Display;

pub struct Diagnostics {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Default for Diagnostics {
    fn default() -> Self {
        Diagnostics {
            errors: RefCell::new(Some(Vec::new())),
        }
    }
}

impl Diagnostics {
    /// Records an error at the span of `tokens`.
    pub fn error_spanned<T: quote::ToTokens, M: Display>(&self, tokens: T, msg: M) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    pub fn push(&self, err: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("diagnostics used after check")
            .push(err);
    }

    /// Consumes the context: all recorded errors combined into one, if any.
    pub fn check(self) -> Result<(), syn::Error> {
        let errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("diagnostics checked twice");
        let mut iter = errors.into_iter();
        match iter.next() {
            None => Ok(()),
            Some(mut first) => {
                for e in iter {
                    first.combine(e);
                }
                Err(first)
            }
        }
    }
}

impl Drop for Diagnostics {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("phidiff internal error: diagnostics dropped without being checked");
        }
    }
}

/// Source text of `tokens` for a message, without the spaces the token printer puts
/// around `::`, `..` and indexing brackets (`x [0]` → `x[0]`, `f64 :: NAN` → `f64::NAN`);
/// operators keep theirs.
pub fn source_text<T: quote::ToTokens + ?Sized>(tokens: &T) -> String {
    tighten(
        tokens.to_token_stream().to_string(),
        &[
            (" :: ", "::"),
            (":: ", "::"),
            (" ..= ", "..="),
            (" .. ", ".."),
            (" ..", ".."),
            ("& mut ", "&mut "),
            (" [", "["),
            ("&mut[", "&mut ["),
            (" . ", "."),
            (" ()", "()"),
            (" ;", ";"),
            (" ,", ","),
            (" :", ":"),
        ],
    )
}

/// Source text of a type for a message (`& mut [f64]` → `&mut [f64]`,
/// `Vec < f64 >` → `Vec<f64>`).
pub fn type_text(ty: &syn::Type) -> String {
    tighten(
        source_text(ty),
        &[
            (" < ", "<"),
            (" <", "<"),
            ("< ", "<"),
            (" >", ">"),
            ("& ", "&"),
        ],
    )
}

fn tighten(mut s: String, pairs: &[(&str, &str)]) -> String {
    for (from, to) in pairs {
        s = s.replace(from, to);
    }
    s
}

/// Where an unsupported-construct message sends the reader: the guide's section on what a
/// differentiated body may contain (the user does not have the design notes).
pub const SUBSET_POINTER: &str =
    "the supported subset of Rust is listed in phidiff's guide (docs/guide.md, \"The supported subset\")";

/// The standard message for an unsupported construct.
pub fn unsupported(what: &str, why: &str) -> String {
    format!("phidiff cannot differentiate `{what}` here: {why}; {SUBSET_POINTER}")
}

/// The message for a signature phidiff cannot differentiate.
pub fn unsupported_signature(what: &str, why: &str) -> String {
    format!("phidiff cannot differentiate a function with `{what}`: {why}")
}

#[cfg(test)]
mod tests {
    use super::{source_text, type_text};

    #[test]
    fn source_text_reads_like_source() {
        let e: syn::Expr = syn::parse_quote!(&x[1..] + f64::NAN * y[i][j]);
        assert_eq!(source_text(&e), "& x[1..] + f64::NAN * y[i][j]");
        let e: syn::Expr = syn::parse_quote!(a < b && (0..n).len() > 2);
        assert_eq!(source_text(&e), "a < b && (0..n).len() > 2");
    }

    #[test]
    fn type_text_reads_like_source() {
        let t: syn::Type = syn::parse_quote!(&mut [f64]);
        assert_eq!(type_text(&t), "&mut [f64]");
        let t: syn::Type = syn::parse_quote!(&Vec<[f64; 3]>);
        assert_eq!(type_text(&t), "&Vec<[f64; 3]>");
    }
}
