"""The snippets of the README and of docs/, run exactly as printed. A snippet is the fenced block
that follows a line `<!-- snippet: NAME -->` in README.md or a page of docs/ (the marker does not
render). It addresses the server as
`make run` serves it, at http://127.0.0.1:8080; the one change a test makes is that address, to the
test's own server. A block that is not a whole program (a piece of configuration, lines to add to
one) follows `<!-- fragment: NAME -->` instead, and a test checks it against what the product
takes; every fenced block is one or the other."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_SERVER = "http://127.0.0.1:8080"
_MARKER = re.compile(r"<!-- (?P<kind>snippet|fragment): (?P<name>[\w.-]+) -->")
_BLOCK = re.compile(_MARKER.pattern + r"\n```(?P<language>\w*)\n(?P<code>.*?)\n```", re.DOTALL)


def snippets(kind: str = "snippet") -> dict[str, tuple[str, str]]:
    """Every marked snippet (or, with kind="fragment", every fragment): name → (language, code)."""
    found = {}
    for page in PAGES:
        for match in _BLOCK.finditer(page.read_text()):
            assert match["name"] not in found, f"two blocks are named {match['name']}"
            if match["kind"] == kind:
                found[match["name"]] = (match["language"], match["code"])
    return found


def fragment(name: str, language: str) -> str:
    marked = snippets("fragment")
    assert name in marked, f"no page has a fragment {name!r} (a line '<!-- fragment: {name} -->' before its block)"
    assert marked[name][0] == language, f"fragment {name!r} is {marked[name][0]!r}, not {language!r}"
    return marked[name][1]


def unmarked_blocks() -> list[str]:
    """`page:line` of each fenced block that no snippet or fragment marker precedes."""
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        inside = False
        for number, line in enumerate(lines):
            if not line.startswith("```"):
                continue
            if not inside and not (number and _MARKER.fullmatch(lines[number - 1])):
                found.append(f"{page.relative_to(ROOT)}:{number + 1}")
            inside = not inside
    return found


def snippet(name: str, language: str = "python") -> str:
    marked = snippets()
    assert name in marked, f"no page has a snippet {name!r} (a line '<!-- snippet: {name} -->' before its block)"
    found_language, code = marked[name]
    assert found_language == language, f"README snippet {name!r} is {found_language!r}, not {language!r}"
    return code


def run_python(name: str, *, server: str, token: str, cwd: Path, env: dict | None = None,
               timeout: float = 300) -> str:
    """Runs README snippet `name` in a new Python process of this environment, with $TOKEN set as
    the README's first step sets it, against `server`; returns what it printed."""
    code = snippet(name)
    assert README_SERVER in code, f"README snippet {name!r} does not address {README_SERVER}"
    process = subprocess.run(
        [sys.executable, "-c", code.replace(README_SERVER, server.rstrip("/"))],
        cwd=cwd, env={**os.environ, **(env or {}), "TOKEN": token},
        capture_output=True, text=True, timeout=timeout,
    )
    assert process.returncode == 0, f"README snippet {name!r} failed:\n{process.stdout}\n{process.stderr}"
    return process.stdout


def run_shell(name: str, *, server: str | None, token: str, cwd: Path, env: dict | None = None,
              timeout: float = 300) -> str:
    """Runs README snippet `name` (```sh) in bash, failing on the first failing command, with
    $TOKEN set and this environment's commands (its virtualenv's bin) first on the PATH, as a
    reader who ran `make run` has them. `server=None`: a snippet that does not call the server."""
    code = snippet(name, language="sh")
    if server is None:
        assert README_SERVER not in code, f"README snippet {name!r} addresses {README_SERVER}"
    else:
        assert README_SERVER in code, f"README snippet {name!r} does not address {README_SERVER}"
        code = code.replace(README_SERVER, server.rstrip("/"))
    bin_dir = str(Path(sys.executable).parent)
    process = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=cwd, env={**os.environ, **(env or {}), "TOKEN": token, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=timeout,
    )
    assert process.returncode == 0, f"README snippet {name!r} failed:\n{process.stdout}\n{process.stderr}"
    return process.stdout
