#!/usr/bin/env python3
"""Starts N copies of a command with the environment torchrun gives its
workers (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): Debian
12's torchrun (torch 1.13 on Python 3.11) fails before it starts any.

    launch.py N COMMAND...
"""

import os
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    n, cmd = int(sys.argv[1]), sys.argv[2:]
    port = str(free_port())
    procs = []
    for rank in range(n):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait() for p in procs]
    if any(codes):
        sys.exit(f"launch.py: exit codes {codes}")


if __name__ == "__main__":
    main()
