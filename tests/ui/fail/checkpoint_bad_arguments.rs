use phidiff::differentiate;

#[differentiate(reverse)]
fn f(x: &[f64], a: f64, steps: usize) -> f64 {
    let mut s = x[0];
    #[checkpoint(periodic(snapshots = 4))]
    for _ in 0..steps {
        s = s.sin() * a;
    }
    s
}

fn main() {}
