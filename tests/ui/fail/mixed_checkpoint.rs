use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f32], a: f64) -> f64 {
    let mut s = 0.0;
    #[checkpoint(revolve(snapshots = 4))]
    for i in 0..x.len() {
        s = (s + a * x[i] as f64).sin();
    }
    s
}

fn main() {}
