#!/usr/bin/env python3
"""The link graph only points down (docs/design.md, "Targets and their arrows").

Reads every CMakeLists.txt of the layered folders below, finds the targets each defines (add_library,
add_executable) and what each links (target_link_libraries), and fails, naming the file and the arrow, when a
target links a gossip target of its own layer or of a layer above it. Arrows inside one folder are allowed (a
folder's helper targets: gossip_param_copy in daemon/bridge, the dashboard's assets in daemon/monitor).
Non-gossip items (Boost, cppzmq, ...) and gossip::warnings (flags, defined at the top level) are not checked.
tests/, bench/ and fuzz/ sit above everything and are not read: nothing may link them, which the unknown-target
check below catches.

Usage: check_layers.py SOURCE_DIR
"""
import os
import pathlib
import re
import sys

# Lowest first. Folders on one line form one layer: they may not link each other. A folder not listed here
# but holding a CMakeLists.txt with targets is an error, so a new folder has to be placed.
LAYERS = [
    ["core"],
    ["compressors", "topology", "training"],
    ["algorithms"],
    ["engine"],
    ["transport/peer"],     # the interface a daemon node's network implements (no sockets)
    # Side by side, so none may link another: SWIM is pure logic whose bytes the caller carries, and the
    # transport backends move frames without knowing what membership is.
    ["transport/inproc", "transport/zmq", "membership"],
    ["sim"],
    ["setup"],              # reserved: the set-up shared by sim and daemon (issue 27); not there yet
    ["daemon/log"],
    ["daemon/config"],      # validates node.log_level(s) with daemon/log's parsers
    ["daemon/monitor", "daemon/bridge"],
    ["daemon/node"],
    ["daemon/cli"],
]
# Not read: the consumers above everything (tests, bench, fuzz) and folders without C++ targets.
SKIPPED_DIRS = {"tests", "bench", "fuzz", "build", "docs", "python", "docker", "examples"}
IGNORED = {"gossip::warnings", "gossip_warnings"}
KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE", "LINK_PUBLIC", "LINK_PRIVATE", "LINK_INTERFACE_LIBRARIES"}


def commands(text, name):
    """Yields the argument lists of every `name(...)` call in a CMakeLists.txt, comments removed."""
    text = re.sub(r"#[^\n]*", "", text)
    for m in re.finditer(r"\b%s\s*\(" % name, text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield text[m.end():i - 1].split()


def cmake_files(root):
    """The CMakeLists.txt below root; hidden folders, build trees and SKIPPED_DIRS left out."""
    for d, subdirs, files in os.walk(root):
        subdirs[:] = sorted(s for s in subdirs if not s.startswith(".") and s not in SKIPPED_DIRS
                            and not os.path.exists(os.path.join(d, s, "CMakeCache.txt")))
        if "CMakeLists.txt" in files:
            yield pathlib.Path(d) / "CMakeLists.txt"


def main(root):
    root = pathlib.Path(root)
    rank = {folder: r for r, layer in enumerate(LAYERS) for folder in layer}
    owner = {}   # target name or alias -> folder
    links = []   # (folder, cmake file, target, item)
    problems = []
    for cm in cmake_files(root):
        folder = cm.parent.relative_to(root).as_posix()
        text = cm.read_text()
        defined = [args for cmd in ("add_library", "add_executable") for args in commands(text, cmd)]
        if defined and folder not in rank:
            problems.append(f"{cm}: folder {folder}/ defines targets but has no layer in {__file__}")
            continue
        for args in defined:
            owner[args[0]] = folder
            if len(args) > 2 and args[1] == "ALIAS":
                owner[args[0]] = owner.get(args[2], folder)
        for args in commands(text, "target_link_libraries"):
            links += [(folder, cm, args[0], item) for item in args[1:] if item not in KEYWORDS]
    for folder, cm, target, item in links:
        if owner.get(target) != folder:
            problems.append(f"{cm}: links {target}, which is not defined in {folder}/")
            continue
        if not re.match(r"^gossip(::|_)", item) or item in IGNORED:
            continue
        if item not in owner:
            problems.append(f"{cm}: {target} links {item}, which no layered folder defines")
        elif owner[item] != folder and rank[owner[item]] >= rank[folder]:
            where = "the same layer as" if rank[owner[item]] == rank[folder] else "a layer above"
            problems.append(f"{cm}: {target} ({folder}) links {item} ({owner[item]}), {where} it")
    for p in problems:
        print("check_layers:", p)
    n = len([l for l in links if re.match(r"^gossip(::|_)", l[3]) and l[3] not in IGNORED])
    print(f"check_layers: {len(owner)} targets and aliases, {n} arrows between gossip targets, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
