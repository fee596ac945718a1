use phidiff::differentiate;

#[differentiate(reverse(width = 2))]
fn f(x: &[f64], a: f64) -> Option<f64> {
    Some(*x.first()? * a)
}

fn main() {}
