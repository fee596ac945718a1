//! MPI scaling of the gradient (issue 6): the distributed Burgers solver of
//! `examples/mpi_burgers` on a fixed grid, on 1, 2 and 4 ranks, primal and gradient
//! timed in the same run. Enzyme's claim is that the gradient scales like the primal, so
//! gradient / primal should stay flat as ranks grow.
//!
//! ```text
//! cargo run --release --features mpi --example mpi_scaling [m n steps snapshots]
//! ```
//!
//! Started without `mpirun`, it launches itself with `mpirun --oversubscribe -n P` for
//! each P (ranks beyond the cores share them, so absolute times grow there; the ratio is
//! the figure to read). Each rank count is timed as the fastest of 5 runs of each.

#[path = "mpi_burgers/solver.rs"]
#[allow(dead_code)] // the serial reference is for the other example
mod solver;

use phidiff::mpi::Comm;
use std::process::Command;
use std::time::Instant;

const REPS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let under_mpirun = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if under_mpirun {
        worker(&args);
    } else {
        launcher(&args);
    }
}

fn launcher(args: &[String]) {
    let exe = std::env::current_exe().expect("this program's path");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("| ranks | primal | gradient | gradient / primal |");
    println!("|---|---|---|---|");
    for p in [1, 2, 4] {
        let out = Command::new("mpirun")
            .args(["--oversubscribe", "-n", &p.to_string()])
            .arg(&exe)
            .args(args)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("mpirun (install Open MPI: apt-get install openmpi-bin libopenmpi-dev)");
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            panic!(
                "mpirun -n {p} failed:\n{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let line = text
            .lines()
            .find(|l| l.starts_with('|'))
            .expect("a result line");
        println!("{line}");
    }
    println!();
    println!("{cores} core(s) here: runs with more ranks than cores share them.");
}

fn worker(args: &[String]) {
    let universe = phidiff::mpi::initialize().expect("MPI initializes once");
    let comm = Comm::world(&universe);
    let nums: Vec<usize> = args.iter().map(|a| a.parse().expect("integers")).collect();
    let [m, n, steps, snapshots] = match nums.as_slice() {
        [] => [384, 384, 100, 10],
        [m, n, s, k] => [*m, *n, *s, *k],
        _ => panic!("arguments: m n steps snapshots"),
    };
    let (nu, dt) = (0.05, 0.1);
    let u0 = solver::initial(m, n);
    let rows = solver::strip(&comm, m);
    let mine = &u0[rows.start * n..rows.end * n];
    let seed = if comm.rank() == 0 { 1.0 } else { 0.0 };
    let mut du = vec![0.0; mine.len()];
    // The slowest rank's time of each run: a barrier before, a max after.
    let timed = |f: &mut dyn FnMut()| {
        let mut best = f64::INFINITY;
        for _ in 0..REPS {
            comm.barrier();
            let t = Instant::now();
            f();
            best = best.min(comm.allreduce_max_scalar(t.elapsed().as_secs_f64()));
        }
        best
    };
    let primal = timed(&mut || {
        std::hint::black_box(solver::burgers_energy(
            &comm, mine, n, nu, dt, steps, snapshots,
        ));
    });
    let gradient = timed(&mut || {
        du.iter_mut().for_each(|d| *d = 0.0);
        std::hint::black_box(solver::burgers_energy_rev(
            &comm, mine, &mut du, n, nu, dt, steps, snapshots, seed,
        ));
    });
    if comm.rank() == 0 {
        println!(
            "| {} | {:.1} ms | {:.1} ms | {:.2}× |",
            comm.size(),
            primal * 1e3,
            gradient * 1e3,
            gradient / primal
        );
    }
}
