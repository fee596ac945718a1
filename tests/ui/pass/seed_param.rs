//! A parameter named `seed` does not collide with `_rev`'s seed, nor `ds` with the shadow of `s`.
use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(s: &[f64], ds: &[f64], seed: f64) -> f64 {
    s[0] * ds[0] * seed
}

fn main() {
    let (v, (gs, gds, gseed)) = f_grad(&[2.0], &[3.0], 4.0);
    assert_eq!(v, 24.0);
    assert_eq!((gs[0], gds[0], gseed), (12.0, 8.0, 6.0));
    let mut d1 = [0.0];
    let mut d2 = [0.0];
    let (v, gseed) = f_rev(&[2.0], &mut d1, &[3.0], &mut d2, 4.0, 1.0);
    assert_eq!((v, gseed, d1[0], d2[0]), (24.0, 6.0, 12.0, 8.0));
}
