use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut i = 0;
    let v = loop {
        if x[i] > a {
            break x[i];
        }
        i += 1;
    };
    v * a
}

fn main() {}
