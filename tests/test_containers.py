"""Chapter 4: the containers, Sequential, ModuleList, ModuleDict,
ParameterList and ParameterDict, on torch.nn and on mininn.

Tests taking `nn` run once on torch.nn and once on mininn; tests taking
`both` build the same thing on the two backends and compare them.
"""
from collections import OrderedDict

import pytest
import torch

import mininn.containers
from support import (build_both, child_names, constructor_arguments,
                     exported_classes, randn)
from helpers import error_of, same_tensors


# ------------------------------------------------------------ signatures

# every public class chapter 4 exports, found in the package itself
@pytest.mark.parametrize("name", exported_classes(mininn.containers))
def test_every_container_takes_torchs_constructor_arguments(name):
    ours = getattr(mininn.containers, name)
    assert constructor_arguments(ours) == constructor_arguments(
        getattr(torch.nn, name))


@pytest.mark.parametrize("make", [
    lambda nn: nn.ModuleList(modules=[nn.ReLU()]),
    lambda nn: nn.ModuleDict(modules={"a": nn.ReLU()}),
    lambda nn: nn.ParameterList(values=[torch.ones(1)]),
    lambda nn: nn.ParameterDict(parameters={"a": torch.ones(1)}),
], ids=["ModuleList", "ModuleDict", "ParameterList", "ParameterDict"])
def test_a_container_takes_its_argument_by_torchs_keyword(both, make):
    theirs, ours = build_both(both, make)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("make", [
    lambda nn: nn.ModuleList([], [nn.ReLU()]),
    lambda nn: nn.ModuleDict(items={"a": nn.ReLU()}),
    lambda nn: nn.Sequential(layers=[nn.ReLU()]),
    lambda nn: nn.ParameterDict({}, {}),
], ids=["ModuleList-two", "ModuleDict-items", "Sequential-kwarg",
        "ParameterDict-two"])
def test_a_container_refuses_an_argument_torch_does_not_take_as_torch_does(
        both, make):
    theirs, ours = (error_of(make, nn) for nn in both)
    assert theirs is not None and theirs.startswith("TypeError: ")
    assert ours == theirs


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
    assert child_names(small_seq(nn)) == ["0", "1", "2"]


def test_sequential_takes_names_from_an_ordered_dict(nn):
    seq = nn.Sequential(OrderedDict(fc=nn.Linear(2, 2), act=nn.Tanh()))
    assert child_names(seq) == ["fc", "act"]
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
    assert child_names(part) == ["1", "2"]
    assert part[0] is seq[1]


def test_sequential_len_and_iter(nn):
    seq = small_seq(nn)
    assert len(seq) == 3
    assert list(seq) == [seq[0], seq[1], seq[2]]


def test_sequential_append_returns_self(nn):
    seq = nn.Sequential()
    assert seq.append(nn.ReLU()) is seq
    assert child_names(seq) == ["0"]


def test_sequential_insert_shifts_later_layers(nn):
    seq = small_seq(nn)
    tanh = nn.Tanh()
    assert seq.insert(-1, tanh) is seq
    assert [type(m).__name__ for m in seq] == [
        "Linear", "ReLU", "Tanh", "Linear"]
    assert seq[2] is tanh and child_names(seq) == ["0", "1", "2", "3"]


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
    assert child_names(seq) == ["0", "1", "2"]
    assert seq[1] is last


def test_sequential_delete_a_slice_renumbers(nn):
    seq = nn.Sequential(*(nn.Identity() for _ in range(5)))
    keep = seq[1], seq[3]
    del seq[::2]
    assert child_names(seq) == ["0", "1"] and tuple(seq) == keep


def test_sequential_setitem_replaces_in_place(nn):
    seq = small_seq(nn)
    tanh = nn.Tanh()
    seq[-2] = tanh
    assert seq[1] is tanh and child_names(seq) == ["0", "1", "2"]


