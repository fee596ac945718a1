//! The lowering's side of the desugaring (`crate::desugar`): what the names are where a
//! chain stands, and the local closures defined so far.

use super::env::{Binding, Env};
use super::Lowerer;
use crate::desugar::{Desugarer, Scope, Shape};
use crate::ir::Function;
use quote::ToTokens;
use std::collections::HashMap;

/// A local closure (`let f = |x| ..;`) and what the names its body reads meant where it
/// was defined.
#[derive(Clone)]
pub struct LocalClosure {
    closure: syn::ExprClosure,
    captured: Vec<(String, Option<Binding>)>,
}

pub type Closures = HashMap<String, LocalClosure>;

/// The environment at one point of the lowering, as the desugaring asks it.
pub struct LowerScope<'a> {
    env: &'a Env,
    func: &'a Function,
    closures: &'a Closures,
}

impl Scope for LowerScope<'_> {
    fn shape(&self, name: &str) -> Option<Shape> {
        Some(match self.env.lookup(name)? {
            Binding::Buf(b) => Shape::Buffer(self.func.buf(b).rank as usize),
            Binding::Row { buf, outer, .. } => {
                Shape::View(self.func.buf(buf).rank as usize - outer.as_slice().len())
            }
            Binding::Scalar(_) | Binding::Elem(..) | Binding::Opaque | Binding::Uninit => {
                Shape::Value
            }
        })
    }

    fn closure(&self, name: &str) -> Option<Result<syn::ExprClosure, String>> {
        if self.env.lookup(name).is_some() {
            return None;
        }
        let c = self.closures.get(name)?;
        // Its captured names must still mean what they meant where it was defined (a later
        // `let` of the same name, or a `move` closure's copy, would not).
        for (n, b) in &c.captured {
            if &self.env.lookup(n) != b {
                return Some(Err(n.clone()));
            }
        }
        Some(Ok(c.closure.clone()))
    }
}

impl Lowerer<'_> {
    /// The desugaring of iterator chains and local closures at this point.
    pub(super) fn desugarer(&mut self) -> Desugarer<'_, LowerScope<'_>> {
        Desugarer {
            scope: LowerScope {
                env: &self.env,
                func: &self.b.func,
                closures: &self.closures,
            },
            next: &mut self.next_flag,
        }
    }

    /// `let f = |x| ..;`: remembered with what its body's names mean here.
    pub(super) fn define_closure(&mut self, name: String, c: &syn::ExprClosure) {
        let params = super::consts::idents(c.inputs.iter().map(|p| p.to_token_stream()).collect());
        let captured = super::consts::idents(c.body.to_token_stream())
            .into_iter()
            .filter(|n| !params.contains(n))
            .map(|n| {
                let b = self.env.lookup(&n);
                (n, b)
            })
            .collect();
        self.closures.insert(
            name,
            LocalClosure {
                closure: c.clone(),
                captured,
            },
        );
    }
}
