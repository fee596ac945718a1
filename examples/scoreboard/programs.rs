//! The scoreboard's programs: inputs, the check of every peer against phidiff, and the
//! timers.

use crate::timing::{self, Timer};
use crate::{
    adbench, ba, burgers2d, functions, gmm, gmm_hand, lstm, lstm_hand, parallel_programs, peers,
};
use crate::{Cell, Peer, Row};
use echidna::Reverse64;
use num_dual::Dual64;
use std::path::{Path, PathBuf};
use std::rc::Rc;

mod gradbench_rows;
mod hand_tracking;
use gradbench_rows::{llsq_bench, ode_bench};
use hand_tracking::ht_bench;

/// The input files of the run: ADBench's, and the generated ones in a private temporary
/// directory that is removed when the run ends (also on a panic).
pub struct Inputs {
    pub dir: PathBuf,
    /// `(key, kind, path, params)` of every program, for the Python peers.
    pub manifest: Vec<(String, String, PathBuf, String)>,
    pub quick: bool,
    /// The programs to run (`--only`): keys or key prefixes; empty for all.
    pub only: Vec<String>,
}

impl Inputs {
    pub fn create(quick: bool, only: Vec<String>) -> Inputs {
        let dir = std::env::temp_dir().join(format!("phidiff-scoreboard-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        Inputs {
            dir,
            manifest: Vec::new(),
            quick,
            only,
        }
    }

    /// Whether the program `key` is run: `--only` names it or a prefix of it.
    fn wanted(&self, key: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| names(o, key))
    }

    /// Writes `values` (one per line) as `<dir>/<name>`.
    fn write(&self, name: &str, values: &[f64]) -> PathBuf {
        let path = self.dir.join(name);
        let text: String = values.iter().map(|v| format!("{v:e}\n")).collect();
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }
}

impl Drop for Inputs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One program ready to time.
pub struct Bench {
    pub title: String,
    pub size: String,
    key: String,
    value: f64,
    grad_norm: f64,
    primal: Timer,
    ours: Timer,
    /// (peer, timer, how many timed calls make one gradient).
    peers: Vec<(Peer, Timer, f64)>,
}

