use phidiff::differentiate;

mod geom {
    #[derive(Clone, Copy, phidiff::Differentiable)]
    pub struct P2 {
        pub x: f64,
        pub y: f64,
    }

    // Returns a struct, from another module than the caller's: not inlined.
    pub fn mid(a: P2, b: P2) -> P2 {
        P2 {
            x: 0.5 * (a.x + b.x),
            y: 0.5 * (a.y + b.y),
        }
    }
}
use geom::P2;

#[differentiate(forward, reverse)]
fn f(x: &[f64]) -> f64 {
    let a = P2 { x: x[0], y: x[1] };
    let b = P2 { x: x[2], y: x[3] };
    let m = geom::mid(a, b);
    m.x * m.y
}

fn main() {}
