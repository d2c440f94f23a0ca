"""Chapter 3: calling a module, the layers and the containers.

Tests taking `nn` run once on torch.nn and once on mininn; tests taking
`both` build the same thing on the two backends from the same seed and
compare them bit for bit (torch.equal).
"""
from collections import OrderedDict

import pytest
import torch
import torch.nn.functional as F

from helpers import error_of, same_tensors


def build_both(both, make, seed=0):
    """make(nn) on torch.nn and on mininn, each right after manual_seed."""
    built = []
    for backend in both:
        torch.manual_seed(seed)
        built.append(make(backend))
    return built


def randn(*shape, seed=1):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def names(module):
    return [name for name, _ in module.named_children()]


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


def test_linear_reset_parameters_redraws_like_torch(both):
    theirs, ours = build_both(both, lambda nn: nn.Linear(4, 4))
    for lin in (theirs, ours):
        torch.manual_seed(7)
        lin.reset_parameters()
    assert same_tensors(ours.named_parameters(), theirs.named_parameters())


def test_linear_accepts_dtype(nn):
    assert nn.Linear(2, 2, dtype=torch.float64).weight.dtype == torch.float64


# ------------------------------------------------------------ Conv2d

CONV_CONFIGS = [
    ((3, 6, 5), {}),
    ((3, 8, (3, 5)), {"stride": 2, "padding": 1, "bias": False}),
    ((4, 8, 3), {"groups": 2, "dilation": 2}),
    ((4, 4, 3), {"padding": "same", "dilation": (1, 2)}),
    ((4, 4, 3), {"padding": "valid"}),
    ((3, 4, 3), {"padding": (1, 2), "padding_mode": "reflect"}),
    ((3, 4, 3), {"padding": 2, "padding_mode": "circular"}),
    ((3, 4, (2, 3)), {"padding": "same", "padding_mode": "replicate"}),
]


@pytest.mark.parametrize("args,kwargs", CONV_CONFIGS)
def test_conv2d_same_seed_same_parameters_repr_and_output(both, args,
                                                          kwargs):
    theirs, ours = build_both(both, lambda nn: nn.Conv2d(*args, **kwargs))
    assert same_tensors(ours.named_parameters(), theirs.named_parameters())
    assert repr(ours) == repr(theirs)
    x = randn(2, args[0], 9, 10)
    assert torch.equal(ours(x), theirs(x))


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
    ({"padding": "same", "stride": 2}, "ValueError: padding='same' is not "
     "supported for strided convolutions"),
])
def test_conv2d_rejects_bad_arguments(nn, kwargs, message):
    kwargs = {"in_channels": 6, "out_channels": 4, "kernel_size": 3,
              **kwargs}
    assert error_of(nn.Conv2d, **kwargs) == message


def without_set_order(message):
    """The message with its printed set replaced by the sorted items.

    The order a set prints in depends on the hash seed of the process that
    compiled the code, so torch's .pyc and ours may disagree."""
    head, _, rest = message.partition("{")
    items, _, tail = rest.partition("}")
    return head + str(sorted(items.split(", "))) + tail


@pytest.mark.parametrize("kwargs", [{"padding": "full"},
                                    {"padding_mode": "mirror"}])
def test_conv2d_bad_padding_strings_raise_like_torch(both, kwargs):
    theirs, ours = (error_of(nn.Conv2d, 3, 3, 3, **kwargs) for nn in both)
    assert theirs is not None
    assert without_set_order(ours) == without_set_order(theirs)


# ------------------------------------------------------------ no parameters


