use phidiff::differentiate;

#[differentiate(reverse(width = 2))]
fn f(x: &[f64], steps: usize) -> f64 {
    let mut u = x[0];
    #[checkpoint(revolve(snapshots = 4))]
    for _ in 0..steps {
        u = u * 0.9 + 0.1 * u.sin();
    }
    u
}

fn main() {}
