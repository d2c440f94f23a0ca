"""Chapter 8, checkpoints as people use them: files on disk, whole-model
pickles, devices, big models on meta, wrapper prefixes and exact resumes.
Each test body runs on torch.nn and on mininn (the `nn` fixture)."""
import io
import unittest.mock
import zipfile
from collections import OrderedDict

import pytest
import torch
import torch.nn.functional as F
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

import mininn
from helpers import error_of


def make_mlp(nn):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(),
                         nn.Linear(8, 2))


def saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


# -- files on disk --------------------------------------------------------------

def test_weights_only_round_trip_keeps_keys_values_and_metadata(nn):
    sd = make_mlp(nn).state_dict()
    back = torch.load(saved(sd), weights_only=True)
    assert list(back) == list(sd) and back._metadata == sd._metadata
    assert all(torch.equal(back[k], sd[k]) for k in sd)


def test_a_pt_file_is_a_zip_with_one_storage_per_tensor(nn):
    sd = make_mlp(nn).state_dict()
    with zipfile.ZipFile(saved(sd)) as archive:
        names = [n.split("/", 1)[1] for n in archive.namelist()]
        assert archive.testzip() is None  # torch writes the checksums
    storages = sorted(n for n in names if n.startswith("data/"))
    assert storages == sorted(f"data/{i}" for i in range(len(sd)))
    assert {"data.pkl", "byteorder", "version"} <= set(names)


def test_a_whole_model_pickle_is_refused_by_default(nn):
    message = error_of(torch.load, saved(make_mlp(nn)))
    assert message.startswith("UnpicklingError: Weights only load failed.")
    container = type(make_mlp(nn)).__module__ + ".Sequential"
    assert f"Unsupported global: GLOBAL {container} was not an allowed " \
           "global by default" in message


def test_a_whole_model_loads_with_its_classes_allowlisted(nn):
    model = make_mlp(nn)
    buffer = saved(model)
    unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(buffer)
    classes = {type(m) for m in model.modules()}
    assert sorted(unsafe) == sorted(f"{c.__module__}.{c.__name__}"
                                    for c in classes)
    buffer.seek(0)
    with torch.serialization.safe_globals(list(classes)):
        back = torch.load(buffer)
    assert type(back) is type(model)
    assert all(torch.equal(a, b) for a, b in
               zip(back.state_dict().values(), model.state_dict().values()))


def test_plain_tensor_attributes_are_neither_saved_nor_moved(nn):
    class CivilNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.syszux = torch.zeros([1, 1])

    net = CivilNet().to("meta")
    assert list(net.state_dict()) == ["fc.weight", "fc.bias"]
    assert net.fc.weight.is_meta and not net.syszux.is_meta


# -- devices ----------------------------------------------------------------------

def as_if_saved_on_gpu(buffer):
    cpu, cuda = b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/data.pkl"):
                data = data.replace(cpu, cuda)
            dst.writestr(info.filename, data)
    out.seek(0)
    return out


def test_a_cuda_checkpoint_on_a_cpu_machine_needs_map_location(nn):
    sd = make_mlp(nn).state_dict()
    gpu_file = as_if_saved_on_gpu(saved(sd))
    with unittest.mock.patch("torch.cuda.is_available", return_value=False):
        message = error_of(torch.load, gpu_file, weights_only=True)
    assert message.startswith(
        "RuntimeError: Attempting to deserialize object on a CUDA device but "
        "torch.cuda.is_available() is False. If you are running on a "
        "CPU-only machine, please use torch.load with "
        "map_location=torch.device('cpu')")
    for where in ["cpu", torch.device("cpu"), {"cuda:0": "cpu"},
                  lambda storage, location: storage]:
        gpu_file.seek(0)
        back = torch.load(gpu_file, map_location=where, weights_only=True)
        model = make_mlp(nn)
        assert str(model.load_state_dict(back)) == (
            "<All keys matched successfully>")
        assert all(torch.equal(back[k], sd[k]) for k in sd)


def make_scaled(nn):
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.register_buffer("scale", torch.full((2,), 2.0),
                                 persistent=False)

        def forward(self, x):
            return self.fc(x) * self.scale

    torch.manual_seed(0)
    return Scaled()


def test_mmap_meta_and_assign_use_the_mapped_storage(nn, tmp_path):
    path = tmp_path / "scaled.pt"
    torch.save(make_scaled(nn).state_dict(), path)
    mapped = torch.load(path, mmap=True, weights_only=True)
    with torch.device("meta"):
        model = make_scaled(nn)
    assert str(model.load_state_dict(mapped, assign=True)) == (
        "<All keys matched successfully>")
    assert model.fc.weight.data_ptr() == mapped["fc.weight"].data_ptr()
    assert isinstance(model.fc.weight, torch.nn.Parameter)


