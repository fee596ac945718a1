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

/// The standard message for an unsupported construct.
pub fn unsupported(what: &str, why: &str) -> String {
    format!(
        "phidiff cannot differentiate `{what}` here: {why}; supported are the constructs listed \
         under \"Inside the body\" in phidiff's documentation (let, arithmetic, indexing, if, \
         match on integers, for/while/loop, float methods, calls)"
    )
}

/// The message for a signature phidiff cannot differentiate.
pub fn unsupported_signature(what: &str, why: &str) -> String {
    format!("phidiff cannot differentiate a function with `{what}`: {why}")
}
