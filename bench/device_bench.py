#!/usr/bin/env python3
"""Runs the Kiln benchmarks and their peers on one GPU in one go, and prints the table.

    python3 bench/device_bench.py [--only A,B,...] [BUNDLE_DIR]   (default: build-bench)

Measures, in this order and on this GPU: the ceilings (a 2 GiB device-to-device copy,
cuBLAS bf16 GEMMs), the Kiln bundles (BUNDLE_DIR/kiln-bench, prepared by
bench/prepare.sh), then the peers a user would pick instead (torch eager,
torch.compile, the Triton tutorial kernels, cuBLAS, PyTorch's scaled_dot_product_attention
on its FlashAttention-2 and cuDNN backends, and for decoding also on its default and
memory-efficient ones). Every peer is timed like
kiln-bench times Kiln: triton.testing.do_bench, which flushes the L2 cache before each
launch and takes the median of event-timed launches. Results go to $OUT (or /tmp) as
results.json and results.md; the table is printed last. --only runs just the workloads
whose names contain one of the given words (softmax, layernorm, rmsnorm, vector_add, matmul,
attention, fp8, moe, decode), Kiln and peers alike; the cuBLAS ceilings are measured only when matmul or
attention runs (attention: 8192^3 only, the reference of its fraction column).
"""
import json, os, subprocess, sys, time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

DEV = "cuda"
OUT = os.environ.get("OUT", "/tmp")
args = sys.argv[1:]
ONLY = []
if args[:1] == ["--only"] and len(args) > 1:
    ONLY = args[1].split(",")
    args = args[2:]
BUNDLES = args[0] if args else "build-bench"
rows = []


def selected(name):
    return not ONLY or any(word in name for word in ONLY)


def bench(f):
    return do_bench(f, warmup=50, rep=300, return_mode="median")


def record(workload, system, ms, config="", bytes_=0, flops=0, check="ok"):
    r = dict(workload=workload, system=system, config=config, us=round(ms * 1e3, 2), check=check)
    if flops:
        r.update(val=round(flops / ms / 1e9, 1), unit="TFLOP/s")
    else:
        r.update(val=round(bytes_ / ms / 1e6, 1), unit="GB/s")
    rows.append(r)
    print(json.dumps(r), flush=True)


def relerr(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm()).item()


def checked(err, tol):
    return "ok" if err == err and err < tol else f"FAIL rel_error={err:.3g}"


# ---- ceilings -------------------------------------------------------------------------
x = torch.empty(2 * 1024**3, dtype=torch.uint8, device=DEV)
y = torch.empty_like(x)
ms = bench(lambda: y.copy_(x))
COPY_BW = 2 * x.numel() / ms / 1e6
record("copy 2 GiB (ceiling)", "torch copy_", ms, bytes_=2 * x.numel())
del x, y
GEMM = {}
for n in (4096, 8192) if selected("matmul") else (8192,) if selected("attention") else ():
    a = torch.randn(n, n, dtype=torch.bfloat16, device=DEV)
    b = torch.randn_like(a)
    ms = bench(lambda: a @ b)
    GEMM[n] = 2 * n**3 / ms / 1e9
    record(f"matmul bf16 {n}^3" + (" (ceiling)" if n == 8192 else ""), "cuBLAS", ms, flops=2 * n**3)
    del a, b
torch.cuda.empty_cache()

# ---- Kiln -----------------------------------------------------------------------------
for word in ONLY or [""]:
    only = ["--only", word] if word else []
    kiln = subprocess.run([os.path.join(BUNDLES, "kiln-bench"), *only, "--json", os.path.join(OUT, f"kiln{word}.json"),
                           BUNDLES], capture_output=True, text=True)
    sys.stderr.write(kiln.stderr)
    for line in kiln.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            r.setdefault("us", float("nan"))
            r.setdefault("val", 0.0)
            r.setdefault("unit", "")
            rows.append(r)
            print(line, flush=True)
    if kiln.returncode not in (0, 1):
        print(f"kiln-bench exited with {kiln.returncode}", flush=True)

# ---- peers: vector add ----------------------------------------------------------------
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


