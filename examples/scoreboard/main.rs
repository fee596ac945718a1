//! The scoreboard (issue 8): phidiff's gradients against the tools a Rust user would
//! otherwise pick, measured side by side in one run on one machine.
//!
//! ```text
//! cargo run --release --example scoreboard [-- --rounds N] [--quick] [--update-readme] [--out DIR] [--only KEYS]
//! ```
//!
//! Programs: ADBench GMM (d = 2 … 64, K = 5 … 100, n = 1000), ADBench LSTM (l = 2,
//! c = 1024), ADBench BA (ba1: the sparse Jacobian, one batched reverse sweep per
//! observation), Rosenbrock, 2-D Burgers (Revolve, and fully taped) and a rayon stencil.
//! Peers: a hand-written adjoint, central finite differences, echidna (tape-based reverse
//! mode), num-dual (forward mode), and JAX (jit) and PyTorch through `benches/peers/jax_torch.py`
//! when `.venv-peers/` exists (`scripts/peers-venv` makes it; `PHIDIFF_PEERS_PYTHON` names
//! another interpreter). Everything runs on one thread: phidiff's rayon stencil in a
//! one-thread pool, PyTorch with `set_num_threads(1)`, XLA without its thread pool.
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
//! `lstm`, `ba1`, `rosenbrock`, `burgers2d`, `stencil`, …) and prints their rows, written
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

use std::path::PathBuf;

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
                   (gmm, gmm_d2, lstm, ba1, rosenbrock, burgers2d, stencil, ...); the rows
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

fn main() {
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
            return;
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
}
