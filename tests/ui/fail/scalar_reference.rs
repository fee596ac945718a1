use phidiff::differentiate;

// A shared borrow of a number reads as its value; a mutable one is not supported.
#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = a;
    let r = &mut s;
    *r += x[0];
    s * x[1]
}

fn main() {}
