use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = 0;
    for i in 0..x.len() {
        s += x[i] * a;
    }
    s
}

fn main() {}
