//! Property test of rayon loops composed with serial constructs (issue 45): random
//! compositions (`program_gen::parallel`) go through the checks of every random program
//! (dot product, finite differences, coarsened against `coarsen = off`), and their
//! gradients must equal their serial twins' (rel 1e-10 of the gradient's size: the twin
//! sums in another order). The compiled flavour, with checkpointed loops and calls, is
//! `tests/numeric/compositions.rs`, written from the same generator and checked here to be
//! current.

use super::super::program_gen::parallel::{composition, Composition, Flavour, HELPERS};
use super::*;

/// Compositions the interpreter runs.
const COMPOSITIONS: usize = 400;
/// Compositions compiled by rustc in `tests/numeric/compositions.rs`.
const COMPILED: usize = 14;

#[test]
fn parallel_compositions_match_serial_twins() {
    let only: Option<usize> = std::env::var("PHIDIFF_PROGRAM")
        .ok()
        .and_then(|s| s.parse().ok());
    let mut report = Report::default();
    let mut features: BTreeMap<&str, usize> = BTreeMap::new();
    for number in 0..COMPOSITIONS {
        if only.is_some_and(|o| o != number) {
            continue;
        }
        let c = composition(number, Flavour::Interpreted, "f");
        for f in &c.parallel.features {
            *features.entry(f).or_default() += 1;
        }
        report.count(&c.parallel);
        let mut rng = Rng::new(0x7417_0045 ^ number as u64);
        let checked = compile_and_check(&c.parallel, &mut rng, number % 4 == 0)
            .and_then(|(outcome, ..)| same_as_twin(&c, &mut rng).map(|()| outcome));
        match checked {
            Ok((outcome, _)) => *report.outcomes.entry(outcome).or_default() += 1,
            Err(failure) => {
                let failure = Failure {
                    detail: format!("{}\n--- serial twin ---\n{}", failure.detail, c.serial),
                    ..failure
                };
                report.fail(number, &c.parallel, failure)
            }
        }
    }
    eprintln!("parallel compositions by feature: {features:?}");
    if !report.failures.is_empty() {
        panic!(
            "{} of {} compositions failed\n\n{}",
            report.failures.len(),
            report.programs,
            report.failures.join("\n\n")
        );
    }
    if only.is_none() {
        for feature in [
            "parallel in for",
            "parallel in while",
            "parallel in nested for",
            "parallel in a branch in a loop",
            "parallel writer",
            "par_iter sum",
            "into_par_iter sum",
            "swap after a parallel writer",
            "copy after a parallel writer",
            "sum scales the state",
        ] {
            assert!(
                features.get(feature).is_some_and(|&k| k >= 20),
                "only {:?} compositions have {feature}",
                features.get(feature)
            );
        }
        let checked = report.outcomes.get(&Outcome::Checked).copied().unwrap_or(0);
        assert!(
            checked * 100 >= COMPOSITIONS * 95,
            "finite differences checked only {checked} of {COMPOSITIONS} compositions"
        );
    }
}

/// The composition's value and gradient (seed 1, zero shadows) against its twin's, at
/// three points of `n` = 1, 3 and 7 cells.
fn same_as_twin(c: &Composition, rng: &mut Rng) -> Result<(), Failure> {
    let item: syn::ItemFn = syn::parse_str(&c.serial)
        .map_err(|e| Failure::new("generator: twin does not parse", e.to_string()))?;
    let twin = crate::expand::compile_for_tests(&item)
        .map_err(|e| Failure::new("compile error (serial twin)", e))?;
    let parallel = crate::expand::compile_for_tests(
        &syn::parse_str(&c.parallel.src).expect("checked by compile_and_check"),
    )
    .map_err(|e| Failure::new("compile error", e))?;
    let params = &c.parallel.params;
    for n in [1, 3, 7] {
        let point = Point {
            n,
            active: (0..n + 1).map(|_| rng.symmetric(1.2)).collect(),
        };
        let shadows = vec![0.0; n + 1];
        let mut grads = Vec::new();
        for (what, f) in [
            ("parallel", &parallel.reverse),
            ("serial twin", &twin.reverse),
        ] {
            let mut args = arguments(params, &point, Mode::Reverse { seed: 1.0 }, &shadows);
            let results = run_floats(f, &mut args, "reverse run")?;
            let (g, _) = collect_adjoint(params, &point, &args, &results, &shadows)
                .map_err(|e| Failure::new("reverse run", format!("{what}: {e}")))?;
            grads.push((results[0], g));
        }
        let ((y, g), (y_twin, g_twin)) = (&grads[0], &grads[1]);
        let scale = g_twin.iter().map(|v| v.abs()).sum::<f64>() + 1e-8;
        let agree = close(*y, *y_twin, 1e-12, y_twin.abs() + 1e-8)
            && g.iter()
                .zip(g_twin)
                .all(|(a, b)| close(*a, *b, 1e-10, scale));
        if !agree {
            return Err(Failure::new(
                "parallel vs serial twin",
                format!(
                    "n = {n}, point = {:?}\nvalue {y} vs twin {y_twin}\ngradient {g:?}\ntwin's    {g_twin:?}",
                    point.active
                ),
            ));
        }
    }
    Ok(())
}

