use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn head(x: &[f64]) -> Option<f64> {
    Some(*x.first()?)
}

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64, steps: usize) -> Option<f64> {
    let mut s = a;
    #[checkpoint(revolve(snapshots = 2))]
    for _ in 0..steps {
        s = (s * head(x)?).sin();
    }
    Some(s)
}

fn main() {}