@pytest.mark.parametrize("make", [
    lambda nn: nn.ReLU(), lambda nn: nn.Sigmoid(), lambda nn: nn.Tanh(),
    lambda nn: nn.Identity(), lambda nn: nn.Flatten(),
    lambda nn: nn.Flatten(0, 2), lambda nn: nn.Flatten(-2),
    lambda nn: nn.MaxPool2d(2), lambda nn: nn.MaxPool2d((2, 3), 1, 1),
    lambda nn: nn.MaxPool2d(3, 2, ceil_mode=True),
    lambda nn: nn.AdaptiveAvgPool2d((3, 2)),
    lambda nn: nn.AdaptiveAvgPool2d(1),
], ids=["relu", "sigmoid", "tanh", "identity", "flatten", "flatten02",
        "flatten-2", "maxpool", "maxpool-pad", "maxpool-ceil", "adaptive",
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


def test_maxpool2d_return_indices(both):
    theirs, ours = build_both(both, lambda nn: nn.MaxPool2d(
        2, return_indices=True))
    x = randn(1, 2, 4, 4)
    for a, b in zip(ours(x), theirs(x)):
        assert torch.equal(a, b)


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


def test_batchnorm_version_is_2(nn):
    assert nn.BatchNorm1d._version == 2 == nn.BatchNorm2d(1)._version


def test_batchnorm_reset_running_stats(nn):
    bn = nn.BatchNorm1d(2)
    bn(randn(4, 2))
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0
    assert bn.running_var.tolist() == [1.0, 1.0]


# ------------------------------------------------------------ Sequential


def small_seq(nn):
    return nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))


def test_sequential_names_children_by_position(nn):
    assert names(small_seq(nn)) == ["0", "1", "2"]


def test_sequential_takes_names_from_an_ordered_dict(nn):
    seq = nn.Sequential(OrderedDict(fc=nn.Linear(2, 2), act=nn.Tanh()))
    assert names(seq) == ["fc", "act"]
    assert isinstance(seq[1], nn.Tanh)


def test_sequential_forward_chains_the_layers(both):
    theirs, ours = build_both(both, small_seq)
    x = randn(4, 2)
    assert torch.equal(ours(x), theirs(x))
    assert torch.equal(ours(x), ours[2](ours[1](ours[0](x))))


def test_sequential_negative_index(nn):
    seq = small_seq(nn)
    assert seq[-1] is seq[2] and seq[-3] is seq[0]


@pytest.mark.parametrize("idx", [3, -4])
def test_sequential_index_out_of_range(nn, idx):
    assert error_of(lambda: small_seq(nn)[idx]) == (
        f"IndexError: index {idx} is out of range")


def test_sequential_slice_is_a_sequential_keeping_the_names(nn):
    seq = small_seq(nn)
    part = seq[1:]
    assert type(part) is nn.Sequential
    assert names(part) == ["1", "2"]
    assert part[0] is seq[1]


def test_sequential_len_and_iter(nn):
    seq = small_seq(nn)
    assert len(seq) == 3
    assert list(seq) == [seq[0], seq[1], seq[2]]


def test_sequential_append_returns_self(nn):
    seq = nn.Sequential()
    assert seq.append(nn.ReLU()) is seq
    assert names(seq) == ["0"]


def test_sequential_insert_shifts_later_layers(nn):
    seq = small_seq(nn)
    tanh = nn.Tanh()
    assert seq.insert(-1, tanh) is seq
    assert [type(m).__name__ for m in seq] == [
        "Linear", "ReLU", "Tanh", "Linear"]
    assert seq[2] is tanh and names(seq) == ["0", "1", "2", "3"]


def test_sequential_insert_out_of_range(nn):
    assert error_of(small_seq(nn).insert, 4, nn.ReLU()) == (
        "IndexError: Index out of range: 4")


def test_sequential_insert_rejects_a_non_module_naming_its_module_class(nn):
    # a deliberate difference: the message names mininn's Module class
    message = error_of(small_seq(nn).insert, 0, "relu")
    assert message == f"AssertionError: module should be of type: {nn.Module}"


def test_sequential_extend_pop_and_delete_renumber(nn):
    seq = small_seq(nn)
    first, last = seq[0], seq[2]
    seq.extend([nn.Tanh(), nn.Sigmoid()])
    assert seq.pop(0) is first
    del seq[-1]
    assert names(seq) == ["0", "1", "2"]
    assert seq[1] is last


def test_sequential_delete_a_slice_renumbers(nn):
    seq = nn.Sequential(*(nn.Identity() for _ in range(5)))
    keep = seq[1], seq[3]
    del seq[::2]
    assert names(seq) == ["0", "1"] and tuple(seq) == keep


def test_sequential_setitem_replaces_in_place(nn):
    seq = small_seq(nn)
    tanh = nn.Tanh()
    seq[-2] = tanh
    assert seq[1] is tanh and names(seq) == ["0", "1", "2"]


