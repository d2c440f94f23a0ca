"""Chapter 5, hooks: each test body runs on torch.nn and on mininn.

Hook ids differ between the backends (each keeps its own counter), so the
tests compare what ids mean, never their values. Every global hook is
registered in a `with` block (a handle is a context manager), so no
test leaks one into the next.
"""
import contextlib
import copy
import gc
import warnings

import pytest
import torch


def make_scale(nn):
    """A one-parameter module: forward(x, bias=0.0) = x * w + bias."""

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor([2.0, 3.0]))

        def forward(self, x, bias=0.0):
            return x * self.w + bias

    return Scale()


def make_two_step(nn):
    """A module whose forward has two ops: (x * w).sin()."""

    class TwoStep(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor([0.5, -1.0]))

        def forward(self, x, y=None, scale=1.0):
            out = (x * self.w).sin() * scale
            return out if y is None else out + y

    return TwoStep()


def make_nested(nn):
    """outer(a(x), inner(b(...))): a small tree for order and trace tests."""

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = make_scale(nn)
            self.inner = make_scale(nn)

        def forward(self, x):
            return self.inner(self.a(x))

    return Outer()


def name_of(model):
    return {id(m): n or "root" for n, m in (
        ("", model), ("a", model.a), ("inner", model.inner))}


def shapes(items):
    return tuple(None if t is None else tuple(t.shape) for t in items)


# ---------------------------------------------------------------- handles


def test_handle_ids_count_up_by_one(nn):
    m = make_scale(nn)
    first = m.register_forward_hook(lambda *a: None)
    second = m.register_forward_pre_hook(lambda *a: None)
    assert second.id == first.id + 1


def test_handle_id_is_the_key_of_the_hook(nn):
    m = make_scale(nn)
    hook = lambda *a: None  # noqa: E731
    handle = m.register_forward_hook(hook)
    assert list(m._forward_hooks.items()) == [(handle.id, hook)]


def test_handle_remove_deletes_the_hook_and_its_flags(nn):
    m = make_scale(nn)
    handle = m.register_forward_hook(
        lambda *a: None, with_kwargs=True, always_call=True)
    assert handle.id in m._forward_hooks_with_kwargs
    assert handle.id in m._forward_hooks_always_called
    handle.remove()
    assert not (m._forward_hooks or m._forward_hooks_with_kwargs
                or m._forward_hooks_always_called)


def test_pre_hook_handle_remove_deletes_its_with_kwargs_flag(nn):
    m = make_scale(nn)
    handle = m.register_forward_pre_hook(lambda *a: None, with_kwargs=True)
    handle.remove()
    assert not (m._forward_pre_hooks or m._forward_pre_hooks_with_kwargs)


def test_handle_remove_twice_is_harmless(nn):
    m = make_scale(nn)
    handle = m.register_forward_hook(lambda *a: None)
    handle.remove()
    handle.remove()
    assert len(m._forward_hooks) == 0


def test_handle_as_context_manager_removes_on_exit(nn):
    m, seen = make_scale(nn), []
    with m.register_forward_hook(lambda *a: seen.append(1)) as handle:
        m(torch.ones(2))
        assert isinstance(handle, nn.RemovableHandle)
    m(torch.ones(2))
    assert seen == [1]


def test_hook_may_remove_itself_while_running(nn):
    m, seen = make_scale(nn), []

    def once(module, args, output):
        seen.append("once")
        handle.remove()

    handle = m.register_forward_hook(once)
    m.register_forward_hook(lambda *a: seen.append("after"))
    m(torch.ones(2))
    m(torch.ones(2))
    assert seen == ["once", "after", "after"]


def test_hook_removed_by_an_earlier_hook_still_runs_that_call(nn):
    m, seen = make_scale(nn), []
    m.register_forward_pre_hook(lambda *a: second.remove())
    second = m.register_forward_pre_hook(lambda *a: seen.append("second"))
    m(torch.ones(2))
    m(torch.ones(2))
    assert seen == ["second"]


def test_hook_added_by_a_hook_runs_from_the_next_call(nn):
    m, seen = make_scale(nn), []

    def adder(module, args):
        if not seen:
            module.register_forward_pre_hook(lambda *a: seen.append("new"))
        seen.append("adder")

    m.register_forward_pre_hook(adder)
    m(torch.ones(2))
    m(torch.ones(2))
    assert seen == ["adder", "adder", "new"]


def test_module_without_hooks_still_calls_forward(nn):
    m = make_scale(nn)
    assert torch.equal(m(torch.ones(2), bias=1.0), torch.tensor([3.0, 4.0]))


# ----------------------------------------------------- forward pre-hooks


ONE_HOOK = [  # (where, register): module method or global function
    ("module", "register_forward_pre_hook"),
    ("module", "register_forward_hook"),
    ("module", "register_full_backward_pre_hook"),
    ("module", "register_full_backward_hook"),
    ("module", "register_backward_hook"),
    ("global", "register_module_forward_pre_hook"),
    ("global", "register_module_forward_hook"),
    ("global", "register_module_full_backward_pre_hook"),
    ("global", "register_module_full_backward_hook"),
]


@pytest.mark.parametrize("where, register", ONE_HOOK,
                         ids=[r for _, r in ONE_HOOK])
