//! Hand-written Rust derivatives of two GradBench evals, the in-repo stand-ins for
//! GradBench's C++ `manual` tool: the scoreboard's `llsq` and `ode` rows time phidiff's
//! generated gradients (`phidiff_gradbench::evals`) against these.

/// GradBench's `llsq` objective `½ Σᵢ (sᵢ − Σⱼ xⱼ tᵢʲ)²` and its gradient added into `g`:
/// `∂/∂xⱼ = −Σᵢ rᵢ tᵢʲ` with the residual `rᵢ`, the powers as running products.
pub fn llsq_grad(x: &[f64], n: usize, g: &mut [f64]) -> f64 {
    let mut sum = 0.0;
    for i in 0..n {
        let ti = -1.0 + (i as f64) * 2.0 / ((n - 1) as f64);
        let mut r = if ti > 0.0 {
            1.0
        } else if ti < 0.0 {
            -1.0
        } else {
            0.0
        };
        let mut p = 1.0;
        for xj in x {
            r -= xj * p;
            p *= ti;
        }
        sum += r * r;
        let mut p = 1.0;
        for gj in g.iter_mut() {
            *gj -= r * p;
            p *= ti;
        }
    }
    sum / 2.0
}

/// GradBench's `ode` eval: `y' = f(x, y)`, `f₀ = x₀`, `fᵢ = xᵢ yᵢ₋₁`, `y(0) = 0`, `s`
/// classical Runge–Kutta steps to `t = 2`. Returns the last element of `y(2)` and adds its
/// gradient with respect to `x` into `dx`: the discrete adjoint of the steps, run backward
/// from the state at the start of every step (all `s` kept), each step's three
/// intermediate states recomputed from it.
pub fn ode_grad(x: &[f64], s: usize, dx: &mut [f64]) -> f64 {
    let n = x.len();
    let h = 2.0 / (s as f64);
    let mut states = vec![0.0; n * s];
    let mut y = vec![0.0; n];
    for step in 0..s {
        states[step * n..(step + 1) * n].copy_from_slice(&y);
        let (x0, y0) = (x[0], y[0]);
        let (mut y_prev, mut t1_prev) = (y0, y0 + h * x0 / 2.0);
        let (mut t2_prev, mut t3_prev) = (t1_prev, y0 + h * x0);
        y[0] = y0 + h * (x0 + 2.0 * x0 + 2.0 * x0 + x0) / 6.0;
        for i in 1..n {
            let (xi, yi) = (x[i], y[i]);
            let k1 = xi * y_prev;
            let k2 = xi * t1_prev;
            let k3 = xi * t2_prev;
            let k4 = xi * t3_prev;
            y[i] = yi + h * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0;
            y_prev = yi;
            t1_prev = yi + h * k1 / 2.0;
            t2_prev = yi + h * k2 / 2.0;
            t3_prev = yi + h * k3;
        }
    }
    let value = y[n - 1];
    // `bar[i]`: the adjoint of `y[i]`, seeded on the last element.
    let mut bar = vec![0.0; n];
    bar[n - 1] = 1.0;
    let (mut t1, mut t2, mut t3) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    for step in (0..s).rev() {
        let y0 = &states[step * n..(step + 1) * n];
        // The step's intermediate states t₁, t₂, t₃ from its starting state.
        t1[0] = y0[0] + h * x[0] / 2.0;
        t2[0] = t1[0];
        t3[0] = y0[0] + h * x[0];
        for i in 1..n {
            t1[i] = y0[i] + h * (x[i] * y0[i - 1]) / 2.0;
            t2[i] = y0[i] + h * (x[i] * t1[i - 1]) / 2.0;
            t3[i] = y0[i] + h * (x[i] * t2[i - 1]);
        }
        // Backward over the components: the adjoints of component i + 1's stage
        // slopes k₁..k₄ reach component i's y and intermediate states through x[i + 1].
        let (mut b1, mut b2, mut b3, mut b4, mut x_next) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for i in (1..n).rev() {
            let a = bar[i];
            let (u1, u2, u3) = (x_next * b2, x_next * b3, x_next * b4);
            let c1 = h / 6.0 * a + h / 2.0 * u1;
            let c2 = h / 3.0 * a + h / 2.0 * u2;
            let c3 = h / 3.0 * a + h * u3;
            let c4 = h / 6.0 * a;
            dx[i] += c1 * y0[i - 1] + c2 * t1[i - 1] + c3 * t2[i - 1] + c4 * t3[i - 1];
            bar[i] = a + u1 + u2 + u3 + x_next * b1;
            (b1, b2, b3, b4, x_next) = (c1, c2, c3, c4, x[i]);
        }
        // Component 0: every stage's slope is x₀.
        let a = bar[0];
        let (u1, u2, u3) = (x_next * b2, x_next * b3, x_next * b4);
        dx[0] += h * a + h / 2.0 * (u1 + u2) + h * u3;
        bar[0] = a + u1 + u2 + u3 + x_next * b1;
    }
    value
}
