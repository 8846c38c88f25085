"""Writes cond.pte: a tiny torch.cond model exported with ExecuTorch's
default memory planning (torch 2.13.0, ExecuTorch 1.5.1).

    python make_cond.py cond.pte

Each branch computes its result through a temporary; the chosen result is
moved to the join and added to the input, so the true branch's result stays
alive while the false branch's tensors would be (if both ran).
"""

import sys

import torch
from torch import nn


class Cond(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        def big(x):
            return torch.relu(self.a(x)) * 2

        def small(x):
            return torch.sigmoid(self.b(x)) - 1

        return torch.cond(x.sum() > 0, big, small, (x,)) + x


def main(out: str) -> None:
    from executorch import exir

    torch.manual_seed(0)
    model = Cond().eval()
    example = (torch.ones(2, 4),)
    with torch.no_grad():
        exported = torch.export.export(model, example, strict=False)
    program = exir.to_edge(exported).to_executorch()
    with open(out, "wb") as f:
        f.write(program.buffer)


if __name__ == "__main__":
    main(sys.argv[1])
