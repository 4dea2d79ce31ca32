"""Stand-in for SIGKILL in the resume tests: make a function raise on its n-th call, wherever that is; or a real
SIGKILL of a process once it has written its first checkpoint."""
import os
import signal
import time


class Killed(Exception):
    """The process stops wherever it is; nothing is cleaned up."""


def kill_at(monkeypatch, target, name, after_calls):
    """Replace ``target.name`` so that its ``after_calls``-th call raises Killed (earlier calls go through)."""
    real = getattr(target, name)
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == after_calls:
            raise Killed
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, dying)


def kill_then_resume(monkeypatch, train_group, specs, checkpoint, target, name, after_calls):
    """Train ``specs`` with a checkpoint every iteration until the kill at ``target.name``'s
    ``after_calls``-th call, then train again from the checkpoint; returns the resumed results."""
    import pytest

    with monkeypatch.context() as m:
        kill_at(m, target, name, after_calls)
        with pytest.raises(Killed):
            train_group(specs, log=lambda _: None, checkpoint=checkpoint, checkpoint_every=1)
    assert checkpoint.exists()
    messages = []
    resumed = train_group(specs, log=messages.append, checkpoint=checkpoint, checkpoint_every=1)
    assert any("resumed from" in msg for msg in messages)
    return resumed


def sigkill_after_first_checkpoint(process, checkpoints, timeout, group=False):
    """SIGKILL ``process`` (with ``group``: its whole process group) as soon as a ``*.pt`` file appears in the folder
    ``checkpoints``, or after ``timeout`` seconds; returns the checkpoints found."""
    deadline = time.time() + timeout
    while not (checkpoints.is_dir() and any(checkpoints.glob("*.pt"))) and time.time() < deadline:
        time.sleep(0.005)
    if group:
        os.killpg(process.pid, signal.SIGKILL)
    else:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return sorted(checkpoints.glob("*.pt"))