def test_sequential_add_and_iadd(nn):
    a, b = small_seq(nn), nn.Sequential(nn.Tanh())
    c = a + b
    assert type(c) is nn.Sequential and len(c) == 4 and c[3] is b[0]
    a += b
    assert names(a) == ["0", "1", "2", "3"] and a[3] is b[0]


def test_sequential_add_rejects_a_list(nn):
    assert error_of(lambda: nn.Sequential() + [nn.ReLU()]) == (
        "ValueError: add operator supports only objects of Sequential "
        "class, but <class 'list'> is given.")


def test_sequential_mul_repeats_the_same_modules(nn):
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    twice = seq * 2
    assert len(twice) == 4 and twice[2] is seq[0]
    assert len(list(twice.parameters())) == 2  # shared, so listed once
    assert (2 * seq)[3] is seq[1]
    seq *= 3
    assert len(seq) == 6 and seq[4] is seq[0]


@pytest.mark.parametrize("factor,kind", [(0, "ValueError"),
                                         (1.5, "TypeError")])
def test_sequential_mul_bad_factor_names_the_class(nn, factor, kind):
    # a deliberate difference: the message names mininn's Sequential
    seq = nn.Sequential()
    message = error_of(lambda: seq * factor)
    if kind == "ValueError":
        assert message == (f"ValueError: Non-positive multiplication factor "
                           f"0 for {type(seq)}")
    else:
        assert message == ("TypeError: unsupported operand type(s) for *: "
                           f"{type(seq)} and <class 'float'>")


def test_sequential_dir_hides_digit_names(nn):
    assert "0" not in dir(small_seq(nn))


# ------------------------------------------------------------ ModuleList


def test_module_list_registers_and_indexes(nn):
    layers = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
    assert names(layers) == ["0", "1"]
    assert layers[-1] is layers[1]
    assert len(list(layers.parameters())) == 2


def test_module_list_index_out_of_range(nn):
    assert error_of(lambda: nn.ModuleList()[0]) == (
        "IndexError: index 0 is out of range")


def test_module_list_slice_is_a_module_list_renumbered(nn):
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.Sigmoid()])
    part = layers[1:]
    assert type(part) is nn.ModuleList
    assert names(part) == ["0", "1"] and part[0] is layers[1]


def test_module_list_append_extend_and_iadd(nn):
    layers = nn.ModuleList()
    assert layers.append(nn.ReLU()) is layers
    assert layers.extend([nn.Tanh()]) is layers
    layers += [nn.Sigmoid()]
    assert [type(m).__name__ for m in layers] == ["ReLU", "Tanh", "Sigmoid"]


def test_module_list_insert_shifts_later_modules(nn):
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    sig = nn.Sigmoid()
    layers.insert(1, sig)
    assert names(layers) == ["0", "1", "2"] and layers[1] is sig


def test_module_list_deletion_renumbers_keys(nn):
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.Sigmoid()])
    tanh = layers[1]
    del layers[0]
    assert names(layers) == ["0", "1"] and layers[0] is tanh
    assert layers.pop(-1).__class__ is nn.Sigmoid


def test_module_list_setitem_replaces(nn):
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    sig = nn.Sigmoid()
    layers[-1] = sig
    assert layers[1] is sig


def test_module_list_add_makes_a_new_list(nn):
    a = nn.ModuleList([nn.ReLU()])
    c = a + [nn.Tanh()]
    assert type(c) is nn.ModuleList and names(c) == ["0", "1"] and len(a) == 1


def test_module_list_extend_rejects_a_non_iterable(nn):
    assert error_of(nn.ModuleList().extend, 3) == (
        "TypeError: ModuleList.extend should be called with an iterable, "
        "but got int")


def test_module_list_is_not_callable_forward(nn):
    assert error_of(nn.ModuleList(), torch.ones(1)) == (
        'NotImplementedError: Module [ModuleList] is missing the required '
        '"forward" function')


def test_module_list_repr_folds_repeated_blocks(both):
    def make(nn):
        blocks = nn.ModuleList(nn.Linear(2, 2) for _ in range(3))
        blocks.extend([nn.ReLU(), nn.Sequential(nn.Tanh()),
                       nn.Sequential(nn.Tanh()), nn.ReLU()])
        return blocks

    theirs, ours = build_both(both, make)
    assert repr(ours) == repr(theirs)
    assert "(0-2): 3 x Linear" in repr(ours)
    assert repr(both[1].ModuleList()) == repr(both[0].ModuleList())


