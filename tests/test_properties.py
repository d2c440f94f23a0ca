"""Property-based parity: random module trees, built twin-wise.

A *spec* is plain data describing a module tree: which parameters, buffers
(persistent or not), children and containers each module holds, which
entries are `None`, which children are shared with an earlier branch and
which parameters are tied to an earlier one. `tree_from_spec(spec, nn, seed)` turns
the same spec into a torch.nn tree or a mininn tree, drawing the same
values from the same seed, so the two trees must agree on every question
we ask them: names, order, identity, values, modes and loading.

Hypothesis runs under a fixed profile (derandomized, no example database),
so the suite draws the same trees on every run and on every machine.
"""
import functools

import pytest
import torch
import torch.nn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mininn
from helpers import error_of


settings.register_profile(
    "parity",
    derandomize=True,  # the same examples on every run: CI never flakes
    database=None,     # nothing stored between runs
    max_examples=30,
    deadline=None,     # building a tree may take a few ms on a busy CI box
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
)
PARITY = settings.get_profile("parity")
BACKENDS = {"torch.nn": torch.nn, "mininn": mininn}

# ---------------------------------------------------------------- specs ---
# Names avoid Module's own attributes ("training", "forward", ...): torch
# refuses those, and that refusal has its own tests in test_registration.
NAMES = st.sampled_from(["a", "b", "c", "fc", "conv", "w", "v", "x1", "y_2"])
SHAPES = st.lists(st.integers(1, 3), max_size=2).map(tuple)
REF = st.integers(0, 50)  # an earlier module or parameter, taken modulo count

LEAVES = ["linear", "batchnorm1d", "relu", "identity", "parameterlist",
          "parameterdict"]
CONTAINERS = ["module", "sequential", "modulelist", "moduledict"]


def named(values, size=3, min_size=0):
    """(name, value) pairs with distinct names, at most `size` of them."""
    return st.tuples(st.lists(NAMES, unique=True, min_size=size,
                              max_size=size),
                     st.lists(values, min_size=min_size, max_size=size)).map(
                         lambda pair: list(zip(*pair)))


@st.composite
def entries(draw, depth, min_size=0):
    """The (name, entry) list of a plain Module node.

    With `min_size`, the first entry is a child: hypothesis otherwise
    favours flat trees, and flat trees test little.
    """
    child, entry = entry_kinds(depth)
    values = draw(st.lists(entry, max_size=3))
    if min_size:
        values = [draw(child)] + values
    names = draw(st.lists(NAMES, unique=True, min_size=4, max_size=4))
    return list(zip(names, values))


@functools.cache
def entry_kinds(depth):
    """(a child entry, any entry) of a Module node at `depth`: built once
    per depth, not on every draw (hypothesis draws thousands)."""
    child = st.tuples(st.just("child"), nodes(depth))
    return child, st.one_of(
        child,
        st.tuples(st.just("param"), SHAPES, st.booleans()),
        st.tuples(st.just("param_none")),
        st.tuples(st.just("buffer"), SHAPES, st.booleans(), st.booleans()),
        st.tuples(st.just("buffer_none"), st.booleans()),
        st.tuples(st.just("child_none")),
        st.tuples(st.just("shared"), REF),
        st.tuples(st.just("tied"), REF),
    )


@st.composite
def nodes(draw, depth):
    """A node at most `depth` levels deep: a leaf, a Module or a container."""
    # Containers first and twice: hypothesis favours early choices, and
    # trees should grow rather than stop at a leaf.
    kind = draw(st.sampled_from(CONTAINERS * 2 + LEAVES if depth else LEAVES))
    sizes = st.integers(1, 3)
    if kind == "linear":
        return (kind, draw(sizes), draw(sizes), draw(st.booleans()))
    if kind == "batchnorm1d":
        return (kind, draw(sizes), draw(st.booleans()))
    if kind == "parameterlist":
        return (kind, draw(st.lists(SHAPES, max_size=3)))
    if kind == "parameterdict":
        return (kind, draw(named(SHAPES)))
    if kind == "module":
        return (kind, draw(entries(depth - 1, min_size=1)))
    # Empty containers are dull; the leaves include empty parameter ones.
    if kind == "moduledict":
        return (kind, draw(named(nodes(depth - 1), min_size=1)))
    if kind in ("sequential", "modulelist"):
        return (kind, draw(st.lists(nodes(depth - 1), min_size=1,
                                    max_size=3)))
    return (kind,)


