#!/usr/bin/python3
#===- encoder_layer_test.py - A whole encoder layer through dslc run, both scopes -===#
#
# stdlib/encoder_layer.kiln's kernels chained as one BERT-like layer (its header says
# how), on the reference interpreter through `dslc run`, for 128 tokens of width 128 (2
# heads of 64) and an FFN of 256, with a BigBird mask that dslc builds from the stdlib
# predicate (`--arg mask=bigbird(...)`). The layer runs in both fusion scopes around
# attention's neighbours — the residual add and layernorm fused into each output
# projection, or a separate residual_layernorm after a plain projection — and each is
# compared with the layer computed by NumPy in double precision from the same bf16
# inputs, and the two scopes with each other. The kernels' own cases
# (tests/programs/cases_encoder.py) check each against NumPy alone; this checks that
# their layouts agree when one feeds the next. The file's `encoder_layer` graph, run
# with one `dslc run`, must give the fused scope's result exactly; every run keeps each
# reduction in one program and maps attention row-wise (--reduction-split=1
# --sparse-mapping=row), so that all sum in the same order (the kernels' cases cover
# the other splits and mappings).
#
# Usage: encoder_layer_test.py --dslc build/tools/dslc
#
#===---------------------------------------------------------------------------===#
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import kilncase as kc  # noqa: E402

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SOURCE = os.path.join(REPO, "stdlib", "encoder_layer.kiln")
T, H, D, F = 128, 2, 64, 256
E = H * D
EPS = 1e-5
MASK = (6, 3, 16, 30, 7)  # bigbird(r, c, w, g, b, percent, seed)


class Layer:
    def __init__(self, dslc, folder, rng):
        self.dslc, self.folder = dslc, folder
        self.params = {
            "x": rng.normal(0, 1, (T, E)), "w_qkv": rng.normal(0, 0.08, (E, 3 * E)), "b_qkv": rng.normal(0, 0.1, 3 * E),
            "key_bias": np.where(rng.random(T) < 0.1, -4.0, 0.0),  # a padding-like bias on some keys
            "w_o": rng.normal(0, 0.08, (E, E)), "b_o": rng.normal(0, 0.1, E),
            "g1": rng.uniform(0.8, 1.2, E), "be1": rng.normal(0, 0.1, E),
            "w_1": rng.normal(0, 0.08, (E, F)), "b_1": rng.normal(0, 0.1, F),
            "w_2": rng.normal(0, 0.06, (F, E)), "b_2": rng.normal(0, 0.1, E),
            "g2": rng.uniform(0.8, 1.2, E), "be2": rng.normal(0, 0.1, E),
        }
        for name, value in self.params.items():
            dtype = "f32" if name == "key_bias" else "bf16"
            self.params[name] = kc.to_values(value, dtype)
            self.save(name, self.params[name], dtype)

    def path(self, name):
        return os.path.join(self.folder, name + ".npy")

    def save(self, name, values, dtype="bf16"):
        np.save(self.path(name), kc.encode(np.asarray(values), dtype))

    def load(self, name, shape):
        return kc.decode(np.load(self.path(name)), "bf16").reshape(shape)

    def run(self, kernel, grid, args, defines=()):
        cmd = [self.dslc, "run", SOURCE, "--kernel", kernel, "--device", "interp", "--grid", grid,
               "--reduction-split=1", "--sparse-mapping=row"]
        for d in defines:
            cmd += ["-D", d]
        for a in args:
            cmd += ["--arg", a]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), p.stderr))

    def linear(self, x, w, b, y, M, N, K, act=0):
        self.save(y, np.zeros((M, N)))
        self.run("linear", "%d,%d" % (math.ceil(M / 64), math.ceil(N / 64)),
                 ["x=" + self.path(x), "w=" + self.path(w), "b=" + self.path(b), "y=" + self.path(y),
                  "M=%d" % M, "N=%d" % N, "K=%d" % K], ["ACT=%d" % act])

    def project_and_normalize(self, fused, x, w, b, res, g, be, y, K):
        if fused:
            self.save(y, np.zeros((T, E)))
            self.run("linear_residual_layernorm", "%d" % math.ceil(T / 16),
                     ["x=" + self.path(x), "w=" + self.path(w), "b=" + self.path(b), "res=" + self.path(res),
                      "gamma=" + self.path(g), "beta=" + self.path(be), "y=" + self.path(y),
                      "M=%d" % T, "N=%d" % E, "K=%d" % K, "eps=%g" % EPS], ["NP=128"])
        else:
            self.linear(x, w, b, y + "_proj", T, E, K)
            self.save(y, np.zeros((T, E)))
            self.run("residual_layernorm", "%d" % math.ceil(T / 16),
                     ["a=" + self.path(y + "_proj"), "res=" + self.path(res), "gamma=" + self.path(g),
                      "beta=" + self.path(be), "y=" + self.path(y), "M=%d" % T, "N=%d" % E, "eps=%g" % EPS],
                     ["NP=128"])

    def forward(self, fused):
        tag = "fused" if fused else "unfused"
        self.linear("x", "w_qkv", "b_qkv", "qkv_" + tag, T, 3 * E, E)
        self.save("a_" + tag, np.zeros((T, E)))
        self.run("encoder_attention", "%d,%d" % (T // 64, H),
                 ["qkv=" + self.path("qkv_" + tag), "key_bias=" + self.path("key_bias"), "a=" + self.path("a_" + tag),
                  "mask=bigbird(%d,%d,%s)" % (T, T, ",".join(str(v) for v in MASK)), "scale=%r" % (D ** -0.5)],
                 ["H=%d" % H])
        self.project_and_normalize(fused, "a_" + tag, "w_o", "b_o", "x", "g1", "be1", "h_" + tag, E)
        self.linear("h_" + tag, "w_1", "b_1", "f_" + tag, T, F, E, act=1)
        self.project_and_normalize(fused, "f_" + tag, "w_2", "b_2", "h_" + tag, "g2", "be2", "y_" + tag, F)
        return self.load("y_" + tag, (T, E))

    def forward_graph(self):
        """The fused scope again, as the file's `encoder_layer` graph: one dslc run."""
        for name, shape in (("qkv_g", (T, 3 * E)), ("a_g", (T, E)), ("h_g", (T, E)), ("f_g", (T, F)), ("y_g", (T, E))):
            self.save(name, np.zeros(shape))
        names = ["x", "w_qkv", "b_qkv", "key_bias", "w_o", "b_o", "g1", "be1", "w_1", "b_1", "w_2", "b_2", "g2", "be2"]
        args = [n + "=" + self.path(n) for n in names]
        args += [n + "=" + self.path(n + "_g") for n in ("y", "qkv", "a", "h", "f")]
        args += ["mask=bigbird(%d,%d,%s)" % (T, T, ",".join(str(v) for v in MASK)), "T=%d" % T, "F=%d" % F,
                 "scale=%r" % (D ** -0.5), "eps=%g" % EPS]
        cmd = [self.dslc, "run", SOURCE, "--kernel", "encoder_layer", "--device", "interp", "--reduction-split=1",
               "--sparse-mapping=row", "-D", "H=%d" % H,
               "-D", "D=%d" % D, "-D", "NP=128"]
        for a in args:
            cmd += ["--arg", a]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), p.stderr))
        return self.load("y_g", (T, E))

    def reference(self):
        """The layer in float64 from the same bf16 inputs, without the kernels' roundings."""
        p = {k: np.asarray(v, dtype=np.float64) for k, v in self.params.items()}
        x = p["x"].reshape(T, E)
        qkv = (x @ p["w_qkv"].reshape(E, 3 * E) + p["b_qkv"]).reshape(T, 3, H, D)
        q, k, v = (qkv[:, i].transpose(1, 0, 2) for i in range(3))
        keep = kc.bigbird(*MASK)(None, (T, T), 64, 64)
        s = np.einsum("htd,hsd->hts", q, k) * D ** -0.5 + p["key_bias"][None, None, :]
        s = np.where(keep[None], s, -np.inf)
        e = np.where(keep[None], np.exp(s - s.max(axis=-1, keepdims=True)), 0.0)
        a = np.einsum("hts,hsd->htd", e / e.sum(axis=-1, keepdims=True), v).transpose(1, 0, 2).reshape(T, E)

        def norm(h, g, be):
            d = h - h.mean(axis=1, keepdims=True)
            return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + EPS) * g + be

        h = norm(x + a @ p["w_o"].reshape(E, E) + p["b_o"], p["g1"], p["be1"])
        f = h @ p["w_1"].reshape(E, F) + p["b_1"]
        f = 0.5 * f * (1.0 + kc.erf(f / np.sqrt(2.0)))
        return norm(h + f @ p["w_2"].reshape(F, E) + p["b_2"], p["g2"], p["be2"])


