"""PyTorch peer of examples/cuda_bench.rs: the same computations on the GPU, forward and
backward (autograd), timed as the fastest of REPS runs after a warm-up. Prints one line per
kernel: `name forward_ms backward_ms`. Exits 3 when PyTorch with CUDA is not available."""
import sys
import time

try:
    import torch
except ImportError:
    sys.exit(3)
if not torch.cuda.is_available():
    sys.exit(3)

REPS = 20
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False


def fastest(f):
    f()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(REPS):
        t = time.perf_counter()
        f()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def case(name, make_inputs, fn):
    inputs = make_inputs()
    fwd = fastest(lambda: fn(*inputs))

    def both():
        xs = [x.detach().requires_grad_(x.dtype == torch.float64) for x in inputs]
        out = fn(*xs)
        out.backward(torch.ones_like(out))

    bwd = fastest(both)
    print(f"{name} {fwd:.4f} {bwd:.4f}")


n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 24
f64 = torch.float64
lin = lambda k, s: torch.sin(s * torch.arange(k, device=dev, dtype=f64))

case("saxpy", lambda: (torch.tensor(1.7, device=dev, dtype=f64), lin(n, 0.1), lin(n, 0.2)),
     lambda a, x, y: a * x + y)


def heat(u, r):
    inner = u[1:-1] + r * (u[:-2] - 2 * u[1:-1] + u[2:]) * (1 + torch.sin(u[1:-1]))
    return torch.cat([u[:1], inner, u[-1:]])


case("heat", lambda: (lin(n, 0.05), torch.tensor(0.2, device=dev, dtype=f64)), heat)
W = 4096


def heat2d(u, r):
    g = u.view(-1, W)
    c = g[1:-1, 1:-1]
    lap = g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] - 4 * c
    inner = c + r * lap * (1 + 0.1 * c * c)
    out = torch.nn.functional.pad(inner, (1, 1, 1, 1))
    mask = torch.ones_like(g, dtype=torch.bool)
    mask[1:-1, 1:-1] = False
    return torch.where(mask, g, out).view(-1)


case("heat2d", lambda: (lin(n, 0.05), torch.tensor(0.2, device=dev, dtype=f64)), heat2d)
case("energy", lambda: (lin(n, 0.1), torch.tensor(0.3, device=dev, dtype=f64)),
     lambda x, w: (w * x * torch.exp(x)).sum())
idx = (torch.arange(n, device=dev) * 7919 + 13) % n
case("gather", lambda: (lin(n, 0.1),), lambda x: torch.sin(0.3 * x[idx]) * x)

np_, na = 1 << 16, 256


def score(poses, atoms):
    p = poses.view(-1, 3)
    a = atoms.view(-1, 4)
    d = a[None, :, :3] - p[:, None, :]
    r2 = (d * d).sum(-1) + 0.5
    q = a[None, :, 3]
    return torch.where(r2 < 4.0, q / r2, q * torch.exp(-r2)).sum(-1)


case("score", lambda: (2 * lin(3 * np_, 0.37), 2 * torch.cos(0.53 * torch.arange(4 * na, device=dev, dtype=f64))), score)
