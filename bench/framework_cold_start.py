"""Cold start of the worker with an agent of each other framework, on the layers as they ship.

    python bench/framework_cold_start.py [--rounds N] [--frameworks pydantic_ai,langgraph,...]

As bench/cold_start.py lays out a function (its helpers are used): the layers built by scripts/build_layer.py
for the runtime's Python, merged in the template's order for the worker (Riverbeam, Cedar, MCP, then the
framework's layer in the git layer's place), the function's folder, the runtime's boto3; read-only, no byte
code written. Each sample is a fresh interpreter that imports the worker's `app` and makes what its first
job makes: the RiverBeam and the agents of an agents.json holding one agent of the framework
(`framework:` and `agent:`, a module of the code folder making the agent with its one tool: the framework's
import, the agent, the runner). The worker without it (the built-in `author`) and the floor (`import boto3`
+ a client) are sampled interleaved with them. Each layer's size is its zip's, deflated as SAM uploads it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cold_start
from cold_start import ROOT, build, environment, read_only, runtime_packages, sample, writable

# an agent of each framework with one tool, as a user's code folder would make it (no model is called)
AGENTS = {
    "pydantic_ai": """
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
agent = Agent(TestModel(), name="helper")
@agent.tool_plain(requires_approval=True)
def deploy(target: str) -> str:
    return "deployed " + target
""",
    "langgraph": """
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.tools import tool
@tool
def deploy(target: str) -> str:
    \"\"\"Deploy the target.\"\"\"
    return "deployed " + target
class Model(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self
agent = create_agent(Model(messages=iter([])), tools=[deploy],
                     middleware=[HumanInTheLoopMiddleware(interrupt_on={"deploy": True})])
""",
    "openai_agents": """
from agents import Agent, function_tool
@function_tool(needs_approval=True)
def deploy(target: str) -> str:
    return "deployed " + target
agent = Agent(name="helper", tools=[deploy])
""",
    "strands": """
from strands import Agent, tool
@tool
def deploy(target: str) -> str:
    \"\"\"Deploy the target.\"\"\"
    return "deployed " + target
agent = Agent(tools=[deploy], callback_handler=None)
""",
}
WORKER_LAYERS = ("riverbeam", "policy", "mcp")
FIRST_JOB = (
    cold_start.PRELUDE
    + """
import app
from riverbeam.aws import runtime
runtime.beam(); runtime.management_api(); runtime.beam().load_agents()
print(time.perf_counter() - started, len(compiled))
"""
)


def worker_tree(scratch: Path, name: str, layers: tuple[str, ...], code: str | None) -> list[Path]:
    """The worker as Lambda lays it out: its layers merged into opt/python, its folder, the runtime."""
    opt = scratch / f"opt-{name}"
    for layer in layers:
        shutil.copytree(scratch / "layers" / layer, opt, dirs_exist_ok=True)
    agents: dict[str, object] = {"agents": {}}
    if code is not None:
        (opt / "python" / "bench_agent.py").write_text(code)
        agents = {"agents": {"helper": {"framework": name, "agent": "bench_agent:agent"}}}
    (opt / "agents.json").write_text(json.dumps(agents))
    task = scratch / f"task-{name}"
    shutil.copytree(ROOT / "functions" / "worker", task, ignore=shutil.ignore_patterns("__pycache__"))
    return [task, opt / "python", scratch / "runtime"]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="samples each (default: 7)")
    parser.add_argument("--frameworks", default=",".join(AGENTS), help="comma separated (default: all four)")
    args = parser.parse_args()
    frameworks = [f for f in args.frameworks.split(",") if f]
    interpreter = cold_start.build_layer.runtime_interpreter(cold_start.build_layer.parse_args(["unused"]))
    current = interpreter is None
    interpreter = interpreter or sys.executable
    with tempfile.TemporaryDirectory(prefix="riverbeam-fw-cold-") as scratch_name:
        scratch = Path(scratch_name)
        sizes = {}
        for layer in (*WORKER_LAYERS, *frameworks):
            build(scratch / "layers" / layer, layer, current, True)
            sizes[layer] = cold_start.zipped_size(scratch / "layers" / layer)
        runtime_packages(scratch / "runtime", interpreter)
        (scratch / "tmp").mkdir()
        codes = {
            cold_start.FLOOR: (cold_start.FLOOR_CODE, environment(scratch, "floor", [scratch / "runtime"]))
        }
        trees = {"author": worker_tree(scratch, "author", WORKER_LAYERS, None)}
        trees |= {f: worker_tree(scratch, f, (*WORKER_LAYERS, f), AGENTS[f]) for f in frameworks}
        for name, paths in trees.items():
            env = environment(scratch, "worker", paths)
            env["RIVERBEAM_AGENTS_FILE"] = str(paths[1].parent / "agents.json")
            codes[f"worker, {name}"] = (FIRST_JOB, env)
        read_only(scratch / "runtime")
        try:
            for code, env in codes.values():  # once unmeasured: the OS's file cache
                sample(interpreter, code, env)
            times: dict[str, list[float]] = {name: [] for name in codes}
            for _ in range(args.rounds):
                for name, (code, env) in codes.items():
                    times[name].append(sample(interpreter, code, env)[0])
        finally:
            writable(scratch)
    floor = statistics.median(times[cold_start.FLOOR])
    print(
        f"worker cold start with an agent of each framework, median of {args.rounds} fresh interpreters, "
        f"interleaved; {interpreter}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    print(f"{'':<26}{'ms':>8}{'x floor':>10}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<26}{median * 1000:>8.1f}{median / floor:>10.2f}")
    for layer, size in sizes.items():
        print(f"layer {layer:<14} {size / 1e6:6.2f} MB zipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
