use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: &mut f64) -> f64 {
    *a = x[0] * 2.0;
    x[0]
}

fn main() {}
