#!/usr/bin/env python3
"""Tests of `jax_torch.py`'s timing protocol (`--serve`), with plain Python functions in
place of JAX and PyTorch programs (neither is needed): `python3 benches/peers/test_jax_torch.py`.
"""

import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_torch  # noqa: E402


class Program:
    """A stand-in program: counts its gradient calls; `measure` gives (value, norm)."""

    def __init__(self, value, norm):
        self.value, self.norm, self.grads = value, norm, 0

    def primal(self):
        return self.value

    def grad(self):
        self.grads += 1

    def measure(self):
        return self.value, self.norm


def served(programs, commands):
    """The lines `--serve` writes for `programs` and the command text `commands`."""
    lines = []
    timed = jax_torch.Timed(lines.append, 3, True)
    for key, p in programs:
        timed.add("jax", key, p.primal, p.grad, p.measure)
    try:
        timed.answer(io.StringIO(commands))
    finally:
        # Every line goes out as one JSON object.
        for line in lines:
            json.loads(json.dumps(line))
    return lines


class ServeTest(unittest.TestCase):
    def test_set_up_lines_then_answers(self):
        a, b = Program(1.5, 2.0), Program(-3.0, 4.0)
        lines = served([("a", a), ("b", b)], "calibrate 1\nsample 1\n\nsample 1\n")
        self.assertEqual(lines[0], {"tool": "jax", "program": "a", "value": 1.5,
                                    "grad_norm": 2.0, "timer": 0})
        self.assertEqual(lines[1]["program"], "b")
        self.assertEqual(lines[1]["timer"], 1)
        self.assertNotIn("grad", lines[1], "nothing is timed at set-up")
        self.assertEqual(lines[2], {"ready": True})
        self.assertEqual(lines[3]["timer"], 1)
        batch = lines[3]["batch"]
        self.assertGreaterEqual(batch, 1)
        self.assertEqual([line["timer"] for line in lines[4:]], [1, 1])
        self.assertTrue(all(line["secs"] > 0 for line in lines[4:]))
        # Calibration: two calls; each sample: one batch. Program `a` never ran.
        self.assertEqual(b.grads, 2 + 2 * batch)
        self.assertEqual(a.grads, 0)

    def test_a_changed_program_is_refused_before_it_is_timed(self):
        p = Program(1.0, 2.0)
        timed = jax_torch.Timed(lambda _: None, 3, True)
        timed.add("pytorch", "gmm", p.primal, p.grad, p.measure)
        p.norm = 2.5  # the closure now computes something else than was checked
        with self.assertRaises(SystemExit) as e:
            timed.answer(io.StringIO("calibrate 0\n"))
        self.assertIn("pytorch on gmm", str(e.exception.code))
        self.assertEqual(p.grads, 0)

    def test_bad_commands_stop_the_script(self):
        for commands, says in [
            ("sample 0\n", "before calibrate"),
            ("calibrate 2\n", "no timer 2"),
            ("time 0\n", "unknown command"),
            ("calibrate\n", "unknown command"),
            ("sample x\n", "unknown command"),
        ]:
            with self.subTest(commands=commands):
                with self.assertRaises(SystemExit) as e:
                    served([("a", Program(1.0, 1.0))], commands)
                self.assertIn(says, str(e.exception.code))

    def test_without_serve_every_program_is_timed_at_once(self):
        lines = []
        timed = jax_torch.Timed(lines.append, 2, False)
        p = Program(2.0, 3.0)
        timed.add("jax", "rosenbrock", p.primal, p.grad, p.measure)
        self.assertEqual(len(lines), 1)
        self.assertEqual(lines[0]["value"], 2.0)
        self.assertGreater(lines[0]["grad"], 0)
        self.assertGreater(lines[0]["primal"], 0)
        self.assertNotIn("timer", lines[0])


def flat(tree):
    """The numbers of nested tuples and lists, as `jax.tree_util.tree_leaves`."""
    if isinstance(tree, (tuple, list)):
        return [v for t in tree for v in flat(t)]
    return [tree]


class JaxTimersTest(unittest.TestCase):
    """`jax_timers` with plain functions in place of `jax.jit` and friends."""

    def timers(self, both, grad_only):
        lines = []
        timed = jax_torch.Timed(lines.append, 3, True)
        calls = {"f": 0}

        def f(x, y):
            calls["f"] += 1
            return x * x + y

        jax_torch.jax_timers(timed, "p", f, both, grad_only, (3.0, 1.0), lambda g: g,
                             lambda v: v, flat, lambda g: g * g)
        return lines, timed, calls

    def test_value_and_gradient_then_gradient_alone(self):
        # The value of the "jax" timer is the one its own call returns (here deliberately
        # not f's, so that a check that called f instead would show).
        both = lambda x, y: (11.0, (2.0 * x, 1.0))
        grad = lambda x, y: (2.0 * x, 1.0)
        lines, timed, calls = self.timers(both, grad)
        self.assertEqual([(l["tool"], l["timer"]) for l in lines], [("jax", 0), ("jax-grad", 1)])
        self.assertEqual(lines[0]["value"], 11.0)
        self.assertEqual(lines[1]["value"], 10.0)
        self.assertAlmostEqual(lines[0]["grad_norm"], 37.0 ** 0.5)
        self.assertAlmostEqual(lines[1]["grad_norm"], 37.0 ** 0.5)
        self.assertEqual(calls["f"], 1, "only the gradient-alone timer calls f for its value")
        self.assertEqual(len(timed.grads), 2)

    def test_a_jacobian_has_one_timer_and_the_objective_value(self):
        jac = lambda x, y: ([2.0 * x, 0.0], [1.0])
        lines, timed, calls = self.timers(jac, None)
        self.assertEqual([l["tool"] for l in lines], ["jax"])
        self.assertEqual(lines[0]["value"], 10.0)
        self.assertEqual(calls["f"], 1)


if __name__ == "__main__":
    unittest.main()
