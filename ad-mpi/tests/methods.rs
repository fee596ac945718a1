//! Every communication method of `Comm` and its `_fwd`/`_rev`, under `mpirun` with 1, 2
//! and 4 processes: the tangent against central finite differences of the primal (abs
//! 1e-7 + rel 1e-7; the methods are linear or piecewise linear, so only rounding
//! remains), and the dot-product test summed over the ranks, `Σ_r ȳ·(J ẋ) = Σ_r (Jᵀȳ)·ẋ`
//! (rel 1e-12). Each method is seen as a function of every rank's `(send, recv before)`
//! with value `recv after`, so a buffer a call overwrites, or leaves alone, is covered
//! too. Also: the known values of the issue, ties of an extremum (the lowest rank gets
//! the adjoint), `f32`, and misuse panicking with the method and parameter named (length
//! mismatches, a bad rank, a product adjoint, a wait without a post, a reverse post before
//! its wait, a communicator dropped with operations in flight).

mod common;

use ad_mpi::mpi::collective::SystemOperation;
use ad_mpi::mpi::traits::*;
use ad_mpi::{Comm, Op};
use common::{dot, launch, under_mpirun, values};

type Primal = Box<dyn Fn(&Comm, &[f64], &mut [f64])>;
type Fwd = Box<dyn Fn(&Comm, &[f64], &[f64], &mut [f64], &mut [f64])>;
type Rev = Box<dyn Fn(&Comm, &[f64], &mut [f64], &mut [f64], &mut [f64])>;

/// A method under test: the lengths of `send` and `recv` on a rank, and its three forms
/// as functions of `(send, recv)`.
struct Method {
    name: &'static str,
    lens: Box<dyn Fn(usize, usize) -> (usize, usize)>,
    primal: Primal,
    fwd: Fwd,
    rev: Rev,
}

/// The sum over ranks, by rsmpi directly (not by the methods under test).
fn sum_over_ranks(comm: &Comm, x: f64) -> f64 {
    let mut y = 0.0;
    comm.raw()
        .all_reduce_into(&x, &mut y, SystemOperation::sum());
    y
}

fn check(comm: &Comm, m: &Method, salt: usize) {
    let (rank, size) = (comm.rank(), comm.size());
    let (ns, nr) = (m.lens)(rank, size);
    let a = values(rank, salt, ns);
    let b = values(rank, salt + 1, nr);
    let (da, db) = (values(rank, salt + 2, ns), values(rank, salt + 3, nr));
    let ybar = values(rank, salt + 4, nr);

    // Forward: value and tangent.
    let (mut y, mut dy) = (b.clone(), db.clone());
    (m.fwd)(comm, &a, &da, &mut y, &mut dy);
    let mut y0 = b.clone();
    (m.primal)(comm, &a, &mut y0);
    assert_eq!(
        y, y0,
        "{}: _fwd's value differs from the primal's on rank {rank}",
        m.name
    );

    // Central finite differences along (da, db).
    let h = 1e-6;
    let shifted = |s: f64| {
        let a: Vec<f64> = a.iter().zip(&da).map(|(x, d)| x + s * h * d).collect();
        let mut y: Vec<f64> = b.iter().zip(&db).map(|(x, d)| x + s * h * d).collect();
        (m.primal)(comm, &a, &mut y);
        y
    };
    let (plus, minus) = (shifted(1.0), shifted(-1.0));
    for k in 0..nr {
        let fd = (plus[k] - minus[k]) / (2.0 * h);
        assert!(
            (fd - dy[k]).abs() <= 1e-7 + 1e-7 * dy[k].abs(),
            "{}: rank {rank}, tangent {k}: _fwd {} vs finite differences {fd}",
            m.name,
            dy[k]
        );
    }

    // Reverse: adjoints of send (added into zeros) and of recv before (left in drecv).
    let (mut abar, mut recv, mut bbar) = (vec![0.0; ns], b.clone(), ybar.clone());
    (m.rev)(comm, &a, &mut abar, &mut recv, &mut bbar);
    let lhs = sum_over_ranks(comm, dot(&ybar, &dy));
    let rhs = sum_over_ranks(comm, dot(&abar, &da) + dot(&bbar, &db));
    assert!(
        (lhs - rhs).abs() <= 1e-12 * lhs.abs().max(rhs.abs()).max(1.0),
        "{}: dot-product test on {size} ranks: ȳ·Jẋ = {lhs}, Jᵀȳ·ẋ = {rhs}",
        m.name
    );
}

