use phidiff::differentiate;

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Normal log-likelihood.
#[differentiate(forward, reverse)]
pub fn normal_ll(data: &[f64], mu: f64, log_sigma: f64) -> f64 {
    let sigma = log_sigma.exp();
    let n = data.len() as f64;
    let sq: f64 = data.iter().map(|x| ((x - mu) / sigma).powi(2)).sum();
    -n * (LN_SQRT_2PI + log_sigma) - 0.5 * sq
}

#[differentiate(forward, reverse)]
pub fn mixed(x: &[f32], w: f32) -> f32 {
    let acc: f64 = x.iter().map(|&v| (v as f64) * 2.0).sum();
    (acc as f32) * w
}

#[differentiate(forward, reverse)]
pub fn huber(r: &[f64], delta: f64) -> f64 {
    let h = |e: f64| {
        if e.abs() <= delta {
            0.5 * e * e
        } else {
            delta * (e.abs() - 0.5 * delta)
        }
    };
    r.iter().map(|&e| h(e)).sum()
}

fn main() {
    println!("{:?}", normal_ll_grad(&[1.0, 2.0, 0.5], 1.2, 0.1));
    println!("{:?}", huber_grad(&[0.3, -2.0], 1.0));
    println!(
        "{:?} {}",
        mixed_grad(&[1.0, 2.0], 3.0),
        mixed(&[1.0, 2.0], 3.0)
    );
}
