"""What a run was measured on and with: the columns every row of a run shares."""

import datetime
import os
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def describe(device: str, torch, threads: int | None) -> dict:
    """The run's shared columns. torch is the module, or None when it is not installed."""
    import numpy

    gpu = driver = ""
    if device == "cuda" and torch is not None and torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(0)
        versions = command_output(["nvidia-smi", "--query-gpu=driver_version",
                                   "--format=csv,noheader"]).split()
        driver = versions[0] if versions else ""
    return {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "core_version": (REPO / "core-runtime" / "VERSION").read_text().strip(),
        "numpy_version": numpy.__version__,
        "torch_version": torch.__version__ if torch is not None else "",
        "cpu": cpu_model(),
        "cores": str(os.cpu_count()),
        "threads": str(threads or ""),
        "settings": torch_settings(device, torch),
        "gpu": gpu,
        "driver": driver,
        "device": device,
    }


def torch_settings(device: str, torch) -> str:
    """The PyTorch settings its figures depend on, as harness.references left them: on CUDA TF32
    and cuDNN's algorithm search, on the CPU its thread count; '' without torch."""
    if torch is None:
        return ""
    if device == "cpu":
        return f"torch.threads={torch.get_num_threads()}"
    cuda, cudnn = torch.backends.cuda, torch.backends.cudnn
    flags = {"matmul.tf32": cuda.matmul.allow_tf32, "cudnn.tf32": cudnn.allow_tf32,
             "cudnn.benchmark": cudnn.benchmark}
    return " ".join(f"{name}={'on' if on else 'off'}" for name, on in flags.items())


def git_commit() -> str:
    commit = command_output(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"]).strip()
    dirty = command_output(["git", "-C", str(REPO), "status", "--porcelain",
                            "--untracked-files=no"]).strip()
    return (commit or "unknown") + ("-dirty" if dirty else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def command_output(argv: list[str]) -> str:
    """A command's stdout, or '' when it is missing or fails (nvidia-smi on a CPU machine)."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""


def slug(info: dict) -> str:
    """A file-name-safe machine name: the GPU's on a CUDA run, else the CPU's and its cores."""
    name = info["gpu"] or f"{info['cpu']} {info['cores']}c"
    for noise in ("(R)", "(TM)", "Processor", "CPU"):
        name = name.replace(noise, "")
    return "-".join(name.lower().replace("@", " ").split())
