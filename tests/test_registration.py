"""Chapter 1, registration: each test body runs on torch.nn and on mininn.

Parameter and Buffer are torch's own classes in both backends, so they are
imported from torch.nn here. Error messages written out below are torch
2.13's: the torch.nn run of the same test checks them.
"""
import contextlib
import copy
from collections import OrderedDict

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from torch.nn import Buffer, Parameter

from support import param, raises_exactly

INIT_STATE = [
    ("training", bool),
    ("_parameters", dict),
    ("_buffers", dict),
    ("_non_persistent_buffers_set", set),
    ("_backward_pre_hooks", OrderedDict),
    ("_backward_hooks", OrderedDict),
    ("_is_full_backward_hook", type(None)),
    ("_forward_hooks", OrderedDict),
    ("_forward_hooks_with_kwargs", OrderedDict),
    ("_forward_hooks_always_called", OrderedDict),
    ("_forward_pre_hooks", OrderedDict),
    ("_forward_pre_hooks_with_kwargs", OrderedDict),
    ("_state_dict_hooks", OrderedDict),
    ("_state_dict_pre_hooks", OrderedDict),
    ("_load_state_dict_pre_hooks", OrderedDict),
    ("_load_state_dict_post_hooks", OrderedDict),
    ("_modules", dict),
]


def state(m):
    """The registration state of `m`, as names in order."""
    return (list(m._parameters), list(m._buffers), list(m._modules),
            sorted(m._non_persistent_buffers_set))


# --- __init__ ----------------------------------------------------------

def test_init_creates_torchs_state_in_torchs_order(nn):
    m = nn.Module()
    assert [(k, type(v)) for k, v in vars(m).items()] == INIT_STATE


def test_init_state_is_empty_and_in_training_mode(nn):
    m = nn.Module()
    assert m.training is True
    assert all(len(v) == 0 for k, v in vars(m).items()
               if k not in ("training", "_is_full_backward_hook"))


def test_init_gives_each_module_its_own_dicts(nn):
    a, b = nn.Module(), nn.Module()
    assert all(vars(a)[k] is not vars(b)[k] for k, _ in INIT_STATE
               if k not in ("training", "_is_full_backward_hook"))


def test_init_does_not_go_through_setattr(nn):
    calls = []

    class Spy(nn.Module):
        def __setattr__(self, name, value):
            calls.append(name)
            super().__setattr__(name, value)

    Spy()
    assert calls == []


