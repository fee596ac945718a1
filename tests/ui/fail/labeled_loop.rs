use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    'outer: for i in 0..x.len() {
        for j in 0..x.len() {
            if x[i] * x[j] > a {
                break 'outer;
            }
            s += x[i] * x[j];
        }
    }
    s
}

fn main() {}
