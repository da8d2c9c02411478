"""Properties the step model must have whatever the configuration (hypothesis, fixed seed).

Each example evaluates a whole batch sweep in one grid call, so the file stays fast.  The
monotonicity in batch holds in this model for a reason worth stating: every term of the step is
a sum / max of pieces g(b) with g(b) / b non-increasing (constants, linear terms, alpha + beta b,
and the concave expected-distinct-experts count), so step(b) / b never rises and step(b) never
falls, with or without two-micro-batch overlap.  The one exception is KV spilling to host
memory (--kv-offload), where the marginal sequences are read over the slow link: per-GPU
throughput then can fall with batch; that regime is excluded here and tested on its own.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.physics.step import Speculation, default_slots, evaluate_configs, resolve_precisions
from planner.specs.registry import load_hardware, load_model

SETTINGS = settings(max_examples=25, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
MODELS = ("kimi-k2-thinking", "deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b")
HARDWARE = ("hgx-h200", "gb200-nvl72")
N_BATCH = 24


@st.composite
def configs(draw):
    model = load_model(draw(st.sampled_from(MODELS)))
    hw = load_hardware(draw(st.sampled_from(HARDWARE)))
    gpus = draw(st.sampled_from([g for g in (1, 2, 4, 8, 16, 32, 72) if g <= hw.gpus_per_system * 2]))
    tp_opts = [t for t in (1, 2, 4, 8) if gpus % t == 0 and model.h % t == 0 and t <= hw.domain_size
               and (model.attention != "gqa" or model.h_kv % t == 0 or t % model.h_kv == 0)]
    tp_a = draw(st.sampled_from(tp_opts))
    tp_e = draw(st.sampled_from([t for t in (1, 2) if gpus % t == 0 and model.f_e % t == 0]))
    ep = gpus // tp_e
    return dict(
        model=model, hw=hw, G=float(gpus), TP_a=float(tp_a), EP=float(ep), TP_e=float(tp_e),
        E_slots=float(default_slots(model, ep)),
        S=draw(st.sampled_from([256.0, 2048.0, 8192.0, 32768.0])),
        overlap=draw(st.integers(0, 1)),
        drafts=draw(st.integers(0, 2)),
        mode=draw(st.sampled_from(["bound", "realistic"])),
    )


def _run(c, b=None, hw=None, mode=None, kv_offload=0):
    model, hw = c["model"], hw or c["hw"]
    mode = mode or c["mode"]
    prec = resolve_precisions(model, hw)
    spec = Speculation(c["drafts"], acceptance_rate=0.7) if c["drafts"] else Speculation()
    kw = {k: c[k] for k in ("G", "TP_a", "EP", "TP_e", "E_slots", "S", "overlap")}
    if b is None:
        probe = evaluate_configs(model, hw, prec, mode, b=1.0, spec=spec, kv_offload=kv_offload, **kw)
        b_max = float(probe["memory.b_max"])
        b_min = c["TP_a"] / c["G"]  # one sequence in the instance
        b = np.geomspace(b_min, max(b_max, b_min * 1.01), N_BATCH)
    return b, evaluate_configs(model, hw, prec, mode, b=b, spec=spec, kv_offload=kv_offload, **kw)


def _nonincreasing(x, rel=1e-12):
    return bool(np.all(np.diff(x) <= rel * np.abs(x[:-1])))


@SETTINGS
@given(configs())
def test_per_user_rate_never_rises_with_batch(c):
    _, out = _run(c)
    assert _nonincreasing(out["tps_user"])
    assert _nonincreasing(-out["step"])  # the step never shortens


@SETTINGS
@given(configs())
def test_per_gpu_rate_never_falls_with_batch_while_memory_fits(c):
    b, out = _run(c)
    fits = np.asarray(b <= out["memory.b_max"] * (1 + 1e-9))
    assert _nonincreasing(-out["tps_gpu"][fits])


@SETTINGS
@given(configs(), st.sampled_from(["hbm_bandwidth", "su_bandwidth", "so_bandwidth", "flops"]),
       st.floats(1.01, 4.0))
def test_more_bandwidth_or_flops_never_lengthens_a_step(c, field, factor):
    hw = c["hw"]
    if field == "flops":
        faster = hw.replace(flops={k: v * factor for k, v in hw.flops.items()})
    else:
        faster = hw.replace(**{field: getattr(hw, field) * factor})
    b, base = _run(c)
    _, fast = _run(c, b=b, hw=faster)
    assert np.all(fast["step"] <= base["step"] * (1 + 1e-12))


@SETTINGS
@given(configs())
def test_bound_is_never_slower_than_realistic(c):
    b, bound = _run(c, mode="bound")
    _, real = _run(c, b=b, mode="realistic")
    assert np.all(bound["step"] <= real["step"] * (1 + 1e-12))
    assert np.all(bound["tps_user"] >= real["tps_user"] * (1 - 1e-12))
    assert np.all(bound["memory.b_max"] >= real["memory.b_max"] * (1 - 1e-12))


def test_kv_spill_can_lower_per_gpu_throughput():
    """With the KV cache spilling to Grace memory, each sequence beyond what HBM holds is read at
    the C2C link's speed and the whole batch waits for it: tokens/s per GPU peaks and then falls.
    A real effect of the two-tier model (not a bug): the search should not push batch that far."""
    c = dict(model=load_model("kimi-k2-thinking"), hw=load_hardware("gb200-nvl72"), G=8.0, TP_a=1.0,
             EP=8.0, TP_e=1.0, E_slots=384.0, S=65536.0, overlap=0, drafts=0, mode="bound")
    prec = resolve_precisions(c["model"], c["hw"])
    kw = {k: c[k] for k in ("G", "TP_a", "EP", "TP_e", "E_slots", "S", "overlap")}
    probe = evaluate_configs(c["model"], c["hw"], prec, "bound", b=1.0, kv_offload=1, **kw)
    b = np.geomspace(1.0, float(probe["memory.b_max"]), 64)
    out = evaluate_configs(c["model"], c["hw"], prec, "bound", b=b, kv_offload=1, **kw)
    spill = out["memory.host_fraction"] > 0
    assert spill.any() and (~spill).any()
    tps = out["tps_gpu"]
    assert tps.max() > tps[-1] * 1.05  # it falls once most of the cache is in host memory
    assert _nonincreasing(-tps[~spill])  # but never while the cache fits in HBM
