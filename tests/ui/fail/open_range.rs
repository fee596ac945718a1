use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for i in 0.. {
        if i == x.len() {
            break;
        }
        s += x[i] * a;
    }
    s
}

fn main() {}
