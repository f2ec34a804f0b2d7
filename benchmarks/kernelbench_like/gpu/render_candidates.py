"""Render the offline synthesizer's default H200 candidate for each problem in this folder
into candidates/ (analysis in the sandbox, on meta tensors: no GPU needed here).

    python benchmarks/kernelbench_like/gpu/render_candidates.py
"""

from __future__ import annotations

from pathlib import Path

from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.synthesizer import family_module

HERE = Path(__file__).resolve().parent


def main() -> None:
    synthesizer = OfflineSynthesizer()
    out = HERE / "candidates"
    out.mkdir(exist_ok=True)
    for path in sorted(HERE.glob("*.py")):
        if path.name == Path(__file__).name:
            continue
        source = path.read_text()
        an = synthesizer.analysis(source)
        params = family_module(an).default_params(an, "h200", "strict")
        (out / path.name).write_text(synthesizer.render(source, params))
        print(f"{path.name}: family {an.family}")


if __name__ == "__main__":
    main()
