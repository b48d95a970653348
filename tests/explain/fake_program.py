#!/usr/bin/env python3
"""fake_program.py: a program for fake_ncu.py that "launches" the kernels listed in a JSON file
(argv[1]: {"regions": [...], "kernels": [[region index, kernel], ...]}), a marker kernel before each
region's kernels, and writes each region's JSON line to $EXPLAIN_REGIONS as
scripts/third_party_attn.py does."""
import json
import os
import sys

spec = json.load(open(sys.argv[1]))
kf = open(os.environ["FAKE_NCU_KERNELS"], "a")
reg = os.environ.get("EXPLAIN_REGIONS")
if reg:
    open(reg, "a").write(json.dumps(dict(header=1, gpu="fake", torch="fake")) + "\n")
for r, region in enumerate(spec["regions"]):
    if reg:
        open(reg, "a").write(json.dumps(dict(region, region=r)) + "\n")
    kf.write(json.dumps(dict(name="void at::cuda::(anonymous namespace)::spin_kernel(long)", grid=[1, 1, 1],
                             block=[1, 1, 1])) + "\n")
    for ri, k in spec["kernels"]:
        if ri == r:
            kf.write(json.dumps(k) + "\n")
for ri, k in spec.get("unlabelled", []):
    kf.write(json.dumps(k) + "\n")
