//! The classic five-body simulation (the Sun and the four giant planets), written the way a
//! Rust programmer writes it — a `struct Body`, the system a `&mut [Body]` — and
//! differentiated with only `#[derive(phidiff::Differentiable)]` and `#[differentiate]`
//! added:
//!
//! - the gradient of the total energy after N steps with respect to the initial positions,
//!   velocities and masses (the steps Revolve-checkpointed, so memory stays at a few
//!   snapshots of the system);
//! - the sensitivity of Jupiter's final position to each mass.
//!
//! Both are checked against central finite differences.
//!
//! ```text
//! cargo run --release --example nbody [steps]
//! ```

use phidiff::{differentiate, Differentiable};
use std::f64::consts::PI;

const SOLAR_MASS: f64 = 4.0 * PI * PI;
const DAYS_PER_YEAR: f64 = 365.24;

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Body {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    pub mass: f64,
}

/// One step of `dt` for every body: velocities from the pairwise attractions, then
/// positions.
#[differentiate(forward, reverse)]
pub fn advance(bodies: &mut [Body], dt: f64, steps: usize) {
    #[checkpoint(revolve(snapshots = 16))]
    for _ in 0..steps {
        for i in 0..bodies.len() {
            for j in (i + 1)..bodies.len() {
                let dx = bodies[i].pos[0] - bodies[j].pos[0];
                let dy = bodies[i].pos[1] - bodies[j].pos[1];
                let dz = bodies[i].pos[2] - bodies[j].pos[2];
                let d2 = dx * dx + dy * dy + dz * dz;
                let mag = dt / (d2 * d2.sqrt());
                let mi = bodies[i].mass * mag;
                let mj = bodies[j].mass * mag;
                bodies[i].vel[0] -= dx * mj;
                bodies[i].vel[1] -= dy * mj;
                bodies[i].vel[2] -= dz * mj;
                bodies[j].vel[0] += dx * mi;
                bodies[j].vel[1] += dy * mi;
                bodies[j].vel[2] += dz * mi;
            }
        }
        for b in bodies.iter_mut() {
            for k in 0..3 {
                b.pos[k] += dt * b.vel[k];
            }
        }
    }
}

/// Kinetic minus potential energy.
#[differentiate(forward, reverse)]
pub fn energy(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for (i, b) in bodies.iter().enumerate() {
        e += 0.5 * b.mass * (b.vel[0] * b.vel[0] + b.vel[1] * b.vel[1] + b.vel[2] * b.vel[2]);
        for other in &bodies[i + 1..] {
            let dx = b.pos[0] - other.pos[0];
            let dy = b.pos[1] - other.pos[1];
            let dz = b.pos[2] - other.pos[2];
            e -= b.mass * other.mass / (dx * dx + dy * dy + dz * dz).sqrt();
        }
    }
    e
}

/// The Sun and the giant planets, the Sun's velocity offset so the total momentum is zero.
fn solar_system() -> Vec<Body> {
    let planet = |pos: [f64; 3], vel: [f64; 3], mass: f64| Body {
        pos,
        vel: vel.map(|v| v * DAYS_PER_YEAR),
        mass: mass * SOLAR_MASS,
    };
    let mut bodies = vec![
        Body {
            pos: [0.0; 3],
            vel: [0.0; 3],
            mass: SOLAR_MASS,
        },
        planet(
            [
                4.84143144246472090e+00,
                -1.16032004402742839e+00,
                -1.03622044471123109e-01,
            ],
            [
                1.66007664274403694e-03,
                7.69901118419740425e-03,
                -6.90460016972063023e-05,
            ],
            9.54791938424326609e-04,
        ),
        planet(
            [
                8.34336671824457987e+00,
                4.12479856412430479e+00,
                -4.03523417114321381e-01,
            ],
            [
                -2.76742510726862411e-03,
                4.99852801234917238e-03,
                2.30417297573763929e-05,
            ],
            2.85885980666130812e-04,
        ),
        planet(
            [
                1.28943695621391310e+01,
                -1.51111514016986312e+01,
                -2.23307578892655734e-01,
            ],
            [
                2.96460137564761618e-03,
                2.37847173959480950e-03,
                -2.96589568540237556e-05,
            ],
            4.36624404335156298e-05,
        ),
        planet(
            [
                1.53796971148509165e+01,
                -2.59193146099879641e+01,
                1.79258772950371181e-01,
            ],
            [
                2.68067772490389322e-03,
                1.62824170038242295e-03,
                -9.51592254519715870e-05,
            ],
            5.15138902046611451e-05,
        ),
    ];
    let mut momentum = [0.0; 3];
    for b in &bodies {
        for k in 0..3 {
            momentum[k] += b.vel[k] * b.mass;
        }
    }
    for k in 0..3 {
        bodies[0].vel[k] = -momentum[k] / SOLAR_MASS;
    }
    bodies
}

