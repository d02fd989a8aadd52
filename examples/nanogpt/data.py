"""Token streams and batches. The whole stream sits on the device and each
batch is a gather of random windows, so that loading costs no host work.
The windows come from a CPU generator seeded by the run, so that every
variant and every rank of a run sees the same global batches: rank r of W
takes rows [r B/W, (r+1) B/W) of each."""

import json
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO / "build" / "nanogpt"


def load_meta(folder):
    path = Path(folder) / "meta.json"
    if not path.exists():
        raise SystemExit(f"{path} not found: run examples/nanogpt/prepare.py first")
    return json.loads(path.read_text(encoding="utf-8"))


def load_split(folder, split, device):
    ids = np.fromfile(Path(folder) / f"{split}.bin", dtype="<u2").astype(np.int64)
    return torch.from_numpy(ids).to(device)


def random_stream(vocab_size, length, seed, device):
    """Uniform random tokens: for speed measurements, where the data does not matter."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(vocab_size, (length,), generator=g).to(device)


class Batches:
    """Batches of `batch` windows of `block` tokens (inputs and next-token
    targets) from `stream`, the global batch drawn by `seed` and this rank's
    rows kept."""

    def __init__(self, stream, batch, block, seed, rank=0, world=1):
        if batch % world:
            raise SystemExit(f"the batch ({batch}) must split evenly over {world} processes")
        if stream.numel() <= block + 1:
            raise SystemExit(f"the token stream ({stream.numel()}) is shorter than a window ({block + 1})")
        self.stream, self.batch, self.block = stream, batch, block
        self.rows = slice(rank * batch // world, (rank + 1) * batch // world)
        self.offsets = torch.arange(block + 1, device=stream.device)
        self.seed = seed
        self.reset()

    # Window starts are drawn this many batches at a time: a copy to the
    # device waits for the work queued before it, once per chunk.
    CHUNK = 256

    def reset(self):
        self.gen = torch.Generator().manual_seed(self.seed)
        self.starts, self.used = None, self.CHUNK

    def next(self):
        if self.used == self.CHUNK:
            starts = torch.randint(self.stream.numel() - self.block - 1, (self.CHUNK, self.batch), generator=self.gen)
            self.starts, self.used = starts[:, self.rows].to(self.stream.device), 0
        windows = self.stream[self.starts[self.used][:, None] + self.offsets]
        self.used += 1
        return windows[:, :-1], windows[:, 1:]