if selected("vector_add"):
    n = 1 << 28
    xa = torch.rand(n, device=DEV) * 2 - 1
    ya = torch.rand(n, device=DEV) * 2 - 1
    oa = torch.empty_like(xa)
    ref = xa + ya
    label = "vector add f32 2^28"
    f = lambda: torch.add(xa, ya, out=oa)
    f(); record(label, "torch eager", bench(f), bytes_=12 * n, check=checked(relerr(oa, ref), 1e-6))
    f = lambda: add_kernel[(triton.cdiv(n, 1024),)](xa, ya, oa, n, BLOCK_SIZE=1024)
    oa.zero_(); f(); record(label, "triton tutorial", bench(f), "BLOCK_SIZE=1024", bytes_=12 * n, check=checked(relerr(oa, ref), 1e-6))
    del xa, ya, oa, ref
    torch.cuda.empty_cache()

# ---- peers: softmax -------------------------------------------------------------------
@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n_cols
    x = tl.load(in_ptr + row * n_cols + offs, mask=m, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=m)


def tri_softmax_warps(n):
    return 16 if n >= 16384 else 8 if n >= 2048 else 4


def tri_softmax(x, o):
    M, N = x.shape
    softmax_kernel[(M,)](o, x, N, BLOCK=triton.next_power_of_2(N), num_warps=tri_softmax_warps(N))
    return o


if selected("softmax"):
    csm = torch.compile(lambda x: torch.softmax(x.float(), -1).to(x.dtype))
    for M, N in [(16384, 1024), (4096, 8192), (1024, 32768)]:
        label = f"softmax bf16 {M}x{N}"
        x = (torch.rand(M, N, device=DEV) * 16 - 8).to(torch.bfloat16)
        o = torch.empty_like(x)
        ref = torch.softmax(x.double(), -1)
        # What a copy of the same bytes reaches: the floor of this size (launch, tail and
        # the L2 flush weigh more on 64 MiB than on the 2 GiB ceiling).
        record(f"copy bf16 {M}x{N} (softmax's bytes)", "torch copy_", bench(lambda: o.copy_(x)),
               bytes_=4 * M * N)
        for name, cfg, f in [("torch eager", "", lambda: torch.softmax(x, -1)),
                             ("torch.compile", "", lambda: csm(x)),
                             ("triton tutorial", f"num_warps={tri_softmax_warps(N)}", lambda: tri_softmax(x, o))]:
            try:
                err = relerr(f(), ref)
                record(label, name, bench(f), cfg, bytes_=4 * M * N, check=checked(err, 1e-2))
            except Exception as e:
                print("FAIL", name, label, repr(e)[:300], flush=True)
        del x, o, ref

# ---- peers: layernorm -----------------------------------------------------------------
@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # The forward kernel of Triton's layer-norm tutorial.
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y, mask=mask)


