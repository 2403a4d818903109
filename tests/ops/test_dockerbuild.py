"""The .dockerignore reader the image test stands on, against Docker's documented rules."""

from __future__ import annotations

import pytest
from dockerbuild import Copy, _placed, excluded, ignore_rules, wheel_stage

RULES = """
# comment
.git
**/__pycache__
*.egg-info
tests
docs/*.md
!docs/keep.md
/build
"""


@pytest.mark.parametrize(
    ("path", "left_out"),
    [
        (".git/HEAD", True),  # a folder's contents go with it
        ("exporter/__pycache__/cli.cpython-311.pyc", True),  # ** spans folders
        ("__pycache__/x.pyc", True),  # ** spans zero folders too
        ("gpu_reclaim.egg-info/PKG-INFO", True),
        ("sub/gpu_reclaim.egg-info", False),  # * never crosses /
        ("tests/ops/test_image.py", True),
        ("testsuite/a.py", False),  # a name, not a prefix
        ("docs/data.md", True),
        ("docs/keep.md", False),  # ! re-includes; the last match wins
        ("build/lib/x.py", True),  # a leading / is the context root
        ("reclaimer/cli.py", False),
    ],
)
def test_docker_ignore_rules(path: str, left_out: bool) -> None:
    assert excluded(path, ignore_rules(RULES)) is left_out


def test_a_character_class_is_refused_rather_than_misread() -> None:
    with pytest.raises(ValueError, match="does not handle"):
        ignore_rules("[ab]*")


def test_the_wheel_stage_and_copy_placement() -> None:
    dockerfile = (
        "FROM python AS build\nWORKDIR /src\nCOPY a.toml b.md ./\nCOPY pkg ./pkg\n"
        "COPY --from=x /w /w\nRUN pip wheel \\\n  --wheel-dir /w .\nFROM python\nCOPY . .\n"
    )
    workdir, copies = wheel_stage(dockerfile)
    assert workdir == "/src"
    assert copies == [Copy(("a.toml", "b.md"), "/src/"), Copy(("pkg",), "/src/pkg")]
    context = ["a.toml", "b.md", "pkg/__init__.py", "pkg/sub/m.py", "other/x.py"]
    assert _placed(Copy(("a.toml",), "/src/"), "a.toml", context) == [("a.toml", "src/a.toml")]
    assert _placed(copies[1], "pkg", context) == [
        ("pkg/__init__.py", "src/pkg/__init__.py"),
        ("pkg/sub/m.py", "src/pkg/sub/m.py"),
    ]
    assert _placed(Copy(("a.toml",), "/src/c.toml"), "a.toml", context) == [
        ("a.toml", "src/c.toml")
    ]
    assert len(_placed(Copy((".",), "/src"), ".", context)) == 5


def test_a_wheel_built_elsewhere_than_the_workdir_is_refused() -> None:
    with pytest.raises(ValueError, match="not built from the WORKDIR"):
        wheel_stage("FROM python\nWORKDIR /src\nCOPY . .\nRUN pip wheel -w /w /other\n")
