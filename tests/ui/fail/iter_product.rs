use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let p: f64 = x.iter().product();
    p * a
}

fn main() {}