if selected("layernorm"):
    M, N = 16384, 4096
    label = f"layernorm bf16 {M}x{N}"
    x = (torch.rand(M, N, device=DEV) * 6 - 2).to(torch.bfloat16)
    w = (torch.rand(N, device=DEV) + 0.5).to(torch.bfloat16)
    b = (torch.rand(N, device=DEV) * 2 - 1).to(torch.bfloat16)
    y = torch.empty_like(x)
    mean = torch.empty(M, device=DEV)
    rstd = torch.empty(M, device=DEV)
    ref = torch.nn.functional.layer_norm(x.double(), (N,), w.double(), b.double(), 1e-5)
    cln = torch.compile(lambda x: torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5))
    BS = min(65536 // x.element_size(), triton.next_power_of_2(N))
    nw = min(max(BS // 256, 1), 8)
    def tri_ln():
        layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, N, N, 1e-5, BLOCK_SIZE=BS, num_warps=nw)
        return y
    for name, cfg, f in [("torch eager", "", lambda: torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5)),
                         ("torch.compile", "", lambda: cln(x)),
                         ("triton tutorial", f"BLOCK_SIZE={BS} num_warps={nw}", tri_ln)]:
        try:
            err = relerr(f(), ref)
            record(label, name, bench(f), cfg, bytes_=4 * M * N + 4 * N, check=checked(err, 1e-2))
        except Exception as e:
            print("FAIL", name, label, repr(e)[:300], flush=True)
    del x, y, ref
    torch.cuda.empty_cache()

# ---- peers: RMS norm ---------------------------------------------------------------------
if selected("rmsnorm"):
    M, N = 16384, 4096
    label = f"rmsnorm bf16 {M}x{N}"
    x = (torch.rand(M, N, device=DEV) * 6 - 2).to(torch.bfloat16)
    w = (torch.rand(N, device=DEV) + 0.5).to(torch.bfloat16)
    ref = torch.nn.functional.rms_norm(x.double(), (N,), w.double(), 1e-5)
    rms = lambda x: torch.nn.functional.rms_norm(x, (N,), w, 1e-5)  # noqa: E731
    crms = torch.compile(rms)
    for name, f in [("torch eager", lambda: rms(x)), ("torch.compile", lambda: crms(x))]:
        try:
            err = relerr(f(), ref)
            record(label, name, bench(f), "", bytes_=4 * M * N + 2 * N, check=checked(err, 1e-2))
        except Exception as e:
            print("FAIL", name, label, repr(e)[:300], flush=True)
    del x, ref
    torch.cuda.empty_cache()

# ---- peers: matmul --------------------------------------------------------------------
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Triton's matmul tutorial kernel (grouped program order), without autotuning.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    gm = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % gm)
    pid_n = (pid % group) // gm
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * sam + offs_k[None, :] * sak
    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_bn[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + scm * offs_cm[:, None] + scn * offs_cn[None, :]
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


if selected("matmul"):
    Mm = 4096
    label = f"matmul bf16 {Mm}^3"
    a = (torch.rand(Mm, Mm, device=DEV) * 2 - 1).to(torch.bfloat16)
    bm = (torch.rand(Mm, Mm, device=DEV) * 2 - 1).to(torch.bfloat16)
    c = torch.empty_like(a)
    ref = a.float() @ bm.float()
    for bmn, bnn, bk, st, nw in [(128, 256, 64, 3, 8), (128, 128, 64, 4, 4), (128, 128, 32, 3, 8)]:
        grid = (triton.cdiv(Mm, bmn) * triton.cdiv(Mm, bnn),)
        f = lambda: matmul_kernel[grid](a, bm, c, Mm, Mm, Mm, Mm, 1, Mm, 1, Mm, 1, BLOCK_M=bmn, BLOCK_N=bnn,
                                         BLOCK_K=bk, GROUP_M=8, num_stages=st, num_warps=nw)
        try:
            f()
            record(label, "triton tutorial", bench(f), f"{bmn}x{bnn}x{bk} stages={st} warps={nw}", flops=2 * Mm**3,
                   check=checked(relerr(c, ref), 1e-2))
        except Exception as e:
            print("FAIL triton matmul", repr(e)[:300], flush=True)

# ---- peers: attention ----------------------------------------------------------------
if selected("attention"):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sdpa = torch.nn.functional.scaled_dot_product_attention
    B, H, S, D = 4, 32, 4096, 128
    q = (torch.rand(B, H, S, D, device=DEV) * 4 - 2).to(torch.bfloat16)
    k = (torch.rand(B, H, S, D, device=DEV) * 4 - 2).to(torch.bfloat16)
    v = (torch.rand(B, H, S, D, device=DEV) * 2 - 1).to(torch.bfloat16)
    for causal in (False, True):
        label = f"attention bf16 {'causal ' if causal else ''}{B}x{H}x{S}x{D}"
        # f32 reference from the same bf16 inputs (the memory-efficient kernel takes f32).
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            ref = sdpa(q.float(), k.float(), v.float(), is_causal=causal)
        for name, backend in [("SDPA FlashAttention-2", SDPBackend.FLASH_ATTENTION),
                              ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION)]:
            f = lambda: sdpa(q, k, v, is_causal=causal)
            try:
                with sdpa_kernel(backend):
                    err = relerr(f(), ref)
                    record(label, name, bench(f), flops=4 * B * H * S * S * D // (2 if causal else 1),
                           check=checked(err, 1e-2))
            except Exception as e:
                print("FAIL", name, label, repr(e)[:300], flush=True)
        del ref
    del q, k, v
    torch.cuda.empty_cache()

# ---- peers: fp8 per-token quantization ---------------------------------------------------
def quant_per_token(x):
    # The obvious PyTorch code: the row's absolute maximum, its scale, the cast.
    amax = x.abs().amax(dim=-1, keepdim=True).float()
    scale = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
    q = (x.float() * (1.0 / scale)).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return q, scale


if selected("fp8"):
    M, N = 16384, 4096
    label = f"fp8 e4m3 per-token quant bf16 {M}x{N}"
    x = ((torch.rand(M, N, device=DEV) * 2 - 1) * torch.exp2(torch.rand(M, 1, device=DEV) * 16 - 8)).to(torch.bfloat16)
    ref_scale = x.double().abs().amax(dim=-1, keepdim=True) / 448.0
    cquant = torch.compile(quant_per_token)
    for name, f in [("torch eager", lambda: quant_per_token(x)), ("torch.compile", lambda: cquant(x))]:
        try:
            q, scale = f()
            # e4m3 keeps 3 bits: a dequantized element is within 1/16 of its value; the
            # scale is one f32 division.
            scale_err = relerr(scale, ref_scale)
            check = checked(relerr(q.float() * scale, x), 0.05) if scale_err < 1e-6 else \
                f"FAIL scale rel_error={scale_err:.3g}"
            record(label, name, bench(f), bytes_=3 * M * N + 4 * M, check=check)
        except Exception as e:
            print("FAIL", name, label, repr(e)[:300], flush=True)
    del x, ref_scale
    torch.cuda.empty_cache()

# ---- peers: MoE routing ---------------------------------------------------------------------
def route(logits, k=8):
    probs = torch.softmax(logits, dim=-1)
    weights, experts = torch.topk(probs, k, dim=-1)
    return weights / weights.sum(dim=-1, keepdim=True), experts


if selected("moe"):
    T, K = 16384, 8
    # Static shapes: each expert count gets a kernel of its own, not one for any shape.
    croute = torch.compile(route, dynamic=False)
    for E in (64, 256):
        label = f"moe routing f32 {T}x{E} top{K}"
        logits = torch.rand(T, E, device=DEV) * 8 - 4
        probs = torch.softmax(logits.double(), dim=-1)
        ref_w, ref_e = torch.topk(probs, K, dim=-1)
        ref_w = ref_w / ref_w.sum(dim=-1, keepdim=True)
        for name, f in [("torch eager", lambda: route(logits, K)), ("torch.compile", lambda: croute(logits, K))]:
            try:
                w, e = f()
                # An expert other than the reference's only where their probabilities tie
                # to f32 rounding: the picked experts' probabilities are the top K's.
                wanted = probs.gather(1, ref_e)
                swap_err = ((probs.gather(1, e.long()) - wanted).abs() / wanted).max().item()
                err = max(relerr(w, ref_w), swap_err)
                record(label, name, bench(f), bytes_=4 * T * E + 8 * T * K, check=checked(err, 1e-5))
            except Exception as e:
                print("FAIL", name, label, repr(e)[:300], flush=True)
        del logits, probs, ref_w, ref_e
    torch.cuda.empty_cache()

# ---- peers: decoding attention --------------------------------------------------------------
if selected("decode"):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sdpa = torch.nn.functional.scaled_dot_product_attention
    B, H, S, D = 8, 32, 32768, 128
    label = f"decode attention bf16 {B}x{H}x{S}x{D}"
    scale = D ** -0.5
    q = (torch.rand(B, H, 1, D, device=DEV) * 4 - 2).to(torch.bfloat16)
    k = (torch.rand(B, H, S, D, device=DEV) * 4 - 2).to(torch.bfloat16)
    v = (torch.rand(B, H, S, D, device=DEV) * 2 - 1).to(torch.bfloat16)
    # f32 reference from the same bf16 inputs, a batch at a time.
    ref = torch.cat([torch.softmax(q[b:b + 1].float() @ k[b:b + 1].float().transpose(-1, -2) * scale, -1)
                     @ v[b:b + 1].float() for b in range(B)])
    explicit = lambda q, k, v: torch.softmax((q @ k.transpose(-1, -2)).float() * scale, -1).to(q.dtype) @ v  # noqa: E731
    cexplicit = torch.compile(explicit)
    peers = [("SDPA default", None), ("SDPA FlashAttention-2", SDPBackend.FLASH_ATTENTION),
             ("SDPA efficient", SDPBackend.EFFICIENT_ATTENTION), ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION)]
    for name, backend in peers:
        f = lambda: sdpa(q, k, v)
        try:
            if backend is None:
                err = relerr(f(), ref)
                record(label, name, bench(f), bytes_=4 * B * H * S * D, check=checked(err, 1e-2))
            else:
                with sdpa_kernel(backend):
                    err = relerr(f(), ref)
                    record(label, name, bench(f), bytes_=4 * B * H * S * D, check=checked(err, 1e-2))
        except Exception as e:
            print("FAIL", name, label, repr(e)[:300], flush=True)
    try:
        f = lambda: cexplicit(q, k, v)
        err = relerr(f(), ref)
        record(label, "torch.compile", bench(f), "softmax(q·kᵀ·scale)·v", bytes_=4 * B * H * S * D,
               check=checked(err, 1e-2))
    except Exception as e:
        print("FAIL torch.compile", label, repr(e)[:300], flush=True)
    del q, k, v, ref
    torch.cuda.empty_cache()

