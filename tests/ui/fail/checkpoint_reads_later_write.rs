use phidiff::differentiate;

#[differentiate(reverse)]
fn f(x: &[f64], a: f64, steps: usize) -> f64 {
    let mut forcing = x.to_vec();
    let mut s = x[0];
    #[checkpoint(revolve(snapshots = 8))]
    for t in 0..steps {
        s = s.sin() * a + forcing[t % forcing.len()];
    }
    forcing[0] = s;
    s + forcing[0]
}

fn main() {}
