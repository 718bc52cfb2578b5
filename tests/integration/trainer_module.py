#!/usr/bin/python3
"""A torch trainer for the bridge's layout test (tests/integration/trainer_layout.sh): a small regression
module whose first layer is frozen. Every node starts from one seed; its data comes from its node id.
Usage: trainer_module.py DATA_DIR OUT.json [--order normal|swapped] [--once] [--go FILE]
  --order swapped: the same parameter count, fc2 registered before fc1 (another layout)
  --once: attach (bind) and report how it went, then leave; no rounds
  --go FILE: after binding, wait (up to 120 s) until FILE exists before the first round
Writes OUT.json: whether the frozen layer is bit-identical to its start, the final loss, the attach error."""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gossipd  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("data_dir")
ap.add_argument("out")
ap.add_argument("--order", choices=("normal", "swapped"), default="normal")
ap.add_argument("--once", action="store_true")
ap.add_argument("--go")
a = ap.parse_args()


class Net(torch.nn.Module):
    def __init__(self, swapped: bool):
        super().__init__()
        self.embed = torch.nn.Linear(8, 8)  # frozen below: a "pretrained" layer
        if swapped:
            self.fc2 = torch.nn.Linear(6, 3)
            self.fc1 = torch.nn.Linear(8, 6)
        else:
            self.fc1 = torch.nn.Linear(8, 6)
            self.fc2 = torch.nn.Linear(6, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(torch.tanh(self.embed(x)))))


torch.manual_seed(0)  # one initial model on every node
model = Net(a.order == "swapped")
for p in model.embed.parameters():
    p.requires_grad_(False)
frozen = [p.detach().clone() for p in model.embed.parameters()]
opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9)
result = {"order": a.order}
with gossipd.attach(a.data_dir, timeout=3.0, reconnect_timeout=60.0) as g:
    try:
        g.bind(model, opt)  # its momentum is saved on the daemon's checkpoint rounds
    except gossipd.BridgeError as e:
        result.update(attach_error_code=e.code, attach_error=str(e))
        json.dump(result, open(a.out, "w"))
        sys.exit(0)
    result["node"] = g.node
    deadline = time.monotonic() + 120
    while a.go and not os.path.exists(a.go):  # the test's checks that need both nodes idle come first
        if time.monotonic() > deadline:
            sys.exit(f"no {a.go} within 120 s")
        time.sleep(0.05)
    if not a.once:
        gen = torch.Generator().manual_seed(100 + g.node)
        x = torch.randn(64, 8, generator=gen)
        y = torch.randn(64, 3, generator=gen)
        while not g.done:
            opt.zero_grad()
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            opt.step()
            g.mix(loss=loss.item())
        result["loss"] = loss.item()
        result["rounds"] = g.round
result["frozen_identical"] = all(torch.equal(p, f) for p, f in zip(model.embed.parameters(), frozen))
json.dump(result, open(a.out, "w"))