impl Bench {
    /// Times phidiff and every peer in the same interleaved rounds: the Python peers only
    /// where their objective and gradient norm agree with phidiff's.
    pub fn measure(&mut self, rounds: usize, external: &crate::external::External) -> Row {
        let mut cells = vec![Cell::Missing("—".into()); Peer::ALL.len()];
        // JAX and PyTorch, where they agree with phidiff, are timed in the same rounds.
        let mut remote: Vec<(Peer, Timer)> = Vec::new();
        for r in external.results.iter().filter(|r| r.program == self.key) {
            let ok_value = close(r.value, self.value, 1e-9);
            let ok_grad = close(r.grad_norm, self.grad_norm, 1e-8);
            if ok_value && ok_grad {
                remote.push((r.peer, external.timer(r)));
            } else {
                eprintln!(
                    "  {} on {}: value {} vs {}, |∇| {} vs {}: not used",
                    r.peer.name(),
                    self.key,
                    r.value,
                    self.value,
                    r.grad_norm,
                    self.grad_norm
                );
                cells[r.peer.index()] = Cell::Missing("differs".into());
            }
        }
        {
            let mut timers: Vec<&mut Timer> = vec![&mut self.primal, &mut self.ours];
            timers.extend(self.peers.iter_mut().map(|(_, t, _)| t));
            timers.extend(remote.iter_mut().map(|(_, t)| t));
            timing::run(&mut timers, rounds);
        }
        for (peer, t, times) in &self.peers {
            cells[peer.index()] = Cell::Time {
                secs: t.fastest() * times,
                per_direction: *times != 1.0,
            };
        }
        for (peer, t) in &remote {
            cells[peer.index()] = Cell::Time {
                secs: t.fastest(),
                per_direction: false,
            };
        }
        Row {
            title: self.title.clone(),
            size: self.size.clone(),
            primal: self.primal.fastest(),
            grad: self.ours.fastest(),
            peers: cells,
        }
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// max |a − b| / max |b|.
fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0_f64, |m, v| m.max(v.abs())).max(1e-300);
    a.iter()
        .zip(b)
        .fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

type Primal = Rc<dyn Fn(&[f64]) -> f64>;
type Gradient = Box<dyn FnMut(&[f64], &mut [f64]) -> f64>;

/// A scalar program over one flat input vector, and its peers.
struct Scalar {
    title: String,
    size: String,
    key: String,
    x: Vec<f64>,
    /// The objective (the user's `f64` function).
    primal: Primal,
    /// phidiff: adds `∇f` into the second argument, returns `f`.
    grad: Gradient,
    hand: Option<Gradient>,
    echidna: Option<Rc<dyn Fn(&[Reverse64]) -> Reverse64>>,
    dual: Option<Rc<dyn Fn(&[Dual64]) -> Dual64>>,
}

impl Scalar {
    /// Checks every peer against phidiff at `x`, then builds the timers.
    fn bench(mut self) -> Bench {
        let n = self.x.len();
        let x = Rc::new(self.x);
        let mut g = vec![0.0; n];
        let value = (self.grad)(&x, &mut g);
        let f0 = (self.primal)(&x);
        assert!(
            close(value, f0, 1e-12),
            "{}: phidiff's value {value} vs the primal's {f0}",
            self.title
        );
        let v = phidiff::check::random_vector(11, n);
        let gv = dot(&g, &v);
        let scale = norm(&g) * norm(&v);
        let mut peers = Vec::new();

        if let Some(mut hand) = self.hand.take() {
            let mut gh = vec![0.0; n];
            let vh = hand(&x, &mut gh);
            let e = rel_err(&gh, &g);
            assert!(
                close(vh, value, 1e-12) && e <= 1e-10,
                "{}: hand gradient differs by {e:e}",
                self.title
            );
            let (x, mut gh) = (x.clone(), gh);
            peers.push((
                Peer::Hand,
                Timer::new(move || {
                    gh.fill(0.0);
                    hand(&x, &mut gh)
                }),
                1.0,
            ));
        }

        // Central finite differences along v, the step scaled to x.
        let h = 1e-6 * x.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
        let mut fd_dir = {
            let (primal, x, v) = (self.primal.clone(), x.clone(), v.clone());
            let (mut xp, mut xm) = (vec![0.0; n], vec![0.0; n]);
            move || {
                for i in 0..x.len() {
                    xp[i] = x[i] + h * v[i];
                    xm[i] = x[i] - h * v[i];
                }
                (primal(&xp) - primal(&xm)) / (2.0 * h)
            }
        };
        let fd = fd_dir();
        assert!(
            (fd - gv).abs() <= 1e-5 * scale,
            "{}: finite differences {fd} vs ∇f·v {gv}",
            self.title
        );
        peers.push((Peer::Fd, Timer::new(fd_dir), n as f64));

        if let Some(f) = self.echidna.take() {
            let ge = echidna::grad(|p| f(p), &x);
            let e = rel_err(&ge, &g);
            assert!(
                e <= 1e-10,
                "{}: echidna's gradient differs by {e:e}",
                self.title
            );
            let x = x.clone();
            peers.push((
                Peer::Echidna,
                Timer::new(move || echidna::grad(|p| f(p), &x)[0]),
                1.0,
            ));
        }

        if let Some(f) = self.dual.take() {
            let t = peers::dual_tangent(|p| f(p), &x, &v);
            assert!(
                (t - gv).abs() <= 1e-10 * scale,
                "{}: num-dual's tangent {t} vs ∇f·v {gv}",
                self.title
            );
            let (x, v) = (x.clone(), v.clone());
            peers.push((
                Peer::NumDual,
                Timer::new(move || peers::dual_tangent(|p| f(p), &x, &v)),
                n as f64,
            ));
        }

        let primal = {
            let (p, x) = (self.primal.clone(), x.clone());
            Timer::new(move || p(&x))
        };
        let ours = {
            let (mut grad, x, mut g) = (self.grad, x.clone(), vec![0.0; n]);
            Timer::new(move || {
                g.fill(0.0);
                grad(&x, &mut g)
            })
        };
        Bench {
            title: self.title,
            size: self.size,
            key: self.key,
            value,
            grad_norm: norm(&g),
            primal,
            ours,
            peers,
        }
    }
}

/// Whether `--only` entry `o` names program `key`: the whole key, or its parts up to an
/// underscore (`gmm` and `gmm_d2` name `gmm_d2_K5`; `gmm_d2` does not name `gmm_d20_K50`).
fn names(o: &str, key: &str) -> bool {
    key.strip_prefix(o)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'))
}

/// Every program of the scoreboard, checked and ready to time.
pub fn all(inputs: &mut Inputs, pool: &'static rayon::ThreadPool) -> Vec<Bench> {
    let mut out = Vec::new();
    let gmms: &[(&str, usize, usize)] = if inputs.quick {
        &[
            ("gmm/1k/gmm_d2_K5.txt", 2, 5),
            ("gmm/1k/gmm_d10_K25.txt", 10, 25),
        ]
    } else {
        &[
            ("gmm/1k/gmm_d2_K5.txt", 2, 5),
            ("gmm/1k/gmm_d10_K25.txt", 10, 25),
            ("", 20, 50),
            ("", 64, 100),
        ]
    };
    for &(file, d, k) in gmms {
        if !inputs.wanted(&format!("gmm_d{d}_K{k}")) {
            continue;
        }
        let path = if file.is_empty() {
            write_gmm(inputs, d, k, 1000)
        } else {
            adbench::data(file)
        };
        out.push(gmm_bench(inputs, &path, d, k));
    }
    if inputs.wanted("lstm_l2_c1024") {
        out.push(lstm_bench(inputs));
    }
    if inputs.wanted("ba1") {
        out.push(ba_bench(inputs));
    }
    if inputs.wanted("rosenbrock") {
        out.push(rosenbrock_bench(inputs));
    }
    if inputs.wanted("burgers2d") || inputs.wanted("burgers2d_revolve") {
        out.extend(burgers_benches(inputs));
    }
    if inputs.wanted("stencil") {
        out.push(stencil_bench(inputs, pool));
    }
    if inputs.wanted("ht_simple") {
        out.push(ht_bench(inputs));
    }
    if inputs.wanted("llsq") {
        out.push(llsq_bench(inputs));
    }
    if inputs.wanted("ode") {
        out.push(ode_bench(inputs));
    }
    out.retain(|b| inputs.wanted(&b.key));
    let unknown: Vec<&String> = inputs
        .only
        .iter()
        .filter(|o| !out.iter().any(|b| names(o, &b.key)))
        .collect();
    assert!(
        unknown.is_empty(),
        "scoreboard: --only {unknown:?} names no program (the keys: gmm_d2_K5, gmm_d10_K25, \
         gmm_d20_K50, gmm_d64_K100, lstm_l2_c1024, ba1, rosenbrock, burgers2d, \
         burgers2d_revolve, stencil, ht_simple, llsq, ode)"
    );
    out
}

fn record(inputs: &mut Inputs, key: &str, kind: &str, path: &Path, params: &str) {
    inputs
        .manifest
        .push((key.into(), kind.into(), path.to_path_buf(), params.into()));
}

/// A GMM input in ADBench's format: `d k n`, alphas, means, icf, points, `gamma m`.
fn write_gmm(inputs: &Inputs, d: usize, k: usize, n: usize) -> PathBuf {
    let icf_sz = d * (d + 1) / 2;
    let alphas = phidiff::check::random_vector(21, k);
    let means: Vec<f64> = phidiff::check::random_vector(22, k * d)
        .iter()
        .map(|v| 0.5 + 0.5 * v)
        .collect();
    let icf: Vec<f64> = phidiff::check::random_vector(23, k * icf_sz)
        .iter()
        .map(|v| 0.5 * v)
        .collect();
    let x: Vec<f64> = phidiff::check::random_vector(24, n * d)
        .iter()
        .map(|v| 0.5 + 0.5 * v)
        .collect();
    let mut text = format!("{d} {k} {n}\n");
    for part in [&alphas, &means, &icf, &x] {
        for v in part.iter() {
            text.push_str(&format!("{v:e}\n"));
        }
    }
    text.push_str("1 0\n");
    let path = inputs.dir.join(format!("gmm_d{d}_K{k}.txt"));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// A GMM problem with its prior's constant, split the same way for every tool: the flat
/// input is alphas, then means, then icf.
struct GmmProblem {
    g: adbench::Gmm,
    lg: f64,
    /// The points as rows and the prior, for phidiff's program as users write it
    /// (`gmm::gmm_objective` on a `GmmParams` struct).
    points: Vec<Vec<f64>>,
    wishart: gmm::Wishart,
}

impl GmmProblem {
    fn new(g: adbench::Gmm) -> Self {
        let lg = adbench::ln_multigamma(0.5 * (g.d + g.m + 1) as f64, g.d);
        let points = g.x.chunks(g.d).map(<[f64]>::to_vec).collect();
        let wishart = gmm::Wishart {
            gamma: g.gamma,
            m: g.m,
        };
        GmmProblem {
            g,
            lg,
            points,
            wishart,
        }
    }

    /// The parameters at the flat point `p` as the struct phidiff's program takes.
    fn theta(&self, p: &[f64]) -> gmm::GmmParams {
        let (a, m, i) = self.parts(p);
        gmm::GmmParams::from_flat(a, m, i, self.g.d)
    }

    fn parts<'a, T>(&self, p: &'a [T]) -> (&'a [T], &'a [T], &'a [T]) {
        let (a, rest) = p.split_at(self.g.alphas.len());
        let (m, i) = rest.split_at(self.g.means.len());
        (a, m, i)
    }

    fn parts_mut<'a>(&self, p: &'a mut [f64]) -> (&'a mut [f64], &'a mut [f64], &'a mut [f64]) {
        let (a, rest) = p.split_at_mut(self.g.alphas.len());
        let (m, i) = rest.split_at_mut(self.g.means.len());
        (a, m, i)
    }

