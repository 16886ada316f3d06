"""The NKI 0.6 API table: every name of AWS's 0.6 API files, implemented / partial / refused / missing here.

Reads the API stubs of a clone of AWS's docs source (``nki/api/nki/__init__.py`` and the ``language``, ``isa`` and
``collectives`` packages: the 0.6 API with docstrings; never copied into this repository) and asks the simulator's
front end about each name (``nkisim.frontend.v06.status``).  Prints a Markdown table with counts.

    python bench/nki06_api_status.py ~/src/aws-neuron-sdk          # the docs source at HEAD (SDK 2.32)
"""

from __future__ import annotations

import ast
import os
import sys

from nkisim.frontend.v06 import status

FILES = {"nki": "__init__.py", "nki.language": os.path.join("language", "__init__.py"),
         "nki.isa": os.path.join("isa", "__init__.py"), "nki.collectives": os.path.join("collectives", "__init__.py")}
#: class members of the 0.6 API that the table lists one by one
MEMBERS_OF = {"NkiTensor"}


def api_names(path: str) -> list[str]:
    """The public names a 0.6 API file defines: functions, classes, constants, and the members of ``MEMBERS_OF``."""
    names: list[str] = []
    for node in ast.parse(open(path, encoding="utf-8").read()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
            if isinstance(node, ast.ClassDef) and node.name in MEMBERS_OF:
                for member in node.body:
                    if isinstance(member, ast.FunctionDef) and not member.name.startswith("_"):
                        names.append(f"{node.name}.{member.name}")
                    elif isinstance(member, (ast.AnnAssign, ast.Assign)):
                        target = member.target if isinstance(member, ast.AnnAssign) else member.targets[0]
                        if isinstance(target, ast.Name):
                            names.append(f"{node.name}.{target.id}")
                if any(isinstance(m, ast.FunctionDef) and m.name == "__getitem__" for m in node.body):
                    names.append(f"{node.name}.__getitem__")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name):
                names.append(target.id)
    return [n for n in names if not n.split(".")[-1].startswith("_") or n.endswith("__getitem__")]


def table(sdk: str) -> tuple[str, dict[str, dict[str, int]]]:
    root = os.path.join(sdk, "nki", "api", "nki") if os.path.isdir(os.path.join(sdk, "nki", "api")) else sdk
    rows: list[str] = []
    counts: dict[str, dict[str, int]] = {}
    for module, rel in FILES.items():
        c = counts[module] = {"implemented": 0, "partial": 0, "refused": 0, "missing": 0}
        for name in api_names(os.path.join(root, rel)):
            state, note = status.classify(module, name)
            c[state] += 1
            if state != "implemented":
                rows.append(f"| `{module}.{name}` | {state} | {note} |")
    total = {k: sum(c[k] for c in counts.values()) for k in ("implemented", "partial", "refused", "missing")}
    lines = ["| module | names | implemented | partial | refused with a clear error | missing |", "|---|---|---|---|---|---|"]
    for module, c in {**counts, "total": total}.items():
        lines.append(f"| {'`' + module + '`' if module != 'total' else '**total**'} | {sum(c.values())} | "
                     f"{c['implemented']} | {c['partial']} | {c['refused']} | {c['missing']} |")
    lines += ["", "| name | state | note |", "|---|---|---|", *rows]
    return "\n".join(lines), counts


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__)
        return 2
    text, _ = table(argv[0])
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
