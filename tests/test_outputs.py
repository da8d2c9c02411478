"""Writing outputs (``planner.outputs``): regular files replaced whole, symlinks written through,
special files written in place, permissions from the umask, every path checked before any is
written, the same file never named twice; plot formats from the extension."""

from __future__ import annotations

import os
import stat

import pytest

from planner.cli import main
from planner.errors import SpecError
from planner.outputs import check_outputs, write_atomic, write_outputs

#: a frontier that takes about a second
FRONTIER = ["frontier", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--gpus", "8",
            "--mode", "bound"]


@pytest.fixture
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_symlink_target_is_written_and_link_kept(tmp_path):
    (tmp_path / "real.csv").write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to("real.csv")
    write_atomic(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == "real.csv"
    assert (tmp_path / "real.csv").read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "real.csv"]  # no temporary left


def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to("made.csv")
    write_atomic(link, b"x")
    assert link.is_symlink() and (tmp_path / "made.csv").read_bytes() == b"x"


def null_device(directory) -> str:
    """A device like /dev/null to write to: as root a fresh node in ``directory`` (a broken writer
    would replace the real /dev/null), otherwise /dev/null itself (its directory is not writable)."""
    if os.geteuid() != 0:
        return "/dev/null"
    dev = os.path.join(directory, "fakenull")
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return dev


def test_device_is_written_in_place_not_replaced(tmp_path):
    dev = null_device(tmp_path)
    write_atomic(dev, "x" * 1000)
    write_atomic(dev, lambda tmp: open(tmp, "w").write("discarded"))
    assert stat.S_ISCHR(os.lstat(dev).st_mode) and os.stat(dev).st_rdev == os.makedev(1, 3)


def test_fifo_is_written_in_place(tmp_path):
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    write_atomic(fifo, "through the pipe\n")
    reader.join(5)
    assert got == [b"through the pipe\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_new_file_mode_follows_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        write_atomic(tmp_path / "a.csv", "x")
        write_atomic(tmp_path / "b.csv", lambda tmp: open(tmp, "w").write("x"))
    finally:
        os.umask(old)
    for name in ("a.csv", "b.csv"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == mode


def test_existing_file_keeps_its_mode(tmp_path, umask022):
    p = tmp_path / "a.csv"
    p.write_text("old")
    os.chmod(p, 0o640)
    write_atomic(p, "new")
    assert p.read_text() == "new" and stat.S_IMODE(os.stat(p).st_mode) == 0o640


def test_same_file_twice_refused(tmp_path):
    (tmp_path / "a").write_text("keep")
    (tmp_path / "l").symlink_to("a")
    os.link(tmp_path / "a", tmp_path / "h")
    for other in (tmp_path / "a", tmp_path / "l", tmp_path / "h", tmp_path / "." / "a"):
        with pytest.raises(SpecError, match="a different file from --csv"):
            check_outputs({"--csv": tmp_path / "a", "--plot": other})
    with pytest.raises(SpecError, match="--plot: a different file from --csv"):  # neither exists yet
        check_outputs({"--csv": tmp_path / "new", "--plot": tmp_path / "sub" / ".." / "new"})
    check_outputs({"--csv": tmp_path / "a", "--plot": tmp_path / "b", "--out": ""})  # distinct: fine
    dev = null_device(tmp_path)
    check_outputs({"--csv": dev, "--plot": dev})  # a device: nothing to overwrite


def test_every_path_checked_before_any_is_written(tmp_path):
    (tmp_path / "isdir.png").mkdir()
    with pytest.raises(SpecError, match=r"isdir.png: --plot: a file to write, not a directory"):
        write_outputs([("--csv", tmp_path / "good.csv", "a,b\n"), ("--plot", tmp_path / "isdir.png", b"")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["isdir.png"]


def test_failure_while_writing_leaves_targets_as_they_were(tmp_path):
    (tmp_path / "a.csv").write_text("old")

    def boom(tmp: str) -> None:
        open(tmp, "w").write("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(SpecError, match="No space left"):
        write_outputs([("--csv", tmp_path / "a.csv", "new"), ("--plot", tmp_path / "b.png", boom)])
    assert (tmp_path / "a.csv").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


@pytest.mark.parametrize("path", ["/nonexistent-dir/x.csv", "x" * 300, "/tmp/" + "y" * 300 + "/x.csv"])
def test_unwritable_paths_are_one_line(path):
    with pytest.raises(SpecError, match="--csv"):
        check_outputs({"--csv": path})


# ---- through the command line ------------------------------------------------------------------
@pytest.mark.parametrize("ext, magic", [("svg", b"<?xml"), ("pdf", b"%PDF"), ("png", b"\x89PNG")])
def test_plot_format_follows_extension(tmp_path, ext, magic, capsys):
    p = tmp_path / f"f.{ext}"
    assert main([*FRONTIER, "--plot", str(p)]) == 0
    assert p.read_bytes().startswith(magic)


def test_unknown_plot_extension_refused(tmp_path, capsys):
    assert main([*FRONTIER, "--plot", str(tmp_path / "f.xyz"), "--csv", str(tmp_path / "f.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--plot: a file name ending in a plot format" in err[0] and "svg" in err[0]
    assert not list(tmp_path.iterdir())


def test_cli_same_path_twice_refused(tmp_path, capsys):
    same = str(tmp_path / "same.out")
    assert main(["compare", "--plot", same, "--csv", same]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a different file from --csv" in err[0]
    assert not list(tmp_path.iterdir())


def test_cli_checks_every_output_before_writing(tmp_path, capsys):
    (tmp_path / "isdir.png").mkdir()
    good = tmp_path / "good.csv"
    assert main([*FRONTIER, "--csv", str(good), "--plot", str(tmp_path / "isdir.png")]) == 2
    assert "--plot: a file to write, not a directory" in capsys.readouterr().err
    assert not good.exists()
