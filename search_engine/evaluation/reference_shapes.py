"""The problem's sandbox draws the first trial at a second batch size (`shape_trial`), for
`second_shape`'s check of the candidate there. A mixin of `reference_child.ReferenceServer`
(its `torch`, `module`, `device`, `resident`, `_draw` and `_reference64`)."""

from __future__ import annotations

from search_engine.evaluation import wire
from search_engine.evaluation.reference_tensors import _on, _tensor_bytes, degenerate_reason


class SecondShapeTrial:
    def on_shape_trial(self, header: dict) -> tuple[dict, list]:
        """The first trial's draw at a second batch size (`batch_shapes`) and its float64
        reference, as plain tensors: the candidate is checked there too. `ok` False with
        the reason when the problem has no batch or its reference does not run there."""
        from search_engine.batch_shapes import (
            SECOND_SHAPE_BYTES, input_shapes, inputs_at_batch, leading_batch, second_batch,
        )
        from search_engine.problems import make_trial_inputs

        seed = int(header["seed"])
        official = self._draw(seed, 1.0, 0.0)
        batch = leading_batch(official)
        if batch is None:
            return {"ok": False, "message": "the problem's inputs have no batch dimension"}, []
        other = second_batch(batch, _tensor_bytes(official))
        if other is None:
            return {"ok": False, "message": f"no other batch size keeps the inputs under "
                                            f"{SECOND_SHAPE_BYTES >> 20} MiB"}, []
        draw = lambda: make_trial_inputs(self.module, seed, 1.0, 0.0)  # noqa: E731
        if self.resident:
            on_device = draw
            draw = lambda: _on(self._on_device(on_device), None, self.device)  # noqa: E731
        inputs, how = inputs_at_batch(self.module, official, other, draw)
        out = self._reference64(inputs)
        why = degenerate_reason(out, self.output_meta[0] if self.output_meta else None)
        if why:
            return {"ok": False, "message": f"the reference at the second shape is "
                                            f"degenerate: {why}"}, []
        cpu = lambda xs: [x.cpu() if isinstance(x, self.torch.Tensor) else x  # noqa: E731
                          for x in xs]
        slots, tensors = wire.encode_values(cpu(inputs))
        return {"ok": True, "inputs": slots, "n_outputs": len(out), "how": how,
                "official_shapes": input_shapes(official),
                "input_shapes": input_shapes(inputs)}, tensors + cpu(out)

    def _on_device(self, draw):
        with self.torch.device(self.device):
            return draw()
