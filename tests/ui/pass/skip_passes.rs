// `skip_passes(..)` (hidden, for bug reports): a sum of a stencil, with every optional pass
// ruled out, gives the gradient it gives with all of them (and the closed form).
use phidiff::differentiate;

#[differentiate(reverse)]
fn energy(u: &[f64], r: f64) -> f64 {
    let mut s = 0.0;
    for i in 1..u.len() - 1 {
        let lap = u[i - 1] - 2.0 * u[i] + u[i + 1];
        s += r * lap * lap;
    }
    s
}

#[differentiate(
    reverse,
    skip_passes(
        sum_fusion,
        loop_fusion,
        extrema,
        backward_counters,
        same_slots,
        carried_adds,
        invariant_adds,
        index_hoisting,
        twin_ifs,
        strip_mining,
        index_sets
    )
)]
fn energy_plain(u: &[f64], r: f64) -> f64 {
    let mut s = 0.0;
    for i in 1..u.len() - 1 {
        let lap = u[i - 1] - 2.0 * u[i] + u[i + 1];
        s += r * lap * lap;
    }
    s
}

fn main() {
    let u: Vec<f64> = (0..12).map(|k| (0.7 * k as f64).sin()).collect();
    let r = 0.3;
    let (mut du, mut du_plain) = (vec![0.0; 12], vec![0.0; 12]);
    let (v, dr) = energy_rev(&u, &mut du, r, 1.0);
    let (w, dr_plain) = energy_plain_rev(&u, &mut du_plain, r, 1.0);
    assert_eq!(v, w);
    assert!((dr - dr_plain).abs() <= 1e-13 * dr.abs());
    // The closed form: ∂/∂u[j] = Σᵢ 2r·lapᵢ·∂lapᵢ/∂u[j], ∂/∂r = Σᵢ lapᵢ².
    let lap: Vec<f64> = (1..11).map(|i| u[i - 1] - 2.0 * u[i] + u[i + 1]).collect();
    let mut want = vec![0.0; 12];
    for (k, l) in lap.iter().enumerate() {
        let i = k + 1;
        want[i - 1] += 2.0 * r * l;
        want[i] -= 4.0 * r * l;
        want[i + 1] += 2.0 * r * l;
    }
    assert!((dr - lap.iter().map(|l| l * l).sum::<f64>()).abs() <= 1e-13);
    for j in 0..12 {
        assert!((du[j] - want[j]).abs() <= 1e-13, "{j}: {} vs {}", du[j], want[j]);
        assert!((du_plain[j] - want[j]).abs() <= 1e-13, "{j}: {} vs {}", du_plain[j], want[j]);
    }
}
