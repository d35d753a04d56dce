#!/usr/bin/env python3
"""The fused stdlib workloads on the GPU against PyTorch (docs/testing.md, "GPU check").

Every kernel of the reduction-chain workloads (softmax and log-softmax on short and long
rows, layernorm and RMS norm with and without the residual add, fp8 per-token
quantization, MoE routing, softmax top-k, attention causal and not, decoding attention
in one segment and split) runs through the runtime's Python bindings
(the kiln package's runtime layer, python/kiln/runtime.py) on fresh random inputs, large magnitudes included
(logits of +-1000, where a softmax taken without its maximum overflows; rows offset by
1e4, where a variance taken as E[x^2] - E[x]^2 cancels), and is compared with PyTorch's
own operators computed in f64 on the same inputs. Kiln's random numbers (randint, rand,
randn) are compared with Triton's for the same seeds and offsets, where Triton is there.

    torch_reference.py prepare --dslc DSLC --out DIR   on the build machine: compiles
                                                        the bundles (sm_90a) into DIR
    torch_reference.py run DIR --lib LIBKILN_RUNTIME    on the GPU machine (PyTorch and a
                                                        CUDA driver); exit 0 all passed,
                                                        1 a failure, 77 no GPU or torch

KILN_SEED fixes the inputs (default: fresh ones, the seed printed).
"""

import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name: (source, kernel, defines, extra dslc flags)
BUNDLES = {
    "softmax": ("stdlib/softmax.kiln", "softmax", {"BLOCK": 1024}, []),
    "softmax_split4": ("stdlib/softmax.kiln", "softmax", {"BLOCK": 1024}, ["--reduction-split=4"]),
    "log_softmax": ("stdlib/softmax.kiln", "log_softmax", {"BLOCK": 1024}, []),
    "layernorm": ("stdlib/layernorm.kiln", "layernorm", {"BLOCK": 1024}, []),
    "layernorm_residual": ("stdlib/layernorm.kiln", "layernorm_residual", {"BLOCK": 1024}, []),
    "rmsnorm": ("stdlib/rmsnorm.kiln", "rmsnorm", {"BLOCK": 1024}, []),
    "rmsnorm_residual": ("stdlib/rmsnorm.kiln", "rmsnorm_residual", {"BLOCK": 1024}, []),
    "fp8_quant": ("stdlib/fp8_quant.kiln", "quant_per_token", {"BLOCK": 1024}, []),
    "moe_e64": ("stdlib/moe_routing.kiln", "route", {"BT": 4, "BE": 64, "K": 8}, []),
    "moe_e256": ("stdlib/moe_routing.kiln", "route", {"BT": 2, "BE": 256, "K": 8}, []),
    "softmax_topk": ("stdlib/softmax_topk.kiln", "softmax_topk", {"BLOCK": 1024, "K": 8}, []),
    "attention": ("stdlib/attention.kiln", "attention", {"D": 64, "BM": 32, "BN": 32}, []),
    "attention_causal": ("stdlib/attention.kiln", "attention", {"D": 64, "BM": 32, "BN": 32, "CAUSAL": "true"}, []),
    "decode": ("stdlib/decode_attention.kiln", "decode_attention", {"D": 64, "BN": 64}, []),
    "decode_split4": ("stdlib/decode_attention.kiln", "decode_attention", {"D": 64, "BN": 64},
                      ["--reduction-split=4"]),
    "random_draws": ("tests/programs/random.kiln", "draws", {"BLOCK": 128}, []),
}


def prepare(dslc, out):
    os.makedirs(out, exist_ok=True)
    for name, (source, kernel, defines, flags) in BUNDLES.items():
        cmd = [dslc, os.path.join(REPO, source), "--kernel", kernel, "--target=sm_90a", "--emit=bundle",
               "-o", os.path.join(out, name + ".kbin")] + flags
        for key, value in defines.items():
            cmd += ["-D", f"{key}={value}"]
        subprocess.run(cmd, check=True)
    print(f"torch-reference: {len(BUNDLES)} bundles in {out}")


