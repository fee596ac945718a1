//! ADBench inputs (`benches/data/adbench/`, MIT licence, see its README): parsers, and the
//! log-gamma function ADBench's GMM prior needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `benches/data/adbench/<rel>` in this repository.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/data/adbench")
        .join(rel)
}

fn numbers(path: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read ADBench input {}: {e}", path.display()));
    text.split_whitespace()
        .map(|t| {
            t.parse()
                .unwrap_or_else(|_| panic!("{}: `{t}` is not a number", path.display()))
        })
        .collect()
}

/// A Gaussian mixture problem: `k` components in `d` dimensions, `n` points.
pub struct Gmm {
    pub d: usize,
    pub k: usize,
    pub n: usize,
    /// `k` weights (log-space).
    pub alphas: Vec<f64>,
    /// `k × d` means.
    pub means: Vec<f64>,
    /// `k × d(d+1)/2`: the log of the diagonal of each inverse covariance factor, then its
    /// strictly lower part by columns.
    pub icf: Vec<f64>,
    /// `n × d` points.
    pub x: Vec<f64>,
    /// The Wishart prior's `gamma` and `m`.
    pub gamma: f64,
    pub m: usize,
}

/// Reads an ADBench GMM file: `d k n`, then alphas, means, icf, the points and `gamma m`.
pub fn read_gmm(path: &Path) -> Gmm {
    let v = numbers(path);
    let (d, k, n) = (v[0] as usize, v[1] as usize, v[2] as usize);
    let icf_sz = d * (d + 1) / 2;
    let mut at = 3;
    let mut take = |len: usize| {
        let part = v[at..at + len].to_vec();
        at += len;
        part
    };
    let alphas = take(k);
    let means = take(k * d);
    let icf = take(k * icf_sz);
    let x = take(n * d);
    let tail = take(2);
    Gmm {
        d,
        k,
        n,
        alphas,
        means,
        icf,
        x,
        gamma: tail[0],
        m: tail[1] as usize,
    }
}

/// An LSTM problem: `l` layers of width `b`, a sequence of `c` steps.
pub struct Lstm {
    pub l: usize,
    pub c: usize,
    pub b: usize,
    /// Per layer: weights then biases, `4b` each.
    pub main_params: Vec<f64>,
    /// `3b`: input scale, output scale, output offset.
    pub extra_params: Vec<f64>,
    /// Per layer: hidden state then cell, `b` each.
    pub state: Vec<f64>,
    /// `c × b`.
    pub sequence: Vec<f64>,
}

/// Reads an ADBench LSTM file: `l c b`, main parameters, extra parameters, state, sequence.
pub fn read_lstm(path: &Path) -> Lstm {
    let v = numbers(path);
    let (l, c, b) = (v[0] as usize, v[1] as usize, v[2] as usize);
    let mut at = 3;
    let mut take = |len: usize| {
        let part = v[at..at + len].to_vec();
        at += len;
        part
    };
    let main_params = take(8 * l * b);
    let extra_params = take(3 * b);
    let state = take(2 * l * b);
    let sequence = take(c * b);
    Lstm {
        l,
        c,
        b,
        main_params,
        extra_params,
        state,
        sequence,
    }
}

/// `ln Γ(z)` for `z > 0`: Lanczos' approximation (g = 7, 9 coefficients; about 15
/// significant digits), with the reflection formula below 0.5.
pub fn ln_gamma(z: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_93,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_13,
        -176.615_029_162_140_59,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_571_6e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if z < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * z).sin()).ln() - ln_gamma(1.0 - z);
    }
    let z = z - 1.0;
    let mut a = C[0];
    let t = z + G + 0.5;
    for (k, c) in C.iter().enumerate().skip(1) {
        a += c / (z + k as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (z + 0.5) * t.ln() - t + a.ln()
}

/// ADBench's `log_gamma_distrib(a, p)`: the log of the multivariate gamma function.
pub fn ln_multigamma(a: f64, p: usize) -> f64 {
    let mut out = 0.25 * (p * (p - 1)) as f64 * std::f64::consts::PI.ln();
    for j in 1..=p {
        out += ln_gamma(a + 0.5 * (1.0 - j as f64));
    }
    out
}

/// A bundle adjustment problem: `n` cameras, `m` points, `p` observations.
pub struct Ba {
    pub n: usize,
    pub m: usize,
    pub p: usize,
    /// `n × 11` cameras: Rodrigues rotation (3), centre (3), focal length, principal
    /// point (2), radial distortion (2).
    pub cams: Vec<f64>,
    /// `m × 3` points.
    pub x: Vec<f64>,
    /// `p` observation weights.
    pub w: Vec<f64>,
    /// `p × 2`: the camera and the point of each observation.
    pub obs: Vec<usize>,
    /// `p × 2` measured features (pixel coordinates).
    pub feats: Vec<f64>,
}

/// Reads an ADBench BA file: `n m p`, then one camera, one point, one weight and one
/// feature, which ADBench's reader tiles to all cameras, points and observations;
/// observation `i` sees camera `i mod n` and point `i mod m`.
pub fn read_ba(path: &Path) -> Ba {
    let v = numbers(path);
    assert_eq!(
        v.len(),
        20,
        "{}: an ADBench BA file holds 20 numbers",
        path.display()
    );
    let (n, m, p) = (v[0] as usize, v[1] as usize, v[2] as usize);
    let (cam, point, weight, feat) = (&v[3..14], &v[14..17], v[17], &v[18..20]);
    Ba {
        n,
        m,
        p,
        cams: cam.repeat(n),
        x: point.repeat(m),
        w: vec![weight; p],
        obs: (0..p).flat_map(|i| [i % n, i % m]).collect(),
        feats: feat.repeat(p),
    }
}
