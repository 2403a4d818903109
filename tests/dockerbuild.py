"""What `docker build` would copy, without a Docker daemon: the Dockerfile's COPY lines and the
context that .dockerignore leaves.

The build context is every file under the repository (as the Docker CLI sends it), less the paths
.dockerignore excludes. The rules follow moby/patternmatcher (the matcher the Docker CLI uses,
`fileutils`/`patternmatcher.go`): one pattern a line, `#` comments, a leading `!` re-includes,
the last matching pattern wins, a pattern that matches a directory excludes everything under it,
`*` and `?` never cross `/`, `**` spans any number of directories. The build stage is the one whose
RUN builds the wheel; its COPY instructions (`COPY SRC... DEST`, no `--from`) are applied as
Docker applies them: a directory's contents, not the directory itself, go to DEST.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern[str]
    include: bool  # a `!` line


def ignore_rules(text: str) -> list[Rule]:
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        pattern = os.path.normpath(line.removeprefix("!").strip()).lstrip("/")
        rules.append(Rule(re.compile(_regex(pattern)), include))
    return rules


def _regex(pattern: str) -> str:
    out, i = "^", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out, i = out + "(.*/)?", i + 3
            continue
        if pattern.startswith("**", i):
            out, i = out + ".*", i + 2
            continue
        if c in "[\\":
            raise ValueError(f".dockerignore: this reader does not handle {c!r} in {pattern!r}")
        out += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c))
        i += 1
    return out + "$"


def excluded(path: str, rules: list[Rule]) -> bool:
    """Whether `path` (relative, '/'-separated) is left out: a rule matches it or a parent."""
    parts = PurePosixPath(path).parts
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    verdict = False
    for rule in rules:
        if any(rule.regex.match(p) for p in prefixes):
            verdict = not rule.include
    return verdict


def context_files(root: Path, rules: list[Rule]) -> list[str]:
    """Every file of the build context, relative to `root`."""
    prune = not any(r.include for r in rules)
    files = []
    for folder, dirs, names in os.walk(root):
        rel = Path(folder).relative_to(root).as_posix()
        base = "" if rel == "." else rel + "/"
        if prune:
            dirs[:] = [d for d in dirs if not excluded(base + d, rules)]
        files += [base + n for n in names if not excluded(base + n, rules)]
    return sorted(files)


@dataclass(frozen=True)
class Copy:
    sources: tuple[str, ...]
    dest: str  # absolute in the image


def instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(
        line for line in dockerfile.splitlines() if not line.lstrip().startswith("#")
    ))  # fmt: skip
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def wheel_stage(dockerfile: str) -> tuple[str, list[Copy]]:
    """The WORKDIR and the context COPY lines of the stage whose RUN builds the wheel from it."""
    workdir, copies = "/", []
    for word, rest in instructions(dockerfile):
        if word == "FROM":
            workdir, copies = "/", []
        elif word == "WORKDIR":
            workdir = str(PurePosixPath(workdir) / rest)
        elif word == "COPY" and "--from" not in rest:
            *sources, dest = [a for a in rest.split() if not a.startswith("--")]
            folder = dest.endswith("/") or dest in (".", "./")  # Docker: DEST/ is a folder
            copies.append(Copy(tuple(sources), str(PurePosixPath(workdir) / dest) + "/" * folder))
        elif word == "RUN" and "pip wheel" in rest:
            if not rest.rstrip().endswith(" ."):
                raise ValueError(f"the wheel is not built from the WORKDIR: RUN {rest}")
            return workdir, copies
    raise ValueError("no stage builds a wheel (RUN pip wheel ... .)")


def stage_tree(root: Path, out: Path, dockerfile: str, ignore: str) -> Path:
    """Lay out under `out` what the wheel stage holds; return its WORKDIR there."""
    workdir, copies = wheel_stage(dockerfile)
    context = context_files(root, ignore_rules(ignore))
    for copy in copies:
        for source in copy.sources:
            for f, target in _placed(copy, os.path.normpath(source), context):
                (out / target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / f, out / target)
    return out / workdir.lstrip("/")


def _placed(copy: Copy, src: str, context: list[str]) -> list[tuple[str, str]]:
    """(context file, path in the image) for one COPY source, as Docker places them."""
    dest = copy.dest.strip("/")
    if src in context:  # a file: into DEST/ when DEST is a folder, else as DEST
        into = copy.dest.endswith("/") or len(copy.sources) > 1
        return [(src, f"{dest}/{PurePosixPath(src).name}" if into else dest)]
    under = [f for f in context if src == "." or f.startswith(src + "/")]
    if not under:
        raise ValueError(f"COPY {src}: nothing in the build context")
    strip = 0 if src == "." else len(src) + 1
    return [(f, f"{dest}/{f[strip:]}") for f in under]
