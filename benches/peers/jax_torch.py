#!/usr/bin/env python3
"""JAX (jit, CPU) and PyTorch (CPU) peers of the scoreboard (`examples/scoreboard`).

The scoreboard writes a manifest (one program per line: `key kind path [params...]`) and
runs this script with the virtual environment's Python; each program is written the way a
user of the framework writes it (vectorized array code, `jax.value_and_grad` under
`jax.jit`, `torch.autograd`; `jacfwd` for hand tracking's tall Jacobian), in float64. JAX is timed twice: "jax" gives the value with
the gradient, as every other tool in the table does; "jax-grad" is `jax.grad` alone. For
every tool and program one JSON line goes to stdout:

    {"tool": "jax", "program": KEY, "primal": s, "grad": s, "value": f, "grad_norm": f}

(seconds per call of the fastest of the interleaved repetitions) or {"tool": ..., "skipped": reason} when the
framework is not installed.

    python benches/peers/jax_torch.py MANIFEST [--reps N] [--threads T] [--serve]

With `--serve` (what the scoreboard runs) nothing is timed up front: each program's line
carries a timer number instead of times, `{"tool", "program", "value", "grad_norm",
"timer": K}`, and after the last one `{"ready": true}`. The script then answers commands
on stdin, one per line, so that the scoreboard can time the gradients in the same
interleaved rounds as its own (a slow stretch of the machine then slows every tool alike):

    calibrate K  ->  {"timer": K, "batch": B}   (two untimed calls; B calls make ~20 ms)
    sample K     ->  {"timer": K, "secs": s}    (seconds per call over one batch of B)

It exits at the end of stdin. The scoreboard checks `value` and `grad_norm` against
phidiff's before it times a program.
"""

import argparse
import json
import math
import os
import sys
import time
from types import SimpleNamespace


def numbers(path):
    with open(path) as f:
        return [float(t) for t in f.read().split()]


# ---------------------------------------------------------------- inputs (ADBench formats)


def read_gmm(path):
    v = numbers(path)
    d, k, n = int(v[0]), int(v[1]), int(v[2])
    p = 3
    icf_sz = d * (d + 1) // 2
    alphas = v[p : p + k]
    p += k
    means = v[p : p + k * d]
    p += k * d
    icf = v[p : p + k * icf_sz]
    p += k * icf_sz
    x = v[p : p + n * d]
    p += n * d
    gamma, m = v[p], int(v[p + 1])
    return dict(d=d, k=k, n=n, alphas=alphas, means=means, icf=icf, x=x, gamma=gamma, m=m)


def read_lstm(path):
    v = numbers(path)
    l, c, b = int(v[0]), int(v[1]), int(v[2])
    p = 3
    main = v[p : p + 8 * l * b]
    p += 8 * l * b
    extra = v[p : p + 3 * b]
    p += 3 * b
    state = v[p : p + 2 * l * b]
    p += 2 * l * b
    seq = v[p : p + c * b]
    return dict(l=l, c=c, b=b, main=main, extra=extra, state=state, seq=seq)


def read_ba(path):
    v = numbers(path)
    n, m, p = int(v[0]), int(v[1]), int(v[2])
    cam, x, w, feat = v[3:14], v[14:17], v[17], v[18:20]
    # ADBench tiles one camera, point, weight and feature; observation i sees camera
    # i % n and point i % m.
    return dict(n=n, m=m, p=p, cam=cam, x=x, w=w, feat=feat)


