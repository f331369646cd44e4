"""deploy/kubernetes/sharded: the Indexed Job of a sharded contract run, rendered by
kustomize, checked against the Kubernetes schemas, and each index's pod played with
`podman kube play`, then the merge Job's command on the shards' reports: the merged report
equals the same pod's whole (unsharded) run.

podman 4.3 plays Pods, not Jobs, so the test plays the nearest form (docs/deploy.md, "What
was run here"): per completion index, a Pod of the Job template's native sidecars (agent,
tool), and once their startup probes pass (run by the test: no timed probes without
systemd) the shard container in it with the Job's arguments and JOB_COMPLETION_INDEX set as
the Job controller sets it; the CA Secret and the ReadWriteMany claim become host folders. The
Job's completion, its podFailurePolicy and backoffLimitPerIndex are Kubernetes' and are
not exercised: the test checks the exit code each rule matches instead."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import REPO

SHARDED = REPO / "deploy" / "kubernetes" / "sharded"


def render(tmp: Path) -> list[dict]:
    out = subprocess.run(["kubectl", "kustomize", str(SHARDED)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (tmp / "rendered.yaml").write_text(out.stdout)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def validate(path: Path) -> subprocess.CompletedProcess:
    tool = str(Path(sys.executable).parent / "kubernetes-validate")
    return subprocess.run([tool, "--strict", "-k", "1.29", str(path)], capture_output=True, text=True)


def of(docs: list[dict], kind: str, name: str | None = None) -> dict:
    return next(d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name))


def test_the_sharded_job_follows_the_kubernetes_schemas(tmp_path):
    docs = render(tmp_path)
    assert sorted(d["kind"] for d in docs) == ["ConfigMap", "Job", "Job", "PersistentVolumeClaim"]
    p = validate(tmp_path / "rendered.yaml")
    assert p.returncode == 0, p.stdout + p.stderr
    job = of(docs, "Job", "flakestorm-shards")["spec"]
    assert job["completionMode"] == "Indexed" and job["completions"] == 3
    assert "auto/3" in job["template"]["spec"]["containers"][0]["args"]
    # The exit codes the rules match are the ones a shard uses (docs/scale.md).
    rules = {r["action"]: r["onExitCodes"]["values"] for r in job["podFailurePolicy"]["rules"] if "onExitCodes" in r}
    assert rules == {"FailIndex": [1], "FailJob": [2]}, rules
    assert job["backoffLimitPerIndex"] >= 1, "exit 3 (an environment error) is retried"
    for c in job["template"]["spec"]["initContainers"]:
        assert c["restartPolicy"] == "Always", f"{c['name']}: a native sidecar"
        assert "startupProbe" in c, f"{c['name']}: the next container starts once it answers"
    # The check is real: a field Kubernetes does not know is refused.
    job["completionsMode"] = "Indexed"
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump_all(docs))
    p = validate(broken)
    assert p.returncode != 0 and "completionsMode" in p.stdout + p.stderr, p.stdout


def pod_of(docs: list[dict], name: str, tmp: Path, images: dict) -> str:
    """The Job's pod template as a Pod of its native sidecars (the agent and its tool), the
    Secret as a host folder. The shard container runs in it once they have started
    (`shard`), as the kubelet starts it after their startup probes."""
    job = copy.deepcopy(of(docs, "Job", "flakestorm-shards"))
    spec = job["spec"]["template"]["spec"]
    side = spec.pop("initContainers")
    for c in side:
        assert c.pop("restartPolicy") == "Always"
        c.pop("startupProbe")
        c["image"] = images[c["image"].split("/")[-1].split(":")[0]]
    spec["containers"] = side
    spec["volumes"] = [{"name": "ca", "hostPath": {"path": str(tmp / "ca"), "type": "Directory"}}]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    return yaml.safe_dump(pod)


def shard(engine, docs: list[dict], name: str, index: int | None, tmp: Path) -> int:
    """The Job's shard container in pod `name`, as the rendered Job runs it: its args (without
    --shard for the whole run), JOB_COMPLETION_INDEX as the Job controller sets it, its
    ConfigMap, the Secret and the claim as host folders, a read-only root. Its exit code."""
    job = of(docs, "Job", "flakestorm-shards")["spec"]["template"]["spec"]
    c = next(c for c in job["containers"] if c["name"] == "shard")
    args = list(c["args"])
    env = []
    if index is None:
        at = args.index("--shard")
        del args[at:at + 2]
    else:
        env = ["-e", f"JOB_COMPLETION_INDEX={index}"]
    config = writable(tmp / "config")
    (config / "flakestorm.yaml").write_text(of(docs, "ConfigMap")["data"]["flakestorm.yaml"])
    p = engine.podman(
        "run", "--rm", "--pod", name, "--read-only", "--user", "65532:65532", *env,
        "-v", f"{config}:/etc/flakestorm/shards:ro", "-v", f"{tmp / 'ca'}:/etc/flakestorm/ca:ro",
        "-v", f"{tmp / 'reports'}:/reports", "-v", "/var/lib/flakestorm/data",
        engine.IMAGE, *args, check=False, timeout=240,
    )
    print(f"{name}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.returncode


def play_to_the_end(engine, docs, tmp: Path, name: str, index: int | None, images: dict) -> int:
    """Plays the pod's sidecars until both answer (their startup probes), then runs the
    shard in it: the shard's exit code."""
    file = tmp / f"{name}.yaml"
    file.write_text(pod_of(docs, name, tmp, images))
    engine.podman("kube", "play", str(file), timeout=180)
    try:
        for container, port in (("tool", "9000"), ("agent", "8790")):
            engine.poll(f"{name}: the {container} answers", lambda: engine.podman(
                "exec", f"{name}-{container}", "python3", "/app/healthcheck.py", port,
                check=False).returncode == 0, 60)
        return shard(engine, docs, name, index, tmp)
    finally:
        engine.podman("kube", "down", str(file), check=False, timeout=180)


