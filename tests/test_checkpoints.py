"""Chapter 8, checkpoints as people use them: files on disk, whole-model
pickles and pickled hooks, devices, big models on meta, wrapper prefixes
and exact resumes.
Each test body runs on torch.nn and on mininn (the `nn` fixture)."""
import io
import pickle
import subprocess
import unittest.mock
import warnings
import weakref
import sys
import zipfile
from collections import OrderedDict

import pytest
import torch
import torch.nn.functional as F
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

import mininn
from helpers import error_of
from support import make_mlp, swapping


@pytest.fixture(autouse=True)
def torch_defaults(monkeypatch):
    """Some images set these to change torch.load's default; the tests pin
    torch's own behaviour, as the chapter's first cells do."""
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", raising=False)
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)


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


def serialization_id(buffer):
    with zipfile.ZipFile(buffer) as archive:
        name = next(n for n in archive.namelist()
                    if n.endswith(".data/serialization_id"))
        return archive.read(name).decode()


@pytest.fixture(scope="module")
def saved_elsewhere(tmp_path_factory):
    """{backend: file}: make_mlp's state_dict, saved here, then loaded and
    saved again by another process (one process for both backends)."""
    folder, files, args = tmp_path_factory.mktemp("elsewhere"), {}, []
    for name, lib in (("torch.nn", torch.nn), ("mininn", mininn)):
        torch.save(make_mlp(lib).state_dict(), folder / f"{name}.pt")
        files[name] = folder / f"{name}-again.pt"
        args += [str(folder / f"{name}.pt"), str(files[name])]
    subprocess.run([
        sys.executable, "-c", "import sys, torch\n"
        "for a, b in zip(sys.argv[1::2], sys.argv[2::2]):\n"
        "    torch.save(torch.load(a), b)", *args], check=True)
    return files


def test_serialization_id_is_a_fingerprint_of_the_content(nn, saved_elsewhere):
    sd = make_mlp(nn).state_dict()
    first, again = serialization_id(saved(sd)), serialization_id(saved(sd))
    other = serialization_id(saved({k: v + 1 for k, v in sd.items()}))
    elsewhere = serialization_id(saved_elsewhere[nn.name])
    assert first == again == elsewhere != other


def test_a_saved_view_takes_its_whole_storage_along():
    big = torch.arange(1000, dtype=torch.float32)
    for tensor, nbytes in [(big[:1], 4000), (big[:1].clone(), 4)]:
        back = torch.load(saved(tensor), weights_only=True)
        assert back.shape == (1,) and back.untyped_storage().nbytes() == nbytes


class Gift:
    def __reduce__(self):
        return (print, ("ran",))


@pytest.mark.parametrize("variable, default, explicit_false", [
    ("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "loads", "loads"),
    ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "refused", "refused")])
