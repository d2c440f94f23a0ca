"""Chapter 3: calling a module, and the layers.

Tests taking `nn` run once on torch.nn and once on mininn; tests taking
`both` build the same thing on the two backends from the same seed and
compare them bit for bit (torch.equal).
"""
import re

import pytest
import torch
import torch.nn.functional as F

import mininn.layers
from support import (build_both, constructor_arguments, exported_classes,
                     randn)
from helpers import error_of, same_tensors


# ------------------------------------------------------------ signatures

# every public class chapter 3 exports, found in the package itself
@pytest.mark.parametrize("name", exported_classes(mininn.layers))
def test_every_layer_takes_torchs_constructor_arguments(name):
    ours = getattr(mininn.layers, name)
    assert constructor_arguments(ours) == constructor_arguments(
        getattr(torch.nn, name))


@pytest.mark.parametrize("make", [
    lambda nn: nn.Sigmoid(1), lambda nn: nn.Tanh(inplace=True),
    lambda nn: nn.ReLU(False, 1), lambda nn: nn.Linear(2, 2, biass=False),
    lambda nn: nn.MaxPool2d(), lambda nn: nn.BatchNorm1d(3, 1e-5, 0.1, True,
                                                        True, None, None,
                                                        False),
], ids=["sigmoid-arg", "tanh-kwarg", "relu-two", "linear-typo", "pool-none",
        "bn-bias-positional"])
def test_an_argument_torch_does_not_take_is_refused_as_torch_refuses_it(
        both, make):
    # Python names the class that defines __init__: torch's shared base
    # class (_MaxPoolNd, _BatchNorm) where ours has none, or _NormBase
    theirs, ours = (error_of(make, nn) for nn in both)
    assert theirs is not None and theirs.startswith("TypeError: ")
    assert ours.partition(".__init__()")[2] == theirs.partition(
        ".__init__()")[2] != ""


# ------------------------------------------------------------ __call__


def test_calling_a_module_runs_forward_with_args_and_kwargs(nn):
    class Affine(nn.Module):
        def forward(self, x, *, scale=1.0, shift=0.0):
            return x * scale + shift

    out = Affine()(torch.ones(2), scale=3.0, shift=1.0)
    assert torch.equal(out, torch.full((2,), 4.0))


def test_missing_forward_raises_not_implemented_error_when_called(nn):
    class Forgetful(nn.Module):
        pass

    assert error_of(Forgetful(), torch.ones(1)) == (
        'NotImplementedError: Module [Forgetful] is missing the required '
        '"forward" function')


def test_call_goes_through_call_impl(nn):
    seen = []

    class Traced(nn.Module):
        def forward(self, x):
            return x + 1

        def _call_impl(self, *args, **kwargs):
            seen.append(args)
            return super()._call_impl(*args, **kwargs)

    assert Traced()(torch.zeros(1)).item() == 1.0
    assert len(seen) == 1


def test_forward_is_the_placeholder_on_the_base_class(nn):
    assert nn.Module.forward.__name__ == "_forward_unimplemented"


def test_a_lazy_parameter_made_by_a_forward_pre_hook_needs_the_call(nn):
    # exercise 3 of the chapter: what nn.LazyLinear does, in small
    class LazyScale(nn.Module):
        def __init__(self):
            super().__init__()
            self._handle = self.register_forward_pre_hook(self._initialize)

        def _initialize(self, module, args):
            self.weight = nn.Parameter(torch.ones(args[0].shape[-1]))
            self._handle.remove()

        def forward(self, x):
            return x * self.weight

    x = randn(2, 3)
    assert error_of(LazyScale().forward, x) == (
        "AttributeError: 'LazyScale' object has no attribute 'weight'")
    lazy = LazyScale()
    assert torch.equal(lazy(x), x)
    weight = lazy.weight
    assert [n for n, _ in lazy.named_parameters()] == ["weight"]
    assert len(lazy._forward_pre_hooks) == 0
    assert torch.equal(lazy(2 * x), 2 * x) and lazy.weight is weight


# ------------------------------------------------------------ Linear


