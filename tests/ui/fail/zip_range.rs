use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for (i, v) in (0..x.len()).zip(x.iter()) {
        s += *v * a * (i as f64);
    }
    s
}

fn main() {}
