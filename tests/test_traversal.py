"""Chapter 2, traversal: each test body runs on torch.nn and on mininn.

Most models are built inside the tests from `nn.Module` subclasses with
Parameters and buffers only (torch's own tensor classes in both backends);
the last section walks AlexNet built from chapter 3's layers. Error
messages and listings written out below are torch 2.13's: the torch.nn run
of the same test checks them.
"""
import importlib

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.nn import Buffer, Parameter

from support import param, raises_exactly


def tree(nn):
    """A two-level model: own parameter and buffer, two leaves, a pair."""
    class Leaf(nn.Module):
        def __init__(self, n=2):
            super().__init__()
            self.weight = param(n, n)
            self.bias = param(n)
            self.register_buffer("mean", torch.zeros(n))

    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.left = Leaf()
            self.right = Leaf()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = param(1)
            self.first = Leaf()
            self.pair = Pair()
            self.register_buffer("steps", torch.zeros(()))
            self.last = Leaf()

    return Net()


def first_of(pairs):
    return [name for name, _ in pairs]


# --- named_children / children ------------------------------------------

def test_named_children_yields_direct_children_in_registration_order(nn):
    net = tree(nn)
    assert first_of(net.named_children()) == ["first", "pair", "last"]
    assert [m for _, m in net.named_children()] == [
        net.first, net.pair, net.last]


def test_named_children_skips_none_and_a_second_name(nn):
    net = tree(nn)
    net.register_module("empty", None)
    net.again = net.first
    assert first_of(net.named_children()) == ["first", "pair", "last"]


def test_children_are_named_children_without_names(nn):
    net = tree(nn)
    net.again = net.pair
    assert list(net.children()) == [m for _, m in net.named_children()]


# --- named_modules / modules --------------------------------------------

def test_named_modules_yields_self_first_then_children_depth_first(nn):
    assert first_of(tree(nn).named_modules()) == [
        "", "first", "pair", "pair.left", "pair.right", "last"]


def test_named_modules_prefix_names_the_root(nn):
    assert first_of(tree(nn).named_modules(prefix="net"))[:4] == [
        "net", "net.first", "net.pair", "net.pair.left"]


def test_named_modules_visits_a_shared_child_once(nn):
    net = tree(nn)
    net.pair.right = net.first
    assert first_of(net.named_modules()) == [
        "", "first", "pair", "pair.left", "last"]


def test_named_modules_skips_the_subtree_of_a_shared_module(nn):
    net = tree(nn)
    net.again = net.pair
    assert first_of(net.named_modules()) == [
        "", "first", "pair", "pair.left", "pair.right", "last"]


def test_named_modules_remove_duplicate_false_visits_every_path(nn):
    net = tree(nn)
    net.again = net.pair
    assert first_of(net.named_modules(remove_duplicate=False))[-4:] == [
        "last", "again", "again.left", "again.right"]


def test_named_modules_remove_duplicate_false_keeps_two_names_in_one_parent(
        nn):
    outer, inner = nn.Module(), nn.Module()
    outer.a, outer.b = inner, inner
    assert first_of(outer.named_modules(remove_duplicate=False)) == [
        "", "a", "b"]
    assert first_of(outer.named_children()) == ["a"]


def test_named_modules_skips_none_children(nn):
    net = tree(nn)
    net.pair.register_module("left", None)
    assert first_of(net.named_modules()) == [
        "", "first", "pair", "pair.right", "last"]


def test_named_modules_skips_modules_already_in_a_given_memo(nn):
    net = tree(nn)
    memo = {net.pair}
    assert first_of(net.named_modules(memo)) == ["", "first", "last"]
    assert net in memo and net.last in memo


def test_named_modules_of_a_module_in_the_memo_is_empty(nn):
    net = tree(nn)
    assert list(net.named_modules({net})) == []


def test_named_modules_terminates_on_a_cycle(nn):
    net = tree(nn)
    net.pair.back = net
    assert first_of(net.named_modules())[-2:] == ["pair.right", "last"]