# ------------------------------------------------------------ ModuleDict


def test_module_dict_keeps_insertion_order(nn):
    heads = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    assert list(heads) == ["b", "a"] == list(heads.keys()) == names(heads)
    assert [type(m).__name__ for m in heads.values()] == ["ReLU", "Tanh"]
    assert [k for k, _ in heads.items()] == ["b", "a"]


def test_module_dict_set_get_contains_delete_pop_clear(nn):
    heads = nn.ModuleDict()
    relu = nn.ReLU()
    heads["act"] = relu
    heads["out"] = nn.Linear(2, 2)
    assert heads["act"] is relu and "act" in heads and len(heads) == 2
    del heads["act"]
    assert "act" not in heads
    assert isinstance(heads.pop("out"), nn.Linear)
    heads["x"] = nn.ReLU()
    heads.clear()
    assert len(heads) == 0


def test_module_dict_update_from_pairs_and_from_a_module_dict(nn):
    heads = nn.ModuleDict([("a", nn.ReLU())])
    heads.update(nn.ModuleDict({"b": nn.Tanh()}))
    assert names(heads) == ["a", "b"]


@pytest.mark.parametrize("arg,message", [
    (5, "TypeError: ModuleDict.update should be called with an iterable of "
        "key/value pairs, but got int"),
    ([3], "TypeError: ModuleDict update sequence element #0 should be "
          "Iterable; isint"),
    ([("a", 1, 2)], "ValueError: ModuleDict update sequence element #0 has "
                    "length 3; 2 is required"),
])
def test_module_dict_update_rejects_bad_input(nn, arg, message):
    assert error_of(nn.ModuleDict, arg) == message


def test_module_dict_repr(both):
    theirs, ours = build_both(both, lambda nn: nn.ModuleDict(
        {"cls": nn.Linear(4, 2), "act": nn.ReLU()}))
    assert repr(ours) == repr(theirs)
    assert same_tensors(ours.named_parameters(), theirs.named_parameters())


# ------------------------------------------------------------ ParameterList


def test_parameter_list_wraps_tensors_in_parameters(nn):
    plist = nn.ParameterList([torch.zeros(2), torch.ones(3)])
    assert all(type(p) is torch.nn.Parameter for p in plist)
    assert [n for n, _ in plist.named_parameters()] == ["0", "1"]


def test_parameter_list_keeps_a_non_tensor_as_a_plain_attribute(nn):
    plist = nn.ParameterList([torch.zeros(2), "note"])
    assert plist[1] == "note" and len(plist) == 2
    assert [n for n, _ in plist.named_parameters()] == ["0"]


def test_parameter_list_index_slice_and_setitem(nn):
    plist = nn.ParameterList([torch.zeros(1), torch.ones(1), torch.ones(2)])
    assert plist[-1] is plist[2]
    part = plist[::2]
    assert type(part) is nn.ParameterList and part[1] is plist[2]
    plist[0] = torch.full((1,), 5.0)
    assert isinstance(plist[0], torch.nn.Parameter)
    assert plist[0].item() == 5.0


def test_parameter_list_append_extend_iadd(nn):
    plist = nn.ParameterList()
    assert plist.append(torch.zeros(1)) is plist
    plist.extend([torch.zeros(2)])
    plist += [torch.zeros(3)]
    assert [p.numel() for p in plist] == [1, 2, 3]


def test_parameter_list_extend_rejects_a_tensor(nn):
    assert error_of(nn.ParameterList().extend, torch.ones(2)) == (
        "TypeError: ParameterList.extend should be called with an iterable, "
        "but got Tensor")


def test_parameter_list_index_out_of_range(nn):
    assert error_of(lambda: nn.ParameterList()[-1]) == (
        "IndexError: index -1 is out of range")


def test_parameter_list_cannot_be_called(nn):
    assert error_of(nn.ParameterList(), torch.ones(1)) == (
        "RuntimeError: ParameterList should not be called.")


def test_parameter_list_repr(both):
    def make(nn):
        return nn.ParameterList([torch.zeros(2, 3),
                                 torch.ones(1, dtype=torch.float64), 7])

    theirs, ours = build_both(both, make)
    assert repr(ours) == repr(theirs)
    assert repr(both[1].ParameterList()) == repr(both[0].ParameterList())


