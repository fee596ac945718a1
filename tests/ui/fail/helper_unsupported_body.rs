use phidiff::differentiate;

// What phidiff cannot differentiate inside an inlined helper is reported at the call.
fn heading(dx: f64, dy: f64) -> f64 {
    dy.atan2(dx).to_degrees()
}

#[differentiate(forward, reverse)]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 1..x.len() {
        s += heading(x[i] - x[i - 1], 1.0);
    }
    s
}

fn main() {}
