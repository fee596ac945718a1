use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut kept = Vec::new();
    let mut i = 0;
    while i < x.len() && x[i] > 0.0 {
        kept.push(x[i] * a);
        i += 1;
    }
    kept.iter().sum()
}

fn main() {}