def test_any_single_hook_takes_the_call_off_the_fast_path(nn, where,
                                                          register):
    layer, fired = nn.Linear(2, 1), []
    owner = layer if where == "module" else nn
    with getattr(owner, register)(lambda *a: fired.append(1)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the old hook's FutureWarning
            layer(torch.ones(1, 2, requires_grad=True) * 1).sum().backward()
    assert fired == [1]


def test_a_global_backward_pre_hook_alone_adds_the_identity_node(nn):
    with nn.register_module_full_backward_pre_hook(lambda *a: None):
        out = nn.Linear(2, 1)(torch.ones(1, 2, requires_grad=True))
    assert out.grad_fn.name() == "BackwardHookFunctionBackward"


def test_forward_pre_hook_sees_positional_args_only(nn):
    m, seen = make_scale(nn), []
    m.register_forward_pre_hook(lambda mod, args: seen.append((mod, args)))
    x = torch.ones(2)
    m(x, bias=1.0)
    assert seen[0][0] is m
    assert len(seen[0][1]) == 1 and seen[0][1][0] is x


def test_forward_pre_hook_single_return_is_wrapped_in_a_tuple(nn):
    m = make_scale(nn)
    m.register_forward_pre_hook(lambda mod, args: args[0] * 10)
    assert torch.equal(m(torch.ones(2)), torch.tensor([20.0, 30.0]))


def test_forward_pre_hook_list_return_becomes_one_argument(nn):
    m, seen = make_scale(nn), []
    m.register_forward_pre_hook(lambda mod, args: [args[0]])
    m.register_forward_pre_hook(lambda mod, args: seen.append(args))
    with pytest.raises(TypeError):
        m(torch.ones(2))  # forward gets a list, and list * tensor fails
    assert isinstance(seen[0], tuple) and isinstance(seen[0][0], list)


def test_forward_pre_hook_tuple_return_replaces_all_args(nn):
    m = make_scale(nn)
    m.register_forward_pre_hook(
        lambda mod, args: (args[0], torch.tensor(1.0)))
    assert torch.equal(m(torch.ones(2)), torch.tensor([3.0, 4.0]))


def test_forward_pre_hooks_run_in_registration_order(nn):
    m, seen = make_scale(nn), []
    for name in "abc":
        m.register_forward_pre_hook(lambda *a, n=name: seen.append(n))
    m(torch.ones(2))
    assert seen == ["a", "b", "c"]


def test_forward_pre_hooks_chain_their_replacements(nn):
    m = make_scale(nn)
    m.register_forward_pre_hook(lambda mod, args: args[0] + 1)
    m.register_forward_pre_hook(lambda mod, args: args[0] * 10)
    assert torch.equal(m(torch.ones(2)), torch.tensor([40.0, 60.0]))


def test_prepend_puts_a_forward_pre_hook_first_in_its_dict(nn):
    m, first, second = make_scale(nn), (lambda *a: None), (lambda *a: None)
    m.register_forward_pre_hook(first)
    m.register_forward_pre_hook(second, prepend=True)
    assert list(m._forward_pre_hooks.values()) == [second, first]


def test_prepend_puts_a_forward_pre_hook_first(nn):
    m, seen = make_scale(nn), []
    m.register_forward_pre_hook(lambda *a: seen.append("a"))
    m.register_forward_pre_hook(lambda *a: seen.append("b"), prepend=True)
    m.register_forward_pre_hook(lambda *a: seen.append("c"), prepend=True)
    m(torch.ones(2))
    assert seen == ["c", "b", "a"]


def test_with_kwargs_pre_hook_receives_kwargs(nn):
    m, seen = make_scale(nn), []
    m.register_forward_pre_hook(
        lambda mod, args, kwargs: seen.append(dict(kwargs)),
        with_kwargs=True)
    m(torch.ones(2), bias=5.0)
    assert seen == [{"bias": 5.0}]


def test_with_kwargs_pre_hook_replaces_args_and_kwargs(nn):
    m = make_scale(nn)
    m.register_forward_pre_hook(
        lambda mod, args, kwargs: ((args[0] * 0,), {"bias": 7.0}),
        with_kwargs=True)
    assert torch.equal(m(torch.ones(2), bias=1.0), torch.tensor([7.0, 7.0]))


def test_with_kwargs_pre_hook_bad_return_raises(nn):
    m = make_scale(nn)
    m.register_forward_pre_hook(lambda *a: "oops", with_kwargs=True)
    with pytest.raises(RuntimeError) as info:
        m(torch.ones(2))
    assert str(info.value) == (
        "forward pre-hook must return None or a tuple of (new_args, "
        "new_kwargs), but got oops.")


def test_with_kwargs_pre_hook_tuple_of_three_raises(nn):
    m = make_scale(nn)
    m.register_forward_pre_hook(lambda *a: (1, 2, 3), with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"but got \(1, 2, 3\)\.$"):
        m(torch.ones(2))


# --------------------------------------------------------- forward hooks


def test_forward_hook_sees_args_and_output(nn):
    m, seen = make_scale(nn), []
    m.register_forward_hook(lambda mod, args, out: seen.append((args, out)))
    x = torch.ones(2)
    y = m(x, bias=1.0)
    (args, out), = seen
    assert args == (x,) and out is y


def test_forward_hook_return_replaces_output(nn):
    m = make_scale(nn)
    m.register_forward_hook(lambda mod, args, out: "replaced")
    m.register_forward_hook(lambda mod, args, out: None)
    assert m(torch.ones(2)) == "replaced"


def test_forward_hook_sees_args_replaced_by_pre_hook(nn):
    m, seen = make_scale(nn), []
    m.register_forward_pre_hook(lambda mod, args: torch.zeros(2))
    m.register_forward_hook(lambda mod, args, out: seen.append(args))
    m(torch.ones(2))
    assert torch.equal(seen[0][0], torch.zeros(2))


def test_forward_hooks_chain_their_replacements(nn):
    m, seen = make_scale(nn), []
    m.register_forward_hook(lambda mod, args, out: out + 1)
    m.register_forward_hook(lambda mod, args, out: seen.append(out))
    y = m(torch.ones(2))
    assert torch.equal(seen[0], torch.tensor([3.0, 4.0]))
    assert torch.equal(y, torch.tensor([3.0, 4.0]))


def test_with_kwargs_forward_hook_receives_kwargs(nn):
    m, seen = make_scale(nn), []
    m.register_forward_hook(
        lambda mod, args, kwargs, out: seen.append((len(args), kwargs)),
        with_kwargs=True)
    m(torch.ones(2), bias=2.0)
    assert seen == [(1, {"bias": 2.0})]


def test_prepend_puts_a_forward_hook_first(nn):
    m, seen = make_scale(nn), []
    m.register_forward_hook(lambda *a: seen.append("a"))
    m.register_forward_hook(lambda *a: seen.append("b"), prepend=True)
    m(torch.ones(2))
    assert seen == ["b", "a"]


def test_always_call_hook_runs_when_forward_raises(nn):
    m, seen = make_scale(nn), []
    m.register_forward_hook(lambda *a: seen.append("plain"))
    m.register_forward_hook(lambda mod, args, out: seen.append(out),
                            always_call=True)
    with pytest.raises(RuntimeError, match="size of tensor a"):
        m(torch.ones(3))
    assert seen == [None]


def test_always_call_hook_runs_when_a_pre_hook_raises(nn):
    m, seen = make_scale(nn), []

    def boom(module, args):
        raise ValueError("pre-hook failed")

    m.register_forward_pre_hook(boom)
    m.register_forward_hook(lambda *a: seen.append("always"),
                            always_call=True)
    with pytest.raises(ValueError, match="pre-hook failed"):
        m(torch.ones(2))
    assert seen == ["always"]


def test_always_call_hook_runs_once_when_a_later_hook_raises(nn):
    m, seen = make_scale(nn), []

    def boom(module, args, out):
        raise KeyError("late")

    m.register_forward_hook(lambda *a: seen.append("always"),
                            always_call=True)
    m.register_forward_hook(boom)
    with pytest.raises(KeyError):
        m(torch.ones(2))
    assert seen == ["always"]


def test_always_call_hook_sees_replacements_made_before_the_error(nn):
    m, seen = make_scale(nn), []

    def boom(module, args, out):
        raise KeyError("late")

    m.register_forward_pre_hook(lambda mod, args: torch.zeros(2))
    m.register_forward_hook(lambda mod, args, out: "first")
    m.register_forward_hook(boom)
    m.register_forward_hook(lambda mod, args, out: seen.append((args, out)),
                            always_call=True)
    with pytest.raises(KeyError):
        m(torch.ones(2))
    (args, out), = seen
    assert torch.equal(args[0], torch.zeros(2)) and out == "first"


def test_always_call_hooks_after_an_error_chain_their_replacements(nn):
    m, seen = make_scale(nn), []
    m.register_forward_hook(lambda *a: "first", always_call=True)
    m.register_forward_hook(lambda mod, args, out: seen.append(out),
                            always_call=True)
    with pytest.raises(RuntimeError, match="size of tensor a"):
        m(torch.ones(3))
    assert seen == ["first"]


def test_with_kwargs_always_call_hook_gets_kwargs_after_error(nn):
    m, seen = make_scale(nn), []
    m.register_forward_hook(
        lambda mod, args, kwargs, out: seen.append(kwargs),
        with_kwargs=True, always_call=True)
    with pytest.raises(RuntimeError):
        m(torch.ones(3), bias=1.0)
    assert seen == [{"bias": 1.0}]


def test_failing_always_call_hook_becomes_a_warning(nn):
    m = make_scale(nn)

    def bad(module, args, out):
        raise ValueError("hook broke")

    m.register_forward_hook(bad, always_call=True)
    with pytest.warns(UserWarning) as record:
        with pytest.raises(RuntimeError, match="size of tensor a"):
            m(torch.ones(3))
    assert str(record[0].message) == (
        "module forward hook with ``always_call=True`` raised an exception "
        "that was silenced as another error was raised in forward: "
        "hook broke")


def test_forward_raises_without_always_call_hooks_running_others(nn):
    m, seen = make_scale(nn), []
    m.register_forward_pre_hook(lambda *a: seen.append("pre"))
    m.register_forward_hook(lambda *a: seen.append("post"))
    with pytest.raises(RuntimeError):
        m(torch.ones(3))
    assert seen == ["pre"]


# ---------------------------------------------------------- global hooks


@contextlib.contextmanager
def stored_global_hook(nn, hook, store, *flags):
    """`hook` put straight into the backend's global `store` (and marked in
    each of `flags`, as register_module_forward_hook marks it) for the block:
    what `_call_impl` reads, before the registering functions are written."""
    where = hooks_module(nn)
    getattr(where, store)["test"] = hook
    for flag in flags:
        getattr(where, flag)["test"] = True
    try:
        yield
    finally:
        for name in (store, *flags):
            del getattr(where, name)["test"]


def test_a_stored_global_pre_hook_runs_before_the_modules_own(nn):
    m, seen = make_scale(nn), []
    m.register_forward_pre_hook(lambda *a: seen.append("module"),
                                prepend=True)
    with stored_global_hook(nn, lambda *a: seen.append("global"),
                            "_global_forward_pre_hooks"):
        m(torch.ones(2))
    assert seen == ["global", "module"]


def test_a_stored_global_hook_flagged_with_kwargs_receives_them(nn):
    m, seen = make_scale(nn), []
    with stored_global_hook(
            nn, lambda mod, args, kwargs, out: seen.append(kwargs),
            "_global_forward_hooks", "_global_forward_hooks_with_kwargs"):
        m(torch.ones(2), bias=3.0)
    assert seen == [{"bias": 3.0}]


def test_global_pre_hook_runs_before_a_prepended_module_hook(nn):
    m, seen = make_scale(nn), []
    m.register_forward_pre_hook(lambda *a: seen.append("module"),
                                prepend=True)
    with nn.register_module_forward_pre_hook(lambda *a: seen.append("global")):
        m(torch.ones(2))
    assert seen == ["global", "module"]


def test_global_forward_hook_runs_before_a_prepended_module_hook(nn):
    m, seen = make_scale(nn), []
    m.register_forward_hook(lambda *a: seen.append("module"), prepend=True)
    with nn.register_module_forward_hook(lambda *a: seen.append("global")):
        m(torch.ones(2))
    assert seen == ["global", "module"]


def test_global_forward_hook_fires_for_every_module_inner_first(nn):
    model, seen = make_nested(nn), []
    where = name_of(model)
    with nn.register_module_forward_hook(
            lambda mod, args, out: seen.append(where[id(mod)])):
        model(torch.ones(2))
    model(torch.ones(2))
    assert seen == ["a", "inner", "root"]


def test_global_forward_pre_hook_replaces_input(nn):
    m = make_scale(nn)
    with nn.register_module_forward_pre_hook(lambda mod, args: args[0] * 2):
        y = m(torch.ones(2))
    assert torch.equal(y, torch.tensor([4.0, 6.0]))


def test_global_forward_hook_with_kwargs_receives_kwargs(nn):
    m, seen = make_scale(nn), []
    with nn.register_module_forward_hook(
            lambda mod, args, kwargs, out: seen.append(kwargs), with_kwargs=True):
        m(torch.ones(2), bias=3.0)
    assert seen == [{"bias": 3.0}]


def test_global_always_call_hook_gets_no_kwargs_after_error(nn):
    m, seen = make_scale(nn), []
    with nn.register_module_forward_hook(
            lambda *a: seen.append(len(a)), with_kwargs=True, always_call=True):
        m(torch.ones(2), bias=1.0)
        with pytest.raises(RuntimeError):
            m(torch.ones(3), bias=1.0)
    assert seen == [4, 3]  # torch's quirk: kwargs are dropped on error


def test_global_always_call_hook_runs_before_module_ones_after_error(nn):
    m, seen = make_scale(nn), []
    m.register_forward_hook(lambda *a: seen.append("module"),
                            always_call=True)
    with nn.register_module_forward_hook(
            lambda *a: seen.append("global"), always_call=True):
        with pytest.raises(RuntimeError):
            m(torch.ones(3))
    assert seen == ["global", "module"]


def test_global_forward_hook_handle_leaves_its_with_kwargs_flag(nn):
    # torch gives the handle the always_call dict but not the with_kwargs
    # one; the stale flag is harmless, since ids never repeat.
    where = hooks_module(nn)
    handle = nn.register_module_forward_hook(
        lambda *a: None, with_kwargs=True, always_call=True)
    handle.remove()
    assert handle.id not in where._global_forward_hooks
    assert handle.id in where._global_forward_hooks_with_kwargs
    assert handle.id not in where._global_forward_hooks_always_called
    where._global_forward_hooks_with_kwargs.pop(handle.id)


def test_global_hook_handle_removes_it_from_every_module(nn):
    m, seen = make_scale(nn), []
    with nn.register_module_forward_pre_hook(lambda *a: seen.append(1)):
        m(torch.ones(2))
    m(torch.ones(2))
    assert seen == [1]


# -------------------------------------------------------- backward hooks


def test_full_backward_hook_gets_grad_input_and_grad_output(nn):
    m, seen = make_two_step(nn), []
    m.register_full_backward_hook(
        lambda mod, gin, gout: seen.append((mod, gin, gout)))
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = m(x)
    y.backward(torch.tensor([1.0, 10.0]))
    (mod, gin, gout), = seen
    assert mod is m
    assert torch.equal(gout[0], torch.tensor([1.0, 10.0]))
    assert torch.equal(gin[0], x.grad)  # the gradient w.r.t. the input


def test_backward_pre_hook_runs_before_backward_hook(nn):
    m, seen = make_two_step(nn), []
    m.register_full_backward_hook(lambda *a: seen.append("hook"))
    m.register_full_backward_pre_hook(lambda *a: seen.append("pre"))
    m(torch.ones(2, requires_grad=True)).sum().backward()
    assert seen == ["pre", "hook"]


def test_backward_hook_grad_input_is_none_for_non_tensor_args(nn):
    m, seen = make_two_step(nn), []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(gin))
    x = torch.ones(2, requires_grad=True)
    m(x, None, 3.0).sum().backward()
    assert shapes(seen[0]) == ((2,), None, None)


