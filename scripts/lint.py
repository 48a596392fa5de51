#!/usr/bin/env python3
"""make lint: structural checks of the source tree that a compiler does not make.

1. Layers: every `#include "DIR/..."` from a file in src/A/ to a folder src/B/ (B != A) must be
   allowed by src/layers.txt, and the allowed graph must have no cycle.
2. Header size: no header in src/ over MAX_HEADER_LINES lines (a header that long does several
   jobs; split it). KNOWN_LONG_HEADERS lists the ones still to split, each with its size today,
   so the list cannot grow silently and a listed header cannot grow either.
3. Format: every C++ file in src/ cmd/ test/ bench/ examples/ is as clang-format (.clang-format)
   would write it. Skipped with --no-format.

Prints one line per finding as FILE:LINE: message and exits 1 if there is any.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_HEADER_LINES = 400
KNOWN_LONG_HEADERS = {}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')
CXX_DIRS = ["src", "cmd", "test", "bench", "examples"]
CXX_EXT = (".h", ".cc", ".cpp", ".hpp")


def read_layers(path):
    layers = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, deps = line.partition(":")
            name = name.strip()
            if not name or name in layers:
                raise SystemExit(f"{path}:{number}: layer {name!r} is empty or listed twice")
            layers[name] = set(deps.split())
    for name, deps in layers.items():
        for dep in deps:
            if dep not in layers:
                raise SystemExit(f"{path}: layer {name} depends on unknown layer {dep}")
    return layers


def find_cycle(graph):
    """Returns one cycle as a list of nodes, or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def source_files(dirs):
    for top in dirs:
        for base, subdirs, files in os.walk(os.path.join(ROOT, top)):
            subdirs[:] = sorted(d for d in subdirs if d not in ("node_modules", "corpus"))
            for name in sorted(files):
                if name.endswith(CXX_EXT):
                    yield os.path.join(base, name)


def check_layers(findings):
    layers_path = os.path.join(ROOT, "src", "layers.txt")
    layers = read_layers(layers_path)
    cycle = find_cycle(layers)
    if cycle:
        findings.append(f"src/layers.txt:1: the allowed layers form a cycle: {' -> '.join(cycle)}")
    src = os.path.join(ROOT, "src")
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    for folder in sorted(folders - set(layers)):
        findings.append(f"src/{folder}/: folder is not a layer in src/layers.txt")
    actual = {name: set() for name in layers}
    for path in source_files(["src"]):
        rel = os.path.relpath(path, ROOT)
        own = rel.split(os.sep)[1]
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m or m.group(1) not in folders or m.group(1) == own:
                    continue
                target = m.group(1)
                actual.setdefault(own, set()).add(target)
                if target not in layers.get(own, set()):
                    findings.append(f"{rel}:{number}: layer {own} may not include {target}/ "
                                    f"(src/layers.txt allows {own}: {' '.join(sorted(layers.get(own, []))) or 'nothing'})")
    cycle = find_cycle(actual)
    if cycle:
        findings.append(f"src/: include edges form a cycle: {' -> '.join(cycle)}")


def check_header_sizes(findings):
    for path in source_files(["src"]):
        if not path.endswith(".h"):
            continue
        rel = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = sum(1 for _ in f)
        allowed = KNOWN_LONG_HEADERS.get(rel, MAX_HEADER_LINES)
        if lines > allowed:
            findings.append(f"{rel}:1: {lines} lines, over the limit of {allowed}")


def check_format(findings):
    tool = shutil.which("clang-format") or shutil.which("clang-format-14")
    if tool is None:
        findings.append("clang-format:1: not installed (scripts/install-deps.sh installs it)")
        return
    files = list(source_files(CXX_DIRS))
    for start in range(0, len(files), 50):
        batch = files[start:start + 50]
        result = subprocess.run([tool, "--dry-run", "--Werror", "--style=file", *batch],
                                capture_output=True, text=True, cwd=ROOT)
        if result.returncode != 0:
            reported = set()
            for line in result.stderr.splitlines():
                m = re.match(r"^(.*?):(\d+):\d+: error", line)
                if m and m.group(1) not in reported:
                    reported.add(m.group(1))
                    findings.append(f"{os.path.relpath(m.group(1), ROOT)}:{m.group(2)}: not clang-formatted "
                                    "(run: make format)")
            if not reported:
                findings.append(f"clang-format:1: failed: {result.stderr.strip()[:300]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-format", action="store_true", help="skip the clang-format check")
    args = parser.parse_args()
    findings = []
    check_layers(findings)
    check_header_sizes(findings)
    if not args.no_format:
        check_format(findings)
    for finding in findings:
        print(finding)
    if findings:
        print(f"lint: {len(findings)} finding(s)", file=sys.stderr)
        return 1
    print("lint: layers and header sizes are clean" + ("" if args.no_format else "; so is the format"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
