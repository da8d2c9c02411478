"""Whole instances into scale-up domains into purchasable units: pure arithmetic, checkable
by hand.

* :func:`plan_pools`: GPUs per pool rounded up to whole instances (a decode instance of ``gpus``
  GPUs, prefill instances of ``prefill_gpus``), instances packed into NVLink domains (an
  instance no larger than a domain never straddles two), domains into purchasable units
  (72-GPU racks, 8-GPU nodes);
* :func:`max_load`: the largest load a fixed number of units serves at one configuration.
"""


from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from planner.errors import SpecError

#: The largest fleet sized: a billion GPUs, far beyond any built.  A demand that needs more is
#: refused (its counts would also leave the range where floats count GPUs exactly).
MAX_FLEET_GPUS = 1e9


# ---- pure deployment arithmetic ----------------------------------------------------------------
def _ceil(v: float) -> int:
    """Ceiling that ignores float noise (25.000000000004 -> 25); any positive amount, however
    small (a trickle of demand: 1e-12 of an instance), takes at least one whole one."""
    n = int(math.ceil(round(float(v), 9)))
    return max(n, 1) if v > 0 else n


def pack_bins(instances: Sequence[tuple[int, int]], bin_size: int) -> int:
    """Bins (scale-up domains) needed for ``instances`` = [(instance GPUs, count), ...].

    An instance no larger than a bin sits inside one bin; a larger one takes whole bins and
    leaves the rest of its last bin to smaller instances.  Largest first, best fit into partly
    used bins, then new bins.
    """
    free: Counter[int] = Counter()  # free GPUs -> bins with that much free
    bins = 0
    for size, count in sorted(((int(s), int(n)) for s, n in instances if n > 0), reverse=True):
        if size < 1:
            raise ValueError(f"instance size must be >= 1, got {size}")
        n = count
        if size > bin_size:
            m = _ceil(size / bin_size)
            bins += n * m
            if m * bin_size - size:
                free[m * bin_size - size] += n
            continue
        for f in sorted(free):
            if n == 0:
                break
            k = f // size
            if k == 0:
                continue
            c = free.pop(f)
            full = min(c, n // k)
            n -= full * k
            if full and f - k * size:
                free[f - k * size] += full
            rest = c - full
            if rest and n:  # here n < k: one bin takes the remainder
                if f - n * size:
                    free[f - n * size] += 1
                rest -= 1
                n = 0
            if rest:
                free[f] += rest
        if n:
            k = bin_size // size
            full, r = divmod(n, k)
            bins += full + (1 if r else 0)
            if full and bin_size - k * size:
                free[bin_size - k * size] += full
            if r:
                free[bin_size - r * size] += 1
    return bins


def units_for(decode_instances: int, decode_instance_gpus: int, prefill_instances: int,
              prefill_instance_gpus: int | None, *, gpus_per_unit: int, domain_size: int) -> int:
    """Purchasable units holding the instances (packed into NVLink domains, domains into units)."""
    bin_size = min(int(domain_size), int(gpus_per_unit))
    items = [(decode_instance_gpus, decode_instances)]
    if prefill_instance_gpus:
        items.append((prefill_instance_gpus, prefill_instances))
    bins = pack_bins(items, bin_size)
    return _ceil(bins * bin_size / gpus_per_unit)


def plan_pools(demand_tps: float, *, decode_tps_per_gpu: float, decode_instance_gpus: int,
               prefill_tps_per_gpu: float | None = None, prefill_instance_gpus: int | None = None,
               isl: float = 1024, osl: float = 1024, gpus_per_unit: int, domain_size: int
               ) -> dict[str, float]:
    """Pools for ``demand_tps`` output tokens/s: the decode pool serves the output at
    ``decode_tps_per_gpu`` per GPU; the prefill pool (disaggregated only) the ``isl/osl`` prompt
    tokens per output token at ``prefill_tps_per_gpu``.  Each pool is rounded up to whole
    instances, then the instances to units."""
    dec_need = demand_tps / decode_tps_per_gpu
    pre_need, n_p = 0.0, 0
    if prefill_tps_per_gpu is not None:
        pre_need = demand_tps * (isl / osl) / prefill_tps_per_gpu
    if not dec_need + pre_need <= MAX_FLEET_GPUS:
        raise SpecError("<input>", "demand", f"a load a fleet of at most {MAX_FLEET_GPUS:.0e} GPUs serves: "
                        f"{demand_tps:.4g} output tokens/s needs {dec_need + pre_need:.3g} GPUs")
    n_d = _ceil(dec_need / decode_instance_gpus)
    if prefill_tps_per_gpu is not None:
        n_p = _ceil(pre_need / prefill_instance_gpus)
    g_p = int(prefill_instance_gpus or 0)
    units = units_for(n_d, decode_instance_gpus, n_p, g_p or None, gpus_per_unit=gpus_per_unit,
                      domain_size=domain_size)
    return dict(gpus_needed=dec_need + pre_need, decode_instances=n_d,
                decode_gpus=n_d * decode_instance_gpus, prefill_instances=n_p,
                prefill_gpus=n_p * g_p, gpus_used=n_d * decode_instance_gpus + n_p * g_p,
                units=units, gpus=units * gpus_per_unit)


def max_load(units: int, *, decode_tps_per_gpu: float, decode_instance_gpus: int,
             prefill_tps_per_gpu: float | None = None, prefill_instance_gpus: int | None = None,
             isl: float = 1024, osl: float = 1024, gpus_per_unit: int, domain_size: int) -> float:
    """The largest output tokens/s ``units`` purchasable units serve at this configuration (whole
    instances only; 0 when not even one set of instances fits)."""
    a = decode_tps_per_gpu * decode_instance_gpus           # output tokens/s per decode instance
    b = (prefill_tps_per_gpu * prefill_instance_gpus * osl / isl  # ... per prefill instance
         if prefill_tps_per_gpu is not None else math.inf)
    kw = dict(gpus_per_unit=gpus_per_unit, domain_size=domain_size)
    g_p = prefill_instance_gpus if prefill_tps_per_gpu is not None else None

    def fits(load: float) -> bool:
        n_p = _ceil(load / b) if math.isfinite(b) else 0
        return units_for(_ceil(load / a), decode_instance_gpus, n_p, g_p, **kw) <= units

    # per GPU, prefill included: no load above (all GPUs bought) x y fits
    y = 1.0 / (1.0 / decode_tps_per_gpu + (isl / osl / prefill_tps_per_gpu
                                           if prefill_tps_per_gpu is not None else 0.0))
    lo, hi = min(a, b), units * gpus_per_unit * y * (1 + 1e-9) + 1.0
    if not fits(lo):  # one instance of each pool does not fit
        return 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if fits(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    # snap to the breakpoint the whole instances give
    n_d = _ceil(lo / a)
    cap = n_d * a
    if math.isfinite(b):
        cap = min(cap, _ceil(lo / b) * b)
    return float(cap)
