//! The scoreboard (issue 8): phidiff's gradients against the tools a Rust user would
//! otherwise pick, measured side by side in one run on one machine.
//!
//! ```text
//! cargo run --release --example scoreboard [-- --rounds N] [--quick] [--update-readme] [--out DIR] [--only KEYS]
//! ```
//!
//! Programs: ADBench GMM (d = 2 … 64, K = 5 … 100, n = 1000), ADBench LSTM (l = 2,
//! c = 1024), ADBench BA (ba1: the sparse Jacobian, one batched reverse sweep per
//! observation), Rosenbrock, 2-D Burgers (Revolve, and fully taped), a rayon stencil,
//! GradBench's hand tracking on a synthetic hand (the `3n × 26` Jacobian), and GradBench's
//! `llsq` and `ode` as the GradBench tool writes them (their hand-written gradients stand in
//! for GradBench's C++ `manual` tool).
//! Peers: a hand-written adjoint, central finite differences, echidna (tape-based reverse
//! mode), num-dual (forward mode), and JAX (jit) and PyTorch through `benches/peers/jax_torch.py`
//! when `.venv-peers/` exists (`scripts/peers-venv` makes it; `PHIDIFF_PEERS_PYTHON` names
//! another interpreter). Everything runs on one thread: phidiff's rayon stencil in a
//! one-thread pool, PyTorch with `set_num_threads(1)`, XLA without its Eigen thread pool;
//! and on one CPU: the scoreboard re-runs itself under `taskset` ([`run_on_one_cpu`]),
//! since XLA uses a second CPU whatever its flags say.
//!
//! Before any timing, every peer's result is checked against phidiff's: the hand
//! gradient and echidna's to 1e-10, num-dual's tangent and one finite-difference
//! direction against `∇f·v`, JAX's and PyTorch's objective and gradient norm. Finite
//! differences and num-dual give one directional derivative per evaluation, so their
//! gradient time is `n ×` the measured time of one direction (marked †); BA's Jacobian is
//! measured whole for every tool.
//!
//! Writes `scoreboard.md` (the table) and `scoreboard.svg` (the ratios as bars) into
//! `benches/results/` (or `--out`), and with `--update-readme` replaces the table in
//! README.md between its scoreboard markers. `--only gmm_d10,stencil` runs the programs
//! named by a key or by its parts up to an underscore (`gmm`, `gmm_d2`, `gmm_d2_K5`,
//! `lstm`, `ba1`, `rosenbrock`, `burgers2d`, `stencil`, `ht`, `llsq`, `ode`, …) and prints their rows, written
//! only with `--out`: a quick look at one row, timed in the scoreboard's own binary.

#[path = "../../benches/support/adbench.rs"]
mod adbench;
#[path = "../../benches/support/ba.rs"]
mod ba;
#[path = "../../benches/support/burgers2d.rs"]
mod burgers2d;
#[path = "../../benches/support/functions.rs"]
mod functions;
#[path = "../../benches/support/gmm.rs"]
mod gmm;
#[path = "../../benches/support/gmm_hand.rs"]
mod gmm_hand;
#[path = "../../benches/support/gradbench_hand.rs"]
mod gradbench_hand;
#[path = "../../benches/support/ht_hand.rs"]
mod ht_hand;
#[path = "../../benches/support/lstm.rs"]
mod lstm;
#[path = "../../benches/support/lstm_hand.rs"]
mod lstm_hand;
#[path = "../../benches/support/parallel_programs.rs"]
mod parallel_programs;
#[path = "../../benches/support/peers.rs"]
mod peers;

mod external;
mod programs;
mod report;
mod timing;

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The columns after phidiff's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    Hand,
    Fd,
    Echidna,
    NumDual,
    /// `jax.value_and_grad`: the value with the gradient, as every other column.
    Jax,
    /// `jax.grad` alone, which lets XLA drop what only the value needs.
    JaxGradOnly,
    PyTorch,
}

impl Peer {
    pub const ALL: [Peer; 7] = [
        Peer::Hand,
        Peer::Fd,
        Peer::Echidna,
        Peer::NumDual,
        Peer::Jax,
        Peer::JaxGradOnly,
        Peer::PyTorch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Peer::Hand => "hand-written",
            Peer::Fd => "finite diff.",
            Peer::Echidna => "echidna",
            Peer::NumDual => "num-dual",
            Peer::Jax => "JAX",
            Peer::JaxGradOnly => "JAX, ∇ only",
            Peer::PyTorch => "PyTorch",
        }
    }

    pub fn index(self) -> usize {
        Peer::ALL.iter().position(|&p| p == self).unwrap()
    }
}

/// One measured program: phidiff's times and each peer's gradient time.
pub struct Row {
    pub title: String,
    pub size: String,
    pub primal: f64,
    pub grad: f64,
    /// Per [`Peer::ALL`]: gradient seconds, whether it is `n ×` one direction, or why not.
    pub peers: Vec<Cell>,
}

#[derive(Clone, Debug)]
pub enum Cell {
    Time { secs: f64, per_direction: bool },
    Missing(String),
}

pub struct Options {
    pub rounds: usize,
    pub quick: bool,
    pub update_readme: bool,
    /// `--out`: where the table and chart go (else `benches/results/`, and nowhere with
    /// `--only`).
    pub out: Option<PathBuf>,
    /// `--only`: the programs to run (keys or key prefixes); empty for all.
    pub only: Vec<String>,
}

