// Destructuring assignment (once a compile-fail case): a swap, a place skipped with `_`,
// and a nested tuple; every value on the right is read before any place is written.
use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut p = x[0];
    let mut q = a;
    (p, q) = (q, p);
    let mut r = 1.0;
    (r, _) = (p * q * r, q);
    (p, (q, r)) = (r, (p, q));
    p * q + r
}

fn main() {
    let x = [2.0];
    // After the swap p = a, q = x; then r = a·x; then p = a·x, q = a, r = x:
    // f = a²x + x, 20 at x = 2, a = 3.
    assert_eq!(f(&x, 3.0), 6.0 * 3.0 + 2.0);
    let mut dx = [0.0];
    let (v, da) = f_rev(&x, &mut dx, 3.0, 1.0);
    assert_eq!(v, 20.0);
    // ∂f/∂x = a² + 1, ∂f/∂a = 2ax.
    assert_eq!((dx[0], da), (3.0 * 3.0 + 1.0, 2.0 * 3.0 * 2.0));
    let (v, t) = f_fwd(&x, &[1.0], 3.0, 0.0);
    assert_eq!((v, t), (20.0, 10.0));
}
