"""Every key of schemas/config.schema.yaml is read by the code: no setting is silently ignored.

What "read" means (a static trace of the code, `ConfigTrace`; the check is `unread_keys`):

Config objects are traced through the workflow (Snakefile and rules/*.smk, compiled by Snakemake's own
parser), the `script:` entry points and the xling package. An object starts at a root:
  - `config` in the workflow; `snakemake.config` in a script;
  - `snakemake.params.<p>` in a script: the value of param `p` in the rules whose `script:` it is;
  - `{params.<p>}` in the `shell:` of a rule that runs `python -m <module>`: the parameters named `p` of
    that module's functions.
It stays traced through
  - subscripts and `.get` (the path grows by the literal key, or by each string constant the key's name can
    hold: a literal, a tuple or list of them, a dict of such tuples subscripted by any key; an f-string with
    constant parts is a glob naming every key it matches (`SENT[f"{task}_pooling"]`); any other key adds "*",
    which matches only the "*" of a map in the schema: synthetic.languages.*);
  - names bound to it (assignment, tuple unpacking, `for k, v in obj.items()`), `obj or {}`, `a if c else b`,
    filtered copies (`{k: v for k, v in obj.items() if ...}`, `{k: obj[k] for k in keys}`, `{**obj, ...}`,
    `dict(obj)`, `json.dumps(obj)`);
  - calls of workflow or xling functions (also re-exported by a package's __init__): into the parameters
    they bind (by position or keyword), out through `return`, and the result of such a call is the object
    again (a defaults-merged copy: `_merge(DEFAULTS, data_config)`, `resolve_spec(spec)`);
  - instances of classes in the code: what their attributes are assigned (`self.config = ...`, dataclass
    fields) and what their properties return; a parameter annotated with the class is such an instance.
A leaf key a.b.c is read when a traced expression reaches a.b.c (or below it, e.g. one entry of a map), when
`obj.items()` of a traced a.b filtered by `k in ("c", ...)` is copied, or when a traced a.b is unpacked as
keywords (`f(**obj)`) into a function that has a parameter named c. Looping over an object's entries counts
only for the objects in ITERATED, and only while the function named there loops over them (merging
defaults and listing settings in the report loop over every key too). A rule's `threads:` and `resources:`
are workflow code like any other: their subscripts read (scripts get them as snakemake.resources.<name>).
Nothing else counts: the key in a comment, in a string, in a dict literal (a module's DEFAULTS, the schema's
own defaults), or the same name under another object (`language.sentence_retrieval.block` does not read
`retrieval.block`). The trace is flow-insensitive (a name holds everything ever bound to it), so it passes a
key read only on a path no run takes, or read and then overridden; a key it reports is read by none of the
patterns above (a pattern it does not follow, such as getattr, makes it fail: keep config access plain).
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import re
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

# Calls that return (a copy of) their argument; any other library call ends the trace.
TRANSPARENT_CALLS = {"dict", "deepcopy", "copy", "dumps", "loads"}
PARAM_FIELD = re.compile(r"\{params\.(\w+)(?::q)?\}")  # a param in a rule's shell command or message (quoted or not)
MAX_DEPTH = 8  # deeper than any schema key: a recursive walk over a config object stops growing here


@dataclass(frozen=True)
class Func:
    """A function or class definition."""

    module: str
    name: str  # qualified: Class.method, outer.inner

    @property
    def scope(self) -> tuple[str, str]:
        return self.module, self.name


@dataclass(frozen=True)
class Inst(Func):
    """An instance of a class defined in the code."""


@dataclass(frozen=True)
class Marker:
    """A non-config value the trace follows: snakemake or snakemake.params of a script, or a module."""

    kind: str  # "snakemake" | "params" | "module"
    name: str


class Str(str):
    """A string constant a name can hold (a possible subscript key)."""


class Pattern(Str):
    """An f-string key: a glob ("*" for each formatted part) that may name any key it matches."""


def is_path(value) -> bool:
    """Config paths are plain tuples of keys; every other abstract value has its own type."""
    return type(value) is tuple


def compile_smk(path: Path) -> str:
    """Python source of a Snakefile or .smk file, as Snakemake compiles it."""
    import snakemake.api  # noqa: F401  (imports snakemake.workflow first, as Snakemake does)
    from snakemake.parser import parse

    source = types.SimpleNamespace(get_path_or_uri=lambda secret_free=True: str(path))
    workflow = types.SimpleNamespace(
        sourcecache=types.SimpleNamespace(open=lambda src: open(src.get_path_or_uri(), encoding="utf-8"))
    )
    return parse(source, workflow, {})[0]


def schema_leaves(schema: dict, prefix: tuple = (), root: dict | None = None) -> list[tuple]:
    """Key paths of the schema's leaves; a map's entries (additionalProperties with properties) are '*'; a
    `$ref: '#/definitions/x'` block has the leaves of the definition."""
    root = root or schema
    leaves = []
    for key, node in (schema.get("properties") or {}).items():
        if "$ref" in node:
            node = {**_resolve(root, node["$ref"]), **{k: v for k, v in node.items() if k != "$ref"}}
        entry = node.get("additionalProperties")
        if node.get("properties"):
            leaves += schema_leaves(node, prefix + (key,), root)
        elif isinstance(entry, dict) and entry.get("properties"):
            leaves += schema_leaves(entry, prefix + (key, "*"), root)
        else:
            leaves.append(prefix + (key,))
    return leaves


def _resolve(root: dict, ref: str) -> dict:
    node = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _arg_names(node: ast.FunctionDef) -> list[str]:
    return [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]


def _is_items_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "items"


def _copies_by_key(node: ast.DictComp) -> bool:
    """{key: obj[key] for key in ...}: a copy of obj (the keys it holds are read where it is subscripted)."""
    value, gens = node.value, node.generators
    return (
        isinstance(node.key, ast.Name)
        and isinstance(value, ast.Subscript)
        and isinstance(value.slice, ast.Name)
        and value.slice.id == node.key.id
        and len(gens) == 1
        and getattr(gens[0].target, "id", None) == node.key.id
    )


class ConfigTrace:
    """Config paths the code reads (see the module docstring): `reads`, from a fixed point over all files."""

    def __init__(self, root: Path):
        smk = [root / "Snakefile", *sorted((root / "rules").glob("*.smk"))]
        self.trees: dict[str, ast.Module] = {"workflow": ast.parse("\n".join(compile_smk(p) for p in smk))}
        for path in sorted((root / "scripts").glob("*.py")):
            self.trees[f"scripts/{path.name}"] = ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted((root / "xling").rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            self.trees[module] = ast.parse(path.read_text(encoding="utf-8"))
        self.defs: dict[Func, ast.AST] = {}
        for module, tree in self.trees.items():
            self._index(module, tree, "")
        self.imports = {module: self._imports(tree) for module, tree in self.trees.items()}
        self.family = self._class_families()
        self.params: dict[tuple[str, str], list[ast.expr]] = {}  # (script, param) -> the rules' expressions
        self.params_read: set[tuple[str, str]] = set()  # (script, param): the script reads the param
        self.shell_params: list[tuple[str, str, ast.expr]] = []  # (module run by `python -m`, param, expression)
        self._rules()
        self.env: dict[tuple, set] = {}
        self.reads: set[tuple] = set()
        self.iterated: set[tuple] = set()  # (scope, path): the function loops over path's .items()
        self.changed = True
        while self.changed:
            self.changed = False
            for module, tree in self.trees.items():
                self._walk(tree, (module, ""))
            for module, name, expr in self.shell_params:
                values = self.resolve(expr, ("workflow", ""))
                for func, node in self.defs.items():
                    if func.module == module and isinstance(node, ast.FunctionDef) and name in _arg_names(node):
                        self._bind(func.scope, name, values)

    # -- indexing ------------------------------------------------------------------------------------
    def _index(self, module: str, node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[Func(module, prefix + child.name)] = child
                self._index(module, child, f"{prefix}{child.name}.")
            elif not isinstance(child, ast.expr):
                self._index(module, child, prefix)

    def _class_families(self) -> dict[Func, set[Func]]:
        """Each class of the code -> the classes it shares an inheritance tree with (itself, its bases and their
        subclasses: a mixin's `self` is the class that combines it), so a member or attribute of any of them is
        found on an instance of any (flow-insensitive, like the rest of the trace)."""
        family = {func: {func} for func, node in self.defs.items() if isinstance(node, ast.ClassDef)}
        for func in list(family):
            for base in self.defs[func].bases:
                module, name = func.module, getattr(base, "id", "")
                found = Func(module, name) if Func(module, name) in family else self.imports[module].get(name)
                if found in family and found != func:
                    merged = family[func] | family[found]
                    for member in merged:
                        family[member] = merged
        return family

    def _imports(self, tree: ast.Module) -> dict[str, object]:
        names: dict[str, object] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xling"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    names[alias.asname or alias.name] = (
                        Marker("module", sub) if sub in self.trees else Func(node.module, alias.name)
                    )
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in self.trees:
                        names[alias.asname] = Marker("module", alias.name)
        return names

    def _text(self, node: ast.expr) -> str:
        """A string argument: a literal, or a name the workflow assigns one to (a shell command shared by rules)."""
        if isinstance(node, ast.Name):
            node = next(
                n.value
                for n in ast.walk(self.trees["workflow"])
                if isinstance(n, ast.Assign)
                and any(isinstance(target, ast.Name) and target.id == node.id for target in n.targets)
            )
        return node.value

    def _rules(self) -> None:
        """Params of each rule, keyed by the script that reads them or the module its shell command runs."""
        for node in ast.walk(self.trees["workflow"]):
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("__rule")):
                continue
            calls = {
                d.func.attr: self._text(d.args[0]) if d.func.attr in ("script", "message", "shellcmd") else d
                for d in node.decorator_list
                if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
            }
            params = {k.arg: k.value for k in calls["params"].keywords} if "params" in calls else {}
            params.pop("code", None)  # the code version (xling.plan.code): Snakemake compares it, no script reads it
            script = "scripts/" + Path(calls["script"]).name if "script" in calls else None
            for name, expr in params.items() if script else ():
                self.params.setdefault((script, name), []).append(expr)
            for text in ("message", "shellcmd"):  # `{params.x}` in these strings reads x
                self.params_read |= {(script, name) for name in PARAM_FIELD.findall(calls.get(text, ""))}
            for module in re.findall(r"-m (xling[\w.]*)", calls.get("shellcmd", "")):
                self.shell_params += [(module, name, params[name]) for name in PARAM_FIELD.findall(calls["shellcmd"])]

    # -- binding --------------------------------------------------------------------------------------
    def _bind(self, scope: tuple, name: str, values: set) -> None:
        values = {v[:MAX_DEPTH] if is_path(v) else v for v in values}
        have = self.env.setdefault((scope, name), set())
        if not values <= have:
            have |= values
            self.changed = True

    def _lookup(self, scope: tuple, name: str) -> set:
        module, qual = scope
        while True:
            if ((module, qual), name) in self.env:
                return self.env[((module, qual), name)]
            func = Func(module, f"{qual}.{name}" if qual else name)
            if func in self.defs:
                return {func}
            if not qual:
                break
            qual = qual.rpartition(".")[0]
        if name == "config" and module == "workflow":
            return {()}
        if name == "snakemake" and module.startswith("scripts/"):
            return {Marker("snakemake", module)}
        return {self._imported(module, name)} if name in self.imports[module] else set()

    def _imported(self, module: str, name: str):
        """What `name` imported in `module` is, through re-exports (`from xling.report import render_report`)."""
        value = self.imports[module][name]
        while type(value) is Func and value not in self.defs and value.name in self.imports.get(value.module, {}):
            value = self.imports[value.module][value.name]
        return value

    def _walk(self, node: ast.AST, scope: tuple) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = (scope[0], f"{scope[1]}.{node.name}" if scope[1] else node.name)
            for expr in node.decorator_list + getattr(getattr(node, "args", None), "defaults", []):
                self._walk(expr, scope)
            if isinstance(node, ast.ClassDef):
                for method, mnode in self.defs.items():
                    if (
                        method.module == scope[0]
                        and method.name.startswith(inner[1] + ".")
                        and not isinstance(mnode, ast.ClassDef)
                    ):
                        self._bind(method.scope, "self", {Inst(*inner)})
            else:
                for arg in node.args.args + node.args.kwonlyargs:  # `ctx: ReportContext`
                    cls = self._lookup(scope, getattr(arg.annotation, "id", "")) if arg.annotation else set()
                    self._bind(
                        inner, arg.arg, {Inst(*c.scope) for c in cls if isinstance(self.defs.get(c), ast.ClassDef)}
                    )
            for child in node.body:
                self._walk(child, inner)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            values = self.resolve(node.value, scope)
            for target in getattr(node, "targets", [getattr(node, "target", None)]):
                self._assign(target, node.value, values, scope)
        elif isinstance(node, (ast.For, ast.comprehension)):
            self._iterate(node, scope)
        elif isinstance(node, ast.Return) and node.value is not None:
            self._bind(scope, "<return>", self.resolve(node.value, scope))
        elif isinstance(node, ast.expr):
            self.resolve(node, scope)
        for child in ast.iter_child_nodes(node):
            self._walk(child, scope)

    def _assign(self, target: ast.expr, value: ast.expr | None, values: set, scope: tuple) -> None:
        if isinstance(target, ast.Name):
            self._bind(scope, target.id, values)
        elif isinstance(target, ast.Attribute):  # self.config = ...
            for inst in self.resolve(target.value, scope):
                if isinstance(inst, Inst):
                    self._bind(inst.scope, f"attr:{target.attr}", values)
        elif isinstance(target, ast.Tuple):
            literal = isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts)
            pairs = zip(target.elts, value.elts, strict=True) if literal else ((t, None) for t in target.elts)
            for t, v in pairs:  # element by element when literal, else every target may hold any part
                self._assign(t, v, self.resolve(v, scope) if v is not None else values, scope)

    def _iterate(self, loop: ast.For | ast.comprehension, scope: tuple) -> None:
        """Bind a loop target: the strings of a literal sequence, or the entries of a traced object."""
        iterable, target = loop.iter, loop.target
        values = self.resolve(iterable, scope)
        entries = {v + ("*",) for v in values if is_path(v)}
        self.iterated |= {(scope, e[:-1]) for e in entries}  # `for k in obj` or `for k, v in obj.items()`
        if not entries:  # the strings of a sequence (`for key in ("a", "b")`, or a name bound to one)
            return self._assign(target, None, {v for v in values if isinstance(v, Str)}, scope)
        if _is_items_call(iterable) and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            self._assign(target.elts[1], None, entries, scope)
            key = target.elts[0]
            for cond in getattr(loop, "ifs", []):  # {k: v for k, v in obj.items() if k in ("a", "b")}
                for test in ast.walk(cond):
                    if (
                        isinstance(test, ast.Compare)
                        and isinstance(test.ops[0], ast.In)
                        and isinstance(test.left, ast.Name)
                        and getattr(key, "id", None) == test.left.id
                    ):
                        kept = test.comparators[0]
                        elts = kept.elts if isinstance(kept, (ast.Tuple, ast.List, ast.Set)) else [kept]
                        names = {v for e in elts for v in self.resolve(e, scope) if isinstance(v, Str)}
                        self.reads |= {e[:-1] + (n,) for e in entries for n in names}
        else:
            self._assign(target, None, entries, scope)

    # -- values ---------------------------------------------------------------------------------------
    def resolve(self, node: ast.expr, scope: tuple) -> set:
        """Abstract values of an expression: config paths (tuples), Str, Func, Inst and Marker values."""
        r = self.resolve
        if isinstance(node, ast.Constant):
            return {Str(node.value)} if isinstance(node.value, str) else set()
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):  # a sequence of keys: the strings it holds
            return {v for e in node.elts for v in r(e, scope) if isinstance(v, Str)}
        if isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.Constant) for v in node.values):
            return {Pattern("".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values))}
        if isinstance(node, ast.Name):
            return set(self._lookup(scope, node.id))
        if isinstance(node, ast.Attribute):
            return self._attribute(r(node.value, scope), node.attr)
        if isinstance(node, ast.Subscript):
            return self._subscript(node.value, r(node.value, scope), r(node.slice, scope), scope)
        if isinstance(node, ast.BoolOp):
            return set().union(*(r(v, scope) for v in node.values))
        if isinstance(node, ast.IfExp):
            return r(node.body, scope) | r(node.orelse, scope)
        if isinstance(node, ast.Lambda):
            return r(node.body, scope)
        if isinstance(node, ast.Dict):  # {**obj, "k": v} is (a copy of) obj; {"a": f, "b": g} holds functions
            return {
                v
                for k, e in zip(node.keys, node.values, strict=True)
                for v in r(e, scope)
                if (k is None and is_path(v)) or type(v) is Func
            }
        if isinstance(node, ast.DictComp) and _copies_by_key(node):  # {key: obj[key] for key in keys}
            return {v for v in r(node.value.value, scope) if is_path(v)}
        if isinstance(node, (ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return {v for g in node.generators for v in r(g.iter, scope) if is_path(v)}
        if isinstance(node, ast.Starred):
            return r(node.value, scope)
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        return set()

    def _attribute(self, values: set, attr: str) -> set:
        out: set = set()
        for v in values:
            if isinstance(v, Marker) and v.kind == "snakemake":
                out |= {()} if attr == "config" else {Marker("params", v.name)} if attr == "params" else set()
            elif isinstance(v, Marker) and v.kind == "params":
                out |= self._params(v.name, {attr})
            elif isinstance(v, Marker):  # module.name
                sub = f"{v.name}.{attr}"
                out |= {Marker("module", sub)} if sub in self.trees else {Func(v.name, attr)} & self.defs.keys()
            elif isinstance(v, Inst):
                for cls in self.family.get(Func(*v.scope), {Func(*v.scope)}):
                    member = Func(cls.module, f"{cls.name}.{attr}")
                    node = self.defs.get(member)
                    if isinstance(node, ast.FunctionDef) and any(
                        getattr(d, "id", None) == "property" for d in node.decorator_list
                    ):
                        out |= self.env.get((member.scope, "<return>"), set())
                    elif node is not None:
                        out.add(member)
                    else:
                        out |= self.env.get((cls.scope, f"attr:{attr}"), set())
        return out

    def _params(self, script: str, names: set) -> set:
        self.params_read |= {(script, name) for name in names}
        exprs = [e for name in names for e in self.params.get((script, name), [])]
        return {v for e in exprs for v in self.resolve(e, ("workflow", ""))}

    def _subscript(self, base: ast.expr, values: set, keys: set, scope: tuple) -> set:
        out: set = set()
        if isinstance(base, ast.Dict):  # {name: function, ...}[key], {task: ("key", ...), ...}[task]
            out |= {v for e in base.values for v in self.resolve(e, scope) if type(v) is Func or isinstance(v, Str)}
        names = {k for k in keys if isinstance(k, Str)} or {"*"}
        for v in values:
            if isinstance(v, Marker) and v.kind == "params":
                out |= self._params(v.name, names)
            elif is_path(v):
                out |= {v + (k,) for k in names}
        self.reads |= {p for p in out if is_path(p)}
        return out

    def _call(self, node: ast.Call, scope: tuple) -> set:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("get", "items", "copy"):
            owner = self.resolve(func.value, scope)
            if any(is_path(v) or isinstance(v, Marker) and v.kind == "params" for v in owner):
                if func.attr != "get":
                    return {v for v in owner if is_path(v)}
                keys = self.resolve(node.args[0], scope) if node.args else set()
                return self._subscript(func.value, owner, keys, scope)
        args = [(i, a) for i, a in enumerate(node.args)] + [(k.arg, k.value) for k in node.keywords]
        values = {key: self.resolve(a, scope) for key, a in args}
        callees = [f for f in self.resolve(func, scope) if type(f) is Func and f in self.defs]
        out: set = set()
        for callee in callees:
            out |= self._enter(callee, values)
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if any(not isinstance(self.defs[c], ast.ClassDef) for c in callees) or name in TRANSPARENT_CALLS:
            out |= {v for vs in values.values() for v in vs if is_path(v)}
        return out

    def _enter(self, callee: Func, values: dict) -> set:
        """Bind call arguments to the callee's parameters; the call's value is what it returns."""
        node = self.defs[callee]
        if isinstance(node, ast.ClassDef):  # __init__, or a dataclass's fields in order
            init = Func(callee.module, f"{callee.name}.__init__")
            if init in self.defs:
                self._enter(init, values)
            else:
                fields = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign)]
                for key, vals in values.items():
                    field = fields[key] if isinstance(key, int) and key < len(fields) else key
                    if isinstance(field, str):
                        self._bind(callee.scope, f"attr:{field}", vals)
            return {Inst(*callee.scope)}
        names = _arg_names(node)
        positional = [a.arg for a in node.args.posonlyargs + node.args.args]
        positional = positional[1:] if positional[:1] in (["self"], ["cls"]) else positional
        for key, vals in values.items():
            if key is None:  # f(**obj): each parameter the function names reads obj.<parameter>
                self.reads |= {v + (n,) for v in vals if is_path(v) for n in names}
            elif isinstance(key, int):
                if key < len(positional):
                    self._bind(callee.scope, positional[key], vals)
            elif key in names:
                self._bind(callee.scope, key, vals)
        return set(self.env.get((callee.scope, "<return>"), set()))


# Objects whose entries the code consumes by looping over them (one output per entry), with the function
# that must do so: their keys are read when the trace sees that function loop over the object (`for k in obj`
# or `for k, v in obj.items()`). (Iteration in general does not count: merging defaults, checking values and
# showing settings iterate every key too.)
ITERATED = {
    ("synthetic", "ud_sentences"): ("xling.data.synthetic.write", "generate"),
    ("synthetic", "bucc_sentences"): ("xling.data.synthetic.write", "generate"),
    ("synthetic", "xnli_pairs"): ("xling.data.synthetic.write", "generate"),
    ("synthetic", "ner_sentences"): ("xling.data.synthetic.write", "generate"),
}


def unread_keys(schema: dict, trace: ConfigTrace, iterated: dict = ITERATED) -> list[str]:
    """Dotted schema keys that no code reads (the rule in the module docstring)."""
    looped = [path for path, scope in iterated.items() if (scope, path) in trace.iterated]
    return [
        ".".join(leaf)
        for leaf in schema_leaves(schema)
        if not any(
            len(p) >= len(leaf) and all(_key_matches(k, r) for k, r in zip(leaf, p, strict=False)) for p in trace.reads
        )
        and not any(leaf[: len(p)] == p for p in looped)
    ]


def _key_matches(schema_key: str, read: str) -> bool:
    """A read key names a schema key: the same key, a map's "*" or an f-string pattern that matches it."""
    return schema_key in ("*", read) or isinstance(read, Pattern) and fnmatch.fnmatchcase(schema_key, read)


def load_schema(path: Path = REPO / "schemas/config.schema.yaml") -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def repo_trace() -> ConfigTrace:
    return ConfigTrace(REPO)


@pytest.mark.slow
def test_every_schema_key_is_read_by_the_code(repo_trace):
    assert unread_keys(load_schema(), repo_trace) == []


@pytest.mark.slow
def test_every_script_param_is_read_by_its_script(repo_trace):
    """A rule param its script never reads (nor its message) is a setting wired halfway."""
    assert sorted(set(repo_trace.params) - repo_trace.params_read) == []


@pytest.mark.slow
def test_a_planted_unused_key_fails_the_check(repo_trace):
    schema = load_schema()
    schema["properties"]["retrieval"]["properties"]["unused_knob"] = {"type": "integer", "default": 1}
    schema["properties"]["synthetic"]["properties"]["languages"]["additionalProperties"]["properties"]["dialect"] = {}
    assert unread_keys(schema, repo_trace) == ["synthetic.languages.*.dialect", "retrieval.unused_knob"]


@pytest.mark.slow
def test_a_loop_that_no_longer_runs_does_not_read(repo_trace):
    moved = {path: ("xling.data.synthetic.language", "build") for path in ITERATED}
    assert unread_keys(load_schema(), repo_trace, moved) == [
        f"synthetic.{group}.{split}"
        for group, splits in (
            ("ud_sentences", ("train", "dev", "test")),
            ("bucc_sentences", ("dev", "test")),
            ("xnli_pairs", ("train", "dev", "test")),
            ("ner_sentences", ("train", "dev", "test")),
        )
        for split in splits
    ]


MINI_SCHEMA = {
    "properties": {
        "a": {"properties": {"x": {}, "y": {}, "z": {}}},
        "b": {"properties": {"k": {}, "unused": {}, "block": {}}},
        "c": {"properties": {"block": {}}},
        "hp": {"properties": {"dim": {}, "seed": {}, "other": {}}},
        "d": {"properties": {"w": {}, "v": {}}},
        "e": {"properties": {"h": {}, "i": {}}},
        "m": {"additionalProperties": {"properties": {"knob": {}, "left": {}}}},
    }
}

MINI_FILES = {
    "Snakefile": """
A = config["a"]
X = config["a"]["x"]
Y = config["a"].get("y")


include: "rules/r.smk"
""",
    "rules/r.smk": """
from xling.mod import Wrapper

S = Wrapper(config["d"])


rule r:
    params:
        settings=config["b"],
        hp=config["hp"],
        z=A["z"],
        c_block=config["c"]["block"],
        w=S.cfg["w"],
        knobs=config["m"],
        shown=X,
        orphan=Y,
    message:
        "r with {params.shown}"
    script:
        "../scripts/s.py"


rule t:
    params:
        e=config["e"],
    shell:
        "python -m xling.mod --e '{params.e}'"
""",
    "scripts/s.py": """
from xling.mod import train, per_language

# snakemake.params.settings["unused"] is only a comment; "block" only a string
s = snakemake.params.settings
print(s["k"], "unused", "block", snakemake.params.z, snakemake.params["c_block"], snakemake.params.get("w"))
train(**snakemake.params.hp)
per_language(snakemake.params.knobs)
""",
    "xling/__init__.py": "",
    "xling/mod.py": """
class Wrapper:
    def __init__(self, cfg):
        self.cfg = cfg


def train(dim, seed=1):
    return dim, seed


def per_language(table):
    for lang, knobs in table.items():
        print(lang, knobs["knob"])


def main(e):
    return e["h"]
""",
}


def test_the_trace_on_a_small_workflow(tmp_path):
    """Each way of reading counts, and nothing else: a comment, a string, a same-named key elsewhere,
    a sibling of a key passed as keywords, an attribute of a wrapper that is never read."""
    for name, text in MINI_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    trace = ConfigTrace(tmp_path)
    assert unread_keys(MINI_SCHEMA, trace, {}) == ["b.unused", "b.block", "hp.other", "d.v", "e.i", "m.*.left"]
    assert set(trace.params) - trace.params_read == {("scripts/s.py", "orphan")}


HELPER_SCHEMA = {
    "properties": {
        "t": {"properties": {"p": {}, "q": {}, "one_pooling": {}, "two_pooling": {}, "spare": {}}},
        "r": {"properties": {"title": {}, "hidden": {}}},
        "n": {"properties": {"sizes": {"properties": {"dev": {}, "test": {}}}}},
    }
}

HELPER_FILES = {
    "Snakefile": """
def task_settings(wildcards):
    keys = {"one": ("p",), "two": ("q",)}[wildcards.task]
    return {**{key: config["t"][key] for key in keys}, "pooling": config["t"][f"{wildcards.task}_pooling"]}


def shown_config():
    keys = ["r", "n"]
    return {key: config[key] for key in keys if key in config}


rule r:
    params:
        settings=task_settings,
        config=shown_config(),
    script:
        "scripts/s.py"
""",
    "scripts/s.py": """
from xling.pkg import render, make

print(snakemake.params.settings["pooling"])
render(snakemake.params.config)
make(snakemake.params.config["n"])
""",
    "xling/__init__.py": "",
    "xling/pkg/__init__.py": "from xling.pkg.core import render, make  # noqa: F401",
    "xling/pkg/core.py": """
def render(config):
    return config["r"]["title"]


def make(cfg):
    for split in cfg["sizes"]:
        print(split)
""",
}


def test_the_trace_through_helpers_that_build_params(tmp_path):
    """Settings dicts built from a tuple of keys (chosen by a wildcard), an f-string key, a copy of chosen top-level
    blocks passed to a function re-exported by a package, a loop over a block's keys: each reads what it names."""
    for name, text in HELPER_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    trace = ConfigTrace(tmp_path)
    unread = ["t.spare", "r.hidden", "n.sizes.dev", "n.sizes.test"]
    assert unread_keys(HELPER_SCHEMA, trace, {}) == unread
    assert unread_keys(HELPER_SCHEMA, trace, {("n", "sizes"): ("xling.pkg.core", "make")}) == unread[:2]
    assert unread_keys(HELPER_SCHEMA, trace, {("n", "sizes"): ("xling.pkg.core", "render")}) == unread


# ------------------------------------------------------------------------------------------------------
# The keys this check found ignored, now wired: the rule (as Snakemake loads it with a preset and an override)
# runs its script, and the setting changes what the script computes or passes on.


@pytest.fixture
def workflow(tmp_path, monkeypatch):
    """load(overrides) -> the Snakemake workflow of presets/test.yaml + overrides (nested, as --configfile)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    monkeypatch.chdir(tmp_path)  # Snakemake changes into the working directory

    def load(overrides: dict | None = None):
        with SnakemakeApi(OutputSettings()) as api:
            return api.workflow(
                ResourceSettings(),
                ConfigSettings(configfiles=[REPO / "presets/test.yaml"], config=overrides or {}),
                snakefile=REPO / "Snakefile",
                workdir=tmp_path,
            )._workflow

    return load


@pytest.fixture
def run_rule_script(tmp_path, monkeypatch):
    """run(workflow, rule, input, output, wildcards): the rule's `script:` with its params and resources (the
    rule's own `resources:`, as set in its config), as Snakemake runs it."""
    import logging
    import runpy
    import sys

    from snakemake.iocontainers import InputFiles, Log, OutputFiles, Params, ResourceList, Snakemake, Wildcards

    import torch

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # scripts install their own (xling.logs)
    handlers, level, threads = logging.root.handlers[:], logging.root.level, torch.get_num_threads()

    def named(cls, files):
        """Snakemake's container of input or output files; a named list of files keeps its name."""
        if not isinstance(files, dict):
            return cls([str(f) for f in files])
        container = cls([])
        for name, value in files.items():
            start = len(container)
            container.extend(str(f) for f in (value if isinstance(value, list) else [value]))
            container._set_name(name, start, len(container) if isinstance(value, list) else None)
        return container

    def run(workflow, rule_name, input, output, wildcards=None):
        rule = workflow.get_rule(rule_name)
        wc = Wildcards(fromdict=wildcards or {})
        params = Params(fromdict={k: v(wc) if callable(v) else v for k, v in rule.params.items()})
        # the values a job sees (Snakemake 9 keeps a rule's resources as Resource objects until a job evaluates them)
        resources = ResourceList(
            fromdict={
                k: v.value if hasattr(v, "is_evaluable") else v
                for k, v in rule.resources.items()
                if not callable(v) and not (hasattr(v, "is_evaluable") and v.is_evaluable())
            }
        )
        snakemake = Snakemake(
            named(InputFiles, input),
            named(OutputFiles, output),
            params,
            wc,
            1,
            resources,
            Log([str(tmp_path / f"{rule_name}.log")]),
            workflow.config,
            rule_name,
            None,
        )
        runpy.run_path(str(REPO / "scripts" / Path(rule.script).name), init_globals={"snakemake": snakemake})
        return params

    yield run
    for handler in logging.root.handlers:
        if handler not in handlers:
            handler.close()
    logging.root.handlers[:], logging.root.level = handlers, level
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_corpus_dedup_reaches_the_cleaning(workflow, run_rule_script, tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text("A cat sat.\nA dog ran.\n\nA cat sat.\nBirds fly.\n", encoding="utf-8")
    kept = {}
    for dedup in (True, False):
        out = tmp_path / f"dedup-{dedup}.txt"
        run_rule_script(workflow({"corpus": {"dedup": dedup}}), "prepare_corpus", [raw], [out])
        kept[dedup] = [line for line in out.read_text(encoding="utf-8").splitlines() if line]
    assert kept[True] == ["A cat sat.", "A dog ran.", "Birds fly."]
    assert kept[False] == ["A cat sat.", "A dog ran.", "A cat sat.", "Birds fly."]


@pytest.mark.slow
def test_tokenizer_limit_alphabet_caps_the_trained_characters(workflow, run_rule_script, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog\n" * 20, encoding="utf-8")
    singles = {}
    for limit in (5, 1000):
        vocab = tmp_path / f"vocab-{limit}.txt"
        run_rule_script(
            workflow({"tokenizer": {"vocab": "train", "limit_alphabet": limit}}),
            "train_vocab",
            {"corpora": [corpus]},
            [vocab],
        )
        singles[limit] = {t for t in vocab.read_text(encoding="utf-8").split() if len(t) == 1}
    assert len(singles[1000]) == len(set("thequickbrownfoxjumpsoverthelazydog")) == 26
    # the 5 most frequent characters: o 4, e 3, then three of h r t u (2 each) by code point
    assert singles[5] == set("oehrt")


@pytest.mark.slow
def test_represent_max_length_caps_the_extraction_chunks(workflow, run_rule_script, tmp_path, monkeypatch):
    import xling.represent.store

    calls = []
    monkeypatch.setattr(xling.represent.store, "extract_bert_shard", lambda *a: calls.append(a[-1]))
    words = [tmp_path / f"{lang}.words" for lang in ("en", "xa", "xe")]
    for path in words:
        path.write_text("a\n", encoding="utf-8")
    inputs = {"model": tmp_path, "text": words, "words": words}
    outputs = {"words": words, "langs": words}
    for cap, window, expect in ((None, "32", 32), (8, "32", 8), (100, "32", 32)):
        run_rule_script(
            workflow({"represent": {"max_length": cap}}),
            "bert_extract",
            inputs,
            outputs,
            {"lm": f"bert/500-w{window}", "shard": "0"},
        )
        assert {settings.max_length for settings in calls} == {expect}
        calls.clear()


def test_retrieval_block_reaches_the_ranking_without_a_param(workflow, run_rule_script, tmp_path, monkeypatch):
    import pandas as pd

    import xling.evaluate.word_retrieval

    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return pd.DataFrame({"layer": [0], "mrr": [1.0]}), pd.DataFrame({"layer": [0], "word": ["a"]})

    monkeypatch.setattr(xling.evaluate.word_retrieval, "word_retrieval", spy)
    wf = workflow({"retrieval": {"block": 7}, "tokenizer": {"lowercase": True}})
    params = run_rule_script(
        wf,
        "word_retrieval",
        {"words": "w", "dictionaries": ["d1", "d2"], "function_dictionaries": [], "counts": "c"},
        {"table": tmp_path / "out.parquet", "ranks": tmp_path / "out.ranks.parquet"},
        {"lm": "glove/500-w8"},
    )
    assert [(kw["block"], kw["lowercase"]) for kw in calls] == [(7, True), (7, True)]
    assert "block" not in params.settings  # speed only: changing it must not rerun the retrieval
    assert pd.read_parquet(tmp_path / "out.parquet").lowercase.all()


@pytest.mark.slow
def test_hf_models_reach_extraction_and_word_retrieval(workflow, run_rule_script, tmp_path, monkeypatch):
    """language.hf_models: a checkpoint's extraction loads it (hub revision pinned), reads the corpus with its own
    tokenizer unless the run's token files are in its vocabulary (tokenizer.vocab mbert); its word-retrieval rows
    carry its name, size and window 0 and its vector size."""
    import pandas as pd
    from snakemake.iocontainers import Wildcards

    import xling.evaluate.word_retrieval
    import xling.represent.store

    calls = []
    monkeypatch.setattr(xling.represent.store, "extract_bert_shard", lambda *a: calls.append(a))
    files = [tmp_path / f"{lang}.txt" for lang in ("en", "xa", "xe")]
    for path in files:
        path.write_text("a\n", encoding="utf-8")
    local = tmp_path / "tiny-bert"
    local.mkdir()
    hub = {"hf_models": [str(local), "org/hub-bert"], "hf_revisions": {"org/hub-bert": "abc123"}}

    def check_extraction(wf, lm, path, revision, corpus):
        text = wf.get_rule("bert_extract").input["text"]
        assert text(Wildcards(fromdict={"lm": lm}))[0].endswith(
            "corpus/1500/en.txt" if corpus else "tokens/1500/en.txt"
        )
        run_rule_script(
            wf,
            "bert_extract",
            {"text": files, "words": files},
            {"words": files, "langs": files},
            {"lm": lm, "shard": "0"},
        )
        assert {
            (a[0], a[-1].revision, a[-1].corpus, a[-1].lowercase if corpus else None, a[-1].max_length) for a in calls
        } == {(path, revision, corpus, True if corpus else None, None)}
        calls.clear()

    wf = workflow({"language": hub, "tokenizer": {"lowercase": True}})  # a trained vocabulary: not a checkpoint's
    check_extraction(wf, "hf/tiny-bert", str(local), None, True)
    staged = "results/test/models/hf/org--hub-bert"  # a hub id: its directory staged by fetch_checkpoint
    check_extraction(wf, "hf/org--hub-bert", staged, "abc123", True)
    monkeypatch.setattr(
        xling.evaluate.word_retrieval,
        "word_retrieval",
        lambda *a, **kw: (
            pd.DataFrame({"layer": [0, 1], "mrr": [0.5, 0.6]}),
            pd.DataFrame({"layer": [0, 1], "word": ["a", "a"]}),
        ),
    )
    store = tmp_path / "words.parquet"
    pd.DataFrame(
        {"lang": ["en"], "word": ["a"], "layer": [0], "n": [1], **{f"d{j}": [0.0] for j in range(24)}}
    ).to_parquet(store)
    assert (
        wf.get_rule("word_retrieval")
        .input["counts"](Wildcards(fromdict={"lm": "hf/tiny-bert"}))
        .endswith("tokens/1500/word_counts.parquet")
    )  # the largest sample's counts
    run_rule_script(
        wf,
        "word_retrieval",
        {"words": store, "dictionaries": ["d1", "d2"], "function_dictionaries": [], "counts": "c"},
        {"table": tmp_path / "out.parquet", "ranks": tmp_path / "out.ranks.parquet"},
        {"lm": "hf/tiny-bert"},
    )
    table = pd.read_parquet(tmp_path / "out.parquet")
    assert set(table.model) == {str(local)} and set(table["size"]) == {0} and set(table.window) == {0}
    assert set(table.dim) == {24} and len(table) == 4  # two layers x two pairs
    check_extraction(
        workflow({"language": hub, "tokenizer": {"vocab": "mbert", "lowercase": True}}),
        "hf/org--hub-bert",
        staged,
        "abc123",
        False,
    )  # the run's token files are mBERT's


@pytest.mark.slow
def test_report_paper_results_is_the_report_input(workflow, tmp_path):
    published = tmp_path / "published.yaml"
    assert workflow({"report": {"paper_results": str(published)}}).get_rule("report").input.paper_results == str(
        published
    )
    report = workflow().get_rule("report")
    assert "paper_results" not in report.input.keys(), (
        "an input's path from the working directory moves with the checkout"
    )
    files = report.params.checkout_files  # the checkout's files the report reads, by path in it and content
    assert set(files) == {"paper_results", "protocol_table", "protocol_schema", "protocol_study"}
    published = REPO / "resources/paper_results.yaml"
    assert files["paper_results"] == {
        "path": "resources/paper_results.yaml",
        "sha256": hashlib.sha256(published.read_bytes()).hexdigest(),
    }


@pytest.mark.slow
def test_tokenizer_lowercase_reaches_every_rule_that_meets_text(workflow, monkeypatch):
    from xling.models import bert

    seen = []
    monkeypatch.setattr(
        bert, "pretrain", lambda *args, lowercase, dev_path=None, switch_table=None: seen.append(lowercase)
    )
    for lowercase, flag in ((True, "--lowercase"), (False, "--no-lowercase")):
        wf = workflow({"tokenizer": {"lowercase": lowercase}})
        for rule in (
            "train_vocab",
            "tokenize",
            "static_word_vectors",
            "dictionary_words",
            "word_retrieval",
            "token_translation",
            "ablation_vocab",
            "ablation_language_vocab",
            "ablation_tokenize",
            "ablation_language_tokenize",
            "switch_table",
            "code_switch",
        ):
            assert wf.get_rule(rule).params.lowercase is lowercase, rule
        case = wf.get_rule("bert_pretrain").params.case
        assert case == flag and "{params.case}" in wf.get_rule("bert_pretrain").shellcmd
        bert.main(["--tokens", "t", "--vocab", "v", "--out", "o", "--checkpoint-dir", "c", "--hparams", "{}", case])
    assert seen == [True, False]  # what the shell command's flag makes of the saved tokenizer files


def merged_config(preset: Path | None = None) -> dict:
    """config.yaml with a preset merged over it, as `--configfile` does."""
    from snakemake.utils import update_config

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    if preset is not None:
        update_config(config, yaml.safe_load(preset.read_text()))
    return config


def schema_errors(config: dict) -> list[str]:
    """What the Snakefile's validate() would reject (the same JSON schema draft)."""
    from jsonschema import Draft202012Validator

    return [error.message for error in Draft202012Validator(load_schema()).iter_errors(config)]


@pytest.mark.parametrize("preset", sorted((REPO / "presets").glob("*.yaml")), ids=lambda p: p.name)
def test_every_preset_validates_against_the_schema(preset):
    """A preset no test runs (presets/study.yaml) would otherwise break unnoticed when the schema changes."""
    assert schema_errors(merged_config(preset)) == []


@pytest.mark.parametrize("preset", sorted((REPO / "presets").glob("*.yaml")), ids=lambda p: p.name)
def test_every_synthetic_preset_s_alignment_splits_fit_its_parallel_text(preset):
    """The plan stops when they do not (rules/common.smk table_targets); checked here without planning."""
    config = merged_config(preset)
    if config["data"]["source"] != "synthetic":
        pytest.skip("real parallel text: its length is known only once downloaded")
    from xling.plan.alignment import pairs_needed

    align = config["alignment"]
    need = pairs_needed(align["test_sentences"], align["dev_sentences"], align["train_sentences"])
    default = load_schema()["properties"]["synthetic"]["properties"]["parallel_sentences"]["default"]
    assert need <= config["synthetic"].get("parallel_sentences", default)


def test_schema_validation_rejects_a_bad_preset_value():
    config = merged_config()
    config["bert"]["precision"] = "auto"
    assert schema_errors(config) == ["'auto' is not one of ['fp32', 'bf16']"]


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys without a word: a merge that repeats a block silently drops one."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: its keys may be overridden
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


PROJECT_YAML = sorted(
    {
        *REPO.glob("*.yaml"),
        *REPO.glob("presets/*.yaml"),
        *REPO.glob("schemas/*.yaml"),
        *REPO.glob("resources/*.yaml"),
        *REPO.glob("profiles/*/config.yaml"),
        *REPO.glob("envs/*.yaml"),
    }
)


@pytest.mark.parametrize("path", PROJECT_YAML, ids=lambda p: str(p.relative_to(REPO)))
def test_no_yaml_file_repeats_a_key(path):
    yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)


def test_a_repeated_key_is_caught():
    with pytest.raises(yaml.constructor.ConstructorError, match="(?s)duplicate key 'bootstrap'.*line 3"):
        yaml.load("bootstrap: {a: 1}\nother: 2\nbootstrap: {a: 2}\n", Loader=_UniqueKeyLoader)
