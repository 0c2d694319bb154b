"""Cold start of each Lambda handler on the layers as they ship, beside the floor (`import boto3` + a client).

    python bench/cold_start.py [--rounds N] [--python PATH] [--without-bytecode] [--stages]

The layers are built by scripts/build_layer.py, as `sam build` builds them (wheels for the runtime's Python
and platform, byte code compiled by the runtime's interpreter), into a scratch directory laid out as Lambda
lays out a function: the layers merged in the order the template lists them (/opt/python), the function's
own folder (/var/task, app.py without byte code, as SAM ships it) and the runtime's boto3 (copied from this
environment and compiled, as the runtime image has it). That tree is made read-only and every sample runs
with PYTHONDONTWRITEBYTECODE=1, so that, as on Lambda's read-only /opt, nothing compiled is ever kept (as
root, the mode bits alone would not stop a write).

Each sample is a fresh interpreter (a cold container), the runtime's (python3.12 from pyenv or PATH; without
one, this interpreter and a layer built for it, which the output says), started with -S and the Lambda
environment (the template's: EVENT_BUS_NAME set, as every function has it; AdotLayerArn empty, so no ADOT
wrapper: the spans are OpenTelemetry's API alone, imported by the functions that run agents). It times,
from its first line, `import app` and what the handler's first request makes besides its work
(FIRST_REQUEST, read from the handlers, riverbeam/aws and the pipeline: clients, agents, imports on first
use), and counts the modules it compiled from source
(app.py is one): a layer whose byte code Python uses compiles no other. The floor times `import boto3`
and `boto3.client("dynamodb")`. In Lambda (AWS_LAMBDA_FUNCTION_NAME set, as here) a function's init makes
most of FIRST_REQUEST itself (runtime.prepare, with the garbage collector paused: coldstart.py); what it
made is then cached, and what it did not is made by FIRST_REQUEST: counted either way.

What each handler's first request creates (every one: the RiverBeam, with its DynamoDB client and store):
- invoke: the agents (agents.json, its runners and tools: a request names an agent, and the checks need its
  runner; not its model, which the first run makes) and the SQS client (a streamed invoke, and every
  WebSocket `invoke`, queues its job); a non-streamed invoke queues nothing but runs the agent inline (and
  makes its model and imports the execute stage with it);
- resume: the agents and the SQS client (a resume always queues its run; the `Approval Decided` events of
  the actions it resolves go in its write's outbox, which the events function puts on the bus);
- records: nothing more (reads: DynamoDB alone);
- connections: riverbeam.aws.tokens with PyJWT (on `cryptography`), verifying one RS256 token (with
  AuthMode jwt, the default, $connect verifies a token; the fetch of the issuer's keys, a request, is not
  counted: the sample reads a key set minted by this script, BENCH_JWKS, and checks BENCH_TOKEN with it);
- worker: the management API client (its frame pusher, made before the batch's first record), the agents,
  the agent's model and its Bedrock client (the first job's run calls it);
- sweep: the management API client (its frame pusher).
The first request of invoke and resume is an HTTP request: a WebSocket message's also builds the models of
its event (riverbeam.aws.websocket_events, about 3 ms).
Samples are interleaved (floor, each handler, again) after one unmeasured round, so that the machine's noise
falls on all alike; the figures are medians, the ratio is handler / floor (the goal: at most 1.5). The
layers' sizes are their zips' (deflated, as SAM uploads them; boto3 is not in them), the goal 5 MB for the
layer every function has.

--stages also times each handler's init in stages, in one order for all (boto3 and the DynamoDB client, as
the floor; pydantic; Powertools' Logger and Metrics; beam_store; riverbeam.pipeline with riverbeam.models;
the rest of app.py, with what its init makes (runtime.prepare); the RiverBeam; the rest of FIRST_REQUEST),
as medians of CPU time (less shaken than the wall clock by the machine's other work): what the figures
above are made of. The stages before app.py run with the garbage collector on (app.py pauses it only for
its own init), and the floor's stage makes a DynamoDB client the RiverBeam makes again (cheaper, from
botocore's caches): a handler's stages add up to more than its samples.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import io
import json
import os
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import build_layer  # noqa: E402

HANDLERS = ("invoke", "resume", "records", "connections", "worker", "sweep")
# the template's layers: every function has RiverbeamLayer, ConnectionsFunction also TokensLayer
FUNCTION_LAYERS = {
    name: ("riverbeam", "tokens") if name == "connections" else ("riverbeam",) for name in HANDLERS
}
# what the python3.12 runtime has beside the standard library
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")
LAYER_GOAL_MB = 5.0
RATIO_GOAL = 1.5
FLOOR = "boto3 + 1 client"
# the clients each handler's first request creates besides the RiverBeam's DynamoDB client (the docstring
# says why): runtime's cached factories, as the handlers call them
AGENTS = "runtime.beam().load_agents()"
# the worker's first job calls its agent's model: the Bedrock client (ModelMode bedrock, the default)
MODEL_CLIENT = 'runtime.beam()._setup.agents["author"].model.client'
FIRST_REQUEST = {
    "invoke": f"{AGENTS}; runtime.sqs()",
    "resume": f"{AGENTS}; runtime.sqs()",
    "records": "pass",
    # $connect verifies the caller's token (AuthMode jwt, the default): bench_token() mints it
    "connections": (
        "import os; from riverbeam.aws import tokens; "
        "tokens.verify(tokens.parse(os.environ['BENCH_TOKEN']), "
        "tokens.key_set(os.environ['BENCH_JWKS'].encode())['k1'], os.environ['JWT_ISSUER'])"
    ),
    "worker": f"runtime.management_api(); {AGENTS}; {MODEL_CLIENT}",
    "sweep": "runtime.management_api()",
}
# counts the modules compiled from source (a pyc Python uses is never compiled), then the timed part
PRELUDE = """
import time
started = time.perf_counter()
import _frozen_importlib_external as _bootstrap
compiled = []
_to_code = _bootstrap.SourceLoader.source_to_code
def _counting(self, data, path, *args, **kwargs):
    compiled.append(path)
    return _to_code(self, data, path, *args, **kwargs)
