//! Property test of the gather form of CUDA adjoints (`derivative::gather`): random
//! stencil element functions (neighbours at `i ± 1`, `i ± 2`, `i ± w`, data-dependent
//! branches, a loop, a second output, an in-place update, an output written twice) go through the pipeline; the
//! IR interpreter runs the adjoint program for every index in order (the reference) and
//! the gather form (its gathering program for every element, then its finishing program
//! for every index), once in ascending and once in descending order of the elements: the
//! gather form's instances must not depend on each other, as a GPU runs them at once.
//! Every shadow, output and scalar adjoint must agree (rel 1e-12), also when the threads
//! cover only a prefix of the elements.

use super::program_gen::Rng;
use crate::derivative::gather::{gather, Gathered};
use crate::ir::interp::{run, RtArg, RtVal};
use crate::ir::{Function, ParamKind, Ty};

const PROGRAMS: u64 = 300;

/// One random stencil element function.
fn stencil(rng: &mut Rng) -> String {
    let shifts = [
        "- 2", "- 1", "", "+ 1", "+ 2", "- w", "+ w", "+ w - 1", "- w + 1",
    ];
    let mut pick = |rng: &mut Rng, names: &[&str]| -> String {
        let s = shifts[rng.below(shifts.len())];
        let b = names[rng.below(names.len())];
        format!("{b}[i {s}]")
    };
    let mut lets: Vec<String> = Vec::new();
    let mut body = String::new();
    let atom = |rng: &mut Rng,
                lets: &[String],
                pick: &mut dyn FnMut(&mut Rng, &[&str]) -> String|
     -> String {
        match rng.below(6) {
            0 if !lets.is_empty() => lets[rng.below(lets.len())].clone(),
            1 => "r".into(),
            2 => format!("{:.2}", 0.3 + rng.unit()),
            _ => pick(rng, &["u", "v"]),
        }
    };
    let expr = |rng: &mut Rng,
                lets: &[String],
                pick: &mut dyn FnMut(&mut Rng, &[&str]) -> String|
     -> String {
        let a = atom(rng, lets, pick);
        let b = atom(rng, lets, pick);
        let e = match rng.below(4) {
            0 => format!("{a} + {b}"),
            1 => format!("{a} - 0.5 * {b}"),
            _ => format!("{a} * {b}"),
        };
        match rng.below(5) {
            0 => format!("({e}).sin()"),
            1 => format!("(0.3 * ({e})).tanh()"),
            2 => format!("(0.2 * ({e})).exp()"),
            _ => e,
        }
    };
    for k in 0..1 + rng.below(3) {
        let e = expr(rng, &lets, &mut pick);
        body.push_str(&format!("    let a{k} = {e};\n"));
        lets.push(format!("a{k}"));
    }
    if rng.chance(0.4) {
        let c = pick(rng, &["u", "v"]);
        let (x, y) = (expr(rng, &lets, &mut pick), expr(rng, &lets, &mut pick));
        body.push_str(&format!(
            "    let b = if {c} > 0.1 {{ {x} }} else {{ {y} }};\n"
        ));
        lets.push("b".into());
    }
    if rng.chance(0.25) {
        // A loop: constant shifts inside it keep the gather form; a shift by the loop's
        // index (`u[i + k]`) does not (its adds are then atomic).
        let inner = if rng.chance(0.5) {
            pick(rng, &["u", "v"])
        } else {
            "u[i + k]".into()
        };
        body.push_str(&format!(
            "    let mut acc = 0.0;\n    for k in 0..3 {{\n        acc += {inner} * (k as f64 + r);\n    }}\n"
        ));
        lets.push("acc".into());
    }
    let total = lets.join(" + ");
    let out = match rng.below(6) {
        0 => format!("    out[i] = out[i] + {total};\n"),
        // Written twice: the adjoint reads the output's shadow after clearing it.
        1 => format!("    out[i] = {total};\n    out[i] = (out[i] * r).sin();\n"),
        2 => {
            let (c, x) = (pick(rng, &["u", "v"]), expr(rng, &lets, &mut pick));
            format!("    out[i] = {total};\n    if {c} > 0.5 {{\n        out[i] = {x};\n    }}\n")
        }
        _ => format!("    out[i] = {total};\n"),
    };
    body.push_str(&out);
    if rng.chance(0.3) {
        let e = expr(rng, &lets, &mut pick);
        body.push_str(&format!("    out2[i] = {e};\n"));
    }
    let boundary = match rng.below(3) {
        0 => "out[i] = u[i];",
        1 => "out[i] = 0.5 * v[i] + r;",
        _ => "out[i] = u[i] * u[i]; out2[i] = v[i];",
    };
    format!(
        "pub fn k(i: usize, u: &[f64], v: &[f64], out: &mut [f64], out2: &mut [f64], w: usize, r: f64) {{\n    let n = u.len();\n    if i < w + 2 || i + w + 2 >= n {{\n        {boundary}\n        return;\n    }}\n{body}}}\n"
    )
}