# ------------------------------------------------------------ ParameterDict


def test_parameter_dict_sorts_a_plain_dict_but_keeps_an_ordered_dict(nn):
    values = {"b": torch.zeros(1), "a": torch.zeros(1)}
    assert list(nn.ParameterDict(values)) == ["a", "b"]
    assert list(nn.ParameterDict(OrderedDict(values))) == ["b", "a"]


def test_parameter_dict_wraps_tensors_and_registers_them(nn):
    pdict = nn.ParameterDict([("scale", torch.ones(2))])
    assert type(pdict["scale"]) is torch.nn.Parameter
    assert [n for n, _ in pdict.named_parameters()] == ["scale"]


def test_parameter_dict_mapping_methods(nn):
    pdict = nn.ParameterDict(OrderedDict(b=torch.zeros(1), a=torch.ones(1)))
    assert list(pdict.keys()) == ["b", "a"] and len(pdict) == 2
    assert [k for k, _ in pdict.items()] == ["b", "a"]
    assert [v.item() for v in pdict.values()] == [0.0, 1.0]
    assert "a" in pdict and pdict.get("z") is None
    copied = pdict.copy()
    assert type(copied) is nn.ParameterDict and copied["a"] is pdict["a"]
    assert pdict.pop("b").item() == 0.0
    assert list(pdict) == ["a"]
    del pdict["a"]
    pdict["c"] = torch.zeros(1)
    pdict.clear()
    assert len(pdict) == 0 and list(pdict.named_parameters()) == []


def test_parameter_dict_rejects_a_non_string_key(nn):
    assert error_of(nn.ParameterDict().__setitem__, 1, torch.ones(1)) == (
        "TypeError: Index given to ParameterDict cannot be used as a key as "
        "it is not a string (type is 'int'). Open an issue on github if you "
        "need non-string keys.")


@pytest.mark.parametrize("arg,message", [
    (5, "TypeError: ParametersDict.update should be called with an iterable "
        "of key/value pairs, but got int"),
    ([("a", 1, 2)], "ValueError: ParameterDict update sequence element #0 "
                    "has length 3; 2 is required"),
])
def test_parameter_dict_update_rejects_bad_input(nn, arg, message):
    assert error_of(nn.ParameterDict, arg) == message


def test_parameter_dict_cannot_be_called(nn):
    assert error_of(nn.ParameterDict(), torch.ones(1)) == (
        "RuntimeError: ParameterDict should not be called.")


def test_parameter_dict_repr(both):
    def make(nn):
        return nn.ParameterDict(OrderedDict(
            w=torch.zeros(2, 3), n=torch.nn.Parameter(torch.ones(1)),
            tag="x"))

    theirs, ours = build_both(both, make)
    assert repr(ours) == repr(theirs)
    assert repr(both[1].ParameterDict()) == repr(both[0].ParameterDict())


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


def civilnet(nn):
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
    (lenet, (4, 1, 28, 28)), (civilnet, (4, 3, 32, 32)),
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
    theirs, ours = build_both(both, civilnet)
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


def test_parameter_dict_setdefault_popitem_fromkeys_reversed(nn):
    pdict = nn.ParameterDict(OrderedDict(a=torch.zeros(1), b=torch.ones(1)))
    assert pdict.setdefault("a", torch.ones(3)) is pdict["a"]
    assert pdict.setdefault("c", torch.ones(3)).shape == (3,)
    assert list(reversed(pdict)) == ["c", "b", "a"]
    key, value = pdict.popitem()
    assert key == "c" and value.shape == (3,) and list(pdict) == ["a", "b"]
    fresh = pdict.fromkeys(["x", "y"], torch.zeros(2))
    assert type(fresh) is nn.ParameterDict and list(fresh) == ["x", "y"]


def test_parameter_dict_or_merges_into_a_new_dict(nn):
    a = nn.ParameterDict(OrderedDict(x=torch.zeros(1), y=torch.zeros(1)))
    b = nn.ParameterDict(OrderedDict(y=torch.ones(1), z=torch.ones(1)))
    merged = a | b
    assert list(merged) == ["x", "y", "z"] and merged["y"] is b["y"]
    assert a["y"].item() == 0.0
    a |= b
    assert list(a) == ["x", "y", "z"] and a["y"] is b["y"]
