use phidiff::differentiate;

// The generic float type needs the `Float` bound: without it phidiff sees no float.
#[differentiate(forward, reverse)]
fn f<T: Copy + std::ops::Mul<Output = T>>(x: &[T], a: T) -> T {
    x[0] * a
}

fn main() {}