    /// The objective over a peer's number type.
    fn peer<T: peers::Real>(&self, p: &[T]) -> T {
        let ((a, m, i), g) = (self.parts(p), &self.g);
        peers::gmm(a, m, i, &g.x, g.d, g.k, g.n, g.gamma, g.m, self.lg)
    }
}

fn gmm_bench(inputs: &mut Inputs, path: &Path, d: usize, k: usize) -> Bench {
    let pb = Rc::new(GmmProblem::new(adbench::read_gmm(path)));
    assert_eq!((pb.g.d, pb.g.k), (d, k), "{}", path.display());
    let key = format!("gmm_d{d}_K{k}");
    record(inputs, &key, "gmm", path, "");
    let g = &pb.g;
    let x = [&g.alphas[..], &g.means, &g.icf].concat();
    let primal: Primal = {
        let pb = pb.clone();
        Rc::new(move |p: &[f64]| gmm::gmm_objective(&pb.theta(p), &pb.points, &pb.wishart, pb.lg))
    };
    let grad: Gradient = {
        let pb = pb.clone();
        Box::new(move |p: &[f64], out: &mut [f64]| {
            let theta = pb.theta(p);
            let mut dtheta = phidiff::Differentiable::zero_like(&theta);
            let v =
                gmm::gmm_objective_rev(&theta, &mut dtheta, &pb.points, &pb.wishart, pb.lg, 1.0);
            dtheta.write_flat(out);
            v
        })
    };
    let hand: Gradient = {
        let pb = pb.clone();
        Box::new(move |p: &[f64], out: &mut [f64]| {
            let ((a, m, i), (da, dm, di), g) = (pb.parts(p), pb.parts_mut(out), &pb.g);
            gmm_hand::gmm_objective_hand(
                a, m, i, &g.x, g.d, g.k, g.n, g.gamma, g.m, pb.lg, da, dm, di,
            )
        })
    };
    let echidna = {
        let pb = pb.clone();
        Rc::new(move |p: &[Reverse64]| pb.peer(p))
    };
    let dual = {
        let pb = pb.clone();
        Rc::new(move |p: &[Dual64]| pb.peer(p))
    };
    Scalar {
        title: format!("GMM d={d} K={k}"),
        size: format!("n={}, {} inputs", g.n, x.len()),
        key,
        x,
        primal,
        grad,
        hand: Some(hand),
        echidna: Some(echidna),
        dual: Some(dual),
    }
    .bench()
}

