"""deploy/kubernetes: the example overlay rendered by kustomize (`kubectl kustomize`),
checked against the Kubernetes schemas, and its pod run by `podman kube play`.

podman 4.3 plays Kubernetes YAML but not all of it, so the test plays the nearest form it
supports (docs/deploy.md, "What was run here"): the native sidecar (an init container with
`restartPolicy: Always`) becomes the pod's first container; the CA Secret becomes a podman
secret; the token, which podman 4.3 cannot read from a Secret into an env variable, is set
as a value; the Service and the Job are not played: the Service's name is a host alias of
the pod's loopback (`hostAliases`), and the Job's containers, with the rendered Job's own
arguments and ConfigMap, run in the pod, so the ci run addresses the sidecar by that name
(the Host check's `control.allowed_hosts`, the token from the environment, the config sent
inline to a daemon that is not on the client's loopback). No timed probes run without
systemd: the test runs the readiness probe's request itself. No host port is published
(podman 4.3 would publish each containerPort on the host: `unpublished`), so the test
passes while other processes hold 8080, 8081 and 8790."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from helpers import REPO

KUBE = REPO / "deploy" / "kubernetes"
POD = "agent-pod-0"


def render(tmp: Path, cert: Path, key: Path, token: str) -> list[dict]:
    if not shutil.which("kubectl"):
        pytest.fail("kubectl (with kustomize) is needed to render deploy/kubernetes")
    overlay = tmp / "overlay"
    shutil.copytree(KUBE / "overlays" / "example", overlay, ignore=shutil.ignore_patterns("secrets*"))
    k = overlay / "kustomization.yaml"
    k.write_text(k.read_text().replace("../../base", os.path.relpath(KUBE / "base", overlay)))
    (overlay / "secrets").mkdir()
    (overlay / "secrets" / "token").write_text(token)
    shutil.copy(cert, overlay / "secrets" / "tls.crt")
    shutil.copy(key, overlay / "secrets" / "tls.key")
    out = subprocess.run(["kubectl", "kustomize", str(overlay)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (tmp / "rendered.yaml").write_text(out.stdout)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def ca(tmp: Path, name: str) -> tuple[Path, Path]:
    d = tmp / name
    subprocess.run([os.environ["FLAKESTORM_BIN"], "ca", "init", "--ca-dir", str(d)], check=True,
                   capture_output=True)
    return d / "ca.pem", d / "ca.key"


def validate(path: Path) -> subprocess.CompletedProcess:
    tool = str(Path(sys.executable).parent / "kubernetes-validate")
    return subprocess.run([tool, "--strict", "-k", "1.29", str(path)], capture_output=True, text=True)


def test_the_manifests_follow_the_kubernetes_schemas(tmp_path):
    cert, key = ca(tmp_path, "ca")
    docs = render(tmp_path, cert, key, "t")
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == ["ConfigMap", "ConfigMap", "Deployment", "Job", "Namespace", "Secret", "Secret", "Service"]
    p = validate(tmp_path / "rendered.yaml")
    assert p.returncode == 0, p.stdout + p.stderr
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    sidecar = spec["initContainers"][0]
    assert sidecar["restartPolicy"] == "Always", "a native sidecar"
    assert sidecar["startupProbe"]["httpGet"]["path"] == "/readyz"
    assert sidecar["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for c in [sidecar, *spec["containers"]]:
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] and sc["capabilities"]["drop"] == ["ALL"], c["name"]
        assert "memory" in c["resources"]["requests"], c["name"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/port"] == "8081"
    # The check is real: a field Kubernetes does not know is refused.
    sidecar["restartPolicyy"] = "Always"
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump_all(docs))
    p = validate(broken)
    assert p.returncode != 0 and "restartPolicyy" in p.stdout + p.stderr, p.stdout


def playable(docs: list[dict], token: str, images: dict) -> tuple[str, dict]:
    """The nearest form podman 4.3 plays, and the CA Secret."""
    out, secret = [], None
    for d in docs:
        kind = d["kind"]
        d.get("metadata", {}).pop("namespace", None)
        if kind == "Secret" and d["metadata"]["name"] == "flakestorm-ca":
            secret = d
        if kind in ("Namespace", "Secret", "Service", "Job"):
            continue
        if kind == "Deployment":
            spec = d["spec"]["template"]["spec"]
            side = spec.pop("initContainers")
            for c in side:
                c.pop("restartPolicy")
            spec["containers"] = side + spec["containers"]
            for c in spec["containers"]:
                unpublished(c)
                c["image"] = images[c["image"].split("/")[-1].split(":")[0]]
                for e in c.get("env", []):
                    if "valueFrom" in e:
                        e.pop("valueFrom")
                        e["value"] = token
            for v in spec["volumes"]:
                if "secret" in v:
                    v["secret"]["optional"] = False  # podman 4.3 dereferences it
            # The Service (not played): its name leads to the pod, here its loopback.
            service = next(s for s in docs if s["kind"] == "Service")["metadata"]["name"]
            spec["hostAliases"] = [{"ip": "127.0.0.1", "hostnames": [service]}]
        out.append(d)
    return yaml.safe_dump_all(out), secret


def unpublished(container: dict):
    """The container without `ports`: podman 4.3 publishes every containerPort on the host's
    port of the same number (8080, 8081, 8790), which another process on the machine may
    hold (a `flakestorm serve` on its defaults), and has no option to publish none. The test
    reaches the pod only from inside it (`podman exec`, `--pod`), so it needs none; the
    probes' port names become the numbers they named."""
    named = {p["name"]: p["containerPort"] for p in container.pop("ports", []) if "name" in p}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = container.get(probe, {}).get("httpGet")
        if get and isinstance(get.get("port"), str):
            get["port"] = named[get["port"]]