# ---- the table ------------------------------------------------------------------------
def env():
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    commit = open(os.path.join(BUNDLES, "commit")).read().strip() if os.path.exists(os.path.join(BUNDLES, "commit")) else "?"
    return dict(gpu=smi, commit=commit, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                torch=torch.__version__, triton=triton.__version__,
                copy_GBps=round(COPY_BW, 1), cublas_TFLOPs={k: round(v, 1) for k, v in GEMM.items()})


info = env()
table = []
# Grouped by workload (in the order first measured), Kiln's rows before the peers'.
order = list(dict.fromkeys(r["workload"] for r in rows))
rows.sort(key=lambda r: (order.index(r["workload"]), r["system"] != "kiln"))
for r in rows:
    w = r["workload"]
    if "(ceiling)" in w:
        continue
    ceiling = GEMM[8192] if r["unit"] == "TFLOP/s" else COPY_BW
    peers = [p["val"] for p in rows if p["workload"] == w and p["system"] != "kiln"
             and p.get("check", "ok") == "ok"]
    best = max(peers) if peers else None
    table.append(dict(r, frac=r["val"] / ceiling if r["val"] else 0,
                      vs_best_peer=(r["val"] / best) if best and r["val"] else None))
lines = [f"GPU: {info['gpu']}; commit {info['commit']}; {info['date']}; torch {info['torch']}, triton {info['triton']}",
         f"Ceilings in this run: copy {info['copy_GBps']} GB/s; cuBLAS bf16 {info['cublas_TFLOPs']} TFLOP/s",
         "Fraction: of the copy bandwidth (memory-bound) or of cuBLAS bf16 8192^3 (matmul, attention). Ratio: to the best peer of the same workload.",
         "",
         "| workload | system | config | time (us) | rate | fraction of ceiling | ratio to best peer | check |",
         "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
for t in table:
    ratio = f"{t['vs_best_peer']:.2f}x" if t["vs_best_peer"] else "-"
    lines.append(f"| {t['workload']} | {t['system']} | {t.get('config', '')} | {t['us']} | {t['val']} {t['unit']} | "
                 f"{t['frac']:.0%} | {ratio} | {t.get('check', '')} |")
# Attention: each Kiln row against each peer of the same workload.
att = [t for t in table if t["workload"].startswith("attention")]
att_peers = list(dict.fromkeys(t["system"] for t in att if t["system"] != "kiln"))
if att:
    lines += ["", "| attention workload | Kiln config | TFLOP/s | " + " | ".join(f"/ {p}" for p in att_peers) + " | check |",
              "| --- | --- | ---: | " + " | ".join("---:" for _ in att_peers) + " | --- |"]
    for t in att:
        if t["system"] != "kiln":
            continue
        ratios = []
        for p in att_peers:
            pv = [x["val"] for x in att if x["workload"] == t["workload"] and x["system"] == p and x["check"] == "ok"]
            ratios.append(f"{t['val'] / pv[0]:.2f}x" if pv and t["val"] else "-")
        lines.append(f"| {t['workload']} | {t.get('config', '')} | {t['val']} | " + " | ".join(ratios) +
                     f" | {t.get('check', '')} |")
md = "\n".join(lines) + "\n"
json.dump(dict(env=info, rows=table), open(os.path.join(OUT, "results.json"), "w"), indent=1)
open(os.path.join(OUT, "results.md"), "w").write(md)
print(md)
# The chart beside the table (bench/charts.py), where matplotlib is installed; otherwise
# run charts.py on results.json on the build machine.
try:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import charts
    charts.draw(dict(env=info, rows=table), os.path.join(OUT, "results.png"))
    print(f"chart: {os.path.join(OUT, 'results.png')}")
except ImportError as e:
    print(f"chart: not drawn here ({e}); run bench/charts.py on results.json")
