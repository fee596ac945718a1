//! What a block or expression does, syntactically: the names it assigns and declares, and
//! its jumps. The desugaring and the lowering both ask.

use syn::visit::Visit;
use syn::{Expr, Stmt};

/// What a loop body (or a statement) does, syntactically.
#[derive(Default)]
pub struct Scan {
    pub assigned: Vec<String>,
    /// Names bound by `let` inside the scanned code.
    pub declared: Vec<String>,
    pub ret: bool,
    pub brk: bool,
    pub cont: bool,
    depth: usize,
}

fn assigned_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            Some(p.path.segments[0].ident.to_string())
        }
        Expr::Paren(p) => assigned_name(&p.expr),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for Scan {
    fn visit_expr_assign(&mut self, e: &'ast syn::ExprAssign) {
        self.assigned.extend(assigned_name(&e.left));
        syn::visit::visit_expr_assign(self, e);
    }
    fn visit_expr_binary(&mut self, e: &'ast syn::ExprBinary) {
        if is_compound_assign(&e.op) {
            self.assigned.extend(assigned_name(&e.left));
        }
        syn::visit::visit_expr_binary(self, e);
    }
    fn visit_expr_return(&mut self, e: &'ast syn::ExprReturn) {
        self.ret = true;
        syn::visit::visit_expr_return(self, e);
    }
    fn visit_expr_break(&mut self, e: &'ast syn::ExprBreak) {
        if self.depth == 0 {
            self.brk = true;
        }
        syn::visit::visit_expr_break(self, e);
    }
    fn visit_expr_continue(&mut self, _: &'ast syn::ExprContinue) {
        if self.depth == 0 {
            self.cont = true;
        }
    }
    fn visit_expr_for_loop(&mut self, e: &'ast syn::ExprForLoop) {
        self.visit_expr(&e.expr);
        self.depth += 1;
        self.visit_block(&e.body);
        self.depth -= 1;
    }
    fn visit_expr_while(&mut self, e: &'ast syn::ExprWhile) {
        self.depth += 1;
        syn::visit::visit_expr_while(self, e);
        self.depth -= 1;
    }
    fn visit_expr_loop(&mut self, e: &'ast syn::ExprLoop) {
        self.depth += 1;
        syn::visit::visit_expr_loop(self, e);
        self.depth -= 1;
    }
    fn visit_local(&mut self, l: &'ast syn::Local) {
        // Every name the pattern binds: `let x`, and `let (mut p, q)`, `let [a, b]`, nested.
        struct Names<'s>(&'s mut Vec<String>);
        impl<'ast> Visit<'ast> for Names<'_> {
            fn visit_pat_ident(&mut self, pi: &'ast syn::PatIdent) {
                self.0.push(pi.ident.to_string());
                syn::visit::visit_pat_ident(self, pi);
            }
        }
        Names(&mut self.declared).visit_pat(&l.pat);
        syn::visit::visit_local(self, l);
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
    fn visit_macro(&mut self, _: &'ast syn::Macro) {}
}

pub fn scan_stmts(stmts: &[Stmt]) -> Scan {
    let mut s = Scan::default();
    for st in stmts {
        s.visit_stmt(st);
    }
    s
}

pub fn scan_expr(e: &Expr) -> Scan {
    let mut s = Scan::default();
    s.visit_expr(e);
    s
}

/// `+=`, `-=`, `*=`, `/=`, `%=`: the assignments the lowering reads as `x = x op y`.
fn is_compound_assign(op: &syn::BinOp) -> bool {
    use syn::BinOp as B;
    matches!(
        op,
        B::AddAssign(_) | B::SubAssign(_) | B::MulAssign(_) | B::DivAssign(_) | B::RemAssign(_)
    )
}