/// The arguments of `f` (the adjoint's parameters, then the number of elements where `f`
/// has it): buffers by name from `bufs`, `i`, `w`, `r`.
fn args(
    f: &Function,
    bufs: &[(String, Vec<f64>)],
    i: usize,
    w: usize,
    r: f64,
    n: usize,
) -> Vec<RtArg> {
    f.params
        .iter()
        .enumerate()
        .map(|(k, p)| match &p.kind {
            ParamKind::Buffer { .. } => {
                let b = bufs
                    .iter()
                    .find(|(name, _)| *name == p.name)
                    .expect("a buffer");
                RtArg::Buf(b.1.clone())
            }
            ParamKind::Scalar(Ty::Int) if k == 0 => RtArg::Scalar(RtVal::I(i as i64)),
            ParamKind::Scalar(Ty::Int) if p.name == "w" => RtArg::Scalar(RtVal::I(w as i64)),
            ParamKind::Scalar(Ty::Int) => RtArg::Scalar(RtVal::I(n as i64)),
            ParamKind::Scalar(_) => RtArg::Scalar(RtVal::F(r)),
            ParamKind::Opaque => RtArg::Opaque,
        })
        .collect()
}

/// Runs `f` at index `i` on `bufs`, writing its buffers back; returns its yields.
fn run_at(
    f: &Function,
    bufs: &mut [(String, Vec<f64>)],
    i: usize,
    w: usize,
    r: f64,
    n: usize,
) -> Result<Vec<f64>, String> {
    let mut a = args(f, bufs, i, w, r, n);
    let ys = run(f, &mut a)?;
    for (p, arg) in f.params.iter().zip(a) {
        if let (ParamKind::Buffer { .. }, RtArg::Buf(data)) = (&p.kind, arg) {
            let slot = bufs
                .iter_mut()
                .find(|(name, _)| *name == p.name)
                .expect("a buffer");
            slot.1 = data;
        }
    }
    Ok(ys
        .into_iter()
        .map(|y| y.as_float().expect("a float yield"))
        .collect())
}

fn close(what: &str, got: &[f64], want: &[f64]) -> Result<(), String> {
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        if (g - w).abs() > 1e-12 * w.abs().max(1.0) {
            return Err(format!("{what}[{k}]: gather form {g:e}, adjoint {w:e}"));
        }
    }
    Ok(())
}

/// The reference and the gather form on one stencil; `Ok(false)` when it has no gather form.
fn check(source: &str, seed: u64) -> Result<bool, String> {
    let item: syn::ItemFn = syn::parse_str(source).map_err(|e| e.to_string())?;
    let compiled = crate::expand::compile_with_for_tests("reverse, cuda", &item)?;
    let rev = &compiled.reverse;
    let Some(Gathered { main, finish, .. }) = gather(rev, &|_| true) else {
        return Ok(false);
    };
    crate::ir::verify::verify(&main).map_err(|e| format!("gather program: {e}"))?;
    if let Some(f) = &finish {
        crate::ir::verify::verify(f).map_err(|e| format!("finishing program: {e}"))?;
    }
    let (w, len) = (3, 26);
    let mut rng = Rng::new(seed);
    let mut start: Vec<(String, Vec<f64>)> = Vec::new();
    for p in &rev.params {
        if let ParamKind::Buffer { .. } = p.kind {
            let data = match p.name.as_str() {
                "du" | "dv" => vec![0.0; len],
                _ => (0..len).map(|_| rng.symmetric(1.0)).collect(),
            };
            start.push((p.name.clone(), data));
        }
    }
    let r = 0.3 + rng.unit();
    for n in [len, len - 5, 7] {
        let mut want = start.clone();
        let mut scalars = vec![0.0; rev.block(rev.body).yields.len()];
        for t in 0..n {
            let ys =
                run_at(rev, &mut want, t, w, r, n).map_err(|e| format!("adjoint at {t}: {e}"))?;
            scalars.iter_mut().zip(ys).for_each(|(s, y)| *s += y);
        }
        for descending in [false, true] {
            let mut got = start.clone();
            let mut sums = vec![0.0; scalars.len()];
            let mut order: Vec<usize> = (0..len.max(n)).collect();
            if descending {
                order.reverse();
            }
            for &j in &order {
                let ys = run_at(&main, &mut got, j, w, r, n)
                    .map_err(|e| format!("gather at {j}: {e}"))?;
                sums.iter_mut().zip(ys).for_each(|(s, y)| *s += y);
            }
            if let Some(fin) = &finish {
                for &j in order.iter().filter(|j| **j < n) {
                    run_at(fin, &mut got, j, w, r, n).map_err(|e| format!("finish at {j}: {e}"))?;
                }
            }
            let at = |what: &str| format!("{what} (n = {n}, descending {descending})");
            close(&at("scalar adjoints"), &sums, &scalars)?;
            for ((name, g), (_, w)) in got.iter().zip(&want) {
                close(&at(name), g, w)?;
            }
        }
    }
    Ok(true)
}

#[test]
fn gather_form_equals_the_adjoint_on_random_stencils() {
    let mut gathered = 0;
    let mut failures = Vec::new();
    for number in 0..PROGRAMS {
        let mut rng = Rng::new(0x5EED_0000 + number);
        let source = stencil(&mut rng);
        match check(&source, number) {
            Ok(g) => gathered += usize::from(g),
            Err(e) => failures.push(format!("program {number}:\n{source}{e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures; the first:\n{}",
        failures.len(),
        failures[0]
    );
    // About half have a gather form; a loop shifting by its index, an in-place update of
    // the output and an output written twice keep the atomic adds.
    assert!(
        gathered as u64 >= PROGRAMS * 2 / 5,
        "only {gathered} of {PROGRAMS} gathered"
    );
    eprintln!("gather form: {gathered} of {PROGRAMS} random stencils");
}