/// A slice method `comm.$call(send, recv, extra..)` with its `_fwd`/`_rev`.
macro_rules! slices {
    ($name:literal, $lens:expr, $call:ident $(, $extra:expr)*) => {{
        Method {
            name: $name,
            lens: Box::new($lens),
            primal: Box::new(move |c: &Comm, s: &[f64], r: &mut [f64]| c.$call(s, r $(, $extra)*)),
            fwd: Box::new(move |c: &Comm, s: &[f64], ds: &[f64], r: &mut [f64], dr: &mut [f64]| {
                fwd_of!($call)(c, s, ds, r, dr $(, $extra)*)
            }),
            rev: Box::new(move |c: &Comm, s: &[f64], ds: &mut [f64], r: &mut [f64], dr: &mut [f64]| {
                rev_of!($call)(c, s, ds, r, dr $(, $extra)*)
            }),
        }
    }};
}

macro_rules! fwd_of {
    (allreduce_sum) => {
        Comm::allreduce_sum_fwd
    };
    (allreduce_max) => {
        Comm::allreduce_max_fwd
    };
    (allreduce_min) => {
        Comm::allreduce_min_fwd
    };
    (reduce_sum) => {
        Comm::reduce_sum_fwd
    };
    (gather) => {
        Comm::gather_fwd
    };
    (scatter) => {
        Comm::scatter_fwd
    };
    (allgather) => {
        Comm::allgather_fwd
    };
    (alltoall) => {
        Comm::alltoall_fwd
    };
}

macro_rules! rev_of {
    (allreduce_sum) => {
        Comm::allreduce_sum_rev
    };
    (allreduce_max) => {
        Comm::allreduce_max_rev
    };
    (allreduce_min) => {
        Comm::allreduce_min_rev
    };
    (reduce_sum) => {
        Comm::reduce_sum_rev
    };
    (gather) => {
        Comm::gather_rev
    };
    (scatter) => {
        Comm::scatter_rev
    };
    (allgather) => {
        Comm::allgather_rev
    };
    (alltoall) => {
        Comm::alltoall_rev
    };
}

/// A scalar method `y = f(x)`, as a method from a one-element `send` into a one-element
/// `recv` it overwrites.
fn scalar(
    name: &'static str,
    f: fn(&Comm, f64) -> f64,
    fwd: fn(&Comm, f64, f64) -> (f64, f64),
    rev: fn(&Comm, f64, f64) -> (f64, f64),
) -> Method {
    Method {
        name,
        lens: Box::new(|_, _| (1, 1)),
        primal: Box::new(move |c, s, r| r[0] = f(c, s[0])),
        fwd: Box::new(move |c, s, ds, r, dr| (r[0], dr[0]) = fwd(c, s[0], ds[0])),
        rev: Box::new(move |c, s, ds, r, dr| {
            let (y, d) = rev(c, s[0], dr[0]);
            assert_eq!(y, f(c, s[0]), "{name}: _rev's value");
            r[0] = y;
            ds[0] += d;
            dr[0] = 0.0;
        }),
    }
}

