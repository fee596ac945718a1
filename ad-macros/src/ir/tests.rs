//! `InstKind::map_operands` against `Function::operands`, for every kind.

use super::*;

/// One instruction of every kind, each reading distinct values.
fn every_kind() -> Vec<InstKind> {
    let mut n = 0;
    let mut v = || {
        n += 1;
        Value(n)
    };
    let part = |v: &mut dyn FnMut() -> Value| Part {
        row: Indices::of(&[v()]),
        start: v(),
        end: v(),
    };
    let b = Buf(0);
    let blk = Block(0);
    let callee = Callee {
        path: syn::parse_quote!(g),
        receiver: None,
        generics: Code::default(),
        then: Code::default(),
    };
    let spec = |v: &mut dyn FnMut() -> Value| CheckpointSpec {
        scheme: CkScheme::Revolve(v()),
        disk: false,
        attr: Default::default(),
    };
    vec![
        InstKind::FConst(1.0),
        InstKind::IConst(1),
        InstKind::BConst(true),
        InstKind::Param(0),
        InstKind::Unary(UnOp::Neg, v()),
        InstKind::Binary(BinOp::Add, v(), v()),
        InstKind::Math("atan2", vec![v(), v()]),
        InstKind::Cast {
            value: v(),
            to: Ty::Int,
            int: None,
            float: None,
        },
        InstKind::Load(b, vec![v(), v()]),
        InstKind::Store(b, vec![v()], v()),
        InstKind::StoreAdd(b, vec![v()], v()),
        InstKind::Len(b, vec![v()]),
        InstKind::Alloc {
            buf: b,
            dims: vec![v(), v()],
            init: AllocInit::Fill(v()),
        },
        InstKind::Alloc {
            buf: b,
            dims: vec![v()],
            init: AllocInit::Row { tape: b, idx: v() },
        },
        InstKind::CopyFrom { dst: b, src: b },
        InstKind::Swap(b, b),
        InstKind::AddBuf { dst: b, src: b },
        InstKind::ZeroBuf(b),
        InstKind::SumBuf(b),
        InstKind::Assert {
            cond: v(),
            message: Code::default(),
        },
        InstKind::Fail {
            cond: v(),
            site: 0,
            args: vec![v(), v()],
        },
        InstKind::If {
            cond: v(),
            then_blk: blk,
            else_blk: blk,
        },
        InstKind::For {
            range: RangeSpec {
                start: v(),
                end: v(),
                step: Some(v()),
                rev: false,
            },
            index: Value(9999),
            params: vec![Value(9998)],
            inits: vec![v()],
            body: blk,
            exit: vec![Value(9998)],
        },
        InstKind::While {
            cond: blk,
            params: vec![Value(9997)],
            inits: vec![v(), v()],
            body: blk,
            exit: vec![],
        },
        InstKind::CellDecl(Cell(0), v()),
        InstKind::CellGet(Cell(0)),
        InstKind::CellSet(Cell(0), v()),
        InstKind::CellAdd(Cell(0), v()),
        InstKind::TapeEnsure(b, v()),
        InstKind::TapeEnsureRow(b, v(), v()),
        InstKind::SaveRow {
            tape: b,
            idx: v(),
            src: b,
            row: Indices::of(&[v(), v()]),
        },
        InstKind::ReturnRow {
            tape: b,
            idx: v(),
            src: b,
        },
        InstKind::CkNew {
            ck: 0,
            spec: spec(&mut v),
            trip: Some(v()),
        },
        InstKind::CkForwardStep {
            ck: 0,
            step: v(),
            state: vec![CkItem::Value(v()), CkItem::Cell(Cell(0)), CkItem::Buf(b)],
        },
        InstKind::CkEndForward { ck: 0, count: v() },
        InstKind::CkReverse {
            ck: 0,
            state: vec![],
            advance: blk,
            taped: blk,
            kept: blk,
            adjoint: blk,
        },
        InstKind::Call {
            callee: callee.clone(),
            args: vec![
                CallArg::Scalar(v()),
                CallArg::Buf {
                    buf: b,
                    mutable: false,
                    range: Some(part(&mut v)),
                },
            ],
            suffix: CallSuffix::Rev {
                shadows: vec![
                    None,
                    Some(CallArg::Buf {
                        buf: b,
                        mutable: true,
                        range: Some(part(&mut v)),
                    }),
                ],
                seed: Some(v()),
            },
        },
        InstKind::Call {
            callee,
            args: vec![CallArg::Scalar(v())],
            suffix: CallSuffix::Fwd {
                tangents: vec![Some(CallArg::Scalar(v()))],
            },
        },
    ]
}

/// `map_operands` renames exactly the values `operands` lists, for every kind.
#[test]
fn map_operands_agrees_with_operands() {
    for kind in every_kind() {
        let mut f = Function::new("t");
        f.insts.push(InstData {
            kind: kind.clone(),
            results: vec![],
            span: proc_macro2::Span::call_site(),
        });
        let before = f.operands(Inst(0));
        f.insts[0].kind.map_operands(&mut |v| Value(v.0 + 1000));
        let after = f.operands(Inst(0));
        let want: Vec<Value> = before.iter().map(|v| Value(v.0 + 1000)).collect();
        assert_eq!(after, want, "{kind:?}");
        assert!(
            before.iter().all(|v| v.0 < 9000),
            "{kind:?}: a loop's own values are not operands"
        );
    }
}