@pytest.mark.parametrize("bias", [True, False])
def test_linear_same_seed_same_parameters_and_output(both, bias):
    theirs, ours = build_both(both, lambda nn: nn.Linear(5, 3, bias=bias))
    assert same_tensors(ours.named_parameters(), theirs.named_parameters())
    x = randn(4, 5)
    assert torch.equal(ours(x), theirs(x))


def test_linear_without_bias_registers_none(nn):
    lin = nn.Linear(2, 3, bias=False)
    assert lin.bias is None
    assert "bias" in lin._parameters
    assert [n for n, _ in lin.named_parameters()] == ["weight"]


def test_linear_repr(nn):
    assert repr(nn.Linear(2, 3, bias=False)) == (
        "Linear(in_features=2, out_features=3, bias=False)")


@pytest.mark.parametrize("make", [lambda nn: nn.Linear(4, 3),
                                  lambda nn: nn.Conv2d(2, 4, (2, 3))],
                         ids=["linear", "conv2d"])
def test_reset_parameters_redraws_like_torch(both, make):
    theirs, ours = build_both(both, make)
    for layer in (theirs, ours):
        torch.manual_seed(7)
        layer.reset_parameters()
    assert same_tensors(ours.named_parameters(), theirs.named_parameters())


def test_linear_accepts_dtype(nn):
    assert nn.Linear(2, 2, dtype=torch.float64).weight.dtype == torch.float64


WITH_STATE = {
    "linear": lambda nn, **kw: nn.Linear(3, 2, **kw),
    "conv2d": lambda nn, **kw: nn.Conv2d(2, 4, 3, **kw),
    "batchnorm1d": lambda nn, **kw: nn.BatchNorm1d(3, **kw),
    "batchnorm2d": lambda nn, **kw: nn.BatchNorm2d(3, **kw),
}


@pytest.mark.parametrize("make", WITH_STATE.values(), ids=WITH_STATE)
def test_factory_kwargs_reach_every_parameter_and_buffer(nn, make):
    layer = make(nn, device="meta", dtype=torch.float64)
    tensors = dict(layer.named_parameters()) | dict(layer.named_buffers())
    assert {t.device.type for t in tensors.values()} == {"meta"}
    kinds = {name: t.dtype for name, t in tensors.items()}
    counter = kinds.pop("num_batches_tracked", torch.int64)
    assert counter == torch.int64  # the batch counter keeps its dtype
    assert set(kinds.values()) == {torch.float64}


@pytest.mark.parametrize("make", WITH_STATE.values(), ids=WITH_STATE)
def test_parameters_require_grad_and_buffers_do_not(nn, make):
    layer = make(nn)
    assert all(type(p) is nn.Parameter and p.requires_grad
               for p in layer.parameters())
    assert not any(b.requires_grad for b in layer.buffers())


# ------------------------------------------------------------ Conv2d

CONV_CONFIGS = [
    ((3, 6, 5), {}),
    ((3, 8, (3, 5)), {"stride": 2, "padding": 1, "bias": False}),
    ((4, 8, 3), {"groups": 2, "dilation": 2}),
    ((3, 4, (2, 3)), {"padding": (1, 2), "dilation": (1, 2)}),
    ((3, 4, 3), {"padding": "same", "stride": (1, 1)}),
    ((3, 4, (2, 3)), {"padding": "same", "dilation": 2}),
    ((4, 6, 3), {"padding": "valid", "groups": 2}),
]


@pytest.mark.parametrize("args,kwargs", CONV_CONFIGS)
def test_conv2d_same_seed_same_parameters_repr_and_output(both, args,
                                                          kwargs):
    theirs, ours = build_both(both, lambda nn: nn.Conv2d(*args, **kwargs))
    assert same_tensors(ours.named_parameters(), theirs.named_parameters())
    assert repr(ours) == repr(theirs)
    x = randn(2, args[0], 9, 10)
    assert torch.equal(ours(x), theirs(x))


@pytest.mark.parametrize("args,kwargs", CONV_CONFIGS)
def test_conv2d_same_seed_same_output(both, args, kwargs):
    # the output alone (no repr): dilation, groups and padding reach F.conv2d
    theirs, ours = build_both(both, lambda nn: nn.Conv2d(*args, **kwargs))
    x = randn(2, args[0], 9, 10)
    assert torch.equal(ours(x), theirs(x))


