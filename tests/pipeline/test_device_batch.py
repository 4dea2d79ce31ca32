"""scripts/device_batch.sh: a batch is the code of one commit without the published records (the device takes at
most 64 MiB), its jobs and core count; what comes back unpacks by batch name, in either archive format."""
import io
import lzma
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def batch(repo, *args):
    return subprocess.run(["bash", "scripts/device_batch.sh", *args], cwd=repo, capture_output=True, text=True,
                          timeout=120)


def test_add_makes_a_batch_of_one_commits_code_without_the_records(tmp_path):
    repo = tmp_path / "repo"
    git(tmp_path, "clone", "-q", "--shared", "--no-checkout", str(ROOT), str(repo))
    git(repo, "checkout", "-q", "HEAD", "--", "scripts")
    # the script as tested, whatever the clone's commit holds
    (repo / "scripts" / "device_batch.sh").write_text((ROOT / "scripts" / "device_batch.sh").read_text())
    jobs = tmp_path / "jobs.tsv"
    jobs.write_text("atari\t{}\ta\natari\t{}\tb\n")
    added = batch(repo, "add", "atari", "HEAD", "5", str(jobs))
    assert added.returncode == 0, added.stderr
    made = repo / ".device" / "atari"
    assert (made / "batch").read_text().split() == [git(repo, "rev-parse", "HEAD"), "5"]
    assert (made / "jobs.tsv").read_text() == jobs.read_text()
    assert (made / "ppo" / "pipeline" / "remote.py").is_file() and (made / "scripts" / "remote_batch.sh").is_file()
    assert not (made / "published").exists() and not (made / "grid-state").exists()
    assert "/.device/" in (repo / ".git" / "info" / "exclude").read_text().splitlines()  # never committed
    assert batch(repo, "add", "atari", "no-such-commit", "5", str(jobs)).returncode != 0


def tar_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_unpack_reads_both_archive_formats_by_batch_name(tmp_path):
    import gzip

    returned = tmp_path / "returned"
    (returned / "old").mkdir(parents=True)
    (returned / "new").mkdir()
    old = gzip.compress(tar_bytes({"results/atari/paper/checkpoints/ALE_Pong-v5-0123.pt": b"x" * 10}))
    (returned / "old" / "batch.tgz.partaa").write_bytes(old[:7])  # split in parts, as remote_batch.sh does
    (returned / "old" / "batch.tgz.partab").write_bytes(old[7:])
    new = lzma.compress(tar_bytes({"results/figure3/paper/runs/T/v/seed3/manifest.json": b"{}"}))
    (returned / "new" / "batch.tar.xz.partaa").write_bytes(new)
    unpacked = batch(ROOT, "unpack", str(returned), str(tmp_path / "out"))
    assert unpacked.returncode == 0, unpacked.stderr
    assert (tmp_path / "out/old/results/atari/paper/checkpoints/ALE_Pong-v5-0123.pt").read_bytes() == b"x" * 10
    assert (tmp_path / "out/new/results/figure3/paper/runs/T/v/seed3/manifest.json").read_bytes() == b"{}"
    assert unpacked.stdout.splitlines() == [f"{tmp_path}/out/new: 1 finished runs, 0 checkpoints",
                                            f"{tmp_path}/out/old: 0 finished runs, 1 checkpoints"]
