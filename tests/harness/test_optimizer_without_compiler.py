"""configure_optimizer's hidden tests build the student's torch.optim.AdamW without importing
torch's compiler stack (harness/toy.py: _compiler_not_imported), and describe the same
optimizer as one built the usual way.

Run in a fresh interpreter: the test process may have imported torch._dynamo already.
"""

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    from autograder.harness.toy import optimizer_groups

    def configure_optimizer(model, lr, weight_decay, betas=(0.9, 0.95)):
        decay = [p for p in model.parameters() if p.dim() >= 2]
        rest = [p for p in model.parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": rest, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas)

    spec = {"init": {"vocab_size": 7, "block_size": 6, "d_model": 8}, "state": {}}
    quiet = optimizer_groups(configure_optimizer, spec, [3e-3, 0.1], {"betas": (0.8, 0.99)})
    imported = "torch._dynamo" in sys.modules
    wrapped = [a.__wrapped__ for a in vars(torch.optim.Optimizer).values()
               if hasattr(a, "__wrapped__")]
    left = [f.__name__ for f in wrapped if hasattr(f, "__dynamo_disable")]
    # the usual way: torch's wrappers import the compiler stack and call the same functions
    torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())
    assert "torch._dynamo" in sys.modules
    usual = optimizer_groups(configure_optimizer, spec, [3e-3, 0.1], {"betas": (0.8, 0.99)})
    print(json.dumps({"imported": imported, "left": left, "quiet": quiet, "usual": usual}))
    """
)


def test_adamw_is_built_without_the_compiler_and_described_as_usual():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=120
    )
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts["imported"] is False
    assert facts["left"] == []  # the wrappers are as torch left them once the call is over
    assert facts["quiet"] == facts["usual"]
    assert facts["quiet"]["is_adamw"] is True
    assert [g["weight_decay"] for g in facts["quiet"]["groups"]] == [0.1, 0.0]
    assert facts["quiet"]["groups"][0]["betas"] == [0.8, 0.99]
