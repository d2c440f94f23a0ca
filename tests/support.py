"""Helpers shared by the test files. A helper that one file needs stays in
that file, under a name no other test file uses (tests/test_support.py)."""
import contextlib
import importlib
import inspect
from types import SimpleNamespace

import torch


def build_both(both, make, seed=0):
    """make(nn) on torch.nn and on mininn, each right after seeding."""
    built = []
    for backend in both:
        torch.manual_seed(seed)
        built.append(make(backend))
    return built


def randn(*shape, seed=1):
    """A seeded normal tensor that leaves torch's global generator alone."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def param(*shape):
    """A Parameter of ones (torch's own class, on both backends)."""
    return torch.nn.Parameter(torch.ones(*shape))


def child_names(module):
    """The names of a module's direct children, in order."""
    return [name for name, _ in module.named_children()]


def make_mlp(nn, outputs=2):
    """Linear, BatchNorm1d, ReLU, Linear (4 -> 8 -> `outputs`), seeded."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(),
                         nn.Linear(8, outputs))


def raises_exactly(exc, message, fn, *args, **kwargs):
    """Assert fn(*args, **kwargs) raises exactly `exc` (not a subclass)
    whose only argument is `message` (as `args`: str() of a KeyError adds
    quotes); returns the exception."""
    try:
        fn(*args, **kwargs)
    except Exception as error:  # any exception is the result under test
        assert type(error) is exc, (
            f"raised {type(error).__name__}: {error}, expected {exc.__name__}")
        assert error.args == (message,), (
            f"message {error.args!r}, expected {(message,)!r}")
        return error
    raise AssertionError(f"no {exc.__name__} raised; expected {message!r}")


@contextlib.contextmanager
def swapping(on=True):
    """torch.__future__'s global swap-on-conversion flag `on` for a block."""
    torch.__future__.set_swap_module_params_on_conversion(on)
    try:
        yield
    finally:
        torch.__future__.set_swap_module_params_on_conversion(False)


def exported_classes(module):
    """The public classes a file of mininn defines itself, sorted."""
    return sorted(name for name, value in vars(module).items()
                  if isinstance(value, type) and not name.startswith("_")
                  and value.__module__ == module.__name__)


def constructor_arguments(cls):
    """(name, kind, default) of each constructor argument: the signature,
    without the annotations torch adds."""
    return [(p.name, p.kind, p.default)
            for p in inspect.signature(cls).parameters.values()]


def with_grads(net):
    """`net` after one backward pass: every float parameter has a grad."""
    loss = sum((p.float() ** 2).sum() for p in net.parameters()
               if p.requires_grad)
    loss.backward()
    return net


class Backend:
    """torch.nn or mininn behind one face: `nn.Linear`, `nn.Module`, ...;
    the names torch keeps outside `torch.nn` (RemovableHandle, the global
    hook functions) are looked up where torch keeps them."""

    def __init__(self, name):
        self.name = name
        if name == "mininn":  # Parameter and Buffer: torch's own classes
            self._places = [importlib.import_module("mininn"), SimpleNamespace(
                Parameter=torch.nn.Parameter, Buffer=torch.nn.Buffer)]
        else:
            self._places = [importlib.import_module(place) for place in (
                "torch.nn", "torch.nn.modules.module", "torch.utils.hooks",
                "torch.nn.modules.utils")]

    def __getattr__(self, attr):
        for place in self._places:
            if hasattr(place, attr):
                return getattr(place, attr)
        raise AttributeError(f"{self.name} has no {attr!r}")

    def __repr__(self):
        return self.name
