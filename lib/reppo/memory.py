"""Memory accounting: what an on-policy method stores against a replay buffer, and measured peak memory.

* Stored transitions and bytes are read off the tensors each algorithm really holds: REPPO's and PPO's rollout
  (``n_envs × n_steps`` transitions, with everything computed for them) and SAC's preallocated replay buffer.
* Peak memory (full mode) is measured by training each algorithm in a fresh ``spawn`` subprocess: the increase of
  the process's peak resident set size (``VmHWM``, reset before training through ``/proc/self/clear_refs``) over its
  resident size after imports. ``ru_maxrss`` would not do: Linux carries it over from the forking parent.
"""
from __future__ import annotations

import multiprocessing as mp
from typing import Optional

import pandas as pd


def _status_mb(key: str) -> float:
    """A memory line of /proc/self/status ("VmRSS", "VmHWM") in MiB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _child(algo: str, kwargs: dict, queue) -> None:  # runs in the subprocess
    try:
        import torch  # noqa: F401

        from . import ppo, reppo, sac

        trainers = {"REPPO": (reppo.train_reppo, reppo.ReppoHP), "PPO": (ppo.train_ppo, ppo.PpoHP),
                    "SAC (replay)": (sac.train_sac, sac.SacHP)}
        fn, hp_cls = trainers[algo]
        kwargs = dict(kwargs)
        kwargs["hp"] = hp_cls(**kwargs.get("hp", {}))
        reset = _reset_peak()
        base = _status_mb("VmRSS")
        res = fn(**kwargs)
        peak = _status_mb("VmHWM")
        queue.put(dict(algo=algo, baseline_mb=base, peak_mb=peak, increase_mb=peak - base, peak_reset=reset,
                       storage_bytes=res.storage_bytes, stored_transitions=res.stored_transitions, error=None))
    except Exception as exc:  # report, do not hang the parent
        queue.put(dict(algo=algo, error=repr(exc)))


def peak_memory(algo: str, timeout_s: float = 1800.0, **kwargs) -> dict:
    """Train ``algo`` ("REPPO", "PPO", "SAC (replay)") in a fresh process; returns its memory record."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(algo, kwargs, queue))
    proc.start()
    try:
        out = queue.get(timeout=timeout_s)
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.terminate()
    if out.get("error"):
        raise RuntimeError(f"peak-memory run of {algo} failed: {out['error']}")
    return out


def storage_table(runs: dict, sac_buffer=None) -> pd.DataFrame:
    """One row per method: transitions stored and the bytes of the tensors holding them.

    ``runs`` maps a method name to a RunResult; ``sac_buffer`` is a ReplayBuffer (allocated, not trained).
    """
    rows = [dict(method=name, stored_transitions=r.stored_transitions, storage_bytes=r.storage_bytes,
                 bytes_per_transition=r.storage_bytes / max(r.stored_transitions, 1)) for name, r in runs.items()]
    if sac_buffer is not None:
        rows.append(dict(method="SAC (replay)", stored_transitions=sac_buffer.capacity,
                         storage_bytes=sac_buffer.nbytes, bytes_per_transition=sac_buffer.nbytes / sac_buffer.capacity))
    return pd.DataFrame(rows).set_index("method")


def paper_scale_storage(obs_dim: int, act_dim: int, emb_dim: int = 512, n_envs: int = 1024, n_steps: int = 128,
                        replay: int = 1_000_000, dtype_bytes: int = 4) -> pd.DataFrame:
    """The same accounting at the paper's scale (REPPO: 1024 envs × 128 steps, embeddings of 512; a replay buffer of
    10^6 transitions), from the per-transition layout our code stores. Arithmetic, not a measurement."""
    reppo_per = obs_dim + act_dim + emb_dim + 7  # obs, act, next_emb, rew, soft_rew, next_q, term, trunc, target
    replay_per = 2 * obs_dim + act_dim + 2
    return pd.DataFrame([
        dict(method="REPPO (paper scale)", stored_transitions=n_envs * n_steps,
             storage_bytes=n_envs * n_steps * reppo_per * dtype_bytes),
        dict(method="replay buffer (paper scale)", stored_transitions=replay,
             storage_bytes=replay * replay_per * dtype_bytes),
    ]).set_index("method")


def memory_records(records: Optional[list]) -> pd.DataFrame:
    return pd.DataFrame(records or []).set_index("algo") if records else pd.DataFrame()