def writable(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o777)  # the containers run as 65532
    return d


def judged(r: dict) -> dict:
    """What must be equal between the whole run and the merged shards."""
    cases = [
        {k: c.get(k) for k in ("scenario", "prompt", "answer", "error", "not_judged", "checks")}
        | {"faults": [[f["rule"], f["mode"], f["applied"]] for f in c["faults"]]}
        for c in r["cases"]
    ]
    keep = ("cells", "score", "verdict", "verdict_reasons", "coverage", "agent_calls", "seed", "config_digest")
    return {"cases": cases} | {k: r[k] for k in keep}


def test_each_index_plays_and_the_merge_equals_the_whole_run(engine, tmp_path):
    docs = render(tmp_path)
    images = {"flakestorm": engine.IMAGE, "flakestorm-example-agent": engine.AGENT}
    ca = writable(tmp_path / "ca")
    subprocess.run([os.environ["FLAKESTORM_BIN"], "ca", "init", "--ca-dir", str(tmp_path / "made")],
                   check=True, capture_output=True)
    shutil.copy(tmp_path / "made" / "ca.pem", ca / "tls.crt")
    shutil.copy(tmp_path / "made" / "ca.key", ca / "tls.key")
    for f in ca.iterdir():
        f.chmod(0o644)  # a Secret's defaultMode with the pod's fsGroup, here for uid 65532
    # The whole run, in the same pod, without --shard.
    whole_dir = tmp_path / "whole"
    writable(whole_dir / "reports")
    shutil.copytree(ca, whole_dir / "ca")
    code = play_to_the_end(engine, docs, whole_dir, "whole-0", None, images)
    whole = json.loads((whole_dir / "reports" / "contract.json").read_text())
    assert code == {"pass": 0, "fail": 1}.get(whole["verdict"], 2), whole["verdict_reasons"]
    faulted = [c for c in whole["cases"] if c["scenario"] == "flaky-search"]
    down = sum("unavailable" in (c["answer"] or "") for c in faulted)
    assert 0 < down < len(faulted), f"the seeded fault hit {down} of {len(faulted)}: nothing to compare"
    # The Job's three indexes, one pod each, writing to the shared folder.
    reports = writable(tmp_path / "reports")
    for i in range(3):
        code = play_to_the_end(engine, docs, tmp_path, f"shard-{i}", i, images)
        report = json.loads((reports / f"contract.shard-{i + 1}-of-3.json").read_text())
        assert report["shard"]["k"] == i + 1 and report["shard"]["n"] == 3
        want = {"pass": 0, "not_tested": 0, "fail": 1, "error": 3}[report["verdict"]]
        assert code == want, (i, report["verdict"], report["verdict_reasons"])
    # The merge Job's container, as the rendered Job runs it, on the shared folder.
    merge = of(docs, "Job", "flakestorm-merge")["spec"]["template"]["spec"]["containers"][0]
    config = writable(tmp_path / "config")
    (config / "flakestorm.yaml").write_text(of(docs, "ConfigMap")["data"]["flakestorm.yaml"])
    p = engine.podman(
        "run", "--rm", "--read-only", "--user", "65532:65532",
        "-v", f"{config}:/etc/flakestorm/shards:ro", "-v", f"{reports}:/reports",
        engine.IMAGE, *merge["args"], check=False, timeout=120,
    )
    merged = json.loads((reports / "merged" / "contract.json").read_text())
    assert p.returncode == {"pass": 0, "fail": 1}.get(merged["verdict"], 2), p.stdout + p.stderr
    assert (reports / "merged" / "contract.html").exists() and (reports / "merged" / "contract.junit.xml").exists()
    got, want = judged(merged), judged(whole)
    assert got == want, json.dumps({"merged": got, "whole": want}, indent=1)[:20000]


def test_the_github_actions_example_follows_the_workflow_schema(tmp_path):
    """deploy/github-actions/sharded.yml: the CI-matrix form of the same run."""
    tool = str(Path(sys.executable).parent / "check-jsonschema")
    example = REPO / "deploy" / "github-actions" / "sharded.yml"
    p = subprocess.run([tool, "--builtin-schema", "vendor.github-workflows", str(example)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    flow = yaml.safe_load(example.read_text())
    run = " ".join(s.get("run", "") for s in flow["jobs"]["shard"]["steps"])
    assert "--shard ${{ matrix.k }}/4" in run and len(flow["jobs"]["shard"]["strategy"]["matrix"]["k"]) == 4
    assert "report merge shards" in " ".join(s.get("run", "") for s in flow["jobs"]["merge"]["steps"])
    # The check is real: a key the schema does not know is refused.
    broken = tmp_path / "broken.yml"
    text = example.read_text()
    assert text.count("    runs-on: ") == 2
    broken.write_text(text.replace("    runs-on: ", "    runs_on: ", 1))
    p = subprocess.run([tool, "--builtin-schema", "vendor.github-workflows", str(broken)],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "runs_on" in p.stdout + p.stderr, p.stdout
