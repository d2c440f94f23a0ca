"""Chapter 6, differential: _apply and the conversions built on it (cpu,
to, float, double, half, bfloat16, type, to_empty, share_memory), each test
body run on torch.nn and on mininn; `both` tests compare the two directly."""
import warnings
import weakref

import pytest
import torch
from torch.nn import Buffer, Parameter

from support import with_grads

CL, CL3 = torch.channels_last, torch.channels_last_3d


def make_apply_net(nn, layout=torch.contiguous_format):
    """Two children with float and integer parameters and buffers, a frozen
    parameter, 4-D tensors stored in `layout`, a transposed (non-contiguous)
    2-D parameter, None slots, and a parameter of the root: everything
    _apply has to visit."""

    class Leaf(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = Parameter(torch.randn(3, 2))
            self.bias = Parameter(torch.randn(3))
            self.index = Parameter(torch.arange(3), requires_grad=False)
            self.frozen = Parameter(torch.randn(3), requires_grad=False)
            self.kernel = Parameter(
                torch.randn(4, 3, 2, 2).contiguous(memory_format=layout))
            self.tall = Parameter(torch.randn(2, 3).t())
            self.register_parameter("unused", None)
            self.running = Buffer(torch.rand(3))
            self.count = Buffer(torch.tensor(0))
            self.image = Buffer(
                torch.rand(1, 3, 2, 2).contiguous(memory_format=layout))
            self.mask = Buffer(torch.arange(12).reshape(1, 3, 2, 2)
                               .contiguous(memory_format=layout))
            self.register_buffer("nothing", None)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Leaf()
            self.b = Leaf()
            self.scale = Parameter(torch.ones(1))

    torch.manual_seed(0)
    return Net()



def tensors(net):
    """(name, tensor) for every parameter, grad and buffer of `net`."""
    out = []
    for name, p in net.named_parameters():
        out.append((name, p))
        if p.grad is not None:
            out.append((name + ".grad", p.grad))
    return out + list(net.named_buffers())


def tensor_layout(t):
    """What a conversion may change about `t` besides dtype and device: its
    class, requires_grad, strides, and the memory formats it is in."""
    fmt = {4: CL, 5: CL3}.get(t.dim())
    return (type(t).__name__, t.requires_grad, t.stride(), t.is_contiguous(),
            fmt is not None and t.is_contiguous(memory_format=fmt))


def conversion_snapshot(net, convert):
    """(name, same object as before?, dtype, device, *layout) of every
    parameter, grad and buffer after `convert`."""
    before = dict(tensors(net))
    assert convert(net) is net
    return [(name, t is before[name], t.dtype, t.device.type,
             *tensor_layout(t))
            for name, t in tensors(net)]


CONVERSIONS = {
    "float": lambda m: m.float(),
    "double": lambda m: m.double(),
    "half": lambda m: m.half(),
    "bfloat16": lambda m: m.bfloat16(),
    "cpu": lambda m: m.cpu(),
    "type_dtype": lambda m: m.type(torch.float64),
    "type_name": lambda m: m.type("torch.DoubleTensor"),
    "to_device": lambda m: m.to("cpu"),
    "to_device_object": lambda m: m.to(torch.device("cpu")),
    "to_dtype": lambda m: m.to(torch.float16),
    "to_device_dtype": lambda m: m.to("cpu", torch.float64),
    "to_keywords": lambda m: m.to(device="cpu", dtype=torch.bfloat16),
    "to_tensor": lambda m: m.to(torch.zeros(1, dtype=torch.float64)),
    "to_non_blocking": lambda m: m.to("cpu", non_blocking=True),
    "to_complex": lambda m: m.to(torch.cfloat),
    "to_meta": lambda m: m.to("meta"),
    "to_empty_meta": lambda m: m.to_empty(device="meta"),
    "to_empty_cpu": lambda m: m.to_empty(device="cpu"),
    "share_memory": lambda m: m.share_memory(),
    "to_channels_last": lambda m: m.to(memory_format=CL),
    "to_contiguous_format":
        lambda m: m.to(memory_format=torch.contiguous_format),
    "to_preserve_format": lambda m: m.to(memory_format=torch.preserve_format),
    "to_double_channels_last": lambda m: m.to(torch.double, memory_format=CL),
    "to_meta_channels_last": lambda m: m.to("meta", memory_format=CL),
    "to_meta_then_empty": lambda m: m.to("meta").to_empty(device="cpu"),
}
# torch warns on every complex cast; the warning has its own test
quiet = pytest.mark.filterwarnings("ignore:Complex modules")


@quiet
@pytest.mark.parametrize("label", CONVERSIONS)
def test_conversion_matches_torch_on_every_param_grad_and_buffer(both,
                                                                  label):
    convert = CONVERSIONS[label]
    real, mini = both
    theirs = conversion_snapshot(with_grads(make_apply_net(real)), convert)
    ours = conversion_snapshot(with_grads(make_apply_net(mini)), convert)
    assert ours == theirs


@quiet
@pytest.mark.parametrize("label", CONVERSIONS)
def test_conversion_without_grads_matches_torch(both, label):
    convert = CONVERSIONS[label]
    real, mini = both
    assert (conversion_snapshot(make_apply_net(mini), convert)
            == conversion_snapshot(make_apply_net(real), convert))


@pytest.mark.parametrize("label", ["float", "double", "half", "bfloat16",
                                   "cpu", "type_dtype", "to_dtype",
                                   "to_device_dtype", "share_memory"])
def test_conversion_keeps_every_parameter_and_grad_object(nn, label):
    net = with_grads(make_apply_net(nn))
    params = list(net.parameters())
    grads = [p.grad for p in params]
    CONVERSIONS[label](net)
    assert all(a is b for a, b in zip(params, net.parameters()))
    assert all(p.grad is g for p, g in zip(net.parameters(), grads))


def test_cast_converts_the_grad_with_its_parameter(nn):
    net = with_grads(make_apply_net(nn)).half()
    assert net.a.weight.dtype == net.a.weight.grad.dtype == torch.float16


def test_cast_keeps_the_values(nn):
    net = make_apply_net(nn)
    expected = net.a.weight.detach().clone().double()
    net.double()
    assert torch.equal(net.a.weight.detach(), expected)


@pytest.mark.parametrize("cast", [lambda m: m.half(), lambda m: m.float(),
                                  lambda m: m.double(),
                                  lambda m: m.bfloat16(),
                                  lambda m: m.to(torch.half)])
def test_integer_buffer_and_parameter_keep_their_dtype(nn, cast):
    net = cast(make_apply_net(nn))
    assert net.a.count.dtype == torch.int64
    assert net.a.index.dtype == torch.int64


def handed_to_apply(nn, convert):
    """The per-tensor function `convert(module)` hands to _apply, caught by
    a subclass whose _apply converts nothing (each of torch's conversions
    is one self._apply(fn), and subclasses may override _apply, as RNNs
    do): what the conversion does to one tensor, before _apply is written."""
    caught = []

    class Catch(nn.Module):
        def _apply(self, fn, recurse=True):
            caught.append(fn)
            return self

    module = Catch()
    assert convert(module) is module
    (fn,) = caught
    return fn


def fn_of_to(nn, *args, **kwargs):
    """The per-tensor function of module.to(*args, **kwargs)."""
    return handed_to_apply(nn, lambda m: m.to(*args, **kwargs))


@pytest.mark.parametrize("cast", ["half", "float", "double", "bfloat16"])
def test_a_floating_cast_leaves_integer_tensors_alone(nn, cast):
    fn = handed_to_apply(nn, lambda m: getattr(m, cast)())
    count = torch.tensor(3)
    assert fn(count) is count
    assert fn(torch.ones(2, dtype=torch.float64)).dtype == getattr(
        torch, cast)


def test_to_gives_the_memory_format_to_4d_and_5d_tensors_only(nn):
    image, volume = torch.rand(1, 3, 2, 2), torch.rand(1, 3, 2, 2, 2)
    seq, big = torch.rand(2, 3, 4).transpose(0, 2), torch.rand(2, 1, 2, 1, 2, 1)
    assert fn_of_to(nn, memory_format=CL)(image).stride() == (12, 1, 6, 3)
    assert fn_of_to(nn, memory_format=CL3)(volume).is_contiguous(
        memory_format=CL3)
    for fmt in (CL, CL3, torch.contiguous_format):
        to_fmt = fn_of_to(nn, memory_format=fmt)
        assert to_fmt(seq) is seq and to_fmt(big) is big


def test_to_gives_the_memory_format_with_a_dtype_and_to_integers_too(nn):
    fn = fn_of_to(nn, torch.half, memory_format=CL)
    weight, mask = torch.rand(4, 3, 2, 2), torch.arange(12).reshape(1, 3, 2, 2)
    assert fn(weight).dtype == torch.half
    assert fn(weight).is_contiguous(memory_format=CL)
    assert fn(mask).dtype == torch.int64
    assert fn(mask).is_contiguous(memory_format=CL)


def test_to_casts_complex_tensors_and_leaves_integers(nn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's complex-module warning
        fn = fn_of_to(nn, torch.cdouble)
    count = torch.tensor(3)
    assert fn(torch.ones(2, dtype=torch.cfloat)).dtype == torch.cdouble
    assert fn(count) is count


def test_type_casts_integer_buffers_too(nn):
    net = make_apply_net(nn).type(torch.float16)
    assert net.a.count.dtype == torch.float16


def test_changed_buffer_is_a_new_object_unchanged_one_is_not(nn):
    net = make_apply_net(nn)
    running, count = net.a.running, net.a.count
    net.double()
    assert net.a.running is not running and net.a.count is count


def sgd_step(params, lr=0.1):
    """What torch.optim.SGD does to the parameters it holds (without the
    seconds its first construction costs)."""
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad
                p.grad = None


def test_references_taken_before_a_cast_still_train_the_model(nn):
    torch.manual_seed(0)
    layer = nn.Linear(3, 1)
    held = list(layer.parameters())  # what an optimizer keeps
    layer.double()
    before = layer.weight.detach().clone()
    layer(torch.randn(4, 3, dtype=torch.float64)).sum().backward()
    sgd_step(held)
    assert not torch.equal(layer.weight.detach(), before)


def test_training_after_double_matches_torch(both):
    def losses(lib):
        torch.manual_seed(0)
        layer = lib.Linear(3, 1)
        held = list(layer.parameters())
        layer.double()
        x = torch.randn(8, 3, dtype=torch.float64)
        out = []
        for _ in range(3):
            loss = layer(x).pow(2).mean()
            loss.backward()
            sgd_step(held)
            out.append(loss.item())
        return out

    real, mini = both
    ours, theirs = losses(mini), losses(real)
    assert ours == theirs and ours[-1] < ours[0]


def test_apply_visits_children_first_then_params_grads_buffers(both):
    def visits(lib):
        seen = []

        def fn(t):
            seen.append((tuple(t.shape), t.dtype))
            return t

        net = with_grads(make_apply_net(lib))
        net._apply(fn)
        return seen

    real, mini = both
    assert visits(mini) == visits(real)


def test_apply_converts_a_shared_child_once(nn):
    root = nn.Module()
    child = make_apply_net(nn).a
    root.first, root.second = child, child
    calls = []
    root._apply(lambda t: calls.append(t) or t)
    # weight, bias, index, frozen, kernel, tall; running, count, image, mask
    assert len(calls) == 10


def test_apply_recurse_false_leaves_children_alone(nn):
    net = make_apply_net(nn)
    net._apply(lambda t: t.double() if t.is_floating_point() else t,
               recurse=False)
    assert net.scale.dtype == torch.float64
    assert net.a.weight.dtype == torch.float32


def test_to_empty_recurse_false_leaves_children_alone(nn):
    net = make_apply_net(nn).to_empty(device="meta", recurse=False)
    assert net.scale.device.type == "meta"
    assert net.a.weight.device.type == "cpu"


def test_to_empty_keeps_shape_dtype_and_requires_grad(nn):
    net = make_apply_net(nn).to("meta").to_empty(device="cpu")
    assert net.a.weight.shape == (3, 2) and net.a.weight.requires_grad
    assert net.a.count.dtype == torch.int64
    assert not net.a.index.requires_grad


def test_to_empty_device_is_keyword_only(nn):
    with pytest.raises(TypeError, match="positional argument"):
        make_apply_net(nn).to_empty("cpu")


def test_to_meta_makes_new_parameters_and_moves_grads(nn):
    net = with_grads(make_apply_net(nn))
    weight = net.a.weight
    net.to("meta")
    assert net.a.weight is not weight
    assert type(net.a.weight) is Parameter and net.a.weight.requires_grad
    assert net.a.weight.grad.device.type == "meta"
    assert not net.a.index.requires_grad


def test_to_from_meta_raises_and_points_to_to_empty(nn):
    net = make_apply_net(nn).to("meta")
    with pytest.raises(NotImplementedError) as e:
        net.to("cpu")
    assert str(e.value) == (
        "Cannot copy out of meta tensor; no data! Please use "
        "torch.nn.Module.to_empty() instead of torch.nn.Module.to() when "
        "moving module from meta to a different device.")


def test_cpu_from_meta_raises_torchs_plain_message(nn):
    net = make_apply_net(nn).to("meta")
    with pytest.raises(NotImplementedError,
                       match="^Cannot copy out of meta tensor; no data!$"):
        net.cpu()


def test_to_rejects_an_integer_dtype(nn):
    with pytest.raises(TypeError) as e:
        make_apply_net(nn).to(torch.long)
    assert str(e.value) == ("nn.Module.to only accepts floating point or "
                            "complex dtypes, but got desired "
                            "dtype=torch.int64")


def test_to_rejects_an_integer_dtype_given_by_keyword(nn):
    with pytest.raises(TypeError, match="dtype=torch.uint8"):
        make_apply_net(nn).to(device="cpu", dtype=torch.uint8)


def test_to_a_complex_dtype_warns(nn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_apply_net(nn).to(torch.cdouble)
    assert [w.category for w in caught] == [UserWarning]
    assert str(caught[0].message).startswith(
        "Complex modules are a new feature under active development")


def test_to_complex_warning_points_at_the_caller(nn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_apply_net(nn).to(torch.cfloat)
    assert caught[0].filename == __file__


BAD_TO = {
    "two_dtypes": ((torch.float, torch.float), {}),
    "bad_device": (("gpu",), {}),
    "copy": (("cpu",), {"copy": True}),
    "non_blocking_int": ((), {"non_blocking": 1}),
    "unknown_keyword": (("cpu",), {"foo": 1}),
    "dtype_twice": ((torch.float,), {"dtype": torch.half}),
    "a_string_dtype": (("float64",), {}),
}


@pytest.mark.parametrize("label", BAD_TO)
def test_to_bad_arguments_raise_like_torch(both, label):
    args, kwargs = BAD_TO[label]
    errors = []
    for lib in both:
        with pytest.raises(Exception) as e:
            make_apply_net(lib).to(*args, **kwargs)
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1]


def test_type_to_an_integer_fails_on_a_trainable_parameter(nn):
    with pytest.raises(RuntimeError, match="data set to a tensor that "
                       "requires gradients must be floating point"):
        make_apply_net(nn).type(torch.long)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a CPU build")
def test_cuda_without_cuda_raises_torchs_error(both):
    errors = []
    for lib in both:
        with pytest.raises(Exception) as e:
            make_apply_net(lib).cuda()
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_and_back_keep_objects_and_move_grads(nn):
    net = with_grads(make_apply_net(nn))
    params = list(net.parameters())
    net.cuda()
    assert all(a is b for a, b in zip(params, net.parameters()))
    assert net.a.weight.grad.device.type == "cuda"
    assert net.a.count.device.type == "cuda"
    assert net.a.count.dtype == torch.int64
    net.to("cpu", non_blocking=True)
    assert all(a is b for a, b in zip(params, net.parameters()))
    assert net.a.weight.device.type == "cpu"


def test_share_memory_shares_every_tensor(nn):
    net = make_apply_net(nn).share_memory()
    assert all(t.is_shared() for _, t in tensors(net))


def test_memory_format_applies_to_4d_tensors_only(nn):
    module = nn.Module()
    module.kernel = Parameter(torch.randn(4, 3, 2, 2))
    module.bias = Parameter(torch.randn(4))
    module.to(memory_format=torch.channels_last)
    assert module.kernel.is_contiguous(memory_format=torch.channels_last)
    assert module.kernel.stride() == (12, 1, 6, 3)
    assert module.bias.shape == (4,)


@pytest.fixture
def flags():
    """Switch torch's two conversion flags; always restore them."""
    def set_flags(overwrite=False, swap=False):
        torch.__future__.set_overwrite_module_params_on_conversion(overwrite)
        torch.__future__.set_swap_module_params_on_conversion(swap)
    yield set_flags
    set_flags()


def test_overwrite_flag_makes_new_parameters_even_for_a_cast(nn, flags):
    flags(overwrite=True)
    net = with_grads(make_apply_net(nn))
    weight, grad = net.a.weight, net.a.weight.grad
    net.double()
    assert net.a.weight is not weight and net.a.weight.grad is not grad
    assert net.a.weight.grad.dtype == torch.float64


def test_swap_flag_keeps_parameters_across_meta(nn, flags):
    flags(swap=True)
    net = with_grads(make_apply_net(nn))
    weight, grad = net.a.weight, net.a.weight.grad
    net.to("meta")
    assert net.a.weight is weight and net.a.weight.grad is grad
    assert weight.device.type == grad.device.type == "meta"
    net.to_empty(device="cpu")
    assert net.a.weight is weight and weight.device.type == "cpu"


def test_a_wrapper_subclass_parameter_is_swapped_and_keeps_its_wrapper(nn):
    """A wrapper subclass passes the .data = compatibility test, and .data =
    would keep only the outer tensor: _apply must swap it instead."""
    from torch.testing._internal.two_tensor import TwoTensor
    layer = nn.Linear(2, 2)
    layer.weight = Parameter(TwoTensor(torch.ones(2, 2), torch.zeros(2, 2)))
    weight = layer.weight
    assert torch._has_compatible_shallow_copy_type(torch.ones(1), weight)
    layer.double()
    assert layer.weight is weight and isinstance(weight, TwoTensor)
    assert weight.a.dtype == weight.b.dtype == torch.float64


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("label", ["double", "to_meta", "to_empty_cpu"])
def test_flags_give_torchs_identities(both, flags, swap, overwrite, label):
    flags(overwrite=overwrite, swap=swap)
    real, mini = both
    convert = CONVERSIONS[label]
    assert (conversion_snapshot(with_grads(make_apply_net(mini)), convert)
            == conversion_snapshot(with_grads(make_apply_net(real)), convert))


def test_swap_refused_names_the_parameter_and_keeps_its_grad(nn, flags):
    flags(swap=True)
    net = with_grads(make_apply_net(nn))
    grad = net.a.weight.grad
    ref = weakref.ref(net.a.weight)  # swap_tensors refuses weakly held
    with pytest.raises(RuntimeError,
                       match=r"^_apply\(\): Couldn't swap Leaf\.weight$"):
        net.double()
    assert ref() is net.a.weight and net.a.weight.grad is grad


def test_meta_move_unties_a_tied_weight(nn):
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    model[1].weight = model[0].weight
    model.double()
    assert model[1].weight is model[0].weight
    model.to("meta")
    assert model[1].weight is not model[0].weight


def shared_buffer_model(nn):
    """Two modules holding one tensor as their buffer "table"."""
    shared = torch.arange(4.0)
    a, b = nn.Module(), nn.Module()
    a.register_buffer("table", shared)
    b.register_buffer("table", shared)
    return nn.Sequential(a, b)


@pytest.mark.parametrize("label", ["double", "half", "to_meta",
                                   "to_empty_cpu"])
def test_a_conversion_that_makes_new_tensors_unties_a_shared_buffer(nn,
                                                                    label):
    model = CONVERSIONS[label](shared_buffer_model(nn))
    assert model[0].table is not model[1].table
    assert [n for n, _ in model.named_buffers()] == ["0.table", "1.table"]


@pytest.mark.parametrize("label", ["float", "cpu", "share_memory"])
def test_a_conversion_that_changes_nothing_keeps_a_shared_buffer(nn, label):
    model = CONVERSIONS[label](shared_buffer_model(nn))
    assert model[0].table is model[1].table
    assert [n for n, _ in model.named_buffers()] == ["0.table"]


def test_the_swap_flag_does_not_keep_a_shared_buffer_tied(nn, flags):
    flags(swap=True)  # the flags concern parameters only
    model = shared_buffer_model(nn).double()
    assert model[0].table is not model[1].table


def test_a_reference_to_a_buffer_goes_stale_after_a_cast(nn):
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(2)
    held = bn.running_mean
    bn.double()
    bn(torch.randn(8, 2, dtype=torch.float64))
    assert held is not bn.running_mean
    assert held.dtype == torch.float32 and bool((held == 0).all())
    assert not bool((bn.running_mean == 0).all())


def civilnet_fc(nn, register):
    class CivilNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            if register:
                self.register_buffer("syszux", torch.zeros(1, 1))
            else:
                self.syszux = torch.zeros(1, 1)

        def forward(self, x):
            return self.fc(x) + self.syszux

    return CivilNet()


def test_a_plain_tensor_attribute_is_neither_moved_nor_cast(nn):
    net = civilnet_fc(nn, register=False).to("meta")
    assert net.syszux.device.type == "cpu"
    net = civilnet_fc(nn, register=False).double()
    assert net.syszux.dtype == torch.float32
    assert "syszux" not in dict(net.named_buffers())


def test_forward_fails_when_a_plain_attribute_stayed_behind(both):
    errors = []
    for lib in both:
        net = civilnet_fc(lib, register=False).to("meta")
        with pytest.raises(RuntimeError) as e:
            net(torch.randn(1, 2, device="meta"))
        errors.append(str(e.value))
    assert errors[0] == errors[1]
    assert errors[0] == ("Tensor on device cpu is not on the expected "
                         "device meta!")


def test_a_registered_buffer_moves_with_the_model(nn):
    net = civilnet_fc(nn, register=True).to("meta")
    assert net.syszux.device.type == "meta"
    assert net(torch.randn(1, 2, device="meta")).device.type == "meta"


def edit_in_a_forked_worker(layer):
    """weight[0, 0] = 42 in a forked process; True if the parent sees it."""
    def work():
        with torch.no_grad():
            layer.weight[0, 0] = 42.0

    worker = torch.multiprocessing.get_context("fork").Process(target=work)
    worker.start()
    worker.join()
    assert worker.exitcode == 0
    return bool(layer.weight[0, 0] == 42.0)


needs_fork = pytest.mark.skipif(
    "fork" not in torch.multiprocessing.get_all_start_methods(),
    reason="needs the fork start method")


@needs_fork
def test_share_memory_lets_a_worker_process_edit_the_parents_weights(nn):
    assert edit_in_a_forked_worker(nn.Linear(2, 2).share_memory())


@needs_fork
def test_without_share_memory_a_worker_process_edits_a_private_copy(nn):
    assert not edit_in_a_forked_worker(nn.Linear(2, 2))


def test_apply_visits_modules_and_private_apply_visits_tensors(both):
    def visits(lib):
        model = lib.Sequential(lib.Linear(2, 3), lib.ReLU())
        modules, tensors = [], []
        model.apply(lambda m: modules.append(type(m).__name__))
        model._apply(lambda t: tensors.append(tuple(t.shape)) or t)
        return modules, tensors

    real, mini = both
    assert visits(mini) == visits(real) == (
        ["Linear", "ReLU", "Sequential"], [(3, 2), (3,)])


def test_autocast_computes_in_low_precision_and_keeps_float32_weights(nn):
    layer = nn.Linear(3, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = layer(torch.randn(4, 3))
    assert out.dtype == torch.bfloat16
    assert layer.weight.dtype == torch.float32


# Memory formats: `to(memory_format=...)` reaches 4-D and 5-D tensors only;
# every other conversion keeps each tensor's layout (preserve_format), for
# parameters, their grads and buffers alike, on every path of _apply.

@quiet
@pytest.mark.parametrize("label", CONVERSIONS)
def test_conversion_of_a_channels_last_net_matches_torch(both, label):
    real, mini = both
    convert = CONVERSIONS[label]
    assert (conversion_snapshot(with_grads(make_apply_net(mini, CL)), convert)
            == conversion_snapshot(with_grads(make_apply_net(real, CL)), convert))


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("label", ["double", "to_channels_last", "to_meta",
                                   "to_meta_then_empty",
                                   "to_contiguous_format"])
def test_flags_keep_torchs_layouts(both, flags, swap, overwrite, label):
    flags(overwrite=overwrite, swap=swap)
    real, mini = both
    convert = CONVERSIONS[label]
    assert (conversion_snapshot(with_grads(make_apply_net(mini, CL)), convert)
            == conversion_snapshot(with_grads(make_apply_net(real, CL)), convert))


def is_channels_last(t):
    return (t.is_contiguous(memory_format=CL)
            and not t.is_contiguous())


def test_channels_last_reaches_4d_params_grads_and_buffers_only(nn):
    net = with_grads(make_apply_net(nn))
    flat = {name: t.stride() for name, t in tensors(net) if t.dim() < 4}
    net.to(memory_format=CL)
    leaf = net.a
    for t in (leaf.kernel, leaf.kernel.grad, leaf.image, leaf.mask):
        assert is_channels_last(t)
    assert leaf.kernel.stride() == (12, 1, 6, 3)
    assert leaf.mask.dtype == torch.int64  # the layout changes, not dtype
    assert {name: t.stride() for name, t in tensors(net)
            if t.dim() < 4} == flat
    assert not leaf.tall.is_contiguous()  # a 2-D tensor is left as it is


@pytest.mark.parametrize("cast", ["double", "half", "bfloat16", "float",
                                  "to_dtype", "to_device_dtype",
                                  "type_dtype", "cpu", "share_memory",
                                  "to_meta", "to_empty_cpu",
                                  "to_meta_then_empty", "to_preserve_format"])
def test_every_other_conversion_keeps_channels_last(nn, cast):
    net = CONVERSIONS[cast](with_grads(make_apply_net(nn, CL)))
    leaf = net.a
    for t in (leaf.kernel, leaf.kernel.grad, leaf.image, leaf.mask):
        assert is_channels_last(t)
    assert leaf.tall.stride() == (1, 3)


def test_contiguous_format_undoes_channels_last_on_4d_tensors_only(nn):
    net = with_grads(make_apply_net(nn, CL))
    leaf = net.to(memory_format=torch.contiguous_format).a
    for t in (leaf.kernel, leaf.kernel.grad, leaf.image, leaf.mask):
        assert t.is_contiguous() and not t.is_contiguous(memory_format=CL)
    assert leaf.tall.stride() == (1, 3)  # still the transposed layout


def volume_net(nn, layout=torch.contiguous_format):
    """A 5-D weight (Conv3d-like) with its grad, a 5-D buffer, a 2-D
    weight: what channels_last_3d is for."""
    torch.manual_seed(0)
    net = nn.Module()
    net.kernel = Parameter(
        torch.randn(4, 3, 2, 2, 2).contiguous(memory_format=layout))
    net.weight = Parameter(torch.randn(3, 2))
    net.volume = Buffer(
        torch.rand(1, 3, 2, 2, 2).contiguous(memory_format=layout))
    return with_grads(net)


def test_channels_last_3d_reaches_5d_tensors(nn):
    net = volume_net(nn).to(memory_format=CL3)
    for t in (net.kernel, net.kernel.grad, net.volume):
        assert t.is_contiguous(memory_format=CL3) and not t.is_contiguous()
    assert net.kernel.stride() == (24, 1, 12, 6, 3)
    assert net.weight.stride() == (2, 1)


@pytest.mark.parametrize("label", ["to_channels_last_3d", "double", "half",
                                   "to_meta", "to_meta_then_empty",
                                   "to_contiguous_format"])
def test_5d_layouts_match_torch(both, label):
    convert = {**CONVERSIONS,
               "to_channels_last_3d": lambda m: m.to(memory_format=CL3)}[label]
    real, mini = both
    assert (conversion_snapshot(volume_net(mini, CL3), convert)
            == conversion_snapshot(volume_net(real, CL3), convert))
    assert (conversion_snapshot(volume_net(mini), convert)
            == conversion_snapshot(volume_net(real), convert))


def test_channels_last_on_a_5d_tensor_raises_torchs_error(both):
    errors = []
    for lib in both:
        with pytest.raises(RuntimeError) as e:
            volume_net(lib).to(memory_format=CL)
        errors.append(str(e.value))
    assert errors[0] == errors[1] == (
        "required rank 4 tensor to use channels_last format")


def test_memory_format_leaves_3d_and_6d_tensors_alone(nn):
    net = nn.Module()
    net.seq = Parameter(torch.randn(2, 3, 4).transpose(0, 2))
    net.big = Parameter(torch.randn(1, 2, 1, 2, 1, 2))
    strides = [net.seq.stride(), net.big.stride()]
    for fmt in (CL, CL3, torch.contiguous_format):
        net.to(memory_format=fmt)
        assert [net.seq.stride(), net.big.stride()] == strides


# torch's asserts on the new-Parameter path of _apply, in torch's words

def test_a_non_leaf_grad_cannot_be_replaced(both):
    errors = []
    for lib in both:
        layer = lib.Linear(2, 2)
        layer.weight.grad = torch.ones(2, 2, requires_grad=True) * 2
        with pytest.raises(AssertionError) as e:
            layer.to("meta")
        errors.append(str(e.value))
    assert errors[0] == errors[1] == "param_grad must be a leaf tensor"


def test_a_non_leaf_grad_is_still_cast_through_data(nn):
    layer = nn.Linear(2, 2)
    grad = layer.weight.grad = torch.ones(2, 2, requires_grad=True) * 2
    layer.double()
    assert layer.weight.grad is grad and grad.dtype == torch.float64
    assert not grad.is_leaf and grad.requires_grad


def test_a_grad_after_create_graph_stops_a_meta_move(nn):
    layer = nn.Linear(2, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns of a reference cycle
        layer(torch.ones(3, 2)).pow(2).sum().backward(create_graph=True)
    with pytest.raises(AssertionError, match="^param_grad must be a leaf"):
        layer.to("meta")


def test_a_plain_tensor_written_into_parameters_cannot_be_replaced(both):
    errors = []
    for lib in both:
        layer = lib.Linear(2, 2)
        layer._parameters["bias"] = torch.zeros(2)  # bypasses registration
        layer.double()  # the .data path never asks
        with pytest.raises(AssertionError) as e:
            layer.to("meta")
        errors.append(str(e.value))
    assert errors[0] == errors[1] == "param must be a Parameter"


def test_an_fn_that_moves_parameters_but_not_grads_raises(both):
    def to_meta_params_only(t):
        return t.to("meta") if isinstance(t, Parameter) else t

    errors = []
    for lib in both:
        layer = with_grads(lib.Linear(2, 2))
        with pytest.raises(AssertionError) as e:
            layer._apply(to_meta_params_only)
        errors.append(str(e.value))
    assert errors[0] == errors[1] == "out_param.grad must not be None"


def test_mininn_leaves_out_xpu_ipu_and_mtia():
    """A deliberate difference (chapter 6): torch's xpu(), ipu() and mtia()
    are cuda() with another device name; mininn has none of them."""
    import mininn

    for name in ("xpu", "ipu", "mtia"):
        assert hasattr(torch.nn.Module, name)
        assert not hasattr(mininn.Module, name)
        assert not hasattr(mininn.Linear(2, 2), name)


def test_a_replaced_grad_keeps_its_requires_grad(both):
    def facts(lib):
        layer = lib.Linear(2, 2)
        layer.weight.grad = torch.zeros(2, 2, requires_grad=True)  # a leaf
        layer.to("meta")
        grad = layer.weight.grad
        return grad.device.type, grad.requires_grad, grad.is_leaf

    real, mini = both
    assert facts(mini) == facts(real) == ("meta", True, True)


def test_chapter_6_says_no_gpu_run_is_recorded_exactly_while_none_is():
    """The GPU section links the GPU runs page and says plainly that no run
    is recorded; once tools/gpu_run.py has left a report in reports/gpu/,
    that sentence is false and must go."""
    import json
    from pathlib import Path

    import gpu_run

    book = Path(__file__).resolve().parent.parent / "book"
    reports = gpu_run.recorded()
    cells = json.loads((book / "06_apply.ipynb").read_text())["cells"]
    prose = " ".join(" ".join("".join(c["source"]).split()) for c in cells
                     if c["cell_type"] == "markdown")
    assert "[GPU runs](gpu_runs.md)" in prose
    assert ("No GPU run is recorded yet" in prose) == (not reports), reports


def test_to_casts_complex_parameters_and_buffers_too(both):
    """Module.to gives the dtype to floating-point *and* complex tensors."""
    def dtypes(lib):
        layer = lib.Linear(2, 2)
        layer.weight = Parameter(torch.randn(2, 2, dtype=torch.cfloat))
        layer.register_buffer("phase", torch.ones(2, dtype=torch.cfloat))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's complex-module warning
            layer.to(torch.cdouble)
        return layer.weight.dtype, layer.phase.dtype, layer.bias.dtype

    real, mini = both
    assert dtypes(mini) == dtypes(real) == (torch.cdouble,) * 3
