"""Times every kernel that one call of a workload launches, ours and its
peers', with Nsight Compute (gpu__time_duration of each launch), so that a
workload of several kernels (the attention backward) shows where its time
goes. Each candidate is called three times; the last call's kernels are
printed with their share of the call (for the peers, every launch).

    python3 tools/gpu/kernel_times.py WORKLOAD SIZE_JSON FILE.cu... [--peers] [--metrics M1,M2,...]

With --metrics, each launch also shows those Nsight Compute metrics (e.g.
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum, sm__inst_executed.sum), to
compare how our kernels and the peers' use the machine.

e.g. python3 tools/gpu/kernel_times.py attn_bwd '{"B":4,"H":16,"N":4096,"D":128,"causal":0}' \\
         build/gpu/attention_bwd.sm_90a.cu --peers
"""
import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def launches(candidate, workload, size, extra=()):
    """(kernel name, microseconds, {metric: value}) of every launch of three
    calls, in order."""
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    cmd = [ncu, "--csv", "--metrics", ",".join(("gpu__time_duration.sum",) + tuple(extra)),
           "--kernel-name", "regex:^(?!.*(Memset|fill)).*$",
           sys.executable, str(HERE / "profile_one.py"), candidate, workload, size]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"ncu failed ({run.returncode}): {run.stderr.strip()[-600:]}")
    # ncu prints the program's own output first; the CSV starts at its header.
    text = run.stdout[run.stdout.find('"ID"'):]
    # One row per (launch, metric); a launch's rows share its ID.
    by_launch = {}
    for row in csv.DictReader(io.StringIO(text)):
        launch = by_launch.setdefault(row["ID"], [row["Kernel Name"], None, {}])
        value = row["Metric Value"]
        if row.get("Metric Name") == "gpu__time_duration.sum":
            unit = row.get("Metric Unit", "nsecond")
            scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit, 1e-3)
            launch[1] = float(value.replace(",", "")) * scale
        else:
            launch[2][row["Metric Name"]] = value
    return [tuple(launch) for launch in by_launch.values() if launch[1] is not None]


def last_call(rows):
    """The launches of the third call: the kernels repeat with period len/3."""
    if len(rows) % 3:
        return rows
    return rows[2 * len(rows) // 3:]


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    extra = ()
    if "--metrics" in args:
        at = args.index("--metrics")
        extra = tuple(m for m in args[at + 1].split(",") if m)
        del args[at:at + 2]
    workload, size, candidates = args[0], args[1], args[2:]
    status = 0
    for candidate in candidates:
        name = "peers" if candidate == "--peers" else os.path.basename(candidate)
        try:
            rows = launches(candidate, workload, size, extra)
            # Peers run one after the other (and build their graphs first): all of it.
            rows = rows if candidate == "--peers" else last_call(rows)
        except RuntimeError as err:
            print(f"== {name}: {err}")
            status = 1
            continue
        total = sum(us for _, us, _ in rows)
        print(f"== {name}: {len(rows)} kernels, {total:.1f} us")
        for kernel, us, metrics in rows:
            short = kernel.split("(")[0][:90]
            print(f"  {us:10.1f} us {100 * us / total:5.1f}%  {short}")
            for metric in extra:
                print(f"  {'':>22}{metrics.get(metric, '-'):>16}  {metric}")
    return status


if __name__ == "__main__":
    sys.exit(main())
