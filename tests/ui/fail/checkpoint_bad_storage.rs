use phidiff::differentiate;

#[differentiate(reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = x[0];
    #[checkpoint(online(snapshots = 4), storage = tape)]
    while s < 1.0 {
        s = s.sin() * a + 0.5;
    }
    s
}

fn main() {}