fn lstm_bench(inputs: &mut Inputs) -> Bench {
    let path = adbench::data("lstm/lstm_l2_c1024.txt");
    record(inputs, "lstm_l2_c1024", "lstm", &path, "");
    let s = Rc::new(adbench::read_lstm(&path));
    let nm = s.main_params.len();
    let x = [&s.main_params[..], &s.extra_params].concat();
    // phidiff's program as users write it: layer and state structs, the sequence as rows.
    let rows: Rc<Vec<Vec<f64>>> = Rc::new(s.sequence.chunks(s.b).map(<[f64]>::to_vec).collect());
    let primal: Primal = {
        let (s, rows) = (s.clone(), rows.clone());
        Rc::new(move |p: &[f64]| {
            let layers = lstm::layers_from_flat(&p[..nm], s.b);
            let extra = lstm::extra_from_flat(&p[nm..], s.b);
            let mut state = lstm::state_from_flat(&s.state, s.b);
            lstm::lstm_objective(&layers, &extra, &mut state, &rows)
        })
    };
    let grad: Gradient = {
        let s = s.clone();
        Box::new(move |p: &[f64], out: &mut [f64]| {
            use phidiff::Differentiable;
            let layers = lstm::layers_from_flat(&p[..nm], s.b);
            let extra = lstm::extra_from_flat(&p[nm..], s.b);
            let mut state = lstm::state_from_flat(&s.state, s.b);
            let mut dlayers: Vec<lstm::LstmLayer> = layers.iter().map(|l| l.zero_like()).collect();
            let mut dextra = extra.zero_like();
            let mut dstate: Vec<lstm::LayerState> = state.iter().map(|l| l.zero_like()).collect();
            let v = lstm::lstm_objective_rev(
                &layers,
                &mut dlayers,
                &extra,
                &mut dextra,
                &mut state,
                &mut dstate,
                &rows,
                1.0,
            );
            lstm::write_params(&dlayers, &dextra, out);
            v
        })
    };
    let hand: Gradient = {
        let s = s.clone();
        let mut dstate = vec![0.0; s.state.len()];
        Box::new(move |p: &[f64], out: &mut [f64]| {
            let mut state = s.state.clone();
            dstate.fill(0.0);
            let (dm, de) = out.split_at_mut(nm);
            lstm_hand::lstm_objective_hand(
                &p[..nm],
                &p[nm..],
                &mut state,
                &s.sequence,
                s.l,
                s.c,
                s.b,
                dm,
                de,
                &mut dstate,
            )
        })
    };
    let echidna = {
        let s = s.clone();
        Rc::new(move |p: &[Reverse64]| {
            let mut state: Vec<Reverse64> =
                s.state.iter().map(|&v| Reverse64::constant(v)).collect();
            peers::lstm(&p[..nm], &p[nm..], &mut state, &s.sequence, s.l, s.c, s.b)
        })
    };
    let dual = {
        let s = s.clone();
        Rc::new(move |p: &[Dual64]| {
            let mut state: Vec<Dual64> = s.state.iter().map(|&v| Dual64::from_re(v)).collect();
            peers::lstm(&p[..nm], &p[nm..], &mut state, &s.sequence, s.l, s.c, s.b)
        })
    };
    Scalar {
        title: "LSTM l=2 c=1024".into(),
        size: format!("b={}, {} inputs", s.b, x.len()),
        key: "lstm_l2_c1024".into(),
        x,
        primal,
        grad,
        hand: Some(hand),
        echidna: Some(echidna),
        dual: Some(dual),
    }
    .bench()
}

