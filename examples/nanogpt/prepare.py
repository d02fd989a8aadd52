#!/usr/bin/env python3
"""Builds the character-level corpus for the `char` preset, offline once the
text is here.

By default the text is the fortune-cookie files of Debian's `fortunes`
package (about 2.5 MB of plain text; the program is under the BSD licence,
see /usr/share/doc/fortunes/copyright inside the package): `apt-get
download fortunes`, unpacked with dpkg-deb. `--text FILE...` takes any
plain-text files instead, and `--deb FILE` a .deb already downloaded.

Writes into --out (default build/nanogpt):
  corpus.txt             the text, fortunes separated by blank lines
  meta.json              the vocabulary (the sorted characters) and sizes
  train.bin, val.bin     token ids, little-endian uint16; the last 10% is val

    python3 examples/nanogpt/prepare.py [--text FILE ... | --deb FILE] [--out DIR]
"""

import argparse
import array
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORTUNE_DIR = "usr/share/games/fortunes"


def fortune_texts(root):
    """The plain-text fortune files under an unpacked package (not the
    strfile indexes *.dat, nor the *.u8 links)."""
    folder = Path(root) / FORTUNE_DIR
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink() and p.suffix not in (".dat", ".u8"))
    if not files:
        raise SystemExit(f"prepare.py: no fortune files in {folder}")
    return files


def unpack_deb(deb, into):
    subprocess.run(["dpkg-deb", "-x", str(deb), str(into)], check=True)
    return fortune_texts(into)


def download_fortunes(into):
    subprocess.run(["apt-get", "download", "fortunes"], cwd=into, check=True, stdout=subprocess.DEVNULL)
    debs = sorted(Path(into).glob("fortunes_*.deb"))
    if not debs:
        raise SystemExit("prepare.py: apt-get download fortunes gave no .deb")
    return unpack_deb(debs[0], Path(into) / "root")


def read_text(files):
    parts = []
    for f in files:
        text = f.read_bytes().decode("utf-8", errors="replace")
        # A line holding only '%' ends a fortune: a blank line reads better.
        lines = ["" if line == "%" else line for line in text.splitlines()]
        parts.append("\n".join(lines).strip("\n") + "\n")
    return "\n".join(parts)


def write_tokens(path, ids):
    a = array.array("H", ids)
    if sys.byteorder != "little":
        a.byteswap()
    path.write_bytes(a.tobytes())


def prepare(text, out, val_fraction=0.1):
    out.mkdir(parents=True, exist_ok=True)
    chars = sorted(set(text))
    if len(chars) > 65535:
        raise SystemExit("prepare.py: more characters than uint16 ids")
    index = {c: i for i, c in enumerate(chars)}
    ids = [index[c] for c in text]
    split = int(len(ids) * (1 - val_fraction))
    (out / "corpus.txt").write_text(text, encoding="utf-8")
    write_tokens(out / "train.bin", ids[:split])
    write_tokens(out / "val.bin", ids[split:])
    meta = {"chars": chars, "vocab_size": len(chars), "train_tokens": split, "val_tokens": len(ids) - split}
    (out / "meta.json").write_text(json.dumps(meta, ensure_ascii=False))
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--text", nargs="+", type=Path, help="plain-text files to use instead of the fortunes")
    ap.add_argument("--deb", type=Path, help="a fortunes .deb already downloaded")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "nanogpt")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.text:
            files = args.text
        elif args.deb:
            files = unpack_deb(args.deb, tmp)
        else:
            files = download_fortunes(tmp)
        text = read_text(files)
    meta = prepare(text, args.out)
    print(f"{len(text)} characters, vocabulary {meta['vocab_size']}, "
          f"train {meta['train_tokens']} val {meta['val_tokens']} tokens -> {args.out}")


if __name__ == "__main__":
    main()
