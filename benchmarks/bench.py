"""How fast is our Module? The same workloads on mininn and on torch.nn.

Each workload is timed on both backends in one process, alternating which
one goes first, round after round; the report is the median over rounds of
the ratio mininn time / torch.nn time (below 1.0: mininn is faster), with
the interquartile range of those ratios as a measure of the noise. Times
are CPU time of this process (time.process_time), which a busy machine
disturbs less than wall-clock time, on one thread.

    python benchmarks/bench.py          # a minute or two (the book's page)
    python benchmarks/bench.py --quick  # about 30 seconds, noisier
    python benchmarks/bench.py --test   # a few seconds: small models, a
                                        # smoke test, not a measurement
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
import mininn

BACKENDS = {"torch.nn": torch.nn, "mininn": mininn}


@dataclass(frozen=True)
class Sizes:
    layers: int = 1000        # Linear layers of the deep model
    children: int = 99        # the wide tree: 1 + children * (1 + grand)
    grandchildren: int = 100
    calls: int = 1000         # forward calls per timing of a call workload


FULL = Sizes()
# The test run (MININN_QUICK=1) times small models: it checks that the
# page runs, and its timings are not compared with anything.
TEST = Sizes(layers=50, children=9, grandchildren=10, calls=50)
# Call counts are printed on the page and compared by the test run, so
# they are taken on one size in every mode, small enough to profile fast.
COUNTED = Sizes(layers=250, children=24, grandchildren=25, calls=100)


@dataclass(frozen=True)
class Mode:
    sizes: Sizes
    budget: float    # seconds per workload, both backends together
    min_rounds: int  # even a slow workload gets this many rounds


MODES = {
    "full": Mode(FULL, budget=5.0, min_rounds=11),
    "quick": Mode(FULL, budget=1.0, min_rounds=7),
    "test": Mode(TEST, budget=0.0, min_rounds=3),
}


def deep_model(nn, layers=1000):
    """A Sequential of `layers` tiny Linear layers (2 tensors each)."""
    return nn.Sequential(*[nn.Linear(4, 4) for _ in range(layers)])


def wide_tree(nn, children=99, grandchildren=100):
    """A tree of 1 + 99 + 9,900 = 10,000 modules, three levels deep."""
    return nn.Sequential(*[
        nn.Sequential(*[nn.Identity() for _ in range(grandchildren)])
        for _ in range(children)
    ])


# Each workload: (name, target, setup). `setup(nn, sizes)` builds what the
# workload needs, untimed, and returns (function to time, calls it makes).
def _build(nn, s):
    return (lambda: deep_model(nn, s.layers)), 1


def _named_parameters(nn, s):
    model = deep_model(nn, s.layers)
    return (lambda: list(model.named_parameters())), 1


def _state_dict(nn, s):
    model = deep_model(nn, s.layers)
    return model.state_dict, 1


def _load_state_dict(nn, s):
    model = deep_model(nn, s.layers)
    state = model.state_dict()
    return (lambda: model.load_state_dict(state)), 1


def _to_float64_and_back(nn, s):
    model = deep_model(nn, s.layers)
    return (lambda: model.to(torch.float64).to(torch.float32)), 1


def _call(nn, s, hooks=0):
    layer, x = nn.Linear(1, 1), torch.zeros(1, 1)
    for _ in range(hooks):
        layer.register_forward_hook(lambda module, args, output: None)

    def calls():
        with torch.no_grad():
            for _ in range(s.calls):
                layer(x)
    return calls, s.calls


def _named_modules(nn, s):
    tree = wide_tree(nn, s.children, s.grandchildren)
    return (lambda: list(tree.named_modules())), 1


# Targets: mininn runs the same algorithm as torch.nn in every workload, so
# "as fast" is the goal; 1.05 leaves room for noise (a ratio of 1.01 is not
# a slower algorithm). A call has a looser target: mininn splits torch's
# inline hook loop into small methods, for the reader.
SAME = 1.05
WORKLOADS = [
    ("build the deep model", None, _build),  # mostly weight init
    ("named_parameters", SAME, _named_parameters),
    ("state_dict", SAME, _state_dict),
    ("load_state_dict", SAME, _load_state_dict),
    (".to(float64) and back", SAME, _to_float64_and_back),
    ("call, no hooks", 1.25, _call),
    ("call, two forward hooks", 1.25, lambda nn, s: _call(nn, s, hooks=2)),
    ("named_modules, wide tree", SAME, _named_modules),
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
    rounds: int

    @property
    def met(self):
        return self.target is None or self.ratio <= self.target


def _once(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


def measure(name, target, setup, mode):
    """Time one workload for about `mode.budget` seconds, in at least
    `mode.min_rounds` rounds (and at most 41)."""
    fns, divisor = {}, 1
    for key, nn in BACKENDS.items():
        fns[key], divisor = setup(nn, mode.sizes)
    # Warm up (first calls pay for caches) and size the number of rounds
    # by the wall clock, so that a busy machine still finishes in time.
    start = time.perf_counter()
    for fn in fns.values():
        fn()
    pair = time.perf_counter() - start
    rounds = max(mode.min_rounds, min(41, int(mode.budget / pair)))
    times = {key: [] for key in fns}
    order = list(fns)
    # A collection landing in one backend's turn is noise: collect between
    # rounds instead, and freeze what exists now (torch's own objects), so
    # that each collection looks only at what the workloads left behind.
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        for _ in range(rounds):
            for key in order:
                times[key].append(_once(fns[key]))
            order.reverse()  # alternate who goes first
            gc.collect()
    finally:
        gc.enable()
        gc.unfreeze()
    ratios = [m / t for m, t in zip(times["mininn"], times["torch.nn"])]
    low, _, high = statistics.quantiles(ratios, n=4)
    per_call = {k: statistics.median(v) / divisor * 1e6
                for k, v in times.items()}
    return Result(name, target, per_call["torch.nn"], per_call["mininn"],
                  statistics.median(ratios), low, high, rounds)


def run(mode="full", only=None):
    """Time every workload (or those named in `only`); a list of Results."""
    mode = MODES[mode]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: more threads only add noise
    try:
        return [measure(name, target, setup, mode)
                for name, target, setup in WORKLOADS
                if only is None or name in only]
    finally:
        torch.set_num_threads(threads)


def call_anatomy(calls=20000, rounds=15):
    """Where the time of `layer(x)` goes, per backend, in ns per call:
    {backend: {part: (median, first quartile, third quartile)}}.

    Peeled in three steps: the bare math (F.linear on the two tensors, the
    same call for both backends, so timed once), `forward` (adds a method
    call and two `__getattr__` lookups) and `layer(x)` (adds `__call__`
    and its hook checks). Every round times each step of each backend,
    in an order that reverses from round to round, as `measure` does; a
    part is the difference of two steps *of the same round*, and its
    figure the median over rounds.
    """
    x = torch.zeros(1, 1)
    layers = {key: nn.Linear(1, 1) for key, nn in BACKENDS.items()}
    # the math on one layer's Parameters: both backends hold torch's class
    weight, bias = layers["torch.nn"]._parameters.values()
    steps = {("math", None): lambda: torch.nn.functional.linear(x, weight,
                                                                 bias)}
    for key, layer in layers.items():
        steps["forward", key] = lambda layer=layer: layer.forward(x)
        steps["call", key] = lambda layer=layer: layer(x)
    times, order = {step: [] for step in steps}, list(steps)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            for _ in range(rounds):
                for step in order:
                    fn, start = steps[step], time.process_time()
                    for _ in range(calls):
                        fn()
                    times[step].append(
                        (time.process_time() - start) / calls * 1e9)
                order.reverse()
    finally:
        torch.set_num_threads(threads)

    def spread(first, then):  # per-round differences, then - first
        low, median, high = statistics.quantiles(
            [b - a for a, b in zip(first, then)], n=4)
        return median, low, high

    math, none = times["math", None], [0.0] * rounds
    # No label starts with "_": matplotlib leaves such labels out of legends
    return {key: {"F.linear (the math)": spread(none, math),
                  "forward: method call, 2 lookups":
                      spread(math, times["forward", key]),
                  "call: hook checks":
                      spread(times["forward", key], times["call", key])}
            for key in layers}


def call_counts(sizes=COUNTED):
    """Python function calls per workload and backend, from cProfile.

    Unlike times, counts are the same on every machine and every run (with
    the pinned Python and torch).
    """
    import cProfile
    import pstats

    counts = []
    for name, _, setup in WORKLOADS:
        row = {}
        for key, nn in BACKENDS.items():
            fn, _ = setup(nn, sizes)
            fn()
            profile = cProfile.Profile()
            profile.runcall(fn)
            row[key] = pstats.Stats(profile).total_calls
        counts.append((name, row["torch.nn"], row["mininn"]))
    return counts


def report(results):
    """Print the results as a table that fits 88 columns."""
    head = (f"{'workload':<25}{'torch.nn':>10}{'mininn':>10}{'ratio':>6}"
            f"  {'(IQR)':<11}{'rounds':>7}  target")
    print(head)
    print("-" * 87)
    for r in results:
        target = "-" if r.target is None else f"<= {r.target:.2f}"
        mark = "" if r.target is None else (" ok" if r.met else " MISSED")
        print(f"{r.name:<25}{_us(r.torch_us):>10}{_us(r.mininn_us):>10}"
              f"{r.ratio:>6.2f}  ({r.low:.2f}-{r.high:.2f}){r.rounds:>7}"
              f"  {target}{mark}")


def _us(us):
    return f"{us / 1000:.1f} ms" if us >= 1000 else f"{us:.1f} us"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true",
                       help="fewer rounds: noisier, about 30 s")
    group.add_argument("--test", action="store_true",
                       help="small models, 3 rounds: a smoke test")
    args = parser.parse_args()
    mode = "quick" if args.quick else "test" if args.test else "full"
    start = time.perf_counter()
    report(run(mode))
    print(f"\n{mode} mode, {time.perf_counter() - start:.0f} s; times are "
          f"per call (a call of the no-hook and hook rows is one forward)")


if __name__ == "__main__":
    main()
