//! Small IR functions built with `Builder`, checked by the verifier and then run.

//! Tests of the interpreter: helpers to build small IR functions, then one file per theme.

mod buffers_and_cells;
mod control_flow;

use super::*;
use crate::ir::builder::Builder;
use crate::ir::verify::verify;

pub(super) fn scalar_param(f: &mut Function, name: &str, ty: Ty) {
    f.params.push(ParamInfo {
        name: name.into(),
        kind: ParamKind::Scalar(ty),
        span: proc_macro2::Span::call_site(),
    });
}

/// Declares parameter buffer `name` as the next parameter.
pub(super) fn buffer_param(f: &mut Function, name: &str, rank: u8, elem: Ty, mutable: bool) -> Buf {
    let n = f.params.len();
    let buf = f.new_buf(BufData {
        name: name.into(),
        rank,
        elem,
        kind: BufKind::Param(n),
    });
    f.params.push(ParamInfo {
        name: name.into(),
        kind: ParamKind::Buffer { buf, mutable },
        span: proc_macro2::Span::call_site(),
    });
    buf
}

pub(super) fn local(f: &mut Function, name: &str, rank: u8, elem: Ty, kind: BufKind) -> Buf {
    f.new_buf(BufData {
        name: name.into(),
        rank,
        elem,
        kind,
    })
}

pub(super) fn param(b: &mut Builder, n: usize) -> Value {
    let ty = match b.func.params[n].kind {
        ParamKind::Scalar(ty) => ty,
        _ => panic!("parameter {n} is not a scalar"),
    };
    b.value(InstKind::Param(n), ty)
}

/// What a loop body returns: its yields and which of the loop's params are exit flags.
pub(super) struct Body {
    yields: Vec<Value>,
    exit: Vec<usize>,
}

pub(super) fn loop_head(b: &mut Builder, inits: &[Value]) -> (Inst, Vec<Value>) {
    let inst = b.reserve();
    let params = inits
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let ty = b.func.ty(v);
            b.func
                .new_value(ty, ValueDef::LoopParam(inst, k as u32), None)
        })
        .collect();
    (inst, params)
}

pub(super) fn loop_results(b: &mut Builder, inst: Inst, params: &[Value]) -> Vec<Value> {
    let mut results: Vec<Value> = params
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let ty = b.func.ty(p);
            b.func.new_value(ty, ValueDef::Result(inst, k as u32), None)
        })
        .collect();
    results.push(
        b.func
            .new_value(Ty::Int, ValueDef::Result(inst, params.len() as u32), None),
    );
    results
}

/// `for index in range carry(params = inits) { body }`; returns the final params and the
/// trip count.
pub(super) fn for_loop(
    b: &mut Builder,
    range: (Value, Value, Option<Value>, bool),
    inits: Vec<Value>,
    body: impl FnOnce(&mut Builder, Value, &[Value]) -> Body,
) -> Vec<Value> {
    let (inst, params) = loop_head(b, &inits);
    let index = b
        .func
        .new_value(Ty::Int, ValueDef::LoopIndex(inst), Some("i".into()));
    let blk = b.func.new_block();
    let out = b.in_block(blk, |b| body(b, index, &params));
    b.set_yields(blk, out.yields);
    let results = loop_results(b, inst, &params);
    let (start, end, step, rev) = range;
    let exit = out.exit.iter().map(|&k| params[k]).collect();
    let kind = InstKind::For {
        range: RangeSpec {
            start,
            end,
            step,
            rev,
        },
        index,
        params,
        inits,
        body: blk,
        exit,
    };
    b.finish(inst, kind, results.clone());
    results
}

pub(super) fn while_loop(
    b: &mut Builder,
    inits: Vec<Value>,
    cond: impl FnOnce(&mut Builder, &[Value]) -> Value,
    body: impl FnOnce(&mut Builder, &[Value]) -> Body,
) -> Vec<Value> {
    let (inst, params) = loop_head(b, &inits);
    let cond_blk = b.func.new_block();
    let c = b.in_block(cond_blk, |b| cond(b, &params));
    b.set_yields(cond_blk, vec![c]);
    let body_blk = b.func.new_block();
    let out = b.in_block(body_blk, |b| body(b, &params));
    b.set_yields(body_blk, out.yields);
    let results = loop_results(b, inst, &params);
    let exit = out.exit.iter().map(|&k| params[k]).collect();
    let kind = InstKind::While {
        cond: cond_blk,
        params,
        inits,
        body: body_blk,
        exit,
    };
    b.finish(inst, kind, results.clone());
    results
}

/// `if cond { then } else { else }` with one result per yield.
pub(super) fn if_else(
    b: &mut Builder,
    cond: Value,
    then: impl FnOnce(&mut Builder) -> Vec<Value>,
    els: impl FnOnce(&mut Builder) -> Vec<Value>,
) -> Vec<Value> {
    let inst = b.reserve();
    let (then_blk, else_blk) = (b.func.new_block(), b.func.new_block());
    let ys = b.in_block(then_blk, then);
    b.set_yields(then_blk, ys.clone());
    let es = b.in_block(else_blk, els);
    b.set_yields(else_blk, es);
    let results: Vec<Value> = ys
        .iter()
        .enumerate()
        .map(|(k, &y)| {
            let ty = b.func.ty(y);
            b.func.new_value(ty, ValueDef::Result(inst, k as u32), None)
        })
        .collect();
    b.finish(
        inst,
        InstKind::If {
            cond,
            then_blk,
            else_blk,
        },
        results.clone(),
    );
    results
}

/// Builds a function: `sig` declares the parameters, `body` fills the body and returns its yields.
pub(super) fn function(
    sig: impl FnOnce(&mut Function),
    body: impl FnOnce(&mut Builder) -> Vec<Value>,
) -> Function {
    let mut f = Function::new("t");
    sig(&mut f);
    let blk = f.body;
    let mut b = Builder::new(&mut f, blk);
    let ys = body(&mut b);
    b.set_yields(blk, ys);
    f
}

/// Verifies `f`, then runs it.
pub(super) fn checked_run(f: &Function, args: &mut [RtArg]) -> Result<Vec<RtVal>, String> {
    if let Err(e) = verify(f) {
        panic!(
            "the verifier rejects the test function: {e}\n{}",
            crate::ir::printer::print(f)
        );
    }
    run(f, args)
}

pub(super) fn floats(vs: &[RtVal]) -> Vec<f64> {
    vs.iter().map(|v| v.as_float().expect("a float")).collect()
}
