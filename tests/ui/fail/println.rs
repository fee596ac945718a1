use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    println!("a = {}", a);
    a * x[0]
}

fn main() {}