def undrawn_conv2d(nn):
    """A Conv2d subclass with its own reset_parameters, which draws nothing
    (torch's __init__ calls it last, so a subclass may initialise its own
    way): what __init__ itself builds, before any weight is drawn."""
    class Undrawn(nn.Conv2d):
        def reset_parameters(self):
            pass
    return Undrawn


def test_conv2d_keeps_a_padding_string_and_takes_a_stride_pair_of_ones(nn):
    conv = undrawn_conv2d(nn)(3, 4, 3, padding="same", stride=(1, 1))
    assert conv.padding == "same" and conv.stride == (1, 1)
    assert undrawn_conv2d(nn)(3, 4, 3, padding="valid").padding == "valid"


def test_conv2d_creates_weight_and_bias_with_the_factory_arguments(nn):
    conv = undrawn_conv2d(nn)(2, 4, 3, device="meta", dtype=torch.float64)
    assert [(name, p.shape, p.dtype, p.device.type)
            for name, p in conv._parameters.items()] == [
        ("weight", (4, 2, 3, 3), torch.float64, "meta"),
        ("bias", (4,), torch.float64, "meta")]


def test_conv2d_repr_shows_pairs_and_non_defaults(nn):
    conv = nn.Conv2d(3, 8, 3, stride=2, padding=1, groups=1, bias=False)
    assert repr(conv) == ("Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), "
                          "padding=(1, 1), bias=False)")


def test_conv2d_weight_shape_divides_in_channels_by_groups(nn):
    assert nn.Conv2d(6, 9, (2, 4), groups=3).weight.shape == (9, 2, 2, 4)


@pytest.mark.parametrize("kwargs,message", [
    ({"groups": 0}, "ValueError: groups must be a positive integer"),
    ({"groups": 4}, "ValueError: in_channels must be divisible by groups"),
    ({"groups": 2, "out_channels": 5},
     "ValueError: out_channels must be divisible by groups"),
])
def test_conv2d_rejects_bad_arguments(nn, kwargs, message):
    kwargs = {"in_channels": 6, "out_channels": 4, "kernel_size": 3,
              **kwargs}
    assert error_of(nn.Conv2d, **kwargs) == message


PADDING_MODES = ["reflect", "circular", "replicate"]


@pytest.mark.parametrize("mode", PADDING_MODES)
def test_conv2d_padding_modes_are_not_rebuilt_and_say_so(both, mode):
    # a deliberate difference: mininn does not rebuild the padding modes,
    # and says so, naming the argument, instead of computing something else
    theirs, ours = both
    assert error_of(theirs.Conv2d, 3, 3, 3, padding_mode=mode) is None
    assert error_of(ours.Conv2d, 3, 3, 3, padding_mode=mode) == (
        "NotImplementedError: mininn's Conv2d does not rebuild "
        f"padding_mode={mode!r}")


def sets_sorted(message):
    """`message` with each {...} set literal in it sorted: a set of strings
    prints in hash order, which changes from one process to the next."""
    return re.sub(r"\{([^}]*)\}",
                  lambda m: "{" + ", ".join(sorted(m[1].split(", "))) + "}",
                  message)


@pytest.mark.parametrize("kwargs", [
    {"padding": "full"}, {"padding": "SAME"}, {"padding_mode": "mirror"},
    {"padding": "same", "stride": 2}, {"padding": "same", "stride": (1, 2)},
    {"padding": "full", "padding_mode": "reflect"},
    {"padding": "same", "stride": 2, "padding_mode": "mirror"},
    {"groups": 2, "padding": "full"},
], ids=str)
def test_conv2d_a_value_torch_rejects_gets_torchs_error(both, kwargs):
    theirs, ours = (error_of(nn.Conv2d, 4, 4, 3, **kwargs) for nn in both)
    assert theirs is not None and theirs.startswith("ValueError: ")
    assert sets_sorted(ours) == sets_sorted(theirs)