def test_sequential_add_and_iadd(nn):
    a, b = small_seq(nn), nn.Sequential(nn.Tanh())
    c = a + b
    assert type(c) is nn.Sequential and len(c) == 4 and c[3] is b[0]
    a += b
    assert child_names(a) == ["0", "1", "2", "3"] and a[3] is b[0]


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
    assert child_names(layers) == ["0", "1"]
    assert layers[-1] is layers[1]
    assert len(list(layers.parameters())) == 2


def test_module_list_index_out_of_range(nn):
    assert error_of(lambda: nn.ModuleList()[0]) == (
        "IndexError: index 0 is out of range")


def test_module_list_slice_is_a_module_list_renumbered(nn):
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.Sigmoid()])
    part = layers[1:]
    assert type(part) is nn.ModuleList
    assert child_names(part) == ["0", "1"] and part[0] is layers[1]


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
    assert child_names(layers) == ["0", "1", "2"] and layers[1] is sig


def test_module_list_deletion_renumbers_keys(nn):
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.Sigmoid()])
    tanh = layers[1]
    del layers[0]
    assert child_names(layers) == ["0", "1"] and layers[0] is tanh
    assert layers.pop(-1).__class__ is nn.Sigmoid


def test_module_list_setitem_replaces(nn):
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    sig = nn.Sigmoid()
    layers[-1] = sig
    assert layers[1] is sig


def test_module_list_add_makes_a_new_list(nn):
    a = nn.ModuleList([nn.ReLU()])
    c = a + [nn.Tanh()]
    assert type(c) is nn.ModuleList and child_names(c) == ["0", "1"] and len(a) == 1


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
    assert list(heads) == ["b", "a"] == list(heads.keys()) == child_names(heads)
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
    assert child_names(heads) == ["a", "b"]


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


def test_parameter_list_wraps_a_plain_tensor_as_a_trainable_parameter(nn):
    plain = torch.ones(2)  # requires_grad=False
    # read from the registry, as append left it (indexing is written after)
    p = nn.ParameterList([plain])._parameters["0"]
    assert type(p) is torch.nn.Parameter and p.requires_grad
    assert p.data_ptr() == plain.data_ptr()


def test_parameter_list_iadd_returns_the_list_itself(nn):
    plist = nn.ParameterList()
    before = plist
    plist += []  # nothing added: extend's return alone is exercised
    assert plist is before


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
    # read through the Parameter names (an optimizer's and a checkpoint's
    # order), not iteration: the check of `update` runs this test
    values = {"b": torch.zeros(1), "a": torch.zeros(1)}
    for made, names in [(values, ["a", "b"]),
                        (OrderedDict(values), ["b", "a"])]:
        pdict = nn.ParameterDict(made)
        assert [n for n, _ in pdict.named_parameters()] == names


def test_a_parameter_dict_takes_none_by_torchs_keyword(nn):
    pdict = nn.ParameterDict(parameters=None)  # its class alone: no update
    pdict["w"] = torch.ones(1)
    assert type(pdict["w"]) is torch.nn.Parameter
    assert list(pdict._keys) == ["w"]


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


def test_deleting_from_a_named_sequential_renames_the_survivors(nn):
    seq = nn.Sequential(OrderedDict(
        conv=nn.Linear(2, 2), act=nn.ReLU(), head=nn.Linear(2, 2)))
    del seq[1]
    assert [n for n, _ in seq.named_parameters()] == [
        "0.weight", "0.bias", "1.weight", "1.bias"]


def test_inserting_into_a_named_sequential_raises_key_error(nn):
    seq = nn.Sequential(OrderedDict(conv=nn.Linear(2, 2), act=nn.ReLU()))
    assert error_of(seq.insert, 0, nn.Tanh()) == "KeyError: '1'"


