"""Chapter 8 on a GPU: a checkpoint saved there, opened by a process that
cannot see it, and DataParallel on one GPU."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support import make_mlp

pytestmark = pytest.mark.gpu

# Run with CUDA hidden: torch's refusal, then map_location="cpu".
OPEN_ON_A_CPU = """
import json, sys
import torch
from helpers import error_of
path, reference = sys.argv[1], sys.argv[2]
result = {"cuda": torch.cuda.is_available(),
          "plain load": error_of(torch.load, path, weights_only=True)}
sd = torch.load(path, map_location="cpu", weights_only=True)
ref = torch.load(reference, weights_only=True)
result["devices"] = sorted({t.device.type for t in sd.values()})
result["same"] = list(sd) == list(ref) and all(
    torch.equal(sd[k], ref[k]) for k in ref)
print(json.dumps(result))
"""


def test_a_gpu_checkpoint_opens_on_a_cpu_only_with_map_location(
        nn, tmp_path, record_property):
    model = make_mlp(nn)
    torch.save(model.state_dict(), tmp_path / "cpu.pt")
    torch.save(model.cuda().state_dict(), tmp_path / "gpu.pt")
    out = subprocess.run(
        [sys.executable, "-c", OPEN_ON_A_CPU, str(tmp_path / "gpu.pt"),
         str(tmp_path / "cpu.pt")], capture_output=True, text=True, check=True,
        cwd=Path(__file__).parents[2] / "book",  # for helpers
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    result = json.loads(out.stdout)
    record_property("without map_location", str(result["plain load"])[:120])
    assert result["cuda"] is False
    assert str(result["plain load"]).startswith(
        "RuntimeError: Attempting to deserialize object on a CUDA device")
    assert result["devices"] == ["cpu"] and result["same"]


def test_data_parallel_on_one_gpu_moves_the_model_and_calls_it_itself(
        both, monkeypatch):
    monkeypatch.setattr(torch.nn.DataParallel, "replicate",
                        lambda *args: pytest.fail("DataParallel replicated"))
    outputs = []
    for nn in both:
        model = make_mlp(nn).eval()
        wrapped = torch.nn.DataParallel(  # moves the model to the GPU at once
            model, device_ids=None if torch.cuda.device_count() == 1 else [0])
        assert wrapped.device_ids == [0]
        assert all(t.device == torch.device("cuda", 0)
                   for t in [*model.parameters(), *model.buffers()])
        torch.manual_seed(4)
        x = torch.randn(16, 4)
        with torch.no_grad():
            out, expected = wrapped(x), model(x.cuda())
        assert out.device == torch.device("cuda", 0)
        assert torch.equal(out, expected)
        outputs.append(out)
    assert torch.equal(*outputs)  # mininn's as torch.nn's
