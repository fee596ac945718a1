//! Property test of the gather form of CUDA adjoints (`derivative::gather`): random
//! stencil element functions (neighbours at `i ± 1`, `i ± 2`, `i ± w`, data-dependent
//! branches, a loop, a second output, an in-place update, an output written twice) go through the pipeline; the
//! IR interpreter runs the adjoint program for every index in order (the reference) and
//! the gather form (its gathering program for every element, then its finishing program
//! for every index), once in ascending and once in descending order of the elements: the
//! gather form's instances must not depend on each other, as a GPU runs them at once.
//! Every shadow, output and scalar adjoint must agree (rel 1e-12), also when the threads
//! cover only a prefix of the elements. Where the CPU launcher runs the gather form in
//! parallel (`codegen::cuda_cpu::owned_writes`), it is also run so, each element seeing NaN in
//! the other elements of the slices it writes, and must agree too.

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
            // A length read from a parameter (`codegen::cuda_cpu::lengths_as_params`).
            ParamKind::Scalar(Ty::Int) if p.name.starts_with("__phidiff_len_") => {
                let of = &p.name["__phidiff_len_".len()..];
                let b = bufs.iter().find(|(name, _)| name == of).expect("a buffer");
                RtArg::Scalar(RtVal::I(b.1.len() as i64))
            }
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

/// Runs program `f`, which `owned_writes` says writes the slices `written` only at the
/// element (parameter 0), for each element of `order` as the parallel CPU launcher does
/// (its lengths from parameters): each on a copy of `bufs` whose written slices hold NaN
/// everywhere but at the element, so that reading another element's value shows. Checks
/// that the element leaves the other elements (a store there shows as a number; an add
/// there stays NaN, is dropped, and shows when the result is compared) and the slices it
/// does not write as they were, and gives finite values; then writes its elements into
/// `bufs`. Returns the sums of its yields.
#[allow(clippy::too_many_arguments)]
fn run_owned(
    f: &Function,
    written: &[usize],
    bufs: &mut [(String, Vec<f64>)],
    order: &[usize],
    w: usize,
    r: f64,
    n: usize,
    k: usize,
) -> Result<Vec<f64>, String> {
    let (g, _) = crate::codegen::cuda_cpu::lengths_as_params(f, written);
    let names: Vec<&str> = written.iter().map(|&p| f.params[p].name.as_str()).collect();
    let mut sums = vec![0.0; k];
    for &j in order {
        let mut own = bufs.to_vec();
        for (_, data) in own
            .iter_mut()
            .filter(|(name, _)| names.contains(&name.as_str()))
        {
            for (e, x) in data.iter_mut().enumerate() {
                if e != j {
                    *x = f64::NAN;
                }
            }
        }
        let ys = run_at(&g, &mut own, j, w, r, n).map_err(|e| format!("owned at {j}: {e}"))?;
        if ys.iter().any(|y| !y.is_finite()) {
            return Err(format!("element {j} read another's element: yields {ys:?}"));
        }
        sums.iter_mut().zip(&ys).for_each(|(s, y)| *s += y);
        for ((name, mine), (_, data)) in own.iter().zip(bufs.iter_mut()) {
            if !names.contains(&name.as_str()) {
                if mine != data {
                    return Err(format!("element {j} wrote {name}, which it does not own"));
                }
                continue;
            }
            for (e, x) in mine.iter().enumerate() {
                if e != j && !x.is_nan() {
                    return Err(format!("element {j} wrote {name}[{e}]"));
                }
            }
            if j < data.len() {
                if !mine[j].is_finite() {
                    return Err(format!(
                        "element {j} read another's element: {name}[{j}] = {}",
                        mine[j]
                    ));
                }
                data[j] = mine[j];
            }
        }
    }
    Ok(sums)
}

/// The reference and the gather form on one stencil; `Ok(None)` when it has no gather
/// form, `Ok(Some(owned))` when it has: `owned`, whether its programs run in parallel
/// with owned views (then also checked so).
fn check(source: &str, seed: u64) -> Result<Option<bool>, String> {
    let item: syn::ItemFn = syn::parse_str(source).map_err(|e| e.to_string())?;
    let compiled = crate::expand::compile_with_for_tests("reverse, cuda", &item)?;
    let rev = &compiled.reverse;
    let Some(Gathered { main, finish, .. }) = gather(rev, &|_| true) else {
        return Ok(None);
    };
    let owned = crate::codegen::cuda_cpu::owned_writes(&main).zip(match &finish {
        Some(f) => crate::codegen::cuda_cpu::owned_writes(f),
        None => Some(Vec::new()),
    });
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
        // The parallel CPU form: every element on its own elements only.
        if let Some((main_writes, finish_writes)) = &owned {
            let mut got = start.clone();
            let order: Vec<usize> = (0..len.max(n)).collect();
            let k = scalars.len();
            let sums = run_owned(&main, main_writes, &mut got, &order, w, r, n, k)
                .map_err(|e| format!("owned gather program (n = {n}): {e}"))?;
            if let Some(fin) = &finish {
                run_owned(fin, finish_writes, &mut got, &order[..n], w, r, n, 0)
                    .map_err(|e| format!("owned finishing program (n = {n}): {e}"))?;
            }
            let at = |what: &str| format!("{what} (n = {n}, owned)");
            close(&at("scalar adjoints"), &sums, &scalars)?;
            for ((name, g), (_, w)) in got.iter().zip(&want) {
                close(&at(name), g, w)?;
            }
        }
    }
    Ok(Some(owned.is_some()))
}

#[test]
fn gather_form_equals_the_adjoint_on_random_stencils() {
    let (mut gathered, mut owned) = (0, 0);
    let mut failures = Vec::new();
    for number in 0..PROGRAMS {
        let mut rng = Rng::new(0x5EED_0000 + number);
        let source = stencil(&mut rng);
        match check(&source, number) {
            Ok(g) => {
                gathered += usize::from(g.is_some());
                owned += usize::from(g == Some(true));
            }
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
    // Which of them run in parallel on the CPU (each element writing its own elements
    // only): not those whose gathering program keeps a scattered add (the loop's
    // `u[i + k]`, which the GPU adds atomically), about a quarter.
    assert!(
        owned * 3 >= gathered * 2,
        "only {owned} of {gathered} owned"
    );
    eprintln!(
        "gather form: {gathered} of {PROGRAMS} random stencils, {owned} in parallel on the CPU"
    );
}