def read_ht(path):
    """The scoreboard's hand-tracking problem (`write_ht` in
    `examples/scoreboard/programs/hand_tracking.rs`), simple correspondences."""
    v = numbers(path)
    bones, verts, n, mirrored = (int(t) for t in v[0:4])
    p = 4
    out = dict(bones=bones, verts=verts, n=n, mirrored=mirrored == 1)
    for name, size in [("parents", bones), ("base_relatives", 16 * bones),
                       ("inverse_base_absolutes", 16 * bones), ("positions", 4 * verts),
                       ("weights", bones * verts), ("corr", n), ("points", 3 * n),
                       ("theta", 26)]:
        out[name] = v[p : p + size]
        p += size
    out["parents"] = [int(t) for t in out["parents"]]
    out["corr"] = [int(t) for t in out["corr"]]
    # Where each bone's Euler angles (x, z, y) come from in `theta` extended by a zero
    # (index 26): a finger's first joint takes two of its four parameters, the next two
    # one each.
    angle_at = [[26, 26, 26] for _ in range(bones)]
    for finger in range(5):
        at, b = 6 + 4 * finger, 2 + 4 * finger
        angle_at[b][0], angle_at[b][1] = at, at + 1
        angle_at[b + 1][0] = at + 2
        angle_at[b + 2][0] = at + 3
    out["angle_at"] = angle_at
    return out


def ln_multigamma(a, p):
    return 0.25 * p * (p - 1) * math.log(math.pi) + sum(
        math.lgamma(a + 0.5 * (1 - j)) for j in range(1, p + 1)
    )


def ltri_index(d):
    rows, cols = [], []
    for c in range(d):
        for r in range(c + 1, d):
            rows.append(r)
            cols.append(c)
    return rows, cols


# ---------------------------------------------------------------- programs, per framework