/// The text of `tests/numeric/compositions.rs`: the helpers, `COMPILED` compiled
/// compositions with their twins, and the test that checks them.
fn compiled_file() -> String {
    let mut out = String::from(
        "//! Generated by `ad-macros/src/tests/random_programs/parallel.rs` (rerun its\n\
         //! `compositions_file_is_current` test with `PHIDIFF_BLESS=1` after changing the\n\
         //! generator): random compositions of rayon loops with `for`/`while` loops, branches,\n\
         //! checkpointed loops and calls of differentiated helpers, each beside its serial\n\
         //! twin and its form on a struct of its inputs (for odd K in a plain helper taking\n\
         //! the struct, and for K = 1 mod 4 also a `Copy` struct by value, unless it\n\
         //! checkpoints). `compositions_match_serial_twins`\n\
         //! checks every one against its twin and its struct form (rel 1e-10),\n\
         //! finite differences and the dot-product test (`TOLS`), and on 1, 2 and 8 threads\n\
         //! (bitwise where no helper's primal sums with rayon's own `sum`).\n\n\
         // Not every composition writes `v` or the carried `s`.\n\
         #![allow(unused_mut)]\n\n\
         use super::differentiate;\n\
         use crate::common::*;\n\
         use rayon::prelude::*;\n\n\
         /// The compositions' initial profile, inside [`Knobs`].\n\
         #[derive(phidiff::Differentiable, Clone, Debug)]\n\
         pub struct Profile {\n\
         \x20   pub u0: Vec<f64>,\n\
         }\n\n\
         /// The compositions' inputs as a struct holding a struct: each `composition_K_struct`\n\
         /// reads them as `p.init.u0` and `p.a` (structs and structs inside them in\n\
         /// checkpointed, parallel and serial loops, passed to calls by field).\n\
         #[derive(phidiff::Differentiable, Clone, Debug)]\n\
         pub struct Knobs {\n\
         \x20   pub init: Profile,\n\
         \x20   pub a: f64,\n\
         }\n\n\
         /// A small `Copy` struct passed by value (`composition_K_knobs(p, Gain { a: p.a })`\n\
         /// for K = 1 mod 4).\n\
         #[derive(phidiff::Differentiable, Clone, Copy, Debug)]\n\
         pub struct Gain {\n\
         \x20   pub a: f64,\n\
         }\n\n",
    );
    out.push_str(HELPERS);
    let mut names = Vec::new();
    for k in 0..COMPILED {
        let name = format!("composition_{k}");
        let c = composition(k, Flavour::Compiled, &name);
        let features: Vec<&str> = c.parallel.features.iter().copied().collect();
        out.push_str(&format!(
            "\n/// {}.\n#[differentiate(forward, reverse)]\n{}\n/// [`{name}`] with serial loops.\n#[differentiate(forward, reverse)]\n{}\n/// [`{name}`] on a struct of its inputs.\n#[differentiate(forward, reverse)]\n{}",
            features.join(", "),
            c.parallel.src,
            c.serial,
            via_helper(k, on_struct(&c.parallel.src, &name), &name),
        ));
        // A callee's primal runs the user's rayon `sum`, whose order rayon does not fix.
        let calls = c.parallel.features.iter().any(|f| f.starts_with("call"));
        names.push((name, !calls));
    }
    out.push_str(
        "\ntype Primal = fn(&[f64], f64) -> f64;\n\
         type Grad = fn(&[f64], f64) -> (f64, (Vec<f64>, f64));\n\
         type Fwd = fn(&[f64], &[f64], f64, f64) -> (f64, f64);\n\
         type Rev = fn(&[f64], &mut [f64], f64, f64) -> (f64, f64);\n\
         type StructPrimal = fn(&Knobs) -> f64;\n\
         type StructGrad = fn(&Knobs) -> (f64, Knobs);\n\n\
         /// Each composition and its twin: (name, primal, _fwd, _rev, _grad, twin's primal,\n\
         /// twin's _grad, whether its derivatives are bitwise reproducible: not where it calls a\n\
         /// helper, whose primal sums with rayon's own `sum`, in an order rayon does not fix;\n\
         /// the struct form and its _grad).\n\
         const COMPOSITIONS: &[(&str, Primal, Fwd, Rev, Grad, Primal, Grad, bool, StructPrimal, StructGrad)] = &[\n",
    );
    for (name, reproducible) in &names {
        out.push_str(&format!(
            "    (\"{name}\", {name}, {name}_fwd, {name}_rev, {name}_grad, {name}_serial, {name}_serial_grad, {reproducible}, {name}_struct, {name}_struct_grad),\n"
        ));
    }
    out.push_str(
        "];\n\n\
         pub fn compositions_match_serial_twins() {\n\
         \x20   for &(name, primal, fwd, rev, grad, twin, twin_grad, reproducible, on_struct, struct_grad) in COMPOSITIONS {\n\
         \x20       for n in [1, 4, 1100] {\n\
         \x20           let mut p: Vec<f64> = (0..n).map(|i| 0.7 * (1.3 * i as f64 + 0.4).sin()).collect();\n\
         \x20           p.push(0.8);\n\
         \x20           let (u0, a) = (&p[..n], p[n]);\n\
         \x20           let (v, (g, ga)) = grad(u0, a);\n\
         \x20           let (v_twin, (g_twin, ga_twin)) = twin_grad(u0, a);\n\
         \x20           let scale = g_twin.iter().map(|x| x.abs()).sum::<f64>() + ga_twin.abs();\n\
         \x20           assert_close(&format!(\"{name}: value vs twin (n = {n})\"), v, v_twin, 1e-12, 1e-12);\n\
         \x20           assert_close(&format!(\"{name}: primal (n = {n})\"), primal(u0, a), twin(u0, a), 1e-12, 1e-12);\n\
         \x20           assert_all_close(&format!(\"{name}: ∂/∂u0 vs twin (n = {n})\"), &g, &g_twin, 0.0, 1e-10 * scale + 1e-14);\n\
         \x20           assert_close(&format!(\"{name}: ∂/∂a vs twin (n = {n})\"), ga, ga_twin, 0.0, 1e-10 * scale + 1e-14);\n\
         \x20           let knobs = Knobs { init: Profile { u0: u0.to_vec() }, a };\n\
         \x20           // Rounding apart: rayon's `sum` in a helper's primal fixes no order.\n\
         \x20           assert_close(&format!(\"{name}: primal on a struct (n = {n})\"), on_struct(&knobs), primal(u0, a), 1e-12, 1e-12);\n\
         \x20           let (v_s, g_s) = struct_grad(&knobs);\n\
         \x20           assert_close(&format!(\"{name}: value on a struct (n = {n})\"), v_s, v, 1e-12, 1e-12);\n\
         \x20           assert_all_close(&format!(\"{name}: ∂/∂p.init.u0 (n = {n})\"), &g_s.init.u0, &g, 0.0, 1e-10 * scale + 1e-14);\n\
         \x20           assert_close(&format!(\"{name}: ∂/∂p.a (n = {n})\"), g_s.a, ga, 0.0, 1e-10 * scale + 1e-14);\n\
         \x20           if reproducible {\n\
         \x20               super::parallel::same_on_1_2_8_threads(name, super::parallel::Across::Rounding, || grad(u0, a));\n\
         \x20           }\n\
         \x20           for threads in [1, 2, 8] {\n\
         \x20               let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect(\"a thread pool\");\n\
         \x20               let (v_t, (g_t, ga_t)) = pool.install(|| grad(u0, a));\n\
         \x20               assert_close(&format!(\"{name}: value on {threads} threads (n = {n})\"), v_t, v, 1e-12, 1e-12);\n\
         \x20               assert_all_close(&format!(\"{name}: ∂/∂u0 on {threads} threads (n = {n})\"), &g_t, &g, 0.0, 1e-10 * scale + 1e-14);\n\
         \x20               assert_close(&format!(\"{name}: ∂/∂a on {threads} threads (n = {n})\"), ga_t, ga, 0.0, 1e-10 * scale + 1e-14);\n\
         \x20           }\n\
         \x20       }\n\
         \x20       let m = 5;\n\
         \x20       let mut p: Vec<f64> = (0..m).map(|i| 0.6 * (0.9 * i as f64 - 0.3).cos()).collect();\n\
         \x20       p.push(0.7);\n\
         \x20       check_grad(\n\
         \x20           name,\n\
         \x20           &p,\n\
         \x20           &|p| primal(&p[..m], p[m]),\n\
         \x20           &|p| {\n\
         \x20               let (v, (mut g, ga)) = grad(&p[..m], p[m]);\n\
         \x20               g.push(ga);\n\
         \x20               (v, g)\n\
         \x20           },\n\
         \x20           TOLS,\n\
         \x20       );\n\
         \x20       check_fwd_rev(&Case {\n\
         \x20           name,\n\
         \x20           x: &p,\n\
         \x20           primal: &|p| vec![primal(&p[..m], p[m])],\n\
         \x20           jvp: &|p, d| {\n\
         \x20               let (v, t) = fwd(&p[..m], &d[..m], p[m], d[m]);\n\
         \x20               (vec![v], vec![t])\n\
         \x20           },\n\
         \x20           vjp: &|p, s| {\n\
         \x20               let mut g = zeros(m);\n\
         \x20               let (v, ga) = rev(&p[..m], &mut g, p[m], s[0]);\n\
         \x20               g.push(ga);\n\
         \x20               (vec![v], g)\n\
         \x20           },\n\
         \x20           tols: TOLS,\n\
         \x20       });\n\
         \x20   }\n\
         }\n",
    );
    out
}

