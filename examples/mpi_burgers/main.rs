//! A distributed 2-D viscous Burgers solver, differentiated through its halo exchanges:
//! the gradient of the final energy with respect to the initial field, with the time loop
//! checkpointed by Revolve (see `solver.rs`).
//!
//! ```text
//! cargo build --release --features mpi --example mpi_burgers
//! mpirun -n 4 target/release/examples/mpi_burgers [m n steps snapshots]
//! ```
//!
//! Every rank times the primal and the gradient on its strip of rows. Rank 0 gathers the
//! gradient and compares it with the same computation on one process without MPI; the run
//! fails if they differ by more than 1e-10 relative.

#[path = "solver.rs"]
mod solver;

use phidiff::mpi::Comm;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let universe = phidiff::mpi::initialize().expect("MPI initializes once");
    let comm = Comm::world(&universe);
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .expect("arguments: m n steps snapshots (integers)")
        })
        .collect();
    let [m, n, steps, snapshots] = match args.as_slice() {
        [] => [128, 128, 200, 10],
        [m, n, steps, snapshots] => [*m, *n, *steps, *snapshots],
        _ => panic!("arguments: m n steps snapshots"),
    };
    let (nu, dt) = (0.05, 0.1);
    if m < comm.size() {
        panic!("{m} rows cannot be split over {} ranks", comm.size());
    }
    let u0 = solver::initial(m, n);
    let rows = solver::strip(&comm, m);
    let mine = &u0[rows.start * n..rows.end * n];

    comm.barrier();
    let t = Instant::now();
    let energy = solver::burgers_energy(&comm, mine, n, nu, dt, steps, snapshots);
    let primal = t.elapsed().as_secs_f64();
    comm.barrier();
    let seed = if comm.rank() == 0 { 1.0 } else { 0.0 };
    let mut du = vec![0.0; mine.len()];
    let t = Instant::now();
    let (value, _, _) =
        solver::burgers_energy_rev(&comm, mine, &mut du, n, nu, dt, steps, snapshots, seed);
    let gradient = t.elapsed().as_secs_f64();
    assert_eq!(value, energy, "the gradient's value is the primal's");

    // Times and the gradient, gathered on rank 0.
    let mut times = if comm.rank() == 0 {
        vec![0.0; 2 * comm.size()]
    } else {
        Vec::new()
    };
    comm.gather(&[primal, gradient], &mut times, 0);
    let mut all = if comm.rank() == 0 {
        vec![0.0; m * n]
    } else {
        Vec::new()
    };
    comm.gather(&du, &mut all, 0);
    if comm.rank() != 0 {
        return ExitCode::SUCCESS;
    }
    println!(
        "2-D viscous Burgers, {m}×{n} grid, {steps} steps, Revolve with {snapshots} snapshots, {} rank(s)",
        comm.size()
    );
    println!("final energy {energy:.12}");
    println!("| rank | rows | primal | gradient | gradient / primal |");
    println!("|---|---|---|---|---|");
    for r in 0..comm.size() {
        let (p, g) = (times[2 * r], times[2 * r + 1]);
        println!(
            "| {r} | {}..{} | {:.3} s | {:.3} s | {:.2}× |",
            r * m / comm.size(),
            (r + 1) * m / comm.size(),
            p,
            g,
            g / p
        );
    }
    let mut serial = vec![0.0; m * n];
    let serial_energy = solver::burgers_energy_serial_rev(&u0, &mut serial, n, nu, dt, steps, 1.0);
    let scale = serial.iter().fold(f64::MIN_POSITIVE, |s, v| s.max(v.abs()));
    let diff = all
        .iter()
        .zip(&serial)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
        / scale;
    let energy_diff = (energy - serial_energy).abs() / serial_energy.abs();
    println!("gradient vs one process without MPI: max difference {diff:.1e} of the largest component; energy {energy_diff:.1e}");
    if diff > 1e-10 || energy_diff > 1e-10 {
        eprintln!("FAILED: the distributed gradient differs from the serial one");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
