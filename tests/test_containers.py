"""Chapter 4: the containers, Sequential, ModuleList, ModuleDict,
ParameterList and ParameterDict, on torch.nn and on mininn.

Tests taking `nn` run once on torch.nn and once on mininn; tests taking
`both` build the same thing on the two backends and compare them.
"""
from collections import OrderedDict

import pytest
import torch

from building import build_both, names, randn
from helpers import error_of, same_tensors


# ------------------------------------------------------------ why not a list


def test_a_plain_list_or_dict_of_layers_registers_nothing(nn):
    net = nn.Module()
    net.layers = [nn.Linear(2, 2)]
    net.heads = {"out": nn.Linear(2, 1)}
    assert list(net.named_children()) == []
    assert list(net.parameters()) == []
    assert "layers" in vars(net) and "heads" in vars(net)


def test_a_module_list_and_dict_register_their_layers(nn):
    net = nn.Module()
    net.layers = nn.ModuleList([nn.Linear(2, 2)])
    net.heads = nn.ModuleDict({"out": nn.Linear(2, 1)})
    assert [n for n, _ in net.named_parameters()] == [
        "layers.0.weight", "layers.0.bias", "heads.out.weight",
        "heads.out.bias"]


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


def test_sequential_delete_without_renumbering_lets_append_overwrite(nn):
    # why __delitem__ renumbers: append names the new layer str(len(self))
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    del seq._modules["0"]
    seq.append(nn.Tanh())
    assert list(seq._modules) == ["1", "2"]
    assert [type(m).__name__ for m in seq] == ["ReLU", "Tanh"]


def test_sequential_renumbers_so_append_keeps_every_layer(nn):
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    del seq[0]
    seq.append(nn.Tanh())
    assert [type(m).__name__ for m in seq] == ["ReLU", "Linear", "Tanh"]


def test_sequential_mul_shares_while_deepcopy_makes_new_parameters(nn):
    from copy import deepcopy

    block = nn.Linear(2, 2)
    assert len(list((nn.Sequential(block) * 3).parameters())) == 2
    copies = nn.Sequential(block, deepcopy(block))
    assert copies[0] is not copies[1]
    assert len(list(copies.parameters())) == 4
    assert torch.equal(copies[0].weight, copies[1].weight)


def test_sequential_imul_of_named_layers_raises_key_error_as_torch(nn):
    """torch's *= looks the originals up by "0", "1", ...: a Sequential
    built from an OrderedDict of named layers has none (torch's quirk,
    kept); * builds a new numbered Sequential and works."""
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict(a=nn.ReLU(), b=nn.Tanh()))
    assert error_of(named.__imul__, 2) == "KeyError: '0'"
    assert list(named._modules) == ["a", "b"]
    assert list((named * 2)._modules) == ["0", "1", "2", "3"]
