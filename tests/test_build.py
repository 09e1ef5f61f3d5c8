"""The build script's newcomer-facing behaviour that can be checked without compiling: the
missing-library check names everything at once with one apt-get line."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _setup(env_extra):
    env = {k: v for k, v in os.environ.items() if not (k.startswith("CV_") and k.endswith("LIBS"))}
    env.update(env_extra)
    return subprocess.run([sys.executable, "setup.py", "--version"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_every_missing_library_is_named_with_one_apt_get_line():
    result = _setup({"PKG_CONFIG_LIBDIR": "/nonexistent", "PKG_CONFIG_PATH": ""})
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if "apt-get install" in line]
    assert len(lines) == 1, result.stderr
    for package in ("zlib1g-dev", "libjpeg62-turbo-dev", "libcurl4-openssl-dev", "libssl-dev"):
        assert package in lines[0]
    assert "zlib, libjpeg, libcurl, libcrypto" in result.stderr


def test_a_library_given_by_environment_is_not_reported_missing():
    result = _setup({"PKG_CONFIG_LIBDIR": "/nonexistent", "PKG_CONFIG_PATH": "",
                     "CV_ZLIB_LIBS": "-lz", "CV_CRYPTO_LIBS": "-lcrypto"})
    assert result.returncode != 0
    assert "did not find libjpeg, libcurl." in result.stderr
    line = next(line for line in result.stderr.splitlines() if "apt-get install" in line)
    assert "zlib1g-dev" not in line and "libssl-dev" not in line


def test_every_file_named_for_its_optimisation_exists():
    """setup.py's HOT_FILES give the per-value loops their optimisation; a renamed file would
    silently fall back to -O2."""
    import re
    text = (ROOT / "setup.py").read_text()
    block = text.split("HOT_FILES = {", 1)[1].split("\n}\n", 1)[0]
    named = re.findall(r'"(csrc/[\w/]+\.c)"', block)
    assert len(named) >= 10, block
    assert [src for src in named if not (ROOT / src).is_file()] == []
