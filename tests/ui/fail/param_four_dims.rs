use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(t: &mut [Vec<Vec<Vec<f64>>>], a: f64) {
    t[0][0][0][0] *= a;
}

fn main() {}
