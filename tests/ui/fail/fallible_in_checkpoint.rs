use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(x: &[f64], idx: &[usize], a: f64) -> Option<f64> {
    let mut s = a;
    #[checkpoint(periodic(every = 4))]
    for i in 0..idx.len() {
        s = s * 0.5 + x.get(idx[i]).copied()?;
    }
    Some(s)
}

fn main() {}
