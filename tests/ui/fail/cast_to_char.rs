use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64, n: u8) -> f64 {
    let c = n as char;
    if c == 'a' {
        x[0] * a
    } else {
        a
    }
}

fn main() {}