fn rosenbrock_bench(inputs: &mut Inputs) -> Bench {
    let n = if inputs.quick { 10_000 } else { 100_000 };
    let x: Vec<f64> = phidiff::check::random_vector(1, n)
        .iter()
        .map(|v| 1.0 + 0.5 * v)
        .collect();
    let path = inputs.write("rosenbrock.txt", &x);
    record(inputs, "rosenbrock", "rosenbrock", &path, "");
    Scalar {
        title: "Rosenbrock".into(),
        size: format!("{n} inputs"),
        key: "rosenbrock".into(),
        x,
        primal: Rc::new(functions::rosenbrock),
        grad: Box::new(|x: &[f64], g: &mut [f64]| functions::rosenbrock_rev(x, g, 1.0)),
        hand: Some(Box::new(|x: &[f64], g: &mut [f64]| {
            functions::rosenbrock_hand(x, g, 1.0)
        })),
        echidna: Some(Rc::new(|p: &[Reverse64]| peers::rosenbrock(p))),
        dual: Some(Rc::new(|p: &[Dual64]| peers::rosenbrock(p))),
    }
    .bench()
}

fn burgers_benches(inputs: &mut Inputs) -> Vec<Bench> {
    let (m, n, steps, snaps) = if inputs.quick {
        (32, 32, 50, 5)
    } else {
        (64, 64, 200, 10)
    };
    let (nu, dt) = (0.01, 0.002);
    let u0 = burgers2d::initial(m, n);
    let path = inputs.write("burgers2d.txt", &u0);
    let params = format!("{n} {nu} {dt} {steps}");
    record(inputs, "burgers2d", "burgers", &path, &params);
    let mut out = Vec::new();
    for revolve in [true, false] {
        let grad: Gradient = if revolve {
            Box::new(move |u: &[f64], g: &mut [f64]| {
                burgers2d::burgers2d_revolve_rev(u, g, n, nu, dt, steps, snaps, 1.0)
            })
        } else {
            Box::new(move |u: &[f64], g: &mut [f64]| {
                burgers2d::burgers2d_full_rev(u, g, n, nu, dt, steps, 1.0)
            })
        };
        // Each row's hand-written adjoint keeps what its phidiff gradient keeps: every
        // state, or `snaps` snapshots under the same Revolve schedule.
        let hand: Gradient = if revolve {
            Box::new(move |u: &[f64], g: &mut [f64]| {
                burgers2d::burgers2d_hand_revolve(u, g, n, nu, dt, steps, snaps, 1.0)
            })
        } else {
            Box::new(move |u: &[f64], g: &mut [f64]| {
                burgers2d::burgers2d_hand(u, g, n, nu, dt, steps, 1.0)
            })
        };
        let mut b = Scalar {
            title: if revolve {
                format!("2-D Burgers, Revolve ({snaps} snapshots)")
            } else {
                "2-D Burgers, full tape".into()
            },
            size: format!("{m}×{n}, {steps} steps"),
            key: "burgers2d".into(),
            x: u0.clone(),
            primal: Rc::new(move |u: &[f64]| burgers2d::burgers2d_full(u, n, nu, dt, steps)),
            grad,
            hand: Some(hand),
            echidna: Some(Rc::new(move |p: &[Reverse64]| {
                peers::burgers2d(p, n, nu, dt, steps)
            })),
            dual: Some(Rc::new(move |p: &[Dual64]| {
                peers::burgers2d(p, n, nu, dt, steps)
            })),
        }
        .bench();
        if revolve {
            // JAX and PyTorch keep every step's values (a `fori_loop` / a Python loop,
            // no checkpointing), so they are compared on the full-tape row.
            b.key = "burgers2d_revolve".into();
        }
        out.push(b);
    }
    out
}

