use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while let Some(v) = x.iter().nth(i) {
        s += *v * a;
        i += 2;
    }
    s
}

fn main() {}
