"""python -m tools.generated [--check]: rewrite every generated file and doc section, or name the drifted ones."""

from __future__ import annotations

import sys

from tools.generated import outputs


def main(argv: list[str]) -> int:
    check = "--check" in argv
    drifted = []
    if not check:  # the doc sections render the chart, which reads the generated files: those first
        for path, render in outputs.FILES.items():
            if not path.exists() or path.read_text() != render():
                path.write_text(render())
                drifted.append(path.relative_to(outputs.ROOT))
    for path, text in outputs.render_all().items():
        current = path.read_text() if path.exists() else None
        if current == text:
            continue
        drifted.append(path.relative_to(outputs.ROOT))
        if not check:
            path.write_text(text)
    for path in drifted:
        print(f"{'drifted' if check else 'rewrote'}: {path}")
    return 1 if check and drifted else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
