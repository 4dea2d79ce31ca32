"""The package's layers (docs/layout.md): each imports only the layers below it, no import circle, and no
project import inside a function, read from the source's import statements."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# lowest first; a layer may import its own modules and those of earlier layers (training and rlhf: neither the other)
LAYERS = [("config",), ("nn",), ("envs",), ("algorithms",), ("training", "rlhf"), ("pipeline",)]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_imports(path: Path) -> list[tuple[str, ast.AST, bool]]:
    """(imported module, node, at top level) for each import of a ppo or analysis module in ``path``."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            # `from . import x` and `from ppo.pipeline import study`: the module x, when it is one
            targets = [f"{target}.{a.name}" if (ROOT / f"{target}.{a.name}".replace(".", "/")).exists()
                       or (ROOT / (f"{target}.{a.name}".replace(".", "/") + ".py")).exists() else target
                       for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        found += [(t, node, id(node) in top) for t in targets if t.split(".")[0] in ("ppo", "analysis")]
    return found


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "ppo" and len(parts) > 1 else None


def graph() -> dict[str, set[str]]:
    edges = {}
    for path in sorted((ROOT / "ppo").rglob("*.py")) + sorted((ROOT / "analysis").rglob("*.py")):
        edges[module_name(path)] = {t for t, _, _ in project_imports(path)}
    return edges


def test_every_module_imports_only_the_layers_below_it():
    wrong = []
    for path in sorted((ROOT / "ppo").rglob("*.py")):
        source = module_name(path)
        if source == "ppo":  # the package registers the algorithms, so that every config sees all of them
            continue
        for target, node, _ in project_imports(path):
            if target.startswith("analysis"):
                wrong.append(f"{source} imports {target} (analysis reads the records; ppo never reads analysis)")
                continue
            mine, theirs = layer(source), layer(target)
            if theirs is None or mine == theirs:
                continue
            if theirs not in RANK or RANK[theirs] > RANK[mine] or (RANK[theirs] == RANK[mine]):
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: {source} ({mine}) imports {target} ({theirs})")
    assert not wrong, "\n".join(wrong)
    assert set(RANK) == {p.name for p in (ROOT / "ppo").iterdir() if (p / "__init__.py").exists()}


def test_no_import_circle():
    edges = graph()
    modules = set(edges)
    edges = {m: {t for t in targets if t in modules and t != m} for m, targets in edges.items()}
    done, stack, circles = set(), [], []

    def visit(m):
        if m in stack:
            circles.append(stack[stack.index(m):] + [m])
            return
        if m in done:
            return
        stack.append(m)
        for t in sorted(edges[m]):
            visit(t)
        stack.pop()
        done.add(m)

    for m in sorted(modules):
        visit(m)
    # a package's __init__ importing its own submodules is not a circle of the code (ppo -> ppo.algorithms)
    circles = [c for c in circles if not all(x == "ppo" or x.startswith("ppo.algorithms") for x in c)]
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


def test_no_project_import_inside_a_function():
    deferred = [f"{path.relative_to(ROOT)}:{node.lineno}: {target}"
                for path in sorted((ROOT / "ppo").rglob("*.py")) + sorted((ROOT / "analysis").rglob("*.py"))
                for target, node, top in project_imports(path) if not top]
    assert not deferred, "\n".join(deferred)
