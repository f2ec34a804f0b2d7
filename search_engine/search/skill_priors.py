"""Skills as priors of the search, and how their later use is scored (no Django here).

A skill is a lesson of an earlier session: for an operator family, a shape class and a
hardware target, which transformation won, with which parameters, from which diagnosis, and
by how much (speedup vs eager). The search draws its *first* children from the skills that
match the problem (`SkillGuide.children`, offline synthesizer: the skill's parameters laid
over the parent's, then the skill's moves applied to the parent); later moves are the
synthesizer's own. The LLM synthesizer gets skills as prompt passages instead. Either way
each node records the skills that shaped it (`origin["skills"]`), and when the session ends
`skill_uses` says for each of them whether the node beat its parent and by how much.

Skills come from the knowledge base (Django, team-scoped) or from a JSON file
(`SkillLibrary.load`), so a GPU node with only torch and Triton can search with them.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from search_engine.synthesis.base import NotCoveredError, Proposal, SynthesisRequest

GENERIC_HARDWARE = "generic"
# Children drawn from skills before the synthesizer's own moves take over.
DEFAULT_SKILL_CHILDREN = 4


# -- what a skill is, for the search ------------------------------------------------------------

@dataclass(frozen=True)
class SkillPrior:
    skill_id: str
    transformation: str  # the winning move(s), "a+b" for two at once, or a template name
    params: dict[str, Any]  # the parameters of the best step it was seen in
    family: str  # operator family of the problem ("softmax", "gemm", ...)
    hardware: str = ""
    shape_class: str = ""
    diagnosis: str = ""  # the bottleneck of the parent it improved on
    speedup: float = 1.0  # best measured speedup vs eager
    uses: int = 0  # times it shaped a node in later sessions
    helped: int = 0  # of those, the node beat its parent

    @property
    def expected_gain(self) -> float:
        """Speedup weighted by how often it helped (a Laplace estimate: unused = 1/2)."""
        return self.speedup * (self.helped + 1) / (self.uses + 2)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SkillPrior":
        known = set(cls.__dataclass_fields__)
        data = {k: v for k, v in data.items() if k in known}
        data["skill_id"] = str(data.get("skill_id", ""))
        data["params"] = dict(data.get("params") or {})
        return cls(**data)


def matches(prior: SkillPrior, families: Iterable[str], hardware: str) -> bool:
    hw = (prior.hardware or "").lower()
    return (prior.family.lower() in {f.lower() for f in families if f}
            and (not hw or hw == GENERIC_HARDWARE or hw == (hardware or "").lower()))


def rank(priors: Iterable[SkillPrior], shape_class: str) -> list[SkillPrior]:
    """Same shape class first, then by expected gain; ties by id (reproducible)."""
    return sorted(priors, key=lambda p: (p.shape_class != shape_class or not shape_class,
                                         -p.expected_gain, p.skill_id))


@dataclass
class SkillLibrary:
    """A list of skills; `matching` is what a search asks for."""

    priors: list[SkillPrior] = field(default_factory=list)

    def matching(self, families: Iterable[str], hardware: str,
                 shape_class: str = "") -> list[SkillPrior]:
        families = list(families)
        return rank([p for p in self.priors if matches(p, families, hardware)], shape_class)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps({"skills": [p.to_dict() for p in self.priors]},
                                         indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path) -> "SkillLibrary":
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read skills from {path}: {exc}") from exc
        rows = data.get("skills") if isinstance(data, dict) else data
        if not isinstance(rows, list):
            raise ValueError(f"{path}: expected {{\"skills\": [...]}} or a list of skills")
        return cls([SkillPrior.from_dict(r) for r in rows if isinstance(r, dict)])


# -- shape classes ----------------------------------------------------------------------------

def _bucket(size: int) -> str:
    """Sizes within a factor of 4 share a bucket: 2^0, 2^2, 2^4, ..."""
    return f"2^{2 * round(math.log2(max(1, size)) / 2)}"


def shape_class(analysis) -> str:
    """The shape class of a problem from the offline synthesizer's analysis ("" unknown)."""
    try:
        from search_engine.synthesis.offline.spaces import templates

        if analysis.family == "rows":
            length = templates.row_length(analysis)
            rows = math.prod(analysis.row_shape) // max(1, length)
            return f"rows:len{_bucket(length)}:n{_bucket(rows)}"
        if analysis.family == "matmul":
            m, n, k = templates.matmul_dims(analysis)
            return f"matmul:m{_bucket(m)}:n{_bucket(n)}:k{_bucket(k)}"
        shape = analysis.nodes[analysis.output].shape
        return f"{analysis.family}:n{_bucket(math.prod(shape))}"
    except Exception:  # a family this module does not know yet: no shape class
        return ""


# -- drawing children from skills ------------------------------------------------------------

SkillSource = Callable[[list[str], str], list[SkillPrior]]


