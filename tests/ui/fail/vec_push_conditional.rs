use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut big = Vec::new();
    for &v in x {
        if v > 1.0 {
            big.push(v * a);
        }
    }
    big.iter().sum()
}

fn main() {}