# The root is a plain Module whose children are at most 4 levels deep:
# trees up to 5 modules deep.
TREES = st.tuples(st.just("module"), entries(3, min_size=1))
SEEDS = st.integers(0, 2**16)


# ---------------------------------------------------------------- build ---
def tree_from_spec(spec, nn, seed):
    """The module tree `spec` describes, built with backend `nn`.

    Values come from a generator seeded with `seed`, and layers initialise
    from torch's global generator, seeded here too: the same spec and seed
    give the same values on both backends.
    """
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    made, params = [], []  # finished modules and parameters, in order

    def tensor(shape, integer=False):
        if integer:
            return torch.randint(0, 100, shape, generator=gen)
        return torch.randn(shape, generator=gen)

    def parameter(shape, requires_grad=True):
        p = torch.nn.Parameter(tensor(shape), requires_grad=requires_grad)
        params.append(p)
        return p

    def make(node):
        kind, *args = node
        if kind == "module":
            module = nn.Module()
            for name, (what, *rest) in args[0]:
                add(module, name, what, rest)
        elif kind == "sequential":
            module = nn.Sequential(*[make(n) for n in args[0]])
        elif kind == "modulelist":
            module = nn.ModuleList([make(n) for n in args[0]])
        elif kind == "moduledict":
            module = nn.ModuleDict({k: make(n) for k, n in args[0]})
        elif kind == "parameterlist":
            module = nn.ParameterList([parameter(s) for s in args[0]])
        elif kind == "parameterdict":
            module = nn.ParameterDict({k: parameter(s) for k, s in args[0]})
        elif kind == "linear":
            module = nn.Linear(args[0], args[1], bias=args[2])
            params.extend(module.parameters())
        elif kind == "batchnorm1d":
            module = nn.BatchNorm1d(args[0], track_running_stats=args[1])
            params.extend(module.parameters())
        elif kind == "relu":
            module = nn.ReLU()
        else:
            module = nn.Identity()
        made.append(module)
        return module

    def add(module, name, what, rest):
        if what == "param":  # by assignment: __setattr__ routes it
            setattr(module, name, parameter(*rest))
        elif what == "param_none":
            module.register_parameter(name, None)
        elif what == "buffer":
            shape, integer, persistent = rest
            module.register_buffer(name, tensor(shape, integer),
                                   persistent=persistent)
        elif what == "buffer_none":
            module.register_buffer(name, None, persistent=rest[0])
        elif what == "child":
            setattr(module, name, make(rest[0]))
        elif what == "child_none":
            module.add_module(name, None)
        elif what == "shared" and made:  # never an ancestor: no cycles
            module.add_module(name, made[rest[0] % len(made)])
        elif what == "tied" and params:
            module.register_parameter(name, params[rest[0] % len(params)])

    return make(spec)


def twins(spec, seed):
    """(torch.nn tree, mininn tree) built from one spec and seed."""
    return tuple(tree_from_spec(spec, nn, seed) for nn in BACKENDS.values())


# ------------------------------------------------------------- compare ---
def pattern(objects):
    """Each object replaced by the position of its first occurrence.

    Two trees share children and tie parameters the same way exactly when
    their patterns are equal.
    """
    first = {}
    return [first.setdefault(id(o), i) for i, o in enumerate(objects)]


def assert_same_tensors(theirs, ours):
    """Same names, order, dtypes, values and tying of (name, tensor) pairs."""
    theirs, ours = list(theirs), list(ours)
    assert [n for n, _ in ours] == [n for n, _ in theirs]
    assert pattern(t for _, t in ours) == pattern(t for _, t in theirs)
    for (name, a), (_, b) in zip(theirs, ours):
        assert type(b) is type(a), name
        assert b.dtype == a.dtype and torch.equal(b, a), name
        assert b.requires_grad == a.requires_grad, name


def kinds(named_modules):
    return [(name, type(m).__name__) for name, m in named_modules]


# ---------------------------------------------------------- properties ---
@PARITY
@given(TREES, SEEDS)
def test_named_modules_match_in_names_types_and_sharing(spec, seed):
    real, mini = twins(spec, seed)
    for dedup in (True, False):
        theirs = list(real.named_modules(remove_duplicate=dedup))
        ours = list(mini.named_modules(remove_duplicate=dedup))
        assert kinds(ours) == kinds(theirs)
        assert pattern(m for _, m in ours) == pattern(m for _, m in theirs)


@PARITY
@given(TREES, SEEDS)
def test_named_parameters_match_with_shared_and_tied_entries(spec, seed):
    real, mini = twins(spec, seed)
    for dedup in (True, False):
        assert_same_tensors(real.named_parameters(remove_duplicate=dedup),
                            mini.named_parameters(remove_duplicate=dedup))


