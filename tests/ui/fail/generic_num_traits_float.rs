use phidiff::differentiate;

// `num_traits::Float` lacks what the generated code needs; the bound is `phidiff::Float`.
#[differentiate(forward, reverse)]
fn f<T: num_traits::Float>(x: &[T], a: T) -> T {
    x[0] * a
}

fn main() {}
