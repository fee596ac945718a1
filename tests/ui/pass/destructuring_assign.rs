// Destructuring assignment (once a compile-fail case): a swap, a place skipped with `_`,
// a nested tuple, a rest `..`, and one in a rayon closure; every value on the right is
// read before any place is written. Values and derivatives against closed forms.
use phidiff::differentiate;
use rayon::prelude::*;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut p = x[0];
    let mut q = a;
    (p, q) = (q, p);
    let mut r = 1.0;
    (r, _) = (p * q * r, q);
    (p, (q, r)) = (r, (p, q));
    // A rest skips values that are still read: `q` takes the last of four.
    (p, .., q) = (p + r, q, p, q * q);
    p * q + r
}

#[differentiate(forward, reverse)]
fn g(x: &[f64], out: &mut [f64]) {
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        let (mut p, mut q) = (x[i], 1.0);
        (p, q) = (q * p, p + q);
        *o = p * q;
    });
}

fn main() {
    let x = [2.0];
    // After the swap p = a, q = x; then r = a·x; then p = a·x, q = a, r = x; then
    // p = a·x + x, q = a²: f = (a·x + x)·a² + x, 74 at x = 2, a = 3.
    assert_eq!(f(&x, 3.0), 8.0 * 9.0 + 2.0);
    let mut dx = [0.0];
    let (v, da) = f_rev(&x, &mut dx, 3.0, 1.0);
    assert_eq!(v, 74.0);
    // ∂f/∂x = (a + 1)·a² + 1, ∂f/∂a = 3a²x + 2ax.
    assert_eq!((dx[0], da), (4.0 * 9.0 + 1.0, 3.0 * 9.0 * 2.0 + 2.0 * 3.0 * 2.0));
    let (v, t) = f_fwd(&x, &[1.0], 3.0, 0.0);
    assert_eq!((v, t), (74.0, 37.0));

    // g: out[i] = x[i]·(x[i] + 1), ∂out[i]/∂x[i] = 2x[i] + 1.
    let x = [0.5, 2.0, -1.5];
    let mut out = [0.0; 3];
    g(&x, &mut out);
    assert_eq!(out, [0.75, 6.0, 0.75]);
    let (mut dx, mut dout) = ([0.0; 3], [1.0, 10.0, 100.0]);
    g_rev(&x, &mut dx, &mut out, &mut dout);
    assert_eq!(dx, [2.0, 50.0, -200.0]);
}