_bootstrap.SourceLoader.source_to_code = _counting
"""
FLOOR_CODE = (
    PRELUDE
    + """
import boto3
boto3.client("dynamodb")
print(time.perf_counter() - started, len(compiled))
"""
)


def handler_code(name: str) -> str:
    """`import app`, then what the handler's first request creates: the RiverBeam and FIRST_REQUEST."""
    return (
        PRELUDE
        + f"""
import app
from riverbeam.aws import runtime
runtime.beam(); {FIRST_REQUEST[name]}
print(time.perf_counter() - started, len(compiled))
"""
    )


# (label, statement): each stage's CPU time is what its statement adds to the ones before it
STAGES = (
    ("boto3 + client", "import boto3; boto3.client('dynamodb')"),
    # the names the layer imports (pydantic imports its parts as they are first asked for)
    ("pydantic", "from pydantic import AfterValidator, BaseModel, Field, PlainSerializer, TypeAdapter"),
    ("Powertools", "from aws_lambda_powertools import Logger, Metrics"),
    ("beam_store", "import beam_store"),
    ("pipeline+models", "import riverbeam.pipeline"),
    ("rest of app", "import app"),
    ("RiverBeam", "from riverbeam.aws import runtime; runtime.beam()"),
    ("first request", "{first_request}"),
)


def stages_code(name: str) -> str:
    return (
        "import time\nclock = [time.process_time()]\n"
        + "".join(
            f"{statement.format(first_request=FIRST_REQUEST[name])}\nclock.append(time.process_time())\n"
            for _, statement in STAGES
        )
        + "print(*(b - a for a, b in zip(clock, clock[1:])))\n"
    )


def bench_token(issuer: str) -> dict[str, str]:
    """An RS256 token of `issuer` and the key set that verifies it, as $connect gets them (cryptography
    alone: the tokens layer's)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = key.public_key().public_numbers()
    modulus, exponent = b64(numbers.n.to_bytes(256, "big")), b64(numbers.e.to_bytes(3, "big"))
    jwk = {"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256", "n": modulus, "e": exponent}
    claims = {"sub": "bench", "iss": issuer, "client_id": "bench", "exp": int(time.time()) + 86400}
    header = {"alg": "RS256", "typ": "JWT", "kid": "k1"}
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return {"BENCH_TOKEN": f"{signing_input}.{b64(signature)}", "BENCH_JWKS": json.dumps({"keys": [jwk]})}


def zipped_size(root: Path) -> int:
    """Bytes of the layer's zip, deflated as SAM zips it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root))
    return buffer.tell()