fn methods(size: usize) -> Vec<Method> {
    let n = 3;
    let last = size - 1;
    vec![
        slices!("allreduce_sum", move |_, _| (n, n), allreduce_sum),
        slices!("allreduce_max", move |_, _| (n, n), allreduce_max),
        slices!("allreduce_min", move |_, _| (n, n), allreduce_min),
        slices!("reduce_sum", move |_, _| (n, n), reduce_sum, last),
        slices!(
            "gather",
            move |rank, size| (n, if rank == 0 { size * n } else { 0 }),
            gather,
            0
        ),
        slices!(
            "scatter",
            move |rank, size| (if rank == last { size * n } else { 0 }, n),
            scatter,
            last
        ),
        slices!("allgather", move |_, size| (n, size * n), allgather),
        slices!("alltoall", move |_, size| (2 * size, 2 * size), alltoall),
        Method {
            name: "allreduce(Op::Max) and allreduce(Op::Sum)",
            lens: Box::new(move |_, _| (n, n)),
            primal: Box::new(|c, s, r| {
                let mut t = vec![0.0; r.len()];
                c.allreduce(s, &mut t, Op::Max);
                c.allreduce(&t, r, Op::Sum);
            }),
            fwd: Box::new(|c, s, ds, r, dr| {
                let (mut t, mut dt) = (vec![0.0; r.len()], vec![0.0; r.len()]);
                c.allreduce_fwd(s, ds, &mut t, &mut dt, Op::Max);
                c.allreduce_fwd(&t, &dt, r, dr, Op::Sum);
            }),
            rev: Box::new(|c, s, ds, r, dr| {
                let mut t = vec![0.0; r.len()];
                c.allreduce(s, &mut t, Op::Max);
                let mut dt = vec![0.0; r.len()];
                c.allreduce_rev(&t, &mut dt, r, dr, Op::Sum);
                c.allreduce_rev(s, ds, &mut t.clone(), &mut dt, Op::Max);
            }),
        },
        Method {
            name: "bcast",
            lens: Box::new(move |_, _| (0, n)),
            primal: Box::new(move |c, _, r| c.bcast(r, last)),
            fwd: Box::new(move |c, _, _, r, dr| c.bcast_fwd(r, dr, last)),
            rev: Box::new(move |c, _, _, r, dr| c.bcast_rev(r, dr, last)),
        },
        Method {
            name: "send/recv (ring)",
            lens: Box::new(move |_, _| (n, n)),
            primal: Box::new(|c, s, r| ring(c, s, r, Comm::send, Comm::recv)),
            fwd: Box::new(|c, s, ds, r, dr| {
                let (next, prev) = neighbours(c);
                // Even ranks send first, odd ranks receive first: no cycle of waits.
                if c.rank() % 2 == 0 {
                    c.send_fwd(s, ds, next, 7);
                    c.recv_fwd(r, dr, prev, 7);
                } else {
                    let (mut tr, mut tdr) = (r.to_vec(), dr.to_vec());
                    c.recv_fwd(&mut tr, &mut tdr, prev, 7);
                    c.send_fwd(s, ds, next, 7);
                    r.copy_from_slice(&tr);
                    dr.copy_from_slice(&tdr);
                }
            }),
            rev: Box::new(|c, s, ds, r, dr| {
                // The reverse program runs the calls in the opposite order.
                let (next, prev) = neighbours(c);
                if c.rank() % 2 == 0 {
                    c.recv_rev(r, dr, prev, 7);
                    c.send_rev(s, ds, next, 7);
                } else {
                    c.send_rev(s, ds, next, 7);
                    c.recv_rev(r, dr, prev, 7);
                }
            }),
        },
        Method {
            name: "isend/irecv/wait (ring)",
            lens: Box::new(move |_, _| (n, n)),
            primal: Box::new(|c, s, r| {
                let (next, prev) = neighbours(c);
                c.irecv(r, prev, 5);
                c.isend(s, next, 5);
                c.wait_recv(r, prev, 5);
                c.wait_send(s, next, 5);
            }),
            fwd: Box::new(|c, s, ds, r, dr| {
                let (next, prev) = neighbours(c);
                c.irecv_fwd(r, dr, prev, 5);
                c.isend_fwd(s, ds, next, 5);
                c.wait_recv_fwd(r, dr, prev, 5);
                c.wait_send_fwd(s, ds, next, 5);
            }),
            rev: Box::new(|c, s, ds, r, dr| {
                // The reverse program: the waits' adjoints post, the posts' adjoints
                // complete.
                let (next, prev) = neighbours(c);
                c.wait_send_rev(s, ds, next, 5);
                c.wait_recv_rev(r, dr, prev, 5);
                c.isend_rev(s, ds, next, 5);
                c.irecv_rev(r, dr, prev, 5);
            }),
        },
        Method {
            name: "sendrecv (ring)",
            lens: Box::new(move |_, _| (n, n)),
            primal: Box::new(|c, s, r| {
                let (next, prev) = neighbours(c);
                c.sendrecv(s, next, r, prev, 3)
            }),
            fwd: Box::new(|c, s, ds, r, dr| {
                let (next, prev) = neighbours(c);
                c.sendrecv_fwd(s, ds, next, r, dr, prev, 3)
            }),
            rev: Box::new(|c, s, ds, r, dr| {
                let (next, prev) = neighbours(c);
                c.sendrecv_rev(s, ds, next, r, dr, prev, 3)
            }),
        },
        scalar(
            "allreduce_sum_scalar",
            Comm::allreduce_sum_scalar,
            Comm::allreduce_sum_scalar_fwd,
            Comm::allreduce_sum_scalar_rev,
        ),
        scalar(
            "allreduce_max_scalar",
            Comm::allreduce_max_scalar,
            Comm::allreduce_max_scalar_fwd,
            Comm::allreduce_max_scalar_rev,
        ),
        scalar(
            "allreduce_min_scalar",
            Comm::allreduce_min_scalar,
            Comm::allreduce_min_scalar_fwd,
            Comm::allreduce_min_scalar_rev,
        ),
        scalar(
            "bcast_scalar (root 0)",
            |c, x| c.bcast_scalar(x, 0),
            |c, x, dx| c.bcast_scalar_fwd(x, dx, 0),
            |c, x, s| c.bcast_scalar_rev(x, s, 0),
        ),
    ]
}