def test_init_rejects_positional_arguments_under_the_subclass_name(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__(3)

    raises_exactly(TypeError, "Net.__init__() takes 1 positional argument but 2 "
                   "were given", Net)


def test_init_rejects_keyword_arguments_under_the_subclass_name(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__(size=3)

    raises_exactly(TypeError, "Net.__init__() got an unexpected keyword argument "
                   "'size'", Net)


def test_init_reports_keyword_arguments_before_positional_ones(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__(3, size=3)

    raises_exactly(TypeError, "Net.__init__() got an unexpected keyword argument "
                   "'size'", Net)


def test_call_super_init_hands_the_arguments_to_the_next_base(nn):
    class Sized:  # a mixin whose __init__ needs an argument
        def __init__(self, size):
            self.size = size

    class Net(nn.Module, Sized):
        call_super_init = True

        def __init__(self):
            super().__init__(size=3)

    net = Net()
    assert net.size == 3
    assert list(vars(net)) == [k for k, _ in INIT_STATE] + ["size"]


def test_call_super_init_calls_the_next_base_once_with_the_arguments(nn):
    seen = []

    class Sized:  # sets nothing on the module: only __init__ is exercised
        def __init__(self, size):
            seen.append(size)

    class Net(nn.Module, Sized):
        call_super_init = True

        def __init__(self):
            super().__init__(size=3)

    Net()
    assert seen == [3]


# --- __setattr__ routing ------------------------------------------------

def test_assigning_a_parameter_registers_it(nn):
    m, w = nn.Module(), param(2)
    m.w = w
    assert m._parameters == {"w": w} and m.w is w
    assert "w" not in vars(m)


def test_assigning_a_buffer_registers_it_as_persistent(nn):
    m = nn.Module()
    m.b = Buffer(torch.zeros(2))
    assert list(m._buffers) == ["b"] and m._non_persistent_buffers_set == set()
    assert "b" not in vars(m)


def test_assigning_a_non_persistent_buffer_records_it(nn):
    m = nn.Module()
    m.b = Buffer(torch.zeros(2), persistent=False)
    assert list(m._buffers) == ["b"]
    assert m._non_persistent_buffers_set == {"b"}


def test_assigning_a_module_registers_it_as_a_child(nn):
    m, child = nn.Module(), nn.Module()
    m.child = child
    assert m._modules == {"child": child} and m.child is child
    assert "child" not in vars(m)


def test_a_plain_tensor_is_a_plain_attribute(nn):
    m, t = nn.Module(), torch.ones(2)
    m.t = t
    assert vars(m)["t"] is t and state(m) == ([], [], [], [])


def test_a_plain_value_is_a_plain_attribute(nn):
    m = nn.Module()
    m.size = 3
    assert vars(m)["size"] == 3 and state(m) == ([], [], [], [])


def test_a_python_list_of_modules_registers_nothing(nn):
    m = nn.Module()
    m.layers = [nn.Module(), nn.Module()]
    m.params = [param(1)]
    assert state(m) == ([], [], [], [])
    assert type(vars(m)["layers"]) is list


def test_registration_keeps_assignment_order(nn):
    m = nn.Module()
    m.z, m.a, m.m = param(1), param(1), param(1)
    m.zb, m.ab = Buffer(torch.ones(1)), Buffer(torch.ones(1))
    m.zc, m.ac = nn.Module(), nn.Module()
    assert state(m) == (["z", "a", "m"], ["zb", "ab"], ["zc", "ac"], [])


def test_reassigning_a_parameter_keeps_its_place(nn):
    m = nn.Module()
    m.a, m.b = param(1), param(1)
    m.a = param(2)
    assert list(m._parameters) == ["a", "b"] and m.a.shape == (2,)


def test_a_tensor_assigned_to_a_buffer_name_stays_a_buffer(nn):
    m, t = nn.Module(), torch.ones(3)
    m.register_buffer("b", torch.zeros(1))
    m.b = t
    assert m._buffers["b"] is t and "b" not in vars(m)


def test_a_tensor_assigned_to_a_buffer_name_keeps_its_persistence(nn):
    m = nn.Module()
    m.register_buffer("b", torch.zeros(1), persistent=False)
    m.b = torch.ones(1)
    assert m._non_persistent_buffers_set == {"b"}


def test_a_buffer_object_sets_persistence_on_reassignment(nn):
    m = nn.Module()
    m.register_buffer("b", torch.zeros(1), persistent=False)
    m.b = Buffer(torch.ones(1))
    assert m._non_persistent_buffers_set == set()
    m.b = Buffer(torch.ones(1), persistent=False)
    assert m._non_persistent_buffers_set == {"b"}


def test_none_assigned_to_a_parameter_keeps_the_slot(nn):
    m = nn.Module()
    m.w = param(1)
    m.w = None
    assert m._parameters == {"w": None} and m.w is None


def test_none_assigned_to_a_buffer_keeps_the_slot(nn):
    m = nn.Module()
    m.register_buffer("b", torch.zeros(1), persistent=False)
    m.b = None
    assert m._buffers == {"b": None} and m._non_persistent_buffers_set == {"b"}


def test_none_assigned_to_a_module_keeps_the_slot(nn):
    m = nn.Module()
    m.c = nn.Module()
    m.c = None
    assert m._modules == {"c": None} and m.c is None


def test_none_assigned_to_a_module_passes_the_module_registration_hooks(nn):
    m, calls = nn.Module(), []
    m.c = nn.Module()
    with stored_registration_hook(
            nn, "module", lambda module, name, value: calls.append(
                (name, value))):
        m.c = None
    assert calls == [("c", None)] and m._modules == {"c": None}


def test_assignment_stores_a_child_under_a_dotted_name(nn):
    # unlike add_module, __setattr__ checks no name (chapter 2 shows that
    # no dotted path then reaches the child)
    m, child = nn.Module(), nn.Module()
    setattr(m, "a.b", child)
    assert list(m._modules) == ["a.b"] and getattr(m, "a.b") is child


def test_none_assigned_to_a_new_name_is_a_plain_attribute(nn):
    m = nn.Module()
    m.x = None
    assert vars(m)["x"] is None and state(m) == ([], [], [], [])


def test_a_parameter_replaces_a_plain_attribute(nn):
    m = nn.Module()
    m.x = 1
    m.x = param(1)
    assert "x" not in vars(m) and list(m._parameters) == ["x"]


def test_a_parameter_replaces_a_buffer_and_its_persistence_note(nn):
    m = nn.Module()
    m.register_buffer("x", torch.ones(1), persistent=False)
    m.x = param(1)
    assert state(m) == (["x"], [], [], [])


def test_a_parameter_replaces_a_module(nn):
    m = nn.Module()
    m.x = nn.Module()
    m.x = param(1)
    assert state(m) == (["x"], [], [], [])


def test_a_module_cannot_replace_a_parameter(nn):
    m, c = nn.Module(), nn.Module()
    m.x = param(1)
    raises_exactly(TypeError, f"cannot assign '{torch.typename(c)}' as parameter "
                   "'x' (torch.nn.Parameter or None expected)", setattr, m, "x", c)


def test_a_module_replaces_a_buffer_and_its_persistence_note(nn):
    m = nn.Module()
    m.register_buffer("x", torch.ones(1), persistent=False)
    m.x = nn.Module()
    assert state(m) == ([], [], ["x"], [])


def test_a_module_replaces_a_plain_attribute(nn):
    m = nn.Module()
    m.x = 1
    m.x = nn.Module()
    assert "x" not in vars(m) and state(m) == ([], [], ["x"], [])


def test_a_buffer_cannot_replace_a_parameter(nn):
    m = nn.Module()
    m.x = param(1)
    raises_exactly(TypeError, "cannot assign 'torch.FloatTensor' as "
                   "parameter 'x' (torch.nn.Parameter or None expected)",
                   setattr, m, "x", Buffer(torch.ones(1)))


def test_a_buffer_cannot_replace_a_module(nn):
    m = nn.Module()
    m.x = nn.Module()
    raises_exactly(TypeError, "cannot assign 'torch.FloatTensor' as child module "
                   "'x' (torch.nn.Module or None expected)",
                   setattr, m, "x", Buffer(torch.ones(1)))


def test_a_buffer_cannot_replace_a_plain_attribute(nn):
    m = nn.Module()
    m.x = 1
    raises_exactly(KeyError, "attribute 'x' already exists",
                   setattr, m, "x", Buffer(torch.ones(1)))


def test_a_plain_tensor_in_a_parameter_slot_is_refused(nn):
    m = nn.Module()
    m.w = param(1)
    raises_exactly(TypeError, "cannot assign 'torch.FloatTensor' as parameter 'w' "
                   "(torch.nn.Parameter or None expected)",
                   setattr, m, "w", torch.ones(1))


def test_a_plain_value_in_a_parameter_slot_is_refused(nn):
    m = nn.Module()
    m.w = param(1)
    raises_exactly(TypeError, "cannot assign 'int' as parameter 'w' "
                   "(torch.nn.Parameter or None expected)", setattr, m, "w", 3)


def test_a_plain_value_in_a_module_slot_is_refused(nn):
    m = nn.Module()
    m.c = nn.Module()
    raises_exactly(TypeError, "cannot assign 'str' as child module 'c' "
                   "(torch.nn.Module or None expected)", setattr, m, "c", "relu")


def test_a_plain_value_in_a_buffer_slot_is_refused(nn):
    m = nn.Module()
    m.register_buffer("b", torch.ones(1))
    raises_exactly(TypeError, "cannot assign 'list' as buffer 'b' "
                   "(torch.nn.Buffer, torch.Tensor or None expected)",
                   setattr, m, "b", [1.0])


def test_a_plain_value_in_a_buffer_slot_leaves_the_buffer(nn):
    m, t = nn.Module(), torch.ones(1)
    m.register_buffer("b", t)
    with pytest.raises(TypeError):
        m.b = 1.0
    assert m.b is t


def test_a_parameter_cannot_be_assigned_before_init(nn):
    class Net(nn.Module):
        def __init__(self):
            self.w = param(1)

    raises_exactly(AttributeError,
                   "cannot assign parameters before Module.__init__() call", Net)


def test_a_module_cannot_be_assigned_before_init(nn):
    class Net(nn.Module):
        def __init__(self):
            self.child = nn.Module()

    raises_exactly(AttributeError,
                   "cannot assign module before Module.__init__() call", Net)


def test_a_buffer_cannot_be_assigned_before_init(nn):
    class Net(nn.Module):
        def __init__(self):
            self.b = Buffer(torch.ones(1))

    raises_exactly(AttributeError,
                   "cannot assign buffer before Module.__init__() call", Net)


def test_a_plain_attribute_can_be_assigned_before_init(nn):
    class Net(nn.Module):
        def __init__(self):
            self.size = 3
            super().__init__()

    assert Net().size == 3


# --- register_parameter --------------------------------------------------

def test_register_parameter_adds_a_parameter(nn):
    m, w = nn.Module(), param(2)
    assert m.register_parameter("w", w) is None
    assert m._parameters == {"w": w}


def test_register_parameter_accepts_none(nn):
    m = nn.Module()
    m.register_parameter("bias", None)
    assert m._parameters == {"bias": None} and m.bias is None


def test_register_parameter_can_replace_its_own_parameter(nn):
    m, w = nn.Module(), param(2)
    m.register_parameter("w", param(1))
    m.register_parameter("w", w)
    assert m._parameters == {"w": w}


def test_register_parameter_stores_what_a_parameter_hook_returns(nn):
    # the hook put straight into its store: the chapter's tap, seen by
    # register_parameter before the public functions that add hooks
    m, new = nn.Module(), param(2)
    with stored_registration_hook(nn, "parameter",
                                  lambda module, name, value: new):
        m.register_parameter("w", param(1))
    assert m._parameters["w"] is new


def test_register_parameter_rejects_a_method_name(nn):
    raises_exactly(KeyError, "attribute 'add_module' already exists",
                   nn.Module().register_parameter, "add_module", param(1))


def test_register_parameter_rejects_a_buffer_name(nn):
    m = nn.Module()
    m.register_buffer("b", torch.ones(1))
    raises_exactly(KeyError, "attribute 'b' already exists",
                   m.register_parameter, "b", param(1))


def test_register_parameter_rejects_a_plain_tensor(nn):
    raises_exactly(TypeError, "cannot assign 'torch.FloatTensor' object to "
                   "parameter 'w' (torch.nn.Parameter or None required)",
                   nn.Module().register_parameter, "w", torch.ones(1))


def test_register_parameter_rejects_a_non_leaf_parameter(nn):
    w = Parameter(torch.ones(2), requires_grad=False)
    w.mul_(torch.ones(2, requires_grad=True))  # now w has a grad_fn
    raises_exactly(ValueError, "Cannot assign non-leaf Tensor to parameter 'w'. "
                   "Model parameters must be created explicitly. To express 'w' as "
                   "a function of another Tensor, compute the value in the "
                   "forward() method.", nn.Module().register_parameter, "w", w)


def test_register_parameter_checks_the_name_before_the_value(nn):
    raises_exactly(KeyError, 'parameter name can\'t be empty string ""',
                   nn.Module().register_parameter, "", 3)


def test_register_parameter_before_init_is_refused(nn):
    class Net(nn.Module):
        def __init__(self):
            self.register_parameter("w", None)

    raises_exactly(AttributeError,
                   "cannot assign parameter before Module.__init__() call", Net)


def test_a_failed_registration_changes_nothing(nn):
    m = nn.Module()
    with pytest.raises(TypeError):
        m.register_parameter("w", torch.ones(1))
    assert state(m) == ([], [], [], []) and "w" not in vars(m)


# --- register_buffer -----------------------------------------------------

def test_register_buffer_adds_a_persistent_buffer(nn):
    m, t = nn.Module(), torch.zeros(2)
    assert m.register_buffer("running_mean", t) is None
    assert m._buffers == {"running_mean": t}
    assert m._non_persistent_buffers_set == set()


def test_register_buffer_non_persistent_is_recorded(nn):
    m = nn.Module()
    m.register_buffer("cache", torch.zeros(2), persistent=False)
    assert m._non_persistent_buffers_set == {"cache"}


def test_register_buffer_again_as_persistent_clears_the_record(nn):
    m = nn.Module()
    m.register_buffer("cache", torch.zeros(2), persistent=False)
    m.register_buffer("cache", torch.zeros(2))
    assert m._non_persistent_buffers_set == set()


def test_register_buffer_accepts_none(nn):
    m = nn.Module()
    m.register_buffer("b", None)
    assert m._buffers == {"b": None} and m.b is None


def test_register_buffer_accepts_a_parameter(nn):
    m, w = nn.Module(), param(1)
    m.register_buffer("b", w)
    assert m._buffers["b"] is w and m._parameters == {}


def test_register_buffer_accepts_a_tensor_like_object(nn):
    class TensorLike:
        __torch_function__ = None

    m, t = nn.Module(), TensorLike()
    m.register_buffer("b", t)
    assert m._buffers["b"] is t


def test_register_buffer_rejects_a_parameter_name(nn):
    m = nn.Module()
    m.w = param(1)
    raises_exactly(KeyError, "attribute 'w' already exists",
                   m.register_buffer, "w", torch.ones(1))


def test_register_buffer_rejects_a_non_tensor(nn):
    raises_exactly(TypeError, "cannot assign 'list' object to buffer 'b' "
                   "(torch Tensor or None required)",
                   nn.Module().register_buffer, "b", [0.0])


def test_register_buffer_rejects_a_module(nn):
    m = nn.Module()
    raises_exactly(TypeError, f"cannot assign '{torch.typename(m)}' object to "
                   "buffer 'b' (torch Tensor or None required)",
                   m.register_buffer, "b", m)


def test_register_buffer_before_init_is_refused(nn):
    class Net(nn.Module):
        def __init__(self):
            self.register_buffer("b", None)

    raises_exactly(AttributeError,
                   "cannot assign buffer before Module.__init__() call", Net)


# --- add_module / register_module ----------------------------------------

def test_add_module_adds_a_child(nn):
    m, c = nn.Module(), nn.Module()
    assert m.add_module("c", c) is None
    assert m._modules == {"c": c}


def test_add_module_accepts_none(nn):
    m = nn.Module()
    m.add_module("c", None)
    assert m._modules == {"c": None} and m.c is None


def test_add_module_accepts_names_that_are_not_identifiers(nn):
    m = nn.Module()
    m.add_module("0", nn.Module())
    m.add_module("conv 1", nn.Module())
    assert list(m._modules) == ["0", "conv 1"]


def test_register_module_is_add_module(nn):
    m, c = nn.Module(), nn.Module()
    assert m.register_module("c", c) is None
    assert m._modules == {"c": c}


def test_add_module_rejects_a_non_module(nn):
    raises_exactly(TypeError, "torch.FloatTensor is not a Module subclass",
                   nn.Module().add_module, "c", torch.ones(1))


def test_add_module_checks_the_value_before_the_name(nn):
    raises_exactly(TypeError, "int is not a Module subclass",
                   nn.Module().add_module, "", 3)


def test_register_module_rejects_like_add_module(nn):
    raises_exactly(KeyError, 'module name can\'t contain ".", got: x.y',
                   nn.Module().register_module, "x.y", nn.Module())


def test_add_module_before_init_fails_on_the_missing_dict(nn):
    class Net(nn.Module):
        def __init__(self):
            self.add_module("c", None)

    raises_exactly(AttributeError, "'Net' object has no attribute '_modules'", Net)


# --- the name checks of register_parameter, register_buffer, add_module ---
# The same four checks in all three; the table shows what differs: the kind
# in the message, and add_module naming the dotted name. (add_module checks
# the value first and register_parameter the name first: tests above.)

def bad_name(id, method, name, exc, message):
    return pytest.param(method, name, exc, message, id=id)


NAME_CHECKS = [
    bad_name("register_parameter_rejects_a_non_string_name",
             "register_parameter", 1, TypeError,
             "parameter name should be a string. Got int"),
    bad_name("register_parameter_rejects_a_dotted_name",
             "register_parameter", "a.b", KeyError,
             'parameter name can\'t contain "."'),
    bad_name("register_parameter_rejects_an_empty_name",
             "register_parameter", "", KeyError,
             'parameter name can\'t be empty string ""'),
    bad_name("register_parameter_rejects_an_existing_attribute",
             "register_parameter", "x", KeyError,
             "attribute 'x' already exists"),
    bad_name("register_buffer_rejects_a_non_string_name",
             "register_buffer", 1.5, TypeError,
             "buffer name should be a string. Got float"),
    bad_name("register_buffer_rejects_a_dotted_name",
             "register_buffer", "bn.mean", KeyError,
             'buffer name can\'t contain "."'),
    bad_name("register_buffer_rejects_an_empty_name",
             "register_buffer", "", KeyError,
             'buffer name can\'t be empty string ""'),
    bad_name("register_buffer_rejects_an_existing_attribute",
             "register_buffer", "training", KeyError,
             "attribute 'training' already exists"),
    bad_name("add_module_rejects_a_non_string_name",
             "add_module", None, TypeError,
             "module name should be a string. Got NoneType"),
    bad_name("add_module_rejects_a_dotted_name_and_names_it",
             "add_module", "a.b", KeyError,
             'module name can\'t contain ".", got: a.b'),
    bad_name("add_module_rejects_an_empty_name",
             "add_module", "", KeyError,
             'module name can\'t be empty string ""'),
    bad_name("add_module_rejects_an_existing_attribute",
             "add_module", "w", KeyError,
             "attribute 'w' already exists"),
]


@pytest.mark.parametrize("method, name, exc, message", NAME_CHECKS)
def test_a_bad_name_is_refused(nn, method, name, exc, message):
    m = nn.Module()
    m.x = 1  # a plain attribute
    m.w = param(1)  # a parameter: an attribute too, through __getattr__
    value = {"register_parameter": param(1), "register_buffer": torch.ones(1),
             "add_module": nn.Module()}[method]
    raises_exactly(exc, message, getattr(m, method), name, value)
    assert state(m) == (["w"], [], [], [])  # nothing registered


# --- __getattr__ -----------------------------------------------------------

def test_getattr_finds_parameters_buffers_and_modules(nn):
    m, w, b, c = nn.Module(), param(1), torch.ones(1), nn.Module()
    m.w = w
    m.register_buffer("b", b)
    m.c = c
    assert m.w is w and m.b is b and m.c is c
    assert m.w is w and hasattr(m, "b") and hasattr(m, "c")


def test_getattr_reports_a_missing_name_with_the_class_name(nn):
    class Net(nn.Module):
        pass

    raises_exactly(AttributeError, "'Net' object has no attribute 'missing'",
                   getattr, Net(), "missing")


def test_getattr_default_works_for_a_missing_name(nn):
    assert getattr(nn.Module(), "missing", 7) == 7
    assert not hasattr(nn.Module(), "missing")


def test_getattr_before_init_raises_attribute_error(nn):
    class Net(nn.Module):
        def __init__(self):
            self.w  # noqa: B018 (reading it is the test)

    raises_exactly(AttributeError, "'Net' object has no attribute 'w'", Net)


def test_registered_names_stay_out_of_the_instance_dict(nn):
    m = nn.Module()
    m.register_parameter("w", param(1))
    m.register_buffer("b", torch.ones(1))
    m.add_module("c", nn.Module())
    assert not {"w", "b", "c"} & set(vars(m))


# --- __delattr__ -----------------------------------------------------------

def test_delattr_removes_a_parameter(nn):
    m = nn.Module()
    m.w = param(1)
    del m.w
    assert state(m) == ([], [], [], []) and not hasattr(m, "w")


def test_delattr_removes_a_buffer_and_its_persistence_note(nn):
    m = nn.Module()
    m.register_buffer("b", torch.ones(1), persistent=False)
    del m.b
    assert state(m) == ([], [], [], [])


def test_delattr_removes_a_module(nn):
    m = nn.Module()
    m.c = nn.Module()
    del m.c
    assert state(m) == ([], [], [], [])


def test_delattr_removes_a_plain_attribute(nn):
    m = nn.Module()
    m.x = 1
    del m.x
    assert "x" not in vars(m)


def test_delattr_of_a_missing_name_raises(nn):
    class Net(nn.Module):
        pass

    raises_exactly(AttributeError, "'Net' object has no attribute 'missing'",
                   delattr, Net(), "missing")


def test_delattr_frees_the_name_for_another_kind(nn):
    m = nn.Module()
    m.x = param(1)
    del m.x
    m.register_buffer("x", torch.ones(1))
    assert state(m) == ([], ["x"], [], [])


# --- __dir__ ---------------------------------------------------------------

def test_dir_lists_registered_and_plain_names(nn):
    m = nn.Module()
    m.w, m.c, m.x = param(1), nn.Module(), 1
    m.register_buffer("b", None)
    names = dir(m)
    assert {"w", "c", "x", "b", "training", "register_buffer"} <= set(names)


def test_dir_is_sorted(nn):
    m = nn.Module()
    m.zz, m.aa = param(1), nn.Module()
    # call __dir__ itself: builtin dir() sorts whatever __dir__ returns
    names = m.__dir__()
    assert names == sorted(names) and names.index("aa") < names.index("zz")


def test_dir_leaves_out_names_starting_with_a_digit(nn):
    m = nn.Module()
    m.add_module("0", nn.Module())
    m.add_module("1a", nn.Module())
    assert not [k for k in dir(m) if k[0].isdigit()]


def test_dir_keeps_a_name_found_on_the_class_and_the_instance_twice(nn):
    m = nn.Module()
    m.call_super_init = False  # now in __dict__ as well as on the class
    assert dir(m).count("call_super_init") == 2


def test_a_deep_copy_has_its_own_registries_in_the_same_order(nn):
    m = nn.Module()
    m.w, m.c, m.x = param(1), nn.Module(), 1
    m.register_buffer("b", torch.ones(1), persistent=False)
    n = copy.deepcopy(m)
    assert list(vars(n)) == list(vars(m)) and state(n) == state(m)
    assert n._parameters is not m._parameters and n.w is not m.w
    assert type(n.w) is Parameter and torch.equal(n.w, m.w)


# --- the same subclass body on both bases ----------------------------------

def test_a_model_registers_the_same_names_in_the_same_order(nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = Parameter(torch.ones(2, 2))
            self.register_parameter("bias", None)
            self.register_buffer("count", torch.zeros(()), persistent=False)
            self.scale = 2.0

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = Block()
            self.register_buffer("steps", torch.zeros((), dtype=torch.long))
            self.second = Block()
            self.gain = Parameter(torch.ones(1))

    net = Net()
    assert state(net) == (["gain"], ["steps"], ["first", "second"], [])
    assert state(net.first) == (["weight", "bias"], ["count"], [], ["count"])
    assert vars(net.first)["scale"] == 2.0


# --- __getattr__ and Python's lookup order -------------------------------

def test_a_property_whose_getter_raises_attribute_error_is_missing(nn):
    class P(nn.Module):
        @property
        def thing(self):
            return self.missing_attr + 1

    # the message names the property, not missing_attr (torch's own
    # test_getattr_with_property is an expected failure for this reason)
    raises_exactly(AttributeError, "'P' object has no attribute 'thing'",
                   getattr, P(), "thing")


def test_a_property_comes_before_the_instance_dict(nn):
    class Q(nn.Module):
        @property
        def where(self):
            return "property"

    q = Q()
    vars(q)["where"] = "__dict__"
    assert q.where == "property"


def test_the_instance_dict_comes_before_a_class_attribute(nn):
    class Q(nn.Module):
        kind = "class"

    q = Q()
    q.kind = "instance"
    assert q.kind == "instance" and vars(q)["kind"] == "instance"


def test_an_assignment_after_init_is_registered_too(nn):
    m = nn.Module()
    m.late = param(1)
    m.later = nn.Module()
    assert state(m) == (["late"], [], ["later"], [])


def test_a_plain_tensor_attribute_stays_behind_on_to_and_is_not_saved(nn):
    m = nn.Module()
    m.scratch, m.kept = torch.zeros(1), Buffer(torch.zeros(1))
    m.to("meta")
    assert m.scratch.device.type == "cpu" and m.kept.device.type == "meta"
    assert list(m.state_dict()) == ["kept"]


# --- global registration hooks ---------------------------------------------

@contextlib.contextmanager
def stored_registration_hook(nn, kind, hook):
    """`hook` put straight into the backend's store of global `kind`
    registration hooks for the block (where torch keeps them, and where
    register_module_*_registration_hook, written last in the chapter,
    puts them), and taken out after."""
    if nn.name == "mininn":
        import mininn.registration as where
    else:
        import torch.nn.modules.module as where
    store = getattr(where, f"_global_{kind}_registration_hooks")
    store["test"] = hook
    try:
        yield
    finally:
        del store["test"]


@contextlib.contextmanager
def registration_hooks(nn, **hooks):
    """Add a global registration hook per kind ("parameter", "buffer",
    "module") for the block, and always remove them: they are global."""
    handles = [getattr(nn, f"register_module_{kind}_registration_hook")(hook)
               for kind, hook in hooks.items()]
    try:
        yield handles
    finally:
        for handle in handles:
            handle.remove()


def test_a_parameter_hook_gets_the_module_the_name_and_the_parameter(nn):
    calls, m, w = [], nn.Module(), param(1)
    with registration_hooks(nn, parameter=lambda *a: calls.append(a)):
        m.register_parameter("w", w)
    assert len(calls) == 1
    assert calls[0][0] is m and calls[0][1] == "w" and calls[0][2] is w


def _register(nn, how, value):
    m = nn.Module()
    if how == "register_parameter":
        m.register_parameter("x", value)
    elif how == "register_buffer":
        m.register_buffer("x", value)
    elif how == "tensor into a buffer slot":
        m.register_buffer("x", torch.zeros(1))
        m.x = value
    elif how in ("add_module", "register_module"):
        getattr(m, how)("x", value)
    else:  # plain assignment of a Parameter, Buffer or Module
        m.x = value
    return m


REPLACED = [  # (kind, how it is registered, value, the hook's replacement)
    ("parameter", "register_parameter", lambda nn: param(1), lambda nn: param(2)),
    ("parameter", "setattr", lambda nn: param(1), lambda nn: param(2)),
    ("buffer", "register_buffer", lambda nn: torch.ones(1),
     lambda nn: torch.ones(2)),
    ("buffer", "setattr", lambda nn: Buffer(torch.ones(1)),
     lambda nn: torch.ones(2)),
    ("buffer", "tensor into a buffer slot", lambda nn: torch.ones(1),
     lambda nn: torch.ones(2)),
    ("module", "add_module", lambda nn: nn.Module(), lambda nn: nn.Module()),
    ("module", "register_module", lambda nn: nn.Module(),
     lambda nn: nn.Module()),
    ("module", "setattr", lambda nn: nn.Module(), lambda nn: nn.Module()),
]


@pytest.mark.parametrize("kind, how, value, replacement", REPLACED,
                         ids=[f"{k} by {h}" for k, h, _, _ in REPLACED])
def test_a_registration_hook_that_returns_a_value_replaces_it(
        nn, kind, how, value, replacement):
    new = replacement(nn)
    with registration_hooks(nn, **{kind: lambda m, name, v: new}):
        m = _register(nn, how, value(nn))
    store = {"parameter": m._parameters, "buffer": m._buffers,
             "module": m._modules}[kind]
    assert store["x"] is new and m.x is new


@pytest.mark.parametrize("kind, how, value, replacement", REPLACED,
                         ids=[f"{k} by {h}" for k, h, _, _ in REPLACED])
def test_a_registration_hook_that_returns_none_keeps_the_value(
        nn, kind, how, value, replacement):
    v = value(nn)
    with registration_hooks(nn, **{kind: lambda m, name, value: None}):
        m = _register(nn, how, v)
    assert m.x is v


def test_registration_hooks_run_in_order_and_each_sees_the_last_result(nn):
    seen, first, second = [], param(2), param(3)

    def hook(label, result):
        def run(module, name, param):
            seen.append((label, param.shape[0]))
            return result
        return run

    m = nn.Module()
    with registration_hooks(nn, parameter=hook("a", first)), \
            registration_hooks(nn, parameter=hook("b", None)), \
            registration_hooks(nn, parameter=hook("c", second)):
        m.w = param(1)
    assert seen == [("a", 1), ("b", 2), ("c", 2)] and m.w is second


def test_a_removed_registration_hook_is_not_called_again(nn):
    calls = []
    handle = nn.register_module_buffer_registration_hook(
        lambda *a: calls.append(a[1]))
    try:
        nn.Module().register_buffer("a", torch.ones(1))
    finally:
        handle.remove()
    handle.remove()  # a second remove() does nothing
    nn.Module().register_buffer("b", torch.ones(1))
    assert calls == ["a"]


def test_a_registration_hook_handle_works_as_a_context_manager(nn):
    calls = []
    with nn.register_module_module_registration_hook(
            lambda *a: calls.append(a[1])):
        nn.Module().add_module("inside", nn.Module())
    nn.Module().add_module("outside", nn.Module())
    assert calls == ["inside"]


def test_none_reaches_the_buffer_and_module_hooks_but_not_the_parameter_one(
        nn):
    calls = []

    def log(kind):
        return lambda module, name, value: calls.append((kind, name, value))

    with registration_hooks(nn, parameter=log("parameter"),
                            buffer=log("buffer"), module=log("module")):
        m = nn.Module()
        m.register_parameter("p", None)
        m.register_buffer("b", None)
        m.add_module("c", None)
        m.d = nn.Module()
        m.d = None  # None into a module slot runs the module hook again
    assert [c[:2] for c in calls] == [("buffer", "b"), ("module", "c"),
                                      ("module", "d"), ("module", "d")]
    assert [c[2] is None for c in calls] == [True, True, False, True]


def test_a_registration_hook_runs_only_after_every_check_passed(nn):
    calls = []
    with registration_hooks(nn, parameter=lambda *a: calls.append(a),
                            buffer=lambda *a: calls.append(a),
                            module=lambda *a: calls.append(a)):
        m = nn.Module()
        for bad in (lambda: m.register_parameter("a.b", param(1)),
                    lambda: m.register_parameter("w", torch.ones(1)),
                    lambda: m.register_buffer("", torch.ones(1)),
                    lambda: m.register_buffer("b", [1]),
                    lambda: m.add_module("c", 3),
                    lambda: m.add_module("a.b", nn.Module())):
            with pytest.raises((KeyError, TypeError)):
                bad()
    assert calls == [] and state(m) == ([], [], [], [])


def test_a_parameter_hook_result_is_stored_without_a_check(nn):
    plain = torch.ones(1)  # not a Parameter: torch does not look again
    with registration_hooks(nn, parameter=lambda m, name, v: plain):
        m = nn.Module()
        m.w = param(1)
    assert m._parameters["w"] is plain


def test_the_module_hook_runs_after_the_old_entry_was_forgotten(nn):
    seen = []
    m = nn.Module()
    m.register_buffer("x", torch.ones(1), persistent=False)
    with registration_hooks(nn, module=lambda mod, name, v: seen.append(
            (list(mod._buffers), set(mod._non_persistent_buffers_set),
             name in mod._modules))):
        m.x = nn.Module()
    assert seen == [([], set(), False)] and state(m) == ([], [], ["x"], [])


def test_a_failing_registration_hook_registers_nothing(nn):
    def refuse(module, name, value):
        raise ValueError(f"no {name}")

    m = nn.Module()
    with registration_hooks(nn, buffer=refuse):
        raises_exactly(ValueError, "no b", m.register_buffer, "b", torch.ones(1))
    assert state(m) == ([], [], [], [])


def test_registration_hooks_see_the_modules_of_every_subclass(nn):
    names = []

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = param(2)
            self.register_buffer("count", torch.zeros(()))

    with registration_hooks(nn, parameter=lambda m, n, v: names.append(n),
                            buffer=lambda m, n, v: names.append(n)):
        Layer()
    assert names == ["weight", "count"]


# --- an old register_buffer override that lacks `persistent` --------------

def _old_override(nn, signature="old"):
    class Old(nn.Module):
        def __init__(self):
            super().__init__()
            vars(self)["calls"] = []  # past __setattr__: only the log

        if signature == "old":
            def register_buffer(self, name, tensor):
                self.calls.append(name)
                super().register_buffer(name, tensor)
        elif signature == "persistent":
            def register_buffer(self, name, tensor, persistent=True):
                self.calls.append((name, persistent))
                super().register_buffer(name, tensor, persistent)
        else:  # only keyword arguments: still no `persistent` parameter
            def register_buffer(self, name, tensor, **kwargs):
                self.calls.append((name, kwargs))
                super().register_buffer(name, tensor, **kwargs)

    return Old()


def test_an_old_register_buffer_override_without_persistent_still_works(nn):
    m = _old_override(nn)
    m.b = Buffer(torch.ones(1))
    m.b = torch.zeros(1)  # a tensor into the buffer's slot, too
    assert m.calls == ["b", "b"] and state(m) == ([], ["b"], [], [])


def test_an_old_override_refuses_a_non_persistent_buffer(nn):
    m = _old_override(nn)
    raises_exactly(RuntimeError, "Registering a non-persistent buffer on a Module "
                   "subclass that implements register_buffer() without the "
                   "persistent argument is not allowed.", setattr, m, "b",
                   Buffer(torch.ones(1), persistent=False))
    assert m.calls == [] and state(m) == ([], [], [], [])


def test_an_old_override_refuses_a_tensor_into_a_non_persistent_slot(nn):
    m = _old_override(nn)
    nn.Module.register_buffer(m, "b", torch.ones(1), persistent=False)
    with pytest.raises(RuntimeError):
        m.b = torch.zeros(1)


def test_an_override_that_takes_persistent_is_passed_it(nn):
    m = _old_override(nn, signature="persistent")
    m.b = Buffer(torch.ones(1), persistent=False)
    assert m.calls == [("b", False)] and m._non_persistent_buffers_set == {"b"}


def test_an_override_with_only_keywords_is_called_without_persistent(nn):
    m = _old_override(nn, signature="kwargs")
    m.b = Buffer(torch.ones(1))
    assert m.calls == [("b", {})]


def test_a_layer_with_an_old_override_keeps_its_buffer_in_state_dict(nn):
    class Counting(nn.Linear):
        def __init__(self):
            super().__init__(2, 1)
            self.seen = Buffer(torch.zeros(()))

        def register_buffer(self, name, tensor):  # the pre-`persistent` API
            nn.Module.register_buffer(self, name, tensor)

    layer = Counting()
    assert list(layer._buffers) == ["seen"]
    assert list(layer.state_dict()) == ["weight", "bias", "seen"]


# --- odd names, and random sequences of registrations -----------------------

def test_a_parameter_cannot_take_a_method_name(nn):
    raises_exactly(KeyError, "attribute 'register_buffer' already exists",
                   setattr, nn.Module(), "register_buffer", param(1))


def test_a_parameter_named_training_replaces_the_flag(nn):
    m, w = nn.Module(), param(1)
    m.training = w
    assert "training" not in vars(m) and m.training is w


def test_assignment_stores_a_dotted_child_name_that_add_module_refuses(nn):
    # __setattr__ stores a module itself and checks no name: the child is
    # registered, but no dotted path reaches it
    m, child = nn.Module(), nn.Module()
    setattr(m, "a.b", child)
    assert list(m._modules) == ["a.b"] and m._modules["a.b"] is child
    raises_exactly(KeyError, 'module name can\'t contain ".", got: a.c',
                   m.add_module, "a.c", nn.Module())
    raises_exactly(AttributeError, "Module has no attribute `a`",
                   m.get_submodule, "a.b")


def _value(nn, kind):
    return {
        "Parameter": lambda: param(1),
        "Buffer": lambda: Buffer(torch.ones(1)),
        "Buffer(persistent=False)": lambda: Buffer(torch.ones(1),
                                                   persistent=False),
        "Module": nn.Module,
        "tensor": lambda: torch.ones(1),
        "int": lambda: 3,
        "None": lambda: None,
        "list": lambda: [nn.Module()],
    }[kind]()


def _replay(nn, steps):
    """Apply the steps to a fresh module; log each outcome and the state."""
    m, log = nn.Module(), []
    for op, name, kind in steps:
        value = _value(nn, kind)
        try:
            if op == "setattr":
                setattr(m, name, value)
            elif op == "delattr":
                delattr(m, name)
            elif op == "register_buffer(persistent=False)":
                m.register_buffer(name, value, persistent=False)
            else:
                getattr(m, op)(name, value)
            outcome = "ok"
        except Exception as e:  # any error: it is the result
            outcome = f"{type(e).__name__}: {e}"
        # the only text allowed to differ: the class path of a Module value
        outcome = outcome.replace(torch.typename(nn.Module()), "Module")
        log.append((outcome, state(m), list(vars(m)),
                    [type(v).__name__ for v in m._parameters.values()]))
    return log


# Good names come up more often than bad ones, so that a sequence often
# touches one name several times (register, reassign, delete, reuse).
STEPS = st.lists(st.tuples(
    st.sampled_from(["setattr", "setattr", "delattr", "delattr",
                     "register_parameter", "register_buffer",
                     "register_buffer(persistent=False)",
                     "add_module", "register_module"]),
    st.sampled_from(["a", "a", "a", "b", "b", "training", "x.y", "",
                     "add_module", 0]),
    st.sampled_from(["Parameter", "Buffer", "Buffer(persistent=False)",
                     "Module", "tensor", "int", "None", "list"]),
), max_size=12)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
@example(steps=[("register_buffer(persistent=False)", "a", "tensor"),
                ("delattr", "a", "int"), ("register_buffer", "a", "None")])
@example(steps=[("setattr", "a", "int"), ("setattr", "a", "Module"),
                ("setattr", "a", "Parameter"), ("setattr", "a", "None")])
def test_any_sequence_of_registrations_matches_torch(both, steps):
    real, mini = both
    assert _replay(mini, steps) == _replay(real, steps)


# --- RemovableHandle: born in this chapter, used by every later one -------

def test_handle_does_not_keep_its_hooks_dict_alive(nn):
    handle = nn.RemovableHandle(OrderedDict(), extra_dict=[OrderedDict()])
    assert handle.hooks_dict_ref() is None
    assert handle.extra_dict_ref[0]() is None
    handle.remove()  # a dead dict is skipped, not an error


def test_handle_extra_dict_may_be_one_dict_or_a_list(nn):
    main, one, two = OrderedDict(), OrderedDict(), OrderedDict()
    single = nn.RemovableHandle(main, extra_dict=one)
    several = nn.RemovableHandle(main, extra_dict=[one, two])
    assert len(single.extra_dict_ref) == 1
    assert len(several.extra_dict_ref) == 2
    for handle in (single, several):
        main[handle.id] = one[handle.id] = two[handle.id] = True
        handle.remove()
    assert not (main or one)
    assert list(two) == [single.id]  # not in the single handle's dicts


def test_handle_ignores_an_extra_dict_that_is_neither_dict_nor_list(nn):
    main, flags = OrderedDict(), OrderedDict()
    handle = nn.RemovableHandle(main, extra_dict=(flags,))  # a tuple
    main[handle.id] = flags[handle.id] = True
    handle.remove()
    assert handle.extra_dict_ref == () and list(flags) == [handle.id]


def test_plain_dict_cannot_hold_handles(nn):
    with pytest.raises(TypeError,
                       match="cannot create weak reference to 'dict' object"):
        nn.RemovableHandle({})


def test_handle_as_context_manager_removes_on_exit_even_after_an_error(nn):
    hooks = OrderedDict()
    with pytest.raises(RuntimeError, match="inside"):
        with nn.RemovableHandle(hooks) as handle:
            hooks[handle.id] = "hook"
            raise RuntimeError("inside the block")
    assert not hooks


def _pickled(obj):
    import pickle

    return pickle.loads(pickle.dumps(obj))


def test_copied_handle_keeps_its_id_and_its_copied_dicts(nn):
    owner = {"hooks": OrderedDict(), "flags": OrderedDict()}
    owner["handle"] = nn.RemovableHandle(owner["hooks"],
                                         extra_dict=owner["flags"])
    owner["hooks"][owner["handle"].id] = "hook"
    owner["flags"][owner["handle"].id] = True
    twin = copy.deepcopy(owner)
    assert twin["handle"].id == owner["handle"].id
    assert twin["handle"].hooks_dict_ref() is twin["hooks"]
    assert len(twin["handle"].extra_dict_ref) == 1
    assert twin["handle"].extra_dict_ref[0]() is twin["flags"]
    twin["handle"].remove()
    assert not (twin["hooks"] or twin["flags"])
    assert owner["handle"].id in owner["hooks"]
    assert owner["handle"].id in owner["flags"]


def test_handle_of_a_dead_dict_unpickles_as_a_dead_handle(nn):
    handle = nn.RemovableHandle(OrderedDict())  # the dict dies at once
    copied = _pickled(handle)
    assert copied.hooks_dict_ref() is None and copied.extra_dict_ref == ()
    copied.remove()


def test_unpickled_handle_moves_the_id_counter_past_its_id(nn, monkeypatch):
    import pickle

    handle = nn.RemovableHandle(OrderedDict())
    data = pickle.dumps(handle)
    monkeypatch.setattr(nn.RemovableHandle, "next_id", 0)  # a new process
    pickle.loads(data)
    assert nn.RemovableHandle.next_id == handle.id + 1


def test_handle_ids_come_from_the_backends_own_counter(nn):
    # Deliberate difference: mininn counts its own ids, so an id means the
    # same on both backends but its value differs from torch's.
    import torch.utils.hooks

    before = torch.utils.hooks.RemovableHandle.next_id
    nn.RemovableHandle(OrderedDict())
    moved = torch.utils.hooks.RemovableHandle.next_id - before
    assert moved == (1 if nn.name == "torch.nn" else 0)


GLOBAL_HOOK_FUNCTIONS = [  # torch.nn.modules.module's, and mininn's root's
    "register_module_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]
HOOK_METHODS = [  # the methods of Module that return a handle
    "_register_load_state_dict_pre_hook",
    "_register_state_dict_hook",
    "register_backward_hook",
    "register_forward_hook",
    "register_forward_pre_hook",
    "register_full_backward_hook",
    "register_full_backward_pre_hook",
    "register_load_state_dict_post_hook",
    "register_load_state_dict_pre_hook",
    "register_state_dict_post_hook",
    "register_state_dict_pre_hook",
]


def test_the_lists_of_hook_registrations_are_complete():
    import re

    import mininn

    def public_hook_names(names):
        return sorted(n for n in names if re.fullmatch(
            r"_?register_\w*hook", n) and n != "_register_old_backward_hooks")

    assert public_hook_names(dir(mininn)) == GLOBAL_HOOK_FUNCTIONS
    assert public_hook_names(dir(mininn.Module)) == HOOK_METHODS
    assert public_hook_names(dir(torch.nn.Module)) == HOOK_METHODS


@pytest.mark.parametrize("name", GLOBAL_HOOK_FUNCTIONS + HOOK_METHODS)
def test_every_hook_registration_returns_the_backends_handle(
        nn, name, monkeypatch):
    # torch's handle on torch, mininn.RemovableHandle on mininn (chapter
    # 1's class: the global registration hooks do not borrow torch's)
    if nn.name == "mininn":
        import mininn.hooks as where
    else:
        import torch.nn.modules.module as where
    # a global backward hook sets this flag for good: restored after
    monkeypatch.setattr(where, "_global_is_full_backward_hook", None)
    owner = nn.Module() if name in HOOK_METHODS else nn
    handle = getattr(owner, name)(lambda *args: None)
    handle.remove()
    assert type(handle) is nn.RemovableHandle
    if nn.name == "mininn":
        import mininn.hooks
        import mininn.registration

        assert nn.RemovableHandle is mininn.registration.RemovableHandle
        assert nn.RemovableHandle is mininn.hooks.RemovableHandle
