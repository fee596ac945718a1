//! Text snapshots of each pass on small inputs: the lowered IR, the activity of its values,
//! the forward program and the reverse program (with its tapes). `PHIDIFF_BLESS=1` rewrites.

use crate::analysis::activity;
use crate::diagnostics::Diagnostics;
use crate::expand::compile_with_for_tests;
use crate::ir::printer::print;
use std::path::PathBuf;

/// The programs of `src` as `#[differentiate]` compiles them (`expand::compile`, the
/// passes of `pipeline::PIPELINE`), coarsened and with `coarsen = off`.
fn snapshot(name: &str, src: &str) {
    let item: syn::ItemFn = syn::parse_str(src).expect("test input parses");
    let diag = Diagnostics::default();
    let sig = crate::parse::signature::read(&item.sig, None, &diag).expect("signature");
    diag.check().expect("the signature reads");
    let compiled = compile_with_for_tests("forward, reverse", &item).expect("compiles");
    let fine = compile_with_for_tests("forward, reverse, coarsen = off", &item).expect("compiles");
    let primal = &compiled.primal;
    let active: Vec<bool> = sig.params.iter().map(|p| p.active).collect();
    let act = activity::analyze(primal, &active);
    let active_values: Vec<String> = (0..primal.values.len())
        .map(|k| crate::ir::Value(k as u32))
        .filter(|v| act.value(*v))
        .map(|v| v.to_string())
        .collect();
    let fwd = &compiled.forward;
    let revs = [print(&compiled.reverse), print(&fine.reverse)];
    let text = format!(
        "# lowered\n{}\n# active\n{}\n\n# forward\n{}\n# reverse (coarsened)\n{}\n# reverse (coarsen = off)\n{}",
        print(primal),
        active_values.join(" "),
        print(fwd),
        revs[0],
        revs[1]
    );
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("src/tests/snapshots/{name}.ir"));
    if std::env::var_os("PHIDIFF_BLESS").is_some() || !path.exists() {
        std::fs::write(&path, &text).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path).expect("read snapshot");
    assert!(
        want == text,
        "IR of `{name}` changed; rerun with PHIDIFF_BLESS=1 and review.\n{text}"
    );
}

#[test]
fn straight_line() {
    snapshot(
        "straight_line",
        "fn f(a: f64, b: f64) -> f64 { let t = a * b; t.sin() / b }",
    );
}

#[test]
fn branch_phi() {
    snapshot(
        "branch_phi",
        "fn f(x: f64, n: usize) -> f64 { let mut y = x; if n > 2 { y = y * y; } else { y = y + 1.0; } y }",
    );
}

#[test]
fn loop_with_tape() {
    snapshot(
        "loop_tape",
        "fn f(x: &[f64]) -> f64 { let mut p = 1.0; for i in 0..x.len() { p = p * x[i].sin(); } p }",
    );
}

#[test]
fn while_break_continue() {
    snapshot(
        "while_jumps",
        "fn f(a: f64) -> f64 { let mut x = a; let mut k = 0; loop { k += 1; if k > 5 { break; } if k == 2 { continue; } x = x * a; } x }",
    );
}

#[test]
fn inactive_values_get_no_derivative() {
    // `c` depends on no active input; `d` influences nothing returned.
    snapshot(
        "activity",
        "fn f(x: f64, n: usize) -> f64 { let c = (n as f64).sqrt(); let d = x.exp(); x * c }",
    );
}