/// The struct form `on` of composition `k`, for odd `k` moved into a plain helper taking
/// the struct (`fn NAME_knobs(p: &Knobs)`, inlined where `NAME_struct` calls it: a struct
/// passed to a helper, with what the composition holds); not where it checkpoints a loop,
/// whose attribute only a differentiated function may carry.
/// For `k` = 1 mod 4 the helper also takes `a` in a `Copy` struct by value (`fn
/// NAME_knobs(p: &Knobs, gain: Gain)`, called with a literal `Gain { a: p.a }`), which the
/// body reads as `gain.a` in its loops and closures.
fn via_helper(k: usize, on: String, name: &str) -> String {
    if k % 2 == 0 || on.contains("#[checkpoint") {
        return on;
    }
    if k % 4 == 1 {
        let helper = on
            .replacen(
                &format!("pub fn {name}_struct(p: &Knobs)"),
                &format!("fn {name}_knobs(p: &Knobs, gain: Gain)"),
                1,
            )
            .replace("p.a", "gain.a");
        return format!(
            "pub fn {name}_struct(p: &Knobs) -> f64 {{\n    {name}_knobs(p, Gain {{ a: p.a }})\n}}\n/// [`{name}_struct`]'s body, a plain helper taking the struct and a `Gain` by value.\n{helper}"
        );
    }
    let helper = on.replacen(
        &format!("pub fn {name}_struct("),
        &format!("fn {name}_knobs("),
        1,
    );
    format!(
        "pub fn {name}_struct(p: &Knobs) -> f64 {{\n    {name}_knobs(p)\n}}\n/// [`{name}_struct`]'s body, a plain helper taking the struct.\n{helper}"
    )
}