fn stencil_bench(inputs: &mut Inputs, pool: &'static rayon::ThreadPool) -> Bench {
    let n = if inputs.quick { 200 } else { 1000 };
    let r = 0.2;
    let u = parallel_programs::field(n * n);
    let path = inputs.write("stencil.txt", &u);
    record(inputs, "stencil", "heat2d", &path, &format!("{n} {r}"));
    let primal: Primal = {
        let out = std::sync::Mutex::new(vec![0.0; n * n]);
        Rc::new(move |u: &[f64]| {
            pool.install(|| parallel_programs::heat2d_field(u, &mut out.lock().unwrap(), r, n))
        })
    };
    // Over the field `u` alone (`wrt(u, out)`), as every peer: not over `r`.
    // `out` is written whole, so the adjoint of its initial value, which `dout` holds when
    // `_rev` returns (the contract of a `&mut` shadow), is zero: each call leaves `dout`
    // as the next one needs it, as the first call's check confirms.
    let grad: Gradient = {
        let (mut out, mut dout) = (vec![0.0; n * n], vec![0.0; n * n]);
        let mut checked = false;
        Box::new(move |u: &[f64], g: &mut [f64]| {
            let value = pool.install(|| {
                parallel_programs::heat2d_field_rev(u, g, &mut out, &mut dout, r, n, 1.0)
            });
            if !checked {
                assert!(
                    dout.iter().all(|v| *v == 0.0),
                    "stencil: heat2d_field_rev left a nonzero adjoint in dout"
                );
                checked = true;
            }
            value
        })
    };
    // On the pool's thread too, as the primal and phidiff's gradient: the row's three
    // Rust timings then share one thread.
    let hand: Gradient = {
        let mut out = vec![0.0; n * n];
        Box::new(move |u: &[f64], g: &mut [f64]| {
            pool.install(|| burgers2d::heat2d_hand(u, &mut out, g, r, n, 1.0))
        })
    };
    Scalar {
        title: "rayon stencil (1 thread)".into(),
        size: format!("{n}×{n}"),
        key: "stencil".into(),
        x: u,
        primal,
        grad,
        hand: Some(hand),
        echidna: Some(Rc::new(move |p: &[Reverse64]| peers::heat2d(p, r, n))),
        dual: Some(Rc::new(move |p: &[Dual64]| peers::heat2d(p, r, n))),
    }
    .bench()
}

