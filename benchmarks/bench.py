"""How fast is our Module? The same workloads on mininn and on torch.nn.

Each workload is timed on both backends in one process, alternating which
one goes first, round after round; the report is the median over rounds of
the ratio mininn time / torch.nn time (below 1.0: mininn is faster), with
the interquartile range of those ratios as a measure of the noise. Times
are CPU time of this process (time.process_time), which a busy machine
disturbs less than wall-clock time, on one thread.

    python benchmarks/bench.py          # about a minute
    python benchmarks/bench.py --quick  # about 15 seconds (the book's page)
"""
import argparse
import gc
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "book"))
import mininn  # noqa: E402  (needs book/ on the path first)

BACKENDS = {"torch.nn": torch.nn, "mininn": mininn}


def deep_model(nn, layers=1000):
    """A Sequential of `layers` tiny Linear layers (2 tensors each)."""
    return nn.Sequential(*[nn.Linear(4, 4) for _ in range(layers)])


def wide_tree(nn, children=99, grandchildren=100):
    """A tree of 1 + 99 + 9,900 = 10,000 modules, three levels deep."""
    return nn.Sequential(*[
        nn.Sequential(*[nn.Identity() for _ in range(grandchildren)])
        for _ in range(children)
    ])


# Each workload: (name, target ratio, calls per timing, setup). `setup(nn)`
# builds what the workload needs, untimed, and returns the function to time.
def _build(nn):
    return lambda: deep_model(nn)


def _named_parameters(nn):
    model = deep_model(nn)
    return lambda: list(model.named_parameters())


def _state_dict(nn):
    model = deep_model(nn)
    return model.state_dict


def _load_state_dict(nn):
    model = deep_model(nn)
    state = model.state_dict()
    return lambda: model.load_state_dict(state)


def _to_float64_and_back(nn):
    model = deep_model(nn)
    return lambda: model.to(torch.float64).to(torch.float32)


def _call(nn, hooks=0):
    layer, x = nn.Linear(1, 1), torch.zeros(1, 1)
    for _ in range(hooks):
        layer.register_forward_hook(lambda module, args, output: None)

    def calls():
        with torch.no_grad():
            for _ in range(1000):
                layer(x)
    return calls


def _named_modules(nn):
    tree = wide_tree(nn)
    return lambda: list(tree.named_modules())


WORKLOADS = [
    # name, target (mininn/torch at most), setup, per-call unit divisor
    ("build 1,000 layers", None, _build, 1),
    ("named_parameters", 1.0, _named_parameters, 1),
    ("state_dict", 1.0, _state_dict, 1),
    ("load_state_dict", 1.0, _load_state_dict, 1),
    (".to(float64) and back", 1.0, _to_float64_and_back, 1),
    ("call, no hooks", 1.25, _call, 1000),
    ("call, two forward hooks", 1.25, lambda nn: _call(nn, hooks=2), 1000),
    ("named_modules, 10,000", 1.0, _named_modules, 1),
]


@dataclass
class Result:
    name: str
    target: float | None  # None: reported, no target
    torch_us: float       # median time of one call, microseconds
    mininn_us: float
    ratio: float          # median over rounds of mininn / torch
    low: float            # the ratios' first and third quartiles
    high: float

    @property
    def met(self):
        return self.target is None or self.ratio <= self.target