/// Each body's seven numbers (position, velocity, mass), in order.
fn flat(bodies: &[Body]) -> Vec<f64> {
    bodies
        .iter()
        .flat_map(|b| {
            [
                b.pos[0], b.pos[1], b.pos[2], b.vel[0], b.vel[1], b.vel[2], b.mass,
            ]
        })
        .collect()
}

fn main() {
    let steps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let dt = 0.01;
    let system = solar_system();
    println!("energy before: {:.9}", energy(&system));

    // The gradient of the final energy with respect to the initial system, by the chain
    // rule through the `&mut` contract: the shadow of `advance_rev` holds the adjoint of the
    // final system on entry (here ∂E/∂final, from `energy_grad`) and leaves with the adjoint
    // of the initial system.
    let start = std::time::Instant::now();
    let mut bodies = system.clone();
    advance(&mut bodies, dt, steps);
    let (e, mut shadow) = energy_grad(&bodies);
    let mut bodies = system.clone();
    advance_rev(&mut bodies, &mut shadow, dt, steps);
    let took = start.elapsed();
    println!("energy after {steps} steps: {e:.9} (value and gradient in {took:.2?})");
    let gradient = flat(&shadow);

    // Finite differences on every input (phidiff's Richardson-extrapolated central
    // differences). Rounding in 1000 steps makes the differences noisy below ~1e-8.
    let from_flat = |x: &[f64]| -> Vec<Body> {
        x.chunks(7)
            .map(|c| Body {
                pos: [c[0], c[1], c[2]],
                vel: [c[3], c[4], c[5]],
                mass: c[6],
            })
            .collect()
    };
    let value = |x: &[f64]| {
        let mut b = from_flat(x);
        advance(&mut b, dt, steps);
        energy(&b)
    };
    let report = phidiff::check::gradient(
        value,
        &flat(&system),
        &gradient,
        phidiff::check::Tolerance {
            rel: 1e-6,
            abs: 1e-9,
        },
    )
    .expect("the gradient agrees with finite differences");
    println!(
        "∂E/∂(initial system), 35 components: agrees with finite differences (largest differences {:.1e} absolute, {:.1e} relative)",
        report.max_abs_error, report.max_rel_error
    );
    // Energy is nearly conserved, so its gradient after the steps is close to its gradient
    // at the start: a check of the physics, not of the derivative.
    let (_, at_start) = energy_grad(&system);
    println!(
        "∂E/∂(Jupiter's mass): {:.6} after {steps} steps, {:.6} at the start",
        shadow[1].mass, at_start[1].mass
    );

    // The sensitivity of Jupiter's final x position to every mass.
    let mut bodies = system.clone();
    let mut shadow: Vec<Body> = bodies.iter().map(Differentiable::zero_like).collect();
    shadow[1].pos[0] = 1.0;
    advance_rev(&mut bodies, &mut shadow, dt, steps);
    let names = ["Sun", "Jupiter", "Saturn", "Uranus", "Neptune"];
    for (i, name) in names.iter().enumerate() {
        let x_after = |mass: &[f64]| {
            let mut b = system.clone();
            b[i].mass = mass[0];
            advance(&mut b, dt, steps);
            b[1].pos[0]
        };
        let fd = phidiff::check::finite_difference(x_after, &[system[i].mass])[0];
        println!(
            "∂(Jupiter's final x)/∂(mass of {name:7}): {:+.6e}  (finite differences {:+.6e})",
            shadow[i].mass, fd
        );
        assert!(
            (shadow[i].mass - fd).abs() <= 1e-6 * fd.abs() + 1e-9,
            "the mass sensitivity disagrees with finite differences"
        );
    }
}