/// ADBench BA on ba1: the whole sparse Jacobian for every tool (15 nonzeros per
/// reprojection row, 1 per weight row), checked entry by entry against phidiff's.
fn ba_bench(inputs: &mut Inputs) -> Bench {
    let path = adbench::data("ba/ba1_n49_m7776_p31843.txt");
    record(inputs, "ba1", "ba", &path, "");
    let b = Rc::new(adbench::read_ba(&path));
    let p = b.p;
    let mut ours = ba::SparseJ::new(&b);
    ba::ba_jacobian(&b, &mut ours);
    let mut res = vec![0.0; 3 * p];
    ba::ba_residuals(&b, &mut res);
    let value = dot(&res, &res);
    let tol = 1e-10 * ours.vals.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    let check = |name: &str, j: &ba::SparseJ, tol: f64| {
        let e = j
            .vals
            .iter()
            .zip(&ours.vals)
            .fold(0.0_f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            e <= tol,
            "BA: {name}'s Jacobian differs from phidiff's by {e:e} (tolerance {tol:e})"
        );
    };

    let timer = |f: fn(&adbench::Ba, &mut ba::SparseJ)| {
        let (b, mut j) = (b.clone(), ba::SparseJ::new(&b));
        Timer::new(move || {
            f(&b, &mut j);
            j.vals[0]
        })
    };
    let mut hand = ba::SparseJ::new(&b);
    ba::ba_jacobian_hand(&b, &mut hand);
    check("the hand-written", &hand, tol);
    let mut fd = ba::SparseJ::new(&b);
    ba_jacobian_fd(&b, &mut fd);
    check("finite differences'", &fd, 1e-6 * tol / 1e-10);
    let mut ech = ba::SparseJ::new(&b);
    ba_jacobian_echidna(&b, &mut ech);
    check("echidna", &ech, tol);
    let mut dual = ba::SparseJ::new(&b);
    ba_jacobian_dual(&b, &mut dual);
    check("num-dual", &dual, tol);

    let primal = {
        let (b, mut res) = (b.clone(), res.clone());
        Timer::new(move || {
            ba::ba_residuals(&b, &mut res);
            res[0]
        })
    };
    Bench {
        title: "BA (ba1), sparse Jacobian".into(),
        size: format!("{p} observations, {} nonzeros", ours.vals.len()),
        key: "ba1".into(),
        value,
        grad_norm: norm(&ours.vals),
        primal,
        ours: timer(ba::ba_jacobian),
        peers: vec![
            (Peer::Hand, timer(ba::ba_jacobian_hand), 1.0),
            (Peer::Fd, timer(ba_jacobian_fd), 1.0),
            (Peer::Echidna, timer(ba_jacobian_echidna), 1.0),
            (Peer::NumDual, timer(ba_jacobian_dual), 1.0),
        ],
    }
}