def _once(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


def measure(name, target, setup, divisor, budget, max_rounds=41):
    """Time one workload for about `budget` seconds (at least 3 rounds)."""
    fns = {key: setup(nn) for key, nn in BACKENDS.items()}
    # Warm up (first calls pay for caches) and size the number of rounds
    # by the wall clock, so that a busy machine still finishes in time.
    start = time.perf_counter()
    for fn in fns.values():
        fn()
    pair = time.perf_counter() - start
    rounds = max(3, min(max_rounds, int(budget / pair)))
    times = {key: [] for key in fns}
    order = list(fns)
    gc.disable()  # a collection landing in one backend's turn is noise
    try:
        for _ in range(rounds):
            for key in order:
                times[key].append(_once(fns[key]))
            order.reverse()  # alternate who goes first
            gc.collect()
    finally:
        gc.enable()
    ratios = [m / t for m, t in zip(times["mininn"], times["torch.nn"])]
    low, _, high = statistics.quantiles(ratios, n=4)
    per_call = {k: statistics.median(v) / divisor * 1e6
                for k, v in times.items()}
    return Result(name, target, per_call["torch.nn"], per_call["mininn"],
                  statistics.median(ratios), low, high)


def run(quick=False, only=None):
    """Time every workload (or those named in `only`); a list of Results."""
    budget = 0.5 if quick else 5.0  # seconds per workload
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: more threads only add noise
    try:
        return [measure(name, target, setup, divisor, budget)
                for name, target, setup, divisor in WORKLOADS
                if only is None or name in only]
    finally:
        torch.set_num_threads(threads)


def call_anatomy(calls=20000, rounds=9):
    """Where the time of `layer(x)` goes, per backend, in ns per call.

    Measured by peeling layers off: the bare math (F.linear on the two
    tensors), `forward` (adds two `__getattr__` lookups and a method
    call), and `layer(x)` (adds `__call__` and its hook checks).
    """
    x = torch.zeros(1, 1)
    layers = {key: nn.Linear(1, 1) for key, nn in BACKENDS.items()}
    steps = {
        "math": lambda l: lambda: torch.nn.functional.linear(
            x, l._parameters["weight"], l._parameters["bias"]),
        "forward": lambda l: lambda: l.forward(x),
        "call": lambda l: lambda: l(x),
    }
    best = {key: {} for key in layers}
    with torch.no_grad():
        for step, make in steps.items():
            fns = {key: make(layer) for key, layer in layers.items()}
            times = {key: [] for key in fns}
            for _ in range(rounds):
                for key, fn in fns.items():
                    start = time.process_time()
                    for _ in range(calls):
                        fn()
                    times[key].append(time.process_time() - start)
            for key in fns:
                best[key][step] = min(times[key]) / calls * 1e9
    return {key: {"F.linear (the math)": t["math"],
                  "forward: 2 attribute lookups": t["forward"] - t["math"],
                  "__call__: hook checks": t["call"] - t["forward"]}
            for key, t in best.items()}


def call_counts():
    """Python function calls per workload and backend, from cProfile.

    Unlike times, counts are the same on every machine and every run.
    """
    import cProfile
    import pstats

    counts = []
    for name, _, setup, _ in WORKLOADS:
        row = {}
        for key, nn in BACKENDS.items():
            fn = setup(nn)
            fn()
            profile = cProfile.Profile()
            profile.runcall(fn)
            row[key] = pstats.Stats(profile).total_calls
        counts.append((name, row["torch.nn"], row["mininn"]))
    return counts


def report(results):
    head = (f"{'workload':<25}{'torch.nn':>12}{'mininn':>12}{'ratio':>7}"
            f"  {'(IQR)':<11}  target")
    print(head)
    print("-" * len(head))
    for r in results:
        target = "-" if r.target is None else f"<= {r.target:.2f}"
        mark = "" if r.target is None else ("  ok" if r.met else "  MISSED")
        print(f"{r.name:<25}{_us(r.torch_us):>12}{_us(r.mininn_us):>12}"
              f"{r.ratio:>7.2f}  ({r.low:.2f}-{r.high:.2f})  {target}{mark}")


def _us(us):
    return f"{us / 1000:.1f} ms" if us >= 1000 else f"{us:.1f} us"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer rounds: 15 s instead of a minute")
    args = parser.parse_args()
    start = time.perf_counter()
    report(run(quick=args.quick))
    print(f"\n{time.perf_counter() - start:.0f} s; times are per call "
          f"(a call of the no-hook and hook rows is one forward)")


if __name__ == "__main__":
    main()