def build(target: Path, layer: str, current_interpreter: bool, bytecode: bool) -> None:
    command = [sys.executable, str(ROOT / "scripts" / "build_layer.py"), str(target), "--layer", layer]
    command += ["--current-interpreter"] * current_interpreter + ["--no-bytecode"] * (not bytecode)
    subprocess.run(command, check=True, capture_output=True, timeout=1200)


def runtime_packages(target: Path, interpreter: str) -> None:
    """The runtime's boto3 and what it needs, from this environment, compiled as the runtime image has it."""
    for name in RUNTIME_PACKAGES:
        source = Path(importlib.import_module(name).__file__ or "")
        if source.name == "__init__.py":
            shutil.copytree(source.parent, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target / source.name)
    subprocess.run(
        [interpreter, "-m", "compileall", "-q", "-j", "0", str(target)], check=True, capture_output=True
    )


def read_only(root: Path) -> None:
    for path in root.rglob("*"):
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode):
            path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.lstat().st_mode | stat.S_IWUSR)


def stages(interpreter: str, envs: dict[str, dict[str, str]], rounds: int) -> dict[str, list[float]]:
    """Each handler's init in STAGES: the medians of `rounds` interleaved samples, in ms of CPU time."""
    times: dict[str, list[list[float]]] = {name: [] for name in envs}
    for _ in range(rounds):
        for name, env in envs.items():
            done = subprocess.run(
                [interpreter, "-S", "-c", stages_code(name)],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0:
                raise SystemExit(f"cold_start: a stages sample failed:\n{done.stderr[-3000:]}")
            times[name].append([float(t) for t in done.stdout.split()])
    return {
        name: [statistics.median(column) * 1000 for column in zip(*samples, strict=True)]
        for name, samples in times.items()
    }


def print_stages(staged: dict[str, list[float]], rounds: int) -> None:
    print(f"in stages: ms of CPU time, median of {rounds} (each: what it adds to the stages before it)")
    print(f"{'':<12}" + "".join(f"{label:>16}" for label, _ in STAGES) + f"{'total':>8}")
    for name, medians in staged.items():
        print(f"{name:<12}" + "".join(f"{m:>16.1f}" for m in medians) + f"{sum(medians):>8.1f}")


def sample(interpreter: str, code: str, env: dict[str, str]) -> tuple[float, int]:
    done = subprocess.run(
        [interpreter, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"cold_start: a sample failed:\n{done.stderr[-3000:]}")
    seconds, compiled = done.stdout.strip().splitlines()[-1].split()
    return float(seconds), int(compiled)


def environment(scratch: Path, name: str, paths: list[Path]) -> dict[str, str]:
    """Lambda's environment for function `name` (the template's variables, fake credentials)."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(map(str, paths)),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
        "TZ": ":UTC",
        "LAMBDA_TASK_ROOT": str(paths[0]),
        "AWS_LAMBDA_FUNCTION_NAME": f"riverbeam-{name}",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_SESSION_TOKEN": "bench",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TABLE_NAME": "riverbeam-bench",
        "QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/riverbeam-bench.fifo",
        "AUTH_MODE": "jwt",
        "JWT_ISSUER": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_bench",
        "JWT_AUDIENCE": "bench",
        "WEBSOCKET_ENDPOINT": "https://example.execute-api.us-east-1.amazonaws.com/v1",
        "EVENT_BUS_NAME": "riverbeam-bench-approvals",
        "FRAME_TTL_SECONDS": "86400",
        "POWERTOOLS_SERVICE_NAME": "riverbeam",
        "POWERTOOLS_METRICS_NAMESPACE": "Riverbeam",
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "PYDANTIC_DISABLE_PLUGINS": "__all__",
        "RIVERBEAM_AGENTS_FILE": str(scratch / "opt" / "agents.json"),
        "RIVERBEAM_MODEL": "bedrock",
        "RIVERBEAM_DATA_DIR": str(scratch / "tmp"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15, help="samples per function (default: 15)")
    parser.add_argument("--python", help="the runtime's interpreter (default: python3.12 from pyenv or PATH)")
    parser.add_argument(
        "--without-bytecode",
        action="store_true",
        help="ship the layers as sources only (as before byte code)",
    )
    parser.add_argument(
        "--stages", action="store_true", help="also time each handler's init in stages (CPU time)"
    )
    args = parser.parse_args()
    interpreter = args.python or build_layer.runtime_interpreter(build_layer.parse_args(["unused"]))
    current = interpreter is None
    if interpreter is None:
        interpreter = sys.executable
        print(f"cold_start: no Python 3.12 found; measuring with {interpreter} and layers built for it")
    version = subprocess.run(
        [interpreter, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="riverbeam-cold-") as scratch_name:
        scratch = Path(scratch_name)
        sizes: dict[str, int] = {}
        for layer in ("riverbeam", "tokens"):
            build(scratch / "layers" / layer, layer, current, not args.without_bytecode)
            sizes[layer] = zipped_size(scratch / "layers" / layer)
        runtime_packages(scratch / "runtime", interpreter)
        trees: dict[str, list[Path]] = {}
        for name in HANDLERS:
            # Lambda extracts a function's layers into /opt in the template's order
            opt = scratch / f"opt-{name}"
            for layer in FUNCTION_LAYERS[name]:
                shutil.copytree(scratch / "layers" / layer, opt, dirs_exist_ok=True)
            task = scratch / f"task-{name}"
            shutil.copytree(ROOT / "functions" / name, task, ignore=shutil.ignore_patterns("__pycache__"))
            trees[name] = [task, opt / "python", scratch / "runtime"]
        shutil.copytree(scratch / "layers" / "riverbeam", scratch / "opt", dirs_exist_ok=True)
        (scratch / "tmp").mkdir()
        codes = {FLOOR: (FLOOR_CODE, environment(scratch, "floor", [scratch / "runtime"]))} | {
            name: (handler_code(name), environment(scratch, name, trees[name])) for name in HANDLERS
        }
        connect_env = codes["connections"][1]
        connect_env.update(bench_token(connect_env["JWT_ISSUER"]))
        read_only(scratch / "runtime")
        for name in HANDLERS:
            read_only(trees[name][0])
            read_only(trees[name][1].parent)
        try:
            for code, env in codes.values():  # once unmeasured: the OS's file cache
                sample(interpreter, code, env)
            times: dict[str, list[float]] = {name: [] for name in codes}
            compiled: dict[str, int] = {}
            for _ in range(args.rounds):
                for name, (code, env) in codes.items():
                    seconds, compiled[name] = sample(interpreter, code, env)
                    times[name].append(seconds)
            envs = {name: env for name, (_, env) in codes.items() if name != FLOOR}
            staged = stages(interpreter, envs, args.rounds) if args.stages else {}
        finally:
            writable(scratch)

    floor = statistics.median(times[FLOOR])
    load = os.getloadavg()[0]
    built = "sources only" if args.without_bytecode else "with byte code"
    print(
        f"cold start on the layers as they ship ({built}), median of {args.rounds} fresh interpreters each,"
        f" interleaved; Python {version} ({interpreter}), {os.cpu_count()} cores, load {load:.2f}"
    )
    print(f"{'':<18}{'ms':>8}{'x floor':>10}{'compiled':>10}   (goal: <= {RATIO_GOAL} x floor)")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<18}{median * 1000:>8.1f}{median / floor:>10.2f}{compiled[name]:>10}")
    print("compiled: modules compiled from source in a sample (app.py, which SAM ships as source, is one)")
    for layer, size in sizes.items():
        users = ", ".join(n for n in HANDLERS if layer in FUNCTION_LAYERS[n])
        goal = f" (goal: <= {LAYER_GOAL_MB:.0f} MB)" if layer == "riverbeam" else ""
        print(f"layer {layer:<10} {size / 1e6:6.2f} MB zipped{goal}, boto3 excluded; functions: {users}")
    if staged:
        print_stages(staged, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