def test_modules_are_named_modules_without_names(nn):
    net = tree(nn)
    net.again = net.first
    for flag in (True, False):
        assert list(net.modules(remove_duplicate=flag)) == [
            m for _, m in net.named_modules(remove_duplicate=flag)]


def test_named_modules_is_a_lazy_generator(nn):
    it = tree(nn).named_modules()
    assert next(it)[0] == ""
    assert next(it)[0] == "first"


# --- named_parameters / parameters --------------------------------------

def test_named_parameters_lists_own_then_each_child_depth_first(nn):
    assert first_of(tree(nn).named_parameters()) == [
        "scale", "first.weight", "first.bias",
        "pair.left.weight", "pair.left.bias",
        "pair.right.weight", "pair.right.bias",
        "last.weight", "last.bias"]


def test_named_parameters_lists_a_tied_weight_once(nn):
    net = tree(nn)
    net.last.weight = net.first.weight
    got = first_of(net.named_parameters())
    assert "first.weight" in got and "last.weight" not in got
    assert len(got) == 8


def test_named_parameters_remove_duplicate_false_lists_every_name(nn):
    net = tree(nn)
    net.last.weight = net.first.weight
    got = list(net.named_parameters(remove_duplicate=False))
    assert first_of(got)[-2:] == ["last.weight", "last.bias"]
    assert got[-2][1] is got[1][1]


def test_named_parameters_of_a_shared_module_with_every_name(nn):
    net = tree(nn)
    net.again = net.first
    assert first_of(net.named_parameters()) == first_of(tree(nn).named_parameters())
    assert first_of(net.named_parameters(remove_duplicate=False))[-2:] == [
        "again.weight", "again.bias"]


def test_named_parameters_recurse_false_lists_own_only(nn):
    assert first_of(tree(nn).named_parameters(recurse=False)) == ["scale"]


def test_named_parameters_prefix_is_joined_with_a_dot(nn):
    got = first_of(tree(nn).named_parameters(prefix="model"))
    assert got[:2] == ["model.scale", "model.first.weight"]
    assert first_of(tree(nn).named_parameters(prefix="m", recurse=False)) == [
        "m.scale"]


def test_named_parameters_skips_none(nn):
    net = tree(nn)
    net.first.register_parameter("bias", None)
    assert first_of(net.named_parameters())[:3] == [
        "scale", "first.weight", "pair.left.weight"]


def test_named_parameters_yields_the_stored_objects(nn):
    net = tree(nn)
    assert [p for _, p in net.named_parameters()][1] is net.first.weight


def test_parameters_are_named_parameters_without_names(nn):
    net = tree(nn)
    net.last.bias = net.first.bias
    for recurse in (True, False):
        assert list(net.parameters(recurse)) == [
            p for _, p in net.named_parameters(recurse=recurse)]


# --- named_buffers / buffers ---------------------------------------------

def test_named_buffers_lists_own_then_each_child_depth_first(nn):
    assert first_of(tree(nn).named_buffers()) == [
        "steps", "first.mean", "pair.left.mean", "pair.right.mean",
        "last.mean"]


def test_named_buffers_include_non_persistent_buffers(nn):
    net = tree(nn)
    net.first.register_buffer("scratch", torch.ones(1), persistent=False)
    assert "first.scratch" in first_of(net.named_buffers())


def test_named_buffers_skip_none_and_a_shared_tensor(nn):
    net = tree(nn)
    net.first.register_buffer("mean", None)
    net.last.mean = net.pair.left.mean
    assert first_of(net.named_buffers()) == [
        "steps", "pair.left.mean", "pair.right.mean"]
    assert first_of(net.named_buffers(remove_duplicate=False))[-1] == "last.mean"


def test_named_buffers_prefix_and_recurse_false(nn):
    net = tree(nn)
    net.register_buffer("extra", Buffer(torch.ones(1)))
    assert first_of(net.named_buffers(prefix="n", recurse=False)) == [
        "n.steps", "n.extra"]


def test_buffers_are_named_buffers_without_names(nn):
    net = tree(nn)
    assert list(net.buffers()) == [b for _, b in net.named_buffers()]
    assert list(net.buffers(recurse=False)) == [net.steps]