class SkillGuide:
    """The search's first children from matching skills (offline synthesizer), and which
    skills shaped each node.

    `source(families, hardware)` gives the candidate skills (a SkillLibrary's `matching`,
    or the knowledge base's); it is asked once, when the search starts (`prepare`)."""

    def __init__(self, source: SkillSource | SkillLibrary | list[SkillPrior] | None,
                 max_children: int = DEFAULT_SKILL_CHILDREN, drawn: int = 0):
        if isinstance(source, list):
            source = SkillLibrary(source)
        if isinstance(source, SkillLibrary):
            source = source.matching
        self.source = source
        self.max_children = max_children
        self.drawn = drawn  # children already drawn (a rebuilt search counts its tree)
        self.priors: list[SkillPrior] | None = None
        self.shape_class = ""
        self.failed = ""  # why skills could not be read (the search goes on without)
        self._drawn_from: dict[str, str] = {}  # child source -> the skill it came from

    @classmethod
    def for_search(cls, skills, context, nodes: Iterable[Any] = ()) -> "SkillGuide":
        """The guide of one search: `skills` as given (a guide, a library, priors, a source),
        else the context provider's `skill_priors` (the knowledge base's door), else none.
        Children a rebuilt tree already drew from skills count against its budget."""
        guide = skills if isinstance(skills, SkillGuide) else cls(
            skills if skills is not None else getattr(context, "skill_priors", None))
        guide.drawn = max(guide.drawn, sum(1 for n in nodes
                                           if n.origin.get("skill_drawn") is not None))
        return guide

    def prepare(self, synthesizer, problem_source: str, families: list[str],
                hardware: str) -> None:
        if self.priors is not None:
            return
        self.priors = []
        analysis = getattr(synthesizer, "analysis", None)
        if analysis is not None:
            try:
                self.shape_class = shape_class(analysis(problem_source))
            except Exception:
                self.shape_class = ""
        if self.source is None:
            return
        try:
            self.priors = rank(self.source(families, hardware), self.shape_class)
        except Exception as exc:  # skills are help, not a requirement
            self.failed = f"{type(exc).__name__}: {exc}"

    def children(self, synthesizer, request: SynthesisRequest, n: int) -> list[Proposal]:
        """Up to `n` children made from skills, while the guide's budget lasts; [] when the
        synthesizer cannot apply them (the LLM reads skills in its prompt instead)."""
        if not self.priors or self.drawn >= self.max_children or \
                not hasattr(synthesizer, "render") or not hasattr(synthesizer, "analysis"):
            return []
        n = min(n, self.max_children - self.drawn)
        seen = set(request.known_sources)
        out: list[Proposal] = []
        for prior in self.priors:
            for params in _skill_params(synthesizer, request, prior):
                try:
                    source = synthesizer.render(request.problem_source, params)
                except NotCoveredError:  # a skill's parameters this problem cannot take
                    continue
                if source in seen:
                    continue
                seen.add(source)
                out.append(Proposal(
                    source=source, transformation=prior.transformation, params=params,
                    notes=f"drawn from skill {prior.skill_id} ({prior.speedup:.2f}x before)"))
                self._drawn_from[source] = prior.skill_id
                if len(out) >= n:
                    self.drawn += len(out)
                    return out
        self.drawn += len(out)
        return out

    def origin_tags(self, source: str, passages: Iterable[Any] = ()) -> dict[str, Any]:
        """What a node's origin records about skills: the ones that shaped it (the skill it
        was drawn from, the skill passages its prompt carried) and the shape class."""
        skills = [str(p.metadata["skill_id"]) for p in passages
                  if getattr(p, "kind", "") == "skill" and (p.metadata or {}).get("skill_id")]
        tags: dict[str, Any] = {}
        drawn = self._drawn_from.get(source)
        if drawn is not None:
            tags["skill_drawn"] = drawn
            skills.insert(0, drawn)
        if skills:
            tags["skills"] = list(dict.fromkeys(skills))
        if self.shape_class:
            tags["shape_class"] = self.shape_class
        return tags


def _skill_params(synthesizer, request: SynthesisRequest, prior: SkillPrior) -> list[dict]:
    """The skill's parameters over the parent's (or the defaults), then its moves applied
    to the parent's parameters; only legal, fitting ones."""
    from search_engine.synthesis.offline.synthesizer import family_module

    an = synthesizer.analysis(request.problem_source)
    templates = family_module(an)  # the family's own parameters and moves
    parent = request.parent.origin.get("params") \
        if request.parent.origin.get("synthesizer") == getattr(synthesizer, "name", "") else None
    base = dict(parent or templates.default_params(an, request.target.name,
                                                   request.precision_policy))
    options = []
    overlay = {k: v for k, v in prior.params.items() if k in base}
    if overlay:
        laid = templates.clamp(an, {**base, **overlay})
        options += [p for p in (_same_work_per_program(laid, prior.params), laid) if p]
    moves = [m for m in prior.transformation.split("+")
             if m in getattr(templates, "MOVES", {}).get(an.family, {})]
    if parent and moves:
        moved: dict | None = dict(base)
        for move in moves:
            moved = templates.apply_move(an, moved, move) if moved is not None else None
        if moved is not None:
            options.append(moved)
    # the synthesizer's own resource rule: a prior never proposes what it would prune
    return [p for p in options if templates.valid(an, p)
            and not templates.resource_problem(an, p, request.target)
            and (request.precision_policy != "strict" or p.get("PRECISION") != "tf32")]


