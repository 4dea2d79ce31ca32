"""Stand-in for SIGKILL in the resume tests: make a function raise on its n-th call, wherever that is."""


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