# --- a walk is a generator; walking and editing ---------------------------

def test_parameters_is_a_generator_spent_after_one_pass(nn):
    params = tree(nn).parameters()
    sgd = torch.optim.SGD(params, lr=0.1)
    assert len(sgd.param_groups[0]["params"]) == 9
    assert list(params) == []


def test_each_call_of_parameters_walks_again(nn):
    net = tree(nn)
    assert len(list(net.parameters())) == len(list(net.parameters())) == 9


def test_a_layer_created_in_forward_is_registered_but_missed_by_an_optimizer(
        nn):
    class Lazy(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(2, 2)

        def forward(self, x):
            if not hasattr(self, "head"):
                self.head = nn.Linear(2, 2)
            return self.head(self.body(x))

    net = Lazy()
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    net(torch.ones(1, 2))
    assert first_of(net.named_parameters())[-2:] == ["head.weight", "head.bias"]
    assert len(sgd.param_groups[0]["params"]) == 2


def test_deleting_a_child_while_walking_named_modules_raises(nn):
    net = tree(nn)
    with pytest.raises(RuntimeError) as info:
        for name, _ in net.named_modules():
            if name:
                delattr(net, name)
    assert str(info.value) == "dictionary changed size during iteration"


def test_deleting_children_after_collecting_named_modules_works(nn):
    net = tree(nn)
    for name in [n for n, _ in net.named_modules() if n.count(".") == 0]:
        if name:
            delattr(net, name)
    assert first_of(net.named_modules()) == [""]


def test_set_submodule_replaces_every_module_that_named_modules_finds(nn):
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(),
                        nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    found = [n for n, m in net.named_modules() if isinstance(m, nn.ReLU)]
    assert found == ["1", "2.1"]
    for name in found:
        net.set_submodule(name, nn.Tanh(), strict=True)
    assert [type(m).__name__ for m in net.modules()] == [
        "Sequential", "Linear", "Tanh", "Sequential", "Linear", "Tanh"]


def test_set_submodule_builds_a_path_one_level_at_a_time(nn):
    root, leaf = nn.Module(), nn.Module()
    root.set_submodule("a", nn.Module())
    root.set_submodule("a.b", nn.Module())
    root.set_submodule("a.b.c", leaf)
    assert root.get_submodule("a.b.c") is leaf
    raises_exactly(AttributeError, "Module has no attribute `x`",
                   root.set_submodule, "x.y", nn.Module())


# --- get_submodule / get_parameter / get_buffer --------------------------

def test_get_submodule_follows_a_dotted_path(nn):
    net = tree(nn)
    assert net.get_submodule("pair.right") is net.pair.right
    assert net.get_submodule("") is net


@pytest.mark.parametrize("target, message", [
    ("pair.middle", "Pair has no attribute `middle`"),
    ("nope.left", "Net has no attribute `nope`"),
    ("scale", "`scale` is not an nn.Module"),
    ("first.mean", "`mean` is not an nn.Module"),
    ("pair..left", "Pair has no attribute ``"),
    ("first.weight.data", "`weight` is not an nn.Module"),
    ("add_module", "`add_module` is not an nn.Module"),
])
def test_get_submodule_errors_for_bad_paths(nn, target, message):
    raises_exactly(AttributeError, message, tree(nn).get_submodule, target)


def test_get_parameter_and_get_buffer_find_the_stored_tensors(nn):
    net = tree(nn)
    assert net.get_parameter("pair.left.bias") is net.pair.left.bias
    assert net.get_parameter("scale") is net.scale
    assert net.get_buffer("last.mean") is net.last.mean
    assert net.get_buffer("steps") is net.steps


@pytest.mark.parametrize("target, message", [
    ("first.gain", "Leaf has no attribute `gain`"),
    ("first.mean", "`mean` is not an nn.Parameter"),
    ("pair", "`pair` is not an nn.Parameter"),
    ("training", "`training` is not an nn.Parameter"),
    ("nope.weight", "Net has no attribute `nope`"),
    ("scale.data", "`scale` is not an nn.Module"),
    ("", "Net has no attribute ``"),
])
def test_get_parameter_errors_for_bad_paths(nn, target, message):
    raises_exactly(AttributeError, message, tree(nn).get_parameter, target)


@pytest.mark.parametrize("target, message", [
    ("first.var", "Leaf has no attribute `var`"),
    ("first.weight", "`weight` is not a buffer"),
    ("last", "`last` is not a buffer"),
    ("training", "`training` is not a buffer"),
    ("pair.x.mean", "Pair has no attribute `x`"),
])
def test_get_buffer_errors_for_bad_paths(nn, target, message):
    raises_exactly(AttributeError, message, tree(nn).get_buffer, target)


def test_get_buffer_finds_a_none_buffer(nn):
    net = tree(nn)
    net.first.register_buffer("mean", None)
    assert net.get_buffer("first.mean") is None


# --- set_submodule ------------------------------------------------------

def test_set_submodule_replaces_a_nested_child(nn):
    net, new = tree(nn), nn.Module()
    net.set_submodule("pair.left", new)
    assert net.pair.left is new
    assert first_of(net.pair.named_children()) == ["left", "right"]


def test_set_submodule_adds_a_new_child_unless_strict(nn):
    net, new = tree(nn), nn.Module()
    net.set_submodule("pair.middle", new)
    assert first_of(net.pair.named_children()) == ["left", "right", "middle"]
    raises_exactly(AttributeError, "Pair has no attribute `other`",
                   net.set_submodule, "pair.other", new, strict=True)


def test_set_submodule_strict_replaces_an_existing_child(nn):
    net, new = tree(nn), nn.Module()
    net.set_submodule("last", new, strict=True)
    assert net.last is new


def test_set_submodule_refuses_a_none_slot(nn):
    net = tree(nn)
    net.register_module("slot", None)
    raises_exactly(AttributeError, "`slot` is not an nn.Module",
                   net.set_submodule, "slot", nn.Module())


@pytest.mark.parametrize("target, value, exc, message", [
    ("", "module", ValueError,
     "Cannot set the submodule without a target name!"),
    ("first", 3, ValueError,
     "`module` is not an nn.Module, found <class 'int'>"),
    ("first", None, ValueError,
     "`module` is not an nn.Module, found <class 'NoneType'>"),
    ("scale", "module", AttributeError, "`scale` is not an nn.Module"),
    ("first.mean", "module", AttributeError, "`mean` is not an nn.Module"),
    ("nope.x", "module", AttributeError, "Net has no attribute `nope`"),
    ("scale.x", "module", AttributeError, "`scale` is not an nn.Module"),
])
def test_set_submodule_errors(nn, target, value, exc, message):
    if value == "module":
        value = nn.Module()
    raises_exactly(exc, message, tree(nn).set_submodule, target, value)


def test_set_submodule_checks_the_target_before_the_module(nn):
    raises_exactly(ValueError, "Cannot set the submodule without a target name!",
                   tree(nn).set_submodule, "", 3)


def test_set_submodule_returns_none(nn):
    assert tree(nn).set_submodule("first", nn.Module()) is None


# --- train / eval --------------------------------------------------------

def test_eval_and_train_reach_every_module(nn):
    net = tree(nn)
    assert {m.training for m in net.eval().modules()} == {False}
    assert {m.training for m in net.train().modules()} == {True}


def test_train_and_eval_return_self(nn):
    net = tree(nn)
    assert net.train() is net and net.eval() is net
    assert net.train(False) is net


def test_train_on_a_child_leaves_the_rest_alone(nn):
    net = tree(nn)
    net.pair.eval()
    assert [m.training for m in net.modules()] == [
        True, True, False, False, False, True]


def test_train_false_is_eval(nn):
    a, b = tree(nn), tree(nn)
    a.train(False)
    b.eval()
    assert [m.training for m in a.modules()] == [
        m.training for m in b.modules()]


@pytest.mark.parametrize("mode", [0, 1, "False", None, 1.0])
def test_train_rejects_a_mode_that_is_not_a_bool(nn, mode):
    raises_exactly(ValueError, "training mode is expected to be boolean",
                   tree(nn).train, mode)


def test_train_rejects_a_bool_tensor(nn):
    raises_exactly(ValueError, "training mode is expected to be boolean",
                   tree(nn).train, torch.tensor(True))


def test_train_sets_a_plain_attribute(nn):
    net = tree(nn).eval()
    assert net.__dict__["training"] is False
    assert "training" not in net._parameters and "training" not in net._buffers


def test_eval_leaves_autograd_on(nn):
    # eval() is not no_grad(): parameters keep requires_grad, and what is
    # computed from them records its graph
    net = tree(nn).eval()
    assert all(p.requires_grad for p in net.parameters())
    assert (net.first.weight * 2).requires_grad
    with torch.no_grad():
        assert not (net.first.weight * 2).requires_grad


def test_train_calls_each_parent_before_its_children(nn):
    log = []

    class Traced(nn.Module):
        def train(self, mode=True):
            log.append(self)
            return super().train(mode)

    outer, inner, leaf = Traced(), Traced(), Traced()
    outer.inner, outer.last = inner, Traced()
    inner.leaf = leaf
    outer.eval()
    assert log == [outer, inner, leaf, outer.last]


def test_train_calls_train_of_a_module_shared_by_two_parents_twice(nn):
    calls = []

    class Core(nn.Module):
        def train(self, mode=True):
            calls.append(mode)
            return super().train(mode)

    net = tree(nn)
    net.first.core = net.last.core = Core()
    net.eval()
    assert calls == [False, False]
    assert list(net.modules()).count(net.first.core) == 1


# --- requires_grad_ / zero_grad ----------------------------------------

def test_requires_grad_sets_every_parameter_and_returns_self(nn):
    net = tree(nn)
    assert net.pair.requires_grad_(False) is net.pair
    assert [n for n, p in net.named_parameters() if not p.requires_grad] == [
        "pair.left.weight", "pair.left.bias",
        "pair.right.weight", "pair.right.bias"]
    net.requires_grad_()
    assert all(p.requires_grad for p in net.parameters())


def test_requires_grad_leaves_buffers_alone(nn):
    net = tree(nn)
    net.requires_grad_(True)
    assert not any(b.requires_grad for b in net.buffers())


def backward(net):
    loss = sum((q * q).sum() for q in net.parameters())
    loss.backward()


def test_zero_grad_sets_grads_to_none_by_default(nn):
    net = tree(nn)
    backward(net)
    assert net.zero_grad() is None
    assert all(q.grad is None for q in net.parameters())


def test_zero_grad_set_to_none_false_zeroes_the_same_tensor(nn):
    net = tree(nn)
    backward(net)
    grad = net.first.weight.grad
    net.zero_grad(set_to_none=False)
    assert net.first.weight.grad is grad
    assert all(not q.grad.any() for q in net.parameters())


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_zero_grad_set_to_none_false_detaches_a_grad_with_history(nn):
    net = tree(nn)
    loss = sum((q * q).sum() for q in net.parameters())
    loss.backward(create_graph=True)
    assert net.first.weight.grad.grad_fn is not None
    net.zero_grad(False)
    grad = net.first.weight.grad
    assert grad.grad_fn is None and not grad.requires_grad
    assert not grad.any()


def test_zero_grad_skips_parameters_without_grad(nn):
    net = tree(nn)
    (net.scale * 2).sum().backward()
    net.zero_grad(set_to_none=False)
    assert net.scale.grad is not None and not net.scale.grad.any()
    assert net.first.weight.grad is None


def test_zero_grad_warns_on_a_data_parallel_replica(nn):
    net = tree(nn)
    net._is_replica = True
    with pytest.warns(UserWarning, match=r"nn\.DataParallel\(\) has no"):
        net.zero_grad()


def unused_weight_moves(nn, set_to_none):
    """Momentum SGD: step with a gradient for both, clear, then step with
    a gradient for `scale` only; did `first.bias` move in the second?"""
    net = tree(nn)
    sgd = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    (net.scale * net.first.bias).sum().backward()
    sgd.step()
    net.zero_grad(set_to_none=set_to_none)
    (net.scale * 2).sum().backward()
    before = net.first.bias.detach().clone()
    sgd.step()
    return not torch.equal(net.first.bias, before)


def test_zero_grad_set_to_none_keeps_momentum_sgd_off_an_unused_weight(nn):
    assert unused_weight_moves(nn, set_to_none=True) is False


def test_zero_grad_set_to_zero_lets_momentum_sgd_move_an_unused_weight(nn):
    assert unused_weight_moves(nn, set_to_none=False) is True


# --- apply ---------------------------------------------------------------

def test_apply_visits_children_before_self(nn):
    net = tree(nn)
    order = {id(m): name for name, m in net.named_modules()}
    seen = []
    net.apply(lambda m: seen.append(order[id(m)]))
    assert seen == ["first", "pair.left", "pair.right", "pair", "last", ""]


def test_apply_returns_self(nn):
    net = tree(nn)
    assert net.apply(lambda m: None) is net


def test_apply_visits_a_child_with_two_names_once(nn):
    net = tree(nn)
    net.again = net.first
    seen = []
    net.apply(seen.append)
    assert len(seen) == 6


def test_apply_visits_a_module_shared_by_two_parents_twice(nn):
    net = tree(nn)
    net.pair.right = net.first
    seen = []
    net.apply(seen.append)
    assert [m is net.first for m in seen].count(True) == 2


@torch.no_grad()
def test_apply_can_initialise_weights(nn):
    net = tree(nn)

    def init(m):
        if "weight" in m._parameters:
            m.weight.fill_(3.0)

    net.apply(init)
    assert all((q == 3).all() for n, q in net.named_parameters()
               if n.endswith("weight"))


# --- __repr__ / extra_repr ---------------------------------------------

def test_repr_of_an_empty_module(nn):
    assert repr(nn.Module()) == "Module()"


def test_extra_repr_is_empty_by_default(nn):
    assert tree(nn).extra_repr() == ""


def test_repr_of_a_leaf_with_a_one_line_extra_repr(nn):
    class Scale(nn.Module):
        def extra_repr(self):
            return "factor=2"

    assert repr(Scale()) == "Scale(factor=2)"


def test_repr_of_a_tree_indents_each_level_by_two(nn):
    assert repr(tree(nn)) == (
        "Net(\n"
        "  (first): Leaf()\n"
        "  (pair): Pair(\n"
        "    (left): Leaf()\n"
        "    (right): Leaf()\n"
        "  )\n"
        "  (last): Leaf()\n"
        ")")


def test_repr_puts_a_multi_line_extra_repr_before_the_children(nn):
    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Module()

        def extra_repr(self):
            return "units=2\nmode=soft"

    assert repr(Gate()) == (
        "Gate(\n  units=2\n  mode=soft\n  (inner): Module()\n)")


def test_repr_of_a_one_line_extra_repr_with_a_child_opens_the_brackets(nn):
    class Box(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Module()

        def extra_repr(self):
            return "size=3"

    assert repr(Box()) == "Box(\n  size=3\n  (inner): Module()\n)"


def test_repr_of_a_multi_line_extra_repr_without_children(nn):
    class Two(nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Two()) == "Two(\n  a=1\n  b=2\n)"


def test_repr_keeps_blank_lines_of_a_nested_repr_empty(nn):
    class Spaced(nn.Module):
        def extra_repr(self):
            return "a=1\n\nb=2"

    outer = nn.Module()
    outer.inner = Spaced()
    text = repr(outer)
    assert text == "Module(\n  (inner): Spaced(\n    a=1\n\n    b=2\n  )\n)"
    assert not any(line.endswith(" ") for line in text.splitlines())


def test_addindent_indents_every_line_but_the_first_and_the_blank_ones(nn):
    # the private helper __repr__ uses for a child's repr, called alone
    where = importlib.import_module("mininn.traversal" if nn.name == "mininn"
                                    else "torch.nn.modules.module")
    assert where._addindent("A(\n\n  x\n)", 2) == "A(\n\n    x\n  )"
    assert where._addindent("one line", 2) == "one line"


def test_repr_indents_a_blank_line_of_its_own_extra_repr(nn):
    # __repr__ puts two spaces before each extra_repr line, a blank one too;
    # only _addindent, for a child, empties it
    class Spaced(nn.Module):
        def extra_repr(self):
            return "a=1\n\nb=2"

    assert repr(Spaced()).splitlines() == [
        "Spaced(", "  a=1", "  ", "  b=2", ")"]


def test_repr_prints_a_shared_child_under_each_name_and_none(nn):
    net = nn.Module()
    net.a = nn.Module()
    net.b = net.a
    net.register_module("c", None)
    assert repr(net) == (
        "Module(\n  (a): Module()\n  (b): Module()\n  (c): None\n)")


def test_repr_ignores_parameters_and_buffers(nn):
    net = nn.Module()
    net.w = param(2)
    net.register_buffer("b", torch.zeros(1))
    assert repr(net) == "Module()"


def test_repr_uses_get_name(nn):
    class Renamed(nn.Module):
        def _get_name(self):
            return "Other"

    assert repr(Renamed()) == "Other()"
    assert nn.Module()._get_name() == "Module"


def test_str_is_repr(nn):
    net = tree(nn)
    assert str(net) == repr(net)


# --- random trees: the two backends walk them identically -----------------

# A node is (parameter sizes, buffer sizes, children); a child is either a
# new node or ("share", k): the k-th module built so far, used again.
nodes = st.recursive(
    st.tuples(st.lists(st.integers(1, 3), max_size=2),
              st.lists(st.integers(1, 3), max_size=2),
              st.just([])),
    lambda kids: st.tuples(
        st.lists(st.integers(1, 3), max_size=2),
        st.lists(st.integers(1, 3), max_size=2),
        st.lists(st.one_of(kids, st.tuples(st.just("share"),
                                           st.integers(0, 20))),
                 max_size=3)),
    max_leaves=8,
)


def shared_tree(nn, spec, done=None):
    """The module tree described by `spec`, on backend `nn`.

    A shared child is taken from `done`, the modules already finished, so
    it is never an ancestor: the tree may share but has no cycle.
    """
    done = [] if done is None else done
    params, bufs, kids = spec
    m = nn.Module()
    for i, size in enumerate(params):
        m.register_parameter(f"p{i}", Parameter(torch.full((size,), 1.0)))
    for i, size in enumerate(bufs):
        m.register_buffer(f"b{i}", torch.zeros(size), persistent=i == 0)
    for i, kid in enumerate(kids):
        if kid[0] != "share":
            m.add_module(f"m{i}", shared_tree(nn, kid, done))
        elif done:
            m.add_module(f"m{i}", done[kid[1] % len(done)])
        else:
            m.add_module(f"m{i}", None)
    done.append(m)
    return m


def walks(net):
    """Everything this chapter's methods report about a tree, as names."""
    out = {}
    for flag in (True, False):
        out[f"modules {flag}"] = first_of(
            net.named_modules(prefix="r", remove_duplicate=flag))
        out[f"params {flag}"] = first_of(
            net.named_parameters(remove_duplicate=flag))
        out[f"buffers {flag}"] = first_of(
            net.named_buffers(remove_duplicate=flag))
    out["children"] = first_of(net.named_children())
    out["own"] = first_of(net.named_parameters(recurse=False))
    order = {id(m): i for i, m in enumerate(net.modules())}
    seen = []
    net.apply(lambda m: seen.append(order[id(m)]))
    out["apply"] = seen
    out["repr"] = repr(net)
    return out


# `both` holds no state, so reusing it across examples is safe
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=nodes)
def test_random_trees_are_walked_and_printed_like_torch(both, spec):
    real, mini = both
    assert walks(shared_tree(mini, spec)) == walks(shared_tree(real, spec))


# --- AlexNet, built from the layers of chapter 3 -------------------------

def alexnet(nn):
    """torchvision's AlexNet (num_classes=1000) on backend `nn`."""
    class AlexNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2),
                nn.Conv2d(64, 192, kernel_size=5, padding=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2),
                nn.Conv2d(192, 384, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(384, 256, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(256, 256, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2),
            )
            self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
            self.classifier = nn.Sequential(
                nn.Dropout(p=0.5),
                nn.Linear(256 * 6 * 6, 4096),
                nn.ReLU(inplace=True),
                nn.Dropout(p=0.5),
                nn.Linear(4096, 4096),
                nn.ReLU(inplace=True),
                nn.Linear(4096, 1000),
            )

    return AlexNet()


_ALEXNETS = {}


def shared_alexnet(nn):
    """One AlexNet per backend for the read-only tests. It is large, so it
    lives on the meta device: shapes without memory or initialisation."""
    if nn.name not in _ALEXNETS:
        with torch.device("meta"):
            _ALEXNETS[nn.name] = alexnet(nn)
        assert next(_ALEXNETS[nn.name].parameters()).is_meta
    return _ALEXNETS[nn.name]


ALEXNET_MODULES = (
    ["root : AlexNet", "root.features : Sequential"]
    + [f"root.features.{i} : {kind}" for i, kind in enumerate(
        ["Conv2d", "ReLU", "MaxPool2d"] * 2
        + ["Conv2d", "ReLU"] * 3 + ["MaxPool2d"])]
    + ["root.avgpool : AdaptiveAvgPool2d", "root.classifier : Sequential"]
    + [f"root.classifier.{i} : {kind}" for i, kind in enumerate(
        ["Dropout", "Linear", "ReLU"] * 2 + ["Linear"])]
)

ALEXNET_PARAMETERS = [
    ("features.0.weight", (64, 3, 11, 11)), ("features.0.bias", (64,)),
    ("features.3.weight", (192, 64, 5, 5)), ("features.3.bias", (192,)),
    ("features.6.weight", (384, 192, 3, 3)), ("features.6.bias", (384,)),
    ("features.8.weight", (256, 384, 3, 3)), ("features.8.bias", (256,)),
    ("features.10.weight", (256, 256, 3, 3)), ("features.10.bias", (256,)),
    ("classifier.1.weight", (4096, 9216)), ("classifier.1.bias", (4096,)),
    ("classifier.4.weight", (4096, 4096)), ("classifier.4.bias", (4096,)),
    ("classifier.6.weight", (1000, 4096)), ("classifier.6.bias", (1000,)),
]


def test_alexnet_named_modules_with_prefix_root(nn):
    net = shared_alexnet(nn)
    assert [f"{name} : {m._get_name()}"
            for name, m in net.named_modules(prefix="root")] == (
        ALEXNET_MODULES)


def test_alexnet_named_parameters_names_and_shapes(nn):
    net = shared_alexnet(nn)
    assert [(name, tuple(q.shape)) for name, q in net.named_parameters()] == (
        ALEXNET_PARAMETERS)


def test_alexnet_parameter_count(nn):
    assert sum(q.numel() for q in shared_alexnet(nn).parameters()) == (
        61_100_840)


def test_alexnet_repr_is_torchs_line_by_line(both):
    real, mini = both
    assert repr(shared_alexnet(mini)).splitlines() == repr(
        shared_alexnet(real)).splitlines()


def test_alexnet_get_submodule_and_get_parameter(nn):
    net = shared_alexnet(nn)
    assert net.get_submodule("classifier.6") is net.classifier[6]
    assert net.get_parameter("features.10.bias") is net.features[10].bias
    raises_exactly(AttributeError, "Sequential has no attribute `13`",
                   net.get_submodule, "features.13")


def test_eval_reaches_dropout_and_batchnorm_inside_containers(nn):
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(
        nn.BatchNorm1d(2), nn.Dropout()))
    net.eval()
    assert [m.training for m in net.modules()] == [False] * 5
    net[1].train()
    assert [m.training for m in net.modules()] == [
        False, False, True, True, True]


def test_named_buffers_of_layers_in_a_container(nn):
    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert first_of(net.named_buffers()) == [
        "1.running_mean", "1.running_var", "1.num_batches_tracked"]