/// The next and the previous rank on a ring.
fn neighbours(c: &Comm) -> (usize, usize) {
    let (r, p) = (c.rank(), c.size());
    ((r + 1) % p, (r + p - 1) % p)
}

/// `send` to the next rank, `recv` from the previous one, even ranks sending first.
fn ring(
    c: &Comm,
    s: &[f64],
    r: &mut [f64],
    send: fn(&Comm, &[f64], usize, usize),
    recv: fn(&Comm, &mut [f64], usize, usize),
) {
    let (next, prev) = neighbours(c);
    if c.rank() % 2 == 0 {
        send(c, s, next, 7);
        recv(c, r, prev, 7);
    } else {
        let mut t = r.to_vec();
        recv(c, &mut t, prev, 7);
        send(c, s, next, 7);
        r.copy_from_slice(&t);
    }
}

/// The known values: 4 ranks, `x_r = r + 1`, `y = allreduce_sum(x²)`.
fn known_values(comm: &Comm) {
    if comm.size() != 4 {
        return;
    }
    let x = comm.rank() as f64 + 1.0;
    let grad = |seed: f64| {
        let (_, dsq) = comm.allreduce_sum_scalar_rev(x * x, seed);
        2.0 * x * dsq
    };
    let want = [2.0, 4.0, 6.0, 8.0][comm.rank()];
    let on_rank_0 = grad(if comm.rank() == 0 { 1.0 } else { 0.0 });
    assert_eq!(on_rank_0, want, "seed on rank 0 only");
    assert_eq!(grad(1.0), 4.0 * want, "seeds on all ranks");
}

/// Ties of an extremum: the whole adjoint goes to the lowest rank that holds it.
fn ties_go_to_the_lowest_rank(comm: &Comm) {
    let rank = comm.rank();
    // Every rank holds the maximum 5.0 in element 0; in element 1 ranks ≥ 1 tie at 3.0
    // (rank 0 has less, unless it is alone).
    let send = [
        5.0,
        if rank == 0 && comm.size() > 1 {
            1.0
        } else {
            3.0
        },
    ];
    let (mut recv, mut drecv, mut dsend) = ([0.0; 2], [1.0, 2.0], [0.0; 2]);
    comm.allreduce_max(&send, &mut recv);
    comm.allreduce_max_rev(&send, &mut dsend, &mut recv, &mut drecv);
    let p = comm.size() as f64;
    let owner1 = if comm.size() > 1 { 1 } else { 0 };
    let want = [
        if rank == 0 { p } else { 0.0 },
        if rank == owner1 { 2.0 * p } else { 0.0 },
    ];
    assert_eq!(dsend, want, "max ties on rank {rank}");
    assert_eq!(drecv, [0.0; 2]);
    let (_, d) = comm.allreduce_min_scalar_rev(-1.0, 1.0);
    assert_eq!(
        d,
        if rank == 0 { p } else { 0.0 },
        "min scalar tie on rank {rank}"
    );
}