class Pod:
    def __init__(self, engine, tmp: Path, docs, token):
        self.engine, self.tmp, self.token = engine, tmp, token
        images = {"flakestorm": engine.IMAGE, "flakestorm-example-agent": engine.AGENT}
        text, secret = playable(docs, token, images)
        self.file = tmp / "play.yaml"
        self.file.write_text(text)
        # podman 4.3 mounts a secret volume from a podman secret holding the Secret as
        # JSON, its data as plain text.
        data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
        (tmp / "ca-secret.json").write_text(json.dumps({**secret, "data": data}))

    def play(self):
        self.engine.podman("secret", "rm", "flakestorm-ca", check=False)
        self.engine.podman("secret", "create", "flakestorm-ca", str(self.tmp / "ca-secret.json"))
        self.engine.podman("kube", "play", str(self.file), timeout=180)

    def down(self):
        volumes = self.engine.volumes_of(POD)
        self.engine.podman("kube", "down", str(self.file), check=False, timeout=180)
        # `kube down` can leave the pod behind while a container of it restarts (the bad
        # CA's sidecar exits at once): the next play of the same name would then fail.
        self.engine.podman("pod", "rm", "-f", "-t", "0", POD, check=False, timeout=180)
        self.engine.remove_volumes(volumes)
        self.engine.podman("secret", "rm", "flakestorm-ca", check=False)

    def ready(self) -> bool:
        """The readinessProbe: GET /readyz on the control port, from inside the pod."""
        probe = ("import urllib.request as u; o=u.build_opener(u.ProxyHandler({}));"
                 "print(o.open('http://127.0.0.1:8081/readyz', timeout=3).status)")
        p = self.engine.podman("exec", f"{POD}-agent", "python3", "-c", probe, check=False)
        return p.returncode == 0 and p.stdout.strip() == "200"

    def ca_pem(self) -> str:
        script = ("import urllib.request as u,sys; o=u.build_opener(u.ProxyHandler({}));"
                  "r=u.Request('http://127.0.0.1:8081/v1/ca.pem', headers={'authorization': 'Bearer '+sys.argv[1]});"
                  "print(o.open(r, timeout=3).read().decode(), end='')")
        return self.engine.podman("exec", f"{POD}-agent", "python3", "-c", script, self.token).stdout


