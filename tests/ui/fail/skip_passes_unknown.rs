use phidiff::differentiate;

#[differentiate(reverse, skip_passes(twin_ifs, strip_minning))]
fn f(x: &[f64], a: f64) -> f64 {
    x[0] * a
}

fn main() {}