/// `f32` slices and scalars, and the primal product: exact small integers.
fn f32_and_product(comm: &Comm) {
    let (r, p) = (comm.rank() as f32, comm.size());
    let mut sum = [0.0_f32; 2];
    comm.allreduce_sum(&[r + 1.0, 2.0], &mut sum);
    let want = (p * (p + 1) / 2) as f32;
    assert_eq!(sum, [want, 2.0 * p as f32], "f32 allreduce_sum");
    let (_, adjoint) = comm.allreduce_sum_scalar_rev(r, 1.0_f32);
    assert_eq!(adjoint, p as f32, "f32 scalar adjoint");
    let mut gathered = vec![0.0_f32; p];
    comm.allgather(&[r], &mut gathered);
    assert_eq!(
        gathered,
        (0..p).map(|q| q as f32).collect::<Vec<_>>(),
        "f32 allgather"
    );
    let mut product = [0.0_f64];
    comm.allreduce(&[r as f64 + 1.0], &mut product, Op::Prod);
    assert_eq!(
        product[0],
        (1..=p).product::<usize>() as f64,
        "Op::Prod primal"
    );
}

/// Misuse panics before any communication, naming the method and the parameter.
fn misuse(comm: &Comm) {
    let panics = |what: &str, expected: &str, f: &dyn Fn()| {
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .expect_err(&format!("{what}: no panic"));
        let msg = err
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert!(
            msg.contains(expected),
            "{what}: panic message {msg:?} lacks {expected:?}"
        );
    };
    std::panic::set_hook(Box::new(|_| {}));
    panics(
        "recv too short",
        "allreduce_sum: `recv` has length 2, expected 3",
        &|| comm.allreduce_sum(&[1.0, 2.0, 3.0], &mut [0.0; 2]),
    );
    panics(
        "shadow too short",
        "allreduce_sum_rev: `dsend` has length 1",
        &|| comm.allreduce_sum_rev(&[1.0, 2.0], &mut [0.0], &mut [0.0; 2], &mut [0.0; 2]),
    );
    panics("bad root", "bcast: `root` = 99 is not a rank", &|| {
        comm.bcast(&mut [0.0_f64], 99)
    });
    panics("bad dest", "send: `dest` = 99 is not a rank", &|| {
        comm.send(&[0.0_f64], 99, 0)
    });
    panics("alltoall length", "alltoall: `send` has length", &|| {
        if comm.size() > 1 {
            comm.alltoall(&[0.0_f64; 3], &mut [0.0; 3]);
        } else {
            panic!("alltoall: `send` has length (any length divides 1 rank)");
        }
    });
    panics(
        "product adjoint",
        "allreduce_rev: the reduction `Op::Prod` has no derivative",
        &|| comm.allreduce_rev(&[2.0_f64], &mut [0.0], &mut [0.0], &mut [1.0], Op::Prod),
    );
    panics(
        "wait without post",
        "wait_send: no pending isend with peer 0 and tag 9",
        &|| comm.wait_send(&[1.0_f64], 0, 9),
    );
    panics(
        "reverse post before its wait",
        "isend_rev: no pending adjoint receive",
        &|| comm.isend_rev(&[1.0_f64], &mut [0.0], 0, 9),
    );
    // A communicator dropped with operations never waited for panics, naming them. Here
    // they are a message to itself and its receive, which match, so no communication is
    // left open when MPI finalizes.
    let me = comm.rank();
    panics(
        "drop with pending operations",
        "dropped with 2 nonblocking operation(s) never completed",
        &|| {
            let dup = Comm::new(comm.raw().duplicate());
            dup.irecv(&mut [0.0_f64; 2], me, 11);
            dup.isend(&[1.0_f64, 2.0], me, 11);
            drop(dup);
        },
    );
    let _ = std::panic::take_hook();
}

fn main() {
    if !under_mpirun() {
        launch("ad-mpi methods");
        return;
    }
    let universe = ad_mpi::initialize().expect("MPI initializes once");
    let comm = Comm::world(&universe);
    for (k, m) in methods(comm.size()).iter().enumerate() {
        check(&comm, m, 10 * k);
    }
    known_values(&comm);
    f32_and_product(&comm);
    ties_go_to_the_lowest_rank(&comm);
    misuse(&comm);
    comm.barrier();
    println!("ok rank {} of {}", comm.rank(), comm.size());
}
