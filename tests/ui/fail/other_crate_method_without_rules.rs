use phidiff::differentiate;
use phidiff_fixture_geom::Vec3;

// A method of another crate's struct that takes a closure: not inlined, and it has no
// `#[differentiate]`.
#[differentiate(forward, reverse)]
fn f(p: &Vec3<f64>, s: f64) -> f64 {
    p.sum_by(|c| c * c) * s + p.norm()
}

fn main() {}