/// The composition `src` (`fn NAME(u0: &[f64], a: f64) -> f64`) as `fn NAME_struct(p:
/// &Knobs) -> f64`, reading `p.init.u0` and `p.a` (every identifier `u0` and `a` of the body;
/// the generator binds no other).
fn on_struct(src: &str, name: &str) -> String {
    let head = format!("pub fn {name}(u0: &[f64], a: f64) -> f64 {{");
    assert!(src.starts_with(&head), "a composition's head: {src}");
    let body = &src[head.len()..];
    let mut out = format!("pub fn {name}_struct(p: &Knobs) -> f64 {{");
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts = (c.is_alphabetic() || c == '_')
            && (i == 0
                || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == '.'));
        if !starts {
            out.push(c);
            i += 1;
            continue;
        }
        let end = (i..chars.len())
            .find(|&j| !(chars[j].is_alphanumeric() || chars[j] == '_'))
            .unwrap_or(chars.len());
        let word: String = chars[i..end].iter().collect();
        match word.as_str() {
            "u0" => out.push_str("p.init.u0"),
            "a" => out.push_str("p.a"),
            _ => out.push_str(&word),
        }
        i = end;
    }
    out
}

/// `tests/numeric/compositions.rs` is what the generator writes (`PHIDIFF_BLESS=1`
/// rewrites it), and its compositions use checkpointed loops and calls.
#[test]
fn compositions_file_is_current() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/numeric/compositions.rs");
    let text = compiled_file();
    let mut features = BTreeSet::new();
    for k in 0..COMPILED {
        features.extend(composition(k, Flavour::Compiled, "f").parallel.features);
    }
    for feature in [
        "parallel in a checkpointed loop",
        "call with a parallel sum",
        "call with a parallel step",
        "parallel in for",
        "parallel in while",
    ] {
        assert!(
            features.contains(feature),
            "no compiled composition has {feature}"
        );
    }
    if std::env::var_os("PHIDIFF_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write tests/numeric/compositions.rs");
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == text,
        "tests/numeric/compositions.rs is not what the generator writes; rerun this test with PHIDIFF_BLESS=1 and review the diff"
    );
}
