use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    let mut s = a;
    let mut i = 0;
    loop {
        s = s * x[i];
        i += 1;
        if i == x.len() {
            break s;
        }
    };
    s
}

fn main() {}