def _same_work_per_program(params: dict, learned: dict) -> dict | None:
    """Rows kernels: a row length other than the skill's changes BLOCK_R, so ROWS is rescaled
    to keep the elements per program (and per thread) the skill found best."""
    if not all(k in params and k in learned for k in ("ROWS", "BLOCK_R")):
        return None
    if params["BLOCK_R"] == learned["BLOCK_R"]:
        return None
    work = learned["ROWS"] * learned["BLOCK_R"]
    rows = max(1, work // max(1, params["BLOCK_R"]))
    rows = 1 << (rows.bit_length() - 1)  # a power of two, as the template's choices are
    return {**params, "ROWS": rows} if rows != params["ROWS"] else None


# -- which steps teach a skill (distilling) --------------------------------------------------------

def integrity_is_clean(flags: Any) -> bool:
    """Clean unless a flag taints the result (`evaluation.result.is_tainted`)."""
    from search_engine.evaluation.result import is_tainted

    return not is_tainted(flags)


def node_flags(node: dict[str, Any]) -> list:
    if "integrity_flags" in node:
        return list(node.get("integrity_flags") or [])
    return list((node.get("result") or {}).get("integrity_flags") or [])


def is_successful_step(node: dict[str, Any]) -> bool:
    """Positive TRLOO advantage, a real speedup over eager, correct and untainted."""
    advantage = node.get("advantage")
    speedup = node.get("speedup_vs_eager")
    return (
        node.get("status", "correct") == "correct"
        and advantage is not None and advantage > 0
        and speedup is not None and speedup > 1.0
        and node.get("parent_id") is not None
        and integrity_is_clean(node_flags(node))
    )


def node_bottleneck(node: dict[str, Any] | None) -> str:
    node = node or {}
    diagnostics = node.get("diagnostics") or {}
    found = diagnostics.get("bottleneck") or (node.get("diagnostics_summary") or {}).get(
        "bottleneck") or ""
    return str(found.get("class", "") if isinstance(found, dict) else found)


def distil_priors(nodes: list[dict[str, Any]], *, family: str, hardware: str,
                  shape_class: str = "", prefix: str = "s") -> list[SkillPrior]:
    """Skills of one finished search without a database (the JSON route): one per winning
    transformation, with the parameters of its best step."""
    by_id = {n.get("id"): n for n in nodes}
    best: dict[str, dict] = {}
    for node in nodes:
        transformation = str((node.get("origin") or {}).get("transformation") or "").strip()
        if not transformation or not is_successful_step(node):
            continue
        kept = best.get(transformation)
        if kept is None or node["speedup_vs_eager"] > kept["speedup_vs_eager"]:
            best[transformation] = node
    return [SkillPrior(
        skill_id=f"{prefix}{node['id']}", transformation=t,
        params=dict(node["origin"].get("params") or {}), family=family.lower(),
        hardware=hardware.lower(), shape_class=shape_class,
        diagnosis=node_bottleneck(by_id.get(node.get("parent_id"))),
        speedup=float(node["speedup_vs_eager"])) for t, node in sorted(best.items())]


# -- how later use is scored -------------------------------------------------------------------

@dataclass(frozen=True)
class SkillUse:
    skill_id: str
    node_id: str
    helped: bool  # the node beat its parent (correct, untainted, faster)
    gain: float | None  # node speedup / parent speedup (0 for a failed node; None unknown)


def _clean_correct(node: dict[str, Any]) -> bool:
    return node.get("status") == "correct" and integrity_is_clean(node_flags(node))


def improvement(node: dict[str, Any], parent: dict[str, Any] | None
                ) -> tuple[bool, float | None] | None:
    """(helped, gain) of a node over its parent; None when it cannot be told (interpreter
    timings: a correct node with no measured speedup)."""
    if not _clean_correct(node):
        return False, 0.0
    speedup = node.get("speedup_vs_eager")
    if parent is None or parent.get("parent_id") is None:
        before = 1.0  # the reference is eager PyTorch
    elif _clean_correct(parent):
        before = parent.get("speedup_vs_eager")
    else:
        return True, None  # a fix: the parent failed, this one works
    if speedup is None or before is None or before <= 0:
        return None
    gain = float(speedup) / float(before)
    return gain > 1.0, round(gain, 6)


NOT_EVALUATED = ("pending", "cancelled", "reference")


def skill_uses(nodes: list[dict[str, Any]]) -> list[SkillUse]:
    """One use per (skill, evaluated node it shaped), from stored node dicts."""
    by_id = {n.get("id"): n for n in nodes}
    uses = []
    for node in nodes:
        skills = (node.get("origin") or {}).get("skills") or []
        if not skills or node.get("status") in NOT_EVALUATED:
            continue
        outcome = improvement(node, by_id.get(node.get("parent_id")))
        if outcome is None:
            continue
        helped, gain = outcome
        for skill_id in dict.fromkeys(str(s) for s in skills):
            uses.append(SkillUse(skill_id, str(node.get("id")), helped, gain))
    return uses
