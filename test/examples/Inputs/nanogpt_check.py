#!/usr/bin/env python3
"""Checks of examples/nanogpt's outputs for test/examples/nanogpt.test.

    nanogpt_check.py prepared DATA_DIR         the token files decode to corpus.txt
    nanogpt_check.py decreases LOG.json DROP   the loss fell by at least DROP nats
    nanogpt_check.py same LOG1 LOG2 TOL        equal per-step and validation losses, within TOL
    nanogpt_check.py close COMPARE.json TOL    compare.py's final validation losses within a factor 1 +- TOL
    nanogpt_check.py called CALLS.json OP...   the stand-in tkc.ops ran each OP
"""

import json
import sys
from array import array
from pathlib import Path


def tokens(path):
    a = array("H")
    a.frombytes(Path(path).read_bytes())
    if sys.byteorder != "little":
        a.byteswap()
    return a


def prepared(folder):
    folder = Path(folder)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    text = (folder / "corpus.txt").read_text(encoding="utf-8")
    train, val = tokens(folder / "train.bin"), tokens(folder / "val.bin")
    decoded = "".join(meta["chars"][i] for i in list(train) + list(val))
    assert decoded == text, "the token files do not decode to corpus.txt"
    assert meta["chars"] == sorted(set(text)), "the vocabulary is not the text's characters"
    assert len(val) == len(text) - int(len(text) * 0.9), (len(val), len(text))
    print(f"prepared: {len(text)} characters round-trip, vocabulary {len(meta['chars'])}, val {len(val)}")


def decreases(log_path, drop):
    log = json.loads(Path(log_path).read_text())
    losses = [s["loss"] for s in log["steps"]]
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    val = log["final_val_loss"]
    print(f"loss: first 5 steps {first:.3f}, last 5 {last:.3f}, val {val:.3f}")
    assert first - last >= float(drop) and first - val >= float(drop), "the loss did not fall enough"
    print("decreases: ok")


def same(a_path, b_path, tol):
    a, b = (json.loads(Path(p).read_text()) for p in (a_path, b_path))
    pairs = [(x["loss"], y["loss"]) for x, y in zip(a["steps"], b["steps"])]
    pairs += [(x["val_loss"], y["val_loss"]) for x, y in zip(a["evals"], b["evals"])]
    assert len(a["steps"]) == len(b["steps"]) and len(pairs) > len(a["steps"]), "logs of different lengths"
    worst = max(abs(x - y) for x, y in pairs)
    print(f"worlds {a['world']} and {b['world']}: {len(pairs)} losses, largest difference {worst:.2e}")
    assert a["world"] != b["world"], "both runs used the same number of processes"
    # Each rank had rows of its own: different losses, whose mean is the loss of the whole batch.
    for log in (a, b):
        ranks = log["first_step_rank_losses"]
        assert len(ranks) == log["world"] and len(set(ranks)) == len(ranks), f"rank losses {ranks}"
        assert abs(sum(ranks) / len(ranks) - log["steps"][0]["loss"]) <= float(tol)
    print(f"first step, per rank: {a['first_step_rank_losses']} and {b['first_step_rank_losses']}")
    assert worst <= float(tol), f"losses differ by {worst} > {tol}"
    print("same: ok")


def close(path, tol):
    summary = json.loads(Path(path).read_text())
    (key, ratio), = summary["ratio"].items()
    print(f"val loss ratio {key} {ratio:.4f}")
    assert abs(ratio - 1) <= float(tol), f"{ratio} is not within {tol} of 1"
    print("close: ok")


def called(path, *ops):
    calls = json.loads(Path(path).read_text())
    print("calls: " + ", ".join(f"{op} {calls.get(op, 0)}" for op in ops))
    assert all(calls.get(op, 0) > 0 for op in ops), "an operator was not used"
    print("called: ok")


if __name__ == "__main__":
    {"prepared": prepared, "decreases": decreases, "same": same, "close": close, "called": called}[sys.argv[1]](*sys.argv[2:])