def test_conv2d_padding_string_message_is_torchs_to_the_letter(both):
    # the two-string set is built the same way in both, so its order agrees
    theirs, ours = (error_of(nn.Conv2d, 4, 4, 3, padding="full")
                    for nn in both)
    assert ours == theirs


def test_conv2d_checks_groups_before_refusing_a_padding_mode(nn):
    message = error_of(nn.Conv2d, 3, 3, 3, groups=2, padding_mode="reflect")
    assert message == "ValueError: in_channels must be divisible by groups"


# ------------------------------------------------------------ no parameters


@pytest.mark.parametrize("make", [
    lambda nn: nn.ReLU(), lambda nn: nn.Sigmoid(), lambda nn: nn.Tanh(),
    lambda nn: nn.Identity(), lambda nn: nn.Flatten(),
    lambda nn: nn.Flatten(0, 2), lambda nn: nn.Flatten(-2),
    lambda nn: nn.MaxPool2d(2), lambda nn: nn.MaxPool2d((2, 3), 1, 1),
    lambda nn: nn.MaxPool2d(3, 2, padding=1),
    lambda nn: nn.AdaptiveAvgPool2d((3, 2)),
    lambda nn: nn.AdaptiveAvgPool2d(1),
], ids=["relu", "sigmoid", "tanh", "identity", "flatten", "flatten02",
        "flatten-2", "maxpool", "maxpool-pad", "maxpool-3-2-1", "adaptive",
        "adaptive1"])
def test_parameterless_layer_matches_torch(both, make):
    theirs, ours = build_both(both, make)
    assert repr(ours) == repr(theirs)
    assert list(ours.named_parameters()) == []
    x = randn(2, 3, 7, 8)
    assert torch.equal(ours(x), theirs(x))


def test_relu_inplace_writes_into_the_input_and_says_so(nn):
    relu = nn.ReLU(inplace=True)
    x = torch.tensor([-1.0, 2.0])
    assert relu(x) is x
    assert x.tolist() == [0.0, 2.0]
    assert repr(relu) == "ReLU(inplace=True)"
    assert repr(nn.ReLU()) == "ReLU()"


def test_identity_ignores_its_arguments(nn):
    ident = nn.Identity(54, unused=0.1)
    x = torch.ones(2)
    assert ident(x) is x
    assert repr(ident) == "Identity()"


def test_flatten_keeps_the_batch_dim_by_default(nn):
    assert nn.Flatten()(torch.zeros(2, 3, 4)).shape == (2, 12)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


def test_maxpool2d_stride_defaults_to_kernel_size(nn):
    pool = nn.MaxPool2d(3)
    assert pool.stride == 3
    assert repr(pool) == ("MaxPool2d(kernel_size=3, stride=3, padding=0, "
                          "dilation=1, ceil_mode=False)")


@pytest.mark.parametrize("kwargs", [
    {"ceil_mode": True}, {"dilation": 2}, {"stride": 1, "dilation": (1, 2)},
    {"padding": 1, "ceil_mode": True}, {"stride": 3, "ceil_mode": True},
], ids=str)
def test_maxpool2d_dilation_and_ceil_mode_match_torch(both, kwargs):
    theirs, ours = (nn.MaxPool2d(2, **kwargs) for nn in both)
    assert repr(ours) == repr(theirs)
    x = randn(2, 3, 7, 8)
    assert torch.equal(ours(x), theirs(x))


def test_maxpool2d_ceil_mode_counts_the_last_partial_window(nn):
    x = torch.arange(25.0).view(1, 1, 5, 5)
    assert nn.MaxPool2d(2)(x).shape == (1, 1, 2, 2)
    assert nn.MaxPool2d(2, ceil_mode=True)(x).shape == (1, 1, 3, 3)


def test_maxpool2d_return_indices_returns_where_each_maximum_was(both):
    theirs, ours = (nn.MaxPool2d(2, return_indices=True) for nn in both)
    x = randn(1, 2, 6, 6)
    values, indices = ours(x)
    assert all(torch.equal(a, b)
               for a, b in zip((values, indices), theirs(x), strict=True))
    assert torch.equal(x.flatten(2).gather(2, indices.flatten(2)),
                       values.flatten(2))
    # the repr leaves return_indices out, as torch's does
    assert repr(ours) == repr(theirs)


