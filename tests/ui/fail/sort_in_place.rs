use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn median_ish(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {}
