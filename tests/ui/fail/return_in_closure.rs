use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> f64 {
    x.iter()
        .map(|v| {
            if *v > 0.0 {
                return *v * a;
            }
            0.0
        })
        .sum::<f64>()
}

fn main() {}
