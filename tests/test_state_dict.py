"""Chapter 7, state_dict and load_state_dict: each test body runs on
torch.nn and on mininn (the `nn` fixture); messages pinned here are
torch's, checked by the torch.nn run of the same test."""
import io
import warnings
from collections import OrderedDict

import pytest
import torch
from torch.nn import Parameter

from helpers import error_of
from support import make_mlp, swapping, with_grads


def make_state_net(nn):
    """A two-level tree with a None parameter, a non-persistent buffer and
    an integer buffer: everything state_dict must sort out."""

    class Leaf(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = Parameter(torch.randn(3, 2))
            self.bias = Parameter(torch.randn(3))
            self.register_parameter("unused", None)
            self.register_buffer("running", torch.randn(3))
            self.register_buffer("scratch", torch.ones(3), persistent=False)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Leaf()
            self.scale = Parameter(torch.ones(()))
            self.register_buffer("steps", torch.tensor(7))
            self.b = Leaf()

    torch.manual_seed(0)
    return Net()


def fresh(nn, seed=1):
    torch.manual_seed(seed)
    net = make_state_net(nn)
    with torch.no_grad():
        for t in net.state_dict(keep_vars=True).values():
            t.copy_(torch.randn(t.shape) * 10)
    return net


class Counter:
    """Mixin: a module with extra (non-tensor) state."""

    def get_extra_state(self):
        return {"calls": self.calls}

    def set_extra_state(self, state):
        self.calls = state["calls"]


def counted(nn, calls=3):
    class Counted(Counter, nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = calls
            self.weight = Parameter(torch.zeros(2))

    return Counted()


NET_KEYS = ["scale", "steps", "a.weight", "a.bias", "a.running",
            "b.weight", "b.bias", "b.running"]


# -- saving -----------------------------------------------------------------

def test_state_dict_orders_parameters_then_buffers_then_children(nn):
    assert list(make_state_net(nn).state_dict()) == NET_KEYS


def test_state_dict_leaves_out_none_and_non_persistent_buffers(nn):
    keys = make_state_net(nn).state_dict()
    assert "a.unused" not in keys and "a.scratch" not in keys


def test_state_dict_is_an_ordered_dict_with_metadata(nn):
    sd = make_state_net(nn).state_dict()
    assert type(sd) is OrderedDict
    assert sd._metadata == OrderedDict(
        [("", {"version": 1}), ("a", {"version": 1}), ("b", {"version": 1})])


def test_metadata_records_a_class_version(nn):
    class Versioned(nn.Module):
        _version = 5

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Versioned()

    assert Holder().state_dict()._metadata["inner"] == {"version": 5}


def test_state_dict_tensors_are_detached_but_share_memory(nn):
    net = make_state_net(nn)
    sd = net.state_dict()
    assert not sd["a.weight"].requires_grad
    assert type(sd["a.weight"]) is torch.Tensor
    assert sd["a.weight"].data_ptr() == net.a.weight.data_ptr()


def test_keep_vars_returns_the_parameters_themselves(nn):
    net = make_state_net(nn)
    sd = net.state_dict(keep_vars=True)
    assert sd["a.weight"] is net.a.weight and sd["steps"] is net.steps


def test_state_dict_prefix_and_destination(nn):
    net = make_state_net(nn)
    dest = OrderedDict(other=1)
    out = net.a.state_dict(destination=dest, prefix="enc.")
    assert out is dest
    assert list(out) == ["other", "enc.weight", "enc.bias", "enc.running"]
    assert not hasattr(out, "_metadata")


def test_state_dict_of_a_shared_child_repeats_its_keys(nn):
    net = make_state_net(nn)
    net.b = net.a
    sd = net.state_dict()
    assert list(sd) == NET_KEYS
    assert sd["b.weight"].data_ptr() == sd["a.weight"].data_ptr()


def test_extra_state_is_saved_after_the_tensors(nn):
    sd = counted(nn).state_dict()
    assert list(sd) == ["weight", "_extra_state"]
    assert sd["_extra_state"] == {"calls": 3}


@pytest.mark.loads_state_dict
def test_extra_state_is_given_back_to_set_extra_state(nn):
    target = counted(nn, calls=0)
    target.load_state_dict(counted(nn, calls=9).state_dict())
    assert target.calls == 9


@pytest.mark.loads_state_dict
def test_missing_extra_state_is_a_missing_key(nn):
    result = counted(nn).load_state_dict({"weight": torch.ones(2)},
                                         strict=False)
    assert result.missing_keys == ["_extra_state"]


@pytest.mark.loads_state_dict
def test_extra_state_for_a_class_without_it_is_unexpected(nn):
    result = nn.Module().load_state_dict({"_extra_state": 1}, strict=False)
    assert result.unexpected_keys == ["_extra_state"]


def test_state_dict_pre_hook_sees_prefix_and_keep_vars(nn):
    net, seen = make_state_net(nn), []
    net.b.register_state_dict_pre_hook(
        lambda m, prefix, keep_vars: seen.append((prefix, keep_vars)))
    net.state_dict(keep_vars=True)
    assert seen == [("b.", True)]


def test_state_dict_post_hook_edits_in_place(nn):
    net = make_state_net(nn)

    def drop_running(module, sd, prefix, local_metadata):
        del sd[prefix + "running"]

    net.a.register_state_dict_post_hook(drop_running)
    assert "a.running" not in net.state_dict()


def test_state_dict_post_hook_must_return_none(nn):
    net = make_state_net(nn)
    net.register_state_dict_post_hook(lambda m, sd, p, meta: {})
    assert error_of(net.state_dict) == (
        "RuntimeError: state_dict post-hook must return None")


def test_a_post_hook_is_public_by_the_flag_on_its_function(nn):
    # put straight into the store: the flag that register_state_dict_post_hook
    # sets, not the registration, makes state_dict refuse a returned dict
    def hook(m, sd, p, meta):
        return {}

    hook._from_public_api = True
    net = make_state_net(nn)
    net._state_dict_hooks[0] = hook
    assert error_of(net.state_dict) == (
        "RuntimeError: state_dict post-hook must return None")


def test_private_state_dict_hook_may_replace_the_root_result(nn):
    net = make_state_net(nn)
    net._register_state_dict_hook(lambda m, sd, p, meta: {"only": 1})
    assert net.state_dict() == {"only": 1}


def test_public_hook_cannot_be_registered_privately(nn):
    def hook(m, sd, p, meta):
        pass

    net = make_state_net(nn)
    net.register_state_dict_post_hook(hook)
    assert error_of(net._register_state_dict_hook, hook) == (
        "RuntimeError: Cannot register the same function as the state dict "
        "post hook that was previously registered via "
        "register_state_dict_post_hook")


def test_removed_state_dict_hook_no_longer_runs(nn):
    net, seen = make_state_net(nn), []
    handle = net.register_state_dict_pre_hook(lambda *a: seen.append(1))
    handle.remove()
    net.state_dict()
    assert seen == []


def test_get_extra_state_of_a_plain_module_raises(nn):
    assert error_of(nn.Module().get_extra_state).startswith(
        "RuntimeError: Reached a code path in Module.get_extra_state() that "
        "should never be called. Please file an issue at https://github.com/"
        "pytorch/pytorch/issues/new?template=bug-report.yml")


# -- loading ------------------------------------------------------------------

@pytest.mark.loads_state_dict
def test_load_copies_values_into_the_same_tensors(nn):
    net, source = make_state_net(nn), fresh(nn)
    weight = net.a.weight
    result = net.load_state_dict(source.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert net.a.weight is weight
    assert torch.equal(net.a.weight, source.a.weight)
    assert net.a.weight.requires_grad


@pytest.mark.loads_state_dict
def test_load_leaves_non_persistent_buffers_alone(nn):
    net, source = make_state_net(nn), fresh(nn)
    net.load_state_dict(source.state_dict())
    assert torch.equal(net.a.scratch, torch.ones(3))


@pytest.mark.loads_state_dict
def test_strict_load_reports_missing_and_unexpected_keys(nn):
    sd = fresh(nn).state_dict()
    del sd["a.bias"], sd["steps"]
    sd["a.extra"] = torch.zeros(1)
    sd["c.weight"] = torch.zeros(1)
    assert error_of(make_state_net(nn).load_state_dict, sd) == (
        "RuntimeError: Error(s) in loading state_dict for Net:\n\t"
        'Missing key(s) in state_dict: "steps", "a.bias". \n\t'
        'Unexpected key(s) in state_dict: "c.weight", "a.extra". ')


@pytest.mark.loads_state_dict
def test_non_strict_load_returns_the_keys_as_a_named_tuple(nn):
    sd = fresh(nn).state_dict()
    del sd["b.running"]
    sd["zzz"] = torch.zeros(1)
    result = make_state_net(nn).load_state_dict(sd, strict=False)
    assert result == (["b.running"], ["zzz"])
    assert result.missing_keys == ["b.running"]
    assert repr(result) == str(result) == (
        "_IncompatibleKeys(missing_keys=['b.running'], "
        "unexpected_keys=['zzz'])")


@pytest.mark.loads_state_dict
def test_non_strict_load_still_copies_what_matches(nn):
    net, source = make_state_net(nn), fresh(nn)
    net.load_state_dict({"a.weight": source.a.weight}, strict=False)
    assert torch.equal(net.a.weight, source.a.weight)


@pytest.mark.loads_state_dict
def test_non_strict_load_of_prefixed_keys_loads_nothing_silently(nn):
    # a DataParallel checkpoint: every key under "module."
    net, sd = make_state_net(nn), fresh(nn).state_dict()
    before = state_copy(net)
    prefixed = {"module." + k: v for k, v in sd.items()}
    result = net.load_state_dict(prefixed, strict=False)
    assert result == (list(sd), list(prefixed))
    assert all(torch.equal(a, b) for (_, a), (_, b) in zip(before,
                                                           state_copy(net)))


@pytest.mark.loads_state_dict
def test_size_mismatch_is_reported_after_the_key_lists(nn):
    sd = fresh(nn).state_dict()
    sd["b.weight"] = torch.zeros(2, 3)
    del sd["a.bias"]
    assert error_of(make_state_net(nn).load_state_dict, sd) == (
        "RuntimeError: Error(s) in loading state_dict for Net:\n\t"
        'Missing key(s) in state_dict: "a.bias". \n\t'
        "size mismatch for b.weight: copying a param with shape "
        "torch.Size([2, 3]) from checkpoint, the shape in current model is "
        "torch.Size([3, 2]).")


@pytest.mark.loads_state_dict
def test_size_mismatch_raises_even_when_not_strict(nn):
    sd = fresh(nn).state_dict()
    sd["scale"] = torch.zeros(2)
    assert error_of(make_state_net(nn).load_state_dict, sd, strict=False) == (
        "RuntimeError: Error(s) in loading state_dict for Net:\n\t"
        "size mismatch for scale: copying a param with shape "
        "torch.Size([2]) from checkpoint, the shape in current model is "
        "torch.Size([]).")


@pytest.mark.loads_state_dict
def test_a_value_that_is_not_a_tensor_is_an_error(nn):
    sd = fresh(nn).state_dict()
    sd["a.weight"] = [[1.0, 2.0]] * 3
    assert error_of(make_state_net(nn).load_state_dict, sd) == (
        "RuntimeError: Error(s) in loading state_dict for Net:\n\t"
        'While copying the parameter named "a.weight", expected '
        "torch.Tensor or Tensor-like object from checkpoint but received "
        "<class 'list'>")


@pytest.mark.loads_state_dict
def test_load_of_something_not_a_mapping_is_a_type_error(nn):
    assert error_of(make_state_net(nn).load_state_dict, [1, 2]) == (
        "TypeError: Expected state_dict to be dict-like, got <class 'list'>.")


@pytest.mark.loads_state_dict
def test_one_element_vector_loads_into_a_scalar(nn):
    sd = fresh(nn).state_dict()
    sd["scale"] = torch.tensor([2.5])
    net = make_state_net(nn)
    net.load_state_dict(sd)
    assert net.scale.shape == () and net.scale.item() == 2.5


@pytest.mark.loads_state_dict
def test_only_a_one_element_vector_loads_into_a_scalar(nn):
    sd = fresh(nn).state_dict()
    sd["scale"] = torch.tensor([2.5, 3.5])  # not the torch 0.3 form
    assert error_of(make_state_net(nn).load_state_dict, sd) == (
        "RuntimeError: Error(s) in loading state_dict for Net:\n\t"
        "size mismatch for scale: copying a param with shape "
        "torch.Size([2]) from checkpoint, the shape in current model is "
        "torch.Size([]).")


@pytest.mark.loads_state_dict
def test_copy_casts_the_checkpoint_dtype_silently(nn):
    sd = {k: v.double() for k, v in fresh(nn).state_dict().items()}
    net = make_state_net(nn)
    net.load_state_dict(sd)
    assert net.a.weight.dtype == torch.float32
    assert net.steps.dtype == torch.int64
    assert torch.equal(net.a.weight, sd["a.weight"].float())


@pytest.mark.loads_state_dict
def test_failed_strict_load_has_already_copied_other_tensors(nn):
    net, source = make_state_net(nn), fresh(nn)
    sd = source.state_dict()
    sd["b.bias"] = torch.zeros(4)
    assert error_of(net.load_state_dict, sd) is not None
    assert torch.equal(net.a.weight, source.a.weight)
    assert torch.equal(net.b.running, source.b.running)


@pytest.mark.loads_state_dict
def test_copy_error_is_wrapped_with_both_shapes(nn):
    sd = fresh(nn).state_dict()
    sd["a.bias"] = torch.empty(3, device="meta")
    assert error_of(make_state_net(nn).load_state_dict, sd) == (
        "RuntimeError: Error(s) in loading state_dict for Net:\n\t"
        'While copying the parameter named "a.bias", whose dimensions in '
        "the model are torch.Size([3]) and whose dimensions in the "
        "checkpoint are torch.Size([3]), an exception occurred : "
        "('Cannot copy out of meta tensor; no data!',).")


@pytest.mark.loads_state_dict
def test_keys_of_a_none_child_are_not_unexpected(nn):
    net = make_state_net(nn)
    net.b = None
    result = net.load_state_dict(fresh(nn).state_dict())
    assert repr(result) == "<All keys matched successfully>"


@pytest.mark.loads_state_dict
def test_assign_takes_the_checkpoint_tensors(nn):
    net, sd = make_state_net(nn), fresh(nn).state_dict()
    sd["a.weight"] = sd["a.weight"].double()
    net.load_state_dict(sd, assign=True)
    assert type(net.a.weight) is Parameter
    assert net.a.weight.requires_grad
    assert net.a.weight.dtype == torch.float64
    assert net.a.running is sd["a.running"]


@pytest.mark.loads_state_dict
def test_assign_keeps_the_models_requires_grad(nn):
    net = make_state_net(nn)
    net.a.weight.requires_grad_(False)
    sd = {k: Parameter(v) for k, v in fresh(nn).state_dict().items()
          if v.is_floating_point()}
    net.load_state_dict(sd, strict=False, assign=True)
    assert net.a.weight is sd["a.weight"]
    assert not net.a.weight.requires_grad and net.b.weight.requires_grad


@pytest.mark.loads_state_dict
def test_assign_wraps_plain_tensors_keeping_requires_grad(nn):
    # a checkpoint holds plain tensors: assign=True wraps each one in a
    # Parameter that keeps the model's flag, so a frozen weight stays frozen
    net = make_state_net(nn)
    net.a.weight.requires_grad_(False)
    sd = {k: v.clone() for k, v in fresh(nn).state_dict().items()}
    net.load_state_dict(sd, assign=True)
    assert isinstance(net.a.weight, Parameter)
    assert not net.a.weight.requires_grad and net.b.weight.requires_grad


@pytest.mark.loads_state_dict
def test_assign_writes_its_flag_into_the_callers_metadata(nn):
    sd = fresh(nn).state_dict()
    make_state_net(nn).load_state_dict(sd, assign=True)
    assert sd._metadata["a"] == {"version": 1,
                                 "assign_to_params_buffers": True}


@pytest.mark.loads_state_dict
def test_assign_materialises_a_meta_model(nn):
    net = make_state_net(nn)
    with torch.no_grad():
        for m in [net, net.a, net.b]:
            for k, v in m._parameters.items():
                if v is not None:
                    m._parameters[k] = Parameter(torch.empty_like(
                        v, device="meta"))
    source = fresh(nn)
    net.load_state_dict(source.state_dict(), assign=True)
    assert not net.a.weight.is_meta
    assert torch.equal(net.a.weight, source.a.weight)


@pytest.mark.loads_state_dict
def test_copy_into_a_meta_parameter_warns_and_does_nothing(nn):
    net = make_state_net(nn)
    net.a.weight = Parameter(torch.empty(3, 2, device="meta"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net.load_state_dict(fresh(nn).state_dict())
    assert net.a.weight.is_meta
    assert [str(w.message) for w in caught] == [
        "for a.weight: copying from a non-meta parameter in the checkpoint "
        "to a meta parameter in the current model, which is a no-op. (Did "
        "you mean to pass `assign=True` to assign items in the state "
        "dictionary to their corresponding key in the module instead of "
        "copying them in place?)"]


@pytest.mark.loads_state_dict
def test_swap_tensors_keeps_the_objects_and_takes_the_dtype(nn):
    net, sd = make_state_net(nn), fresh(nn).state_dict()
    sd["a.weight"] = sd["a.weight"].double()
    weight = net.a.weight
    with swapping():
        net.load_state_dict(sd, assign=True)
    assert net.a.weight is weight and weight.dtype == torch.float64
    assert torch.equal(weight, sd["a.weight"])


@pytest.mark.loads_state_dict
def test_swap_error_message_says_swapping(nn):
    sd = fresh(nn).state_dict()
    sd["a.bias"] = torch.empty(3, device="meta")
    with swapping():
        message = error_of(make_state_net(nn).load_state_dict, sd)
    assert 'While swapping the parameter named "a.bias"' in message


# -- one module's own load, and load_state_dict without strict ----------------
# Each module loads its own slice in _load_from_state_dict (a subclass may
# override it, as batch norm does), called here as load_state_dict calls
# it; and loads with strict=False, which need no strict error message: the
# chapter's pieces seen before the ones written after them.

def load_own(module, state_dict, assign=False):
    """module._load_from_state_dict(...) as load_state_dict calls it, strict:
    (missing keys, unexpected keys, error messages)."""
    missing, unexpected, errors = [], [], []
    metadata = {"assign_to_params_buffers": True} if assign else {}
    module._load_from_state_dict(state_dict, "", metadata, True, missing,
                                 unexpected, errors)
    return missing, unexpected, errors


def test_own_load_takes_only_a_one_element_vector_into_a_scalar(nn):
    m = nn.Module()
    m.scale = Parameter(torch.tensor(1.0))
    assert load_own(m, {"scale": torch.tensor([2.5])}) == ([], [], [])
    assert m.scale.item() == 2.5
    assert load_own(m, {"scale": torch.ones(3)})[2] == [
        "size mismatch for scale: copying a param with shape "
        "torch.Size([3]) from checkpoint, the shape in current model is "
        "torch.Size([])."]


def test_own_load_into_meta_warns_unless_assigning(nn):
    checkpoint = {"weight": torch.ones(1, 2), "bias": torch.ones(1)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_own(nn.Linear(2, 1, device="meta"), checkpoint)
        assert len(caught) == 2
        layer = nn.Linear(2, 1, device="meta")
        load_own(layer, checkpoint, assign=True)
        assert len(caught) == 2 and not layer.weight.is_meta


def test_own_assigning_load_keeps_the_models_requires_grad(nn):
    layer = nn.Linear(2, 1)
    layer.weight.requires_grad_(False)
    load_own(layer, {"weight": torch.ones(1, 2),
                     "bias": Parameter(torch.ones(1), requires_grad=False)},
             assign=True)
    assert [(type(p), p.requires_grad) for p in layer._parameters.values()
            ] == [(Parameter, False), (Parameter, True)]
    frozen = nn.Linear(2, 1)
    frozen.weight.requires_grad_(False)
    load_own(frozen, {"weight": Parameter(torch.ones(1, 2))}, assign=True)
    assert frozen.weight.requires_grad is False


def test_own_load_reports_keys_it_has_no_place_for(nn):
    checkpoint = {"weight": torch.ones(1, 2), "bias": torch.ones(1),
                  "_extra_state": 1, "9.weight": torch.ones(1)}
    assert load_own(nn.Linear(2, 1), checkpoint)[1] == [
        "_extra_state", "9.weight"]


@pytest.mark.loads_state_dict
def test_non_strict_load_leaves_the_callers_checkpoint_as_it_was(nn):
    layer = nn.Linear(2, 1)
    checkpoint = layer.state_dict()  # an OrderedDict
    layer.register_load_state_dict_pre_hook(
        lambda module, sd, prefix, *rest: sd.pop(prefix + "bias"))
    layer.load_state_dict(checkpoint, strict=False)
    assert list(checkpoint) == ["weight", "bias"]


@pytest.mark.loads_state_dict
def test_non_strict_assigning_load_writes_its_flag_into_the_metadata(nn):
    checkpoint = nn.Linear(2, 1).state_dict()
    nn.Linear(2, 1).load_state_dict(checkpoint, strict=False, assign=True)
    assert checkpoint._metadata[""] == {"version": 1,
                                        "assign_to_params_buffers": True}


# -- versions and load hooks --------------------------------------------------

def renaming_module(nn):
    """Version 2 renamed `w` to `weight`; it still reads version 1."""

    class Renamed(nn.Module):
        _version = 2

        def __init__(self):
            super().__init__()
            self.weight = Parameter(torch.zeros(2))

        def _load_from_state_dict(self, state_dict, prefix, local_metadata,
                                  *args):
            if local_metadata.get("version", 1) < 2:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix,
                                          local_metadata, *args)

    return Renamed()


@pytest.mark.loads_state_dict
def test_local_metadata_version_lets_a_module_read_old_checkpoints(nn):
    old = OrderedDict(w=torch.ones(2))
    old._metadata = {"": {"version": 1}}
    module = renaming_module(nn)
    module.load_state_dict(old)
    assert torch.equal(module.weight, torch.ones(2))
    assert "w" in old  # the caller's dict is not the one edited


@pytest.mark.loads_state_dict
def test_local_metadata_is_empty_without_metadata(nn):
    seen = []
    net = make_state_net(nn)
    net.a.register_load_state_dict_pre_hook(
        lambda m, sd, prefix, meta, *rest: seen.append((prefix, meta)))
    net.load_state_dict(dict(fresh(nn).state_dict()))
    assert seen == [("a.", {})]


@pytest.mark.loads_state_dict
def test_load_pre_hook_gets_the_module_and_its_slice(nn):
    seen = []
    net = make_state_net(nn)

    def hook(module, sd, prefix, meta, strict, missing, unexpected, errors):
        seen.append((module is net.b, prefix, list(sd), meta, strict))

    net.b.register_load_state_dict_pre_hook(hook)
    net.load_state_dict(fresh(nn).state_dict(), strict=False)
    assert seen == [(True, "b.", ["b.weight", "b.bias", "b.running"],
                     {"version": 1}, True)]


@pytest.mark.loads_state_dict
def test_private_load_pre_hook_without_module(nn):
    seen = []
    net = make_state_net(nn)
    net.a._register_load_state_dict_pre_hook(
        lambda sd, prefix, *rest: seen.append(prefix))
    net.load_state_dict(fresh(nn).state_dict())
    assert seen == ["a."]


@pytest.mark.loads_state_dict
def test_load_pre_hook_error_message_joins_the_report(nn):
    net = make_state_net(nn)
    net.a.register_load_state_dict_pre_hook(
        lambda m, sd, p, meta, strict, missing, unexpected, errors:
        errors.append("refused by a hook"))
    assert error_of(net.load_state_dict, fresh(nn).state_dict()) == (
        "RuntimeError: Error(s) in loading state_dict for Net:\n\t"
        "refused by a hook")


@pytest.mark.loads_state_dict
def test_load_post_hooks_run_children_first(nn):
    order, net = [], make_state_net(nn)
    for name in ["", "a", "b"]:
        module = getattr(net, name) if name else net
        module.register_load_state_dict_post_hook(
            lambda m, keys, name=name: order.append(name))
    net.load_state_dict(fresh(nn).state_dict())
    assert order == ["a", "b", ""]


@pytest.mark.loads_state_dict
def test_load_post_hook_can_forgive_missing_keys(nn):
    net = make_state_net(nn)
    net.register_load_state_dict_post_hook(
        lambda m, keys: keys.missing_keys.clear())
    result = net.load_state_dict({})
    assert repr(result) == "<All keys matched successfully>"


@pytest.mark.loads_state_dict
def test_load_post_hook_must_return_none(nn):
    net = make_state_net(nn)
    net.register_load_state_dict_post_hook(lambda m, keys: keys)
    assert error_of(net.load_state_dict, fresh(nn).state_dict()) == (
        "AssertionError: Hooks registered with "
        "``register_load_state_dict_post_hook`` are not expected to return "
        "new values, if incompatible_keys need to be modified, it should "
        "be done inplace.")


@pytest.mark.loads_state_dict
def test_removed_load_hooks_no_longer_run(nn):
    seen, net = [], make_state_net(nn)
    net.register_load_state_dict_pre_hook(lambda *a: seen.append(1)).remove()
    net.register_load_state_dict_post_hook(lambda *a: seen.append(2)).remove()
    net.load_state_dict(fresh(nn).state_dict())
    assert seen == []


# -- across backends ----------------------------------------------------------

def test_both_backends_save_the_same_state_dict(both):
    real, mini = (make_state_net(nn).state_dict() for nn in both)
    assert list(real) == list(mini) and real._metadata == mini._metadata
    assert all(torch.equal(real[k], mini[k]) for k in real)


@pytest.mark.loads_state_dict
def test_a_torch_checkpoint_loads_into_mininn_and_back(both):
    real, mini = both
    source = fresh(real)
    buffer = io.BytesIO()
    torch.save(source.state_dict(), buffer)
    buffer.seek(0)
    into_mini = make_state_net(mini)
    into_mini.load_state_dict(torch.load(buffer, weights_only=True))
    back = make_state_net(real)
    back.load_state_dict(into_mini.state_dict())
    for key, value in source.state_dict().items():
        assert torch.equal(into_mini.state_dict()[key], value)
        assert torch.equal(back.state_dict()[key], value)


@pytest.mark.loads_state_dict
def test_every_load_error_reads_the_same_on_both(both):
    def cases(nn):
        sd = fresh(nn).state_dict()
        sd["a.weight"] = torch.zeros(1)
        sd["b.bias"] = "text"
        del sd["steps"]
        sd["b.new"] = torch.zeros(1)
        return make_state_net(nn).load_state_dict, sd

    real, mini = [error_of(*cases(nn)) for nn in both]
    assert real == mini and real.startswith("RuntimeError")


# -- all or nothing ----------------------------------------------------------

def state_copy(net):
    return [(k, v.clone()) for k, v in net.state_dict(keep_vars=True).items()]


@pytest.mark.loads_state_dict
def test_all_or_nothing_leaves_the_model_untouched_on_error(nn):
    from mininn import load_all_or_nothing

    net, sd = make_state_net(nn), fresh(nn).state_dict()
    sd["b.bias"] = torch.zeros(4)  # after a.* in loading order
    before = state_copy(net)
    assert error_of(load_all_or_nothing, net, sd) == error_of(
        make_state_net(nn).load_state_dict, sd)
    after = state_copy(net)
    assert all(torch.equal(a, b) for (_, a), (_, b) in zip(before, after))


def test_all_or_nothing_puts_back_assigned_tensors(nn):
    from mininn import load_all_or_nothing

    net, sd = make_state_net(nn), fresh(nn).state_dict()
    weight = net.a.weight
    sd["b.running"] = "not a tensor"
    assert error_of(load_all_or_nothing, net, sd, assign=True) is not None
    assert net.a.weight is weight
    assert not torch.equal(weight, sd["a.weight"])


def test_all_or_nothing_restores_extra_state(nn):
    from mininn import load_all_or_nothing

    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = counted(nn, calls=1)
            self.second = counted(nn, calls=1)

    target, sd = Pair(), Pair().state_dict()
    sd["first._extra_state"] = {"calls": 5}
    sd["second.weight"] = torch.zeros(3)
    assert error_of(load_all_or_nothing, target, sd) is not None
    assert target.first.calls == 1


@pytest.mark.loads_state_dict
def test_all_or_nothing_loads_like_load_state_dict_on_success(nn):
    from mininn import load_all_or_nothing

    net, source = make_state_net(nn), fresh(nn)
    result = load_all_or_nothing(net, source.state_dict(), strict=False)
    assert repr(result) == "<All keys matched successfully>"
    assert torch.equal(net.b.weight, source.b.weight)


# -- versions of real layers --------------------------------------------------

def test_module_is_version_1_and_batch_norm_version_2(nn):
    assert nn.Module._version == 1
    assert nn.BatchNorm1d._version == nn.BatchNorm2d._version == 2
    assert nn.Sequential(nn.BatchNorm2d(2)).state_dict()._metadata == {
        "": {"version": 1}, "0": {"version": 2}}


def old_batch_norm_checkpoint(nn, version):
    torch.manual_seed(0)
    sd = nn.BatchNorm1d(3).state_dict()
    del sd["num_batches_tracked"]
    if version is None:
        return dict(sd)  # no _metadata at all
    sd._metadata[""]["version"] = version
    return sd


@pytest.mark.loads_state_dict
def test_batch_norm_reads_a_version_1_checkpoint_without_its_counter(nn):
    norm = nn.BatchNorm1d(3)
    norm.num_batches_tracked.fill_(4)
    result = norm.load_state_dict(old_batch_norm_checkpoint(nn, 1))
    assert repr(result) == "<All keys matched successfully>"
    assert norm.num_batches_tracked.item() == 4  # its own count is kept


@pytest.mark.loads_state_dict
def test_batch_norm_without_metadata_does_not_miss_its_counter(nn):
    result = nn.BatchNorm1d(3).load_state_dict(
        old_batch_norm_checkpoint(nn, None))
    assert repr(result) == "<All keys matched successfully>"


@pytest.mark.loads_state_dict
def test_batch_norm_version_2_checkpoint_must_have_its_counter(nn):
    result = nn.BatchNorm1d(3).load_state_dict(
        old_batch_norm_checkpoint(nn, 2), strict=False)
    assert result.missing_keys == ["num_batches_tracked"]


@pytest.mark.loads_state_dict
def test_batch_norm_on_meta_gets_a_fresh_counter_from_an_old_checkpoint(nn):
    norm = nn.BatchNorm1d(3).to("meta")
    norm.load_state_dict(old_batch_norm_checkpoint(nn, 1), assign=True)
    assert not norm.num_batches_tracked.is_meta
    assert norm.num_batches_tracked.item() == 0


@pytest.mark.loads_state_dict
def test_dead_modules_load_pre_hook_refuses_to_run(nn):
    net = make_state_net(nn)
    handle = net.register_load_state_dict_pre_hook(lambda *args: None)
    wrapped = net._load_state_dict_pre_hooks[handle.id]
    del net  # nothing else refers to it: freed at once
    assert error_of(wrapped, {}, "", {}, True, [], [], []) == (
        "RuntimeError: You are trying to call the hook of a dead Module!")


# -- the positional form ------------------------------------------------------

def test_state_dict_reads_positional_arguments_with_a_future_warning(nn):
    net = make_state_net(nn)
    with pytest.warns(FutureWarning) as caught:
        keys = list(net.state_dict(None, "p."))
    assert keys == ["p." + k for k in NET_KEYS]
    assert str(caught[0].message) == (
        "Positional args are being deprecated, use kwargs instead. Refer to "
        "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
        "#torch.nn.Module.state_dict for details.")


def test_positional_destination_and_keep_vars_are_used(nn):
    net, into = make_state_net(nn), OrderedDict()
    with pytest.warns(FutureWarning):
        out = net.state_dict(into, "", True)
    assert out is into and out["a.weight"] is net.a.weight
    assert not hasattr(into, "_metadata")  # the caller's dict, as given


def test_keywords_win_over_positional_arguments(nn):
    with pytest.warns(FutureWarning):
        keys = list(make_state_net(nn).state_dict(None, "p.", prefix="q."))
    assert keys[0] == "q.scale"


def test_a_keyword_at_its_default_loses_to_the_positional_value(nn):
    with pytest.warns(FutureWarning):
        keys = list(make_state_net(nn).state_dict(None, "p.", prefix=""))
    assert keys[0] == "p.scale"


# -- what a load does to the tensor objects -------------------------------------

@pytest.mark.loads_state_dict
def test_copy_keeps_the_objects_their_memory_and_their_grads(nn):
    net, sd = make_state_net(nn), fresh(nn).state_dict()
    net.a.weight.grad = torch.ones(3, 2)
    weight, ptr = net.a.weight, net.a.weight.data_ptr()
    net.load_state_dict(sd)
    assert net.a.weight is weight and weight.data_ptr() == ptr
    assert weight.grad is not None


@pytest.mark.loads_state_dict
def test_assign_puts_in_a_new_parameter_on_the_checkpoints_memory(nn):
    net, sd = make_state_net(nn), fresh(nn).state_dict()
    weight = net.a.weight
    net.load_state_dict(sd, assign=True)
    assert net.a.weight is not weight
    assert type(net.a.weight) is Parameter
    assert net.a.weight.data_ptr() == sd["a.weight"].data_ptr()
    assert type(net.steps) is torch.Tensor  # a buffer stays a plain tensor


@pytest.mark.loads_state_dict
def test_swap_flag_keeps_the_object_and_drops_its_grad(nn):
    net, sd = make_state_net(nn), fresh(nn).state_dict()
    net.a.weight.grad = torch.ones(3, 2)
    weight = net.a.weight
    with swapping():
        net.load_state_dict(sd)
    assert net.a.weight is weight and weight.grad is None
    assert torch.equal(weight, sd["a.weight"])


# -- real layers across backends ----------------------------------------------

def test_layers_save_the_same_state_dict_on_both(both):
    real, mini = make_mlp(both[0]).state_dict(), make_mlp(both[1]).state_dict()
    assert list(real) == list(mini) and real._metadata == mini._metadata
    assert all(torch.equal(real[k], mini[k]) for k in real)


@pytest.mark.loads_state_dict
def test_loaded_networks_give_identical_outputs_both_ways(both):
    real, mini = both
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
    torch_net = make_mlp(real)
    with torch.no_grad():
        for t in torch_net.state_dict(keep_vars=True).values():
            t.copy_(torch.randint(0, 5, t.shape))
    mini_net = make_mlp(mini)
    mini_net.train()(x)  # changes its running statistics
    mini_net.load_state_dict(torch_net.state_dict())
    assert torch.equal(mini_net.eval()(x), torch_net.eval()(x))
    mini_net.train()(x)
    torch_net.load_state_dict(mini_net.state_dict())
    assert torch.equal(mini_net.eval()(x), torch_net.eval()(x))


def test_all_or_nothing_undoes_a_swapping_load(nn):
    from mininn import load_all_or_nothing

    net, sd = make_state_net(nn), fresh(nn).state_dict()
    sd["a.weight"] = sd["a.weight"].double()
    sd["b.bias"] = torch.zeros(4)
    weight, before = net.a.weight, net.a.weight.detach().clone()
    with swapping():
        assert error_of(load_all_or_nothing, net, sd, assign=True)
    assert net.a.weight is weight and weight.dtype == torch.float32
    assert torch.equal(weight, before)



@pytest.mark.parametrize("assign", [False, True])
def test_all_or_nothing_gives_back_the_gradients_a_swap_took(nn, assign):
    from mininn import load_all_or_nothing

    net, sd = with_grads(make_state_net(nn)), fresh(nn).state_dict()
    sd["b.bias"] = torch.zeros(4)  # fails after a.* were swapped
    grads = [p.grad for p in net.parameters()]
    with swapping():
        assert error_of(load_all_or_nothing, net, sd, assign=assign)
    assert all(p.grad is g for p, g in zip(net.parameters(), grads))


def test_all_or_nothing_leaves_the_checkpoint_alone_after_a_swap(nn):
    """A swapping assign put the checkpoint's memory into the model;
    restoring must not write the old values into it."""
    from mininn import load_all_or_nothing

    net, sd = make_state_net(nn), fresh(nn).state_dict()
    sd["b.bias"] = torch.zeros(4)
    given = {k: v.clone() for k, v in sd.items()}
    memory = [t.data_ptr() for t in net.state_dict().values()]
    with swapping():
        assert error_of(load_all_or_nothing, net, sd, assign=True)
    assert all(torch.equal(sd[k], given[k]) for k in sd)
    assert [t.data_ptr() for t in net.state_dict().values()] == memory


def test_all_or_nothing_loads_extra_state_it_cannot_read(nn):
    """A class may override set_extra_state alone: nothing to snapshot."""
    from mininn import load_all_or_nothing

    class SetOnly(nn.Module):
        def set_extra_state(self, state):
            self.got = state

    target = SetOnly()
    assert repr(load_all_or_nothing(target, {"_extra_state": 5})) == (
        "<All keys matched successfully>")
    assert target.got == 5


def test_all_or_nothing_undoes_a_swapping_load_into_a_meta_model(nn):
    """The swap moved the meta tensors to the CPU; restoring swaps back."""
    from mininn import load_all_or_nothing

    with torch.device("meta"):
        net = make_state_net(nn)
    weight, steps = net.a.weight, net.steps
    sd = fresh(nn).state_dict()
    sd["b.bias"] = torch.zeros(4)
    with swapping():
        message = error_of(load_all_or_nothing, net, sd, assign=True)
    assert message.startswith("RuntimeError: Error(s) in loading state_dict")
    assert "size mismatch for b.bias" in message
    assert net.a.weight is weight and weight.is_meta
    assert type(weight) is Parameter and weight.requires_grad
    assert net.steps is steps and steps.is_meta and type(steps) is torch.Tensor


@pytest.mark.loads_state_dict
def test_load_pre_hooks_are_wrapped_in_chapter_5s_class():
    """One _WrappedHook in the package: the old backward hooks' own."""
    import mininn
    import mininn.hooks

    layer = mininn.Linear(2, 2)
    layer._register_load_state_dict_pre_hook(print)
    layer.register_load_state_dict_pre_hook(print)
    first, second = layer._load_state_dict_pre_hooks.values()
    assert type(first) is type(second) is mininn.hooks._WrappedHook
    assert first.with_module is False and second.module() is layer


@pytest.mark.loads_state_dict
def test_assign_into_a_meta_model_does_not_warn(nn):
    with torch.device("meta"):
        layer = nn.Linear(2, 3)
    torch.manual_seed(0)
    sd = nn.Linear(2, 3).state_dict()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layer.load_state_dict(sd, assign=True)
    assert [str(w.message) for w in caught] == []
    assert not layer.weight.is_meta and torch.equal(layer.weight,
                                                    sd["weight"])