def test_adaptive_avg_pool2d_output_size_and_repr(nn):
    pool = nn.AdaptiveAvgPool2d((6, 6))
    assert pool(torch.zeros(1, 2, 13, 17)).shape == (1, 2, 6, 6)
    assert repr(pool) == "AdaptiveAvgPool2d(output_size=(6, 6))"


@pytest.mark.parametrize("p", [0.0, 0.25, 1.0])
def test_dropout_same_seed_same_mask_in_training(both, p):
    theirs, ours = (nn.Dropout(p) for nn in both)
    x = randn(64)
    torch.manual_seed(3)
    a = ours(x)
    torch.manual_seed(3)
    assert torch.equal(a, theirs(x))


def test_dropout_is_identity_in_eval_mode(nn):
    x = torch.ones(100)
    assert torch.equal(nn.Dropout(0.9).eval()(x), x)


def test_dropout_in_eval_mode_returns_its_input_itself(nn):
    x = randn(4)
    assert nn.Dropout(0.3).eval()(x) is x
    assert nn.Dropout(0.3)(x) is not x


def test_dropout_inplace_writes_into_the_input(nn):
    x = torch.ones(100)
    torch.manual_seed(0)
    nn.Dropout(0.5, inplace=True)(x)
    assert (x == 0).any()


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_rejects_a_bad_probability(nn, p):
    assert error_of(nn.Dropout, p) == (
        "ValueError: dropout probability has to be between 0 and 1, "
        f"but got {p}")


def test_dropout_repr(nn):
    assert repr(nn.Dropout(0.3, True)) == "Dropout(p=0.3, inplace=True)"


# ------------------------------------------------------------ BatchNorm


def test_batchnorm_buffers_names_dtypes_and_initial_values(nn):
    bn = nn.BatchNorm2d(3)
    assert [(n, b.dtype, b.tolist()) for n, b in bn.named_buffers()] == [
        ("running_mean", torch.float32, [0.0, 0.0, 0.0]),
        ("running_var", torch.float32, [1.0, 1.0, 1.0]),
        ("num_batches_tracked", torch.int64, 0)]
    assert [(n, p.tolist()) for n, p in bn.named_parameters()] == [
        ("weight", [1.0, 1.0, 1.0]), ("bias", [0.0, 0.0, 0.0])]


def test_batchnorm_running_stats_are_persistent(nn):
    # every running statistic goes into a checkpoint (state_dict, chapter
    # 7): none is in the set of buffers that state_dict leaves out
    for bn in (nn.BatchNorm1d(3), nn.BatchNorm2d(3)):
        assert bn._non_persistent_buffers_set == set()


def test_batchnorm_updates_running_stats_only_in_training(nn):
    bn = nn.BatchNorm1d(2)
    x = randn(8, 2) + 3
    bn(x)
    after_train = [b.clone() for b in bn.buffers()]
    assert after_train[2].item() == 1
    assert torch.allclose(after_train[0], 0.1 * x.mean(0))
    bn.eval()(x)
    assert all(torch.equal(a, b) for a, b in zip(after_train, bn.buffers()))


@pytest.mark.parametrize("kwargs", [
    {}, {"momentum": None}, {"momentum": 0.5}, {"affine": False},
    {"track_running_stats": False}, {"eps": 1e-3}, {"bias": False},
])
@pytest.mark.parametrize("dims", [1, 2])
def test_batchnorm_train_then_eval_matches_torch(both, kwargs, dims):
    shape = (6, 3) if dims == 1 else (6, 3, 4, 4)
    theirs, ours = (getattr(nn, f"BatchNorm{dims}d")(3, **kwargs)
                    for nn in both)
    gen = torch.Generator().manual_seed(0)
    for step in range(4):
        x = torch.randn(*shape, generator=gen) * 2 + 1
        for bn in (ours, theirs):
            bn.train(step < 3)
        assert torch.equal(ours(x), theirs(x))
        assert same_tensors(ours.named_buffers(), theirs.named_buffers())
    assert repr(ours) == repr(theirs)


