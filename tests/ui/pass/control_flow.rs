//! The body subset of "Inside the body": match on integers, while, loop/break/continue,
//! early return, vec!, iter().map().sum(), assert!, f64::consts.
use phidiff::differentiate;

#[differentiate(forward, reverse)]
pub fn mixed(x: &[f64], a: f64, mode: usize) -> f64 {
    assert!(x.len() >= 2, "need two values");
    if a < -10.0 {
        return 0.0;
    }
    let mut w = vec![0.0; x.len()];
    for (i, v) in x.iter().enumerate() {
        w[i] = match mode {
            0 => *v * a,
            1 | 2 => v.sin() * a,
            _ => *v,
        };
    }
    let mut k = 0;
    let mut s = 0.0;
    while k < w.len() {
        k += 1;
        if w[k - 1] < 0.0 {
            continue;
        }
        s += w[k - 1];
    }
    loop {
        s = s * 0.5;
        if s < 1.0 {
            break;
        }
    }
    s + x.iter().map(|v| v * v).sum::<f64>() * std::f64::consts::PI
}

fn main() {
    let (v, (gx, ga)) = mixed_grad(&[0.5, 1.0], 2.0, 1);
    assert!(v.is_finite() && ga.is_finite() && gx.len() == 2);
}
