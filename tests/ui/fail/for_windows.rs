use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for w in x.windows(2) {
        s += w[0] * w[1] * a;
    }
    s
}

fn main() {}