@PARITY
@given(TREES, SEEDS)
def test_named_buffers_match_persistent_or_not(spec, seed):
    real, mini = twins(spec, seed)
    for dedup in (True, False):
        assert_same_tensors(real.named_buffers(remove_duplicate=dedup),
                            mini.named_buffers(remove_duplicate=dedup))


@PARITY
@given(TREES, SEEDS)
def test_state_dict_matches_in_keys_values_and_order(spec, seed):
    real, mini = twins(spec, seed)
    theirs, ours = real.state_dict(), mini.state_dict()
    assert list(ours) == list(theirs)
    for key in theirs:
        assert ours[key].dtype == theirs[key].dtype, key
        assert torch.equal(ours[key], theirs[key]), key
        assert not ours[key].requires_grad, key  # detached, like torch's


@PARITY
@given(TREES, SEEDS)
def test_state_dict_metadata_has_the_same_paths_and_versions(spec, seed):
    real, mini = twins(spec, seed)
    theirs, ours = real.state_dict()._metadata, mini.state_dict()._metadata
    assert list(ours.items()) == list(theirs.items())


@PARITY
@given(TREES, SEEDS)
def test_state_dict_keep_vars_hands_out_the_same_objects(spec, seed):
    real, mini = twins(spec, seed)
    theirs = real.state_dict(keep_vars=True)
    ours = mini.state_dict(keep_vars=True)
    assert list(ours) == list(theirs)
    assert pattern(ours.values()) == pattern(theirs.values())
    assert ([type(v) for v in ours.values()]
            == [type(v) for v in theirs.values()])


MODE_CHANGES = st.lists(
    st.tuples(REF, st.sampled_from(["train", "train(False)", "eval"])),
    max_size=6,
)


def change_mode(module, how):
    if how == "train":
        return module.train()
    if how == "eval":
        return module.eval()
    return module.train(False)


@PARITY
@given(TREES, SEEDS, MODE_CHANGES)
def test_training_flags_match_after_random_mode_changes(spec, seed, changes):
    real, mini = twins(spec, seed)
    for where, how in changes:
        for tree in (real, mini):
            modules = [m for _, m in tree.named_modules()]
            target = modules[where % len(modules)]
            assert change_mode(target, how) is target
        assert ([m.training for _, m in mini.named_modules()]
                == [m.training for _, m in real.named_modules()])


@pytest.mark.loads_state_dict
@PARITY
@given(TREES, SEEDS)
def test_load_state_dict_round_trips_across_backends(spec, seed):
    real, mini = twins(spec, seed)
    # Different values in the receivers: a silent no-op load would show.
    real_receiver, mini_receiver = twins(spec, seed + 1)
    for source, receiver in [(real, mini_receiver), (mini, real_receiver)]:
        result = receiver.load_state_dict(source.state_dict())
        assert (result.missing_keys, result.unexpected_keys) == ([], [])
        assert_same_tensors(source.state_dict().items(),
                            receiver.state_dict().items())
    # Non-persistent buffers are not in the state_dict: they keep their own
    # values, on both backends alike.
    assert_same_tensors(real_receiver.named_buffers(),
                        mini_receiver.named_buffers())


@pytest.mark.loads_state_dict
@PARITY
@given(TREES, SEEDS, st.data())
def test_load_state_dict_reports_the_same_missing_and_unexpected_keys(
        spec, seed, data):
    real, mini = twins(spec, seed)
    state = real.state_dict()
    keys = list(state)
    dropped = data.draw(st.lists(st.sampled_from(keys), unique=True)
                        if keys else st.just([]))
    extra = data.draw(st.lists(st.sampled_from(["zz", "a.zz", "fc.b.zz"]),
                               unique=True))
    for key in dropped:
        del state[key]
    for key in extra:
        state[key] = torch.zeros(1)
    # strict=True raises; the message lists the keys, in torch's order.
    assert (error_of(mini.load_state_dict, state)
            == error_of(real.load_state_dict, state))
    theirs = real.load_state_dict(state, strict=False)
    ours = mini.load_state_dict(state, strict=False)
    assert ours.missing_keys == theirs.missing_keys
    assert ours.unexpected_keys == theirs.unexpected_keys


@PARITY
@given(TREES, SEEDS)
def test_repr_matches(spec, seed):
    real, mini = twins(spec, seed)
    assert repr(mini) == repr(real)
