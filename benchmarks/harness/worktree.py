"""The base side of the gate: another commit of this repository, checked out beside it in a git
worktree, so that it can be built and measured in the same run as the code under test."""

import shutil
import subprocess
from pathlib import Path

from harness.schema import read_csv


class WorktreeError(RuntimeError):
    """The base commit cannot be found or checked out; the message says what to do."""


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=check)


def baseline_commit(baseline: Path) -> str:
    """The commit the committed baseline was measured at (its rows' commit column, without the
    '-dirty' mark: a baseline is taken from a clean tree)."""
    commits = {r["commit"].removesuffix("-dirty") for r in read_csv(baseline)}
    if len(commits) != 1 or not next(iter(commits)):
        raise WorktreeError(f"{baseline}: expected every row to name one commit, found "
                            f"{sorted(commits) or 'none'}; pass --base REV")
    return commits.pop()


def resolve(repo: Path, rev: str) -> str:
    """rev's full commit hash. In a shallow clone a missing commit is fetched first."""
    found = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if found.returncode != 0 and git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() \
            == "true":
        git(repo, "fetch", "--quiet", "--unshallow", check=False)
        found = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if found.returncode != 0:
        raise WorktreeError(f"base commit '{rev}' is not in {repo}: fetch it (git fetch origin "
                            f"{rev}) or pass another with --base REV")
    return found.stdout.strip()


def checkout(repo: Path, commit: str, where: Path) -> Path:
    """A worktree of repo at `commit` in `where` (reused when it is one already), returned."""
    if (where / ".git").exists() and git(where, "rev-parse", "HEAD", check=False).returncode == 0:
        git(where, "checkout", "--quiet", "--detach", "--force", commit)
        return where
    shutil.rmtree(where, ignore_errors=True)  # not a worktree (any more): start afresh
    git(repo, "worktree", "prune")
    try:
        git(repo, "worktree", "add", "--quiet", "--detach", "--force", str(where), commit)
    except subprocess.CalledProcessError as e:
        raise WorktreeError(f"git worktree add {where} {commit} failed: {e.stderr.strip()}")
    return where
