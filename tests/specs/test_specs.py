"""The bundled hardware and model library, the derived totals, and `moe-planner specs`.

Published totals come from the vendors' READMEs and papers (cited in each model spec's `source`);
the expected value's arithmetic is written beside each number.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
import yaml

from planner import Scenario
from planner.cli import main
from planner.errors import SpecError
from planner.specs.precision import PRECISIONS
from planner.specs.registry import hardware_names, load_hardware, load_model, model_names

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def bundled_text(package: str, name: str) -> str:
    """A bundled spec's text; a system's as one self-contained file (datasheet and calibration)."""
    if package == "planner.hardware_specs":
        from planner.specs.registry import bundled_hardware_text

        return bundled_hardware_text(name)
    return resources.files(package).joinpath(f"{name}.yaml").read_text("utf-8")


@functools.cache
def _bundled_doc(package: str, name: str) -> dict:
    return yaml.safe_load(bundled_text(package, name))


def bundled_doc(package: str, name: str) -> dict:
    """A fresh copy of a bundled spec's parsed YAML, to edit."""
    return copy.deepcopy(_bundled_doc(package, name))


def dump(doc: dict) -> str:
    return yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# ---- every bundled spec loads -------------------------------------------------------------------

def test_library_is_not_empty():
    # the library: at least the two systems of the main comparison and its model
    assert {"gb200-nvl72", "hgx-h200"} <= set(hardware_names())
    assert {"kimi-k2-thinking", "deepseek-v3"} <= set(model_names())


@pytest.mark.parametrize("name", hardware_names())
def test_bundled_hardware_loads(name):
    h = load_hardware(name)
    assert h.name == name  # the file name is the spec's name
    assert {"fp8", "bf16"} <= set(h.flops) and all(v > 0 for v in h.flops.values())
    for value in (h.hbm_capacity, h.hbm_bandwidth, h.su_bandwidth, h.so_bandwidth, h.power_per_gpu):
        assert value > 0
    # every fact read from the file kept its source
    assert all(src.strip() for src in h.sources.values())
    facts = {"gpu.hbm_capacity", "gpu.hbm_bandwidth", "scale_up.bandwidth", "scale_out.bandwidth"}
    assert facts <= set(h.sources)
    assert h.gpus_per_system % h.domain_size == 0


@pytest.mark.parametrize("name", model_names())
def test_bundled_model_loads(name):
    m = load_model(name)
    assert m.name == name
    assert m.total_params > m.active_params > 0
    assert 1 <= m.k <= m.E
    assert sum(m.weight_bytes().values()) > 0 and m.kv_bytes_per_token() > 0


# ---- derived totals vs published ----------------------------------------------------------------
# Counting (planner/model.py docstring): total = every main-model weight incl. the input embedding
# and the LM head, MTP module excluded (as DeepSeek's "671B" is); active = weights a token multiplies,
# incl. the LM head, excl. the input embedding (a lookup) -- DeepSeek's "37B" counts both tables
# (36.7B per README_WEIGHTS), so ours sits ~0.9B lower by design, still within 3%.

PUBLISHED = [
    # name, published total, published active, source
    ("kimi-k2", 1.04e12, 32e9),           # physics.md "~1.04T total, ~32B active"; README "1T / 32B"
    ("kimi-k2-thinking", 1.04e12, 32e9),  # same architecture as K2
    ("deepseek-v3", 671e9, 37e9),         # DeepSeek-V3 README: 671B total, 37B activated (MTP apart)
    ("deepseek-r1", 671e9, 37e9),         # R1 = V3 architecture
    ("qwen3-235b-a22b", 235e9, 22e9),     # Qwen3 technical report Table 2
    ("gpt-oss-120b", 117e9, 5.1e9),       # gpt-oss README "117B parameters with 5.1B active"
    ("mixtral-8x7b", 46.7e9, 12.9e9),     # Mistral: 46.7B total, 12.9B per token
    ("deepseek-v2-lite", 15.7e9, 2.4e9),  # DeepSeek-V2 paper App. B.1: 15.7B / 2.4B
    # MiniMax-M2 series report (arXiv 2605.26494): 229.9B total, 9.8B activated per token; the 9.8B
    # leaves out the LM head, which ours counts: + V d = 200,064 x 3072 = 0.61B (README: "230B / 10B")
    ("minimax-m2.5", 229.9e9, 9.8e9 + 200_064 * 3072),
    # Dense models: every weight is active, but ours leaves out the input embedding (a lookup), so
    # the expected active count is the published total less V d.
    # Llama-3.1-8B-Instruct model page, safetensors "8.03B params" (8,030,261,248); V d = 128,256 x 4,096
    ("llama-3.1-8b", 8.03e9, 8.03e9 - 128_256 * 4096),
    # Llama-3.1-70B model page, safetensors "70.6B params"; V d = 128,256 x 8,192
    ("llama-3.1-70b", 70.6e9, 70.6e9 - 128_256 * 8192),
    # Qwen3-32B model card (README, Model Overview): "Number of Parameters: 32.8B"; V d = 151,936 x 5,120
    ("qwen3-32b", 32.8e9, 32.8e9 - 151_936 * 5120),
]


