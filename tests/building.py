"""Small helpers shared by the differential tests of chapters 3 and 4:
build one model on both backends from one seed, seeded inputs, names."""
import torch


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