def test_backward_hook_grad_input_has_every_tensor_arg(nn):
    m, seen = make_two_step(nn), []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(gin))
    x = torch.ones(2, requires_grad=True)
    m(x, torch.ones(2)).sum().backward()  # even one that needs no grad
    assert shapes(seen[0]) == ((2,), (2,))


def test_backward_hook_grad_input_is_zeros_for_a_tensor_needing_no_grad(nn):
    # a tensor argument that needs no gradient gets zeros, not None
    m, seen = make_two_step(nn), []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(gin))
    x = torch.ones(2, requires_grad=True)
    m(x, torch.full((2,), 3.0)).sum().backward()
    assert torch.equal(seen[0][1], torch.zeros(2))


def test_backward_hook_replacement_reaches_the_input(nn):
    m = make_two_step(nn)
    m.register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 0 + 7,))
    x = torch.ones(2, requires_grad=True)
    m(x).sum().backward()
    assert torch.equal(x.grad, torch.tensor([7.0, 7.0]))


def test_backward_hook_does_not_change_parameter_grads(nn):
    m = make_two_step(nn)
    x = torch.ones(2, requires_grad=True)
    m(x).sum().backward()
    expected = m.w.grad.clone()
    m.w.grad = None
    m.register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 0,))
    m(x).sum().backward()
    assert torch.equal(m.w.grad, expected)