/// The 15 parameters of observation `i`: camera, point, weight.
fn ba_params(b: &adbench::Ba, i: usize) -> ([f64; 15], &[f64]) {
    let (cam, x, w, feat) = ba::observation(b, i);
    let mut q = [0.0; 15];
    q[..11].copy_from_slice(cam);
    q[11..14].copy_from_slice(x);
    q[14] = w;
    (q, feat)
}

/// Each tool fills the rows of observation `i` from `row(i, q, feat, two rows)`, and the
/// weight rows with `weight(w)`.
fn ba_fill(
    b: &adbench::Ba,
    j: &mut ba::SparseJ,
    mut row: impl FnMut(&[f64; 15], &[f64], &mut [f64]),
    weight: impl Fn(f64) -> f64,
) {
    let (reproj, weights) = j.vals.split_at_mut(2 * b.p * ba::N_ROW);
    for (i, block) in reproj.chunks_exact_mut(2 * ba::N_ROW).enumerate() {
        let (q, feat) = ba_params(b, i);
        row(&q, feat, block);
    }
    for (d, &w) in weights.iter_mut().zip(&b.w) {
        *d = weight(w);
    }
}

/// Central differences, one column (of 15) at a time.
fn ba_jacobian_fd(b: &adbench::Ba, j: &mut ba::SparseJ) {
    ba_fill(
        b,
        j,
        |q, feat, block| {
            let mut qq = *q;
            let (mut ep, mut em) = ([0.0; 2], [0.0; 2]);
            for c in 0..15 {
                let h = 1e-6 * q[c].abs().max(1.0);
                qq[c] = q[c] + h;
                ba::reproj_error_flat(&qq[..11], &qq[11..14], qq[14], feat, &mut ep);
                qq[c] = q[c] - h;
                ba::reproj_error_flat(&qq[..11], &qq[11..14], qq[14], feat, &mut em);
                qq[c] = q[c];
                block[c] = (ep[0] - em[0]) / (2.0 * h);
                block[ba::N_ROW + c] = (ep[1] - em[1]) / (2.0 * h);
            }
        },
        |w| {
            let h = 1e-6 * w.abs().max(1.0);
            (ba::weight_error(w + h) - ba::weight_error(w - h)) / (2.0 * h)
        },
    );
}

/// echidna: one taped evaluation and reverse sweep per residual (two per observation).
fn ba_jacobian_echidna(b: &adbench::Ba, j: &mut ba::SparseJ) {
    ba_fill(
        b,
        j,
        |q, feat, block| {
            for (out, row) in block.chunks_exact_mut(ba::N_ROW).enumerate() {
                let mut wt = [0.0; 2];
                wt[out] = 1.0;
                let (_, g) = echidna::vjp(
                    |p: &[Reverse64]| peers::ba_reproj(&p[..11], &p[11..14], p[14], feat).to_vec(),
                    q,
                    &wt,
                );
                row.copy_from_slice(&g);
            }
        },
        |w| echidna::grad(|p| Reverse64::constant(1.0) - p[0] * p[0], &[w])[0],
    );
}

/// num-dual: one dual-number evaluation per column (15 per observation).
fn ba_jacobian_dual(b: &adbench::Ba, j: &mut ba::SparseJ) {
    ba_fill(
        b,
        j,
        |q, feat, block| {
            let mut p: [Dual64; 15] = q.map(Dual64::from_re);
            for c in 0..15 {
                p[c].eps = 1.0;
                let e = peers::ba_reproj(&p[..11], &p[11..14], p[14], feat);
                p[c].eps = 0.0;
                block[c] = e[0].eps;
                block[ba::N_ROW + c] = e[1].eps;
            }
        },
        |w| {
            let x = Dual64::new(w, 1.0);
            (Dual64::from_re(1.0) - x * x).eps
        },
    );
}
