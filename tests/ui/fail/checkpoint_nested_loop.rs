use phidiff::differentiate;

#[differentiate(reverse)]
fn f(x: &[f64], a: f64, steps: usize) -> f64 {
    let mut s = x[0];
    for k in 0..x.len() {
        #[checkpoint(revolve(snapshots = 8))]
        for _ in 0..steps {
            s = s.sin() * a + x[k];
        }
    }
    s
}

fn main() {}