def test_backward_pre_hook_replacement_reaches_the_parameters(nn):
    m = make_two_step(nn)
    m.register_full_backward_pre_hook(lambda mod, gout: (gout[0] * 2,))
    x = torch.ones(2, requires_grad=True)
    m(x).sum().backward()
    w = m.w.detach()
    assert torch.allclose(m.w.grad, 2 * torch.cos(x.detach() * w))


def test_backward_hooks_chain_their_replacements(nn):
    m, seen = make_two_step(nn), []
    m.register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 0 + 1,))
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(gin))
    m(torch.ones(2, requires_grad=True)).sum().backward()
    assert torch.equal(seen[0][0], torch.ones(2))


def test_backward_hook_returning_wrong_length_raises(nn):
    m = make_two_step(nn)
    m.register_full_backward_hook(lambda mod, gin, gout: (None, None))
    y = m(torch.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == (
        "Backward hook returned an invalid number of grad_input, "
        "got 2, but expected 1")


def test_backward_pre_hook_returning_wrong_length_raises(nn):
    m = make_two_step(nn)
    m.register_full_backward_pre_hook(lambda mod, gout: ())
    y = m(torch.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == (
        "Backward pre hook returned an invalid number of grad_output, "
        "got 0, but expected 1")


def test_backward_hook_fires_on_outputs_when_no_input_needs_grad(nn):
    m, seen = make_two_step(nn), []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(gin))
    y = m(torch.ones(2))
    with pytest.warns(UserWarning, match="^Full backward hook is firing "
                      "when gradients are computed with respect to module "
                      "outputs since no inputs require gradients"):
        y.sum().backward()
    assert seen == [(None,)]


def test_backward_hook_without_input_grads_must_return_none(nn):
    m = make_two_step(nn)
    m.register_full_backward_hook(lambda mod, gin, gout: (torch.ones(2),))
    y = m(torch.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    assert str(info.value) == (
        "Backward hook for Modules where no input requires gradient should "
        "always return None or None for all gradients.")


def test_backward_hooks_do_not_fire_under_no_grad(nn):
    m, seen = make_two_step(nn), []
    m.register_full_backward_pre_hook(lambda *a: seen.append("pre"))
    with torch.no_grad():
        y = m(torch.ones(2, requires_grad=True))
    assert y.grad_fn is None and seen == []


def test_backward_hook_makes_the_output_a_view_of_a_hook_node(nn):
    m = make_two_step(nn)
    m.register_full_backward_hook(lambda *a: None)
    y = m(torch.ones(2, requires_grad=True))
    assert y._is_view()
    assert y.grad_fn.name() == "BackwardHookFunctionBackward"


def test_backward_hook_with_non_tensor_output_warns(nn):
    class DictOut(nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    m = DictOut()
    m.register_full_backward_hook(lambda *a: None)
    with pytest.warns(UserWarning) as record:
        m(torch.ones(2, requires_grad=True))
    assert str(record[0].message) == (
        "For backward hooks to be called, module output should be a Tensor "
        "or a tuple of Tensors but received <class 'dict'>")


def test_grad_output_is_none_for_non_tensor_outputs(nn):
    class Pair(nn.Module):
        def forward(self, x):
            return x * 2, "label", x * 3

    m, seen = Pair(), []
    m.register_full_backward_pre_hook(lambda mod, gout: seen.append(gout))
    y, _, z = m(torch.ones(2, requires_grad=True))
    (y + z).sum().backward()
    assert shapes(seen[0]) == ((2,), None, (2,))


def test_backward_hook_order_is_global_then_module_with_prepend(nn):
    m, seen = make_two_step(nn), []
    m.register_full_backward_hook(lambda *a: seen.append("a"))
    m.register_full_backward_hook(lambda *a: seen.append("b"), prepend=True)
    m.register_full_backward_pre_hook(lambda *a: seen.append("pa"))
    m.register_full_backward_pre_hook(lambda *a: seen.append("pb"),
                                      prepend=True)
    with (nn.register_module_full_backward_hook(lambda *a: seen.append("g")),
          nn.register_module_full_backward_pre_hook(
              lambda *a: seen.append("pg"))):
        m(torch.ones(2, requires_grad=True)).sum().backward()
    assert seen == ["pg", "pb", "pa", "g", "b", "a"]


def test_global_backward_hooks_fire_outer_module_first(nn):
    model, seen = make_nested(nn), []
    where = name_of(model)
    with (nn.register_module_full_backward_pre_hook(
              lambda mod, gout: seen.append(("pre", where[id(mod)]))),
          nn.register_module_full_backward_hook(
              lambda mod, gin, gout: seen.append(("hook", where[id(mod)])))):
        model(torch.ones(2, requires_grad=True)).sum().backward()
    assert seen == [("pre", "root"), ("pre", "inner"), ("hook", "inner"),
                    ("pre", "a"), ("hook", "a"), ("hook", "root")]


def test_backward_hook_registered_after_forward_does_not_fire(nn):
    m, seen = make_two_step(nn), []
    y = m(torch.ones(2, requires_grad=True))
    m.register_full_backward_hook(lambda *a: seen.append(1))
    y.sum().backward()
    assert seen == []


def test_register_full_backward_hook_sets_the_full_flag(nn):
    m = make_two_step(nn)
    assert m._is_full_backward_hook is None
    m.register_full_backward_hook(lambda *a: None)
    assert m._is_full_backward_hook is True


def test_backward_hook_keeps_a_namedtuple_output_type(nn):
    from collections import namedtuple

    Pair = namedtuple("Pair", "double triple")

    class Twice(nn.Module):
        def forward(self, x):
            return Pair(x * 2, x * 3)

    m = Twice()
    m.register_full_backward_hook(lambda *a: None)
    out = m(torch.ones(2, requires_grad=True))
    assert type(out) is Pair
    assert out.double.grad_fn.name() == "BackwardHookFunctionBackward"


def test_grad_input_covers_positional_args_only(nn):
    m, seen = make_two_step(nn), []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(gin))
    x = torch.ones(2, requires_grad=True)
    m(x, y=torch.ones(2, requires_grad=True)).sum().backward()
    assert shapes(seen[0]) == ((2,),)


class CountCalls:
    """A forward hook that pickle can save (a lambda it cannot)."""

    def __call__(self, module, args, output):
        module.calls += 1


def layer_holding_its_handle(nn):
    """A Linear that keeps the handle of its own always_call hook."""
    layer = nn.Linear(2, 2)
    layer.calls = 0
    layer.handle = layer.register_forward_hook(CountCalls(), always_call=True)
    return layer


def pickled(obj):
    import pickle

    return pickle.loads(pickle.dumps(obj))


@pytest.mark.parametrize("make_copy", [copy.deepcopy, pickled],
                         ids=["deepcopy", "pickle"])
def test_copied_module_handle_removes_the_copys_hook_only(nn, make_copy):
    layer = layer_holding_its_handle(nn)
    twin = make_copy(layer)
    twin.handle.remove()
    layer(torch.ones(2))
    twin(torch.ones(2))
    assert (layer.calls, twin.calls) == (1, 0)
    assert layer.handle.id in layer._forward_hooks_always_called
    assert twin.handle.id not in twin._forward_hooks_always_called


@pytest.mark.parametrize("make_copy", [copy.deepcopy, pickled],
                         ids=["deepcopy", "pickle"])
def test_original_handle_removes_the_originals_hook_only(nn, make_copy):
    layer = layer_holding_its_handle(nn)
    twin = make_copy(layer)
    layer.handle.remove()
    layer(torch.ones(2))
    twin(torch.ones(2))
    assert (layer.calls, twin.calls) == (0, 1)


def test_bare_handle_survives_a_pickle_round_trip(nn):
    m = make_scale(nn)
    handle = m.register_forward_hook(print)
    copied = pickled(handle)
    assert copied.id == handle.id
    copied.remove()  # its copied dicts died with the pickle: nothing to do
    assert handle.id in m._forward_hooks


def test_backward_hook_classes_live_where_each_backend_keeps_them():
    # Deliberate difference: mininn exports both from its package; torch
    # keeps them in torch.nn.modules._functions and torch.utils.hooks.
    import torch.nn.modules._functions
    import torch.utils.hooks

    import mininn

    assert torch.nn.modules._functions.BackwardHookFunction.__name__ == (
        mininn.BackwardHookFunction.__name__)
    assert torch.utils.hooks.BackwardHook.__name__ == (
        mininn.BackwardHook.__name__)
    assert not hasattr(torch.nn, "BackwardHookFunction")


def test_call_impl_has_no_tracing_or_compile_branch():
    # Deliberate difference: torch's _call_impl also serves TorchScript
    # tracing and torch.compile; mininn's has no branch for either.
    import inspect

    import mininn

    theirs = inspect.getsource(torch.nn.Module._call_impl)
    ours = inspect.getsource(mininn.Module._call_impl)
    for name in ("_slow_forward", "is_compiling"):
        assert name in theirs and name not in ours


# ------------------------------- BackwardHook alone, as _call_impl uses it
# torch.utils.hooks.BackwardHook wraps a hooked call's inputs and outputs in
# identity nodes that fire the full backward (pre-)hooks. The chapter
# writes it before _call_impl, so these tests drive it as _call_impl does.

def through_backward_hook(nn, fn, args, hooks=(), pre_hooks=()):
    """fn(*args), its inputs and output wrapped by a BackwardHook holding
    `hooks` and `pre_hooks`, as _call_impl wraps a hooked forward."""
    wrapper = nn.BackwardHook(nn.Module(), list(hooks), list(pre_hooks))
    return wrapper.setup_output_hook(fn(*wrapper.setup_input_hook(args)))


def test_backward_hook_object_passes_on_a_new_grad_input(nn):
    x = torch.ones(2, requires_grad=True)
    through_backward_hook(nn, lambda t: t * 3, (x,), hooks=[
        lambda mod, gin, gout: (gin[0] * 0 + 7,)]).sum().backward()
    assert torch.equal(x.grad, torch.tensor([7.0, 7.0]))


def test_backward_hook_object_passes_on_a_new_grad_output(nn):
    x = torch.ones(2, requires_grad=True)
    through_backward_hook(nn, lambda t: t * 3, (x,), pre_hooks=[
        lambda mod, gout: (gout[0] * 2,)]).sum().backward()
    assert torch.equal(x.grad, torch.tensor([6.0, 6.0]))


def test_backward_hook_object_gives_none_or_zeros_where_no_grad_flows(nn):
    seen, x = [], torch.ones(2, requires_grad=True)
    through_backward_hook(
        nn, lambda t, y, s: t * s + y, (x, torch.full((2,), 3.0), 2.0),
        hooks=[lambda mod, gin, gout: seen.append(gin)]).sum().backward()
    assert shapes(seen[0]) == ((2,), (2,), None)
    assert torch.equal(seen[0][1], torch.zeros(2))


def test_backward_hook_object_adds_no_node_under_no_grad(nn):
    seen, x = [], torch.ones(2, requires_grad=True)
    hook = lambda mod, gin, gout: seen.append("hook")  # noqa: E731
    with torch.no_grad():
        quiet = through_backward_hook(nn, lambda t: t * 3, (x,), [hook])
    through_backward_hook(nn, lambda t: t * 3, (x,), [hook]).sum().backward()
    assert quiet.grad_fn is None and seen == ["hook"]


# ------------------------------------------------------ old backward hooks

OLD_HOOK_WARNING = {
    "several nodes": (
        "Using a non-full backward hook when the forward contains multiple "
        "autograd Nodes is deprecated and will be removed in future versions."
        " This hook will be missing some grad_input. Please use "
        "register_full_backward_hook to get the documented behavior."),
    "different nodes": (
        "Using a non-full backward hook when outputs are generated by "
        "different autograd Nodes is deprecated and will be removed in "
        "future versions. This hook will be missing some grad_output. Please "
        "use register_full_backward_hook to get the documented behavior."),
    "output": (
        "Using non-full backward hooks on a Module that does not return a "
        "single Tensor or a tuple of Tensors is deprecated and will be "
        "removed in future versions. This hook will be missing some of the "
        "grad_output. Please use register_full_backward_hook to get the "
        "documented behavior."),
    "input": (
        "Using non-full backward hooks on a Module that does not take as "
        "input a single Tensor or a tuple of Tensors is deprecated and will "
        "be removed in future versions. This hook will be missing some of "
        "the grad_input. Please use register_full_backward_hook to get the "
        "documented behavior."),
}
MIXED = ("Cannot use both regular backward hooks and full backward hooks {}."
         " Please use only one of them.")


def make_wave(nn):
    """sin(x * w): two operations, so the old hook sees only the sin."""

    class Wave(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor([2.0, 2.0]))

        def forward(self, x):
            return torch.sin(x * self.w)

    return Wave()


def module_of(nn, forward):
    """A parameterless module whose forward is `forward(self, *args)`."""
    return type("Custom", (nn.Module,), {"forward": forward})()


def quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def old_hook_warnings(module, *args):
    module.register_backward_hook(lambda *a: None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module(*args)
    return [(w.category, str(w.message)) for w in caught]


def hooks_module(nn):
    """Where the backend keeps its global hook state."""
    if nn.name == "mininn":
        import mininn.hooks as where
    else:
        import torch.nn.modules.module as where
    return where


@pytest.fixture
def fresh_global_flag(nn):
    """The global backward-hook flag cleared for one test, then restored:
    it is never reset by torch, so earlier tests may have set it."""
    where = hooks_module(nn)
    saved = where._global_is_full_backward_hook
    where._global_is_full_backward_hook = None
    yield
    where._global_is_full_backward_hook = saved


def test_register_backward_hook_sets_the_full_flag_to_false(nn):
    m = make_wave(nn)
    m.register_backward_hook(lambda *a: None)
    assert m._is_full_backward_hook is False


def test_old_backward_hook_misses_the_operations_before_the_last(nn):
    m, seen = make_wave(nn), []
    m.register_backward_hook(lambda mod, gin, gout: seen.append(gin))
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    quietly(m, x).sum().backward()
    assert len(seen) == 1 and len(seen[0]) == 1
    assert torch.equal(seen[0][0] * m.w.detach(), x.grad)
    assert not torch.equal(seen[0][0], x.grad)


def test_old_backward_hook_on_a_conv_sees_input_weight_and_bias_grads(nn):
    torch.manual_seed(0)
    conv, seen = nn.Conv2d(2, 3, 3), []
    conv.register_backward_hook(lambda m, gin, gout: seen.append(shapes(gin)))
    x = torch.rand(1, 2, 5, 5, requires_grad=True)
    quietly(conv, x).sum().backward()
    assert seen == [((1, 2, 5, 5), (3, 2, 3, 3), (3,))]


def test_old_backward_hook_return_replaces_the_node_grad_input(nn):
    m = nn.Sigmoid()
    m.register_backward_hook(lambda mod, gin, gout: (gin[0] * 2,))
    x = torch.randn(5, requires_grad=True)
    quietly(m, x).sum().backward()
    s = torch.sigmoid(x.detach())
    assert torch.allclose(x.grad, s * (1 - s) * 2)


def test_old_backward_hook_returning_wrong_length_raises(nn):
    def too_few(module, grad_input, grad_output):
        return ()

    m = make_wave(nn)
    m.register_backward_hook(too_few)
    y = quietly(m, torch.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == ("hook 'too_few' has returned an incorrect "
                               "number of values (got 0, but expected 1)")


def test_old_backward_hook_of_a_deleted_module_raises(nn):
    m = make_wave(nn)
    m.register_backward_hook(lambda *a: None)
    y = quietly(m, torch.ones(2, requires_grad=True))
    del m
    gc.collect()
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == (
        "You are trying to call the hook of a dead Module!")


def test_old_backward_hook_warns_when_forward_has_several_nodes(nn):
    caught = old_hook_warnings(make_wave(nn), torch.ones(2, requires_grad=True))
    assert caught == [(FutureWarning, OLD_HOOK_WARNING["several nodes"])]


def test_old_backward_hook_is_silent_for_one_op_on_a_computed_input(nn):
    m = module_of(nn, lambda self, x: torch.sigmoid(x))
    x = torch.ones(2, requires_grad=True) + 1  # its node is the input's
    assert old_hook_warnings(m, x) == []


def test_old_backward_hook_warns_for_a_one_op_linear(nn):
    # torch's check also sees the parameters' nodes among the inputs of
    # the output's node, so one operation with parameters warns too.
    x = torch.ones(3, 4, requires_grad=True) * 1
    assert old_hook_warnings(nn.Linear(4, 2), x) == [
        (FutureWarning, OLD_HOOK_WARNING["several nodes"])]


def test_old_backward_hook_warns_for_one_op_on_a_leaf_input(nn):
    m = module_of(nn, lambda self, x: torch.sigmoid(x))
    assert old_hook_warnings(m, torch.ones(2, requires_grad=True)) == [
        (FutureWarning, OLD_HOOK_WARNING["several nodes"])]


def test_old_backward_hook_on_a_linear_sees_bias_input_weight_t(nn):
    torch.manual_seed(0)
    layer, seen = nn.Linear(4, 2), []
    layer.register_backward_hook(lambda m, gin, gout: seen.append(gin))
    x = torch.ones(3, 4, requires_grad=True)
    quietly(layer, x * 1).sum().backward()
    bias, inp, weight_t = seen[0]
    assert torch.equal(bias, layer.bias.grad)
    assert torch.equal(inp, x.grad)
    assert torch.equal(weight_t, layer.weight.grad.T)


def test_old_backward_hook_warns_for_outputs_of_different_nodes(nn):
    m = module_of(nn, lambda self, a, b: (a.clone(), b.clone()))
    a, b = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert old_hook_warnings(m, a, b) == [
        (FutureWarning, OLD_HOOK_WARNING["different nodes"])]


def test_old_backward_hook_warns_for_a_list_output(nn):
    m = module_of(nn, lambda self, a: [a.clone()])
    assert old_hook_warnings(m, torch.ones(2, requires_grad=True)) == [
        (FutureWarning, OLD_HOOK_WARNING["output"])]


def test_old_backward_hook_warns_for_a_list_input(nn):
    m = module_of(nn, lambda self, pair: pair[0].clone())
    x = torch.ones(2, requires_grad=True)
    assert old_hook_warnings(m, [x, x]) == [
        (FutureWarning, OLD_HOOK_WARNING["input"])]


def test_old_backward_hook_hooks_the_node_of_the_first_output(nn):
    m, seen = module_of(nn, lambda self, x: (x * 2, x * 3)), []
    m.register_backward_hook(lambda mod, gin, gout: seen.append(gout))
    first, second = quietly(m, torch.ones(2, requires_grad=True))
    second.sum().backward(retain_graph=True)
    assert seen == []  # the second output's node carries no hook
    first.sum().backward()
    assert len(seen) == 1 and torch.equal(seen[0][0], torch.ones(2))


def test_old_backward_hook_does_not_fire_without_a_graph(nn):
    m, seen = make_wave(nn), []
    m.register_backward_hook(lambda *a: seen.append(1))
    with torch.no_grad():
        y = m(torch.ones(2, requires_grad=True))
    assert y.grad_fn is None and seen == []


def test_old_backward_hook_with_a_pre_hook_sees_the_identity_node(nn):
    m, seen = make_wave(nn), []
    m.register_full_backward_pre_hook(lambda mod, gout: (gout[0] * 3,))
    m.register_backward_hook(lambda mod, gin, gout: seen.append((gin, gout)))
    quietly(m, torch.ones(2, requires_grad=True)).sum().backward()
    (gin, gout), = seen
    assert torch.equal(gout[0], torch.ones(2))  # before the pre-hook ran
    assert torch.equal(gin[0], torch.full((2,), 3.0))


def test_wrapped_old_hook_holds_its_module_weakly(nn):
    # the wrapper register_backward_hook puts on a graph node: the graph
    # must not keep a deleted module alive
    m, seen = make_wave(nn), []
    wrapped = hooks_module(nn)._WrappedHook(
        lambda module, *args: seen.append(args), m)
    wrapped(1)
    del m
    gc.collect()
    with pytest.raises(RuntimeError,
                       match="^You are trying to call the hook of a dead"):
        wrapped(2)
    assert seen == [(1,)]


def test_full_hook_is_refused_where_the_full_flag_is_false(nn):
    m = make_wave(nn)
    m._is_full_backward_hook = False  # as an old-style hook leaves it
    with pytest.raises(RuntimeError) as info:
        m.register_full_backward_hook(lambda *a: None)
    assert str(info.value) == MIXED.format("on a single Module")


def test_full_hook_after_an_old_one_on_one_module_raises(nn):
    m = make_wave(nn)
    m.register_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError) as info:
        m.register_full_backward_hook(lambda *a: None)
    assert str(info.value) == MIXED.format("on a single Module")


def test_old_hook_after_a_full_one_on_one_module_raises(nn):
    m = make_wave(nn)
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError) as info:
        m.register_backward_hook(lambda *a: None)
    assert str(info.value) == MIXED.format("on a single Module")


def test_old_and_full_hooks_on_different_modules_both_fire(nn):
    model, seen = make_nested(nn), []
    model.a.register_backward_hook(lambda *a: seen.append("old a"))
    model.inner.register_full_backward_hook(lambda *a: seen.append("full"))
    x = torch.ones(2, requires_grad=True)
    quietly(model, x).sum().backward()
    assert seen == ["full", "old a"]


def test_global_old_backward_hook_fires_for_every_module(
        nn, fresh_global_flag):
    model, seen = make_nested(nn), []
    where = name_of(model)
    with nn.register_module_backward_hook(
            lambda mod, gin, gout: seen.append(where[id(mod)])):
        quietly(model, torch.ones(2, requires_grad=True)).sum().backward()
    assert sorted(seen) == ["a", "inner", "root"]


def test_global_old_hook_runs_before_the_module_old_hook(
        nn, fresh_global_flag):
    m, seen = make_wave(nn), []
    m.register_backward_hook(lambda *a: seen.append("module"))
    with nn.register_module_backward_hook(lambda *a: seen.append("global")):
        quietly(m, torch.ones(2, requires_grad=True)).sum().backward()
    assert seen == ["global", "module"]


def test_global_full_hook_after_a_removed_old_one_still_raises(
        nn, fresh_global_flag):
    nn.register_module_backward_hook(lambda *a: None).remove()
    with pytest.raises(RuntimeError) as info:
        nn.register_module_full_backward_hook(lambda *a: None)
    assert str(info.value) == MIXED.format("as a global Module hook")


def test_global_old_hook_after_a_full_one_raises(nn, fresh_global_flag):
    nn.register_module_full_backward_hook(lambda *a: None).remove()
    with pytest.raises(RuntimeError) as info:
        nn.register_module_backward_hook(lambda *a: None)
    assert str(info.value) == MIXED.format("as a global Module hook")


# ------------------------------------- views, and Tensor hooks inside hooks


def test_inplace_op_on_the_output_of_a_hooked_module_raises(nn):
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU(inplace=True))
    seq[0].register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError) as info:
        seq(torch.ones(1, 2, requires_grad=True))
    assert str(info.value).startswith(
        "Output 0 of BackwardHookFunction is a view and is being modified "
        "inplace. This view was created inside a custom Function")


def test_full_backward_hook_on_an_inplace_module_itself_raises(nn):
    relu = nn.ReLU(inplace=True)
    relu.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError) as info:
        relu(torch.ones(2, 3, requires_grad=True) * 1)
    assert str(info.value).startswith(
        "Output 0 of BackwardHookFunction is a view and is being modified "
        "inplace.")


def test_inplace_module_with_a_hook_runs_when_no_input_needs_grad(nn):
    relu, seen = nn.ReLU(inplace=True), []
    relu.register_full_backward_hook(lambda *a: seen.append(1))
    out = relu(torch.full((2,), -1.0))
    assert torch.equal(out, torch.zeros(2)) and seen == []


def test_tensor_hook_in_a_forward_hook_sees_the_output_gradient(nn):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    kept = {}

    def keep(module, args, output):
        output.register_hook(lambda grad: kept.update(tensor=grad))

    model[1].register_forward_hook(keep)
    model[1].register_full_backward_hook(
        lambda m, gin, gout: kept.update(module=gout[0]))
    model(torch.ones(2, 3, requires_grad=True)).sum().backward()
    assert torch.equal(kept["tensor"], kept["module"])
    assert kept["tensor"].shape == (2, 4)