def test_the_environment_can_force_the_weights_only_default(
        monkeypatch, variable, default, explicit_false):
    monkeypatch.setenv(variable, "1")
    file = saved({"gift": Gift()})

    def outcome(**kwargs):
        file.seek(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NO_...: torch says it forced
            return "refused" if error_of(torch.load, file, **kwargs) else "loads"

    assert (outcome(), outcome(weights_only=False)) == (default,
                                                        explicit_false)


def test_a_numpy_scalar_needs_three_allowlist_entries():
    np = pytest.importorskip("numpy")
    file = saved({"best": np.float64(0.5)})
    listed = torch.serialization.get_unsafe_globals_in_checkpoint(file)
    assert sorted(listed) == ["numpy._core.multiarray.scalar", "numpy.dtype"]
    two = [np._core.multiarray.scalar, np.dtype]
    for allowed, works in [(two, False), (two + [np.dtypes.Float64DType], True)]:
        file.seek(0)
        with torch.serialization.safe_globals(allowed):
            assert (error_of(torch.load, file) is None) == works


# -- pickling -------------------------------------------------------------------

def count_loads(module, state_dict, prefix, *args):
    module.loads = getattr(module, "loads", 0) + 1


def keep_weights(module, state_dict, prefix, local_metadata):
    for key in [k for k in state_dict if not k.endswith("weight")]:
        del state_dict[key]


def picklable(nn):
    """Classes pickle by name: a tree of library layers, none local."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Linear(3, 1))


def test_a_module_with_load_and_state_dict_hooks_pickles(nn):
    net = picklable(nn)
    net.register_load_state_dict_pre_hook(count_loads)
    net[0].register_state_dict_post_hook(keep_weights)
    again = pickle.loads(pickle.dumps(net))
    hook = next(iter(again._load_state_dict_pre_hooks.values()))
    assert hook.module() is again  # the copy, not the original
    again.load_state_dict(picklable(nn).state_dict(), strict=False)
    assert again.loads == 1 and not hasattr(net, "loads")
    keys = list(again.state_dict())
    assert "0.bias" not in keys and "2.bias" in keys


def test_an_unpickled_hook_holds_its_module_weakly(nn):
    import gc

    net = picklable(nn)
    net.register_load_state_dict_pre_hook(count_loads)
    again = pickle.loads(pickle.dumps(net))
    hook = next(iter(again._load_state_dict_pre_hooks.values()))
    assert hook.module() is again
    del again
    gc.collect()  # the copy's modules refer to each other: a cycle
    assert hook.module() is None


def test_a_pickled_private_load_pre_hook_without_module_stays_so(nn):
    net = picklable(nn)
    net._register_load_state_dict_pre_hook(print)
    hook = next(iter(pickle.loads(pickle.dumps(net))
                     ._load_state_dict_pre_hooks.values()))
    assert hook.with_module is False and hook.hook is print


def test_a_hooks_pickled_state_holds_its_module_and_comes_back_weak(nn):
    # the hook's own pair, without pickling the module around it
    net = picklable(nn)
    net.register_load_state_dict_pre_hook(count_loads)
    hook = next(iter(net._load_state_dict_pre_hooks.values()))
    state = hook.__getstate__()
    assert state == {"hook": count_loads, "with_module": True, "module": net}
    revived = type(hook).__new__(type(hook))
    revived.__setstate__(state)
    assert type(revived.module) is weakref.ref and revived.module() is net


def test_a_hook_without_its_module_comes_back_without_one(nn):
    net = picklable(nn)
    net._register_load_state_dict_pre_hook(count_loads)
    hook = next(iter(net._load_state_dict_pre_hooks.values()))
    state = hook.__getstate__()
    assert state == {"hook": count_loads, "with_module": False}
    revived = type(hook).__new__(type(hook))
    revived.__setstate__(state)
    assert revived.with_module is False and "module" not in vars(revived)


def test_reviving_the_hook_of_a_dead_module_is_refused(nn):
    net = picklable(nn)
    net.register_load_state_dict_pre_hook(count_loads)
    hook = next(iter(net._load_state_dict_pre_hooks.values()))
    state = hook.__getstate__()
    state["module"] = None
    with pytest.raises(RuntimeError, match="^You are trying to revive the "
                       "hook of a dead Module!$"):
        type(hook).__new__(type(hook)).__setstate__(state)


def test_unpickling_refills_what_an_old_pickle_lacks(nn):
    old = {"training", "_parameters", "_buffers", "_backward_hooks",
           "_forward_hooks", "_forward_pre_hooks", "_state_dict_hooks",
           "_load_state_dict_pre_hooks", "_modules"}

    class OldPickle:  # as torch 1.0 pickled a Linear
        def __reduce__(self):
            layer = nn.Linear(2, 3)
            state = {k: v for k, v in vars(layer).items()
                     if k in old or not k.startswith("_")}
            return object.__new__, (type(layer),), state

    revived = pickle.loads(pickle.dumps(OldPickle()))
    assert set(vars(revived)) >= set(vars(torch.nn.Module()))
    assert revived._non_persistent_buffers_set == set()
    assert revived._is_full_backward_hook is None
    assert revived(torch.ones(1, 2)).shape == (1, 3)
    assert list(revived.state_dict()) == ["weight", "bias"]


def test_unpickling_keeps_what_the_pickle_has(nn):
    net = picklable(nn)
    handle = net.register_forward_pre_hook(count_loads)
    again = pickle.loads(pickle.dumps(net))
    assert list(again._forward_pre_hooks) == [handle.id]


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


def test_a_loaded_model_is_in_training_mode(nn):
    saved_model = make_mlp(nn).eval()
    back = make_mlp(nn)
    back.load_state_dict(saved_model.state_dict())
    assert back.training and all(m.training for m in back.modules())


def test_a_load_leaves_an_eval_model_in_eval_mode(nn):
    back = make_mlp(nn).eval()
    back.load_state_dict(make_mlp(nn).train().state_dict())
    assert not any(m.training for m in back.modules())


def test_a_state_dict_kept_in_memory_follows_training(nn):
    model = make_mlp(nn)
    kept, snapshot = model.state_dict(), {
        k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model[0].weight.add_(1)
    assert torch.equal(kept["0.weight"], model[0].weight)
    assert not torch.equal(snapshot["0.weight"], model[0].weight)


def test_strict_false_with_prefixed_keys_loads_nothing_silently(nn):
    model = make_mlp(nn)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    wrapped = OrderedDict((f"module.{k}", v + 1)
                          for k, v in make_mlp(nn).state_dict().items()
                          if v.is_floating_point())
    result = model.load_state_dict(wrapped, strict=False)
    assert sorted(result.unexpected_keys) == sorted(wrapped)
    assert {k.removeprefix("module.") for k in wrapped} <= set(
        result.missing_keys)
    assert all(torch.equal(before[k], v)
               for k, v in model.state_dict().items())


def test_a_lambda_hook_stops_a_whole_model_save(nn):
    model = make_mlp(nn)
    model.register_forward_hook(lambda module, args, out: None)
    # pickle stores a function by name: a lambda has none it can import
    # (PicklingError in __main__, AttributeError for a local one)
    with pytest.raises((pickle.PicklingError, AttributeError),
                       match="lambda"):
        torch.save(model, io.BytesIO())


def test_a_loaded_optimizer_state_follows_its_parameters_device(nn):
    model = make_mlp(nn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(4, 4)).sum().backward()
    opt.step()
    file = saved(opt.state_dict())
    model.to("meta")
    again = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    again.load_state_dict(torch.load(file, weights_only=True))
    assert {s["momentum_buffer"].device.type
            for s in again.state.values()} == {"meta"}


# -- tied weights and assign ----------------------------------------------------

def make_tied(nn):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(4, 4, bias=False)
            self.out = nn.Linear(4, 4, bias=False)
            self.out.weight = self.embed.weight

    torch.manual_seed(0)
    return Tied()


def load_tied(nn, swap, tmp_path):
    path = tmp_path / "tied.pt"
    torch.save(make_tied(nn).state_dict(), path)
    with torch.device("meta"):
        model = make_tied(nn)
    early = torch.optim.SGD(model.parameters(), lr=0.1)
    sd = torch.load(path, mmap=True, weights_only=True)
    with swapping(swap):
        model.load_state_dict(sd, assign=True)
    return model, early.param_groups[0]["params"]


def test_assign_unties_tied_weights_and_a_cast_splits_them(nn, tmp_path):
    model, _ = load_tied(nn, False, tmp_path)
    assert model.out.weight is not model.embed.weight
    assert len(list(model.parameters())) == 2
    assert model.out.weight.data_ptr() == model.embed.weight.data_ptr()
    assert torch.equal(model.out.weight, make_tied(nn).embed.weight)
    model.double()
    assert model.out.weight.data_ptr() != model.embed.weight.data_ptr()


def test_the_swap_flag_keeps_the_tie_and_an_early_optimizer(nn, tmp_path):
    model, held = load_tied(nn, True, tmp_path)
    assert model.out.weight is model.embed.weight
    assert held == [model.embed.weight] and held[0] is model.embed.weight
    assert not model.embed.weight.is_meta
    assert type(model.embed.weight) is torch.nn.Parameter
    assert torch.equal(model.embed.weight, make_tied(nn).embed.weight)


def test_to_empty_then_reset_parameters_draws_the_weights_again(nn):
    with torch.device("meta"):
        model = make_scaled(nn)
    model.to_empty(device="cpu")
    torch.manual_seed(0)
    model.fc.reset_parameters()
    assert torch.equal(model.fc.weight, make_scaled(nn).fc.weight)
    assert not model.scale.is_meta  # memory, but no value of its own


# -- two-level prefixes -----------------------------------------------------------

def test_a_two_level_prefix_leaves_the_same_stale_metadata_as_torch(nn):
    inner = make_mlp(nn)
    sd = wrapper(nn, wrapper(nn, inner), nn.ReLU()).state_dict()
    ours = stripped(mininn.consume_prefix_in_state_dict_if_present, sd,
                    "module.module.")
    theirs = stripped(consume_prefix_in_state_dict_if_present, sd,
                      "module.module.")
    assert list(ours.items()) == list(theirs.items())
    assert list(ours._metadata.items()) == list(theirs._metadata.items())
    assert list(ours._metadata)[:3] == ["", "module", "module.module"]


# -- a mixed-precision resume --------------------------------------------------------

def test_a_fresh_grad_scaler_skips_a_step_the_saved_one_would_take(nn):
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(16, 4, generator=g), torch.randn(16, 2, generator=g))
            for _ in range(5)]

    def fresh():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return model, opt, torch.amp.GradScaler("cpu", init_scale=2.0 ** 17)

    def train(model, opt, scaler, batches):
        losses = []
        for x, y in batches:
            opt.zero_grad()
            with torch.autocast("cpu", torch.float16):
                loss = F.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append((loss.detach(), scaler.get_scale()))
        return losses

    model, opt, scaler = fresh()
    train(model, opt, scaler, data[:2])
    file = saved({"model": model.state_dict(), "opt": opt.state_dict(),
                  "scaler": scaler.state_dict()})
    straight = train(model, opt, scaler, data[2:])

    def resumed(with_scaler):
        file.seek(0)
        state = torch.load(file, weights_only=True)
        model, opt, scaler = fresh()
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        if with_scaler:
            scaler.load_state_dict(state["scaler"])
        return train(model, opt, scaler, data[2:])

    assert all(torch.equal(a[0], b[0]) and a[1] == b[1]
               for a, b in zip(resumed(True), straight))
    assert not all(torch.equal(a[0], b[0])
                   for a, b in zip(resumed(False), straight))


def test_a_sibling_whose_name_starts_with_the_prefix_keeps_its_keys(nn):
    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.module = make_mlp(nn)
            self.module2 = nn.Linear(2, 2)  # "module", but not "module."

    sd = Wrapper().state_dict()
    ours = stripped(mininn.consume_prefix_in_state_dict_if_present, sd,
                    "module.")
    theirs = stripped(consume_prefix_in_state_dict_if_present, sd, "module.")
    assert list(ours.items()) == list(theirs.items())
    assert list(ours._metadata.items()) == list(theirs._metadata.items())
    assert list(ours)[:2] == ["module2.weight", "module2.bias"]  # untouched
