use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    fn sq(v: f64) -> f64 {
        v * v
    }
    sq(a) * x[0]
}

fn main() {}
