use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(t: &[Vec<Vec<f64>>], a: f64) -> f64 {
    let plane = &t[0];
    plane[0][0] * a
}

fn main() {}
