use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], a: f64) -> Result<f64, String> {
    let scaled = vec![a; x.len()];
    if a < 0.0 {
        return Err(format!("negative scale: {scaled:?}"));
    }
    Ok(x[0] * scaled[0])
}

fn main() {}