@pytest.mark.parametrize(("name", "total", "active"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_totals_match_published(name, total, active):
    m = load_model(name)
    assert math.isclose(m.total_params, total, rel_tol=0.03)
    assert math.isclose(m.active_params, active, rel_tol=0.03)


def test_kimi_k2_parameter_arithmetic():
    m = load_model("kimi-k2-thinking")
    assert m.expert_params == 44_040_192  # 3 x 7168 x 2048
    # 60 MoE layers (61 - 1 dense) x 384 experts x 44,040,192
    assert m.class_params()["routed_experts"] == 60 * 384 * 44_040_192 == 1_014_686_023_680


def test_deepseek_v3_mtp_counted_apart():
    m = load_model("deepseek-v3")
    # README_WEIGHTS: the MTP module adds 11.5B unique params (HF total 685B = 671B + 14B incl. its
    # share of the embedding); it is not in total_params
    assert math.isclose(m.mtp_params, 11.5e9, rel_tol=0.03)
    assert math.isclose(m.total_params + m.mtp_params, 682.6e9, rel_tol=0.01)  # 671.0 + 11.6


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-r1", "kimi-k2", "kimi-k2-thinking"])
def test_mla_kv_cache_bf16(name):
    # MLA caches the 512-wide latent + the 64-wide RoPE key: 61 layers x 576 x 2 B, whatever the heads
    assert load_model(name).kv_bytes_per_token("bf16") == 61 * 576 * 2 == 70_272


def test_gqa_kv_cache_bf16():
    # 2 (K and V) x kv_heads x head_dim x layers x 2 B (Qwen3 and Mixtral config.json)
    assert load_model("qwen3-235b-a22b").kv_bytes_per_token() == 2 * 4 * 128 * 94 * 2 == 192_512
    assert load_model("mixtral-8x7b").kv_bytes_per_token() == 2 * 8 * 128 * 32 * 2 == 131_072
    assert load_model("gpt-oss-120b").kv_bytes_per_token() == 2 * 8 * 64 * 36 * 2 == 73_728


# ---- dense models (no experts) ------------------------------------------------------------------
DENSE = ["llama-3.1-8b", "llama-3.1-70b", "qwen3-32b"]


def test_dense_parameter_arithmetic():
    m = load_model("llama-3.1-70b")  # config.json: d 8192, 80 layers, 64 / 8 heads of 128, FFN 28672
    assert m.is_dense and (m.n_Ld, m.n_moe) == (80, 0)
    attn = 8192 * 64 * 128 + 2 * 8192 * 8 * 128 + 64 * 128 * 8192  # q + k + v + o = 150,994,944
    ffn = 3 * 8192 * 28672  # gate, up, down = 704,643,072
    assert m.attn_params == attn and m.dense_ffn_params == ffn
    # 80 layers x (attention + FFN + 2 norms) + input embedding + LM head + final norm
    assert m.total_params == 80 * (attn + ffn + 2 * 8192) + 2 * 128_256 * 8192 + 8192 == 70_553_706_496
    assert m.class_params()["routed_experts"] == 0 and m.router_params == 0 and m.mtp_params == 0
    assert m.kv_bytes_per_token() == 2 * 8 * 128 * 80 * 2 == 327_680


@pytest.mark.parametrize("name", DENSE)
def test_dense_decode_step_has_no_expert_or_all_to_all_time(name):
    from planner.physics.step import decode_step

    m, hw = load_model(name), load_hardware("hgx-h200")
    r = decode_step(Scenario(m, hw, gpus=8), batch=64, context=2048)
    assert r.feasible, r.reason
    # no experts: EP 1, one expert slot, the "MoE TP" is the attention TP (all 8 GPUs by default)
    assert (r.config["ep"], r.config["tp_attn"], r.config["tp_moe"], r.config["expert_slots"]) == (1, 8, 8, 1)
    for term in ("experts", "shared_experts", "dispatch", "combine", "allreduce_moe", "layer_moe"):
        assert r.terms[term] == 0.0, term
    assert r.categories["scale_out"] == 0.0  # no all-to-all; TP stays inside the NVLink domain
    # the step is n_L dense layers + the LM head + the fixed cost, nothing else, or the host's time
    # for its 64 sequences where that is longer
    expected = m.n_L * r.terms["layer_dense"] + r.terms["lm_head"] + hw.efficiency.step_overhead
    expected = max(expected, 64 * hw.efficiency.host_per_sequence)
    assert math.isclose(r.step_time, expected, rel_tol=1e-12)
    # the same in bound mode, where every dispatch and combine is computed (and is 0 with EP = 1)
    b = decode_step(Scenario(m, hw, gpus=8, mode="bound"), batch=64, context=2048)
    assert b.terms["dispatch"] == b.terms["combine"] == 0.0
    assert math.isclose(b.step_time, m.n_L * b.terms["layer_dense"] + b.terms["lm_head"], rel_tol=1e-12)


def test_dense_weight_bytes_hand_check():
    from planner.physics.step import decode_step

    m, hw = load_model("llama-3.1-8b"), load_hardware("hgx-h200")
    total = 2 * m.total_params  # BF16: 2 B per parameter
    assert sum(m.weight_bytes().values()) == total == 16_060_522_496
    r = decode_step(Scenario(m, hw, gpus=8, mode="bound"), batch=1, context=2048)
    norms = 2 * (2 * 4096 * 32 + 4096)  # RMSNorm vectors, 532,480 B: not in the step model's weight terms
    # held: every weight tensor split over the 8 TP ranks
    assert math.isclose(8 * r.memory["weights"], total - norms, rel_tol=1e-12)
    assert math.isclose(8 * r.memory["weights"], total, rel_tol=1e-4)
    # read per step (bound mode, one sequence: every projection is memory-bound): each weight once,
    # except the input embedding, a table lookup
    read = 8 * r.categories["hbm_weights"] * hw.hbm_bandwidth
    assert math.isclose(read, total - norms - 2 * 128_256 * 4096, rel_tol=1e-9)


def test_dense_frontier_uses_no_expert_parallelism():
    from planner.serving.frontiers import frontier

    df = frontier(Scenario("qwen3-32b", "hgx-h200", gpus=8, serving="aggregated"))
    assert len(df) and set(df.ep) == {1} and set(df.expert_slots) == {1}
    assert (df.tp_moe == df.tp_attn).all() and not df.overlap.any()


def test_dense_yaml_form(tmp_path):
    doc = bundled_doc("planner.model_specs", "llama-3.1-8b")
    assert "moe" not in doc and doc["dense_layers"] == doc["layers"]
    doc["dense_layers"] = 31
    path = tmp_path / "dense.yaml"
    path.write_text(dump(doc))
    with pytest.raises(SpecError, match="dense_layers: equal to layers .32. in a dense model"):
        load_model(str(path))
    doc = bundled_doc("planner.model_specs", "llama-3.1-8b")
    del doc["intermediate_size"]
    path.write_text(dump(doc))
    with pytest.raises(SpecError, match="intermediate_size: a value"):
        load_model(str(path))


@pytest.mark.parametrize(("fmt", "bits"), [
    ("nvfp4", 4.5),              # E2M1 + one E4M3 scale per 16: 4 + 8/16
    ("mxfp4", 4.25),             # E2M1 + one E8M0 scale per 32: 4 + 8/32
    ("int4_g32", 4.5),           # INT4 + one BF16 scale per 32: 4 + 16/32
    ("fp8", 8 + 32 / 128**2),    # E4M3 + one FP32 scale per 128x128 block = 8.00195
    ("bf16", 16.0),
])
def test_weight_bytes_per_format(fmt, bits):
    assert PRECISIONS[fmt].bits == bits
    m = load_model("kimi-k2")
    routed = m.weight_bytes({"routed_experts": fmt})["routed_experts"]
    assert math.isclose(routed, 1_014_686_023_680 * bits / 8, rel_tol=1e-12)


def test_kimi_k2_thinking_checkpoint_size():
    wb = load_model("kimi-k2-thinking").weight_bytes()
    # routed experts INT4 g32: 1,014.69B x 4.5 / 8 = 570.76 GB; the other 11.72B params in BF16: 23.44 GB
    assert math.isclose(wb["routed_experts"], 570.76e9, rel_tol=1e-4)
    assert math.isclose(sum(wb.values()), 594e9, rel_tol=0.01)  # ~594 GB checkpoint


def test_fp8_checkpoints():
    # Kimi K2 in FP8: 1,014.69B + 6.33B + 3.04B linear params at 1.00024 B + 2.35B embeddings x 2 B
    assert math.isclose(sum(load_model("kimi-k2").weight_bytes().values()), 1.03e12, rel_tol=0.01)
    # gpt-oss-120b: MXFP4 experts (114.7B x 0.53125 = 60.9 GB) + BF16 rest: fits one 80 GB GPU (README)
    assert 60e9 < sum(load_model("gpt-oss-120b").weight_bytes().values()) < 80e9


# ---- moe-planner specs show / list --------------------------------------------------------------

def test_show_gb200_json(capsys):
    rc, out, err = run_cli(capsys, "specs", "show", "gb200-nvl72", "--json")
    assert rc == 0 and err == ""
    d = json.loads(out)
    assert d["kind"] == "hardware"
    assert d["gpus"] == 72 and d["scale_up_domain"] == 72  # one 72-GPU NVLink domain
    # 72 x 189471 MiB (as nvidia-smi reports the "186 GB" part) = 14.305 TB
    assert math.isclose(d["hbm_capacity_total"], 72 * 189471 * 2**20, rel_tol=1e-12)
    # NVIDIA's "up to 30 TB fast memory" adds label gigabytes, 72 x (186 + 240 GB LPDDR5X share)
    # = 30.67 TB; in bytes the HBM is 189471 MiB, so 72 x (198.67 + 240) GB = 31.58 TB
    assert math.isclose(d["fast_memory_total"], 72 * (189471 * 2**20 + 240e9), rel_tol=1e-12)
    assert d["su_bandwidth"] == 900e9  # "1.8 TB/s" NVLink 5 is bidirectional: 900 GB/s per direction
    assert d["flops"]["fp4"] == 10e15  # 20 PF sparse / 2
    assert d["hbm_bandwidth"] == 8e12


def test_show_h200_json(capsys):
    rc, out, _ = run_cli(capsys, "specs", "show", "hgx-h200", "--json")
    d = json.loads(out)
    assert rc == 0
    assert d["scale_up_domain"] == 8 and d["hbm_capacity"] == 143771 * 2**20
    assert d["hbm_capacity_total"] == 8 * 143771 * 2**20  # 1,206 GB per HGX H200
    assert d["su_bandwidth"] == 450e9  # "900GB/s" NVLink 4, bidirectional


def test_show_h200_json_subprocess():
    proc = subprocess.run([sys.executable, "-m", "planner", "specs", "show", "hgx-h200", "--json"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["scale_up_domain"] == 8 and d["hbm_capacity"] == 143771 * 2**20


def test_show_model_json(capsys):
    rc, out, _ = run_cli(capsys, "specs", "show", "kimi-k2-thinking", "--json")
    d = json.loads(out)
    assert rc == 0 and d["kind"] == "model"
    assert d["kv_bytes_per_token"] == 70_272  # 61 x 576 x 2
    assert d["total_params"] == load_model("kimi-k2-thinking").total_params
    assert set(d["weight_bytes"]) == {"routed_experts", "attention", "dense_ffn", "embeddings"}
    assert math.isclose(d["weight_bytes_total"], sum(d["weight_bytes"].values()))
    assert d["active_params"] < d["total_params"]


def test_show_hardware_table(capsys):
    rc, out, _ = run_cli(capsys, "specs", "show", "hgx-h200")
    assert rc == 0
    assert "151 GB" in out and "4.8 TB/s" in out and "989 TFLOP/s" in out
    assert "450 GB/s per direction" in out
    assert "MLCommons inference v4.1" in out  # a source is shown beside its value
    assert "1.21 TB" in out  # HBM total, derived: 8 x 143771 MiB


def test_show_names_the_kernel_fit_as_the_source_of_the_communication_laws(capsys):
    # a stack's all-reduce and all-to-all constants are fitted to measured kernels, its compute and
    # HBM fractions to the measured runs: each row names its own fit
    rc, out, _ = run_cli(capsys, "specs", "show", "gb300-nvl72", "--full")
    assert rc == 0
    for label in ("all-reduce latency per pass", "all-reduce bandwidth fraction",
                  "all-to-all bandwidth fraction"):
        row = next(ln for ln in out.splitlines() if ln.strip().startswith(label))
        assert "measured" in row and "kernels of this GPU and stack" in row, row
    hbm = next(ln for ln in out.splitlines() if ln.strip().startswith("HBM (eta_m)"))
    assert "measured runs" in hbm and "kernels of this GPU" not in hbm


def test_show_model_table(capsys):
    rc, out, _ = run_cli(capsys, "specs", "show", "kimi-k2-thinking")
    assert rc == 0
    assert "70.3 kB per token" in out  # 70,272 B
    assert "594 GB" in out and "int4_g32" in out
    assert "1026.4 B" in out  # total params


def test_show_yaml_path(tmp_path, capsys):
    path = tmp_path / "my-system.yaml"
    path.write_text(bundled_text("planner.hardware_specs", "hgx-h200"))
    rc, out, _ = run_cli(capsys, "specs", "show", str(path), "--json")
    assert rc == 0 and json.loads(out)["hbm_capacity"] == 143771 * 2**20
    mpath = tmp_path / "my-model.yaml"
    mpath.write_text(bundled_text("planner.model_specs", "mixtral-8x7b"))
    rc, out, _ = run_cli(capsys, "specs", "show", str(mpath), "--json")
    assert rc == 0 and json.loads(out)["kind"] == "model"


def test_bidirectional_is_halved(tmp_path):
    doc = bundled_doc("planner.hardware_specs", "gb200-nvl72")
    doc["scale_up"]["bandwidth"].update(value="1.8 TB/s", direction="bidirectional")
    path = tmp_path / "bidir.yaml"
    path.write_text(dump(doc))
    assert load_hardware(str(path)).su_bandwidth == 900e9  # 1.8 TB/s / 2


def test_list(capsys):
    rc, out, _ = run_cli(capsys, "specs", "list")
    assert rc == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert set(lines) == set(hardware_names()) | set(model_names())
    assert "72 GPUs/domain, 199 GB HBM @ 8 TB/s, fp4 10 PFLOP/s" in lines["gb200-nvl72"]
    assert "8 GPUs/domain, 151 GB HBM @ 4.8 TB/s, fp8 1.98 PFLOP/s" in lines["hgx-h200"]
    assert "1026B total / 31.7B active, MLA, 384 experts top-8" in lines["kimi-k2-thinking"]
    assert out.index("gb200-nvl72") < out.index("kimi-k2")  # hardware first, then models


@pytest.mark.parametrize("argv", [["specs", "--help"], ["specs", "show", "--help"],
                                  ["specs", "list", "--help"]])
def test_help_teaches(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert "usage: moe-planner specs" in out
    if argv[1] != "list":
        assert "per direction" in out and "dense" in out and "GB/s" in out


# ---- bad input: one line on stderr, exit 2, SpecError from the API --------------------------------

def _hw(edit):
    def make(tmp_path: Path) -> Path:
        doc = bundled_doc("planner.hardware_specs", "gb200-nvl72")
        edit(doc)
        path = tmp_path / "broken.yaml"
        path.write_text(dump(doc))
        return path
    return make


def _model(edit):
    def make(tmp_path: Path) -> Path:
        doc = bundled_doc("planner.model_specs", "mixtral-8x7b")
        edit(doc)
        path = tmp_path / "broken-model.yaml"
        path.write_text(dump(doc))
        return path
    return make


def _text(transform):
    def make(tmp_path: Path) -> Path:
        text = bundled_text("planner.hardware_specs", "gb200-nvl72")
        new = transform(text, tmp_path)
        assert new != text
        path = tmp_path / "broken.yaml"
        path.write_text(new)
        return path
    return make


def _set(path: str, value):
    def edit(doc):
        *parents, last = path.split(".")
        for p in parents:
            doc = doc[p]
        doc[last] = value
    return edit


def _del(path: str):
    def edit(doc):
        *parents, last = path.split(".")
        for p in parents:
            doc = doc[p]
        del doc[last]
    return edit


def _tag(text: str, tmp_path: Path) -> str:
    tag = f'!!python/object/apply:os.system ["touch {tmp_path}/PWNED"]'
    return text.replace("name: gb200-nvl72", f"name: {tag}", 1)


BAD = [
    # id, file maker, loader, expected "<field>: <start of expected>"
    ("missing-field", _hw(_del("gpu.hbm_bandwidth")), "hw",
     "gpu.hbm_bandwidth: a value (the field is missing)"),
    ("unknown-field", _hw(_set("gpu.hbm_speed", {"value": "8 TB/s", "source": "x"})), "hw",
     "gpu.hbm_speed: a known field"),
    ("typo-suggested", _hw(_set("scale_up.bandwith", {"value": "1 TB/s", "source": "x"})), "hw",
     "scale_up.bandwith: a known field (did you mean 'bandwidth'?)"),
    ("wrong-dimension", _hw(_set("gpu.hbm_bandwidth.value", "4.8 TB")), "hw",
     "gpu.hbm_bandwidth.value: expected a bandwidth"),
    ("bare-number", _hw(_set("gpu.hbm_bandwidth.value", 8)), "hw",
     "gpu.hbm_bandwidth.value: expected a bandwidth such as '4.8 TB/s' or '400 Gb/s' with its unit"),
    ("zero", _hw(_set("gpu.hbm_capacity.value", "0 GB")), "hw",
     "gpu.hbm_capacity.value: expected a finite, positive value"),
    ("negative", _hw(_set("scale_out.bandwidth.value", "-400 Gb/s")), "hw",
     "scale_out.bandwidth.value: expected a finite, positive value"),
    ("zero-count", _hw(_set("scale_up.domain_size.value", 0)), "hw",
     "scale_up.domain_size.value: an integer >= 1"),
    ("domain-not-divisor", _hw(_set("scale_up.domain_size.value", 7)), "hw",
     "scale_up.domain_size: a size that divides system.gpus_per_system (72)"),  # 72 % 7 = 2
    ("host-not-divisor", _hw(_set("system.gpus_per_host.value", 5)), "hw",
     "system.gpus_per_host: a divisor of system.gpus_per_system (72), got 5"),
    ("negative-efficiency", _hw(_set("efficiency.compute.value", -0.6)), "hw",
     "efficiency.compute.value: a finite number > 0 and <= 1"),
    ("sm-count-fraction", _hw(_set("gpu.sm_count.value", 13.5)), "hw", "gpu.sm_count.value: an integer"),
    ("sm-count-zero", _hw(_set("gpu.sm_count.value", 0)), "hw", "gpu.sm_count.value: an integer >= 1"),
    ("wave-above-one", _hw(_set("stacks.trtllm.gemm_bf16.wave.value", 1.5)), "hw",
     "stacks.trtllm.gemm_bf16.wave.value: a finite number > 0 and <= 1, got 1.5"),
    ("no-direction", _hw(_del("scale_up.bandwidth.direction")), "hw",
     "scale_up.bandwidth.direction: per_direction or bidirectional"),
    ("bad-direction", _hw(_set("scale_up.bandwidth.direction", "both")), "hw",
     "scale_up.bandwidth.direction: per_direction or bidirectional, got 'both'"),
    ("no-source", _hw(_del("gpu.hbm_capacity.source")), "hw", "gpu.hbm_capacity.source: a value"),
    ("malformed-yaml", _text(lambda t, _: t + "\ngpu: [unclosed\n"), "hw", "yaml: valid YAML"),
    ("object-tag", _text(_tag), "hw", "yaml: valid YAML (could not determine a constructor"),
    ("model-missing-field", _model(_del("moe.routed_experts")), "model", "moe.routed_experts: a value"),
    ("model-kv-heads", _model(_set("attention.kv_heads", 5)), "model",
     "attention.kv_heads: a divisor of heads"),
    ("model-precision", _model(_set("precision.routed_experts", "fp6")), "model",
     "precision.routed_experts: expected one of bf16"),
    ("model-top-k", _model(_set("moe.experts_per_token", 9)), "model", "moe.experts_per_token: at most"),
    ("model-no-moe-block", _model(_del("moe")), "model",
     "dense_layers: equal to layers (32) in a dense model (one without a moe: block), got 0"),
    ("model-top-level-ffn", _model(_set("intermediate_size", 14336)), "model",
     "intermediate_size: no top-level value in a MoE model"),
]


@pytest.mark.parametrize(("make", "loader", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_spec_cli(make, loader, expected, tmp_path, capsys):
    path = make(tmp_path)
    rc, out, err = run_cli(capsys, "specs", "show", str(path))
    assert rc == 2 and out == ""
    assert err.startswith(f"error: {path}: {expected}"), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "PWNED").exists()  # the YAML tag constructed nothing


@pytest.mark.parametrize(("make", "loader", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_spec_api(make, loader, expected, tmp_path):
    path = make(tmp_path)
    load = load_hardware if loader == "hw" else load_model
    with pytest.raises(SpecError) as exc:
        load(str(path))
    assert isinstance(exc.value, ValueError)
    assert str(exc.value).startswith(f"{path}: {expected}")
    assert "\n" not in str(exc.value)


def test_unknown_name_cli(capsys):
    rc, out, err = run_cli(capsys, "specs", "show", "gb200-nvl7")
    assert rc == 2 and out == ""
    assert err.startswith("error: <input>: spec: ") and "did you mean gb200-nvl72" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(("load", "name", "close"), [
    (load_hardware, "hgx-h20O", "hgx-h200"),
    (load_hardware, "gb200-nvl7", "gb200-nvl72"),
    (load_model, "kimi-k2-thinkin", "kimi-k2-thinking"),
    (load_model, "deepseek-v4", "deepseek-v3"),
])
def test_unknown_name_api(load, name, close):
    with pytest.raises(SpecError, match=f"did you mean [^;]*{close}"):
        load(name)


def test_missing_file_cli(tmp_path, capsys):
    path = tmp_path / "nope.yaml"
    rc, _, err = run_cli(capsys, "specs", "show", str(path))
    assert rc == 2 and err == f"error: {path}: file: no such file\n"


@pytest.mark.parametrize(("name", "start"), [
    ("a" * 300, "error: <input>: spec: "), ("/tmp/" + "a" * 300, "error: /tmp/a"),
    ("/tmp/" + "a" * 300 + "/config.json", "error: /tmp/a")])
def test_name_too_long_cli(name, start, capsys):
    rc, _, err = run_cli(capsys, "specs", "show", name)
    assert rc == 2 and err.startswith(start) and err.count("\n") == 1, err


def test_not_a_spec(tmp_path, capsys):
    path = tmp_path / "other.yaml"
    path.write_text("colour: blue\n")
    rc, _, err = run_cli(capsys, "specs", "show", str(path))
    assert rc == 2 and err.startswith(f"error: {path}: document: a hardware spec")