def test_batchnorm1d_accepts_3d_input(both):
    theirs, ours = (nn.BatchNorm1d(3) for nn in both)
    x = randn(4, 3, 5)
    assert torch.equal(ours(x), theirs(x))


def test_batchnorm_momentum_none_is_a_cumulative_average(nn):
    bn = nn.BatchNorm1d(1, momentum=None)
    for value in (1.0, 2.0, 6.0):
        bn(torch.full((4, 1), value))
    assert bn.running_mean.item() == pytest.approx(3.0)


def test_batchnorm_without_tracking_registers_none_buffers(nn):
    bn = nn.BatchNorm2d(2, affine=False, track_running_stats=False)
    assert bn.running_mean is None and bn.num_batches_tracked is None
    assert bn.weight is None and bn.bias is None
    assert list(bn.named_buffers()) == [] == list(bn.named_parameters())
    assert set(bn._buffers) == {"running_mean", "running_var",
                                "num_batches_tracked"}


def test_batchnorm_without_tracking_uses_batch_stats_in_eval(nn):
    bn = nn.BatchNorm1d(2, track_running_stats=False).eval()
    x = randn(5, 2) * 3 + 7
    assert torch.allclose(bn(x).mean(0), torch.zeros(2), atol=1e-5)


@pytest.mark.parametrize("dims,shape,message", [
    (1, (2, 3, 1, 1), "ValueError: expected 2D or 3D input (got 4D input)"),
    (2, (2, 3), "ValueError: expected 4D input (got 2D input)"),
])
def test_batchnorm_checks_the_input_dim(nn, dims, shape, message):
    bn = getattr(nn, f"BatchNorm{dims}d")(3)
    assert error_of(bn, torch.ones(*shape)) == message


def test_batchnorm_repr(nn):
    assert repr(nn.BatchNorm2d(4, momentum=None, bias=False)) == (
        "BatchNorm2d(4, eps=1e-05, momentum=None, affine=True, bias=False, "
        "track_running_stats=True)")


def test_batchnorm_saves_its_parameters_and_all_three_buffers(nn):
    bn = nn.BatchNorm2d(2)
    bn(randn(4, 2, 3, 3))
    state = bn.state_dict()
    assert list(state) == ["weight", "bias", "running_mean", "running_var",
                           "num_batches_tracked"]
    assert state["num_batches_tracked"].dtype == torch.int64
    assert state["num_batches_tracked"].item() == 1


def test_batchnorm_version_is_2(nn):
    assert nn.BatchNorm1d._version == 2 == nn.BatchNorm2d(1)._version


def test_batchnorm_reset_parameters_resets_the_running_stats_too(nn):
    bn = nn.BatchNorm1d(2)
    bn(randn(4, 2) + 3)
    with torch.no_grad():
        bn.weight.fill_(5.0)
    bn.reset_parameters()
    assert bn.num_batches_tracked.item() == 0
    assert bn.running_mean.tolist() == [0.0, 0.0]
    assert bn.running_var.tolist() == [1.0, 1.0]
    assert bn.weight.tolist() == [1.0, 1.0]


def stats_of(bn):
    return (bn.num_batches_tracked.item(), bn.running_mean.tolist(),
            bn.running_var.tolist())


def test_batchnorm_reset_running_stats_zeroes_the_count_too(nn):
    bn = nn.BatchNorm1d(2)
    bn.num_batches_tracked.fill_(3)  # as after three batches, without one
    bn.running_mean.fill_(2.0)
    bn.running_var.fill_(4.0)
    bn.reset_running_stats()
    assert stats_of(bn) == (0, [0.0, 0.0], [1.0, 1.0])


def test_batchnorm_reset_parameters_resets_the_running_stats_without_a_batch(
        nn):
    bn = nn.BatchNorm1d(2)
    bn.num_batches_tracked.fill_(3)
    bn.running_mean.fill_(2.0)
    bn.running_var.fill_(4.0)
    bn.reset_parameters()
    assert stats_of(bn) == (0, [0.0, 0.0], [1.0, 1.0])


