"""The PEP 517 build backend of the tcc package: maturin's, with progress.

pip runs a build backend with its output captured and shows it only with
``-v``; a first build of the package compiles the runtime and its
dependencies for minutes, so ``pip wheel ./runtime/python`` or ``pip
install ./runtime/python`` said nothing for that long. This backend runs
maturin's hooks unchanged, but while a wheel builds it reads the build's
standard error (maturin's and cargo's lines) through a pipe: every byte
still goes to pip (its log, and the screen with ``-v``), and the build's
steps (cargo's ``Compiling``/``Finished`` lines and maturin's result) are
also written, numbered and timed, to the terminal pip runs in (the
controlling terminal, ``/dev/tty``), which pip does not capture. Without a
terminal (CI), with standard error already a terminal, or with
``TCC_BUILD_PROGRESS=0``, nothing extra is written.
"""

import os
import sys
import threading
import time

import maturin
from maturin import (  # noqa: F401 (the hooks pip calls, unchanged)
    build_sdist,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_wheel",
]

# Lines of the build shown on the terminal (their start, after spaces):
# cargo's steps, waits and errors, and maturin's result.
SHOWN = (
    "Compiling ",
    "Finished ",
    "Updating ",
    "Downloading ",
    "Blocking ",
    "error",
    "📦",
    "Built wheel",
)


def _progress_terminal():
    """The terminal to write progress to, or None."""
    if os.environ.get("TCC_BUILD_PROGRESS", "1") == "0" or os.isatty(2):
        return None
    try:
        return open("/dev/tty", "w", buffering=1, encoding="utf-8", errors="replace")
    except OSError:
        return None


def _with_progress(build, *args, **kwargs):
    """Runs `build` with file descriptor 2 going through a pipe that a
    thread copies to the original descriptor and summarizes on the
    terminal."""
    tty = _progress_terminal()
    if tty is None:
        return build(*args, **kwargs)
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    start = time.monotonic()
    tty.write("tcc: building the wheel (the Rust runtime, a few minutes the first time)\n")

    def pump():
        crates = 0
        pending = b""
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while True:
                chunk = pipe.read(65536)
                if not chunk:
                    break
                os.write(saved, chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith(SHOWN):
                        continue
                    if line.startswith("Compiling "):
                        crates += 1
                        line = f"[{crates}] {line}"
                    tty.write(f"tcc: {time.monotonic() - start:5.0f} s  {line}\n")

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        result = build(*args, **kwargs)
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # closes the pipe's last write end: the pump ends
        thread.join(timeout=10)
        os.close(saved)
        tty.write(f"tcc: wheel build done in {time.monotonic() - start:.0f} s\n")
        tty.close()
    return result


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _with_progress(maturin.build_wheel, wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _with_progress(
        maturin.build_editable, wheel_directory, config_settings, metadata_directory
    )