def programs(np, lib):
    """The objectives over array namespace `np` (jax.numpy or a torch shim)."""

    def gmm(alphas, means, icf, x, d, k, gamma, m, rows, cols, lg):
        n = x.shape[0]
        qdiag = np.exp(icf[:, :d])
        sum_qs = np.sum(icf[:, :d], 1)
        ls = lib.lower(icf[:, d:], k, d, rows, cols)
        xc = x[:, None, :] - means[None, :, :]
        qxc = qdiag[None] * xc + np.einsum("kij,nkj->nki", ls, xc)
        main = alphas[None] + sum_qs[None] - 0.5 * np.sum(qxc * qxc, 2)
        slse = np.sum(lib.logsumexp(main, 1))
        const = -n * d * 0.5 * math.log(2 * math.pi)
        err = const + slse - n * lib.logsumexp(alphas, 0)
        dof = d + m + 1
        c = dof * d * (math.log(gamma) - 0.5 * math.log(2)) - lg
        fro = np.sum(qdiag * qdiag) + np.sum(icf[:, d:] * icf[:, d:])
        return err + 0.5 * gamma * gamma * fro - m * np.sum(sum_qs) - k * c

    def lstm(main, extra, state, seq, l, c, b):
        w = main.reshape(l, 8, b)
        st = state.reshape(l, 2, b)
        hs = [st[i, 0] for i in range(l)]
        cs = [st[i, 1] for i in range(l)]
        total = 0.0
        for t in range(c - 1):
            x = seq[t] * extra[0]
            for i in range(l):
                g = w[i]
                forget = lib.sigmoid(x * g[0] + g[4])
                ingate = lib.sigmoid(hs[i] * g[1] + g[5])
                outgate = lib.sigmoid(x * g[2] + g[6])
                change = np.tanh(hs[i] * g[3] + g[7])
                cs[i] = cs[i] * forget + ingate * change
                hs[i] = outgate * np.tanh(cs[i])
                x = hs[i]
            ypred = x * extra[1] + extra[2]
            lse = np.log(np.sum(np.exp(ypred)) + 2.0)
            total = total + np.sum(seq[t + 1] * (ypred - lse))
        return -total / ((c - 1) * b)

    def reproj(params, feat):
        # params: 11 camera, 3 point, 1 weight.
        rot, center, f = params[0:3], params[3:6], params[6]
        x0, kappa, pt, w = params[7:9], params[9:11], params[11:14], params[14]
        xm = pt - center
        sqtheta = np.sum(rot * rot)
        theta = np.sqrt(sqtheta)
        wv = rot / theta
        cross = lib.cross(wv, xm)
        tmp = np.sum(wv * xm) * (1.0 - np.cos(theta))
        xcam = xm * np.cos(theta) + cross * np.sin(theta) + wv * tmp
        p = xcam[0:2] / xcam[2]
        rsq = np.sum(p * p)
        lfac = 1.0 + kappa[0] * rsq + kappa[1] * rsq * rsq
        proj = p * lfac * f + x0
        return w * (proj - feat)

    def rosenbrock(x):
        a = x[1:] - x[:-1] * x[:-1]
        b = 1.0 - x[:-1]
        return np.sum(100.0 * a * a + b * b)

    def burgers_step(u, dt, nudt):
        w = lib.roll(u, 1, 1)
        e = lib.roll(u, -1, 1)
        no = lib.roll(u, 1, 0)
        so = lib.roll(u, -1, 0)
        adv = np.where(u > 0, u * (u - w) + u * (u - no), u * (e - u) + u * (so - u))
        return u - dt * adv + nudt * (w + e + no + so - 4.0 * u)

    def heat2d(u, r):
        c = u[1:-1, 1:-1]
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * c
        inner = c + r * lap * (1.0 + 0.1 * c * c)
        total = np.sum(u * u) - np.sum(c * c)
        return total + np.sum(inner * inner)

    def ht(theta, h):
        """The hand-tracking residuals `point − model point` (GradBench's `ht`, simple),
        `h` the model of `read_ht` as arrays."""
        angles = lib.cat([theta, theta[:1] * 0.0], 0)[h.angle_at]
        sx, cx = np.sin(angles[:, 0]), np.cos(angles[:, 0])
        sz, cz = np.sin(angles[:, 1]), np.cos(angles[:, 1])
        sy, cy = np.sin(angles[:, 2]), np.cos(angles[:, 2])
        rot = lib.stack([cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx,
                         sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx,
                         -sy, cy * sx, cy * cx], 1).reshape(-1, 3, 3)
        br = h.base_relatives
        relatives = lib.cat([br[:, :, :3] @ rot, br[:, :, 3:]], 2)
        absolutes = []
        for b, p in enumerate(h.parents):
            absolutes.append(relatives[b] if p == b else absolutes[p] @ relatives[b])
        transforms = (lib.stack(absolutes, 0) @ h.inverse_base_absolutes)[:, :3, :]
        skinned = np.einsum("bv,bvr->vr", h.weights,
                            np.einsum("brk,vk->bvr", transforms, h.positions))
        skinned = skinned * h.mirror
        norm = np.sqrt(np.sum(theta[:3] * theta[:3]))
        a = theta[:3] / norm
        c, s = np.cos(norm), np.sin(norm)
        x, y, z = a[0], a[1], a[2]
        rodrigues = lib.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s,
                               x * z * (1 - c) + y * s, x * y * (1 - c) + z * s,
                               y * y + (1 - y * y) * c, y * z * (1 - c) - x * s,
                               x * z * (1 - c) - y * s, z * y * (1 - c) + x * s,
                               z * z + (1 - z * z) * c], 0).reshape(3, 3)
        rotation = np.where(norm < 1e-4, h.identity, rodrigues)
        positions = skinned @ rotation.T + theta[3:6]
        return (h.points - positions[h.corr]).reshape(-1)

    return dict(gmm=gmm, lstm=lstm, reproj=reproj, rosenbrock=rosenbrock,
                burgers_step=burgers_step, heat2d=heat2d, ht=ht)