def test_batchnorm_reset_running_stats(nn):
    bn = nn.BatchNorm1d(2)
    bn(randn(4, 2))
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0
    assert bn.running_mean.tolist() == [0.0, 0.0]
    assert bn.running_var.tolist() == [1.0, 1.0]


# ------------------------------------------------------------ networks


def lenet(nn):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.flatten = nn.Flatten()
            self.linear1 = nn.Linear(1024, 512)
            self.linear2 = nn.Linear(512, 128)
            self.linear3 = nn.Linear(128, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.flatten(F.relu(self.conv2(x)))
            x = F.relu(self.linear1(x))
            return self.linear3(F.relu(self.linear2(x)))

    return Model()


def civilnet_conv(nn):
    class CivilNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.bn1 = nn.BatchNorm2d(6)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.bn2 = nn.BatchNorm2d(16)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.drop = nn.Dropout(0.25)
            self.fc3 = nn.Linear(84, 10)
            self.scratch = torch.zeros(1, 1)

        def forward(self, x):
            x = self.pool(F.relu(self.bn1(self.conv1(x))))
            x = self.pool(F.relu(self.bn2(self.conv2(x))))
            x = F.relu(self.fc1(x.view(-1, 16 * 5 * 5)))
            return self.fc3(self.drop(F.relu(self.fc2(x))))

    return CivilNet()


def small_alexnet(nn):
    """AlexNet's layer pattern at a width and size that test quickly."""
    return nn.Sequential(
        nn.Conv2d(3, 8, kernel_size=11, stride=4, padding=2),
        nn.ReLU(inplace=True), nn.MaxPool2d(kernel_size=3, stride=2),
        nn.Conv2d(8, 16, kernel_size=5, padding=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2), nn.AdaptiveAvgPool2d((6, 6)),
        nn.Flatten(), nn.Dropout(), nn.Linear(16 * 6 * 6, 32),
        nn.ReLU(inplace=True), nn.Dropout(), nn.Linear(32, 10))


@pytest.mark.parametrize("build,shape", [
    (lenet, (4, 1, 28, 28)), (civilnet_conv, (4, 3, 32, 32)),
    (small_alexnet, (2, 3, 96, 96)),
], ids=["lenet", "civilnet", "alexnet-small"])
def test_network_same_seed_same_everything_in_train_and_eval(both, build,
                                                            shape):
    theirs, ours = build_both(both, build)
    assert same_tensors(ours.named_parameters(), theirs.named_parameters())
    assert repr(ours) == repr(theirs)
    x = randn(*shape, seed=2)
    for mode in (True, False):
        ours.train(mode)
        theirs.train(mode)
        torch.manual_seed(1)
        y = ours(x)
        torch.manual_seed(1)
        assert torch.equal(y, theirs(x))
        assert same_tensors(ours.named_buffers(), theirs.named_buffers())


def test_network_gradients_match(both):
    theirs, ours = build_both(both, civilnet_conv)
    x = randn(4, 3, 32, 32, seed=2)
    for net in (ours, theirs):
        torch.manual_seed(1)
        net(x).square().sum().backward()
    grads = [[(n, p.grad) for n, p in net.named_parameters()]
             for net in (ours, theirs)]
    assert same_tensors(*grads)


def test_conv2d_keeps_no_transposed_convolution_state(both):
    # a deliberate difference: torch's Conv2d inherits _ConvNd's flags for
    # transposed convolutions; ours is written for Conv2d alone
    theirs, ours = (nn.Conv2d(2, 2, 3) for nn in both)
    assert (theirs.transposed, theirs.output_padding) == (False, (0, 0))
    assert not hasattr(ours, "transposed")
    assert not hasattr(ours, "output_padding")


def test_a_plain_tensor_attribute_stays_behind_and_is_not_saved(nn):
    # CivilNet's `scratch`: a tensor that is neither Parameter nor buffer
    torch.manual_seed(0)
    net = civilnet_conv(nn).to("meta")
    assert net.conv1.weight.device.type == "meta"
    assert net.scratch.device.type == "cpu"
    assert "scratch" not in net.state_dict()
    assert "conv1.weight" in net.state_dict()