def run(folder, lib):
    try:
        import numpy as np
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"torch-reference: skipped ({e})")
        return 77
    if not torch.cuda.is_available():
        print("torch-reference: skipped (no CUDA device for PyTorch)")
        return 77
    sys.path.insert(0, os.path.join(REPO, "python"))
    from kiln.runtime import Runtime

    seed = int(os.environ.get("KILN_SEED", int.from_bytes(os.urandom(4), "little")))
    print(f"torch-reference: seed {seed}")
    gen = torch.Generator().manual_seed(seed)
    rt = Runtime(lib)
    print(f"torch-reference: {rt.device_name} ({rt.target})")
    kernels = {}
    results = []

    def kernel(name):
        if name not in kernels:
            kernels[name] = rt.load(os.path.join(folder, name + ".kbin"))
        return kernels[name]

    def randn(*shape, scale=1.0, offset=0.0):
        return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale + offset

    def up(t, dtype=None):
        return rt.upload(t.contiguous().numpy(), dtype)

    def down(buf, like, np_dtype=np.float32):
        return torch.from_numpy(buf.download(np_dtype, tuple(like)))

    def check(case, got, want, rtol, atol):
        got64, want64 = got.to(torch.float64), want.to(torch.float64)
        err = ((got64 - want64).abs() - rtol * want64.abs()).max().item()
        ok = bool(torch.isfinite(got64).all()) and err <= atol
        results.append((case, ok, f"max |got - want| - rtol*|want| = {err:.3g} (atol {atol:g})"))

    def exact(case, ok, detail):
        results.append((case, bool(ok), detail))

    # ---- softmax and log-softmax: short rows, long rows (several blocks), split rows
    for rows, cols, scale in [(64, 1000, 1.0), (64, 1000, 1000.0), (16, 20000, 1.0), (16, 20000, 1000.0)]:
        x = randn(rows, cols, scale=scale).float()
        want = torch.softmax(x.double(), dim=-1)
        xs = up(x)
        for name in (["softmax", "softmax_split4"] if cols > 1024 else ["softmax"]):
            y = rt.alloc(x.numel() * 4, "f32")
            kernel(name).launch((rows,), xs, y, cols, cols)
            check(f"{name} {rows}x{cols} scale {scale:g}", down(y, x.shape), want, 1e-5, 1e-7)
        y = rt.alloc(x.numel() * 4, "f32")
        kernel("log_softmax").launch((rows,), xs, y, cols, cols)
        check(f"log_softmax {rows}x{cols} scale {scale:g}", down(y, x.shape),
              torch.log_softmax(x.double(), dim=-1), 1e-6, 1e-4)

    # ---- layernorm and RMS norm, rows offset by 1e4 where the naive variance cancels
    # Rows offset by 1e4: a subtraction of the f32 mean alone errs by up to half an ulp
    # of 1e4 (5e-4), times |w|, and the naive E[x^2] - E[x]^2 by O(1); so layernorm may
    # err by twice what PyTorch's own f32 kernel does on the GPU, or 1e-4.
    eps = 1e-5

    def layernorm_atol(v, w, b, want):
        ours = F.layer_norm(v.cuda(), (v.shape[-1],), w.cuda(), b.cuda(), eps).cpu().double()
        return max(1e-4, 2 * (ours - want).abs().max().item())

    for rows, cols, offset in [(64, 1000, 0.0), (32, 5000, 1e4)]:
        x, res = randn(rows, cols, offset=offset).float(), randn(rows, cols).float()
        w, b = (randn(cols) * 0.5 + 1).float(), randn(cols).float()
        xs, rs, ws, bs = up(x), up(res), up(w), up(b)
        y = rt.alloc(x.numel() * 4, "f32")
        kernel("layernorm").launch((rows,), xs, ws, bs, y, cols, eps)
        want = F.layer_norm(x.double(), (cols,), w.double(), b.double(), eps)
        check(f"layernorm {rows}x{cols} offset {offset:g}", down(y, x.shape), want, 0,
              layernorm_atol(x, w, b, want))
        h, y = rt.alloc(x.numel() * 4, "f32"), rt.alloc(x.numel() * 4, "f32")
        kernel("layernorm_residual").launch((rows,), xs, rs, ws, bs, h, y, cols, eps)
        hh = x.double() + res.double()
        check(f"layernorm_residual h {rows}x{cols}", down(h, x.shape), hh.float(), 0, 0)
        want = F.layer_norm(hh.float().double(), (cols,), w.double(), b.double(), eps)
        check(f"layernorm_residual y {rows}x{cols} offset {offset:g}", down(y, x.shape), want, 0,
              layernorm_atol(hh.float(), w, b, want))

        def rms(v):
            return v / torch.sqrt(v.pow(2).mean(-1, keepdim=True) + eps) * w.double()

        y = rt.alloc(x.numel() * 4, "f32")
        kernel("rmsnorm").launch((rows,), xs, ws, y, cols, eps)
        check(f"rmsnorm {rows}x{cols} offset {offset:g}", down(y, x.shape), rms(x.double()), 1e-5, 1e-5)
        h, y = rt.alloc(x.numel() * 4, "f32"), rt.alloc(x.numel() * 4, "f32")
        kernel("rmsnorm_residual").launch((rows,), xs, rs, ws, h, y, cols, eps)
        check(f"rmsnorm_residual y {rows}x{cols}", down(y, x.shape), rms(hh.float().double()), 1e-5, 1e-5)

    # ---- fp8 e4m3 per-token quantization: scale and every byte exactly
    for rows, cols, scale in [(64, 4096, 1.0), (16, 3000, 300.0)]:
        x = randn(rows, cols, scale=scale).to(torch.bfloat16)
        x[0] = 0  # an all-zero row: scale 1
        q, s = rt.alloc(x.numel(), "f8e4m3"), rt.alloc(rows * 4, "f32")
        kernel("fp8_quant").launch((rows,), up(x.view(torch.int16), "bf16"), q, s, cols)
        amax = x.float().abs().amax(-1)
        want_s = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
        want_q = (x.float() * (1.0 / want_s)[:, None]).to(torch.float8_e4m3fn).view(torch.uint8)
        got_q = down(q, x.shape, np.uint8)
        got_s = down(s, (rows,))
        exact(f"fp8_quant scale {rows}x{cols}", torch.equal(got_s, want_s), "every row's scale bit for bit")
        bad = int((got_q != want_q).sum())
        exact(f"fp8_quant q {rows}x{cols}", bad == 0, f"{bad} of {x.numel()} bytes differ")

    # ---- MoE routing: softmax over the experts, top 8, renormalized
    for experts, name, bt in [(64, "moe_e64", 4), (256, "moe_e256", 2)]:
        tokens, k = 4099, 8
        z = (torch.rand(tokens, experts, generator=gen, dtype=torch.float64) * 8 - 4).float()
        ids, wts = rt.alloc(tokens * k * 4, "i32"), rt.alloc(tokens * k * 4, "f32")
        kernel(name).launch(((tokens + bt - 1) // bt,), up(z), ids, wts, tokens, experts)
        p = torch.softmax(z.double(), -1)
        want_w, want_e = torch.topk(p, k, dim=-1)
        got_e = down(ids, (tokens, k), np.int32).long()
        # Experts may differ only where their probabilities tie to f32 rounding.
        swap = ((p.gather(1, got_e) - want_w).abs() / want_w).max().item()
        exact(f"moe routing {tokens}x{experts} experts", swap < 1e-6, f"worst probability mismatch {swap:.3g}")
        check(f"moe routing {tokens}x{experts} weights", down(wts, (tokens, k)),
              want_w / want_w.sum(-1, keepdim=True), 1e-5, 1e-7)

    # ---- softmax top-k over long rows
    rows, cols, k = 32, 5000, 8
    x = randn(rows, cols, scale=4.0).float()
    tp, ti = rt.alloc(rows * k * 4, "f32"), rt.alloc(rows * k * 4, "i32")
    kernel("softmax_topk").launch((rows,), up(x), tp, ti, cols)
    p = torch.softmax(x.double(), -1)
    want_p, _ = torch.topk(p, k, dim=-1)
    got_i = down(ti, (rows, k), np.int32).long()
    check("softmax_topk values", down(tp, (rows, k)), want_p, 1e-5, 1e-9)
    check("softmax_topk columns (their probabilities)", p.gather(1, got_i), want_p, 1e-6, 0)

    # ---- attention, causal and not, a sequence that no block size divides
    heads, seq, d = 6, 500, 64
    for name, causal in [("attention", False), ("attention_causal", True)]:
        q, kk, v = (randn(heads, seq, d, scale=s).float() for s in (1.0, 1.0, 1.0))
        o = rt.alloc(q.numel() * 4, "f32")
        scale = d ** -0.5
        kernel(name).launch(((seq + 31) // 32, heads), up(q), up(kk), up(v), o, seq, scale)
        s = q.double() @ kk.double().transpose(-1, -2) * scale
        if causal:
            s = s.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
        check(f"{name} {heads}x{seq}x{d}", down(o, q.shape), torch.softmax(s, -1) @ v.double(), 1e-4, 1e-5)

    # ---- decoding attention over a long cache, one segment and split four ways
    heads, seq, d = 16, 5000, 64
    q, kk, v = randn(heads, d).float(), randn(heads, seq, d).float(), randn(heads, seq, d).float()
    scale = d ** -0.5
    want = torch.softmax(torch.einsum("hd,hsd->hs", q.double(), kk.double()) * scale, -1)
    want = torch.einsum("hs,hsd->hd", want, v.double())
    qs, ks, vs = up(q), up(kk), up(v)
    for name in ("decode", "decode_split4"):
        o = rt.alloc(q.numel() * 4, "f32")
        kernel(name).launch((heads,), qs, ks, vs, o, seq, scale)
        check(f"{name} {heads}x{seq}x{d}", down(o, q.shape), want, 1e-4, 1e-5)

    # ---- random numbers against Triton's: the same seed and offsets, the same numbers
    compare_random_with_triton(rt, kernel, exact, check, down, seed)

    rt.synchronize()
    failed = [r for r in results if not r[1]]
    for case, ok, detail in results:
        print(f"  {'ok  ' if ok else 'FAIL'} {case}: {detail}")
    print(f"torch-reference: {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def compare_random_with_triton(rt, kernel, exact, check, down, seed):
    """Kiln's randint and rand must be Triton's bit for bit (one Philox 4x32-10, one
    mapping to floats); randn goes through log, sqrt and cos, whose last bits each
    compiler's math library decides, so it meets a tolerance."""
    import numpy as np
    import torch
    try:
        import triton
        import triton.language as tl
    except ImportError as e:
        print(f"torch-reference: random numbers not compared with Triton ({e})")
        return

    @triton.jit
    def triton_draws(ints, uniforms, normals, seed, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(ints + offs, tl.randint(seed, offs), mask=m)
        tl.store(uniforms + offs, tl.rand(seed, offs), mask=m)
        tl.store(normals + offs, tl.randn(seed, offs), mask=m)

    n, block = 100003, 128
    grid = ((n + block - 1) // block,)
    for s in (0, 1, -1, 123456789, -2**31, seed % 2**31):
        ints = torch.empty(n, dtype=torch.int32, device="cuda")
        uniforms = torch.empty(n, dtype=torch.float32, device="cuda")
        normals = torch.empty(n, dtype=torch.float32, device="cuda")
        triton_draws[grid](ints, uniforms, normals, s, n, BLOCK=block)
        ki, ku, kn = rt.alloc(n * 4, "u32"), rt.alloc(n * 4, "f32"), rt.alloc(n * 4, "f32")
        kernel("random_draws").launch(grid, ki, ku, kn, s, n)
        got_i = down(ki, (n,), np.uint32).numpy().view(np.int32)
        got_u = down(ku, (n,)).numpy()
        want_i, want_u = ints.cpu().numpy(), uniforms.cpu().numpy()
        bad_i = int((got_i != want_i).sum())
        bad_u = int((got_u.view(np.uint32) != want_u.view(np.uint32)).sum())
        exact(f"randint seed {s} vs Triton", bad_i == 0, f"{bad_i} of {n} differ")
        exact(f"rand seed {s} vs Triton", bad_u == 0, f"{bad_u} of {n} differ in any bit")
        check(f"randn seed {s} vs Triton", down(kn, (n,)), normals.cpu(), 1e-5, 1e-5)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--dslc", required=True)
    p.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("folder")
    r.add_argument("--lib", required=True, help="libkiln_runtime.so")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.dslc, args.out)
        return 0
    return run(args.folder, args.lib)


if __name__ == "__main__":
    sys.exit(main())
