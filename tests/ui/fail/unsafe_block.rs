use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let v = unsafe { *x.get_unchecked(0) };
    v * a
}

fn main() {}
