"""The launcher: starts --nproc-per-node copies of a script with torchrun's environment.

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 5

Each process gets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
GROUP_RANK and, unless already set, OMP_NUM_THREADS=1 (as torchrun: N processes should not each
use every core). Several machines: run it on each with the same --nnodes, --master-addr (rank 0's
machine, reachable from the others) and --master-port, and each machine's own --node-rank.
--standalone picks a free port on this machine for a single-node run.

When a process fails, the others are stopped and the launcher exits with that process's code.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Starts a script once per process, with torchrun's environment variables.",
    )
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="processes on this machine (1)")
    p.add_argument("--nnodes", type=int, default=1, help="machines taking part (1)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0,
                   help="this machine's number, 0..nnodes-1 (0)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="the address of node 0, where rank 0 serves the store (127.0.0.1)")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="the store's TCP port on node 0 (29500)")
    p.add_argument("--standalone", action="store_true",
                   help="one machine: use 127.0.0.1 and a free port")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script argument as a module (python -m)")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def free_port():
    """A TCP port free on this machine now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check(args, parser):
    if args.nproc_per_node < 1:
        parser.error(f"--nproc-per-node is {args.nproc_per_node}; it must be at least 1")
    if args.nnodes < 1:
        parser.error(f"--nnodes is {args.nnodes}; it must be at least 1")
    if not 0 <= args.node_rank < args.nnodes:
        parser.error(f"--node-rank is {args.node_rank}; with --nnodes {args.nnodes} it must be "
                     f"0..{args.nnodes - 1}")
    if not 0 < args.master_port < 65536:
        parser.error(f"--master-port is {args.master_port}; it must be 1..65535")


def environments(args):
    """The environment of each local process."""
    world = args.nnodes * args.nproc_per_node
    for local in range(args.nproc_per_node):
        env = dict(os.environ)
        env.update(
            MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port),
            RANK=str(args.node_rank * args.nproc_per_node + local), WORLD_SIZE=str(world),
            LOCAL_RANK=str(local), LOCAL_WORLD_SIZE=str(args.nproc_per_node),
            GROUP_RANK=str(args.node_rank),
        )
        if args.nproc_per_node > 1:
            env.setdefault("OMP_NUM_THREADS", "1")
        yield env


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    _check(args, parser)
    if args.standalone:
        args.master_addr, args.master_port = "127.0.0.1", free_port()
    command = [sys.executable] + (["-m"] if args.module else []) + [args.script]
    command += args.script_args
    procs = {}  # local rank -> process
    for local, env in enumerate(environments(args)):
        procs[local] = subprocess.Popen(command, env=env)
    code = 0
    try:
        while procs:
            for local, p in list(procs.items()):
                rc = p.poll()
                if rc is None:
                    continue
                del procs[local]
                if rc != 0:
                    code = rc
                    print(f"ember.distributed.run: local rank {local} exited with code {rc}; "
                          "stopping the others", file=sys.stderr)
                    for other in procs.values():
                        other.send_signal(signal.SIGTERM)
                    _reap(list(procs.values()))
                    procs = {}
                    break
            time.sleep(0.05)
    except KeyboardInterrupt:
        for p in procs.values():
            p.send_signal(signal.SIGINT)
        _reap(list(procs.values()))
        code = 130
    return code


def _reap(procs, grace=5.0):
    """Waits for the processes, killing those still there after grace seconds."""
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