def test_assign_leaves_a_non_persistent_buffer_on_meta(nn):
    with torch.device("meta"):
        model = make_scaled(nn)
    model.load_state_dict(make_scaled(nn).state_dict(), assign=True)
    assert model.scale.is_meta and not model.fc.weight.is_meta
    assert error_of(model, torch.ones(1, 4)) == (
        "RuntimeError: Tensor on device meta is not on the expected device "
        "cpu!")


def test_an_optimizer_built_before_assign_holds_the_old_parameters(nn):
    with torch.device("meta"):
        model = make_scaled(nn)
    early = torch.optim.SGD(model.parameters(), lr=0.1)
    model.load_state_dict(make_scaled(nn).state_dict(), assign=True)
    held = early.param_groups[0]["params"]
    assert all(p.is_meta for p in held)
    assert not any(p is model.fc.weight for p in held)


# -- prefixes ---------------------------------------------------------------------

def wrapper(nn, *children):
    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.module = children[0]
            for i, child in enumerate(children[1:]):
                setattr(self, f"head{i}", child)

    return Wrapper()


def stripped(strip, state_dict, prefix):
    copy = OrderedDict(state_dict)
    copy._metadata = OrderedDict(state_dict._metadata)
    strip(copy, prefix)
    return copy


@pytest.mark.parametrize("shape", ["one child", "two children", "nested"])
def test_mininn_prefix_helper_matches_torchs(nn, shape):
    inner = make_mlp(nn)
    model = {"one child": lambda: wrapper(nn, inner),
             "two children": lambda: wrapper(nn, inner, nn.BatchNorm1d(2),
                                             nn.Linear(2, 2)),
             "nested": lambda: wrapper(nn, wrapper(nn, inner),
                                       nn.BatchNorm1d(3))}[shape]()
    sd = model.state_dict()
    ours = stripped(mininn.consume_prefix_in_state_dict_if_present, sd,
                    "module.")
    theirs = stripped(consume_prefix_in_state_dict_if_present, sd, "module.")
    assert list(ours.items()) == list(theirs.items())
    assert list(ours._metadata.items()) == list(theirs._metadata.items())


def test_stripping_keeps_every_other_childs_metadata(nn):
    sd = wrapper(nn, make_mlp(nn), nn.BatchNorm1d(2)).state_dict()
    mininn.consume_prefix_in_state_dict_if_present(sd, "module.")
    assert sd._metadata["head0"] == {"version": 2}
    assert sd._metadata[""] == {"version": 1}  # the wrapped Sequential's
    assert sd._metadata["1"] == {"version": 2}


def test_stripping_a_prefix_nobody_has_changes_nothing(nn):
    sd = make_mlp(nn).state_dict()
    before = (list(sd), list(sd._metadata.items()))
    mininn.consume_prefix_in_state_dict_if_present(sd, "module.")
    assert (list(sd), list(sd._metadata.items())) == before


def test_a_wrapped_checkpoint_loads_after_the_prefix_is_stripped(nn):
    sd = wrapper(nn, make_mlp(nn)).state_dict()
    assert "Missing key(s)" in error_of(make_mlp(nn).load_state_dict, sd)
    mininn.consume_prefix_in_state_dict_if_present(sd, "module.")
    assert str(make_mlp(nn).load_state_dict(sd)) == (
        "<All keys matched successfully>")


def test_data_parallel_checkpoint_loads_into_either_library(nn):
    sd = torch.nn.DataParallel(make_mlp(torch.nn)).state_dict()
    assert next(iter(sd)) == "module.0.weight"
    mininn.consume_prefix_in_state_dict_if_present(sd, "module.")
    assert str(make_mlp(nn).load_state_dict(sd)) == (
        "<All keys matched successfully>")


# -- resuming ----------------------------------------------------------------------

def test_resume_is_exact_only_with_scheduler_and_rng_state(nn):
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(8, 4, generator=g), torch.randn(8, 2, generator=g))
            for _ in range(5)]

    def fresh():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5),
                              nn.Linear(8, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return model, opt, torch.optim.lr_scheduler.StepLR(opt, 3, 0.5)

    def train(model, opt, schedule, batches):
        losses = []
        for x, y in batches:
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            schedule.step()
            losses.append(loss.detach())
        return losses

    model, opt, schedule = fresh()
    torch.manual_seed(42)
    train(model, opt, schedule, data[:2])
    file = saved({"model": model.state_dict(), "opt": opt.state_dict(),
                  "schedule": schedule.state_dict(),
                  "rng": torch.get_rng_state()})
    straight = train(model, opt, schedule, data[2:])

    def resumed(with_schedule, with_rng):
        file.seek(0)
        state = torch.load(file, weights_only=True)
        model, opt, schedule = fresh()
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        if with_schedule:
            schedule.load_state_dict(state["schedule"])
        torch.manual_seed(42)
        if with_rng:
            torch.set_rng_state(state["rng"])
        losses = train(model, opt, schedule, data[2:])
        return [torch.equal(a, b) for a, b in zip(losses, straight)]

    assert resumed(True, True) == [True, True, True]
    assert resumed(False, True) == [True, True, False]
    assert resumed(True, False)[0] is False