const USAGE: &str =
    "usage: scoreboard [--rounds N] [--quick] [--update-readme] [--out DIR] [--only KEYS]
  --rounds N       interleaved timing rounds, the fastest kept (default 9; 3 with --quick)
  --quick          small sizes, a check that every peer agrees rather than a measurement
  --update-readme  also replace the table in README.md (needs every program)
  --out DIR        write scoreboard.md and scoreboard.svg there (default benches/results/)
  --only KEYS      run some programs: keys, or their parts up to an underscore, comma-separated
                   (gmm, gmm_d2, lstm, ba1, rosenbrock, burgers2d, stencil, ht, ...); the rows
                   are printed, and written only with --out";

fn options() -> Options {
    let mut o = Options {
        rounds: 9,
        quick: false,
        update_readme: false,
        out: None,
        only: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => {
                o.rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&r| r > 0)
                    .expect("--rounds takes a positive number")
            }
            "--quick" => o.quick = true,
            "--update-readme" => o.update_readme = true,
            "--out" => o.out = Some(PathBuf::from(args.next().expect("--out takes a directory"))),
            "--only" => {
                let list = args
                    .next()
                    .expect("--only takes a comma-separated list of programs");
                o.only
                    .extend(list.split(',').filter(|k| !k.is_empty()).map(String::from));
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => panic!("scoreboard: unknown argument `{other}`\n{USAGE}"),
        }
    }
    assert!(
        o.only.is_empty() || !o.update_readme,
        "scoreboard: --only measures some programs, and --update-readme needs all of them"
    );
    if o.quick {
        o.rounds = o.rounds.min(3);
    }
    o
}

/// Set in the re-executed scoreboard: the CPU it runs on.
const PINNED: &str = "PHIDIFF_SCOREBOARD_CPU";

/// Runs the scoreboard, and the peers' script it starts, on one CPU: re-executes it under
/// `taskset -c CPU` (the highest CPU it may use) and returns the exit code, or `None` to
/// go on here (already on one CPU, `PHIDIFF_SCOREBOARD_CPU` set, or no `taskset`: then
/// with a warning).
///
/// XLA uses a second CPU whatever its flags say (1.79–1.95 CPU-seconds per second on the
/// stencil, measured on the 2-core VM of 2026-11-23), which one thread per tool does not
/// stop. And unpinned, the scoreboard and the peers' script may land on different CPUs of
/// a shared VM, one of them slowed by another tenant while the other is not, which
/// interleaved rounds do not cancel: four `--only gmm_d10` runs gave JAX/phidiff 0.86 and
/// 0.63 unpinned (phidiff's primal 1.87 and 2.88 ms), 0.99 and 1.05 pinned (1.67 and
/// 1.64 ms). `docs/benchmarks.md` has the numbers.
fn run_on_one_cpu() -> Option<ExitCode> {
    if std::env::var_os(PINNED).is_some() {
        return None;
    }
    let cpus = allowed_cpus()?;
    let [.., cpu] = cpus[..] else {
        return None;
    };
    if cpus.len() == 1 {
        return None;
    }
    let taskset = |program: &OsStr, args: Vec<OsString>| {
        Command::new("taskset")
            .arg("-c")
            .arg(cpu.to_string())
            .arg(program)
            .args(args)
            .env(PINNED, cpu.to_string())
            .status()
    };
    match taskset(OsStr::new("true"), Vec::new()) {
        Ok(s) if s.success() => {}
        other => {
            eprintln!(
                "scoreboard: cannot pin to CPU {cpu} with taskset ({other:?}); timing unpinned"
            );
            return None;
        }
    }
    let exe = std::env::current_exe().expect("the scoreboard's own path");
    let code = taskset(exe.as_os_str(), std::env::args_os().skip(1).collect())
        .unwrap_or_else(|e| panic!("scoreboard: cannot run itself under taskset: {e}"))
        .code();
    Some(ExitCode::from(code.map_or(1, |c| c.clamp(0, 255) as u8)))
}

/// The CPUs this process may run on (Linux).
pub fn allowed_cpus() -> Option<Vec<usize>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    cpu_list(allowed.trim())
}

/// The CPUs of a list such as `0-3,6`.
fn cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().ok()?..=b.parse().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

fn main() -> ExitCode {
    if let Some(code) = run_on_one_cpu() {
        return code;
    }
    let opts = options();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread rayon pool");
    let mut inputs = programs::Inputs::create(opts.quick, opts.only.clone());
    let pool: &'static rayon::ThreadPool = Box::leak(Box::new(pool));
    let mut benches = programs::all(&mut inputs, pool);
    let external = external::start(&inputs);
    let mut rows = Vec::new();
    for b in benches.iter_mut() {
        eprintln!("timing {} ({}) ...", b.title, b.size);
        rows.push(b.measure(opts.rounds, &external));
    }
    let machine = report::machine(&external.versions);
    let table = report::markdown(&rows, &machine, &external.note);
    println!("{table}");
    let out = match opts.out {
        Some(dir) => dir,
        // A partial table does not replace the full one in `benches/results/`.
        None if !opts.only.is_empty() => {
            eprintln!("--only without --out: the table is not written");
            return ExitCode::SUCCESS;
        }
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/results"),
    };
    std::fs::create_dir_all(&out)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", out.display()));
    let md = out.join("scoreboard.md");
    std::fs::write(&md, &table).unwrap_or_else(|e| panic!("cannot write {}: {e}", md.display()));
    let svg = out.join("scoreboard.svg");
    std::fs::write(&svg, report::svg(&rows))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", svg.display()));
    eprintln!("wrote {} and {}", md.display(), svg.display());
    if opts.update_readme {
        let readme = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md");
        report::update_readme(&readme, &table);
        eprintln!("updated the scoreboard in {}", readme.display());
    }
    ExitCode::SUCCESS
}