def main():
    ap = argparse.ArgumentParser(description="An encoder layer of stdlib/encoder_layer.kiln on the interpreter.")
    ap.add_argument("--dslc", required=True)
    args = ap.parse_args()
    seed = int(os.environ.get("KILN_SEED", np.random.SeedSequence().entropy % (1 << 31)))
    failures = []
    with tempfile.TemporaryDirectory(prefix="kiln-encoder-") as folder:
        layer = Layer(args.dslc, folder, np.random.default_rng(seed))
        want = layer.reference()
        got = {fused: layer.forward(fused) for fused in (True, False)}
        # Outputs are layernormed (about unit scale); each kernel rounds to bf16.
        for fused, y in got.items():
            err = np.abs(y - want).max()
            name = "fused" if fused else "unfused"
            print("%s scope: max abs error %.4f against NumPy" % (name, err))
            if not np.isfinite(y).all() or err > 0.1:
                failures.append("%s scope differs from NumPy by %.4f" % (name, err))
        both = np.abs(got[True] - got[False]).max()
        print("fused and unfused scopes differ by at most %.4f" % both)
        if both > 0.1:
            failures.append("the two scopes differ by %.4f" % both)
        # The graph launches the fused scope's kernels with the same consts, in the same
        # order, on the same interpreter: its result is the same, bit for bit.
        graph = layer.forward_graph()
        same = np.array_equal(graph, got[True])
        print("the encoder_layer graph %s the fused scope's launches" % ("equals" if same else "DIFFERS from"))
        if not same:
            failures.append("the graph differs from the fused launches by %.4g" % np.abs(graph - got[True]).max())
    for f in failures:
        print("FAIL: %s [KILN_SEED=%d]" % (f, seed))
    print("encoder layer: %s" % ("FAILED" if failures else "PASS"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
