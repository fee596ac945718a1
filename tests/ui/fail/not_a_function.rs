use phidiff::differentiate;

#[differentiate(forward, reverse)]
struct Model {
    k: f64,
}

fn main() {}
