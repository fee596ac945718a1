use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(m: &[Vec<f64>], a: f64) -> f64 {
    let mut s = 0.0;
    for row in &m[1..] {
        s += row[0] * a;
    }
    s
}

fn main() {}
