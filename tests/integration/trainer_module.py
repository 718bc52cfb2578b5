#!/usr/bin/python3
"""A torch trainer for the bridge's layout test (tests/integration/trainer_layout.sh): a small regression
module whose first layer is frozen and which has a BatchNorm layer. Every node starts from one seed; its data
comes from its node id (node 1's inputs shifted by 2, so its BatchNorm statistics alone differ from node 0's).
Usage: trainer_module.py DATA_DIR OUT.json [--order normal|swapped] [--once] [--go FILE] [--dtype bfloat16]
  --order swapped: the same parameter count, fc2 registered before fc1 (another layout)
  --once: attach (bind) and report how it went, then leave; no rounds
  --go FILE: after binding, wait (up to 120 s) until FILE exists before the first round
  --dtype bfloat16: the module in torch.bfloat16, attached with dtype bfloat16
Writes OUT.json: whether the frozen layer is bit-identical to its start, the final loss, the BatchNorm
running mean and the mean of the BatchNorm's input on this node's data, the attach error; and OUT.pt, the
module's final state_dict (for the gossipd.load check). `Net` is importable (the check builds a fresh one)."""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gossipd  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self, swapped: bool = False):
        super().__init__()
        self.embed = torch.nn.Linear(8, 8)  # frozen below: a "pretrained" layer
        if swapped:
            self.fc2 = torch.nn.Linear(6, 3)
            self.fc1 = torch.nn.Linear(8, 6)
        else:
            self.fc1 = torch.nn.Linear(8, 6)
            self.fc2 = torch.nn.Linear(6, 3)
        self.bn = torch.nn.BatchNorm1d(6)  # its running statistics are mixed (model mode)

    def forward(self, x):
        return self.fc2(torch.tanh(self.bn(self.fc1(torch.tanh(self.embed(x))))))


def make(swapped: bool = False) -> Net:
    torch.manual_seed(0)  # one initial model on every node
    model = Net(swapped)
    for p in model.embed.parameters():
        p.requires_grad_(False)
    return model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("out")
    ap.add_argument("--order", choices=("normal", "swapped"), default="normal")
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--go")
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    a = ap.parse_args()
    model = make(a.order == "swapped")
    if a.dtype == "bfloat16":
        model = model.to(torch.bfloat16)
    frozen = [p.detach().clone() for p in model.embed.parameters()]
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9)
    result = {"order": a.order}
    with gossipd.attach(a.data_dir, timeout=3.0, reconnect_timeout=60.0, dtype=a.dtype) as g:
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
            x = (torch.randn(64, 8, generator=gen) + 2.0 * g.node).to(model.fc1.weight.dtype)
            y = torch.randn(64, 3, generator=gen).to(model.fc1.weight.dtype)
            model.train()
            while not g.done:
                opt.zero_grad()
                loss = (model(x) - y).pow(2).mean()
                loss.backward()
                opt.step()
                g.mix(loss=loss.item())
            result["loss"] = loss.item()
            result["rounds"] = g.round
            with torch.no_grad():
                result["bn_input_mean"] = model.fc1(torch.tanh(model.embed(x))).mean(0).tolist()
            result["running_mean"] = model.bn.running_mean.tolist()
    result["frozen_identical"] = all(torch.equal(p, f) for p, f in zip(model.embed.parameters(), frozen))
    torch.save(model.state_dict(), os.path.splitext(a.out)[0] + ".pt")
    json.dump(result, open(a.out, "w"))


if __name__ == "__main__":
    main()