def ht_arrays(path, array, index):
    """`read_ht`'s problem as the framework's arrays (`index` for integer ones), and
    `theta`."""
    h = read_ht(path)
    bones, verts = h["bones"], h["verts"]
    model = SimpleNamespace(
        parents=h["parents"], angle_at=index(h["angle_at"]), corr=index(h["corr"]),
        base_relatives=array(h["base_relatives"]).reshape(bones, 4, 4),
        inverse_base_absolutes=array(h["inverse_base_absolutes"]).reshape(bones, 4, 4),
        positions=array(h["positions"]).reshape(verts, 4),
        weights=array(h["weights"]).reshape(bones, verts),
        points=array(h["points"]).reshape(-1, 3),
        mirror=array([-1.0 if h["mirrored"] else 1.0, 1.0, 1.0]),
        identity=array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    return model, array(h["theta"])


def batch_size(f):
    """Calls of `f` that take about 20 ms (after one warm-up call), as `timing.rs`."""
    f()
    t = time.perf_counter()
    f()
    one = max(time.perf_counter() - t, 1e-9)
    return max(1, min(100000, int(0.02 / one)))


def seconds_per_call(f, batch):
    t = time.perf_counter()
    for _ in range(batch):
        f()
    return (time.perf_counter() - t) / batch


def fastest_times(fns, reps):
    """Interleaved repetitions: each round runs every function once (batched to ~20 ms);
    the fastest round of each, as the scoreboard takes its own (`timing.rs`)."""
    batches = [batch_size(f) for f in fns]
    samples = [[] for _ in fns]
    for _ in range(reps):
        for i, f in enumerate(fns):
            samples[i].append(seconds_per_call(f, batches[i]))
    return [min(s) for s in samples]


class Timed:
    """Where a tool's set-up programs go: timed at once, or (with `--serve`) kept for the
    scoreboard's commands."""

    def __init__(self, emit, reps, serve):
        self.emit, self.reps, self.serve = emit, reps, serve
        self.grads = []
        self.batches = []
        self.checks = []

    def add(self, tool, key, primal, grad, measure):
        """`measure()` is (value, gradient norm), computed with `primal` and `grad`."""
        value, norm = measure()
        line = {"tool": tool, "program": key, "value": value, "grad_norm": norm}
        if self.serve:
            line["timer"] = len(self.grads)
            self.grads.append(grad)
            self.batches.append(None)
            self.checks.append((f"{tool} on {key}", measure, value, norm))
        else:
            line["primal"], line["grad"] = fastest_times([primal, grad], self.reps)
        self.emit(line)

    def answer(self, stdin):
        """The command loop of `--serve`, until the end of stdin."""
        self.emit({"ready": True})
        for line in stdin:
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2 or parts[0] not in ("calibrate", "sample") \
                    or not parts[1].isdigit():
                raise SystemExit(f"jax_torch.py: unknown command {line.strip()!r}")
            k = int(parts[1])
            if not 0 <= k < len(self.grads):
                raise SystemExit(f"jax_torch.py: no timer {k} (there are {len(self.grads)})")
            if parts[0] == "calibrate":
                # The closures still compute what was reported at set-up (the scoreboard
                # checked that against phidiff).
                what, measure, value, norm = self.checks[k]
                again = measure()
                if not (math.isclose(again[0], value, rel_tol=1e-12)
                        and math.isclose(again[1], norm, rel_tol=1e-12)):
                    raise SystemExit(f"jax_torch.py: {what} now gives (value, |grad|) "
                                     f"{again}, not {(value, norm)}")
                self.batches[k] = batch_size(self.grads[k])
                self.emit({"timer": k, "batch": self.batches[k]})
            else:
                if self.batches[k] is None:
                    raise SystemExit(f"jax_torch.py: timer {k} sampled before calibrate")
                self.emit({"timer": k, "secs": seconds_per_call(self.grads[k], self.batches[k])})


# ---------------------------------------------------------------- JAX


def run_jax(manifest, timed, emit, threads):
    if threads == 1:
        # These keep XLA's Eigen kernels on one thread, but XLA still runs work on other
        # CPUs (1.8-1.95 CPU-seconds per second measured on a 2-core VM): the scoreboard
        # runs this script under `taskset` to hold it to one CPU. Run it that way by hand.
        os.environ.setdefault(
            "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.scipy.special import logsumexp
    except ImportError as e:
        emit({"tool": "jax", "skipped": f"not installed ({e})"})
        return
    emit({"tool": "jax", "version": jax.__version__})

    def lower(vals, k, d, rows, cols):
        return jnp.zeros((k, d, d)).at[:, rows, cols].set(vals)

    lib = SimpleNamespace(lower=lower, logsumexp=logsumexp, sigmoid=jax.nn.sigmoid,
                          cross=jnp.cross, roll=jnp.roll, cat=jnp.concatenate,
                          stack=jnp.stack)
    P = programs(jnp, lib)

    # One call per program, so that the closures handed to `timed` (run later with
    # `--serve`) keep their own program's functions and arguments.
    def add(key, kind, path, params):
        f, both, grad_only, args = jax_problem(P, jnp, jax, kind, path, params)
        jax_timers(timed, key, f, both, grad_only, args, jax.jit, jax.block_until_ready,
                   jax.tree_util.tree_leaves, lambda g: float(jnp.sum(g * g)))

    for key, kind, path, params in manifest:
        add(key, kind, path, params)


def jax_timers(timed, key, f, both, grad_only, args, jit, ready, leaves, sum_sq):
    """Hands `timed` a program's JAX timers: "jax" for `both` (the value and the gradient,
    as phidiff's `_rev`, the hand-written adjoints and PyTorch's backward give them, or
    BA's Jacobian) and, unless `grad_only` is None, "jax-grad" for `jax.grad` alone, which
    lets XLA drop what only the value needs. The value checked against phidiff's is the
    one the timed call returns, where it returns one."""
    fj = jit(f)

    def primal():
        ready(fj(*args))

    def timer(tool, g, with_value):
        gj = jit(g)

        def gradient():
            ready(gj(*args))

        def measure():
            out = gj(*args)
            value = float(out[0]) if with_value else float(fj(*args))
            grads = leaves(out[1] if with_value else out)
            return value, math.sqrt(sum(sum_sq(g) for g in grads))

        timed.add(tool, key, primal, gradient, measure)

    timer("jax", both, grad_only is not None)
    if grad_only is not None:
        timer("jax-grad", grad_only, False)


def jax_problem(P, jnp, jax, kind, path, params):
    """(objective, value and gradient or Jacobian, gradient alone or None, arguments) of
    one manifest program."""

    def with_grad(f, args, active=None):
        argnums = tuple(range(active or len(args)))
        return f, jax.value_and_grad(f, argnums=argnums), jax.grad(f, argnums=argnums), args

    if kind == "gmm":
        g = read_gmm(path)
        d, k, n = g["d"], g["k"], g["n"]
        rows, cols = ltri_index(d)
        lg = ln_multigamma(0.5 * (d + g["m"] + 1), d)
        x = jnp.array(g["x"]).reshape(n, d)
        args = (jnp.array(g["alphas"]), jnp.array(g["means"]).reshape(k, d),
                jnp.array(g["icf"]).reshape(k, d * (d + 1) // 2))
        return with_grad(
            lambda a, mu, q: P["gmm"](a, mu, q, x, d, k, g["gamma"], g["m"], rows, cols, lg),
            args)
    if kind == "lstm":
        s = read_lstm(path)
        l, c, b = s["l"], s["c"], s["b"]
        seq = jnp.array(s["seq"]).reshape(c, b)
        args = (jnp.array(s["main"]), jnp.array(s["extra"]).reshape(3, b),
                jnp.array(s["state"]))
        # The gradient with respect to the parameters (ADBench's), not the initial state.
        return with_grad(lambda mp, ep, st: lstm_scan(jax, jnp, mp, ep, st, seq, l, c, b), args, 2)
    if kind == "ba":
        bp = read_ba(path)
        prm, feats, w = ba_params(bp, jnp.array)

        def residuals(prm, feats, w):
            r = jax.vmap(P["reproj"])(prm, feats)
            return jnp.concatenate([r.reshape(-1), 1.0 - w * w])

        def jacobian(prm, feats, w):
            return jax.vmap(jax.jacrev(P["reproj"]))(prm, feats), -2.0 * w

        return (lambda *a: jnp.sum(residuals(*a) ** 2)), jacobian, None, (prm, feats, w)
    if kind == "ht":
        # The dense Jacobian by forward mode (26 columns against 3n rows).
        h, theta = ht_arrays(path, jnp.array, lambda v: jnp.array(v, dtype=jnp.int32))
        residuals = lambda th: P["ht"](th, h)
        return (lambda th: 0.5 * jnp.sum(residuals(th) ** 2)), jax.jacfwd(residuals), None, \
            (theta,)
    if kind == "rosenbrock":
        return with_grad(P["rosenbrock"], (jnp.array(numbers(path)),))
    if kind == "burgers":
        n, nu, dt, steps = int(params[0]), float(params[1]), float(params[2]), int(params[3])
        u0 = jnp.array(numbers(path)).reshape(-1, n)

        def f(u):
            u = jax.lax.fori_loop(0, steps, lambda _, v: P["burgers_step"](v, dt, nu * dt), u)
            return 0.5 * jnp.sum(u * u)

        return with_grad(f, (u0,))
    if kind == "heat2d":
        n, r = int(params[0]), float(params[1])
        u = jnp.array(numbers(path)).reshape(-1, n)
        return with_grad(lambda v: P["heat2d"](v, r), (u,))
    raise ValueError(kind)


def lstm_scan(jax, jnp, main, extra, state, seq, l, c, b):
    """The LSTM over the sequence as a `lax.scan` (the JAX way to write a recurrence)."""
    w = main.reshape(l, 8, b)
    st = state.reshape(l, 2, b)
    sig = jax.nn.sigmoid

    def step(carry, t):
        hs, cs = carry
        x = seq[t] * extra[0]
        new_h, new_c = [], []
        for i in range(l):
            g = w[i]
            forget = sig(x * g[0] + g[4])
            ingate = sig(hs[i] * g[1] + g[5])
            outgate = sig(x * g[2] + g[6])
            change = jnp.tanh(hs[i] * g[3] + g[7])
            ci = cs[i] * forget + ingate * change
            hi = outgate * jnp.tanh(ci)
            new_h.append(hi)
            new_c.append(ci)
            x = hi
        ypred = x * extra[1] + extra[2]
        lse = jnp.log(jnp.sum(jnp.exp(ypred)) + 2.0)
        return (jnp.stack(new_h), jnp.stack(new_c)), jnp.sum(seq[t + 1] * (ypred - lse))

    _, terms = jax.lax.scan(step, (st[:, 0], st[:, 1]), jnp.arange(c - 1))
    return -jnp.sum(terms) / ((c - 1) * b)


def ba_params(bp, np_array):
    """Per observation: its 15 parameters (camera, point, weight), feature and weight."""
    obs = bp["p"]
    one = bp["cam"] + bp["x"] + [bp["w"]]
    return np_array([one] * obs), np_array([bp["feat"]] * obs), np_array([bp["w"]] * obs)


# ---------------------------------------------------------------- PyTorch


def run_torch(manifest, timed, emit, threads):
    try:
        import torch
    except ImportError as e:
        emit({"tool": "pytorch", "skipped": f"not installed ({e})"})
        return
    emit({"tool": "pytorch", "version": torch.__version__})
    torch.set_num_threads(threads)
    torch.set_default_dtype(torch.float64)

    def lower(vals, k, d, rows, cols):
        ls = torch.zeros(k, d, d, dtype=vals.dtype)
        index = (torch.arange(k)[:, None], torch.tensor(rows, dtype=torch.long)[None],
                 torch.tensor(cols, dtype=torch.long)[None])
        return ls.index_put(index, vals)

    def total(a, dim=None):
        return torch.sum(a) if dim is None else torch.sum(a, dim)

    np_ = SimpleNamespace(exp=torch.exp, log=torch.log, tanh=torch.tanh, sqrt=torch.sqrt,
                          cos=torch.cos, sin=torch.sin, einsum=torch.einsum,
                          where=torch.where, sum=total)
    lib = SimpleNamespace(lower=lower, logsumexp=torch.logsumexp, sigmoid=torch.sigmoid,
                          cross=lambda a, b: torch.linalg.cross(a, b), roll=torch.roll,
                          cat=torch.cat, stack=torch.stack)
    P = programs(np_, lib)
    t = lambda v: torch.tensor(v, dtype=torch.float64)

    # One call per program, so that the closures handed to `timed` (run later with
    # `--serve`) keep their own program's functions and arguments.
    def add(key, kind, path, params):
        active = None
        if kind == "gmm":
            g = read_gmm(path)
            d, k, n = g["d"], g["k"], g["n"]
            rows, cols = ltri_index(d)
            lg = ln_multigamma(0.5 * (d + g["m"] + 1), d)
            x = t(g["x"]).reshape(n, d)
            args = [t(g["alphas"]), t(g["means"]).reshape(k, d),
                    t(g["icf"]).reshape(k, d * (d + 1) // 2)]
            f = lambda a, mu, q: P["gmm"](a, mu, q, x, d, k, g["gamma"], g["m"], rows, cols, lg)
        elif kind == "lstm":
            s = read_lstm(path)
            l, c, b = s["l"], s["c"], s["b"]
            seq = t(s["seq"]).reshape(c, b)
            args = [t(s["main"]), t(s["extra"]).reshape(3, b), t(s["state"])]
            f = lambda mp, ep, st: P["lstm"](mp, ep, st, seq, l, c, b)
            active = 2  # the parameters, not the initial state
        elif kind == "ba":
            bp = read_ba(path)
            prm, feats, w = ba_params(bp, t)
            from torch.func import jacrev, vmap

            def primal():
                r = vmap(P["reproj"])(prm, feats)
                return torch.cat([r.reshape(-1), 1.0 - w * w])

            jac = vmap(jacrev(P["reproj"]))

            def grad():
                return jac(prm, feats), -2.0 * w

            def measure():
                blocks, wd = grad()
                norm = math.sqrt(float(torch.sum(blocks * blocks) + torch.sum(wd * wd)))
                return float(torch.sum(primal() ** 2)), norm

            timed.add("pytorch", key, primal, grad, measure)
            return
        elif kind == "ht":
            from torch.func import jacfwd

            h, theta = ht_arrays(path, t, lambda v: torch.tensor(v, dtype=torch.long))
            residuals = lambda th: P["ht"](th, h)

            def primal():
                with torch.no_grad():
                    return residuals(theta)

            # The dense Jacobian by forward mode (26 columns against 3n rows).
            jac = jacfwd(residuals)

            def grad():
                return jac(theta)

            def measure():
                j = grad()
                return (float(0.5 * torch.sum(primal() ** 2)),
                        math.sqrt(float(torch.sum(j * j))))

            timed.add("pytorch", key, primal, grad, measure)
            return
        elif kind == "rosenbrock":
            args = [t(numbers(path))]
            f = P["rosenbrock"]
        elif kind == "burgers":
            n, nu, dt, steps = int(params[0]), float(params[1]), float(params[2]), int(params[3])
            args = [t(numbers(path)).reshape(-1, n)]

            def f(u):
                for _ in range(steps):
                    u = P["burgers_step"](u, dt, nu * dt)
                return 0.5 * torch.sum(u * u)
        elif kind == "heat2d":
            n, r = int(params[0]), float(params[1])
            args = [t(numbers(path)).reshape(-1, n)]
            f = lambda v: P["heat2d"](v, r)
        else:
            raise ValueError(kind)

        def primal():
            with torch.no_grad():
                return f(*args)

        active = active or len(args)
        leaves = [a.detach().clone().requires_grad_(i < active) for i, a in enumerate(args)]

        def grad():
            for a in leaves:
                a.grad = None
            y = f(*leaves)
            y.backward()
            return [a.grad for a in leaves[:active]]

        def measure():
            norm = math.sqrt(sum(float(torch.sum(g * g)) for g in grad()))
            return float(primal()), norm

        timed.add("pytorch", key, primal, grad, measure)

    for key, kind, path, params in manifest:
        add(key, kind, path, params)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tools", default="jax,pytorch")
    ap.add_argument("--serve", action="store_true",
                    help="time on the scoreboard's commands (see the module's text)")
    a = ap.parse_args()
    manifest = []
    with open(a.manifest) as f:
        for line in f:
            parts = line.split()
            if parts:
                manifest.append((parts[0], parts[1], parts[2], parts[3:]))

    def emit(obj):
        print(json.dumps(obj), flush=True)

    tools = a.tools.split(",")
    timed = Timed(emit, a.reps, a.serve)
    if "jax" in tools:
        run_jax(manifest, timed, emit, a.threads)
    if "pytorch" in tools:
        run_torch(manifest, timed, emit, a.threads)
    if a.serve:
        timed.answer(sys.stdin)


if __name__ == "__main__":
    main()
