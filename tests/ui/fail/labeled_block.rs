use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = a;
    'done: {
        if x[0] > a {
            break 'done;
        }
        s = s * x[0];
    }
    s
}

fn main() {}
