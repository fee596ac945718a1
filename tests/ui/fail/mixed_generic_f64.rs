use phidiff::{differentiate, Float};

#[differentiate(forward, reverse)]
fn f<T: Float>(x: &[T], a: f64) -> T {
    x[0] * T::from(a).unwrap()
}

fn main() {}
