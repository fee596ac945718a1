use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(mut x: Vec<f64>, mut y: Vec<f64>, a: f64) -> f64 {
    std::mem::swap(&mut x, &mut y);
    x[0] * a + y[0]
}

fn main() {}
