"""Loss curves: always a CSV, and a PNG where matplotlib is installed."""

import csv


def write_csv(path, runs):
    """runs: {label: log}; one row per logged step and evaluation."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "step", "train_loss", "val_loss"])
        for label, log in runs.items():
            for s in log["steps"]:
                w.writerow([label, s["step"], s["loss"], ""])
            for e in log["evals"]:
                w.writerow([label, e["step"], "", e["val_loss"]])


def write_png(path, runs, title):
    """Returns False (and writes nothing) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (label, log) in enumerate(runs.items()):
        color = f"C{i}"
        ax.plot([s["step"] for s in log["steps"]], [s["loss"] for s in log["steps"]], color=color, alpha=0.45,
                linewidth=0.8, label=f"{label} train")
        ax.plot([e["step"] for e in log["evals"]], [e["val_loss"] for e in log["evals"]], color=color, marker="o",
                label=f"{label} val")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_curves(out_dir, stem, runs, title):
    """Writes STEM.csv and, with matplotlib, STEM.png; returns the files written."""
    files = [out_dir / f"{stem}.csv"]
    write_csv(files[0], runs)
    if write_png(out_dir / f"{stem}.png", runs, title):
        files.append(out_dir / f"{stem}.png")
    return files
