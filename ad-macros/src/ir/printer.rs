//! The IR's text form, used by snapshot tests and by `PHIDIFF_DUMP_IR`.

use super::*;
use std::fmt::Write;

fn ty_name(t: Ty) -> &'static str {
    match t {
        Ty::Float => "f",
        Ty::Int => "i",
        Ty::Bool => "b",
    }
}

fn list(vs: &[Value]) -> String {
    vs.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn idx(vs: &[Value]) -> String {
    vs.iter().map(|v| format!("[{v}]")).collect()
}

fn arg(a: &CallArg) -> String {
    match a {
        CallArg::Scalar(v) => v.to_string(),
        CallArg::Buf {
            buf,
            mutable,
            range,
        } => {
            let r = range.map_or(String::new(), |p| {
                let row: String = p.row.values().map(|r| format!("[{r}]")).collect();
                format!("{row}[{}..{}]", p.start, p.end)
            });
            format!("{}{buf}{r}", if *mutable { "&mut " } else { "&" })
        }
        CallArg::Opaque(o) => format!("{:?}", o.code),
    }
}

/// Prints `f` in the IR text form.
pub fn print(f: &Function) -> String {
    let mut out = String::new();
    let params: Vec<String> = f
        .params
        .iter()
        .map(|p| match &p.kind {
            ParamKind::Scalar(t) => format!("{}: {}", p.name, ty_name(*t)),
            ParamKind::Buffer { buf, mutable } => {
                format!("{}: {}{buf}", p.name, if *mutable { "&mut " } else { "&" })
            }
            ParamKind::Opaque => format!("{}: opaque", p.name),
        })
        .collect();
    let _ = writeln!(out, "fn {}({}) {{", f.name, params.join(", "));
    for (n, b) in f.bufs.iter().enumerate() {
        let _ = writeln!(
            out,
            "  buf{n} = {:?} {} rank {} of {}",
            b.kind,
            b.name,
            b.rank,
            ty_name(b.elem)
        );
    }
    print_block(f, f.body, 1, &mut out);
    out.push_str("}\n");
    out
}

fn print_block(f: &Function, b: Block, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for &i in &f.block(b).insts {
        print_inst(f, i, depth, out);
    }
    let ys = &f.block(b).yields;
    if !ys.is_empty() {
        let _ = writeln!(out, "{pad}yield {}", list(ys));
    }
}

fn print_inst(f: &Function, i: Inst, depth: usize, out: &mut String) {
    use InstKind::*;
    let pad = "  ".repeat(depth);
    let data = f.inst(i);
    let res = if data.results.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = data
            .results
            .iter()
            .map(|v| format!("{v}:{}", ty_name(f.ty(*v))))
            .collect();
        format!("{} = ", names.join(", "))
    };
    let body = match &data.kind {
        FConst(c) => format!("fconst {c:?}"),
        IConst(c) => format!("iconst {c}"),
        BConst(c) => format!("bconst {c}"),
        Param(n) => format!("param {n}"),
        Unary(UnOp::Neg, a) => format!("neg {a}"),
        Unary(UnOp::Not, a) => format!("not {a}"),
        Unary(UnOp::Test(t), a) => format!("{} {a}", t.method()),
        Binary(op, a, b) => format!("{a} {} {b}", op.symbol()),
        Math(name, args) => format!("{name}({})", list(args)),
        Cast { value, to, .. } => format!("cast {value} to {}", ty_name(*to)),
        Load(buf, ix) => format!("load {buf}{}", idx(ix)),
        Store(buf, ix, v) => format!("store {buf}{} = {v}", idx(ix)),
        StoreAdd(buf, ix, v) => format!("store {buf}{} += {v}", idx(ix)),
        Len(buf, ix) => format!("len {buf}{}", idx(ix)),
        Alloc { buf, dims, init } => match init {
            AllocInit::Fill(v) => format!("alloc {buf}[{}] fill {v}", list(dims)),
            AllocInit::Copy(src) => format!("alloc {buf} copy {src}"),
            AllocInit::Row { tape, idx } => format!("alloc {buf} row {tape}[{idx}]"),
        },
        SaveRow {
            tape,
            idx,
            src,
            row,
        } => {
            let row: String = row.values().map(|r| format!("[{r}]")).collect();
            format!("saverow {tape}[{idx}] = {src}{row}")
        }
        ReturnRow { tape, idx, src } => format!("returnrow {tape}[{idx}] = {src}"),
        CopyFrom { dst, src } => format!("copy {dst} <- {src}"),
        Swap(a, b) => format!("swap {a} {b}"),
        AddBuf { dst, src } => format!("addbuf {dst} += {src}"),
        ZeroBuf(b) => format!("zerobuf {b}"),
        SumBuf(b) => format!("sumbuf {b}"),
        Assert { cond, .. } => format!("assert {cond}"),
        Fail { cond, site, args } => format!("fail {cond} site {site} {args:?}"),
        CellDecl(c, v) => format!("cell {c} = {v}"),
        CellGet(c) => format!("get {c}"),
        CellSet(c, v) => format!("set {c} = {v}"),
        CellAdd(c, v) => format!("set {c} += {v}"),
        TapeEnsure(b, v) => format!("ensure {b} len {v}"),
        TapeEnsureRow(b, r, v) => format!("ensure {b}[{r}] len {v}"),
        CkNew { ck, spec, trip } => {
            let (name, n) = match spec.scheme {
                CkScheme::Revolve(n) => ("revolve", n),
                CkScheme::Periodic(n) => ("periodic", n),
                CkScheme::Online(n) => ("online", n),
            };
            let disk = if spec.disk { " disk" } else { "" };
            let trip = trip.map(|t| format!(" trip {t}")).unwrap_or_default();
            format!("checkpointer ck{ck} {name}({n}){disk}{trip}")
        }
        CkForwardStep { ck, step, state } => {
            format!("ck{ck} forward step {step} state({})", ck_items(state))
        }
        CkEndForward { ck, count } => format!("ck{ck} end forward {count}"),
        CkReverse {
            ck,
            state,
            advance,
            taped,
            kept,
            adjoint,
        } => {
            let mut s = format!("ck{ck} reverse state({}) advance {{\n", ck_items(state));
            print_block(f, *advance, depth + 1, &mut s);
            let _ = writeln!(s, "{pad}}} taped {{");
            print_block(f, *taped, depth + 1, &mut s);
            let _ = writeln!(s, "{pad}}} kept {{");
            print_block(f, *kept, depth + 1, &mut s);
            let _ = writeln!(s, "{pad}}} adjoint {{");
            print_block(f, *adjoint, depth + 1, &mut s);
            let _ = write!(s, "{pad}}}");
            s
        }
        Call {
            callee,
            args,
            suffix,
        } => {
            let args: Vec<String> = args.iter().map(arg).collect();
            let suffix = match suffix {
                CallSuffix::Primal => String::new(),
                CallSuffix::Fwd { tangents } => format!(
                    " fwd[{}]",
                    tangents
                        .iter()
                        .map(|t| t.as_ref().map(arg).unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                CallSuffix::Rev { shadows, seed } => format!(
                    " rev[{}] seed {}",
                    shadows
                        .iter()
                        .map(|t| t.as_ref().map(arg).unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(", "),
                    seed.map(|s| s.to_string()).unwrap_or_default()
                ),
            };
            let recv = callee
                .receiver
                .as_ref()
                .map(|r| format!("{:?}.", r.code))
                .unwrap_or_default();
            format!("call {recv}{}({}){suffix}", callee.name(), args.join(", "))
        }
        If {
            cond,
            then_blk,
            else_blk,
        } => {
            let mut s = format!("if {cond} {{\n");
            print_block(f, *then_blk, depth + 1, &mut s);
            let _ = writeln!(s, "{pad}}} else {{");
            print_block(f, *else_blk, depth + 1, &mut s);
            let _ = write!(s, "{pad}}}");
            s
        }
        For {
            range,
            index,
            params,
            inits,
            body,
            exit,
        } => {
            let step = range.step.map(|s| format!(" step {s}")).unwrap_or_default();
            let rev = if range.rev { " rev" } else { "" };
            let mut s = format!(
                "for {index} in {}..{}{rev}{step}{}{} {{\n",
                range.start,
                range.end,
                carried(params, inits),
                exits(exit)
            );
            print_block(f, *body, depth + 1, &mut s);
            let _ = write!(s, "{pad}}}");
            s
        }
        While {
            cond,
            params,
            inits,
            body,
            exit,
        } => {
            let mut s = format!("while{}{} {{\n", carried(params, inits), exits(exit));
            print_block(f, *cond, depth + 1, &mut s);
            let _ = writeln!(s, "{pad}}} do {{");
            print_block(f, *body, depth + 1, &mut s);
            let _ = write!(s, "{pad}}}");
            s
        }
    };
    let _ = writeln!(out, "{pad}{res}{body}");
}

fn ck_items(items: &[CkItem]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|x| match x {
            CkItem::Value(v) => v.to_string(),
            CkItem::Cell(c) => c.to_string(),
            CkItem::Buf(b) => b.to_string(),
        })
        .collect();
    items.join(", ")
}

fn carried(params: &[Value], inits: &[Value]) -> String {
    if params.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = params
        .iter()
        .zip(inits)
        .map(|(p, i)| format!("{p} = {i}"))
        .collect();
    format!(" carry({})", pairs.join(", "))
}

fn exits(exit: &[Value]) -> String {
    if exit.is_empty() {
        String::new()
    } else {
        format!(" exit({})", list(exit))
    }
}
