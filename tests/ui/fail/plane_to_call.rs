use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn plane_sum(p: &[Vec<f64>]) -> f64 {
    let mut s = 0.0;
    for row in p {
        s += row.iter().sum::<f64>();
    }
    s
}

#[differentiate(forward, reverse)]
fn f(t: &[Vec<Vec<f64>>], a: f64) -> f64 {
    plane_sum(&t[0]) * a
}

fn main() {}