def test_the_pod_runs_under_podman_kube_play(engine, tmp_path):
    token = secrets.token_hex(16)
    good_cert, good_key = ca(tmp_path, "good")
    _, other_key = ca(tmp_path, "other")
    # A CA Secret whose key is another CA's: the sidecar refuses to start, saying why, and
    # the pod never becomes ready.
    bad = Pod(engine, tmp_path / "bad", render(mk(tmp_path / "bad"), good_cert, other_key, token), token)
    try:
        bad.play()
        def refused():
            p = engine.podman("logs", f"{POD}-flakestorm", check=False)
            return "does not match the certificate /etc/flakestorm/ca/tls.crt" in p.stdout + p.stderr

        engine.poll("the sidecar says its CA key does not match", refused, 60)
        assert not bad.ready()
    finally:
        bad.down()
    docs = render(mk(tmp_path / "good"), good_cert, good_key, token)
    pod = Pod(engine, tmp_path / "good", docs, token)
    try:
        pod.play()
        engine.poll("/readyz answers 200 in the pod", pod.ready, 90)
        engine.poll("the agent is ready", lambda: engine.podman(
            "exec", f"{POD}-agent", "python3", "/app/healthcheck.py", "8790", check=False).returncode == 0, 60)
        script = (Path(__file__).parent / "in_agent.py").read_text()
        seen = json.loads(engine.podman("exec", "-i", f"{POD}-agent", "python3", "-", token, "0",
                                        input=script, timeout=120).stdout)
        assert seen["answer_before"].startswith("According to the search tool"), seen
        assert "HTTP 503" in seen["answer_under_fault"], seen
        assert seen["https"] == 503, seen
        assert seen["answer_after"].startswith("According to"), seen
        # The CA is the Secret's, and stays so when the sidecar restarts and when the pod
        # is made again.
        pem = pod.ca_pem()
        assert pem == good_cert.read_text()
        engine.podman("restart", f"{POD}-flakestorm")
        engine.poll("ready after the sidecar's restart", pod.ready, 90)
        assert pod.ca_pem() == pem
        pod.down()
        pod.play()
        engine.poll("ready in a new pod", pod.ready, 90)
        assert pod.ca_pem() == pem
        # The Job's containers, as the rendered Job runs them, in the pod: they reach the
        # sidecar by the Service's name (a host alias here), with the token from the env.
        job = next(d for d in docs if d["kind"] == "Job")["spec"]["template"]["spec"]
        ci_name = next(v["configMap"]["name"] for v in job["volumes"] if v["name"] == "ci")
        ci_map = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ci_name)
        ci_dir = tmp_path / "ci"
        ci_dir.mkdir()
        (ci_dir / "ci.yaml").write_text(ci_map["data"]["ci.yaml"])
        out = {}
        for c in [*job["initContainers"], *job["containers"]]:
            p = engine.podman(
                "run", "--rm", "--pod", POD, "-e", f"FLAKESTORM_API_TOKEN={token}",
                "-v", f"{ci_dir}:/etc/flakestorm/ci:ro", "--read-only", "--tmpfs", "/tmp",
                engine.IMAGE, *c["args"], check=False, timeout=180,
            )
            assert p.returncode == 0, c["name"] + ":\n" + p.stdout[-3000:] + p.stderr[-3000:]
            out[c["name"]] = p.stdout
        assert "http://flakestorm-agent:8081/readyz: ready" in out["wait-for-sidecar"], out
        assert "overall 100.0/100 (pass mark 70): PASS" in out["ci"], out["ci"][-3000:]
        # The name is allowed because the config lists it: the pod's own host name, which
        # it does not list, is refused by the Host check (DNS rebinding), saying what to do.
        p = engine.podman(
            "run", "--rm", "--pod", POD, "-e", f"FLAKESTORM_API_TOKEN={token}",
            "-v", f"{ci_dir}:/etc/flakestorm/ci:ro", "--read-only", "--tmpfs", "/tmp",
            engine.IMAGE, "ci", "--server", f"http://{POD}:8081", "-c", "/etc/flakestorm/ci/ci.yaml",
            "-o", "/tmp/ci.json",
            check=False, timeout=60,
        )
        assert p.returncode == 2 and "add the name to control.allowed_hosts" in p.stderr, p.stderr
    finally:
        pod.down()


def mk(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    return d
