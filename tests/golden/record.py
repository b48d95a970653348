#!/usr/bin/env python3
"""record.py: records the golden outputs of the flashlab CLI (Python 3 standard library only).

    tests/golden/record.py CLI --update       rewrite tests/golden/*.txt from this CLI
    tests/golden/record.py CLI --out DIR      write them into DIR instead (to compare two builds)

CLI is the built binary (build/flashlab).  The commands are listed below, one group per golden
file; the rows of docs/errors.md are read from the source tree next to this file.  The format,
how each command is run and the provenance filter are in golden.py.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
import golden   # beside this file

SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
FORMATS = ("table", "csv", "json")


def S(*words):
    """Arguments from words: each word is split on spaces (sizes and options never hold one)."""
    out = []
    for w in words:
        out += str(w).split()
    return out


def help_cmds():
    cmds = [[], ["--help"], ["--version"], ["help"], ["count", "-h"]]
    for c in ("count", "run", "sweep", "bound", "plot", "report", "optimize", "trace", "l2",
              "example", "schedules", "cp", "merge", "gpus"):
        cmds.append([c, "--help"])
    cmds += [["schedules"], ["schedules", "--format", "csv"]]   # the registry as a table
    cmds += [["gpus"], ["gpus", "--format", "csv"], ["l2", "--launch", "fwd-q", "--help"]]  # the presets
    return [golden.command(a) for a in cmds]


def count_cmds():
    out = []
    fmt = iter(range(10**6))

    def add(*words, fmts=None):
        a = S("count", *words)
        if fmts is None:  # rotate the format so that every kind of problem meets each of them
            fmts = (FORMATS[next(fmt) % 3],)
        for f in fmts:
            out.append(a + ["--format", f])

    # shapes, every default schedule, all three formats; edge sizes N = 1, d = 1
    shapes = [(1, 1, 64), (1, 64, 1024), (2, 1, 16), (7, 3, 64), (64, 8, 384), (100, 16, 2048),
              (257, 32, 4096), (1000, 64, 20000), (1024, 64, 98304), (4096, 64, 65536),
              (1024, 128, 16384), (65536, 64, 98304), (3, 200, 100000)]
    for n, d, m in shapes:
        add("--N", n, "--d", d, "--M", m, fmts=FORMATS)
    # defaults (GPT-2-medium size with A100 SRAM)
    add(fmts=FORMATS)
    # --explain: every schedule, where the paper's blocks fit and where they do not
    for algo in ("standard", "flash1", "flash2", "all"):
        for n, d, m in ((100, 16, 2048), (1024, 64, 16384), (5, 64, 100000), (4096, 128, 20000)):
            add("--algo", algo, "--N", n, "--d", d, "--M", m, "--explain", fmts=("table",))
    add("--algo flash2-gqa --N 300 --d 32 --M 8192 --heads 8 --kv-heads 2 --explain", fmts=("table",))
    add("--algo decode --N 1 --Nk 1000 --d 64 --splits 4 --page-size 16 --page-seed 3 --explain",
        fmts=("table",))
    add("--algo blocksparse --N 512 --d 32 --M 4096 --density 0.3 --explain", fmts=("table",))
    add("--algo memeff --N 200 --d 16 --M 4096 --explain", fmts=("table",))
    add("--algo softmax-safe,softmax-online --N 50 --Nk 700 --M 256 --explain", fmts=("table",))
    add("--N 100 --d 16 --M 2048 --explain", fmts=("csv", "json"))
    # masks: corners, unequal lengths (Nk < N gives fully masked rows at bottom-right), windows
    for causal in ("top-left", "bottom-right"):
        for nk in (200, 77, 403, 1):
            add("--N 200 --d 16 --M 2048 --causal", causal, "--Nk", nk)
        add("--N 1 --Nk 300 --d 8 --M 512 --causal", causal)
        add("--N 4096 --d 64 --M 65536 --causal", causal)
    for win in ("0,0", "16,0", "-1,8", "3,-1", "5,5", "0,-1", "300,300", "64,64"):
        for nk in (300, 150):
            add("--N 300 --d 16 --M 2048 --window", win, "--Nk", nk)
    add("--N 300 --d 16 --M 2048 --window 7,0 --causal bottom-right --Nk 100")
    add("--N 300 --d 16 --M 2048 --window 0,9 --causal top-left")
    add("--N 2048 --d 64 --M 16384 --window 0,0 --explain", fmts=("table",))
    # heads, GQA, MQA, batch
    for h, kv in ((8, 8), (8, 2), (8, 1), (6, 3), (32, 4)):
        add("--N 256 --d 32 --M 4096 --heads", h, "--kv-heads", kv)
    add("--N 256 --d 32 --M 4096 --heads 8 --kv-heads 2 --algo flash2-gqa", fmts=FORMATS)
    add("--N 256 --d 32 --M 4096 --heads 8 --kv-heads 1 --algo flash2-gqa --pass fwd+bwd")
    add("--N 256 --d 32 --M 4096 --heads 8 --kv-heads 2 --causal bottom-right --Nk 100")
    add("--N 256 --d 32 --M 4096 --batch 3 --heads 4")
    add("--N 1024 --d 64 --batch 64 --heads 16", fmts=FORMATS)
    # varlen
    add("--N 100 --d 16 --M 2048 --cu-seqlens-q 0,5,37,100", fmts=FORMATS)
    add("--N 100 --Nk 150 --d 16 --M 2048 --cu-seqlens-q 0,5,37,100 --cu-seqlens-k 0,30,90,150")
    add("--N 100 --Nk 150 --d 16 --M 2048 --cu-seqlens-q 0,5,37,100 --cu-seqlens-k 0,30,90,150"
        " --causal bottom-right")
    add("--N 100 --Nk 150 --d 16 --M 2048 --cu-seqlens-q 0,5,37,100 --cu-seqlens-k 0,30,90,150"
        " --causal top-left --pass fwd+bwd")
    add("--N 100 --d 16 --M 2048 --cu-seqlens-q 0,0,1,1,100 --heads 4 --kv-heads 2")
    add("--N 100 --d 16 --M 2048 --cu-seqlens-q 0,50,100 --window 4,4 --pass bwd")
    # passes
    for p in ("fwd", "bwd", "fwd+bwd"):
        for shape in ("--N 100 --d 16 --M 2048", "--N 1024 --d 64 --M 16384",
                      "--N 1 --d 1 --M 64", "--N 513 --d 80 --M 98304"):
            add(shape, "--pass", p)
            add(shape, "--pass", p, "--causal bottom-right --Nk 300")
        add("--N 256 --d 32 --M 4096 --heads 8 --kv-heads 2 --window 8,0 --pass", p)
    # block overrides, blocks not dividing N, blocks above N, only one given
    for algo in ("standard", "flash1", "flash2", "flash2-gqa --heads 4 --kv-heads 2"):
        for blocks in ("--Br 7 --Bc 13", "--Br 1 --Bc 1", "--Br 33", "--Bc 19", "--Br 128 --Bc 128",
                       "--Br 500 --Bc 3"):
            add("--algo", algo, "--N 100 --d 16 --M 8192", blocks)
        add("--algo", algo, "--N 100 --d 16 --M 8192 --Br 7 --Bc 13 --pass fwd+bwd")
    # M too small (status 2), exactly the smallest tiles
    for algo in ("standard", "flash1", "flash2", "decode", "memeff", "softmax-safe", "blocksparse"):
        add("--algo", algo, "--N 64 --d 16 --M 10")
    add("--algo flash1 --d 64 --M 263")
    add("--algo standard --d 1 --M 3")
    # presets
    for sram in ("a100", "h100", "h200", "b200"):
        for dt in ("fp16", "bf16", "fp32"):
            add("--N 2048 --d 128 --sram", sram, "--dtype", dt)
    add("--N 2048 --d 128 --sram h100 --dtype fp32 --M 5000")
    # decode: contiguous, split-KV, paged (identity, drawn and explicit tables), GQA
    for dec in ("--N 1 --Nk 1000", "--N 1 --Nk 1000 --splits 3", "--N 1 --Nk 32768 --splits 8",
                "--N 4 --Nk 100 --page-size 16", "--N 4 --Nk 100 --page-size 16 --page-seed 7",
                "--N 4 --Nk 100 --page-size 16 --pool-pages 40 --page-seed 2",
                "--N 4 --Nk 100 --page-size 16 --block-table 6,0,5,1,4,2,3",
                "--N 4 --Nk 100 --page-size 16 --splits 2 --page-seed 5",
                "--N 1 --Nk 1000 --heads 8 --kv-heads 2 --splits 4",
                "--N 1 --Nk 1000 --page-size 64 --pool-pages 32 --page-seed 11",
                "--N 16 --Nk 1 --d 8", "--N 1 --Nk 1 --d 1 --M 64",
                "--N 8 --Nk 500 --causal bottom-right --splits 3 --page-size 32",
                "--N 1 --Nk 1000 --Br 1 --Bc 8 --splits 5"):
        add("--algo decode --d 64", dec)
    add("--algo decode --N 1 --Nk 4096 --d 128 --splits 4 --page-size 16 --page-seed 9", fmts=FORMATS)
    # block-sparse
    for dens in ("1", "0.5", "0.1", "0.01"):
        for seed in ("1", "2"):
            add("--algo blocksparse --N 512 --d 32 --M 4096 --density", dens, "--mask-seed", seed)
    add("--algo blocksparse --N 512 --d 32 --M 4096 --density 0.25 --causal top-left")  # refused
    add("--algo blocksparse --N 512 --d 32 --M 4096 --density 0.25 --pass fwd+bwd")  # refused
    add("--algo blocksparse --N 1000 --d 64 --M 20000 --density 0.37 --mask-seed 11 --Br 9 --Bc 50")
    add("--algo blocksparse --N 1 --d 1 --M 64 --density 0.5")
    add("--algo blocksparse --N 300 --d 32 --M 4096 --density 0.5 --heads 4 --kv-heads 2")  # refused
    # memory-efficient attention (Rabe-Staats)
    for mb in ("", "--Br 10 --Bc 33", "--Br 1 --Bc 1", "--Br 100 --Bc 100", "--pass fwd+bwd",
               "--causal top-left", "--heads 4 --kv-heads 2", "--Nk 150"):
        add("--algo memeff --N 100 --d 16 --M 4096", mb)
    add("--algo memeff --N 1 --d 1 --M 64")
    add("--algo memeff --N 333 --d 24 --M 3000 --Br 17")
    # smallcache, both passes; the backward's block rule, overrides, masks, heads
    for sc in ("--N 1024 --d 128 --M 2048", "--N 1024 --d 128 --M 2048 --pass bwd --explain",
               "--N 300 --d 64 --M 512 --pass fwd+bwd --causal bottom-right --Nk 200",
               "--N 256 --d 32 --M 300 --pass bwd --heads 4 --kv-heads 2 --window 16,0",
               "--N 100 --d 16 --M 400 --pass bwd --Br 7 --Bc 13", "--N 64 --d 16 --M 5 --pass bwd"):
        add("--algo smallcache", sc)
    # standard-skip's backward skips the tiles a mask drops (rows of P that fit and rows that do
    # not); standard's does not
    for sb in ("--N 512 --d 32 --M 8192 --pass bwd --causal top-left",
               "--N 512 --d 32 --M 512 --pass bwd --causal bottom-right --Nk 300",
               "--N 512 --d 32 --M 8192 --pass fwd+bwd --window 32,0 --heads 4 --kv-heads 2"):
        add("--algo standard-skip,standard", sb)
    add("--algo standard-skip --N 100 --d 16 --M 2048 --pass bwd --explain", fmts=("table",))
    # softmax alone
    for sm in ("--N 100 --Nk 300 --M 256", "--N 100 --Nk 300 --M 4096", "--N 1 --Nk 1 --M 2",
               "--N 64 --Nk 1000 --M 100", "--N 64 --Nk 64 --M 64 --Bc 7",
               "--N 64 --Nk 64 --M 3"):
        add("--algo softmax-safe,softmax-online --d 16", sm)
    # limits on work
    add("--algo standard --N 65536 --M 4096 --max-events 1000")
    add("--algo flash2 --N 4096 --M 4096 --max-events 0")
    add("--algo all --N 1000 --d 8 --M 512 --max-events 5000")
    # a comma list in a chosen order, all named schedules at once
    add("--algo flash2,standard --N 128 --d 16 --M 2048")
    add("--algo standard,flash1,flash2,flash2-gqa,memeff,blocksparse,softmax-safe,softmax-online"
        " --N 128 --d 16 --M 4096", fmts=FORMATS)
    add("--algo standard,flash1,flash2,flash2-gqa,memeff,blocksparse,softmax-safe,softmax-online"
        " --N 128 --d 16 --M 4096 --heads 2 --kv-heads 1")  # refused: memeff runs one head
    return [golden.command(a) for a in out]


def run_cmds():
    out = []
    fmt = iter(range(10**6))

    def add(*words, fmts=None):
        a = S("run", *words)
        for f in fmts or (FORMATS[next(fmt) % 3],):
            out.append(a + ["--format", f])

    add("--N 64 --d 8 --M 512", fmts=FORMATS)
    for n, d, m in ((1, 1, 64), (2, 1, 16), (7, 3, 64), (33, 5, 300), (100, 16, 2048),
                    (128, 32, 4096), (65, 64, 20000)):
        add("--N", n, "--d", d, "--M", m)
        add("--N", n, "--d", d, "--M", m, "--pass fwd+bwd")
    for causal in ("top-left", "bottom-right"):
        for nk in (64, 40, 97, 1):
            add("--N 64 --d 8 --M 512 --causal", causal, "--Nk", nk)
            add("--N 64 --d 8 --M 512 --pass bwd --causal", causal, "--Nk", nk)
    for win in ("0,0", "4,0", "-1,3", "2,-1"):
        add("--N 64 --d 8 --M 512 --window", win)
        add("--N 64 --d 8 --M 512 --window", win, "--Nk 30 --pass fwd+bwd")
    add("--N 64 --d 8 --M 512 --window 3,0 --causal bottom-right --Nk 20")
    add("--N 64 --d 8 --M 512 --heads 4 --kv-heads 2", fmts=FORMATS)
    add("--N 64 --d 8 --M 512 --heads 6 --kv-heads 1 --pass fwd+bwd")
    add("--N 48 --d 8 --M 512 --batch 3 --heads 2")
    add("--N 50 --Nk 60 --d 8 --M 512 --cu-seqlens-q 0,10,10,50 --cu-seqlens-k 0,7,7,60"
        " --causal bottom-right")
    add("--N 50 --d 8 --M 512 --cu-seqlens-q 0,20,50 --pass fwd+bwd --heads 2")
    add("--N 64 --d 8 --M 512 --Br 7 --Bc 13")
    add("--N 64 --d 8 --M 512 --Br 7 --Bc 13 --pass fwd+bwd --causal top-left")
    for seed in ("2", "12345", "18446744073709551615"):
        add("--N 40 --d 8 --M 512 --seed", seed)
    for dec in ("--N 1 --Nk 100", "--N 4 --Nk 100 --page-size 16 --page-seed 3",
                "--N 4 --Nk 100 --page-size 16 --splits 3 --pad 7.5",
                "--N 4 --Nk 100 --page-size 16 --pad nan",
                "--N 1 --Nk 100 --splits 2 --page-size 8 --page-seed 4"):
        add("--algo decode --d 16 --M 4096", dec)
    add("--algo blocksparse --N 64 --d 8 --M 512 --density 0.4 --mask-seed 3")
    add("--algo blocksparse --N 64 --d 8 --M 512 --density 1 --mask-seed 9")
    add("--algo blocksparse --N 90 --d 8 --M 512 --density 0.05 --Br 7 --Bc 11")
    add("--algo memeff --N 64 --d 8 --M 1024 --Br 9 --Bc 10")
    add("--algo memeff --N 1 --d 1 --M 64")
    add("--algo memeff --N 57 --d 8 --M 1024")
    add("--algo softmax-safe,softmax-online --N 30 --Nk 70 --M 16")
    add("--algo softmax-safe,softmax-online --N 1 --Nk 1 --M 3")
    add("--algo softmax-safe,softmax-online --N 30 --Nk 70 --M 4096 --seed 5")
    add("--algo smallcache --N 50 --d 24 --M 200 --pass fwd+bwd --causal bottom-right --Nk 40")
    add("--algo smallcache --N 40 --d 16 --M 150 --pass bwd --heads 4 --kv-heads 2 --window 6,0")
    add("--algo standard-skip --N 40 --d 8 --M 600 --pass bwd --causal top-left --Br 7 --Bc 5")
    add("--algo all --N 32 --d 8 --M 1024 --heads 2 --kv-heads 1 --explain", fmts=("table",))
    return [golden.command(a) for a in out]


def sweep_cmds():
    out = []
    for f in ("csv", "json", "table"):
        out.append(S("sweep --N 64:1024:x4 --d 16,64 --M 1024,4096 --format", f))
    out.append(S("sweep --N 256,512 --d 32 --M 512:8192:x2 --M-upto-Nd"))
    out.append(S("sweep --algo flash1,flash2 --N 100 --d 16 --M 4096 --Br 8,13,64 --Bc 8:40:+16"))
    out.append(S("sweep --N 512 --d 64 --M 100,1000,10000 --format csv"))  # some skipped
    out.append(S("sweep --N 512 --d 64 --M 100,1000,10000 --format json"))
    out.append(S("sweep --N 128,256 --d 32 --M 4096 --causal bottom-right --Nk 100 --pass fwd+bwd"))
    out.append(S("sweep --N 128,256 --d 32 --M 4096 --heads 8 --kv-heads 2 --window 16,0"))
    out.append(S("sweep --algo decode --N 1 --d 64 --M 98304 --Nk 1000 --splits 4 --page-size 16"))
    out.append(S("sweep --algo blocksparse --N 256,512 --d 32 --M 4096 --density 0.3"))
    out.append(S("sweep --N 64,128 --d 16 --M 2048 --sram h100 --dtype fp32 --batch 2"))
    out.append(S("sweep --N 64,128 --d 16 --sram b200 --dtype bf16"))
    out.append(S("sweep --N 64,256 --d 16 --M 2048 --output sweep.csv"))
    out.append(S("sweep --N 64,256 --d 16 --M 2048 --format json --output sweep.json"))
    out.append(S("sweep --N 1 --d 1 --M 64,1,2,3"))
    return [golden.command(a) for a in out]


def bound_cmds():
    cmds = [golden.command(S(a)) for a in (
        "bound --N 256:2048:x2 --d 16,32 --M 256:16384:x2",
        "bound --N 256:2048:x2 --d 16,32 --M 256:16384:x2 --all-N",
        "bound --N 512,1024 --d 64 --M 1024:65536:x4",
        "bound --N 128:1024:x2 --d 8,16,32 --M 128:8192:x2 --all-N",
        # the lower bound of one problem, any that flashlab accepts
        "bound --problem --help",
        "bound --problem --N 4096 --d 64 --M 4096",
        "bound --problem --N 4096 --d 64 --M 256 --pass bwd --causal bottom-right --format csv",
        "bound --problem --N 2048 --d 128 --M 65536 --pass fwd+bwd --heads 8 --kv-heads 2",
        "bound --problem --N 100 --d 16 --M 2048 --cu-seqlens-q 0,30,100 --window 8,0",
        "bound --problem --algo decode --N 1 --Nk 32768 --d 128 --page-size 256 --splits 4 --causal bottom-right",
        "bound --problem --algo blocksparse --N 4096 --d 64 --M 65536 --density 0.25 --format csv",
        "bound --problem --algo softmax-online --N 100 --Nk 300",
        "bound --problem --N 4096 --d 64 --M 4096 --Br 7 --algo nosuch",
        "bound --problem --N 4096 --d 64 --M 4096 --output b.csv --format csv",
    )]
    cmds.append(golden.command(S("bound --input s.csv"),
                               setup='"$FLASHLAB" sweep --N 256:2048:x2 --d 32,64 '
                                     '--M 1024:32768:x2 --M-upto-Nd --output s.csv'))
    cmds.append(golden.command(S("bound --input s.csv --all-N"),
                               setup='"$FLASHLAB" sweep --N 256:2048:x2 --d 16 '
                                     '--M 512:16384:x4 --M-upto-Nd --output s.csv'))
    cmds.append(golden.command(S("bound --input s.csv"),  # refused: backward rows
                               setup='"$FLASHLAB" sweep --N 256:4096:x2 --d 32,64 '
                                     '--M 1024:65536:x2 --M-upto-Nd --pass fwd+bwd --output s.csv'))
    return cmds


def optimize_cmds():
    cmds = [golden.command(S(a)) for a in (
        "optimize --N 1024 --d 64 --M 4096:65536:x4",
        "optimize --N 1024 --d 64 --M 4096:65536:x4 --format csv",
        "optimize --N 1024 --d 64 --M 16384",
        "optimize --N 1024 --d 64 --M 16384 --top 1",
        "optimize --N 1000 --d 48 --M 3000 --top 20 --format csv",
        "optimize --N 512 --d 32 --M 2048,8192 --heads 8 --kv-heads 2",
        "optimize --N 512 --d 32 --M 8192 --heads 8 --kv-heads 1 --format csv",
        "optimize --N 512 --d 32 --M 8192 --causal bottom-right --Nk 300",
        "optimize --N 512 --d 32 --M 8192 --window 32,0",
        "optimize --N 512 --d 32 --M 8192 --pass fwd+bwd",
        "optimize --N 512 --d 32 --M 8192 --pass bwd --causal top-left",
        "optimize --N 1024 --d 128 --M 512:16384:x4 --pass bwd",
        "optimize --N 1024 --d 128 --M 2048 --pass fwd+bwd --causal bottom-right --format csv",
        "optimize --N 100 --d 16 --M 2048 --cu-seqlens-q 0,30,100",
        "optimize --N 1 --d 1 --M 64",
        "optimize --N 256 --d 64 --sram h100 --dtype fp32",
        "optimize --N 256 --d 32 --M 4096 --output opt.csv --format csv",
    )]
    return cmds


def l2_cmds():
    cmds = []
    cmds.append(S("l2 --algo flash1 --N 1024 --d 64 --Br 64 --Bc 128"))
    for algo, br, bc in (("standard", 64, 64), ("flash1", 64, 64), ("flash2", 64, 64),
                         ("flash2", 128, 64)):
        for extra in ("", "--pass bwd"):
            cmds.append(S("l2 --algo", algo, "--N 1024 --d 64 --Br", br, "--Bc", bc, extra))
    cmds += [S(a) for a in (
        "l2 --algo flash2 --N 256 --d 64 --Br 64 --Bc 64 --format csv",
        "l2 --algo flash2 --N 2048 --d 64 --Br 128 --Bc 64 --l2-mb 1 --sms 8 --ctas-per-sm 2",
        "l2 --algo flash2 --N 2048 --d 64 --Br 128 --Bc 64 --l2-mb 1 --no-flush --sector 128",
        "l2 --algo flash1 --N 1000 --d 32 --Br 48 --Bc 80 --dtype fp32 --format csv",
        "l2 --algo standard --N 300 --d 16 --Br 32 --Bc 32 --dtype bf16",
        "l2 --algo flash2 --N 256 --d 64 --Br 64 --Bc 64 --output l2.csv --format csv",
        # whole launches: a GPU preset, an option over it, GQA
        "l2 --launch fwd-q --heads 4 --N 1024 --d 64 --Br 64 --Bc 64 --format csv",
        "l2 --launch fwd-q --heads 4 --N 1024 --d 64 --Br 64 --Bc 64 --gpu a100 --format csv",
        "l2 --launch fwd-q --heads 4 --N 1024 --d 64 --Br 64 --Bc 64 --gpu rtx4090 --sms 64",
        "l2 --launch bwd-kv --heads 8 --kv-heads 2 --N 512 --d 64 --Br 64 --Bc 64 --atomic-dq --causal",
    )]
    return [golden.command(a) for a in cmds]


def trace_cmds():
    cmds = [S(a) for a in (
        "trace",
        "trace --format jsonl --algo flash1 --N 12 --d 4 --M 96",
        "trace --N 16 --d 4 --M 96",
        "trace --N 16 --d 4 --M 96 --format jsonl --algo flash2",
        "trace --algo flash1 --N 20 --d 4 --M 128 --Br 3 --Bc 7",
        "trace --algo flash2 --N 24 --d 4 --M 200 --causal bottom-right --Nk 13",
        "trace --algo flash2 --N 24 --d 4 --M 200 --window 2,0 --compute",
        "trace --algo flash1 --N 16 --d 4 --M 128 --pass bwd",
        "trace --algo flash2 --N 10 --d 2 --M 128 --pass fwd+bwd --format jsonl",
        "trace --algo standard --N 12 --d 2 --M 64 --pass fwd+bwd --compute --seed 9",
        "trace --algo all --N 8 --d 4 --M 256",
        "trace --algo decode --N 1 --Nk 40 --d 4 --M 256",
        "trace --algo memeff,softmax-online --N 8 --d 4 --M 256 --format jsonl",
        "trace --N 64 --d 8 --M 384 --max-events 100",
        "trace --N 16 --d 4 --M 96 --out t.csv",
        "trace --algo flash2 --N 8 --d 4 --M 96 --format jsonl --out t.jsonl",
    )]
    return [golden.command(a) for a in cmds]


def example_cmds():
    names = ("two-tile", "backward", "causal-corners", "mask-polarity", "gqa-map", "nan-padding",
             "decode-traffic", "sparse-density")
    return [golden.command(["example", "list"])] + [golden.command(["example", n]) for n in names]


def report_cmds():
    return [golden.command(S(a)) for a in (
        "report --no-figures",
    )]


def code_span(s, i):
    a = s.find("`", i)
    if a < 0:
        return None, -1
    b = s.find("`", a + 1)
    if b < 0:
        return None, -1
    return s[a + 1:b], b + 1


def errors_cmds():
    """Every row of docs/errors.md, parsed as tests/test_errors_catalogue.c parses it:
    | `[VAR=value ...] flashlab ARGS` | ... |, arguments split on single spaces, "" an empty
    argument, and `SETUP; flashlab ARGS` running SETUP first."""
    cmds = []
    with open(os.path.join(SOURCE_DIR, "docs", "errors.md"), encoding="utf-8") as f:
        for line in f:
            if not line.startswith("| `"):
                continue
            cmd, _ = code_span(line, 0)
            setup = None
            if "; " in cmd:
                setup, cmd = cmd.rsplit("; ", 1)
            env, args = {}, []
            words = [w for w in cmd.split(" ") if w]
            while words and "=" in words[0] and words[0] != "flashlab":
                k, v = words.pop(0).split("=", 1)
                env[k] = v
            assert words[0] == "flashlab", line
            args = ["" if w == '""' else w for w in words[1:]]
            cmds.append(golden.command(args, env, setup))
    if len(cmds) < 60:
        raise SystemExit("record.py: only %d rows found in docs/errors.md" % len(cmds))
    return cmds


def cp_cmds():
    """Context parallelism: each schedule, masks, GQA, passes, per device, csv; the ring paper's
    table; refusals."""
    out = [S("cp"), S("cp --overlap-table"), S("cp --overlap-table --heads 8 --kv-heads 2 --devices 2"),
           S("cp --devices 4 --N 64 --d 16 --causal top-left --pass fwd+bwd --per-device"),
           S("cp --cp striped --devices 4 --N 96 --d 16 --causal top-left --heads 4 --kv-heads 2 --pass fwd+bwd --format csv"),
           S("cp --cp ulysses --devices 4 --N 256 --d 32 --heads 8 --kv-heads 2 --pass fwd+bwd --format csv"),
           S("cp --cp ulysses --devices 8 --N 512 --heads 8 --kv-heads 2 --causal bottom-right --host a100-ib"),
           S("cp --devices 8 --N 65536 --d 128 --heads 32 --kv-heads 8 --causal top-left --tflops 500 --link-gbs 25"),
           S("cp --algo flash2-gqa --devices 2 --N 1000 --heads 4 --kv-heads 1 --pass bwd"),
           S("cp --algo flash1"), S("cp --window 8,0")]  # more refusals: errors.txt (docs/errors.md)
    return [golden.command(a) for a in out]


def shard_cmds():
    """Shards of sweep and optimize, and merge: joined, and refused."""
    sw = '"$FLASHLAB" sweep --N 64:512:x2 --d 16 --M 1024,4096 --shard %d/3 --output s%d.csv'
    make = "; ".join(sw % (i, i) for i in (1, 2, 3))
    out = [golden.command(S("sweep --N 64:512:x2 --d 16 --M 1024,4096 --shard 2/3")),
           golden.command(S("optimize --N 256 --d 32 --M 1024:16384:x2 --format csv --shard 1/2")),
           golden.command(S("merge s3.csv s1.csv s2.csv"), setup=make),
           golden.command(S("merge s1.csv s2.csv --output m.csv"), setup=make),
           golden.command(S("sweep --shard 4/3"))]  # more refusals: errors.txt (docs/errors.md)
    return out


GROUPS = (("report", report_cmds), ("help", help_cmds), ("count", count_cmds), ("run", run_cmds),
          ("sweep", sweep_cmds), ("bound", bound_cmds), ("optimize", optimize_cmds),
          ("l2", l2_cmds), ("trace", trace_cmds), ("example", example_cmds),
          ("errors", errors_cmds), ("cp", cp_cmds), ("shard", shard_cmds))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cli", help="the built flashlab binary")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--update", action="store_true", help="rewrite tests/golden/*.txt")
    g.add_argument("--out", help="write the golden files into this directory instead")
    ap.add_argument("--jobs", type=int, default=None, help="commands run at once [CPUs]")
    a = ap.parse_args()
    dest = HERE if a.update else a.out
    os.makedirs(dest, exist_ok=True)
    t0 = time.time()
    groups = [(name, fn()) for name, fn in GROUPS]
    flat = [c for _, cmds in groups for c in cmds]
    lines = [(c.line, c.setup) for c in flat]
    dup = {ln for ln in lines if lines.count(ln) > 1}
    if dup:
        raise SystemExit("record.py: commands listed twice: %s" % sorted(dup))
    results = iter(golden.run_all(flat, a.cli, a.jobs))
    total = 0
    for name, cmds in groups:
        recs = []
        for c in cmds:
            rec, setup_failed = next(results)
            if setup_failed:
                print("record.py: %s: setup failed (%s); recorded as such" % (c.line, c.setup),
                      file=sys.stderr)
            recs.append(rec)
        path = os.path.join(dest, name + ".txt")
        golden.write(path, name, recs)
        total += len(recs)
        print("%-9s %4d commands  %8d bytes  %s" % (name, len(recs), os.path.getsize(path), path))
    print("%d commands in %.1f s" % (total, time.time() - t0))


if __name__ == "__main__":
    main()