def conv_net_with_functional_steps(nn):
    """conv -> torch.relu -> torch.flatten -> fc: two steps that are not
    children, done in forward."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3)
            self.fc = nn.Linear(2 * 4 * 4, 3)

        def forward(self, x):
            return self.fc(torch.flatten(torch.relu(self.conv(x)), 1))

    torch.manual_seed(0)
    return Net()


def test_sequential_of_the_children_loses_what_forward_did_between_them(
        both):
    outputs = []
    for nn in both:
        net = conv_net_with_functional_steps(nn)
        x = randn(2, 1, 6, 6)
        cured = nn.Sequential(net.conv, nn.ReLU(), nn.Flatten(), net.fc)
        assert torch.equal(cured(x), net(x))
        outputs.append((error_of(nn.Sequential(*net.children()), x), net(x)))
    (theirs, out_t), (ours, out) = outputs
    assert ours == theirs and theirs.startswith("RuntimeError: mat1 and mat2")
    assert torch.equal(out, out_t)


def test_rmul_repeats_into_a_new_sequential_and_leaves_the_original(nn):
    seq = nn.Sequential(nn.ReLU(), nn.Tanh())
    twice = 2 * seq
    assert len(twice) == 4 and len(seq) == 2 and twice is not seq


def test_iadd_returns_the_container_itself(nn):
    blocks, params = nn.ModuleList(), nn.ParameterList()
    before = (blocks, params)
    blocks += [nn.ReLU()]
    params += [torch.ones(1)]
    assert blocks is before[0] and params is before[1]
    assert len(blocks) == 1 and len(params) == 1


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


# ------------------------------------------------------------ reprs, nested


def note_class(nn):
    class Note(nn.Module):  # a repr with a blank line inside
        def extra_repr(self):
            return "first line\n\nlast line"

    return Note


def nested_containers(nn):
    note = note_class(nn)
    return [
        nn.ModuleList([note(), nn.Sequential(note()), note(), note()]),
        nn.ModuleList([nn.ModuleList([note(), nn.Linear(2, 2)])]),
        nn.ModuleList([nn.Sequential(nn.Linear(2, 2), nn.ReLU())] * 3),
        nn.ModuleList([nn.ParameterList([torch.ones(1)]),
                       nn.ParameterDict({"a": torch.ones(2)})]),
        nn.Sequential(nn.ModuleList([note()]), note()),
        nn.Sequential(OrderedDict(body=nn.Sequential(note()))),
        nn.ModuleDict({"a": nn.ModuleList([note(), note()]), "b": note()}),
        nn.ParameterList([torch.ones(1), note()]),
        nn.ParameterDict(OrderedDict(w=torch.ones(1), note=note())),
    ]


@pytest.mark.parametrize("i", range(9))
def test_nested_container_reprs_are_byte_identical(both, i):
    theirs, ours = build_both(both, lambda nn: nested_containers(nn)[i])
    assert repr(ours) == repr(theirs)


def test_module_list_indents_a_childs_blank_line_module_does_not(nn):
    """torch's container.py keeps an older _addindent than module.py's: it
    indents blank lines too, so ModuleList and Sequential differ there."""
    note = note_class(nn)
    assert repr(nn.ModuleList([note()])) == (
        "ModuleList(\n  (0): Note(\n    first line\n    \n"
        "    last line\n  )\n)")
    assert repr(nn.Sequential(note())) == (
        "Sequential(\n  (0): Note(\n    first line\n\n"
        "    last line\n  )\n)")


def test_module_list_repr_folds_runs_of_multi_line_children(nn):
    block = nn.Sequential(nn.ReLU(), nn.Tanh())
    text = repr(nn.ModuleList([block, block, nn.ReLU()]))
    assert text == ("ModuleList(\n  (0-1): 2 x Sequential(\n    (0): ReLU()\n"
                    "    (1): Tanh()\n  )\n  (2): ReLU()\n)")


# ------------------------------------------------------------ the traps


@pytest.mark.parametrize("key", ["train", "eval", "forward", "type", "cuda",
                                 "to", "state_dict", "_modules"])
def test_a_dict_container_refuses_a_key_that_is_a_module_attribute(nn, key):
    message = f"KeyError: \"attribute '{key}' already exists\""
    assert error_of(nn.ModuleDict, {key: nn.ReLU()}) == message
    assert error_of(nn.ModuleDict().__setitem__, key, nn.ReLU()) == message
    if not key.startswith("_"):  # a Parameter first removes an instance
        # attribute of its name (Module.__setattr__), then registers
        assert error_of(nn.ParameterDict, {key: torch.ones(1)}) == message


def test_a_parameter_dict_keeps_a_key_that_setattr_refused(nn):
    d = nn.ParameterDict()
    assert error_of(d.__setitem__, "train", torch.ones(1)) == (
        "KeyError: \"attribute 'train' already exists\"")
    assert list(d) == ["train"] and d["train"] == d.train  # the method
    assert list(d.parameters()) == []


def test_a_parameter_dict_records_a_key_before_setattr_refuses_it(nn):
    # the same trap, seen in `_keys`, with the class cell alone
    d = nn.ParameterDict()
    assert error_of(d.__setitem__, "eval", torch.ones(1)) == (
        "KeyError: \"attribute 'eval' already exists\"")
    assert list(d._keys) == ["eval"] and d["eval"] == d.eval


def test_a_dict_container_takes_keys_that_are_not_attributes(nn):
    heads = nn.ModuleDict({"train_head": nn.ReLU(), "weight": nn.Tanh()})
    assert child_names(heads) == ["train_head", "weight"]


def test_a_sequential_slice_keeps_its_keys_so_a_fresh_one_will_not_load_it(
        both):
    results = []
    for nn in both:
        torch.manual_seed(0)
        seq = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
        fresh = nn.Sequential(nn.Linear(2, 2))
        part = seq[1:].state_dict()
        before = fresh[0].weight.clone()
        loose = fresh.load_state_dict(part, strict=False)
        strict = error_of(fresh.load_state_dict, part)
        assert torch.equal(fresh[0].weight, before)  # nothing was loaded
        cured = fresh.load_state_dict(nn.Sequential(*seq[1:]).state_dict())
        assert torch.equal(fresh[0].weight, seq[1].weight)
        results.append((list(part), loose.missing_keys, loose.unexpected_keys,
                        strict, cured.missing_keys, cured.unexpected_keys))
    assert results[0] == results[1]
    assert results[0][:3] == (["1.weight", "1.bias"], ["0.weight", "0.bias"],
                              ["1.weight", "1.bias"])
    assert results[0][3].startswith(
        "RuntimeError: Error(s) in loading state_dict for Sequential:")


def test_a_module_list_slice_saves_keys_from_zero(nn):
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
    assert list(layers[1:].state_dict()) == ["0.weight", "0.bias"]
    assert list(nn.Sequential(*layers)[1:].state_dict()) == [
        "1.weight", "1.bias"]


def test_module_dict_keeps_a_plain_dicts_order_where_parameter_dict_sorts(
        nn):
    assert list(nn.ModuleDict({"z": nn.ReLU(), "a": nn.Tanh()})) == ["z", "a"]
    assert list(nn.ParameterDict({"z": torch.ones(1), "a": torch.ones(1)})
                ) == ["a", "z"]
    heads, pdict = nn.ModuleDict(), nn.ParameterDict()
    heads.update({"y": nn.ReLU(), "b": nn.ReLU()})
    pdict.update({"y": torch.ones(1), "b": torch.ones(1)})
    assert list(heads) == ["y", "b"] and list(pdict) == ["b", "y"]
    pdict.update([("x", torch.ones(1)), ("a", torch.ones(1))])  # pairs: kept
    pdict.update(nn.ParameterDict(OrderedDict(w=torch.ones(1),
                                              c=torch.ones(1))))
    assert list(pdict) == ["b", "y", "x", "a", "w", "c"]


# ------------------------------------------------------------ where entries live


def test_parameter_list_routes_entries_through_setattr(nn):
    plist = nn.ParameterList([torch.ones(1), "note", torch.zeros(2)])
    assert list(plist._parameters) == ["0", "2"]
    assert vars(plist)["1"] == "note" and plist._size == 3 == len(plist)
    assert list(plist) == [plist[0], "note", plist[2]]


def test_parameter_dict_keeps_keys_in_order_and_values_as_attributes(nn):
    pdict = nn.ParameterDict(OrderedDict(b=torch.ones(1), a=torch.ones(1)))
    pdict["tag"] = "x"
    assert list(pdict._keys) == ["b", "a", "tag"]
    assert list(pdict._parameters) == ["b", "a"] and vars(pdict)["tag"] == "x"
    pdict["b"] = torch.zeros(1)  # replacing keeps the position
    assert list(pdict) == ["b", "a", "tag"] and pdict["b"].item() == 0.0
    del pdict["b"]
    assert list(pdict) == ["a", "tag"] and "b" not in pdict._parameters
    assert error_of(pdict.__getitem__, "b") == (
        "AttributeError: 'ParameterDict' object has no attribute 'b'")


def test_parameter_containers_wrap_plain_tensors_as_trainable(nn):
    plain = torch.ones(2, dtype=torch.float64)  # requires_grad=False
    plist, pdict = nn.ParameterList([plain]), nn.ParameterDict({"a": plain})
    for p in (plist[0], pdict["a"]):
        assert type(p) is torch.nn.Parameter and p.requires_grad
        assert p.dtype == torch.float64 and p.data_ptr() == plain.data_ptr()
    frozen = torch.nn.Parameter(torch.ones(1), requires_grad=False)
    plist.append(frozen)
    pdict["f"] = frozen
    plist[0] = frozen
    assert plist[1] is frozen and pdict["f"] is frozen and plist[0] is frozen
    assert not frozen.requires_grad


def test_a_parameter_entry_cannot_become_a_plain_value(nn):
    message = ("TypeError: cannot assign 'str' as parameter '{}' "
               "(torch.nn.Parameter or None expected)")
    pdict = nn.ParameterDict({"a": torch.ones(1)})
    assert error_of(pdict.__setitem__, "a", "x") == message.format("a")
    plist = nn.ParameterList([torch.ones(1)])
    assert error_of(plist.__setitem__, 0, "x") == message.format("0")


def test_slices_keep_the_subclass(nn):
    class Stack(nn.Sequential):
        pass

    class Blocks(nn.ModuleList):
        pass

    assert type(Stack(nn.ReLU(), nn.Tanh())[1:]) is Stack
    assert type(Blocks([nn.ReLU(), nn.Tanh()])[1:]) is Blocks


# ------------------------------------------------------------ random edits


def label_of(made, obj):
    """Which of the objects made so far `obj` is (by identity)."""
    return next((i for i, m in enumerate(made) if m is obj), "?")


def slot_labels(made, container):
    return [(k, label_of(made, m)) for k, m in container._modules.items()]


def sequence_edit(box, op, i, new, wrap):
    """Run one edit on a Sequential or ModuleList; returns its result."""
    if op == "append":
        return box.append(new())
    if op == "insert":
        return box.insert(i, new())
    if op == "del":
        del box[i]
    elif op == "del slice":
        del box[i::2]
    elif op == "set":
        box[i] = new()
    elif op == "pop":
        return box.pop(i)
    elif op == "extend":
        return box.extend([new(), new()])
    elif op == "+":
        return box + wrap(new())
    elif op == "+=":
        return box.__iadd__(wrap(new()))
    elif op == "slice":
        return box[i:]
    elif op == "*":
        return box * 2
    elif op == "*=":
        return box.__imul__(2)
    return None


def sequence_script(nn, kind, seed):
    """A seeded random script of edits on a Sequential or a ModuleList;
    returns what each step did (the layout after it, or its error)."""
    import random

    rng, made, log = random.Random(seed), [], []

    def new():
        made.append(rng.choice([nn.ReLU, nn.Tanh, nn.Sigmoid, nn.Identity])())
        return made[-1]

    def wrap(*modules):
        if kind == "Sequential":
            return nn.Sequential(*modules)
        return nn.ModuleList(modules)

    ops = ["append", "insert", "del", "del slice", "set", "pop", "extend",
           "+", "+=", "slice"]
    if kind == "Sequential":
        ops += ["*", "*="]
    box = wrap(new(), new(), new())
    for _ in range(40):
        n = len(box)
        i = rng.randint(-n - 1, n + 1)
        op = rng.choice(ops) if n <= 6 else "del slice"
        try:
            result = sequence_edit(box, op, i, new, wrap)
        except (AttributeError, IndexError, KeyError, TypeError,
                ValueError) as e:
            log.append((op, i, f"{type(e).__name__}: {e}", slot_labels(made, box)))
            continue
        if isinstance(result, (nn.Sequential, nn.ModuleList)):
            extra = (type(result).__name__, slot_labels(made, result),
                     result is box)
            if rng.random() < 0.3 and result is not box:
                box = result  # carry on with the new container
        else:
            extra = label_of(made, result)
        log.append((op, i, extra, slot_labels(made, box)))
    return log


@pytest.mark.parametrize("kind", ["Sequential", "ModuleList"])
@pytest.mark.parametrize("seed", range(12))
def test_random_edits_of_a_sequence_container_match_torch(both, kind, seed):
    theirs, ours = (sequence_script(nn, kind, seed) for nn in both)
    assert ours == theirs


def dict_operation(nn, pdict, op, key, other, new):
    """Run one dict operation on a ParameterDict; returns its result."""
    simple = {"pop": pdict.pop, "get": pdict.get, "del": pdict.__delitem__}
    if op in simple:
        return simple[op](key)
    if op == "set":
        pdict[key] = new()
    elif op == "setdefault":
        return pdict.setdefault(key, new())
    elif op == "popitem":
        return pdict.popitem()
    elif op == "update dict":
        pdict.update(dict(other))
    elif op == "update pairs":
        pdict.update(list(other.items()))
    elif op == "update ordered":
        pdict.update(other)
    elif op == "copy":
        return pdict.copy()
    elif op == "|":
        return pdict | nn.ParameterDict(other)
    elif op == "|=":
        return pdict.__ior__(nn.ParameterDict(other))
    elif op == "reversed":
        return list(reversed(pdict))
    elif op == "fromkeys":
        return pdict.fromkeys([key, "z"], new())
    elif op == "in":
        return key in pdict, len(pdict)
    elif op == "clear":
        pdict.clear()
    return None


def parameter_dict_script(nn, seed):
    """A seeded random script of dict operations on a ParameterDict."""
    import random

    rng, made, log = random.Random(seed), [], []

    def new():
        made.append(torch.full((1,), float(len(made))))
        return made[-1]

    def state(d):
        return [(k, type(v).__name__, v.requires_grad, v.item())
                for k, v in d.items()]

    ops = ["set", "del", "pop", "get", "setdefault", "popitem", "update dict",
           "update pairs", "update ordered", "copy", "|", "|=", "reversed",
           "fromkeys", "in", "clear"]
    pdict = nn.ParameterDict({k: new() for k in "cab"})
    for _ in range(40):
        key = rng.choice("abcdef")
        op = rng.choice(ops)
        if op == "clear" and rng.random() < 0.7:
            op = "set"
        other = OrderedDict((k, new()) for k in rng.sample("abcdef", 2))
        try:
            result = dict_operation(nn, pdict, op, key, other, new)
        except (AttributeError, KeyError) as e:
            log.append((op, key, f"{type(e).__name__}: {e}", state(pdict)))
            continue
        if isinstance(result, nn.ParameterDict):
            shared = [result[k] is pdict[k] for k in result if k in pdict]
            extra = (state(result), shared, result is pdict)
        elif isinstance(result, torch.Tensor):
            extra = (type(result).__name__, result.item())
        elif isinstance(result, tuple) and isinstance(result[1],
                                                      torch.Tensor):
            extra = (result[0], result[1].item())
        else:
            extra = result
        log.append((op, key, extra, state(pdict),
                    [n for n, _ in pdict.named_parameters()]))
    return log


@pytest.mark.parametrize("seed", range(12))
def test_random_dict_operations_on_a_parameter_dict_match_torch(both, seed):
    theirs, ours = (parameter_dict_script(nn, seed) for nn in both)
    assert ours == theirs
