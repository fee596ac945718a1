//! Custom derivative rules: plain functions with hand-written `_fwd`/`_rev` pairs that
//! follow the user contract, called from differentiated functions. (Calls between two
//! differentiated functions are in `simulation` — `lorenz_z` → `lorenz_rhs` — and
//! `statistics` — `gmm_log_likelihood`, `smooth_max_sq_diff` → `log_sum_exp`.)

use super::differentiate;
use crate::common::*;
use std::cell::Cell;

thread_local! {
    /// Calls of the hand-written rules on this test's thread: (forward, reverse).
    static RULE_CALLS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

fn count_fwd() {
    RULE_CALLS.with(|c| c.set((c.get().0 + 1, c.get().1)));
}

fn count_rev() {
    RULE_CALLS.with(|c| c.set((c.get().0, c.get().1 + 1)));
}

fn rule_calls() -> (usize, usize) {
    RULE_CALLS.with(|c| c.get())
}

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Numerically stable ln(1 + eˣ); its derivative is given by the rules below.
pub fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// Custom forward rule: (value, tangent).
pub fn softplus_fwd(x: f64, dx: f64) -> (f64, f64) {
    count_fwd();
    (softplus(x), logistic(x) * dx)
}

/// Custom reverse rule: (value, adjoint of x).
pub fn softplus_rev(x: f64, seed: f64) -> (f64, f64) {
    count_rev();
    (softplus(x), logistic(x) * seed)
}

/// Euclidean norm; its derivative is given by the rules below.
pub fn norm2(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// Custom forward rule: (‖x‖, x̂·ẋ).
pub fn norm2_fwd(x: &[f64], dx: &[f64]) -> (f64, f64) {
    count_fwd();
    let n = norm2(x);
    let t: f64 = x.iter().zip(dx).map(|(a, b)| a * b).sum();
    (n, t / n)
}

/// Custom reverse rule: adds seed·x/‖x‖ into the shadow, returns ‖x‖.
pub fn norm2_rev(x: &[f64], dx: &mut [f64], seed: f64) -> f64 {
    count_rev();
    let n = norm2(x);
    for (d, v) in dx.iter_mut().zip(x) {
        *d += seed * v / n;
    }
    n
}

/// Σ wᵢ softplus(xᵢ − bias): the call's argument is an active expression.
#[differentiate(forward, reverse)]
pub fn softplus_layer(x: &[f64], w: &[f64], bias: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += w[i] * softplus(x[i] - bias);
    }
    s
}

/// Σ ½k(‖p_{i+1} − p_i‖ − rest)² over a chain of 2-D points, the segment vector living in
/// one buffer that every iteration overwrites before calling `norm2`.
#[differentiate(forward, reverse)]
pub fn spring_chain_energy(pos: &[f64], k: f64, rest: f64) -> f64 {
    let n = pos.len() / 2;
    let mut d = vec![0.0; 2];
    let mut e = 0.0;
    for i in 0..n - 1 {
        d[0] = pos[2 * i + 2] - pos[2 * i];
        d[1] = pos[2 * i + 3] - pos[2 * i + 1];
        let len = norm2(&d);
        e += 0.5 * k * (len - rest) * (len - rest);
    }
    e
}

pub fn softplus_layer_uses_custom_rules() {
    let x = [0.3, -1.2, 2.0, 0.7];
    let w = [1.5, -0.5, 0.25, 2.0];
    let bias = 0.4;

    let before = rule_calls();
    let (f, (gx, gw, gb)) = softplus_layer_grad(&x, &w, bias);
    let after_rev = rule_calls();
    assert!(
        after_rev.1 >= before.1 + 4,
        "softplus_rev was called {} times for 4 elements",
        after_rev.1 - before.1
    );
    let (f_fwd, _) = softplus_layer_fwd(&x, &[1.0; 4], &w, &[0.0; 4], bias, 0.0);
    assert!(
        rule_calls().0 >= after_rev.0 + 4,
        "softplus_fwd was not called for every element"
    );
    assert_rel("value from _fwd", &[f_fwd], &[f], 1e-12);

    let z: Vec<f64> = x.iter().map(|v| v - bias).collect();
    let want_f: f64 = (0..4).map(|i| w[i] * (1.0 + z[i].exp()).ln()).sum();
    assert_rel("f", &[f], &[want_f], 1e-14);
    let want_gx: Vec<f64> = (0..4).map(|i| w[i] * logistic(z[i])).collect();
    assert_rel("∇ₓ", &gx, &want_gx, 1e-14);
    let want_gw: Vec<f64> = z.iter().map(|v| (1.0 + v.exp()).ln()).collect();
    assert_rel("∇_w", &gw, &want_gw, 1e-14);
    assert_rel("∂/∂bias", &[gb], &[-want_gx.iter().sum::<f64>()], 1e-13);

    let point = cat(&[&x, &w, &[bias]]);
    let f = |p: &[f64]| softplus_layer(&p[..4], &p[4..8], p[8]);
    check_grad(
        "softplus_layer",
        &point,
        &f,
        &|p| {
            let (v, (gx, gw, gb)) = softplus_layer_grad(&p[..4], &p[4..8], p[8]);
            (v, cat(&[&gx, &gw, &[gb]]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "softplus_layer",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (y, t) = softplus_layer_fwd(&p[..4], &v[..4], &p[4..8], &v[4..8], p[8], v[8]);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let (mut gx, mut gw) = (zeros(4), zeros(4));
            let (y, gb) = softplus_layer_rev(&p[..4], &mut gx, &p[4..8], &mut gw, p[8], w[0]);
            (vec![y], cat(&[&gx, &gw, &[gb]]))
        },
        tols: TOLS,
    });
}

pub fn spring_chain_uses_custom_slice_rule() {
    let pos: [f64; 10] = [0.0, 0.0, 1.2, 0.1, 2.0, 0.9, 2.5, 2.1, 3.9, 2.0];
    let (k, rest) = (3.0, 1.0);

    let before = rule_calls();
    let (e, (gpos, gk, grest)) = spring_chain_energy_grad(&pos, k, rest);
    assert!(
        rule_calls().1 >= before.1 + 4,
        "norm2_rev was not called for each of the 4 segments"
    );
    let before_fwd = rule_calls().0;
    spring_chain_energy_fwd(&pos, &[0.5; 10], k, 0.0, rest, 0.0);
    assert!(
        rule_calls().0 >= before_fwd + 4,
        "norm2_fwd was not called for each of the 4 segments"
    );

    // hand gradient: segment s from p_s to p_{s+1} with length L pulls both ends
    let mut want = zeros(10);
    let (mut want_e, mut want_gk, mut want_grest) = (0.0, 0.0, 0.0);
    for s in 0..4 {
        let (dx, dy) = (pos[2 * s + 2] - pos[2 * s], pos[2 * s + 3] - pos[2 * s + 1]);
        let len = dx.hypot(dy);
        want_e += 0.5 * k * (len - rest).powi(2);
        want_gk += 0.5 * (len - rest).powi(2);
        want_grest += -k * (len - rest);
        let c = k * (len - rest) / len;
        want[2 * s] -= c * dx;
        want[2 * s + 1] -= c * dy;
        want[2 * s + 2] += c * dx;
        want[2 * s + 3] += c * dy;
    }
    assert_rel("E", &[e], &[want_e], 1e-14);
    assert_all_close("∇_pos", &gpos, &want, 1e-12, 1e-15);
    assert_rel("∂E/∂k", &[gk], &[want_gk], 1e-13);
    assert_rel("∂E/∂rest", &[grest], &[want_grest], 1e-13);

    let point = cat(&[&pos, &[k, rest]]);
    let f = |p: &[f64]| spring_chain_energy(&p[..10], p[10], p[11]);
    check_grad(
        "spring_chain_energy",
        &point,
        &f,
        &|p| {
            let (v, (g, gk, gr)) = spring_chain_energy_grad(&p[..10], p[10], p[11]);
            (v, cat(&[&g, &[gk, gr]]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "spring_chain_energy",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (y, t) = spring_chain_energy_fwd(&p[..10], &v[..10], p[10], v[10], p[11], v[11]);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let mut g = zeros(10);
            let (y, gk, gr) = spring_chain_energy_rev(&p[..10], &mut g, p[10], p[11], w[0]);
            (vec![y], cat(&[&g, &[gk, gr]]))
        },
        tols: TOLS,
    });
}

/// `y ← a·sin(y)` in place: a custom rule on a `&mut` buffer.
pub fn damp(y: &mut [f64], a: f64) {
    for v in y.iter_mut() {
        *v = a * v.sin();
    }
}

/// Custom forward rule of [`damp`]: `ẏ ← a·cos(y)·ẏ + sin(y)·ȧ`.
pub fn damp_fwd(y: &mut [f64], dy: &mut [f64], a: f64, da: f64) {
    count_fwd();
    for (v, d) in y.iter_mut().zip(dy.iter_mut()) {
        *d = a * v.cos() * *d + v.sin() * da;
        *v = a * v.sin();
    }
}

/// Custom reverse rule of [`damp`]: `y` holds the values before the call, `dy` the
/// adjoint of the values after it; leaves the adjoint of the values before it in `dy`
/// and returns `ā`.
pub fn damp_rev(y: &mut [f64], dy: &mut [f64], a: f64) -> f64 {
    count_rev();
    let mut da = 0.0;
    for (v, d) in y.iter_mut().zip(dy.iter_mut()) {
        da += v.sin() * *d;
        *d *= a * v.cos();
        *v = a * v.sin();
    }
    da
}

/// Two in-place custom-rule calls on a `&mut` parameter passed by name (`damp(y, a)`,
/// a mutable reborrow), then `Σ y²`.
#[differentiate(forward, reverse)]
pub fn damped_energy(y: &mut [f64], a: f64) -> f64 {
    damp(y, a);
    damp(y, 0.5 * a);
    let mut s = 0.0;
    for i in 0..y.len() {
        s += y[i] * y[i];
    }
    s
}

pub fn mut_param_passed_by_name() {
    let y0 = [0.3, -1.1, 0.8, 2.0];
    let a = 1.3;
    let point = cat(&[&y0, &[a]]);
    let f = |p: &[f64]| {
        let mut y = p[..4].to_vec();
        damped_energy(&mut y, p[4])
    };
    let before = rule_calls();
    check_grad(
        "damped_energy",
        &point,
        &f,
        &|p| {
            let mut y = p[..4].to_vec();
            let (v, (g, ga)) = damped_energy_grad(&mut y, p[4]);
            (v, cat(&[&g, &[ga]]))
        },
        TOLS,
    );
    assert!(rule_calls().1 >= before.1 + 2, "damp_rev was not called twice");
    check_fwd_rev(&Case {
        name: "damped_energy",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (mut y, mut dy) = (p[..4].to_vec(), v[..4].to_vec());
            let (e, t) = damped_energy_fwd(&mut y, &mut dy, p[4], v[4]);
            (vec![e], vec![t])
        },
        vjp: &|p, w| {
            let (mut y, mut g) = (p[..4].to_vec(), zeros(4));
            let (e, ga) = damped_energy_rev(&mut y, &mut g, p[4], w[0]);
            (vec![e], cat(&[&g, &[ga]]))
        },
        tols: TOLS,
    });
}

/// A mailbox between calls, like a communicator: `post` queues a copy of a buffer and
/// `take` moves the oldest one into another buffer. Data goes from one call to another
/// through the opaque `&Mailbox`, which the compiler cannot see; it treats such a value
/// as a channel between all the calls that get it.
#[derive(Default)]
pub struct Mailbox {
    values: std::cell::RefCell<std::collections::VecDeque<Vec<f64>>>,
    tangents: std::cell::RefCell<std::collections::VecDeque<Vec<f64>>>,
    adjoints: std::cell::RefCell<std::collections::VecDeque<Vec<f64>>>,
}

impl Mailbox {
    pub fn post(&self, a: &[f64]) {
        self.values.borrow_mut().push_back(a.to_vec());
    }
    pub fn take(&self, b: &mut [f64]) {
        b.copy_from_slice(&self.values.borrow_mut().pop_front().expect("a posted buffer"));
    }
    pub fn post_fwd(&self, a: &[f64], da: &[f64]) {
        self.post(a);
        self.tangents.borrow_mut().push_back(da.to_vec());
    }
    pub fn take_fwd(&self, b: &mut [f64], db: &mut [f64]) {
        self.take(b);
        db.copy_from_slice(&self.tangents.borrow_mut().pop_front().expect("a posted tangent"));
    }
    /// The reverse of `take` runs first: it queues the adjoint of what was taken.
    pub fn take_rev(&self, _b: &mut [f64], db: &mut [f64]) {
        self.adjoints.borrow_mut().push_back(db.to_vec());
        db.iter_mut().for_each(|d| *d = 0.0);
    }
    /// The reverse of `post`: adds the queued adjoint into the posted buffer's shadow.
    pub fn post_rev(&self, _a: &[f64], da: &mut [f64]) {
        let adjoint = self.adjoints.borrow_mut().pop_front().expect("take_rev ran first");
        da.iter_mut().zip(&adjoint).for_each(|(d, g)| *d += g);
    }
}

/// A value that reaches the result only through the mailbox: `b` is taken from what
/// `a` posted, and neither call sees both.
#[differentiate(forward, reverse)]
pub fn relay(mb: &Mailbox, x: &[f64], w: f64) -> f64 {
    let mut a = vec![0.0; 2];
    let mut b = vec![0.0; 2];
    a[0] = x[0] * w;
    a[1] = x[1].sin();
    mb.post(&a);
    mb.take(&mut b);
    b[0] * b[1] + x[2] * w
}

pub fn data_through_an_opaque_channel() {
    let mb = Mailbox::default();
    let point = [0.7, -0.4, 1.5, 1.3];
    let f = |p: &[f64]| relay(&mb, &p[..3], p[3]);
    check_grad(
        "relay",
        &point,
        &f,
        &|p| {
            let (v, (g, gw)) = relay_grad(&mb, &p[..3], p[3]);
            (v, cat(&[&g, &[gw]]))
        },
        TOLS,
    );
    check_fwd_rev(&Case {
        name: "relay",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (y, t) = relay_fwd(&mb, &p[..3], &v[..3], p[3], v[3]);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let mut g = zeros(3);
            let (y, gw) = relay_rev(&mb, &p[..3], &mut g, p[3], w[0]);
            (vec![y], cat(&[&g, &[gw]]))
        },
        tols: TOLS,
    });
    // Every post was taken, every adjoint consumed.
    assert!(mb.values.borrow().is_empty() && mb.adjoints.borrow().is_empty());
}

/// A configuration passed to calls: not a channel (no call only takes floats into it), so
/// `fill`, which only writes constants, stays a plain call with no `_fwd`/`_rev`.
pub struct Config {
    pub scale: f64,
}

pub fn fill(cfg: &Config, buf: &mut [f64]) {
    for b in buf.iter_mut() {
        *b = cfg.scale;
    }
}

pub fn model(cfg: &Config, x: &[f64]) -> f64 {
    cfg.scale * x[0] * x[1]
}

pub fn model_fwd(cfg: &Config, x: &[f64], dx: &[f64]) -> (f64, f64) {
    (model(cfg, x), cfg.scale * (dx[0] * x[1] + x[0] * dx[1]))
}

pub fn model_rev(cfg: &Config, x: &[f64], dx: &mut [f64], seed: f64) -> f64 {
    dx[0] += seed * cfg.scale * x[1];
    dx[1] += seed * cfg.scale * x[0];
    model(cfg, x)
}

#[differentiate(forward, reverse)]
pub fn configured(cfg: &Config, x: &[f64]) -> f64 {
    let mut buf = vec![0.0; 2];
    fill(cfg, &mut buf);
    model(cfg, x) * buf[1] + x[0]
}

pub fn configuration_is_not_a_channel() {
    let cfg = Config { scale: 1.5 };
    let point = [0.4, -1.2];
    let f = |p: &[f64]| configured(&cfg, p);
    check_grad("configured", &point, &f, &|p| configured_grad(&cfg, p), TOLS);
    check_fwd_rev(&Case {
        name: "configured",
        x: &point,
        primal: &|p| vec![f(p)],
        jvp: &|p, v| {
            let (y, t) = configured_fwd(&cfg, p, v);
            (vec![y], vec![t])
        },
        vjp: &|p, w| {
            let mut g = zeros(2);
            let y = configured_rev(&cfg, p, &mut g, w[0]);
            (vec![y], g)
        },
        tols: TOLS,
    });
}
