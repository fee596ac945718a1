//! Running a test program under `mpirun`: the test binary (`harness = false`) launches
//! itself with 1, 2 and 4 processes, each run under a time limit, and each rank then runs
//! the checks.
#![allow(dead_code)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Process counts every MPI test runs with.
pub const RANKS: [usize; 3] = [1, 2, 4];

/// How long one `mpirun` may take before it is killed and the test fails.
pub const TIME_LIMIT: Duration = Duration::from_secs(120);

/// Whether this process was started by `mpirun` (Open MPI or an MPICH-style launcher).
pub fn under_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// Runs this test binary under `mpirun -n P` for every `P` in [`RANKS`] and panics if
/// a run fails, prints no `ok` line per rank, or outlives [`TIME_LIMIT`] (a communication
/// bug then fails instead of hanging).
pub fn launch(name: &str) {
    let exe = std::env::current_exe().expect("the test binary's path");
    for p in RANKS {
        let start = Instant::now();
        let mut child = Command::new("mpirun")
            .args(["--oversubscribe", "-n", &p.to_string()])
            .arg(&exe)
            // Open MPI refuses to run as root without these (CI containers run as root).
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "{name}: cannot start `mpirun` ({e}); install Open MPI \
                     (Debian: apt-get install openmpi-bin libopenmpi-dev)"
                )
            });
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for mpirun") {
                break status;
            }
            if start.elapsed() > TIME_LIMIT {
                let _ = child.kill();
                let out = child.wait_with_output().expect("mpirun output");
                panic!(
                    "{name}: mpirun -n {p} did not finish in {TIME_LIMIT:?} (a deadlock?)\n{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = child.wait_with_output().expect("mpirun output");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let oks = stdout.lines().filter(|l| l.starts_with("ok rank")).count();
        if !status.success() || oks != p {
            panic!(
                "{name}: mpirun -n {p} failed ({status}, {oks} of {p} ranks ok)\n{stdout}{stderr}"
            );
        }
        print!("{stdout}");
        println!(
            "{name}: {p} process(es) ok in {:.2} s",
            start.elapsed().as_secs_f64()
        );
    }
}

/// Deterministic pseudo-random value in (-1, 1) for `(rank, k)`.
pub fn value(rank: usize, k: usize) -> f64 {
    let mut z = ((rank as u64) << 32 | k as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    2.0 * ((z >> 11) as f64 / (1u64 << 53) as f64) - 1.0
}

/// `n` values for `rank`, from stream `salt`.
pub fn values(rank: usize, salt: usize, n: usize) -> Vec<f64> {
    (0..n).map(|k| value(rank, salt * 1000 + k)).collect()
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
